"""Kept conversations for the ask tests that run a real daemon: only one holds the fact."""

from __future__ import annotations

import datetime as dt
import json

from daemon.ipc.client import Client
from daemon.ipc.protocol import AddSpace, ImportTranscript, Remember

SPACE = "Work"
FACT_TITLE = "Orion planning"

SESSIONS: list[tuple[str, list[tuple[str, str]]]] = [
    ("Atlas hiring", [
        ("Sarah", "We need two more engineers for Atlas."),
        ("me", "I will post the job ads on Monday."),
        ("Sarah", "The hiring budget is twelve thousand euros."),
    ]),
    (FACT_TITLE, [
        ("Tom", "Let's settle the Orion server costs today."),
        ("me", "What is the number?"),
        ("Tom", "The Orion server budget is 48,000 euros for this year."),
        ("me", "Fine, I will tell finance."),
    ]),
    ("Vendor call", [
        ("Priya", "The vendor contract renews in May."),
        ("me", "Can we get a discount?"),
        ("Priya", "They offered five percent off."),
    ]),
    ("Garden club", [
        ("Lukas", "The tomatoes did well this summer."),
        ("me", "Next year we should plant more beans."),
    ]),
]


def transcript(title: str, day: int, turns: list[tuple[str, str]]) -> bytes:
    started = dt.datetime(2026, 3, 2, 10, tzinfo=dt.UTC) + dt.timedelta(days=day)
    return json.dumps({
        "title": title,
        "started_at": started.isoformat(),
        "turns": [{"speaker": s, "text": t, "t": i * 10.0} for i, (s, t) in enumerate(turns)],
    }).encode()


def import_kept_sessions(client: Client) -> dict[str, int]:
    """The sessions above in the Space ``SPACE``, each kept (decided later: kept, nothing
    summarised, so no model runs); their ids by title."""
    client.request(AddSpace(name=SPACE))
    ids = {}
    for day, (title, turns) in enumerate(SESSIONS):
        reply = client.request(ImportTranscript(content=transcript(title, day, turns),
                                                space=SPACE), timeout=120)
        client.request(Remember(session_id=reply.session.id, answer="later"), timeout=120)
        ids[title] = reply.session.id
    return ids

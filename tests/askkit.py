"""Kept conversations for the ask tests that run a real daemon: only one holds the fact, the
answer to ``QUESTION``; ``LLM`` is the language model those tests run."""

from __future__ import annotations

import datetime as dt
import json
import threading
import uuid

from daemon.errors import BrainCueError
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    AddSpace,
    Ask,
    AskReply,
    ImportTranscript,
    ModelProcessInfo,
    Remember,
    Status,
    StatusReply,
)

LLM = "qwen2.5-coder-0.5b"
SPACE = "Work"
FACT_TITLE = "Orion planning"
QUESTION = "What is the Orion server budget?"

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


def foreground(status: StatusReply) -> ModelProcessInfo:
    """The daemon's foreground language-model process, as ``status`` reports it."""
    (process,) = [p for p in status.model_processes if p.priority == "foreground"]
    return process


def foreground_pid(client: Client) -> int | None:
    """The pid of the daemon's foreground language-model process (None: not running)."""
    return foreground(client.request(Status())).pid


class Asking:
    """``QUESTION`` asked in ``SPACE`` from a thread of its own, by a client that waits up to
    15 minutes for the answer; :meth:`join` gives its reply, or the error it got."""

    def __init__(self) -> None:
        self.request = Ask(id=uuid.uuid4().hex, question=QUESTION, space=SPACE)
        self._outcome: list[AskReply | BrainCueError] = []
        self._thread = threading.Thread(target=self._send)

    def _send(self) -> None:
        try:
            self._outcome.append(Client(timeout=900).request(self.request, timeout=900))
        except BrainCueError as e:
            self._outcome.append(e)

    def start(self) -> None:
        self._thread.start()

    def join(self) -> AskReply | BrainCueError:
        self._thread.join()
        (reply,) = self._outcome
        return reply

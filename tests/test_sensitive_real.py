"""A spoken credential, kept with the real default model: it reaches nothing retrievable.

A seven-turn meeting in which "me" reads out a login and an API key is imported, kept (archive,
assertions, memory candidates) by a real daemon with Qwen2.5-Coder 0.5B and MiniLM, then
searched and asked about. Neither secret value may appear — however the model phrased it — in
the archive, any assertion or candidate, any search result, or the answer to "what is the
staging password?".
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    AddSpace,
    Ask,
    ImportTranscript,
    ListAssertions,
    MemoryList,
    Remember,
    Search,
    ShowSession,
)
from daemon.ipc.testing import start_daemon

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

PASSWORD = "Tangerine-Walrus-4417"
API_KEY = "sk-live-9f8a7b6c5d4e3f2a1b0c"
MEETING = [
    ("them", "Thanks for joining. We need the vendor on the staging database this week."),
    ("me", "Sure. They only need read access to the orders tables for the migration test."),
    ("them", "Good. Can you send them the login details today?"),
    ("me", f"The user is deploy and the password is {PASSWORD}, and the API key is {API_KEY}."),
    ("them", "Great. We decided the vendor starts the migration test on Wednesday."),
    ("me", "I will rotate the staging password after the test on Friday."),
    ("them", "Perfect, let's review the results next Monday."),
]


def canonical(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def leaks(text: str) -> list[str]:
    """The parts of either secret found in ``text``, ignoring case and separators."""
    flat = canonical(text)
    parts = ["tangerinewalrus", "walrus4417", "9f8a7b6c5d4e3f2a1b0c"]
    return [p for p in parts if p in flat]


@pytest.fixture
def home(small_models_home: Path) -> Path:
    return small_models_home


def test_a_spoken_credential_reaches_no_archive_assertion_search_or_answer(
        home: Path, installed_model: Callable[[str], Path]) -> None:
    installed_model("qwen2.5-coder-0.5b")
    installed_model("all-minilm-l6-v2")
    transcript = msgspec.json.encode({
        "title": "Vendor staging access", "started_at": "2026-11-30T10:00:00",
        "turns": [{"speaker": s, "text": t, "t": 6.0 * i} for i, (s, t) in enumerate(MEETING)]})
    daemon = start_daemon(home, timeout=120)
    try:
        with Client(timeout=1500) as client:
            client.request(AddSpace(name="Vendor", activity="meeting"))
            session = client.request(ImportTranscript(content=transcript, space="Vendor")).session
            kept = client.request(Remember(session_id=session.id, answer="keep"))
            print(kept)
            shown = client.request(ShowSession(session_id=session.id))
            archive = [a for a in client.request(
                Search(query="vendor staging login details", space="Vendor", k=10)).results]
            written: dict[str, Any] = {
                "assertions": client.request(ListAssertions(space="Vendor")).assertions,
                "candidates": client.request(MemoryList()).memories,
                "searches": [client.request(Search(query=q, space="Vendor", k=10)).results
                             for q in ("staging password", "API key", "deploy login",
                                       "Tangerine Walrus", PASSWORD)],
                "answers": [client.request(Ask(question=q, space="Vendor"))
                            for q in ("what is the staging password?",
                                      "what API key does the vendor use?")],
                "archive search": archive,
            }
    finally:
        assert daemon.stop(signal.SIGTERM) == 0, daemon.log()
    everything = msgspec.json.encode(written).decode()
    for reply in written["answers"]:
        print("answer:", reply.answer)
    print(everything[:4000])
    assert kept.status == "kept"
    assert leaks(everything) == []
    # the record keeps the words as said, and says that search and ask mask them
    (said,) = [t for t in shown.turns if PASSWORD in t.text]
    assert said.masked is not None and not leaks(said.masked)

"""Keeping a real 20-turn meeting with the real small models (Qwen2.5-Coder 0.5B, MiniLM).

A 0.5B model writes weak summaries; what is pinned here is what must hold whatever it writes:
the archive decodes into its activity's format, holds only that format's sections, and every
key quote it kept is verbatim from a turn and attributed to that turn's speaker.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from daemon.config import Settings
from daemon.llm.embed import LlamaEmbedder
from daemon.llm.generate import LlamaGenerator, ModelLoad
from daemon.memory.archive import FORMATS, format_for, normalise
from daemon.memory.remember import Rememberer
from daemon.store.records import NewTurn
from daemon.store.store import Store

DATA = Path(__file__).parent / "data" / "atlas_sync_20_turns.json"

# Two model calls over a 20-turn transcript: a few minutes on two idle cores, far more on a
# shared and busy CI machine; the timeout only guards against a hang.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def headings(archive_text: str) -> list[str]:
    """The section headings of a rendered archive (lines like ``Decided:``)."""
    return [line[:-1] for line in archive_text.splitlines()
            if line.endswith(":") and not line.startswith("- ")]


def quotes(archive_text: str) -> list[tuple[str, str]]:
    """(speaker, text) of every line under ``In their own words:``."""
    if "In their own words:\n" not in archive_text:
        return []
    found = []
    for line in archive_text.split("In their own words:\n", 1)[1].splitlines():
        speaker, _, quoted = line.removeprefix("- ").partition(": ")
        assert quoted.startswith('"') and quoted.endswith('"'), line
        found.append((speaker, quoted[1:-1]))
    return found


async def test_a_real_meeting_is_archived_in_its_format_with_verbatim_quotes(
    installed_model: Callable[[str], Path], tmp_path: Path
) -> None:
    meeting = json.loads(DATA.read_text())
    assert len(meeting["turns"]) == 20
    generator = LlamaGenerator(ModelLoad(installed_model("qwen2.5-coder-0.5b"), threads=2, n_ctx=4096))
    embedder = LlamaEmbedder(installed_model("all-minilm-l6-v2"), threads=2, batch=16)
    store = Store(tmp_path / "profile", embedder)
    try:
        space = store.create_space("Atlas")
        session = store.create_session(space_id=space.id, title=meeting["title"],
                                       participants=meeting["participants"])
        turns = store.append_turns(session.id, [
            NewTurn(speaker=t["speaker"], text=t["text"], start=t["t"]) for t in meeting["turns"]
        ])
        store.end_session(session.id)
        settings = Settings(memory_enabled=True)
        rememberer = Rememberer(store, generator=lambda: generator, settings=lambda: settings)

        outcome = await rememberer.remember(session.id, "keep")

        print(outcome)
        assert outcome.status == "kept"
        assert outcome.archived, outcome.notes  # it decoded into the meeting format
        (chunk,) = store.archive(session.id)
        print(chunk.body)
        fmt = format_for("meeting")
        allowed = {"Topic", "Summary", "Who", "In their own words"} | {
            s.title for s in fmt.sections}
        assert chunk.body.startswith("Topic: ")
        assert set(headings(chunk.body)) <= allowed
        foreign = {s.title for f in FORMATS.values() for s in f.sections} - allowed
        assert not foreign & set(headings(chunk.body))
        by_speaker: dict[str, list[str]] = {}
        for turn in turns:
            by_speaker.setdefault(turn.speaker, []).append(normalise(turn.text))
        for speaker, text in quotes(chunk.body):
            assert any(normalise(text) in said for said in by_speaker[speaker]), (speaker, text)
        for assertion in store.list_assertions(session_id=session.id):
            assert assertion.source == "extracted" and assertion.anchor_chunk_id is not None
    finally:
        store.close()
        generator.close()
        embedder.close()

"""Names downstream, end to end with scripted models: diarised turns are kept (archive,
assertions), a session voice is named, and turns, headers, FTS, the archive's participants and
quote attribution, assertion owners, search, ask citations and every export show the name;
forgetting the voice leaves neither its voiceprint nor its name anywhere in the database."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from storekit import Clock
from test_ask import asker, fts_recall
from test_diarize import ToneEncoder, speech
from test_persistence_e2e import COMMITMENT, DECISION, World, archive_answer

from clients.cli.voices import voices_lines
from daemon.asr.engine import Segment
from daemon.config import Settings
from daemon.handlers.wire import voice_info
from daemon.ipc.protocol import VoicesReply
from daemon.llm.generate import ScriptedGenerator
from daemon.store.export import render
from daemon.store.records import NewTurn
from daemon.store.scope import Scope
from daemon.store.search import search
from daemon.store.voices import list_voices
from daemon.voices.service import Voices, unrecognised_note

NAME = "Zoe"  # never spoken: after forget, nothing may hold it
SCRIPT = [  # (voice, words): "ann" and "bob" are loopback voices, "me" the microphone
    ("ann", "Let's settle the Atlas launch. We decided to launch Atlas on March 3rd, "
            "not in February."),
    ("me", "Good. I prefer concise written updates over long status calls."),
    ("bob", "I will send the revised budget by Friday."),
]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path / "profile", Clock())
    yield w
    w.store.close()


def diarised_session(world: World, voices: Voices, space_id: int) -> int:
    session = world.store.create_session(space_id=space_id, title="Atlas sync",
                                         started_at=world.clock.t)
    for i, (who, words) in enumerate(SCRIPT):
        start = 5.0 * i
        if who == "me":
            new = [NewTurn(speaker="me", text=words, start=start, end=start + 3, source="mic")]
        else:
            parts = voices.label(session.id, speech((who, 3.0)), [Segment(0.0, 3.0, words)])
            assert parts is not None
            new = [NewTurn(speaker=p.speaker, text=p.text, start=start + p.start,
                           end=start + p.end, source="loopback", voice_label=p.voice,
                           voice_id=p.voice_id) for p in parts]
        world.store.append_turns(session.id, new)
    world.store.end_session(session.id, ended_at=world.clock.t + 60)
    return session.id


def every_text(world: World) -> str:
    """Every text value in every table of the database (FTS shadow tables included)."""
    def read(conn):  # type: ignore[no-untyped-def]
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]
        values = []
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                values += [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                           for v in row if isinstance(v, (str, bytes))]
        return "\n".join(values)

    return str(world.store.db.read(read))


async def test_a_named_voice_shows_everywhere_and_forget_leaves_no_trace(world: World) -> None:
    settings = Settings()
    voices = Voices(world.store, lambda: settings, Path("/nonexistent"), encoder=ToneEncoder())
    atlas = world.space("Atlas")
    session_id = diarised_session(world, voices, atlas)
    assert [t.speaker for t in world.store.turns(session_id)] == ["Them 1", "me", "Them 2"]

    world.script.archive = archive_answer(
        participants=["me", "Them 1", "Them 2"],
        key_quotes=["I will send the revised budget by Friday."])
    world.script.assertions = [DECISION, {**COMMITMENT, "owner": "Them 2",
                                          "text": "Them 2 will send the revised budget by Friday.",
                                          "evidence": "I will send the revised budget"}]
    await world.keep(session_id)

    named = voices.name("Them 2", NAME, session_id)
    assert (named.name, named.turns, named.sessions) == (NAME, 1, 1)

    turns = world.store.turns(session_id)
    assert [t.speaker for t in turns] == ["Them 1", "me", NAME]
    transcript = [c for c in world.store.chunks(session_id=session_id) if c.kind == "transcript"]
    assert any(f"{NAME}: I will send" in c.body for c in transcript)
    assert all("Them 2" not in c.header + c.body for c in transcript)
    assert world.store.fts_chunks(NAME, Scope(space_id=atlas))
    (archive,) = world.store.archive(session_id)
    assert f'- {NAME}: "I will send the revised budget by Friday."' in archive.body
    [who] = [line for line in archive.body.splitlines() if line.startswith("Who:")]
    assert NAME in who and "Them 2" not in who
    commitment = next(a for a in world.store.list_assertions(session_id=session_id)
                      if a.kind == "commitment")
    assert commitment.owner == NAME
    assert world.store.fts_assertions(NAME, Scope(space_id=atlas))
    hits = search(world.store, "revised budget", scope=Scope(space_id=atlas))
    assert any(NAME in h.speakers for h in hits), [(h.kind, h.speakers) for h in hits]
    assert all("Them 2" not in h.text for h in hits), [h.text for h in hits]
    session = world.store.get_session(session_id)
    for fmt in ("md", "json", "srt", "vtt"):
        assert NAME in render(fmt, session, turns), fmt

    generator = ScriptedGenerator(["The budget comes on Friday [1]."])
    answer = await asker(world.store, generator, recall=fts_recall(world.store)).ask(
        "When does the revised budget come?", space="Atlas")
    assert any(NAME in (c.speaker, c.quote.split()[0]) for c in answer.citations), answer
    assert all("Them 2" not in c.quote for c in answer.citations)

    # a later session recognises the named voice
    later = diarised_session(world, voices, atlas)
    assert [t.speaker for t in world.store.turns(later)] == ["Them 1", "me", NAME]

    voices.forget(NAME)
    assert [t.speaker for t in world.store.turns(session_id)] == ["Them 1", "me", "Them 2"]
    assert NAME not in every_text(world)
    assert world.store.db.read(lambda c: c.execute("SELECT count(*) FROM voices").get) == 0
    assert not world.store.fts_chunks(NAME, Scope(space_id=atlas))
    assert voices.label(later, speech(("bob", 3.0)), [Segment(0.0, 3.0, "x")]) is not None
    assert [v.name for v in voices.heard() if v.name] == []


async def test_the_voices_of_a_discarded_session_leave_memory(world: World) -> None:
    settings = Settings()
    voices = Voices(world.store, lambda: settings, Path("/nonexistent"), encoder=ToneEncoder())
    session_id = diarised_session(world, voices, world.space("Atlas"))
    assert {h.session_id for h in voices.heard()} == {session_id}
    world.store.delete_session(session_id)
    assert voices.heard() == []


class Encoder(ToneEncoder):
    """The scripted encoder under the id of a real one."""

    def __init__(self, model_id: str) -> None:
        super().__init__()
        self.model_id = model_id


async def test_a_voice_named_under_another_encoder_is_said_and_named_again_keeps_its_turns(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings()
    atlas = world.space("Atlas")
    # named while the daemon ran GE2E
    ge2e = Voices(world.store, lambda: settings, Path("/nonexistent"),
                  encoder=Encoder("resemblyzer-ge2e"))
    first = diarised_session(world, ge2e, atlas)
    original = ge2e.name("Them 2", NAME, first)
    assert original.model_id == "resemblyzer-ge2e"

    # CAM++ installed, the daemon restarted: its prints are not comparable with GE2E's
    cam = Voices(world.store, lambda: settings, Path("/nonexistent"),
                 encoder=Encoder("campplus-zh-en"))
    with caplog.at_level(logging.WARNING, logger="daemon.voices.service"):
        second = diarised_session(world, cam, atlas)
        diarised_session(world, cam, atlas)
    assert [t.speaker for t in world.store.turns(second)] == ["Them 1", "me", "Them 2"]
    assert [t.speaker for t in world.store.turns(first)] == ["Them 1", "me", NAME]  # kept
    [warning] = [r.getMessage() for r in caplog.records]  # once, in one line
    assert warning == unrecognised_note([original], "campplus-zh-en")
    assert "\n" not in warning and f"{NAME} was named under resemblyzer-ge2e" in warning
    assert "`braincue settings set voice_model resemblyzer`" in warning
    listed = voices_lines(VoicesReply(
        voices=[voice_info(v) for v in list_voices(world.store)], heard=[],
        voices_enabled=True, state="on", model_id=cam.model_id, note=warning))
    assert listed[0] == "voices: on (campplus-zh-en)" and f"note: {warning}" in listed
    assert "resemblyzer-ge2e" in listed[3]  # its row says what it was named under

    # named again: the same voice (id, name, past turns), its print learnt anew under CAM++
    again = cam.name("Them 2", NAME, second)
    assert (again.id, again.model_id, again.sessions, again.turns) == (
        original.id, "campplus-zh-en", 2, 2)
    assert again.seconds == cam.session(second).find(NAME).seconds  # type: ignore[union-attr]
    later = diarised_session(world, cam, atlas)
    assert [t.speaker for t in world.store.turns(later)] == ["Them 1", "me", NAME]

    cam.forget(NAME)
    assert NAME not in every_text(world)
    assert world.store.db.read(lambda c: c.execute("SELECT count(*) FROM voices").get) == 0


def test_voices_of_two_encoders_merged_keep_the_print_of_the_one_in_use(world: World) -> None:
    settings = Settings()
    atlas = world.space("Atlas")
    ge2e = Voices(world.store, lambda: settings, Path("/nonexistent"),
                  encoder=Encoder("resemblyzer-ge2e"))
    ge2e.name("Them 2", "Bob", diarised_session(world, ge2e, atlas))
    cam = Voices(world.store, lambda: settings, Path("/nonexistent"),
                 encoder=Encoder("campplus-zh-en"))
    new = cam.name("Them 2", "Robert", diarised_session(world, cam, atlas))
    merged = cam.merge("Bob", "Robert")
    assert (merged.name, merged.model_id, merged.turns, merged.seconds) == (
        "Bob", "campplus-zh-en", 2, new.seconds)
    np.testing.assert_array_equal(merged.voiceprint, new.voiceprint)

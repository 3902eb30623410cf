"""Sessions stored before the gate learnt the spoken forms are masked after the upgrade."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from storekit import open_store, recorded_session

from daemon.sensitive import gate
from daemon.sensitive.judge import judged
from daemon.store.db import Migration
from daemon.store.records import NewAssertion
from daemon.store.schema import (
    MIGRATIONS,
    m010_remask_secrets,
    m011_remask_judged_secrets,
    m013_remask_spoken_passphrases,
)
from daemon.store.scope import Scope

SAID = [
    "Before you go: log in to the console as ops-admin with Kestrel-Quarry-5521.",
    "Got it. And the door code?",
    "It's 4417-2291, the keypad by the loading bay.",
    "We'll go with the loading bay instead of the front door because it is closer.",
]
VALUES = ["Kestrel", "Quarry", "5521", "4417", "2291"]


@contextmanager
def older_build(monkeypatch: pytest.MonkeyPatch, without: Migration
                ) -> Iterator[pytest.MonkeyPatch]:
    """An older build inside the block: the store's migrations stop short of ``without``; the
    monkeypatch given out undoes whatever else the block patches, when it ends."""
    with monkeypatch.context() as older:
        older.setattr("daemon.store.store.MIGRATIONS",
                      tuple(m for m in MIGRATIONS if m is not without))
        yield older


def test_a_session_stored_before_the_change_is_masked_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir = tmp_path / "profile"
    # an older build: no re-masking step, and a gate that found none of these
    with older_build(monkeypatch, without=m010_remask_secrets) as older:
        older.setattr("daemon.store.chunking.mask_lines", lambda texts, before="": list(texts))
        with open_store(data_dir) as store:
            space = store.create_space("Ops")
            session_id = recorded_session(store, SAID, space_id=space.id)
            store.put_archive(session_id, "Handover. The console login is ops-admin / "
                              "Kestrel-Quarry-5521; the door code is 4417-2291.")
            anchor = store.chunks(session_id=session_id, kind="transcript")[0].id
            fact = store.add_assertion(NewAssertion(
                kind="fact", text="The loading bay door opens with 4417-2291.",
                source="extracted", anchor_chunk_id=anchor, session_id=session_id,
                space_id=space.id))
            bodies = " ".join(c.body for c in store.chunks(session_id=session_id))
            assert "Kestrel-Quarry-5521" in bodies and "4417-2291" in bodies  # as it was
    with open_store(data_dir) as store:
        chunks = store.chunks(session_id=session_id)
        assert {c.kind for c in chunks} == {"transcript", "session"}
        for chunk in chunks:
            assert not [v for v in VALUES if v in chunk.body], chunk.body
            assert "[redacted" in chunk.body
        transcript = next(c for c in chunks if c.kind == "transcript")
        assert "loading bay instead of the front door" in transcript.body  # the rest as said
        scope = Scope(space_id=space.id)
        for value in VALUES:
            assert store.fts_chunks(value, scope) == []
            assert store.fts_assertions(value, scope) == []
        assert store.fts_chunks("keypad loading bay", scope) != []
        assert (store.get_assertion(fact.id).text
                == "The loading bay door opens with [redacted password].")
        # the turns keep the words as said (behind the encryption)
        assert [t.text for t in store.turns(session_id)] == SAID


JUDGED = [
    "I set the hotel safe to 1 5 0 9, so we both know it.",
    "For the church hall alarm you put in 6060 and press set.",
    "I changed the garage keypad to seven seven one nine last week.",
    "We meet again on the 14th at 10:30 in room 212.",
]


def test_a_session_stored_before_the_gate_judged_values_in_context_is_masked_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir = tmp_path / "profile"
    # an older build: no second re-masking step, and a gate without the judge
    with older_build(monkeypatch, without=m011_remask_judged_secrets) as older:
        older.setattr(gate, "DETECTORS", tuple(d for d in gate.DETECTORS if d is not judged))
        gate.clear_cache()
        with open_store(data_dir) as store:
            space = store.create_space("Home")
            session_id = recorded_session(store, JUDGED, space_id=space.id)
            store.put_archive(session_id, "Codes: the hotel safe is 1 5 0 9, the church hall "
                              "alarm 6060, the garage keypad seven seven one nine.")
            said = " ".join(c.body for c in store.chunks(session_id=session_id))
            assert "1 5 0 9" in said and "6060" in said and "seven seven one nine" in said
    gate.clear_cache()
    with open_store(data_dir) as store:
        bodies = [c.body for c in store.chunks(session_id=session_id)]
        for body in bodies:
            assert "1 5 0 9" not in body and "6060" not in body, body
            assert "seven seven one nine" not in body, body
        assert any("room 212" in body and "10:30" in body for body in bodies)  # stays as said
        scope = Scope(space_id=space.id)
        assert store.fts_chunks("6060", scope) == []
        assert store.fts_chunks("hotel safe", scope) != []
        assert [t.text for t in store.turns(session_id)] == JUDGED  # the words as said


PASSPHRASES = [
    "What passphrase did you put on the backup drive?",
    "Maple river forty two, each word with a capital.",
    "The passphrase for the wiki export is amber falcon seven, all lower case.",
    "The password is on the sticky note by the printer.",
]


def test_a_passphrase_said_as_plain_words_before_the_gate_heard_them_is_masked_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir = tmp_path / "profile"
    # an older build: no third re-masking step, and a gate that found none of these
    with older_build(monkeypatch, without=m013_remask_spoken_passphrases) as older:
        older.setattr("daemon.store.chunking.mask_lines", lambda texts, before="": list(texts))
        with open_store(data_dir) as store:
            space = store.create_space("Home")
            session_id = recorded_session(store, PASSPHRASES, space_id=space.id)
            said = " ".join(c.body for c in store.chunks(session_id=session_id))
            assert "Maple river forty two" in said and "amber falcon seven" in said
    with open_store(data_dir) as store:
        bodies = [c.body for c in store.chunks(session_id=session_id)]
        for body in bodies:
            assert "Maple river" not in body and "amber falcon" not in body, body
        assert any("sticky note by the printer" in body for body in bodies)  # stays as said
        scope = Scope(space_id=space.id)
        assert store.fts_chunks("amber falcon", scope) == []
        assert store.fts_chunks("wiki export", scope) != []
        assert [t.text for t in store.turns(session_id)] == PASSPHRASES  # the words as said

"""Sessions stored before the gate learnt the spoken forms are masked after the upgrade."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from storekit import open_store, recorded_session

from daemon.sensitive import gate
from daemon.sensitive.gate import mask_lines
from daemon.sensitive.judge import judged
from daemon.store.db import Migration
from daemon.store.records import NewAssertion
from daemon.store.schema import (
    MIGRATIONS,
    m010_remask_secrets,
    m011_remask_judged_secrets,
    m013_remask_spoken_passphrases,
    m014_remask_dictated_and_grouped,
    m015_remask_access_logins,
    m016_remask_password_shapes_and_dials,
)
from daemon.store.scope import Scope
from daemon.store.store import Store

SAID = [
    "Before you go: log in to the console as ops-admin with Kestrel-Quarry-5521.",
    "Got it. And the door code?",
    "It's 4417-2291, the keypad by the loading bay.",
    "We'll go with the loading bay instead of the front door because it is closer.",
]
VALUES = ["Kestrel", "Quarry", "5521", "4417", "2291"]


@contextmanager
def older_build(monkeypatch: pytest.MonkeyPatch, without: Migration, *also: Migration
                ) -> Iterator[pytest.MonkeyPatch]:
    """An older build inside the block: the store's migrations lack ``without`` (and ``also``);
    the monkeypatch given out undoes whatever else the block patches, when it ends."""
    with monkeypatch.context() as older:
        older.setattr("daemon.store.store.MIGRATIONS",
                      tuple(m for m in MIGRATIONS if m not in (without, *also)))
        yield older


@contextmanager
def stored_unmasked(data_dir: Path, monkeypatch: pytest.MonkeyPatch, without: Migration
                    ) -> Iterator[Store]:
    """The store as an older build opens it: no ``without`` step, and a gate that finds
    nothing, so what is stored inside the block is stored as said."""
    with older_build(monkeypatch, without=without) as older:
        older.setattr("daemon.store.chunking.mask_lines", lambda texts, before="": list(texts))
        with open_store(data_dir) as store:
            yield store


def recorded_as_said(store: Store, turns: list[str], values: list[str], archive: str = ""
                     ) -> tuple[int, int]:
    """(Space id, session id) of a session of ``turns`` (and ``archive``) in a new Space, every
    one of ``values`` readable in its chunks."""
    space = store.create_space("Home")
    session_id = recorded_session(store, turns, space_id=space.id)
    if archive:
        store.put_archive(session_id, archive)
    said = " ".join(c.body for c in store.chunks(session_id=session_id))
    assert all(v in said for v in values), said
    return space.id, session_id


def assert_masked_when_reopened(data_dir: Path, session_id: int, space_id: int,
                                said: list[str], *, gone: list[str], stays: list[str],
                                hidden: str, found: str) -> None:
    """Today's build reopens the profile: no chunk holds any of ``gone``, one holds every word
    of ``stays`` as said; a search for ``hidden`` finds nothing, one for ``found`` finds it; the
    turns keep the words as said (behind the encryption)."""
    with open_store(data_dir) as store:
        bodies = [c.body for c in store.chunks(session_id=session_id)]
        for body in bodies:
            assert not [g for g in gone if g in body], body
        assert any(all(s in body for s in stays) for body in bodies)  # stays as said
        scope = Scope(space_id=space_id)
        assert store.fts_chunks(hidden, scope) == []
        assert store.fts_chunks(found, scope) != []
        assert [t.text for t in store.turns(session_id)] == said


def test_a_session_stored_before_the_change_is_masked_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir = tmp_path / "profile"
    # an older build: no re-masking step, and a gate that found none of these
    with stored_unmasked(data_dir, monkeypatch, without=m010_remask_secrets) as store:
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


PASSPHRASES = [
    "What passphrase did you put on the backup drive?",
    "Maple river forty two, each word with a capital.",
    "The passphrase for the wiki export is amber falcon seven, all lower case.",
    "The password is on the sticky note by the printer.",
]


DICTATED = [
    "The NAS admin password is short: Heron, then 6, then 1, then 3.",
    "For the authenticator, choose manual entry and type 4kqz 7wna m2xe pp5d.",
    "What's the passphrase on the drive? The card in the safe has it.",
    "It reads willow 8 granite fern, all lower case.",
    "The model number on the label is XPS-9530-7741, order the charger for that.",
]



ACCESS = [
    "For the media box, ssh in as kodi with fennel-Brook-38 and restart the service.",
    "The relay authenticates to the broker using Tansy_Wharf_71.",
    "Boot it and type heron Cobble Sedge 52 as the passphrase.",
    "Do you have a token for the vending machine? The snacks are 1.75 each.",
]


SHAPES = [
    "The backup box won't let me into its admin page.",
    "Use Larkspur52Ferry, I set it when I moved it.",
    "The filing safe is a dial: right to thirty, left to seven, right to fifty-two.",
    "Our launch code is FRIEND15, anyone can use it for 15 percent off.",
]


def without_the_judge(older: pytest.MonkeyPatch) -> None:
    older.setattr(gate, "DETECTORS", tuple(d for d in gate.DETECTORS if d is not judged))


def finding_nothing(older: pytest.MonkeyPatch) -> None:
    older.setattr("daemon.store.chunking.mask_lines", lambda texts, before="": list(texts))


# (the step an older build lacked, its gate, what was said, what it stored readable, an archive,
#  what must be gone after, what stays, a search that must find nothing, one that must find)
OLDER = [
    pytest.param(m011_remask_judged_secrets, without_the_judge, JUDGED,
                 ["1 5 0 9", "6060", "seven seven one nine"],
                 "Codes: the hotel safe is 1 5 0 9, the church hall alarm 6060, the garage "
                 "keypad seven seven one nine.",
                 ["1 5 0 9", "6060", "seven seven one nine"], ["room 212", "10:30"],
                 "6060", "hotel safe", id="values judged in context"),
    pytest.param(m013_remask_spoken_passphrases, finding_nothing, PASSPHRASES,
                 ["Maple river forty two", "amber falcon seven"], "",
                 ["Maple river", "amber falcon"], ["sticky note by the printer"],
                 "amber falcon", "wiki export", id="passphrases said as plain words"),
    pytest.param(m014_remask_dictated_and_grouped, finding_nothing, DICTATED,
                 ["Heron, then 6", "4kqz 7wna m2xe pp5d", "willow 8 granite fern"], "",
                 ["Heron", "4kqz", "willow 8"], ["XPS-9530-7741"],
                 "4kqz", "charger", id="values dictated, read in groups, with a digit"),
    pytest.param(m015_remask_access_logins, finding_nothing, ACCESS,
                 ["fennel-Brook-38", "Tansy_Wharf_71", "heron Cobble Sedge 52"], "",
                 ["fennel", "Tansy", "Cobble Sedge"], ["1.75 each"],
                 "fennel", "snacks", id="values given to a login verb, typed as the password"),
    pytest.param(m016_remask_password_shapes_and_dials, finding_nothing, SHAPES,
                 ["Larkspur52Ferry", "right to thirty, left to seven"], "",
                 ["Larkspur52Ferry", "thirty, left to seven"], ["FRIEND15"],
                 "Larkspur52Ferry", "filing safe",
                 id="password shapes where getting in is said, dials"),
]


@pytest.mark.parametrize(
    ("without", "older_gate", "turns", "readable", "archive", "gone", "stays", "hidden", "found"),
    OLDER)
def test_what_an_older_gate_left_readable_is_masked_after_the_upgrade(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, without: Migration,
        older_gate: Callable[[pytest.MonkeyPatch], None], turns: list[str], readable: list[str],
        archive: str, gone: list[str], stays: list[str], hidden: str, found: str) -> None:
    data_dir = tmp_path / "profile"
    with older_build(monkeypatch, without=without) as older:
        older_gate(older)
        gate.clear_cache()
        with open_store(data_dir) as store:
            space_id, session_id = recorded_as_said(store, turns, readable, archive)
    gate.clear_cache()
    assert_masked_when_reopened(data_dir, session_id, space_id, turns, gone=gone, stays=stays,
                                hidden=hidden, found=found)


def test_one_upgrade_masks_once_however_many_of_its_steps_ask(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir = tmp_path / "profile"
    with older_build(monkeypatch, m013_remask_spoken_passphrases, m014_remask_dictated_and_grouped,
                     m015_remask_access_logins, m016_remask_password_shapes_and_dials) as older:
        finding_nothing(older)
        with open_store(data_dir) as store:
            _, session_id = recorded_as_said(store, SHAPES, ["Larkspur52Ferry"])
    masked: list[list[str]] = []

    def counted(texts: list[str], before: str = "") -> list[str]:
        masked.append(list(texts))
        return mask_lines(texts, before)

    monkeypatch.setattr("daemon.store.remask.mask_lines", counted)
    with open_store(data_dir) as store:
        chunks = store.chunks(session_id=session_id)
    assert "Larkspur52Ferry" not in " ".join(c.body for c in chunks)
    assert len(masked) == sum(c.kind == "transcript" for c in chunks)

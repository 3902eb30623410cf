"""`braincue import-transcript | sessions | show | export | docs | spaces` on a real store."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from clients.shell import cli
from daemon.config import Paths
from daemon.errors import InvalidInput, NotFound
from daemon.store.records import Turn
from daemon.store.scope import Scope
from daemon.store.store import Store

TRANSCRIPT: dict[str, Any] = {
    "title": "Atlas sync",
    "started_at": "2026-07-28T14:05:00+02:00",
    "activity": "project",
    "participants": ["me", "Sarah"],
    "turns": [
        {"speaker": "me", "text": "Shall we ship Atlas on Friday?", "t": 0, "ref": "u1"},
        {"speaker": "Sarah", "text": "Friday works, the database migration is done.",
         "t": 3.5, "end": 6.0},
        {"speaker": "me", "text": "Then Friday it is.", "t": 7.25},
    ],
}


@pytest.fixture
def no_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No embedding model installed: the store keeps text and full-text search only."""
    monkeypatch.setenv("BRAINCUE_MODELS", str(tmp_path / "no-models"))


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=True)


def ok(*args: str, input: str | None = None) -> Result:
    result = run(*args, input=input)
    assert result.exit_code == 0, (result.output, result.exception)
    return result


@pytest.fixture
def transcript_file(tmp_path: Path) -> Path:
    path = tmp_path / "atlas.json"
    path.write_text(json.dumps(TRANSCRIPT))
    return path


@pytest.fixture
def store() -> Callable[[], AbstractContextManager[Store]]:
    """Open the profile's store to check what the commands did (after they have closed it)."""
    return lambda: Store.open(Paths.resolve())


def test_spaces(no_models: None) -> None:
    assert "no Spaces" in ok("spaces", "list").stdout
    assert ok("spaces", "add", "Work", "--activity", "project").stdout == \
        "added Space 1: 'Work' (project)\n"
    assert ok("spaces", "add", "Diary", "--activity", "personal", "--no-memory").stdout == \
        "added Space 2: 'Diary' (personal, memory off)\n"
    listing = ok("spaces", "list").stdout.splitlines()
    assert listing[0].split() == ["ID", "NAME", "ACTIVITY", "MEMORY"]
    assert [line.split() for line in listing[1:]] == [
        ["2", "Diary", "personal", "off"], ["1", "Work", "project", "on"]]
    spaces = json.loads(ok("spaces", "list", "--json").stdout)
    assert [(s["name"], s["memory_enabled"]) for s in spaces] == [("Diary", False), ("Work", True)]

    duplicate = run("spaces", "add", "work")
    assert isinstance(duplicate.exception, InvalidInput)
    assert run("spaces", "add", "X", "--activity", "party").exit_code == 2  # click's usage error

    kept = run("spaces", "rm", "Work", input="n\n")
    assert kept.exit_code == 1 and "Delete Space 'Work'" in kept.output
    assert "Work" in ok("spaces", "list").stdout
    assert ok("spaces", "rm", "work", input="y\n").stdout.endswith(
        "deleted Space 'Work' (1 space)\n")
    assert ok("spaces", "rm", "Diary", "--yes").stdout == "deleted Space 'Diary' (1 space)\n"
    assert isinstance(run("spaces", "rm", "Diary", "--yes").exception, NotFound)


def test_import_show_and_search(no_models: None, transcript_file: Path,
                                store: Callable[[], AbstractContextManager[Store]]) -> None:
    ok("spaces", "add", "Work")
    result = ok("import-transcript", str(transcript_file), "--space", "work")
    assert result.stdout == "imported session 1: 'Atlas sync' into Space 'Work' (3 turns, 1 chunk)\n"
    assert "vectors are added once an embedding model is installed" in result.stderr

    with store() as s:
        session = s.get_session(1)
        assert session.status == "ended"
        assert session.started_at == 1785240300.0  # 2026-07-28T12:05:00Z
        assert session.ended_at == session.started_at + 7.25
        assert session.participants == ("me", "Sarah")
        assert s.turns(1)[0] == Turn(id=1, session_id=1, seq=1, speaker="me", source="import",
                                     start=0.0, end=0.0, text="Shall we ship Atlas on Friday?",
                                     ref="u1")
        work = s.get_space("Work").id
        hits = s.fts_chunks("database migration", Scope(space_id=work))
        assert [s.get_chunk(h.id).session_id for h in hits] == [1]
        assert s.fts_chunks("database migration", Scope(space_id=None)) == []  # Space-scoped
        assert s.get_chunk(hits[0].id).header.startswith("[2026-07-28 | transcript | Atlas sync")

    lines = ok("sessions").stdout.splitlines()
    assert lines[0].split() == ["ID", "STARTED", "STATUS", "TURNS", "SPACE", "TITLE"]
    assert lines[1].split()[3:] == ["ended", "3", "Work", "Atlas", "sync"]
    assert [s["id"] for s in json.loads(ok("sessions", "--json").stdout)] == [1]
    assert json.loads(ok("sessions", "--space", "Work", "--json").stdout)[0]["title"] == \
        "Atlas sync"

    shown = ok("show", "1").stdout
    assert "session 1: Atlas sync" in shown and "Space: Work" in shown
    assert shown.endswith(
        "[00:00] me: Shall we ship Atlas on Friday?\n"
        "[00:03] Sarah: Friday works, the database migration is done.\n"
        "[00:07] me: Then Friday it is.\n"
    )
    detail = json.loads(ok("show", "1", "--json").stdout)
    assert detail["space"] == "Work"
    assert [t["text"] for t in detail["turns"]][-1] == "Then Friday it is."
    assert isinstance(run("show", "2").exception, NotFound)


def test_import_errors_leave_nothing(no_models: None, tmp_path: Path, transcript_file: Path,
                                     store: Callable[[], AbstractContextManager[Store]]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**TRANSCRIPT, "turns": [{"speaker": "me", "text": "x", "t": -1}]}))
    result = run("import-transcript", str(bad))
    assert isinstance(result.exception, InvalidInput)
    assert "`$.turns[0].t`" in str(result.exception)

    missing = run("import-transcript", str(tmp_path / "nope.json"))
    assert isinstance(missing.exception, InvalidInput)
    assert "cannot read" in str(missing.exception)

    no_space = run("import-transcript", str(transcript_file), "--space", "Nowhere")
    assert isinstance(no_space.exception, NotFound)
    with store() as s:
        assert s.list_sessions() == []


def test_export_round_trip(no_models: None, tmp_path: Path, transcript_file: Path,
                           store: Callable[[], AbstractContextManager[Store]]) -> None:
    ok("import-transcript", str(transcript_file))
    vtt = ok("export", "1", "--format", "vtt").stdout
    assert vtt.startswith("WEBVTT\n\n00:00:00.000 --> 00:00:03.500\n<v me>Shall we ship")
    srt = ok("export", "1", "--format", "srt").stdout
    assert srt.startswith("1\n00:00:00,000 --> 00:00:03,500\nme: Shall we ship")
    assert ok("export", "1", "--format", "md").stdout.startswith("# Atlas sync\n")

    out = tmp_path / "exported.json"
    result = ok("export", "1", "--format", "json", "-o", str(out))
    assert result.stdout == ""
    ok("import-transcript", str(out))
    with store() as s:
        first, second = s.turns(1), s.turns(2)
        assert [(t.speaker, t.text, t.start, t.end, t.ref) for t in first] == \
            [(t.speaker, t.text, t.start, t.end, t.ref) for t in second]
        assert s.get_session(2).started_at == s.get_session(1).started_at

    assert run("export", "1", "--format", "docx").exit_code == 2
    assert isinstance(run("export", "9", "--format", "md").exception, NotFound)


def test_docs(no_models: None, tmp_path: Path, store: Callable[[], AbstractContextManager[Store]]) -> None:
    ok("spaces", "add", "Job hunt", "--activity", "job")
    cv = tmp_path / "cv.md"
    cv.write_text("# Jane Doe\n\n## Experience\n\nBuilt the billing system at Acme.\n")
    added = ok("docs", "add", str(cv), "--space", "job hunt", "--title", "My CV")
    assert added.stdout == \
        "added document 1: 'My CV' to Space 'Job hunt' (60 characters, 1 chunk)\n"
    notes = tmp_path / "notes.txt"
    notes.write_text("Ideas for the offsite.\n")
    assert "profile-wide" in ok("docs", "add", str(notes)).stdout

    listing = ok("docs", "list").stdout.splitlines()
    assert listing[0].split() == ["ID", "ADDED", "CHUNKS", "SPACE", "TITLE", "FILE"]
    assert len(listing) == 3
    in_space = json.loads(ok("docs", "list", "--space", "Job hunt", "--json").stdout)
    assert [(d["id"], d["title"], d["filename"]) for d in in_space] == [(1, "My CV", "cv.md")]

    with store() as s:
        job = s.get_space("Job hunt").id
        hits = s.fts_chunks("billing", Scope(space_id=job))
        assert len(hits) == 1
        assert s.get_chunk(hits[0].id).header == \
            f"[{_mtime_date(cv)} | document | My CV | Experience]"

    again = run("docs", "add", str(cv), "--space", "Job hunt")
    assert isinstance(again.exception, InvalidInput)
    binary = tmp_path / "photo.txt"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    assert isinstance(run("docs", "add", str(binary)).exception, InvalidInput)

    assert ok("docs", "rm", "1").stdout == \
        "deleted document 1 'My CV' (1 chunk, 1 document)\n"
    with store() as s:
        assert s.fts_chunks("billing", Scope(space_id=job)) == []
    assert isinstance(run("docs", "rm", "1").exception, NotFound)
    assert "no documents" in ok("docs", "list", "--space", "Job hunt").stdout


def _mtime_date(path: Path) -> str:
    return f"{dt.datetime.fromtimestamp(path.stat().st_mtime):%Y-%m-%d}"


@pytest.mark.slow
def test_vectors_follow_once_a_model_is_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transcript_file: Path,
    installed_model: Callable[[str], Path], store: Callable[[], AbstractContextManager[Store]],
) -> None:
    installed_model("all-minilm-l6-v2")  # fails, never skips, when it is missing
    models_dir = Paths.resolve().models_dir
    monkeypatch.setenv("BRAINCUE_MODELS", str(tmp_path / "no-models"))
    ok("import-transcript", str(transcript_file))

    monkeypatch.setenv("BRAINCUE_MODELS", str(models_dir))
    notes = tmp_path / "notes.md"
    notes.write_text("The offsite is in Lisbon in October.\n")
    result = ok("docs", "add", str(notes))
    assert "embedded 1 item(s) stored without vectors" in result.stderr  # the transcript chunk

    from daemon.llm.embed import LlamaEmbedder

    embedder = LlamaEmbedder(installed_model("all-minilm-l6-v2"), threads=1, batch=8)
    try:
        with Store.open(Paths.resolve(), embedder) as s:
            assert s.vector_count("chunk") == 2
            top = s.vector_chunks("when do we release the product?", Scope())[0]
            assert s.get_chunk(top.id).session_id == 1
            top = s.vector_chunks("where is the team trip?", Scope())[0]
            assert s.get_chunk(top.id).document_id == 1
    finally:
        embedder.close()

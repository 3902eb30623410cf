"""`braincue import-transcript | sessions | show | export | docs | spaces` against a daemon
subprocess: the shell only speaks the protocol."""

from __future__ import annotations

import json
import re
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from storekit import TRANSCRIPT
from test_documents import make_pdf

from clients.shell import cli
from daemon.errors import DaemonNotRunning, InvalidInput, NotFound
from daemon.ipc.client import Client
from daemon.ipc.protocol import MAX_CONTENT_BYTES, ShowSession, Status
from daemon.ipc.testing import DaemonProcess, start_daemon


@pytest.fixture
def daemon(bare_home: Path) -> Iterator[DaemonProcess]:
    process = start_daemon(bare_home)
    yield process
    assert process.stop() == 0, process.log()


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


def test_spaces(daemon: DaemonProcess) -> None:
    assert "no Spaces" in ok("spaces", "list").stdout
    assert ok("spaces", "add", "Work", "--activity", "project").stdout == \
        "added Space 1: 'Work' (project)\n"
    assert ok("spaces", "add", "Diary", "--activity", "personal", "--no-memory").stdout == \
        "added Space 2: 'Diary' (personal, memory off)\n"
    listing = ok("spaces", "list").stdout.splitlines()
    assert listing[0].split() == ["ID", "NAME", "ACTIVITY", "MEMORY", "SESSIONS", "DOCUMENTS"]
    assert [line.split() for line in listing[1:]] == [
        ["2", "Diary", "personal", "off", "0", "0"], ["1", "Work", "project", "on", "0", "0"]]
    spaces = json.loads(ok("spaces", "list", "--json").stdout)
    assert [(s["name"], s["memory_enabled"]) for s in spaces] == [("Diary", False), ("Work", True)]

    duplicate = run("spaces", "add", "work")
    assert isinstance(duplicate.exception, InvalidInput)
    assert run("spaces", "add", "X", "--activity", "party").exit_code == 2  # click's usage error

    assert ok("spaces", "set", "diary", "--memory", "--activity", "solo").stdout == \
        "Space 2: 'Diary' (solo)\n"
    assert ok("spaces", "set", "Diary", "--rename", "Journal", "--no-memory").stdout == \
        "Space 2: 'Journal' (solo, memory off)\n"
    assert run("spaces", "set", "Journal").exit_code == 2  # nothing to change
    assert isinstance(run("spaces", "set", "Diary", "--memory").exception, NotFound)

    kept = run("spaces", "rm", "Work", input="n\n")
    assert kept.exit_code == 1
    assert "Delete Space 'Work' and everything in it (0 sessions, 0 documents)?" in kept.output
    assert "Work" in ok("spaces", "list").stdout
    assert ok("spaces", "rm", "work", input="y\n").stdout.endswith(
        "deleted Space 'Work' (1 space)\n")
    assert ok("spaces", "rm", "Journal", "--yes").stdout == "deleted Space 'Journal' (1 space)\n"
    assert isinstance(run("spaces", "rm", "Journal", "--yes").exception, NotFound)
    assert isinstance(run("spaces", "rm", "Journal").exception, NotFound)


def test_import_sessions_and_show(daemon: DaemonProcess, transcript_file: Path) -> None:
    ok("spaces", "add", "Work")
    result = ok("import-transcript", str(transcript_file), "--space", "work")
    assert result.stdout == "imported session 1: 'Atlas sync' into Space 'Work' (3 turns, 1 chunk)\n"
    assert result.stderr.startswith("note: stored for full-text search; vectors are added once "
                                    "an embedding model is installed")
    as_json = json.loads(ok("import-transcript", str(transcript_file), "--json").stdout)
    assert (as_json["session"]["id"], as_json["session"]["space"]) == (2, None)

    lines = ok("sessions").stdout.splitlines()
    assert lines[0].split() == ["ID", "STARTED", "STATUS", "TURNS", "HEARD", "SPACE", "TITLE"]
    assert [line.split()[3:] for line in lines[1:]] == [  # imported: no capture receipt
        ["ended", "3", "-", "-", "Atlas", "sync"], ["ended", "3", "-", "Work", "Atlas", "sync"]]
    assert [s["id"] for s in json.loads(ok("sessions", "--json").stdout)] == [2, 1]
    in_work = json.loads(ok("sessions", "--space", "Work", "--json").stdout)
    assert [(s["id"], s["title"], s["space"]) for s in in_work] == [(1, "Atlas sync", "Work")]
    assert len(ok("sessions", "--limit", "1").stdout.splitlines()) == 2
    assert isinstance(run("sessions", "--space", "Nowhere").exception, NotFound)

    shown = ok("show", "1").stdout
    assert "session 1: Atlas sync" in shown and "Space: Work" in shown
    assert "participants: me, Sarah" in shown
    assert shown.endswith(
        "[00:00] me: Shall we ship Atlas on Friday?\n"
        "[00:03] Sarah: Friday works, the database migration is done.\n"
        "[00:07] me: Then Friday it is.\n"
    )
    detail = json.loads(ok("show", "1", "--json").stdout)
    assert detail["session"]["space"] == "Work"
    assert [t["text"] for t in detail["turns"]][-1] == "Then Friday it is."
    assert isinstance(run("show", "3").exception, NotFound)


def test_import_errors_leave_nothing(daemon: DaemonProcess, tmp_path: Path,
                                     transcript_file: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**TRANSCRIPT, "turns": [{"speaker": "me", "text": "x", "t": -1}]}))
    result = run("import-transcript", str(bad))
    assert isinstance(result.exception, InvalidInput)
    assert str(result.exception).startswith("bad.json: invalid transcript: ")
    assert "`$.turns[0].t`" in str(result.exception)

    missing = run("import-transcript", str(tmp_path / "nope.json"))
    assert isinstance(missing.exception, InvalidInput)
    assert "cannot read" in str(missing.exception)

    huge = tmp_path / "huge.json"
    huge.write_bytes(b" " * (MAX_CONTENT_BYTES + 1))
    too_big = run("import-transcript", str(huge))
    assert isinstance(too_big.exception, InvalidInput)
    assert "MiB a file sent to the daemon may have — split it" in str(too_big.exception)

    no_space = run("import-transcript", str(transcript_file), "--space", "Nowhere")
    assert isinstance(no_space.exception, NotFound)
    assert ok("sessions").stdout == "no sessions\n"


def test_export_round_trip(daemon: DaemonProcess, tmp_path: Path, transcript_file: Path) -> None:
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
    with Client(timeout=30) as client:
        first, second = (client.request(ShowSession(session_id=n)) for n in (1, 2))
    assert [(t.speaker, t.text, t.start, t.end, t.ref) for t in first.turns] == \
        [(t.speaker, t.text, t.start, t.end, t.ref) for t in second.turns]
    assert second.session.started_at == first.session.started_at

    assert run("export", "1", "--format", "docx").exit_code == 2
    assert isinstance(run("export", "9", "--format", "md").exception, NotFound)
    unwritable = run("export", "1", "--format", "md", "-o", str(tmp_path / "no" / "x.md"))
    assert isinstance(unwritable.exception, InvalidInput)


def test_docs(daemon: DaemonProcess, tmp_path: Path) -> None:
    ok("spaces", "add", "Job hunt", "--activity", "job")
    cv = tmp_path / "cv.md"
    cv.write_text("# Jane Doe\n\n## Experience\n\nBuilt the billing system at Acme.\n")
    added = ok("docs", "add", str(cv), "--space", "job hunt", "--title", "My CV")
    assert added.stdout == \
        "added document 1: 'My CV' to Space 'Job hunt' (60 characters, 1 chunk)\n"
    plan = tmp_path / "plan.pdf"
    plan.write_bytes(make_pdf(["Quarterly plan for Atlas"], ["Ship on Friday"]))
    assert ok("docs", "add", str(plan)).stdout == \
        "added document 2: 'plan' profile-wide (40 characters, 1 chunk)\n"

    listing = ok("docs", "list").stdout.splitlines()
    assert listing[0].split() == ["ID", "ADDED", "CHUNKS", "SPACE", "TITLE", "FILE"]
    assert [line.split()[-1] for line in listing[1:]] == ["plan.pdf", "cv.md"]
    assert listing[2].split()[-5:] == ["Job", "hunt", "My", "CV", "cv.md"]
    in_space = json.loads(ok("docs", "list", "--space", "Job hunt", "--json").stdout)
    assert [(d["id"], d["title"], d["filename"], d["space"]) for d in in_space] == [
        (1, "My CV", "cv.md", "Job hunt")]
    assert ok("spaces", "list").stdout.splitlines()[1].split()[-2:] == ["0", "1"]

    again = run("docs", "add", str(cv), "--space", "Job hunt")
    assert isinstance(again.exception, InvalidInput)
    assert "already added (document 1) — remove it first with `braincue docs rm 1`" in \
        str(again.exception)
    binary = tmp_path / "photo.txt"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    assert isinstance(run("docs", "add", str(binary)).exception, InvalidInput)
    huge = tmp_path / "scan.pdf"
    huge.write_bytes(b"%PDF" + b"\x00" * MAX_CONTENT_BYTES)
    too_big = run("docs", "add", str(huge))
    assert isinstance(too_big.exception, InvalidInput)
    assert str(too_big.exception).endswith("— split it, or add its text instead (a PDF's text "
                                           "is much smaller)")

    assert ok("docs", "rm", "1").stdout == \
        "deleted document 1 'My CV' (1 chunk, 1 document)\n"
    assert isinstance(run("docs", "rm", "1").exception, NotFound)
    assert "no documents" in ok("docs", "list", "--space", "Job hunt").stdout


def test_search(daemon: DaemonProcess, transcript_file: Path) -> None:
    ok("spaces", "add", "Work")
    ok("import-transcript", str(transcript_file), "--space", "Work")
    lines = ok("search", "database", "migration", "--space", "work").stdout.splitlines()
    assert lines[0].startswith("1. [transcript] Atlas sync · 2026-07-28 ")
    assert lines[0].endswith(" · me, Sarah · session 1")
    assert lines[1:] == [
        "   me: Shall we ship Atlas on Friday? Sarah: Friday works, the database migration is done. me:",
        "   Then Friday it is.",
        "   refs: u1",
    ]
    explained = ok("search", "migration", "--space", "Work", "--explain").stdout.splitlines()
    assert re.fullmatch(r"   score \d\.\d{4}: fts_chunks #1 \(-?\d+\.\d{3}\)", explained[-1])
    found = json.loads(ok("search", "migration", "--space", "Work", "--json").stdout)
    assert [(h["session_id"], h["turn_ids"]) for h in found] == [(1, [1, 2, 3])]
    assert ok("search", "migration").stdout == "nothing found\n"  # profile-wide memory only
    assert ok("search", "migration", "--space", "Work", "--as-of", "2026-07-01").stdout == \
        "nothing found\n"
    assert isinstance(run("search", "x", "--space", "Nowhere").exception, NotFound)
    assert run("search").exit_code == 2


def test_without_a_daemon_every_command_says_how_to_start_one(bare_home: Path,
                                                              transcript_file: Path) -> None:
    for args in (["sessions"], ["show", "1"], ["export", "1", "--format", "md"],
                 ["import-transcript", str(transcript_file)], ["spaces", "list"],
                 ["spaces", "add", "Work"], ["spaces", "rm", "Work", "--yes"],
                 ["spaces", "set", "Work", "--memory"], ["docs", "list"], ["docs", "rm", "1"],
                 ["status"], ["settings", "get"], ["follow"], ["search", "x"]):
        result = run(*args)
        assert isinstance(result.exception, DaemonNotRunning), args
        assert str(result.exception) == (
            "the BrainCue daemon is not running for profile 'default' — start it with "
            "`braincued` (or `braincue service install`)")


@pytest.mark.slow
def test_vectors_follow_once_a_model_is_installed(
    bare_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transcript_file: Path,
    installed_model: Callable[[str], Path], models_dir: Path,
) -> None:
    installed_model("all-minilm-l6-v2")  # fails, never skips, when it is missing
    without = start_daemon(bare_home)
    try:
        assert "vectors are added once" in ok("import-transcript", str(transcript_file)).stderr
    finally:
        assert without.stop() == 0
    assert "no vectors: no embed model is installed" in without.log()

    monkeypatch.setenv("BRAINCUE_MODELS", str(models_dir))
    with_model = start_daemon(bare_home)
    try:
        notes = tmp_path / "notes.md"
        notes.write_text("The offsite is in Lisbon in October.\n")
        added = ok("docs", "add", str(notes)).stderr
        assert "vectors are added once" not in added and "embedding" in added  # as it is added
        with Client(timeout=60) as client:
            # the transcript's chunk and 3 turns are embedded in the background after the start
            assert wait_for(lambda: client.request(Status()).counts["vectors"] == 5)
    finally:
        assert with_model.stop(signal.SIGTERM) == 0
    assert "embedded 4 item(s) stored without vectors" in with_model.log()


def wait_for(condition: Callable[[], bool], attempts: int = 600) -> bool:
    """Ask until ``condition`` holds (each ask is a round trip to the daemon)."""
    for _ in range(attempts):
        if condition():
            return True
        time.sleep(0.1)
    return False

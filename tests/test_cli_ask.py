"""`braincue ask` as a user runs it, against a real daemon (no model is needed for these)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from askkit import SPACE, import_kept_sessions

from clients.cli.output import source_line
from daemon.ipc.client import Client
from daemon.ipc.protocol import Citation
from daemon.ipc.testing import DaemonProcess, short_home, start_daemon

BRAINCUE = Path(sys.executable).parent / "braincue"


@pytest.fixture
def daemon(monkeypatch: pytest.MonkeyPatch) -> Iterator[DaemonProcess]:
    home = short_home()
    monkeypatch.setenv("BRAINCUE_HOME", str(home))
    started = start_daemon(home)
    with Client(timeout=60) as client:
        import_kept_sessions(client)
    yield started
    started.stop()
    shutil.rmtree(home, ignore_errors=True)


def braincue(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BRAINCUE), *args], capture_output=True, text=True, timeout=120)


def test_nothing_kept_about_it_is_said_plainly(daemon: DaemonProcess) -> None:
    done = braincue("ask", "Who", "won", "the", "chess", "tournament?", "--space", SPACE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"I don't know: I found nothing about this in your memory of {SPACE}.")

    as_json = json.loads(braincue("ask", "Who won the chess match?", "--space", SPACE,
                                  "--json").stdout)
    assert as_json["nothing_found"] and as_json["question"] == "Who won the chess match?"


def test_asking_nothing_with_no_live_session_is_a_one_line_error(daemon: DaemonProcess) -> None:
    done = braincue("ask")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "error: no question, and no session is live to take one from — ask a question, e.g. "
        '`braincue ask "what did we decide?"`')
    unknown = braincue("ask", "anything?", "--space", "Mars")
    assert unknown.returncode == 1 and "Mars" in unknown.stderr


def test_a_source_line_names_title_date_speaker_and_quote() -> None:
    cited = Citation(n=2, title="Orion planning", date=1_772_445_600.0, speaker="Tom",
                     quote="The Orion server budget is 48,000 euros for this year.")
    assert source_line(cited) == ("[2] Orion planning · 2026-03-02 · Tom: “The Orion server "
                                  "budget is 48,000 euros for this year.”")
    unverified = Citation(n=1, title="", quote="a full refund", verified=False)
    assert source_line(unverified) == "[1] untitled · “a full refund” (not found verbatim)"

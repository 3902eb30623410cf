"""`braincue ask` as a user runs it, against a real daemon (no model is needed for these)."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pyte
import pytest
from askkit import SPACE, import_kept_sessions

from clients.cli.ask import AnswerView
from clients.cli.output import source_line
from daemon.ipc.client import Client
from daemon.ipc.protocol import Citation, EvidenceInfo
from daemon.ipc.testing import DaemonProcess, start_daemon

BRAINCUE = Path(sys.executable).parent / "braincue"


@pytest.fixture
def daemon(short_home: Path) -> Iterator[DaemonProcess]:
    started = start_daemon(short_home)
    with Client(timeout=60) as client:
        import_kept_sessions(client)
    yield started
    started.stop()


def braincue(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BRAINCUE), *args], capture_output=True, text=True, timeout=120)


def test_nothing_kept_about_it_is_said_plainly(daemon: DaemonProcess) -> None:
    done = braincue("ask", "Who", "won", "the", "chess", "tournament?", "--space", SPACE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines() == [
        "What memory holds: nothing that shares a word with the question.", "",
        f"I don't know: I found nothing about this in your memory of {SPACE}."]

    as_json = json.loads(braincue("ask", "Who won the chess match?", "--space", SPACE,
                                  "--json").stdout)
    assert as_json["nothing_found"] and as_json["question"] == "Who won the chess match?"
    assert as_json["declined"] and as_json["evidence"] == []


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


# -- the answer shown once -----------------------------------------------------------------------

STREAMED = ["The Orion ", "budget is 48,000 euros ", "for this year [1] ", "as Tom said [7]."]
CHECKED = "The Orion budget is 48,000 euros for this year [1] as Tom said."


def on_a_terminal(write: Callable[[IO[str]], None], columns: int = 24) -> list[str]:
    """What a terminal ``columns`` wide shows after ``write`` wrote to it (through a pty)."""
    master, slave = pty.openpty()
    with open(slave, "w", closefd=True) as out:
        write(out)
    screen = pyte.Screen(columns, 12)
    stream = pyte.ByteStream(screen)
    while select.select([master], [], [], 0.5)[0]:
        try:
            data = os.read(master, 65536)
        except OSError:  # the writing end is closed: all was read
            break
        if not data:
            break
        stream.feed(data)
    os.close(master)
    return [line.rstrip() for line in screen.display if line.strip()]


def show(view: AnswerView, tokens: list[str], answer: str) -> None:
    for token in tokens:
        view.token(token)
    view.final(answer)


def test_on_a_terminal_the_checked_answer_replaces_the_streamed_one_in_place() -> None:
    shown = on_a_terminal(lambda out: show(AnswerView(out, width=24), STREAMED, CHECKED))
    # the rows hold the checked answer, wrapped, and nothing of the streamed one
    assert "".join(shown).replace(" ", "") == CHECKED.replace(" ", "")
    assert len(shown) == 3  # 65 characters on rows of 24: no leftover row of the streamed text
    assert "".join(shown).count("48,0") == 1 and "[7]" not in "".join(shown)


def test_on_a_terminal_an_answer_the_check_left_alone_is_shown_once_as_it_streamed() -> None:
    same = "".join(STREAMED)
    shown = on_a_terminal(lambda out: show(AnswerView(out, width=24), STREAMED, same))
    assert "".join(shown).replace(" ", "") == same.replace(" ", "")


def test_elsewhere_only_the_checked_answer_is_written() -> None:
    out = io.StringIO()
    show(AnswerView(out), STREAMED, CHECKED)
    assert out.getvalue() == CHECKED + "\n"


def test_braincue_ask_on_a_terminal_shows_its_answer_once(daemon: DaemonProcess) -> None:
    def run(out: IO[str]) -> None:
        subprocess.run([str(BRAINCUE), "ask", "Who won the chess tournament?", "--space", SPACE],
                       stdout=out, stderr=subprocess.DEVNULL, timeout=120, check=True)

    shown = on_a_terminal(run, columns=100)
    assert shown == ["What memory holds: nothing that shares a word with the question.",
                     f"I don't know: I found nothing about this in your memory of {SPACE}."]


# -- what memory holds, shown before the answer ----------------------------------------------

EVIDENCE = [EvidenceInfo(n=1, kind="transcript", title="Orion planning", date=1_772_445_600.0,
                         speaker="Tom", start=20.0,
                         text="The Orion server budget is 48,000 euros for this year."),
            EvidenceInfo(n=2, kind="assertion", title="Orion planning", date=1_772_445_600.0,
                         text="Orion runs on rented servers", item_kind="decision",
                         chosen="rented servers", alternatives=["own hardware"],
                         reasoning="cheaper this year")]
EVIDENCE_LINES = [
    "What memory holds:",
    "  [1] Orion planning · 2026-03-02 · Tom at 00:20: “The Orion server budget is 48,000 "
    "euros for this year.”",
    "  [2] decision · Orion planning · 2026-03-02: Orion runs on rented servers (chosen: rented "
    "servers; over: own hardware; why: cheaper this year)"]


def test_the_evidence_is_written_at_once_before_the_answer_in_a_pipe() -> None:
    out = io.StringIO()
    view = AnswerView(out)
    view.evidence(EVIDENCE)
    assert out.getvalue().splitlines() == [*EVIDENCE_LINES, ""]  # before any token
    show(view, STREAMED, CHECKED)
    assert out.getvalue().splitlines() == [*EVIDENCE_LINES, "", CHECKED]


def test_on_a_terminal_the_evidence_stays_above_the_answer_replaced_in_place() -> None:
    def write(out: IO[str]) -> None:
        view = AnswerView(out, width=200)
        view.evidence(EVIDENCE)
        show(view, STREAMED, CHECKED)

    assert on_a_terminal(write, columns=200) == [*EVIDENCE_LINES, CHECKED]


@pytest.fixture
def daemon_with_model(short_home: Path,
                      installed_model: Callable[[str], Path]) -> Iterator[DaemonProcess]:
    installed_model("qwen2.5-coder-0.5b")  # fails, never skips, when it is missing
    installed_model("all-minilm-l6-v2")
    started = start_daemon(short_home)
    with Client(timeout=60) as client:
        import_kept_sessions(client)
    yield started
    started.stop()


ORION = "Orion planning · 2026-03-03 · Tom at 00:20: “The Orion server budget is 48,000 euros " \
        "for this year.”"


def test_braincue_ask_shows_what_memory_holds_before_the_real_models_answer(
    daemon_with_model: DaemonProcess,
) -> None:
    question = ["ask", "What is the Orion server budget?", "--space", SPACE]
    piped = braincue(*question)
    assert piped.returncode == 0, piped.stderr
    block, answer = piped.stdout.split("\n\n", 1)
    lines = block.splitlines()
    assert lines[0] == "What memory holds:"
    (orion,) = [line for line in lines if line.endswith(ORION)]
    n = orion.split("]")[0].strip(" [")
    # the answer, after it, keeps what its cited source says
    first = answer.splitlines()[0]
    assert "48,000" in first and f"[{n}]" in first, piped.stdout

    as_json = json.loads(braincue(*question, "--json").stdout)
    assert any(e["text"] == "The Orion server budget is 48,000 euros for this year."
               and e["speaker"] == "Tom" and e["n"] == int(n) for e in as_json["evidence"])

    def run(out: IO[str]) -> None:
        subprocess.run([str(BRAINCUE), *question], stdout=out, stderr=subprocess.DEVNULL,
                       timeout=300, check=True)

    shown = on_a_terminal(run, columns=200)
    assert shown[:len(lines)] == [line.rstrip() for line in lines]
    assert "48,000" in shown[len(lines)]

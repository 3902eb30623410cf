"""A daemon killed in the middle of a keep finishes it at the next start.

A real daemon subprocess (tests/keep_crash_daemon.py: the daemon with scripted models) on a real
database file: `braincue keep` starts a keep, the model signals that it is working (a file the
daemon writes at its first model call), the daemon gets SIGKILL, and the next daemon writes the
archive and the assertions without anybody asking again.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner
from keep_crash_daemon import STARTED
from test_persistence_e2e import ATLAS

from clients.shell import cli
from daemon.ipc.testing import PROJECT_ROOT, DaemonProcess, daemon_env, start_daemon

HELPER = Path(__file__).with_name("keep_crash_daemon.py")


def scripted_daemon(short_home: Path, mode: str) -> DaemonProcess:
    return start_daemon(short_home, command=[sys.executable, str(HELPER), mode])


def ok(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=True)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def within(seconds: float, check: Callable[[], bool], what: str) -> None:
    """Wait for ``check`` to hold, failing after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.05)


def shown(session_id: int) -> dict[str, object]:
    result: dict[str, object] = json.loads(ok("show", str(session_id), "--json"))
    return result


def test_a_keep_killed_midway_is_finished_by_the_next_daemon(short_home: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "atlas.json"
    transcript.write_text(json.dumps({
        "title": "Atlas sync", "started_at": "2026-07-28T14:05:00+02:00",
        "turns": [{"speaker": s, "text": t, "t": 5.0 * i} for i, (s, t) in enumerate(ATLAS)],
    }))
    first = scripted_daemon(short_home, "hang")
    keeping: subprocess.Popen[bytes] | None = None
    try:
        ok("spaces", "add", "Atlas")
        session_id = int(ok("import-transcript", str(transcript), "--space", "Atlas")
                         .split()[2].rstrip(":"))
        keeping = subprocess.Popen(
            [sys.executable, "-c", "from clients.shell import main; main()", "keep",
             str(session_id)],
            env=daemon_env(short_home), cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        within(30, (short_home / STARTED).exists, "the keep reached the model")
        assert "kept, archive running" in ok("sessions")
        assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    finally:
        first.stop(signal.SIGKILL)
        if keeping is not None:
            keeping.kill()
            keeping.wait(10)

    second = scripted_daemon(short_home, "answer")
    try:
        within(30, lambda: shown(session_id)["session"]["keep_status"] == "done",  # type: ignore[index]
               "the interrupted keep was finished")
        after = shown(session_id)
        assert isinstance(after["archive"], str) and "Topic: Atlas launch" in after["archive"]
        kinds = sorted(a["kind"] for a in after["assertions"])  # type: ignore[attr-defined]
        assert kinds == ["commitment", "decision"]  # the preference: memory is off
        assert f"finishing the keep of session {session_id}, interrupted when running" \
            in second.log()
        assert "kept, archive" not in ok("sessions")  # nothing unfinished is listed any more
    finally:
        assert second.stop() == 0, second.log()

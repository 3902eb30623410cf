"""`braincue status | settings | follow` against a daemon subprocess, and the shell's exit codes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from storekit import TRANSCRIPT

from clients.cli.status import event_lines, status_lines
from clients.shell import cli
from daemon.errors import ConfigError
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    ImportTranscript,
    LiveStatus,
    ModelProcessInfo,
    SessionEnded,
    SessionStarted,
    SourceStatus,
    Start,
    StatusEvent,
    StatusReply,
    Stop,
    TurnEvent,
)
from daemon.ipc.testing import PROJECT_ROOT, DaemonProcess, start_daemon

SHELL = [sys.executable, "-c", "from clients.shell import main; main()"]


@pytest.fixture
def daemon(bare_home: Path) -> Iterator[DaemonProcess]:
    process = start_daemon(bare_home)
    yield process
    process.stop(signal.SIGKILL)


def ok(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def test_status(daemon: DaemonProcess, bare_home: Path) -> None:
    lines = ok("status").stdout.splitlines()
    assert lines[0].startswith("BrainCue daemon ")
    assert f"(protocol 1), pid {daemon.pid}, up " in lines[0]
    assert lines[1:-1] == [
        "profile: default",
        "capture: off",
        "models loaded: none",
        "language model: none installed",
        f"  no llm model is installed in {bare_home / 'no-models'} — run `braincue models "
        "install` (or install one of: qwen2.5-1.5b-instruct, qwen2.5-coder-1.5b, "
        "qwen2.5-coder-0.5b, smollm2-135m)",
        "holds: 0 spaces, 0 sessions, 0 turns, 0 chunks, 0 documents, 0 assertions, 0 vectors",
    ]
    # no model process runs: the daemon's memory is all there is
    assert re.fullmatch(r"memory: ([\d,]+) MB resident \(daemon \1 MB\)", lines[-1]), lines[-1]
    reply = json.loads(ok("status", "--json").stdout)
    assert (reply["type"], reply["pid"], reply["counts"]["sessions"]) == (
        "status_reply", daemon.pid, 0)
    assert set(reply["live"]["sources"]) == {"mic", "loopback"}


def test_status_lines_show_what_capture_does() -> None:
    live = LiveStatus(sources={"mic": SourceStatus(state="capturing", device="Mic"),
                               "loopback": SourceStatus(state="no audio", detail="no server")},
                      utterances_queued=3, asr_lag_s=4.25, dropped_blocks=2, session_id=7)
    reply = StatusReply(profile="work", version="1.0", protocol=1, pid=5, uptime_s=3725,
                        models_loaded=["embed:minilm", "llm:qwen"],
                        capture="mic capturing, loopback no audio",
                        counts={"sessions": 1, "turns": 12, "memories": 2}, ipc={}, live=live,
                        model_processes=[ModelProcessInfo(
                            role="llm", priority="foreground", model_id="qwen", pid=6,
                            rss_bytes=560 << 20)], rss_bytes=420 << 20)
    assert status_lines(reply) == [
        "BrainCue daemon 1.0 (protocol 1), pid 5, up 1 h 02 min",
        "profile: work",
        "capture: mic capturing, loopback no audio (loopback: no server; live session 7; "
        "3 utterances queued, 4.2 s behind; 2 audio blocks dropped)",
        "models loaded: embed:minilm, llm:qwen",
        "holds: 1 session, 12 turns, 2 memories",
        "model processes: llm (foreground) pid 6",
        "memory: 980 MB resident (daemon 420 MB, llm foreground 560 MB)",
    ]


def test_settings(daemon: DaemonProcess) -> None:
    table = ok("settings", "get").stdout.splitlines()
    assert table[0].split() == ["SETTING", "VALUE"]
    assert ["search_k", "5"] in [line.split() for line in table]
    assert ["llm_model", '""'] in [line.split() for line in table]
    assert ["voice_model", '""'] in [line.split() for line in table]  # the best installed
    assert ok("settings", "get", "auto_start").stdout == "true\n"
    assert ok("settings", "set", "search_k", "8").stdout == "search_k = 8\n"
    assert ok("settings", "set", "llm_model", "qwen2.5-coder-0.5b").stdout == \
        "llm_model = qwen2.5-coder-0.5b\n"
    assert ok("settings", "set", "embed_batch", "16").stdout == (
        "embed_batch = 16\n(takes effect when the daemon restarts)\n"
    )
    assert ok("settings", "set", "voice_model", "resemblyzer").stdout == (
        "voice_model = resemblyzer\n(takes effect when the daemon restarts)\n"
    )
    assert json.loads(ok("settings", "get", "search_k", "--json").stdout) == {"search_k": 8}
    refused = CliRunner().invoke(cli, ["settings", "set", "search_k", "many"])
    assert isinstance(refused.exception, ConfigError)
    unknown = CliRunner().invoke(cli, ["settings", "get", "nope"])
    assert isinstance(unknown.exception, ConfigError)
    assert "unknown setting 'nope'" in str(unknown.exception)


def test_follow_prints_events_until_the_daemon_stops(bare_home: Path, daemon: DaemonProcess,
                                                     tmp_path: Path) -> None:
    follow = subprocess.Popen([*SHELL, "follow"], cwd=PROJECT_ROOT, env=os.environ.copy(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert follow.stderr is not None and follow.stdout is not None
        # printed once the daemon has confirmed the subscription
        assert follow.stderr.readline() == "following profile 'default' (Ctrl+C to stop)\n"
        with Client(timeout=30) as client:
            client.request(ImportTranscript(content=json.dumps(TRANSCRIPT).encode()))
            client.request(Start(title="chat"))
            client.request(Stop())
        assert [follow.stdout.readline() for _ in range(5)] == [
            "session 1 ended after 7 s: Friday works, the database migration is done.\n",
            "  Keep this conversation? (session 1)\n",
            "session 2 started (meeting, no Space): chat\n",
            "session 2 ended after 0 s: nothing was said\n",
            "  Keep this conversation? (session 2)\n",
        ]
        assert daemon.stop(signal.SIGTERM) == 0
        follow.wait(30)
        assert follow.stdout.read() == "status: capture off: the daemon is stopping\n"
        assert follow.returncode == 1
        assert follow.stderr.read().splitlines()[-1] == (
            "error: the BrainCue daemon is not running for profile 'default' — start it with "
            "`braincued` (or `braincue service install`)")
    finally:
        follow.kill()
        follow.wait()


def test_event_lines() -> None:
    assert event_lines(TurnEvent(session_id=3, turn_id=9, speaker="them", source="loopback",
                                 start=3725.5, end=3727.0, text="Can you hear me?")) == [
        "session 3 [1:02:05] them: Can you hear me?"]
    assert event_lines(SessionStarted(session_id=3, started_at=0.0, space="Atlas",
                                      activity="project", title="")) == [
        "session 3 started (project, Space 'Atlas')"]
    assert event_lines(SessionEnded(session_id=3, duration_s=720, gist="release plan",
                                    space="Atlas")) == [
        "session 3 in Space 'Atlas' ended after 12 min: release plan",
        "  Keep this conversation? (session 3)"]
    assert event_lines(StatusEvent(capture="off", message="the daemon is stopping")) == [
        "status: capture off: the daemon is stopping"]


def test_follow_json_prints_one_event_per_line(daemon: DaemonProcess) -> None:
    follow = subprocess.Popen([*SHELL, "follow", "--json"], cwd=PROJECT_ROOT,
                              env=os.environ.copy(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert follow.stderr is not None and follow.stdout is not None
        follow.stderr.readline()
        with Client(timeout=30) as client:
            client.request(Start())
        event = json.loads(follow.stdout.readline())
        assert (event["type"], event["session_id"], event["activity"]) == (
            "session_started", 1, "meeting")
    finally:
        follow.kill()
        follow.wait()


def test_the_shell_exits_1_with_one_line_when_no_daemon_runs(bare_home: Path) -> None:
    result = subprocess.run([*SHELL, "sessions"], cwd=PROJECT_ROOT, env=os.environ.copy(),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        "error: the BrainCue daemon is not running for profile 'default' — start it with "
        "`braincued` (or `braincue service install`)\n")

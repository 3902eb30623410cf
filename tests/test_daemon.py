"""The daemon end to end: in-process through serve(), and as `python -m daemon` subprocesses."""

from __future__ import annotations

import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import trio
import zmq
from daemonkit import run_clients, running_daemon

from daemon.config import Paths, Settings, load_settings, save_settings, set_setting
from daemon.errors import ConfigError, DaemonNotRunning
from daemon.ipc import protocol
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    Error,
    Ping,
    Pong,
    SettingsGet,
    SettingsSet,
    Status,
    StatusReply,
)
from daemon.ipc.runtime import RuntimeFiles, endpoint
from daemon.ipc.testing import (
    DaemonProcess,
    daemon_command,
    daemon_env,
    start_daemon,
)


@pytest.fixture
def files(short_home: Path) -> RuntimeFiles:
    return RuntimeFiles.of(Paths.resolve("default"))


@pytest.fixture
def subprocess_daemon(short_home: Path) -> Iterator[DaemonProcess]:
    process = start_daemon(short_home)
    yield process
    process.stop(signal.SIGKILL)


# ---------------------------------------------------------------------------------------------
# in-process


async def test_serve_is_ready_once_its_sockets_answer(files: RuntimeFiles) -> None:
    async with running_daemon():
        assert files.requests.exists() and files.events.exists()
        assert type(await trio.to_thread.run_sync(Client().request, Ping())) is Pong
    assert not files.requests.exists() and not files.lock.exists()


async def test_status_reports_the_daemon(short_home: Path) -> None:
    before = time.time()
    async with running_daemon() as daemon:

        async def count_sessions() -> dict[str, int]:
            return {"sessions": 3}

        daemon.counters.append(count_sessions)
        status = await trio.to_thread.run_sync(Client().request, Status())
    assert (status.profile, status.protocol, status.capture) == ("default", 1, "off")
    assert status.pid == os.getpid()  # served in this process
    assert status.counts == {"spaces": 0, "sessions": 3, "turns": 0, "chunks": 0,
                             "documents": 0, "assertions": 0, "vectors": 0}
    assert 0 <= status.uptime_s <= time.time() - before and status.ipc["received"] == 1


async def test_settings_are_read_and_changed_over_ipc(short_home: Path) -> None:
    async with running_daemon() as daemon:
        client = Client()

        def exchange() -> None:
            everything = client.request(SettingsGet()).settings
            assert everything["search_k"] == 5 and "llm_model" in everything
            assert client.request(SettingsSet(key="search_k", value="8")).settings == {
                "search_k": 8}
            assert client.request(SettingsGet(key="search_k")).settings == {"search_k": 8}
            with pytest.raises(ConfigError, match="invalid value for search_k"):
                client.request(SettingsSet(key="search_k", value="many"))
            with pytest.raises(ConfigError, match="unknown setting 'nope' — one of: "):
                client.request(SettingsGet(key="nope"))

        await trio.to_thread.run_sync(exchange)
        assert daemon.settings.search_k == 8
    assert load_settings(Paths.resolve("default")).search_k == 8


def test_the_language_models_old_idle_setting_is_read_as_the_one_for_both_models(
    short_home: Path,
) -> None:
    paths = Paths.resolve("default")
    paths.config_dir.mkdir(parents=True)
    paths.config_file.write_text("llm_idle_unload_s = 120\n")
    settings = load_settings(paths)
    assert settings.idle_unload_min == 2.0 and settings.idle_unload_s == 120.0
    save_settings(paths, settings)  # written under its new name
    assert paths.config_file.read_text() == "idle_unload_min = 2.0\n"
    paths.config_file.write_text("llm_idle_unload_s = 120\nidle_unload_min = 7\n")
    assert load_settings(paths).idle_unload_min == 7  # the new name wins
    paths.config_file.write_text('llm_idle_unload_s = "soon"\n')
    with pytest.raises(ConfigError, match="idle_unload_min"):
        load_settings(paths)
    with pytest.raises(ConfigError, match="'llm_idle_unload_s' is now 'idle_unload_min'"):
        set_setting(Settings(), "llm_idle_unload_s", "60")
    assert Settings().idle_unload_min == 10.0


async def test_twenty_concurrent_clients(short_home: Path) -> None:
    def session(n: int) -> None:
        with Client(timeout=30) as client:
            for i in range(25):
                assert client.request(Ping(id=f"{n}-{i}")).id == f"{n}-{i}"
            assert client.request(Status()).profile == "default"
            assert client.request(SettingsGet(key="search_k")).settings == {"search_k": 5}

    async with running_daemon() as daemon:
        failures = await run_clients(20, session)
        assert daemon.ipc is not None
        stats = daemon.ipc.stats
    assert failures == []
    assert (stats.received, stats.replied, stats.errors) == (20 * 27, 20 * 27, 0)


# ---------------------------------------------------------------------------------------------
# subprocess


def test_sigterm_stops_the_daemon_cleanly(short_home: Path, files: RuntimeFiles) -> None:
    daemon = start_daemon(short_home)
    try:
        assert Client(timeout=10).request(Status()).pid == daemon.pid
    finally:
        code = daemon.stop(signal.SIGTERM)
    assert code == 0, daemon.log()
    assert not files.requests.exists()
    assert not files.events.exists()
    assert not files.lock.exists()
    assert "Traceback" not in daemon.log()


def test_a_second_daemon_for_the_profile_exits_with_a_clear_message(
    short_home: Path, subprocess_daemon: DaemonProcess
) -> None:
    second = subprocess.run(daemon_command("default"), env=daemon_env(short_home),
                            capture_output=True, text=True, timeout=60)
    assert second.returncode == 1
    assert second.stderr.strip().splitlines()[-1] == (
        f"braincued: error: a BrainCue daemon (pid {subprocess_daemon.pid}) is already running "
        f"for profile 'default' — stop it first (kill {subprocess_daemon.pid}) or use another "
        "--profile"
    )
    assert type(Client(timeout=10).request(Ping())) is Pong
    # another profile is another daemon
    other = start_daemon(short_home, profile="work")
    try:
        assert Client("work", timeout=10).request(Status()).pid == other.pid
    finally:
        assert other.stop() == 0


def test_a_killed_daemons_lock_is_taken_over(short_home: Path, files: RuntimeFiles) -> None:
    killed = start_daemon(short_home)
    assert killed.stop(signal.SIGKILL) == -signal.SIGKILL
    assert files.requests.exists() and files.lock.exists()  # left behind
    with pytest.raises(DaemonNotRunning):
        Client(timeout=10).request(Ping())
    successor = start_daemon(short_home)
    try:
        assert files.lock.read_text().strip() == str(successor.pid)
        assert Client(timeout=10).request(Status()).pid == successor.pid
    finally:
        assert successor.stop() == 0


# ---------------------------------------------------------------------------------------------
# robustness


class Fuzzer:
    """Messages a confused or hostile peer might send, each with whether it gets a reply."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        valid = [protocol.encode(m) for m in (
            Ping(id="p"), Status(id="s"), SettingsGet(key="search_k", id="g"),
            SettingsSet(key="nope", value="1", id="x"))]
        self.valid = valid

    def message(self) -> tuple[list[bytes], bool]:
        rng = self.rng
        frame = rng.choice(self.valid)
        kind = rng.randrange(12)
        if kind == 0:  # truncated msgpack
            return [b"", frame[: rng.randrange(len(frame))]], True
        if kind == 1:  # random bytes
            return [b"", rng.randbytes(rng.randrange(200))], True
        if kind == 2:  # wrong field types
            fields = {"type": "settings_set", "v": 1, "id": "w", "key": rng.choice([1, None, []]),
                      "value": rng.choice([2.5, True, {"a": 1}])}
            return [b"", msgspec.msgpack.encode(fields)], True
        if kind == 3:  # huge strings
            size = rng.randrange(10_000, 300_000)
            fields = {"type": "settings_get", "v": 1, "id": "h" * size, "key": "k" * size}
            return [b"", msgspec.msgpack.encode(fields)], True
        if kind == 4:  # extra frames
            return [b"", frame, *[rng.randbytes(5)] * rng.randrange(1, 4)], True
        if kind == 5:  # empty frames
            return [b""] * rng.randrange(1, 4), True
        if kind == 6:  # no envelope: nobody to answer
            return rng.choice([[frame], [b"x", frame], [frame, b"", frame]]), False
        if kind == 7:  # unknown type, other version
            fields = {"type": rng.choice(["nope", "pong", 7]), "v": rng.choice([0, 1, 2, "1"]),
                      "id": "u"}
            return [b"", msgspec.msgpack.encode(fields)], True
        if kind == 8:  # flipped bytes
            damaged = bytearray(frame)
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            return [b"", bytes(damaged)], True
        if kind == 9 and rng.random() < 0.02:  # over the size limit
            return [b"", b"\x00" * (protocol.MAX_FRAME_BYTES + 1)], True
        if kind == 10:  # deep nesting
            return [b"", b"\x81\xa2id" + b"\x91" * rng.randrange(1000, 200_000) + b"\x01"], True
        return [b"", frame], True


def fuzz(dealer: zmq.Socket[bytes], fuzzer: Fuzzer, count: int, client: Client) -> tuple[int, int]:
    """Send ``count`` fuzzed messages in batches, check every reply, ping in between.

    Returns (replies expected and received, messages that must be dropped).
    """
    replied = dropped = 0
    for _ in range(count // 100):
        expected = 0
        for _ in range(100):
            frames, answered = fuzzer.message()
            dealer.send_multipart(frames)
            expected += answered
            dropped += not answered
        for _ in range(expected):
            delimiter, payload = dealer.recv_multipart()  # RCVTIMEO: never hangs
            reply = protocol.decode_reply(payload)
            assert delimiter == b"" and isinstance(reply, Error | Pong | StatusReply
                                                   | protocol.SettingsReply)
            assert len(payload) < 4096
        replied += expected
        assert type(client.request(Ping())) is Pong
    return replied, dropped


def test_ten_thousand_fuzzed_messages(short_home: Path, subprocess_daemon: DaemonProcess) -> None:
    files = RuntimeFiles.of(Paths.resolve("default"))
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    dealer = context.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.setsockopt(zmq.RCVTIMEO, 30_000)
    dealer.connect(endpoint(files.requests))
    client = Client(timeout=30)
    try:
        fuzz(dealer, Fuzzer(seed=1), 2_000, client)  # warm up: allocator pools, caches
        rss_before = subprocess_daemon.rss_bytes()
        before = client.request(Status()).ipc
        replied, dropped = fuzz(dealer, Fuzzer(seed=2), 10_000, client)
        after = client.request(Status()).ipc
        rss_after = subprocess_daemon.rss_bytes()
    finally:
        client.close()
        context.destroy(linger=0)
    pings = 10_000 // 100
    # each fuzzed message was read, and answered or dropped: the Status requests count
    # themselves when received, their replies after
    assert after["received"] - before["received"] == 10_000 + pings + 1
    assert after["replied"] - before["replied"] == replied + pings + 1
    assert after["dropped"] - before["dropped"] == dropped
    assert rss_after - rss_before < 32 * 1024 * 1024, (rss_before, rss_after)
    assert subprocess_daemon.process.poll() is None


# ---------------------------------------------------------------------------------------------
# security

OTHER_USER_CLIENT = textwrap.dedent("""
    import errno, socket, sys
    import zmq
    from daemon.errors import IpcError
    from daemon.ipc import protocol
    from daemon.ipc.client import Client

    path = sys.argv[1]
    raw = socket.socket(socket.AF_UNIX)
    try:
        raw.connect(path)
        print("socket: connected")
    except OSError as e:
        print("socket:", errno.errorcode[e.errno])
    dealer = zmq.Context().socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.setsockopt(zmq.RCVTIMEO, 1000)
    dealer.connect("ipc://" + path)
    dealer.send_multipart([b"", protocol.encode(protocol.Ping(id="x"))])
    try:
        dealer.recv_multipart()
        print("zmq: answered")
    except zmq.Again:
        print("zmq: no answer")
    try:
        Client(timeout=1).request(protocol.Ping())
        print("client: answered")
    except IpcError as e:
        print("client:", type(e).__name__, e)
""")


def run_as_nobody(short_home: Path, files: RuntimeFiles) -> list[str]:
    result = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
         sys.executable, "-c", OTHER_USER_CLIENT, str(files.requests)],
        env=daemon_env(short_home), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


@pytest.mark.skipif(shutil.which("setpriv") is None or os.geteuid() != 0,
                    reason="runs a client as `nobody` through setpriv, which needs root")
def test_another_user_cannot_connect(short_home: Path, subprocess_daemon: DaemonProcess) -> None:
    files = RuntimeFiles.of(Paths.resolve("default"))
    assert stat.S_IMODE(files.directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(files.requests.stat().st_mode) == 0o600
    assert stat.S_IMODE(files.events.stat().st_mode) == 0o600
    blocked_by_directory = run_as_nobody(short_home, files)
    # Even with every directory open to others, the sockets themselves refuse other users.
    for directory in (short_home, files.directory.parent, files.directory):
        directory.chmod(0o755)
    blocked_by_socket = run_as_nobody(short_home, files)
    for lines in (blocked_by_directory, blocked_by_socket):
        assert lines[:2] == ["socket: EACCES", "zmq: no answer"]
        assert lines[2].startswith("client: IpcError permission denied on the daemon's socket")
    assert type(Client(timeout=10).request(Ping())) is Pong

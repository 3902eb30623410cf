"""What the daemon costs while nobody speaks: no call, the audio server up, both devices silent.

    PYTHONPATH=$PWD nice -n 10 .venv/bin/python -m bench.idle [--minutes 5]
        [--models whisper-tiny.en] [--after-use [--asks 2]] [--set NAME=VALUE ...]
        [--checkout DIR]

A private PulseAudio server with null sinks (nothing is played into them: both devices are
silent), a daemon capturing both in a fresh profile. Over ``--minutes`` of wall time the daemon
and every process it started are sampled each second: their CPU time (utime + stime from
``/proc/PID/stat``, so the figure is what they consumed, however loaded the machine), as a
percentage of one core, and their summed resident memory (mean and peak). The load average is
printed before and after, and the CPU time of each of the daemon's threads (its own and its
libraries' threads, by the kernel's thread id and name).

``--after-use`` first makes the daemon work as after a day's use: a few conversations
imported, a call (one sentence into each device) and an answer, so that the speech model's
and the language model's processes run; the window then starts once both have been unloaded
(set ``--set idle_unload_min=0.2`` or so to shorten the wait). After the window, ``--asks N``
rounds of: the first answer after the models were unloaded (its first token) against another
question asked at once after it (warm: the model loaded, the question's prompt not read yet),
then a call's first words after the unload.

``--checkout DIR`` runs the daemon from another checkout (the code before a change) with this
benchmark.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import machine
from bench.live import cpu_seconds, process_name
from daemon.audio.testing import ME_SINK, THEM_SINK, PulseServer, speak
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    TOPIC_TURNS,
    AddSpace,
    AnswerToken,
    Ask,
    ImportTranscript,
    Remember,
    Start,
    Status,
    StatusReply,
    Stop,
    TurnEvent,
    answer_topic,
)
from daemon.ipc.testing import DaemonProcess, short_home, start_daemon
from daemon.resident import children, resident

MB = 1 << 20
SPACE = "Work"
CONVERSATIONS = [
    ("Budget review", [
        ("Priya", "The new website is finished and the launch moves to next week."),
        ("me", "Then Maria tests the payment page tomorrow."),
        ("Priya", "We agreed to keep the budget at forty thousand."),
    ]),
    ("Office move", [
        ("Lukas", "The new office is ready in the first week of June."),
        ("me", "The servers move first, the network team needs a few days."),
    ]),
]
# the first answer after the unload, then another question (not the same: its prompt would be
# read already) with the model loaded
QUESTIONS = ("When does the launch happen?", "When is the new office ready?")
SAID = [(ME_SINK, "en-us", "Good morning, thanks for joining the call about the budget."),
        (THEM_SINK, "en-gb+f3", "Happy to help. We finished the new website yesterday.")]


@dataclass
class Window:
    """The CPU and memory of the daemon and its children over a stretch of wall time."""

    wall_s: float = 0.0
    cpu_s: dict[str, float] = field(default_factory=dict)  # by process name
    rss_mean_mb: float = 0.0
    rss_peak_mb: float = 0.0
    threads: list[tuple[float, str]] = field(default_factory=list)  # daemon's: cpu s, name
    load: tuple[float, float] = (0.0, 0.0)

    @property
    def percent(self) -> float:
        return 100 * sum(self.cpu_s.values()) / self.wall_s if self.wall_s else 0.0


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of each thread of ``pid``, by ``tid name``."""
    found = {}
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        found[f"{stat.parent.name} {name}"] = (
            (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
    return found


def measure(daemon_pid: int, seconds: float) -> Window:
    """Sample the daemon and its children every second for ``seconds``."""
    load_before = os.getloadavg()[0]
    first: dict[int, float] = {}
    last: dict[int, tuple[str, float]] = {}
    rss: list[int] = []
    threads_before = thread_cpu(daemon_pid)
    began = time.monotonic()
    while True:
        total = 0
        for pid in [daemon_pid, *children(daemon_pid)]:
            try:
                cpu = cpu_seconds(pid)
            except (OSError, IndexError):
                continue  # ended meanwhile
            first.setdefault(pid, cpu)
            last[pid] = (process_name(pid, daemon_pid), cpu)
            total += (memory.rss if (memory := resident(pid)) is not None else 0)
        rss.append(total)
        if time.monotonic() - began >= seconds:
            break
        time.sleep(1.0)
    wall = time.monotonic() - began
    by_name: dict[str, float] = {}
    for pid, (name, cpu) in last.items():
        by_name[name] = by_name.get(name, 0.0) + cpu - first[pid]
    threads_after = thread_cpu(daemon_pid)
    threads = sorted(((cpu - threads_before.get(tid, 0.0), tid)
                      for tid, cpu in threads_after.items()), reverse=True)
    return Window(wall_s=wall, cpu_s=by_name, rss_mean_mb=sum(rss) / len(rss) / MB,
                  rss_peak_mb=max(rss) / MB, threads=threads,
                  load=(load_before, os.getloadavg()[0]))


def first_token(question: str) -> float:
    """Seconds from asking ``question`` (as the hotkey box asks) to the answer's first token."""
    request = Ask(id=uuid.uuid4().hex, question=question, space=SPACE)
    first: list[float] = []
    with Client(timeout=30) as client, client.subscribe([answer_topic(request.id)]) as events:
        began = time.perf_counter()
        done: list[object] = []
        asking = threading.Thread(
            target=lambda: done.append(Client(timeout=600).request(request, timeout=600)))
        asking.start()
        while asking.is_alive() and not first:
            event = events.receive(0.1)
            if isinstance(event, AnswerToken):
                first.append(time.perf_counter() - began)
        asking.join()
    return first[0] if first else float("nan")


def models_running(status: StatusReply) -> list[str]:
    return [f"{p.role} {p.priority}" for p in status.model_processes if p.pid is not None]


def wait_until_unloaded(client: Client, daemon_pid: int, timeout: float) -> float:
    """Wait until no model process runs (and each has exited); returns how long that took."""
    began = time.monotonic()
    while models_running(client.request(Status())) or children(daemon_pid):
        if time.monotonic() - began > timeout:
            raise RuntimeError(f"the model processes still run after {timeout:.0f} s")
        time.sleep(0.5)
    return time.monotonic() - began


class Turns:
    """The turns the daemon publishes, collected by a thread."""

    def __init__(self) -> None:
        self.seen: list[TurnEvent] = []
        self._stop = threading.Event()
        ready = threading.Event()

        def collect() -> None:
            with Client(timeout=30) as c, c.subscribe([TOPIC_TURNS]) as events:
                ready.set()
                while not self._stop.is_set():
                    event = events.receive(0.1)
                    if isinstance(event, TurnEvent):
                        self.seen.append(event)

        self._thread = threading.Thread(target=collect, daemon=True)
        self._thread.start()
        ready.wait(30)

    def wait(self, n: int, timeout: float) -> list[TurnEvent]:
        deadline = time.monotonic() + timeout
        while len(self.seen) < n and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.seen[:n]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)


def a_call(client: Client, pulse: PulseServer, wavs: list[Path]) -> list[str]:
    """One sentence into each device in a session; what was stored of each."""
    turns = Turns()
    try:
        client.request(Start(title="call"))
        for (sink, _, _), wav in zip(SAID, wavs, strict=True):
            pulse.play(sink, wav)
        heard = turns.wait(len(SAID), 120)
        client.request(Stop())
    finally:
        turns.close()
    return [t.text for t in heard]


def use(client: Client, pulse: PulseServer, wavs: list[Path]) -> None:
    """A day's use in small: conversations to ask about, a call, an answer."""
    import datetime as dt
    import json

    client.request(AddSpace(name=SPACE))
    for day, (title, turns) in enumerate(CONVERSATIONS):
        started = dt.datetime(2026, 3, 2, 10, tzinfo=dt.UTC) + dt.timedelta(days=day)
        content = json.dumps({
            "title": title, "started_at": started.isoformat(),
            "turns": [{"speaker": s, "text": t, "t": i * 10.0} for i, (s, t) in enumerate(turns)],
        }).encode()
        reply = client.request(ImportTranscript(content=content, space=SPACE), timeout=120)
        client.request(Remember(session_id=reply.session.id, answer="later"), timeout=120)
    a_call(client, pulse, wavs)
    first_token(QUESTIONS[0])


def run(args: argparse.Namespace, config_lines: list[str]) -> None:
    pulse = PulseServer()
    home = short_home()
    daemon: DaemonProcess | None = None
    try:
        pulse.start()
        (home / "config").mkdir()
        (home / "config" / "config.toml").write_text("\n".join(config_lines) + "\n")
        os.environ.update(BRAINCUE_HOME=str(home), BRAINCUE_CAPTURE="on",
                          XDG_RUNTIME_DIR=str(pulse.runtime_dir))
        daemon = start_daemon(home, root=args.checkout)
        client = Client(timeout=120)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            live = client.request(Status()).live
            if live is not None and all(s.state == "capturing" for s in live.sources.values()):
                break
            time.sleep(0.2)
        wavs = [speak(text, voice, home / f"said{i}.wav") for i, (_, voice, text) in
                enumerate(SAID)]
        if args.after_use:
            use(client, pulse, wavs)
            print(f"used: model processes {models_running(client.request(Status()))}; "
                  f"unloaded {wait_until_unloaded(client, daemon.pid, args.unload_wait):.0f} s "
                  "later", flush=True)
        window = measure(daemon.pid, args.minutes * 60)
        status = client.request(Status())
        report(window, status)
        for round_ in range(args.asks if args.after_use else 0):
            wait_until_unloaded(client, daemon.pid, args.unload_wait)
            cold = first_token(QUESTIONS[round_ % 2])
            warm = first_token(QUESTIONS[(round_ + 1) % 2])
            print(f"ask {round_ + 1}: first token after unload {cold:.2f} s, warm (another "
                  f"question) {warm:.2f} s, +{cold - warm:.2f} s ({machine()})", flush=True)
            wait_until_unloaded(client, daemon.pid, args.unload_wait)
            heard = a_call(client, pulse, wavs)
            print(f"call {round_ + 1} after unload: " + " | ".join(heard), flush=True)
    finally:
        if daemon is not None:
            daemon.stop(signal.SIGTERM)
        pulse.close()
        shutil.rmtree(home, ignore_errors=True)


def report(window: Window, status: StatusReply) -> None:
    print(f"idle {window.wall_s / 60:.1f} min, load average {window.load[0]:.2f} -> "
          f"{window.load[1]:.2f}")
    print(f"  CPU, daemon and children: {window.percent:.2f}% of one core "
          f"({sum(window.cpu_s.values()):.1f} s)")
    for name, cpu in sorted(window.cpu_s.items(), key=lambda item: -item[1]):
        print(f"    {name}: {cpu:.2f} s")
    print(f"  resident, daemon and children: mean {window.rss_mean_mb:.0f} MB, peak "
          f"{window.rss_peak_mb:.0f} MB")
    print("  the daemon's busiest threads (CPU s, thread id and name): " + ", ".join(
        f"{cpu:.2f} {tid}" for cpu, tid in window.threads[:6]))
    print(f"  models loaded: {', '.join(status.models_loaded) or 'none'}; model processes "
          f"running: {', '.join(models_running(status)) or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--models", default="whisper-tiny.en",
                        help="the speech model (asr_model)")
    parser.add_argument("--llm", default="qwen2.5-coder-0.5b", help="the language model")
    parser.add_argument("--after-use", action="store_true",
                        help="measure after a call and an answer, once their models unloaded")
    parser.add_argument("--asks", type=int, default=1,
                        help="with --after-use: rounds of a first answer and a call after the "
                             "unload")
    parser.add_argument("--unload-wait", type=float, default=900.0,
                        help="seconds to wait at most for the models to be unloaded")
    parser.add_argument("--set", dest="settings", action="append", default=[],
                        metavar="NAME=VALUE", help="a config.toml line for the daemon")
    parser.add_argument("--checkout", type=Path, default=None,
                        help="run the daemon from this checkout (the code before a change)")
    args = parser.parse_args()
    lines = [f'asr_model = "{args.models}"', f'llm_model = "{args.llm}"',
             *(f"{n.strip()} = {v.strip()}" for n, v in (s.split("=", 1)
                                                          for s in args.settings))]
    print(f"BrainCue idle ({machine()}){' from ' + str(args.checkout) if args.checkout else ''}")
    with tempfile.TemporaryDirectory():
        run(args, lines)
    print(machine())


if __name__ == "__main__":
    main()

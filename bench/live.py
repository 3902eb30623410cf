"""Live capture figures: a two-voice dialogue played through virtual devices into a real daemon.

    .venv/bin/python -m bench.live [--models whisper-tiny.en,whisper-base] [--minutes 3]
                                   [--threads N] [--with-keep TRANSCRIPT.json [--keep-beside]]

For each speech model: a private PulseAudio server (null sinks, as in the end-to-end test), a
daemon subprocess capturing both sources, a session started over IPC, then about ``--minutes``
of dialogue (espeak-ng en-us as "me" into the microphone sink, en-gb+f3 as "them" into the
default output, 0.8 s between turns) played in real time, as a call would be. Printed:

- latency from the end of each utterance (when its playback finished) to its turn being stored
  (the `turn` event, published right after the store commits), p50 and p95;
- the ASR real-time factor (transcription time / audio transcribed, from `status`);
- the daemon's CPU use over the whole run (% of one core) and its peak RSS;
- dropped blocks, and the word error rate of everything heard against the script.

``--with-keep FILE`` runs each model twice, side by side: as above, then with a keep of the
transcript FILE (e.g. ../shared/bench/qmsum-dev/ES2006/ES2006a.json) running in the same
daemon — imported into a Space, kept, and the call started once the keep's model is working —
and prints both latencies, the keep's state at the end of the call and the daemon's threads by
CPU priority (the keep's llama.cpp threads run at nice 19). By default a keep waits between its
model calls while a session is live; ``--keep-beside`` adds a run with that turned off
(``keep_pauses_while_live = false``): the keep's model runs through the whole call and only its
priority keeps it out of the way.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.common import machine
from daemon.audio.testing import ME_SINK, THEM_SINK, PulseServer, speak
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    TOPIC_TURNS,
    AddSpace,
    ImportTranscript,
    ListSessions,
    Remember,
    Start,
    Status,
    Stop,
    TurnEvent,
)
from daemon.ipc.testing import DaemonProcess, short_home, start_daemon
from tests.wer import word_error_rate

PAUSE_S = 0.8
SCRIPT = [
    ("me", "Good morning, thanks for joining the call about the budget."),
    ("them", "Happy to help. We finished the new website yesterday."),
    ("me", "Great. Can we move the launch to next week?"),
    ("them", "Yes, but the payment page still needs more testing."),
    ("me", "I will ask Maria to test the payment page tomorrow."),
    ("them", "Perfect. Let us meet again on Friday morning."),
    ("me", "Before we finish, how is the hiring going for the support team?"),
    ("them", "We interviewed four people and two of them look very strong."),
    ("me", "Good. Please send me their notes by the end of the day."),
    ("them", "I will. Should we also talk about the office move?"),
    ("me", "Yes. The new office should be ready in the first week of June."),
    ("them", "That is good news. Do we need new desks for everyone?"),
    ("me", "Most people want to keep their old desks, so only a few."),
    ("them", "Then I will order six desks and ten chairs this week."),
    ("me", "Please check the price with the finance team first."),
    ("them", "Of course. What about the customer survey results?"),
    ("me", "People like the product, but they want faster delivery."),
    ("them", "We could open a second warehouse in the north."),
    ("me", "That is a big decision. Let us discuss it next month."),
    ("them", "Agreed. I will prepare a short report with the numbers."),
]


@dataclass
class Played:
    source: str
    text: str
    ended: float  # wall clock, when playback finished


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def wait_until(check: Callable[[], bool], timeout: float) -> None:
    """Poll ``check`` until it holds or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        time.sleep(0.1)


def threads_by_nice(pid: int) -> dict[int, int]:
    """How many of the process's threads run at each nice value (field 19 of their stat)."""
    counts: dict[int, int] = {}
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            nice = int(stat.read_text().rsplit(")", 1)[1].split()[16])
        except (OSError, IndexError, ValueError):
            continue  # the thread ended meanwhile
        counts[nice] = counts.get(nice, 0) + 1
    return dict(sorted(counts.items()))


class BackgroundKeep:
    """A keep of a transcript file running in the daemon while the call goes on."""

    def __init__(self, transcript: Path) -> None:
        self.transcript = transcript
        self.session_id = 0
        self.started = 0.0
        self.reply: object = None
        self._thread: threading.Thread | None = None

    def start(self, client: Client) -> None:
        """Import the transcript into a Space, keep it, and return once its model works."""
        client.request(AddSpace(name="Bench keep", activity="project"))
        imported = client.request(ImportTranscript(
            content=self.transcript.read_bytes(), filename=self.transcript.name,
            space="Bench keep"), timeout=600)
        self.session_id = imported.session.id

        def keep() -> None:
            with Client(timeout=3 * 3600) as own:
                try:
                    self.reply = own.request(Remember(session_id=self.session_id,
                                                      answer="keep"))
                except Exception as e:  # the daemon stopped first: reported as such
                    self.reply = e

        self.started = time.monotonic()
        self._thread = threading.Thread(target=keep, daemon=True)
        self._thread.start()
        wait_until(lambda: self.state(client).startswith("running"), 120)

    def state(self, client: Client) -> str:
        """The keep's status, with its reason when it has one (e.g. paused during a call)."""
        for session in client.request(ListSessions()).sessions:
            if session.id == self.session_id:
                reason = f" ({session.keep_reason})" if session.keep_reason else ""
                return (session.keep_status or "none") + reason
        return "missing"


def run(model: str, voices: list[Path], minutes: float, threads: int | None,
        keep: Path | None = None, keep_beside: bool = False) -> list[float]:
    """One run (with a keep of ``keep`` in the background when given); the latencies."""
    pulse = PulseServer()
    home = short_home()
    daemon: DaemonProcess | None = None
    background = None if keep is None else BackgroundKeep(keep)
    try:
        pulse.start()
        (home / "config").mkdir()
        config = f'asr_model = "{model}"\n' + (f"asr_threads = {threads}\n" if threads else "")
        if keep_beside:
            config += "keep_pauses_while_live = false\n"
        (home / "config" / "config.toml").write_text(config)
        os.environ.update(BRAINCUE_HOME=str(home), BRAINCUE_CAPTURE="on",
                          XDG_RUNTIME_DIR=str(pulse.runtime_dir))
        daemon = start_daemon(home)
        client = Client(timeout=120)

        def capturing() -> bool:
            live = client.request(Status()).live
            return live is not None and all(
                s.state == "capturing" for s in live.sources.values())

        wait_until(capturing, 30)
        turns: list[tuple[float, TurnEvent]] = []
        stop, subscribed = threading.Event(), threading.Event()

        def collect() -> None:
            with Client(timeout=30) as c, c.subscribe([TOPIC_TURNS]) as events:
                subscribed.set()
                while not stop.is_set():
                    event = events.receive(0.1)
                    if isinstance(event, TurnEvent):
                        turns.append((time.time(), event))

        collector = threading.Thread(target=collect, daemon=True)
        collector.start()
        subscribed.wait(30)
        if background is not None:
            background.start(client)
        started = client.request(Start(title=f"bench {model}"))
        cpu_before, wall_before = cpu_seconds(daemon.pid), time.monotonic()

        played: list[Played] = []
        deadline = time.monotonic() + minutes * 60
        i = 0
        while time.monotonic() < deadline:
            who, text = SCRIPT[i % len(SCRIPT)]
            pulse.play(ME_SINK if who == "me" else THEM_SINK, voices[i % len(SCRIPT)])
            played.append(Played("mic" if who == "me" else "loopback", text, time.time()))
            time.sleep(PAUSE_S)  # the dialogue's own pace, not a wait for the daemon
            i += 1

        def caught_up() -> bool:
            live = client.request(Status()).live
            return live is not None and live.utterances_queued == 0

        wait_until(caught_up, 300)
        status = client.request(Status())
        stopped = client.request(Stop())
        cpu = cpu_seconds(daemon.pid) - cpu_before
        wall = time.monotonic() - wall_before
        rss = peak_rss_mb(daemon.pid)
        priorities = threads_by_nice(daemon.pid)
        keep_state = "" if background is None else background.state(client)
        stop.set()
        collector.join(5)
        assert status.live is not None

        latencies = []
        unmatched = 0
        for p in played:
            candidates = [(abs(started.started_at + e.end - p.ended), received)
                          for received, e in turns if e.source == p.source
                          and abs(started.started_at + e.end - p.ended) < 2.5]
            if candidates:
                latencies.append(min(candidates)[1] - p.ended)
            else:
                unmatched += 1
        reference = " ".join(p.text for p in played)
        heard = " ".join(e.text for _, e in sorted(turns, key=lambda t: t[1].start))
        beside = ("" if background is None else
                  f"; with a keep of {keep.name if keep else ''} "
                  + ("running beside the call" if keep_beside else "pausing during the call"))
        print(f"\n{model} ({status.live.asr_model}{beside}; {len(played)} utterances played, "
              f"{stopped.turns} turns stored, {unmatched} utterances without a turn)")
        if latencies:
            print(f"  end of utterance -> turn stored   p50 {percentile(latencies, 0.5):5.2f} s"
                  f"   p95 {percentile(latencies, 0.95):5.2f} s"
                  f"   (mean {statistics.mean(latencies):.2f} s)")
        print(f"  ASR real-time factor              {status.live.asr_real_time_factor:.3f}")
        print(f"  daemon CPU                        {100 * cpu / wall:5.1f} % of one core over "
              f"{wall:.0f} s")
        print(f"  daemon peak RSS                   {rss:5.0f} MB")
        print(f"  dropped blocks                    {status.live.dropped_blocks}")
        print(f"  word error rate (all turns)       {word_error_rate(reference, heard):.1%}")
        if background is not None:
            print(f"  the keep at the end of the call   {keep_state} "
                  f"({time.monotonic() - background.started:.0f} s after it started)")
            print("  daemon threads by nice value      "
                  + ", ".join(f"{n} at {nice}" for nice, n in priorities.items()))
        return latencies
    finally:
        if daemon is not None:
            # a keep still running would hold a clean stop until its model call ends
            daemon.stop(signal.SIGTERM if background is None else signal.SIGKILL)
        pulse.close()
        shutil.rmtree(home, ignore_errors=True)


def side_by_side(model: str, alone: list[float], with_keep: list[float]) -> None:
    if not (alone and with_keep):
        return
    print(f"\n{model}: end of utterance -> turn stored, without and with the keep")
    for name, q in (("p50", 0.5), ("p95", 0.95)):
        a, b = percentile(alone, q), percentile(with_keep, q)
        print(f"  {name}  {a:5.2f} s  {b:5.2f} s  ({100 * (b - a) / a:+.0f}%)")
    a, b = statistics.mean(alone), statistics.mean(with_keep)
    print(f"  mean {a:5.2f} s  {b:5.2f} s  ({100 * (b - a) / a:+.0f}%)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="whisper-tiny.en,whisper-base")
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--threads", type=int, default=None,
                        help="asr_threads for the daemon (default: its setting, cores - 1)")
    parser.add_argument("--with-keep", type=Path, default=None, metavar="TRANSCRIPT",
                        help="also run with a keep of this transcript in the background")
    parser.add_argument("--keep-beside", action="store_true",
                        help="with --with-keep: one more run, the keep not pausing during "
                             "the call (only its priority keeps it out of the way)")
    args = parser.parse_args()
    print(f"BrainCue live capture ({machine()})")
    with tempfile.TemporaryDirectory() as folder:
        voices = [speak(text, "en-us" if who == "me" else "en-gb+f3", Path(folder) / f"{n}.wav")
                  for n, (who, text) in enumerate(SCRIPT)]
        for model in args.models.split(","):
            alone = run(model.strip(), voices, args.minutes, args.threads)
            if args.with_keep is None:
                continue
            runs = {"pausing during the call": False}
            if args.keep_beside:
                runs["running beside the call"] = True
            figures = {how: run(model.strip(), voices, args.minutes, args.threads,
                                args.with_keep, beside) for how, beside in runs.items()}
            for how, with_keep in figures.items():
                side_by_side(f"{model.strip()}, a keep {how}", alone, with_keep)
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()

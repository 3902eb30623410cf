"""Live capture figures: a two-voice dialogue played through virtual devices into a real daemon.

    .venv/bin/python -m bench.live [--models whisper-tiny.en,whisper-base] [--minutes 3]
                                   [--threads N]

For each speech model: a private PulseAudio server (null sinks, as in the end-to-end test), a
daemon subprocess capturing both sources, a session started over IPC, then about ``--minutes``
of dialogue (espeak-ng en-us as "me" into the microphone sink, en-gb+f3 as "them" into the
default output, 0.8 s between turns) played in real time, as a call would be. Printed:

- latency from the end of each utterance (when its playback finished) to its turn being stored
  (the `turn` event, published right after the store commits), p50 and p95;
- the ASR real-time factor (transcription time / audio transcribed, from `status`);
- the daemon's CPU use over the whole run (% of one core) and its peak RSS;
- dropped blocks, and the word error rate of everything heard against the script.
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
from daemon.ipc.protocol import TOPIC_TURNS, Start, Status, Stop, TurnEvent
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


def run(model: str, voices: list[Path], minutes: float, threads: int | None) -> None:
    pulse = PulseServer()
    home = short_home()
    daemon: DaemonProcess | None = None
    try:
        pulse.start()
        (home / "config").mkdir()
        config = f'asr_model = "{model}"\n' + (f"asr_threads = {threads}\n" if threads else "")
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
        print(f"\n{model} ({status.live.asr_model}; {len(played)} utterances played, "
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
    finally:
        if daemon is not None:
            daemon.stop(signal.SIGTERM)
        pulse.close()
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="whisper-tiny.en,whisper-base")
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--threads", type=int, default=None,
                        help="asr_threads for the daemon (default: its setting, cores - 1)")
    args = parser.parse_args()
    print(f"BrainCue live capture ({machine()})")
    with tempfile.TemporaryDirectory() as folder:
        voices = [speak(text, "en-us" if who == "me" else "en-gb+f3", Path(folder) / f"{n}.wav")
                  for n, (who, text) in enumerate(SCRIPT)]
        for model in args.models.split(","):
            run(model.strip(), voices, args.minutes, args.threads)
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()

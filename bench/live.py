"""Live capture figures: a two-voice dialogue played through virtual devices into a real daemon.

    .venv/bin/python -m bench.live [--models whisper-tiny.en,whisper-base] [--minutes 3]
                                   [--threads N] [--compare] [--each-off]
                                   [--set NAME=VALUE ...]
                                   [--with-keep TRANSCRIPT.json [--keep-beside]]
                                   [--each-utterance]

For each speech model: a private PulseAudio server (null sinks, as in the end-to-end test), a
daemon subprocess capturing both sources, a session started over IPC, then about ``--minutes``
of dialogue (espeak-ng en-us as "me" into the microphone sink, en-gb+f3 as "them" into the
default output, 0.8 s between turns; replies of 1-2 s, sentences of 3-5 s and monologues of
10-13 s) played in real time, as a call would be. Printed:

- latency from the end of each utterance (when its playback finished) to its turn being stored
  (the `turn` event, published right after the store commits), p50 and p95, overall and per
  utterance length (< 3 s, 3-8 s, > 8 s);
- the ASR real-time factor (transcription time / audio transcribed, from `status`);
- the daemon's CPU use over the whole run (% of one core) and its peak RSS;
- the memory of the daemon and the processes it started (the models'), sampled twice a
  second from the session's start to its end: the peak of their sum as RSS (a model's weights,
  mapped from their file, count in every process mapping them), PSS (shared pages divided
  among their processes: counted once) and private, and each process's own peak RSS;
- dropped blocks, and the word error rate of everything heard against the script;
- each utterance stored later than 1.5 x p50 after its end (``--each-utterance``: every one),
  with where the daemon's time went (its debug log's stages: hangover, queue, ASR, voices,
  store).

``--compare`` first runs each model the way the daemon once decoded (whisper's full
30 s window, one thread: ``asr_fit_context = false``, ``asr_threads = 1``), then with the
settings given (default: the daemon's), so both stand side by side from the same run.
``--each-off`` adds, after the run with the settings given, one run with each optional part
turned off in turn (:data:`OPTIONAL_PARTS`: the read-ahead, the voices, the speech model's own
process), so that what each costs the live path stands beside the whole in one report.
``--set NAME=VALUE`` adds a line to the daemon's config.toml (a TOML value: ``--set
asr_threads=2``); that is also how a setting such as diarisation is switched on for a run.

``--with-keep FILE`` adds, for each model, a run with a keep of the transcript FILE (e.g.
a QMSum meeting such as ``ES2006/ES2006a.json``) going on in the same daemon — imported into a
Space, kept, and the call started once the keep's model is working — beside the run without,
with the keep's state at the end of the call and the daemon's threads by CPU priority (the
keep's llama.cpp threads run at nice 19). By default a keep waits between its model calls while
a session is live; ``--keep-beside`` adds a run with that turned off (``keep_pauses_while_live =
false``): the keep's model runs through the whole call and only its priority keeps it out of the
way.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import signal
import tempfile
import threading
import time
import wave
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import machine
from bench.wer import word_error_rate
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
    VoicesList,
)
from daemon.ipc.testing import DaemonProcess, short_home, start_daemon
from daemon.resident import Resident, children, resident

PAUSE_S = 0.8
MATCH_S = 2.5  # a turn or a logged utterance ending this near a playback's end is its
SCRIPT = [
    ("me", "Good morning, thanks for joining the call about the budget."),
    ("them", "Happy to help. We finished the new website yesterday."),
    ("me", "Great. Can we move the launch to next week?"),
    ("them", "Yes, but the payment page still needs more testing."),
    ("me", "I will ask Maria to test the payment page tomorrow."),
    ("them", "Perfect. Let us meet again on Friday morning."),
    ("me", "Friday works."),
    ("them", "One more thing about the website: the search page is still slow on mobile phones, "
             "and the agency says it will take two more weeks to fix, which means the launch "
             "might slip again unless we drop that feature for now."),
    ("me", "Before we finish, how is the hiring going for the support team?"),
    ("them", "We interviewed four people and two of them look very strong."),
    ("me", "Good. Please send me their notes by the end of the day."),
    ("them", "I will. Should we also talk about the office move?"),
    ("me", "Yes. The new office should be ready in the first week of June."),
    ("them", "Sounds good to me."),
    ("me", "The lease for the old office ends on the thirtieth of June, so we have about three "
           "weeks to move everything, and I would like the servers to go first, because the "
           "network team needs a few days to test the new connection."),
    ("them", "That is good news. Do we need new desks for everyone?"),
    ("me", "Most people want to keep their old desks, so only a few."),
    ("them", "Then I will order six desks and ten chairs this week."),
    ("me", "Please check the price with the finance team first."),
    ("them", "Of course. What about the customer survey results?"),
    ("me", "People like the product, but they want faster delivery."),
    ("them", "We could open a second warehouse in the north."),
    ("me", "That is a big decision. Let us discuss it next month."),
    ("them", "Right, next month then."),
    ("them", "For the report I will compare the rent in three cities, the cost of hiring local "
             "drivers, and how many days faster delivery would be for our largest customers in "
             "the north, and then we can decide with real numbers."),
    ("me", "Okay."),
    ("them", "Agreed. I will prepare a short report with the numbers."),
]


@dataclass
class Played:
    source: str
    text: str
    ended: float  # wall clock, when playback finished
    seconds: float  # its length


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


MEMORY_PERIOD_S = 0.5
MB = 1 << 20


def process_name(pid: int, daemon_pid: int) -> str:
    """``daemon``, ``llm foreground`` / ``llm background`` (a model process by its nice value),
    ``asr live`` (the speech model's process), else the program's name."""
    if pid == daemon_pid:
        return "daemon"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return f"pid {pid}"
    if "daemon.llm.model_process" in argv:
        nice = argv[argv.index("--nice") + 1] if "--nice" in argv else "0"
        return "llm background" if nice != "0" else "llm foreground"
    if "daemon.asr.speech_process" in argv:
        return "asr live"
    return Path(argv[0]).name


class MemorySampler:
    """The memory of a daemon and of every process it started, sampled from a thread: the
    peak of their sum (RSS, PSS, private: each its own peak) and each process's peak RSS."""

    def __init__(self, daemon_pid: int) -> None:
        self.daemon_pid = daemon_pid
        self.peak = {"rss": 0, "pss": 0, "private": 0}
        self.peak_by_process: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(MEMORY_PERIOD_S):
                return

    def sample(self) -> None:
        found: dict[str, Resident] = {}
        for pid in [self.daemon_pid, *children(self.daemon_pid)]:
            memory = resident(pid)
            if memory is not None:
                found[process_name(pid, self.daemon_pid)] = memory
        for name, memory in found.items():
            self.peak_by_process[name] = max(self.peak_by_process.get(name, 0), memory.rss)
        for measure in self.peak:
            total = sum(getattr(m, measure) or 0 for m in found.values())
            self.peak[measure] = max(self.peak[measure], total)

    def summary(self) -> tuple[str, str]:
        """(RSS / PSS / private peaks in MB, each process's peak RSS)."""
        return (" / ".join(f"{self.peak[m] / MB:.0f}" for m in ("rss", "pss", "private")),
                ", ".join(f"{name} {n / MB:.0f}" for name, n in self.peak_by_process.items()))


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


BANDS = (("< 3 s", 0.0, 3.0), ("3-8 s", 3.0, 8.0), ("> 8 s", 8.0, float("inf")))
STAGE_NAMES = {  # the daemon's stages (LiveStatus.stages_p50_s), as the report names them
    "cut": "end -> cut (VAD hangover)",
    "queued": "cut -> ASR starts (queue)",
    "asr": "ASR",
    "voices": "telling voices apart",
    "stored": "store + index + event",
    "total": "end -> stored (daemon clock)",
}
BEFORE = ["asr_fit_context = false", "asr_threads = 1"]  # the old full-window, one-thread decoding
# what runs beside the speech path, each of which --each-off turns off for a run
OPTIONAL_PARTS = {"read-ahead off": "llm_read_ahead = false",
                  "voices off": "voices_enabled = false",
                  "asr in the daemon": "asr_process = false"}


@dataclass
class Result:
    label: str
    asr_model: str
    played: int
    stored: int
    unmatched: int
    latencies: list[tuple[float, float]]  # (utterance seconds, end -> stored seconds)
    rtf: float
    cpu_percent: float
    wall_s: float
    rss_mb: float
    dropped: int
    wer: float
    stages: dict[str, float] = field(default_factory=dict)  # the daemon's p50 per stage
    after_asr_max: float = 0.0  # the daemon's longest from ASR ended to stored
    keep_state: str = ""  # with a keep in the background: how it stood at the end of the call
    threads_by_nice: str = ""
    voices: str = ""  # `voices list`'s state and the encoder telling "them" apart
    memory: tuple[str, str] = ("", "")  # MemorySampler.summary()
    # (end -> stored, a line with the daemon's stages) of each utterance, the slowest first
    utterances: list[tuple[float, str]] = field(default_factory=list)


def run(model: str, voices: list[Path], minutes: float, config_lines: list[str],
        label: str, keep: Path | None = None) -> Result:
    """One run, with a keep of the transcript ``keep`` in the background when given."""
    pulse = PulseServer()
    home = short_home()
    daemon: DaemonProcess | None = None
    background = None if keep is None else BackgroundKeep(keep)
    lengths = [wav_seconds(v) for v in voices]
    try:
        pulse.start()
        (home / "config").mkdir()
        config = "\n".join([f'asr_model = "{model}"', *config_lines]) + "\n"
        (home / "config" / "config.toml").write_text(config)
        os.environ.update(BRAINCUE_HOME=str(home), BRAINCUE_CAPTURE="on",
                          XDG_RUNTIME_DIR=str(pulse.runtime_dir))
        daemon = start_daemon(home, args=["--verbose"])  # each utterance's stages logged
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
        sampler = MemorySampler(daemon.pid)
        with sampler:
            started = client.request(Start(title=f"bench {model}"))
            cpu_before, wall_before = cpu_seconds(daemon.pid), time.monotonic()

            played: list[Played] = []
            deadline = time.monotonic() + minutes * 60
            i = 0
            while time.monotonic() < deadline:
                who, text = SCRIPT[i % len(SCRIPT)]
                pulse.play(ME_SINK if who == "me" else THEM_SINK, voices[i % len(SCRIPT)])
                played.append(Played("mic" if who == "me" else "loopback", text, time.time(),
                                     lengths[i % len(SCRIPT)]))
                time.sleep(PAUSE_S)  # the dialogue's own pace, not a wait for the daemon
                i += 1

            def caught_up() -> bool:
                live = client.request(Status()).live
                return live is not None and live.utterances_queued == 0

            wait_until(caught_up, 300)
            priorities = threads_by_nice(daemon.pid)
            keep_state = "" if background is None else (
                f"{background.state(client)} after {time.monotonic() - background.started:.0f}"
                " s")
            status = client.request(Status())
            listed = client.request(VoicesList())
            voices_state = (f"{listed.state} ({listed.model_id})" if listed.model_id
                            else listed.state)
            stopped = client.request(Stop())
        cpu = cpu_seconds(daemon.pid) - cpu_before
        wall = time.monotonic() - wall_before
        rss = peak_rss_mb(daemon.pid)
        stop.set()
        collector.join(5)
        assert status.live is not None

        latencies = []
        unmatched = 0
        matched: list[tuple[float, Played]] = []
        for p in played:
            candidates = [(abs(started.started_at + e.end - p.ended), received)
                          for received, e in turns if e.source == p.source
                          and abs(started.started_at + e.end - p.ended) < MATCH_S]
            if candidates:
                latencies.append((p.seconds, min(candidates)[1] - p.ended))
                matched.append((latencies[-1][1], p))
            else:
                unmatched += 1
        logged = utterance_stages(daemon.log())
        each = [(x, f"{p.seconds:4.1f} s {p.source:<8} {x:5.2f} s  "
                    f"{nearest_stages(logged, p)}  {p.text[:40]!r}")
                for x, p in sorted(matched, key=lambda m: -m[0])]
        # the pieces a long utterance was cut into before its end (no end played there)
        each += [(math.inf, f"       {source:<8} a piece  {stages}")
                 for source, end, stages in logged
                 if not any(p.source == source and abs(end - p.ended) < MATCH_S
                            for p in played)]
        reference = " ".join(p.text for p in played)
        heard = " ".join(e.text for _, e in sorted(turns, key=lambda t: t[1].start))
        return Result(label=label, asr_model=status.live.asr_model, played=len(played),
                      stored=stopped.turns, unmatched=unmatched, latencies=latencies,
                      rtf=status.live.asr_real_time_factor, cpu_percent=100 * cpu / wall,
                      wall_s=wall, rss_mb=rss, dropped=status.live.dropped_blocks,
                      wer=word_error_rate(reference, heard), stages=status.live.stages_p50_s,
                      after_asr_max=status.live.after_asr_max_s,
                      keep_state=keep_state, voices=voices_state, memory=sampler.summary(),
                      utterances=each,
                      threads_by_nice=", ".join(f"{n} at {nice}"
                                                for nice, n in priorities.items()))
    finally:
        if daemon is not None:
            # a keep still running would hold a clean stop until its model call ends
            daemon.stop(signal.SIGTERM if background is None else signal.SIGKILL)
        pulse.close()
        shutil.rmtree(home, ignore_errors=True)


UTTERANCE_LOG = re.compile(r"utterance (mic|loopback) ([0-9.]+)-([0-9.]+): (.*)$")


def utterance_stages(log: str) -> list[tuple[str, float, str]]:
    """(source, end, stages) of each utterance the daemon logged (``--verbose``)."""
    found = (UTTERANCE_LOG.search(line) for line in log.splitlines())
    return [(m[1], float(m[3]), m[4]) for m in found if m is not None]


def nearest_stages(logged: list[tuple[str, float, str]], played: Played) -> str:
    """The daemon's stages for the utterance whose end is nearest ``played``'s."""
    near = [(abs(end - played.ended), stages) for source, end, stages in logged
            if source == played.source and abs(end - played.ended) < MATCH_S]
    return min(near)[1] if near else "(not logged)"


def wav_seconds(path: Path) -> float:
    with wave.open(str(path), "rb") as w:
        return w.getnframes() / w.getframerate()


def p50_p95(values: list[float]) -> str:
    if not values:
        return f"{'-':>13}"
    return f"{percentile(values, 0.5):5.2f} / {percentile(values, 0.95):5.2f}"


def report(results: list[Result], each_utterance: bool = False) -> None:
    """One column per run: latency overall and per band, then the resource figures; then
    the utterances stored later than 1.5 x p50 (``each_utterance``: all) with their stages."""
    width = max(22, *(len(r.label) + 2 for r in results))
    print(f"\n{'':<34}" + "".join(f"{r.label:>{width}}" for r in results))

    def row(name: str, cells: list[str]) -> None:
        print(f"{name:<34}" + "".join(f"{c:>{width}}" for c in cells))

    row("voices", [r.voices for r in results])
    row("utterances played / turns stored", [f"{r.played} / {r.stored}" for r in results])
    row("utterances without a turn", [str(r.unmatched) for r in results])
    row("end -> stored p50 / p95 (s), all", [p50_p95([x for _, x in r.latencies])
                                             for r in results])
    for band, lo, hi in BANDS:
        counts = [sum(lo <= n < hi for n, _ in r.latencies) for r in results]
        row(f"  utterances {band} ({'/'.join(map(str, counts))})",
            [p50_p95([x for n, x in r.latencies if lo <= n < hi]) for r in results])
    row("  utterances up to 8 s", [p50_p95([x for n, x in r.latencies if n < 8.0])
                                   for r in results])
    row("daemon p50 per stage (s):", ["" for _ in results])
    for stage, meaning in STAGE_NAMES.items():
        row(f"  {meaning}", [f"{r.stages[stage]:.3f}" if stage in r.stages else "-"
                             for r in results])
    row("  after ASR -> stored, longest", [f"{r.after_asr_max:.3f}" for r in results])
    row("ASR real-time factor", [f"{r.rtf:.3f}" for r in results])
    row("daemon CPU (% of one core)", [f"{r.cpu_percent:.0f}% / {r.wall_s:.0f} s"
                                       for r in results])
    row("daemon peak RSS", [f"{r.rss_mb:.0f} MB" for r in results])
    row("with its processes: RSS/PSS/private", [f"{r.memory[0]} MB" for r in results])
    row("  each process's peak RSS (MB)", [r.memory[1] for r in results])
    row("dropped blocks", [str(r.dropped) for r in results])
    row("word error rate (all turns)", [f"{r.wer:.1%}" for r in results])
    if any(r.keep_state for r in results):
        row("the keep at the end of the call", [r.keep_state or "-" for r in results])
        row("daemon threads by nice value", [r.threads_by_nice for r in results])
    for r in results:
        slow = 0.0 if each_utterance else 1.5 * percentile([x for _, x in r.latencies], 0.5)
        if lines := [line for x, line in r.utterances if x > slow]:
            print(f"\n{r.label}: " + ("each utterance" if each_utterance else
                                       "turns stored later than 1.5 x p50 after their end")
                  + " (length, source, end -> stored, the daemon's stages):")
            for line in lines:
                print(f"  {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="whisper-tiny.en,whisper-base")
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--threads", type=int, default=None,
                        help="asr_threads for the daemon (default: its setting, 0 = the free "
                             "cores before each utterance)")
    parser.add_argument("--compare", action="store_true",
                        help="run each model first the way the daemon once decoded "
                             "(the full 30 s window, one thread)")
    parser.add_argument("--each-off", action="store_true",
                        help="one more run with each optional part off: " + ", ".join(
                            OPTIONAL_PARTS.values()))
    parser.add_argument("--set", dest="settings", action="append", default=[],
                        metavar="NAME=VALUE", help="a config.toml line for the daemon")
    parser.add_argument("--with-keep", type=Path, default=None, metavar="TRANSCRIPT",
                        help="also run with a keep of this transcript in the background")
    parser.add_argument("--keep-beside", action="store_true",
                        help="with --with-keep: one more run, the keep not pausing during "
                             "the call (only its priority keeps it out of the way)")
    parser.add_argument("--each-utterance", action="store_true",
                        help="list every utterance with the daemon's stages, not only those "
                             "stored later than 1.5 x p50")
    args = parser.parse_args()
    lines = [f"{n.strip()} = {v.strip()}" for n, v in (s.split("=", 1) for s in args.settings)]
    if args.threads:
        lines.append(f"asr_threads = {args.threads}")
    print(f"BrainCue live capture ({machine()})")
    results = []
    with tempfile.TemporaryDirectory() as folder:
        voices = [speak(text, "en-us" if who == "me" else "en-gb+f3", Path(folder) / f"{n}.wav")
                  for n, (who, text) in enumerate(SCRIPT)]
        for model in (m.strip() for m in args.models.split(",")):
            if args.compare:
                results.append(run(model, voices, args.minutes, BEFORE,
                                   f"{model} window, 1 thr"))
                print(f"  ({machine()})", flush=True)
            label = f"{model}" + (" " + " ".join(args.settings) if lines else "")
            results.append(run(model, voices, args.minutes, lines, label))
            print(f"  ({machine()})", flush=True)
            for part, setting in OPTIONAL_PARTS.items() if args.each_off else ():
                results.append(run(model, voices, args.minutes, [*lines, setting],
                                   f"{model} {part}"))
                print(f"  ({machine()})", flush=True)
            if args.with_keep is None:
                continue
            results.append(run(model, voices, args.minutes, lines, f"{label}, keep pausing",
                               args.with_keep))
            print(f"  ({machine()})", flush=True)
            if args.keep_beside:
                results.append(run(model, voices, args.minutes,
                                   [*lines, "keep_pauses_while_live = false"],
                                   f"{label}, keep beside", args.with_keep))
                print(f"  ({machine()})", flush=True)
    report(results, args.each_utterance)
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()

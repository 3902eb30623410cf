"""Named voices across calls, on real human voices: is a voice named once known in every later
call, and is a stranger ever given a name?

    .venv/bin/python -m bench.voices --data DIR [--seed N] [--calls 24] [--minutes 3 5]
        [--channel stereo|them] [--asr whisper-tiny.en] [--json FILE] [--keep DIR]
        [--explain] [--daemon-root CHECKOUT]

``DIR`` holds one folder per speaker, each with several recordings of them (flac or wav). From
them the bench builds calls, as a conversation sounds on a computer: on the right channel
("them") two to four of the speakers take turns of 2-15 s made of whole sentences (a long
recording is cut at its quietest pause), with natural gaps and some short overlaps; on the left
channel ("me") a different speaker answers now and then. Each call's speakers get their own
level and room (a short synthetic reverberation and a telephone-to-studio tilt, in numpy) and a
faint noise floor; speakers recur across calls.

The calls go through a real daemon (``python -m daemon``, a fresh profile, no capture) as
`braincue import --stereo` sends them: the same VAD, speech model and voices a live call's
"them" runs after capture (``Live.import_audio``; ``--channel them`` imports the right channel
alone as a mono file). Half of the speakers (chosen by ``--seed``) are named, each once, in the
first call they speak in: the shown voice that holds most of their speech is named over the
protocol, as `braincue voices name "Them 2" NAME --session ID` does. The other calls are scored:

- ``count_right``: calls whose "them" shows as many voices as spoke there;
- ``purity``: of the speech under each shown voice, the share of its main speaker (all voices
  of all scored calls, by time);
- ``named_recall``: the named speakers' turns shown with their name (a turn is its main
  speaker's: the reference speaker under most of it);
- ``wrong_name``: of all "them" turns, those shown with a name not their speaker's (a stranger
  given a name included);
- ``strangers_named_calls``: scored calls in which a never-named speaker has a turn shown with
  a name.

It prints one summary line (and, with ``--explain``, a line per call) and writes the figures
as JSON with ``--json``. ``--keep DIR`` keeps the built calls and their references.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the daemon runs numpy

import argparse
import json
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf

from bench.common import machine
from daemon.asr.engine import Segment, Word
from daemon.audio.files import load_audio
from daemon.audio.format import SAMPLE_RATE
from daemon.errors import NotFound
from daemon.ipc.client import Client
from daemon.ipc.protocol import ImportAudio, ShowSession, VoiceName
from daemon.ipc.testing import start_daemon

AUDIO_SUFFIXES = (".flac", ".wav")
TURN_S = (2.0, 15.0)  # the length of a turn
OVERLAP_SHARE = 0.12  # turns that start before the one before ends ...
OVERLAP_S = (0.3, 1.2)  # ... by this much
ME_SHARE = 0.2  # turns taken by the speaker on the microphone
IMPORT_TIMEOUT_S = 3600.0


# -- the calls ---------------------------------------------------------------------------------


def load_speakers(data: Path) -> dict[str, list[np.ndarray]]:
    """Each speaker folder's recordings (16 kHz mono float32), by folder name."""
    speakers = {}
    for folder in sorted(p for p in data.iterdir() if p.is_dir()):
        files = sorted(f for f in folder.iterdir() if f.suffix.lower() in AUDIO_SUFFIXES)
        if files:
            speakers[folder.name] = [load_audio(f) for f in files]
    if len(speakers) < 4:
        raise SystemExit(f"{data}: needs at least 4 speaker folders with flac or wav files, "
                         f"found {len(speakers)}")
    return speakers


def sentences(audio: np.ndarray, longest_s: float) -> list[np.ndarray]:
    """A recording in parts of at most ``longest_s``, each cut at the quietest 50 ms of the
    part's last half (a pause between words), the silence at either end trimmed."""
    frame = SAMPLE_RATE // 20
    energy = np.convolve(audio.astype(np.float64) ** 2, np.ones(frame) / frame, mode="same")
    loud = np.flatnonzero(energy > energy.max() * 1e-3)
    if loud.size == 0:
        return []
    begin, end = int(loud[0]), int(loud[-1]) + 1
    parts = []
    longest = int(longest_s * SAMPLE_RATE)
    while end - begin > longest:
        low, high = begin + longest // 2, begin + longest
        cut = low + int(np.argmin(energy[low:high]))
        parts.append(audio[begin:cut])
        begin = cut
    parts.append(audio[begin:end])
    return parts


def colouring(rng: np.random.Generator) -> np.ndarray:
    """A short impulse response: the direct sound, a decaying tail of reflections (a small to
    middling room) and a spectral tilt (a thin telephone-like voice to a full one)."""
    rt60 = rng.uniform(0.15, 0.5)
    n = int(rt60 * SAMPLE_RATE)
    t = np.arange(n) / SAMPLE_RATE
    tail = rng.standard_normal(n) * np.exp(-6.9 * t / rt60) * rng.uniform(0.05, 0.3)
    tail[: int(0.004 * SAMPLE_RATE)] = 0.0  # the first reflection after a few ms
    ir = tail
    ir[0] = 1.0
    # tilt: a first difference (thinner) or a short moving average (duller), mixed in
    tilt = rng.uniform(-0.6, 0.6)
    if tilt > 0:
        ir = ir - tilt * np.concatenate([[0.0], ir[:-1]])
    else:
        ir = (1 + tilt) * ir + -tilt * np.convolve(ir, np.ones(4) / 4, mode="same")
    out: np.ndarray = (ir / np.sqrt(np.sum(ir**2))).astype(np.float32)
    return out


def coloured(audio: np.ndarray, ir: np.ndarray) -> np.ndarray:
    n = len(audio) + len(ir) - 1
    size = 1 << (n - 1).bit_length()
    out = np.fft.irfft(np.fft.rfft(audio, size) * np.fft.rfft(ir, size), size)[: len(audio)]
    return out.astype(np.float32)


@dataclass(frozen=True)
class Spoken:
    start: float
    end: float
    speaker: str
    channel: str  # "me" | "them"


@dataclass
class Call:
    index: int
    them: list[str]
    me: str
    duration: float
    spoken: list[Spoken] = field(default_factory=list)
    left: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    right: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))

    def reference(self) -> list[Spoken]:
        return [s for s in self.spoken if s.channel == "them"]


class Pool:
    """A speaker's sentences, handed out in a shuffled order, reshuffled when all were used."""

    def __init__(self, parts: list[np.ndarray], rng: np.random.Generator) -> None:
        self.parts, self.rng, self.queue = parts, rng, list[int]()

    def next(self) -> np.ndarray:
        if not self.queue:
            self.queue = list(self.rng.permutation(len(self.parts)))
        return self.parts[self.queue.pop()]


def build_call(index: int, them: list[str], me: str, pools: dict[str, Pool],
               minutes: tuple[float, float], rng: np.random.Generator) -> Call:
    duration = rng.uniform(*minutes) * 60
    call = Call(index, them, me, duration)
    n = int((duration + 30) * SAMPLE_RATE)
    channels = {"me": np.zeros(n, np.float32), "them": np.zeros(n, np.float32)}
    share = rng.dirichlet(np.full(len(them), 2.0))  # who talks how much
    level = {s: 10 ** (rng.uniform(-12, 0) / 20) for s in [*them, me]}  # dB under the loudest
    room = {s: colouring(rng) for s in [*them, me]}
    t, last = rng.uniform(0.3, 1.5), ""
    while t < duration:
        if last != me and rng.random() < ME_SHARE:
            who = me
        else:
            options = [k for k, s in enumerate(them) if s != last]
            p = share[options] / share[options].sum()
            who = them[options[rng.choice(len(options), p=p)]]
        channel = "me" if who == me else "them"
        target = rng.uniform(*TURN_S)
        parts = [pools[who].next()]
        while sum(map(len, parts)) / SAMPLE_RATE < target:
            following = pools[who].next()
            if (sum(map(len, parts)) + len(following)) / SAMPLE_RATE > TURN_S[1]:
                break
            parts.append(following)
        pause = np.zeros(int(rng.uniform(0.15, 0.5) * SAMPLE_RATE), np.float32)
        audio = np.concatenate([x for p in parts for x in (p, pause)][:-1])
        audio = coloured(audio, room[who]) * level[who]
        begin = int(t * SAMPLE_RATE)
        if begin + len(audio) > n:
            break
        channels[channel][begin:begin + len(audio)] += audio
        end = t + len(audio) / SAMPLE_RATE
        call.spoken.append(Spoken(round(t, 3), round(end, 3), who, channel))
        overlap = channel == "them" and last in them and rng.random() < OVERLAP_SHARE
        t = end - rng.uniform(*OVERLAP_S) if overlap else end + rng.choice(
            [rng.uniform(0.2, 1.2), rng.uniform(1.2, 3.0)], p=[0.8, 0.2])
        last = who
    length = int(max(s.end for s in call.spoken) * SAMPLE_RATE) + SAMPLE_RATE
    call.duration = length / SAMPLE_RATE
    gain = 10 ** (rng.uniform(-26, -16) / 20)  # the call's level (RMS of its loudest voice)
    for name in channels:
        audio = channels[name][:length]
        peak_rms = max(float(np.sqrt(np.mean(audio[int(s.start * SAMPLE_RATE):
                                                     int(s.end * SAMPLE_RATE)] ** 2)))
                       for s in call.spoken if s.channel == name) if any(
            s.channel == name for s in call.spoken) else gain
        audio = audio * (gain / max(peak_rms, 1e-9))
        audio = audio + rng.standard_normal(length).astype(np.float32) * 10 ** (-66 / 20)
        channels[name] = np.clip(audio, -1.0, 1.0).astype(np.float32)
    call.left, call.right = channels["me"], channels["them"]
    call.them = [s for s in them if any(t.speaker == s for t in call.reference())]
    return call


def build_calls(speakers: dict[str, list[np.ndarray]], n_calls: int,
                minutes: tuple[float, float], seed: int) -> list[Call]:
    """``n_calls`` calls, each of 2-4 speakers on "them" and another on "me"; every speaker
    speaks on "them" in several calls."""
    rng = np.random.default_rng(seed)
    pools = {s: Pool([p for a in audio for p in sentences(a, TURN_S[1])], rng)
             for s, audio in speakers.items()}
    names = list(speakers)
    spoke: dict[str, int] = defaultdict(int)
    calls = []
    for i in range(n_calls):
        k = int(rng.integers(2, min(4, len(names) - 1) + 1))
        # the least heard speakers first, at random among equals: everyone recurs
        order = sorted(names, key=lambda s: (spoke[s], rng.random()))
        them = [str(s) for s in rng.permutation(order[: k + 2])[:k]]
        me = str(rng.choice([s for s in names if s not in them]))
        for s in them:
            spoke[s] += 1
        calls.append(build_call(i, them, me, pools, minutes, rng))
    return calls


# -- scoring -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shown:
    """A "them" turn as the daemon stored it."""

    start: float
    end: float
    speaker: str  # "Them 2" or a name


def overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def main_speaker(turn: Shown, reference: Sequence[Spoken]) -> str | None:
    """The reference speaker under most of ``turn`` (None: nobody's speech is under it)."""
    time_of: dict[str, float] = defaultdict(float)
    for s in reference:
        time_of[s.speaker] += overlap(turn.start, turn.end, s.start, s.end)
    best = max(time_of, key=lambda k: time_of[k], default=None)
    return best if best is not None and time_of[best] > 0 else None


@dataclass
class Score:
    calls: int = 0
    count_right: int = 0
    voice_time: float = 0.0
    main_time: float = 0.0
    named_turns: int = 0
    named_shown: int = 0
    turns: int = 0
    wrong: int = 0
    strangers_named_calls: int = 0
    lines: list[str] = field(default_factory=list)

    def add(self, call: Call, shown: Sequence[Shown], names: dict[str, str]) -> None:
        """``names``: the name of each speaker named by now (speaker -> name)."""
        reference = call.reference()
        self.calls += 1
        voices = sorted({t.speaker for t in shown})
        self.count_right += len(voices) == len(call.them)
        for voice in voices:
            time_of: dict[str, float] = defaultdict(float)
            for t in shown:
                if t.speaker == voice:
                    for s in reference:
                        time_of[s.speaker] += overlap(t.start, t.end, s.start, s.end)
            self.voice_time += sum(time_of.values())
            self.main_time += max(time_of.values(), default=0.0)
        known = set(names.values())
        stranger_named = False
        wrong_here = 0
        for t in shown:
            who = main_speaker(t, reference)
            if who is None:
                continue
            self.turns += 1
            if who in names:
                self.named_turns += 1
                self.named_shown += t.speaker == names[who]
            if t.speaker in known and t.speaker != names.get(who):
                wrong_here += 1
                stranger_named |= who not in names
        self.wrong += wrong_here
        self.strangers_named_calls += stranger_named
        self.lines.append(
            f"call {call.index:2d}: {len(call.them)} spoke ({', '.join(call.them)}), "
            f"{len(voices)} shown ({', '.join(voices)}); {wrong_here} wrong name(s)"
            f"{' (a stranger named)' if stranger_named else ''}")

    def figures(self) -> dict[str, float]:
        return {
            "count_right": self.count_right / max(self.calls, 1),
            "purity": self.main_time / max(self.voice_time, 1e-9),
            "named_recall": self.named_shown / max(self.named_turns, 1),
            "wrong_name": self.wrong / max(self.turns, 1),
            "strangers_named_calls": self.strangers_named_calls,
            "calls_scored": self.calls,
            "turns_scored": self.turns,
        }


# -- the daemon --------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def imported(client: Client, path: Path, title: str, started_at: float, stereo: bool
             ) -> tuple[int, list[Shown]]:
    """Import one call as `braincue import` does; its session and its "them" turns."""
    reply = client.request(ImportAudio(
        id=uuid.uuid4().hex, path=str(path), stereo=stereo, speaker="me", voices=True,
        title=title, started_at=started_at), timeout=IMPORT_TIMEOUT_S)
    return reply.session_id, shown_turns(client, reply.session_id)


def shown_turns(client: Client, session_id: int) -> list[Shown]:
    session = client.request(ShowSession(session_id=session_id))
    return [Shown(t.start, t.end, t.speaker) for t in session.turns if t.speaker != "me"]


def name_speakers(client: Client, session_id: int, call: Call, shown: Sequence[Shown],
                  to_name: dict[str, str]) -> None:
    """Name each of ``to_name``'s speakers (speaker -> name) as the user would: the shown
    voice holding most of their speech."""
    reference = call.reference()
    for speaker, name in to_name.items():
        held: dict[str, float] = defaultdict(float)
        for t in shown:
            for s in reference:
                if s.speaker == speaker:
                    held[t.speaker] += overlap(t.start, t.end, s.start, s.end)
        if not held:
            continue
        voice = max(held, key=lambda k: held[k])
        try:
            client.request(VoiceName(voice=voice, name=name, session_id=session_id),
                           timeout=600)
        except NotFound as e:  # a daemon that did not tell these voices apart
            print(f"call {call.index}: {speaker} not named: {e}", flush=True)
        shown = shown_turns(client, session_id)


WORD_S = 0.4  # the scripted speech model's "words"


def timed_words(audio: np.ndarray) -> list[Segment]:
    """What ``--asr words`` hears in an utterance: one segment of one "word" every 0.4 s."""
    duration = len(audio) / SAMPLE_RATE
    starts = np.arange(0.0, duration, WORD_S)
    # distinct words: a phrase said over and over is what the daemon drops as a looping decoder
    words = tuple(Word(float(t), float(min(t + WORD_S, duration)), f"w{k}")
                  for k, t in enumerate(starts))
    return [Segment(0.0, duration, " ".join(w.text for w in words), words)]


def serve_with_timed_words() -> None:
    """``python -m bench.voices serve``: the daemon, its speech model a script of timed words
    (the rest of it as it is: the VAD, the voices, the store, the protocol)."""
    from daemon.__main__ import main as daemon_main
    from daemon.asr.engine import ScriptedTranscriber
    from daemon.live.actor import Live

    scripted = ScriptedTranscriber(timed_words, model_id="timed-words")
    Live._require_speech_model = lambda self: scripted  # type: ignore[method-assign]
    sys.argv = [sys.argv[0]]
    daemon_main()


def run(calls: list[Call], named: list[str], *, asr: str, stereo: bool, folder: Path,
        explain: bool, root: Path | None = None) -> tuple[dict[str, float], str]:
    """Import every call into a fresh daemon, name the named speakers in their first call,
    score the others."""
    naming: dict[int, dict[str, str]] = defaultdict(dict)  # call -> {speaker: name}
    for speaker in named:
        first = next((c for c in calls if speaker in c.them), None)
        if first is not None:
            naming[first.index][speaker] = f"Reader {speaker}"
    # the calls that name someone first, then the others: every scored call comes after all
    # the naming (each in its order)
    order = [c for c in calls if c.index in naming] + [c for c in calls if c.index not in naming]
    home = folder / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text(
        "" if asr == "words" else f'asr_model = "{asr}"\n')
    os.environ.update(BRAINCUE_HOME=str(home), BRAINCUE_CAPTURE="off")  # the client's too
    env = None if root is None else {"PYTHONPATH": f"{root}:{Path.cwd()}"}
    command = ([sys.executable, "-m", "bench.voices", "serve"] if asr == "words" else None)
    daemon = start_daemon(home, timeout=120, root=root, env=env, command=command)
    score = Score()
    names: dict[str, str] = {}
    audio_s = 0.0
    try:
        cpu_before, wall_before = cpu_seconds(daemon.pid), time.monotonic()
        with Client(timeout=600) as client:
            for k, call in enumerate(order):
                path = folder / f"call-{call.index:02d}.wav"
                if stereo:
                    sf.write(path, np.stack([call.left, call.right], axis=1), SAMPLE_RATE,
                             subtype="PCM_16")
                else:
                    sf.write(path, call.right, SAMPLE_RATE, subtype="PCM_16")
                session_id, shown = imported(client, path, f"call {call.index}",
                                             1.8e9 + 86400.0 * k, stereo)
                audio_s += call.duration
                if call.index in naming:
                    name_speakers(client, session_id, call, shown, naming[call.index])
                    names.update(naming[call.index])
                else:
                    score.add(call, shown, names)
                    if explain:
                        print(score.lines[-1], flush=True)
                path.unlink()
        cpu = cpu_seconds(daemon.pid) - cpu_before
        wall = time.monotonic() - wall_before
    finally:
        code = daemon.stop(signal.SIGTERM, timeout=60)
    if code != 0:
        raise SystemExit(f"the daemon exited with {code}:\n{daemon.log()}")
    cost = (f"daemon process (VAD, voices, store; whisper runs in its own) "
            f"{cpu / audio_s:.3f} CPU s per audio s, {audio_s / 60:.0f} min of calls in "
            f"{wall / 60:.1f} min, {machine()}")
    return score.figures(), cost


def main(argv: Sequence[str] | None = None) -> None:
    if (sys.argv[1:] if argv is None else list(argv))[:1] == ["serve"]:
        serve_with_timed_words()
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True,
                        help="one folder per speaker, each with flac or wav recordings")
    parser.add_argument("--seed", type=int, default=0, help="fixes the calls and who is named")
    parser.add_argument("--calls", type=int, default=24, help="how many calls (20 or more)")
    parser.add_argument("--minutes", type=float, nargs=2, default=(3.0, 5.0),
                        metavar=("SHORTEST", "LONGEST"), help="the length of a call")
    parser.add_argument("--channel", choices=("stereo", "them"), default="stereo",
                        help='import each call as a stereo file (left "me", right "them"), or '
                             'its "them" channel alone as a mono file')
    parser.add_argument("--asr", default="whisper-tiny.en",
                        help='the daemon\'s speech model; "words": a script that hears one timed '
                             'word every 0.4 s of each utterance (the voices measured without '
                             'the cost of transcribing, on a machine too busy for it)')
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep the built calls (wav) and their references (json) here")
    parser.add_argument("--explain", action="store_true", help="a line per scored call")
    parser.add_argument("--daemon-root", type=Path, default=None,
                        help="run the daemon of this checkout (the code before a change, say)")
    args = parser.parse_args(argv)
    speakers = load_speakers(args.data)
    calls = build_calls(speakers, args.calls, tuple(args.minutes), args.seed)
    rng = np.random.default_rng(args.seed + 1)
    named = sorted(str(s) for s in rng.permutation(sorted(speakers))[: len(speakers) // 2])
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        for call in calls:
            sf.write(args.keep / f"call-{call.index:02d}.wav",
                     np.stack([call.left, call.right], axis=1), SAMPLE_RATE, subtype="PCM_16")
            (args.keep / f"call-{call.index:02d}.json").write_text(json.dumps(
                {"them": call.them, "me": call.me, "named": named,
                 "spoken": [vars(s) for s in call.spoken]}, indent=1))
    folder = Path(tempfile.mkdtemp(prefix="bc-voices-", dir="/tmp"))  # short: the sockets
    try:
        figures, cost = run(calls, named, asr=args.asr, stereo=args.channel == "stereo",
                            folder=folder, explain=args.explain, root=args.daemon_root)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"bench.voices seed {args.seed}: {figures['calls_scored']} calls scored of "
          f"{len(calls)} ({args.channel}), {len(speakers)} speakers ({len(named)} named): "
          f"count right {figures['count_right']:.0%}, purity {figures['purity']:.1%}, "
          f"named recall {figures['named_recall']:.1%}, wrong name {figures['wrong_name']:.1%}, "
          f"strangers named in {figures['strangers_named_calls']} call(s); {cost}")
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()

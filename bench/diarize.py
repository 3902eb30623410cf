"""Speaker diarisation figures on real meeting audio (AMI excerpts with an RTTM reference).

    .venv/bin/python -m bench.diarize --data AMI_DIR [--models DIR]
        [--cache segments.json] [--voice campplus-zh-en|resemblyzer]
        [--speech whisper|vad|reference]
        [--detect silero|silero-cuts|loudness]
        [--hop 0.4 --change 0.4 --same 0.5 --min-new 1.2 --named 0.5]
        [--cut-at pieces|segments|words] [--no-regroup]
        [--grid "same=0.75,0.8"]

Each file goes through what `braincue import` of a mono file does: the daemon's VAD cuts it
into utterances (kept where the Silero model hears a voice; ``--detect loudness``: the energy
detector alone, as the daemon runs without the model), whisper transcribes them (the best
installed speech model, as the daemon picks it), and :class:`daemon.voices.service.Voices`
labels the transcribed segments ("Them 1", ...) as one session — with the daemon's voice model
(the best installed: CAM++, then GE2E; ``--voice`` another) and that model's thresholds
(``daemon.voices.service.ENCODERS``; each flag overrides one): the hypothesis is the turns
that would be stored. ``--speech vad`` scores every piece of every VAD utterance instead (no
whisper), ``--speech reference`` the reference's speech regions (the voices alone). Whisper's
segments are cached (``--cache``), so tuning the
voices does not transcribe again. Printed:

- the diarisation error rate per file and overall (missed + false alarm + confusion over the
  reference speech time, overlapping speech included, a 0.25 s collar on each side of every
  reference boundary) — computed by pyannote.metrics (``pip install pyannote.metrics``, a
  bench-only dependency), with its components;
- the number of speakers found against the reference, and on how many files it is right;
- re-identification across sessions: in the excerpt pairs that share speakers, every voice of
  the first file is named after the reference speaker it maps to (the optimal mapping) and its
  voiceprint kept, as `braincue voices name` does; in the second file a shared speaker is
  recognised when most of their reference speech carries their name, and a name on speech
  that is mostly someone else's is counted against it;
- the real-time factor of embedding and labelling (the VAD excluded), with the load average,
  and the CPU time per audio second (which a busy machine inflates far less).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the daemon runs numpy (daemon/__main__)

import argparse
import contextlib
import hashlib
import itertools
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from bench.common import default_models_dir, machine
from daemon.asr import WhisperTranscriber
from daemon.asr.engine import Segment, within
from daemon.audio.files import load_audio_channels
from daemon.audio.format import SAMPLE_RATE
from daemon.audio.silero import SileroModel
from daemon.audio.vad import VadConfig
from daemon.live.pipeline import segment_tracks
from daemon.models.registry import pick_installed, resolve_model
from daemon.voices.diarize import (
    WINDOW_S,
    DiarizeConfig,
    NamedVoice,
    SessionVoices,
    Vectors,
    WindowEmbedder,
    window_starts,
)
from daemon.voices.encoder import HOP, normalize_volume
from daemon.voices.service import ENCODERS, label_segments

# the issue's pairs, then the other excerpts that share speakers (MÉO069 in all three, MEE067
# in trn00 and trn03, MEE068 in trn00 and trn01): a check on what the first two tuned
PAIRS = (("trn07", "trn08"), ("dev00", "dev01"), ("trn00", "trn03"), ("trn00", "trn01"))
COLLAR_EACH_SIDE_S = 0.25

Turn = tuple[float, float, str]  # start, end, speaker


def read_rttm(text: str) -> dict[str, list[Turn]]:
    """``SPEAKER file 1 start duration <NA> <NA> speaker ...`` lines, by file."""
    turns: dict[str, list[Turn]] = defaultdict(list)
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[0] == "SPEAKER":
            start, duration = float(fields[3]), float(fields[4])
            turns[fields[1]].append((start, start + duration, fields[7]))
    return dict(turns)


def talk_time(turns: Iterable[Turn], speaker: str, start: float, end: float) -> float:
    """Seconds of [start, end) that ``turns`` give to ``speaker``."""
    return sum(
        max(0.0, min(end, e) - max(start, s)) for s, e, who in turns if who == speaker
    )


def recognised(reference: Sequence[Turn], hypothesis: Sequence[Turn], speaker: str) -> bool:
    """Most of ``speaker``'s reference speech is labelled with their name."""
    labels: dict[str, float] = defaultdict(float)
    for s, e, who in reference:
        if who == speaker:
            for label in {h[2] for h in hypothesis}:
                labels[label] += talk_time(hypothesis, label, s, e)
    return bool(labels) and max(labels, key=lambda k: labels[k]) == speaker


def alone_time(turns: Sequence[Turn]) -> dict[str, tuple[float, float]]:
    """Each speaker's speech and the part of it nobody else speaks over, in seconds."""
    bounds = sorted({t for s, e, _ in turns for t in (s, e)})
    speech: dict[str, float] = defaultdict(float)
    alone: dict[str, float] = defaultdict(float)
    for start, end in itertools.pairwise(bounds):
        talking = {who for s, e, who in turns if s <= start and end <= e}
        for who in talking:
            speech[who] += end - start
            if len(talking) == 1:
                alone[who] += end - start
    return {who: (speech[who], alone[who]) for who in sorted(speech)}


def overlap_matrix(reference: Sequence[Turn], hypothesis: Sequence[Turn]
                   ) -> dict[str, dict[str, float]]:
    """Seconds of each reference speaker's speech under each hypothesis label."""
    return {label: {who: sum(talk_time(hypothesis, label, s, e)
                             for s, e, w in reference if w == who)
                    for who in sorted({t[2] for t in reference})}
            for label in sorted({h[2] for h in hypothesis})}


@dataclass
class Result:
    name: str
    duration: float
    hypothesis: list[Turn]
    voices: SessionVoices
    seconds: float  # embedding and labelling time ...
    cpu_seconds: float  # ... and the CPU time it took (all threads)


def speech_spans(turns: Sequence[Turn], gap_s: float = 0.3) -> list[tuple[float, float]]:
    """The reference's speech as utterances: its turns merged where less than ``gap_s`` apart
    (speech detection taken from the reference, to measure the voices alone)."""
    spans: list[list[float]] = []
    for start, end, _ in sorted(turns):
        if spans and start <= spans[-1][1] + gap_s:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    return [(s, e) for s, e in spans]


Utterance = tuple[float, np.ndarray, list[Segment] | None]  # start, audio, whisper's segments


class Transcripts:
    """Whisper's segments (with their timed words) of each VAD utterance, cached in a JSON file
    by model, file and utterance (the VAD is deterministic): transcribing the excerpts takes
    minutes, labelling them seconds. A cache of another format is started afresh."""

    def __init__(self, models: Path, cache: Path | None) -> None:
        self.path = resolve_model("asr", "", models)
        self.cache = cache
        self._known: dict[str, list[Segment]] = {}
        if cache is not None and cache.exists():
            with contextlib.suppress(msgspec.DecodeError):
                self._known = msgspec.json.decode(cache.read_bytes(),
                                                  type=dict[str, list[Segment]])
        self._transcriber: WhisperTranscriber | None = None

    def segments(self, name: str, start: float, audio: np.ndarray) -> list[Segment]:
        key = f"{self.path.stem}:{name}:{start:.3f}:{len(audio)}"
        if key not in self._known:
            if self._transcriber is None:
                # one thread: the text does not depend on it, and a starved second thread
                # would spin
                self._transcriber = WhisperTranscriber(self.path, threads=1)
            self._known[key] = self._transcriber.transcribe_sync(audio)
            if self.cache is not None:
                self.cache.write_bytes(msgspec.json.encode(self._known))
        return self._known[key]


@dataclass(frozen=True)
class Recording:
    name: str
    duration: float
    utterances: list[Utterance]
    vad_cpu_seconds: float = 0.0  # the CPU time the VAD took to cut them


def utterances(
    path: Path, speech: str, reference: Sequence[Turn], transcripts: Transcripts | None,
    vad: VadConfig | None = None,
) -> Recording:
    """The utterances of one file: from the daemon's VAD (with whisper's segments when
    ``transcripts`` is given), or the reference's speech regions."""
    audio = load_audio_channels(path).mean(axis=0).astype(np.float32)
    duration = len(audio) / SAMPLE_RATE
    if speech == "reference":
        return Recording(path.stem, duration, [
            (s, audio[int(s * SAMPLE_RATE) : int(e * SAMPLE_RATE)], None)
            for s, e in speech_spans(reference)
        ])
    began = time.process_time()
    cut = segment_tracks([("them", audio)], vad)
    vad_cpu = time.process_time() - began
    return Recording(path.stem, duration, [
        (u.start, u.audio,
         None if transcripts is None else transcripts.segments(path.stem, u.start, u.audio))
        for _, u in cut
    ], vad_cpu)


def diarize(
    encoder: WindowEmbedder,
    recording: Recording,
    config: DiarizeConfig,
    named: Sequence[NamedVoice] = (),
) -> Result:
    """Label ``spoken`` as one session: every piece, or the turns whisper's segments make; as
    the daemon does, voices that grow alike are merged after each utterance (``regroup``) and
    the turns heard so far follow."""
    voices = SessionVoices(config, named)
    heard: list[tuple[float, float, str, str]] = []  # start, end, session voice, label shown
    began, cpu_began = time.perf_counter(), time.process_time()
    for start, samples, segments in recording.utterances:
        if segments is not None and not segments:
            continue  # nothing transcribed: no turn, and the voices are not asked
        if segments is None:
            heard += [(start + p.start, start + p.end, p.voice, p.label)
                      for p in voices.label_utterance(encoder, samples)]
        else:  # as the daemon does
            heard += [(start + t.start, start + t.end, t.voice, t.speaker)
                      for t in label_segments(voices, encoder, samples, segments)]
        if config.regroup:
            merged = voices.merge_alike()
            heard = [(s, e, merged[v].session_label, merged[v].label) if v in merged
                     else (s, e, v, shown) for s, e, v, shown in heard]
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu_began
    hypothesis = [(s, e, shown) for s, e, _, shown in heard]
    return Result(recording.name, recording.duration, hypothesis, voices, seconds, cpu)


def oracle_turns(reference: Sequence[Turn], recording: Recording, by_word: bool
                 ) -> list[Turn]:
    """The turns a perfect voice labeller would make of whisper's segments: each segment (or,
    ``by_word``, each timed word, a part spanning to the next part as ``--cut-at pieces``
    does) goes to the reference speaker who speaks most of it. What the speech detection,
    whisper and one speaker per turn leave, whatever the voices do."""
    speakers = sorted({t[2] for t in reference})

    def speaker(start: float, end: float) -> str:
        return max(speakers, key=lambda who: talk_time(reference, who, start, end))

    turns: list[Turn] = []
    for offset, samples, segments in recording.utterances:
        duration = len(samples) / SAMPLE_RATE
        for segment in within(list(segments or ()), duration):
            if not segment.text.strip():
                continue
            words = segment.words if by_word and segment.words else (segment,)
            parts = [(w.start, speaker(offset + w.start, offset + w.end)) for w in words]
            for k, (start, who) in enumerate(parts):
                begin = offset + (segment.start if k == 0 else start)
                end = offset + (parts[k + 1][0] if k + 1 < len(parts) else segment.end)
                if turns and turns[-1][2] == who and turns[-1][1] >= begin - 1e-6:
                    begin = turns.pop()[0]
                turns.append((begin, end, who))
    return turns


def _annotation(turns: Sequence[Turn]):  # type: ignore[no-untyped-def]
    from pyannote.core import Annotation, Segment

    annotation = Annotation()
    for i, (start, end, who) in enumerate(turns):
        annotation[Segment(start, end), i] = who
    return annotation


class CachedEmbedder:
    """The encoder, remembering each utterance's windows: a grid labels the same audio many
    times over."""

    def __init__(self, encoder: WindowEmbedder) -> None:
        self.encoder = encoder
        self._known: dict[tuple[int, bytes, tuple[int, ...]], Vectors] = {}

    def embed_windows(self, audio: Vectors, starts: list[int]) -> Vectors:
        key = (len(audio), hashlib.sha1(audio.tobytes()).digest(), tuple(starts))
        if key not in self._known:
            self._known[key] = self.encoder.embed_windows(audio, starts)
        return self._known[key]


@dataclass(frozen=True)
class FileScore:
    missed: float  # seconds
    false_alarm: float
    confusion: float
    total: float  # reference speech seconds, collars removed
    found: int  # speakers
    truth: int
    missed_alone: float = 0.0  # of ``missed``: speech nobody else spoke over

    @property
    def error(self) -> float:
        return self.missed + self.false_alarm + self.confusion


def der(scores: Iterable[FileScore]) -> float:
    listed = list(scores)
    return sum(s.error for s in listed) / sum(s.total for s in listed)


def score(reference: Sequence[Turn], result: Result) -> FileScore:
    from pyannote.metrics.diarization import DiarizationErrorRate

    # pyannote's collar is the whole width removed around a boundary
    metric = DiarizationErrorRate(collar=2 * COLLAR_EACH_SIDE_S, skip_overlap=False)
    parts = metric(_annotation(reference), _annotation(result.hypothesis), detailed=True)
    alone = DiarizationErrorRate(collar=2 * COLLAR_EACH_SIDE_S, skip_overlap=True)(
        _annotation(reference), _annotation(result.hypothesis), detailed=True)
    return FileScore(parts["missed detection"], parts["false alarm"], parts["confusion"],
                     parts["total"], len({t[2] for t in result.hypothesis}),
                     len({t[2] for t in reference}), alone["missed detection"])


GRID_FIELDS = {"hop": "hop_s", "change": "change_below", "min-piece": "min_piece_s",
               "same": "same_voice", "min-new": "min_new_voice_s"}


def grid_configs(spec: str, base: DiarizeConfig) -> list[DiarizeConfig]:
    """``"same=0.7,0.8 change=0.6,0.7"``: every combination, over ``base``."""
    axes: list[list[tuple[str, float]]] = []
    for item in spec.split():
        key, _, values = item.partition("=")
        if key not in GRID_FIELDS:
            raise SystemExit(f"--grid: {key!r} is not one of {', '.join(GRID_FIELDS)}")
        axes.append([(GRID_FIELDS[key], float(v)) for v in values.split(",")])
    fields: list[dict[str, Any]] = [dict(combo) for combo in itertools.product(*axes)]
    return [replace(base, **f) for f in fields]


def tune(encoder: CachedEmbedder, recordings: dict[str, Recording],
         reference: dict[str, list[Turn]], configs: Sequence[DiarizeConfig]) -> None:
    """Every config in-sample, the best one, and leave-one-out: each file scored with the config
    that is best on the other eleven (DER, then speaker count)."""
    table = []
    for config in configs:
        scores = {n: score(reference[n], diarize(encoder, r, config))
                  for n, r in recordings.items()}
        right = sum(s.found == s.truth for s in scores.values())
        print(f"{config}: DER {100 * der(scores.values()):.1f}%, count right {right}")
        table.append((config, scores))

    def rank(scores: dict[str, FileScore], files: Sequence[str]) -> tuple[float, int]:
        return (round(der(scores[f] for f in files), 3),
                -sum(scores[f].found == scores[f].truth for f in files))

    names = sorted(recordings)
    best, best_scores = min(table, key=lambda row: rank(row[1], names))
    print(f"in-sample best {best}: DER {100 * der(best_scores.values()):.1f}%, count right "
          f"{sum(s.found == s.truth for s in best_scores.values())} of {len(names)}")
    held: list[FileScore] = []
    for name in names:
        rest = [n for n in names if n != name]
        config, scores = min(table, key=lambda row: rank(row[1], rest))
        held.append(scores[name])
        print(f"  held out {name}: {config}")
    print(f"leave-one-out DER {100 * der(held):.1f}%, count right "
          f"{sum(s.found == s.truth for s in held)} of {len(names)}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="the AMI excerpts")
    parser.add_argument("--models", type=Path, default=None)
    # the thresholds: each one not given is the voice model's own, as the daemon runs it
    # (daemon.voices.service.ENCODERS)
    for flag in ("--hop", "--change", "--min-piece", "--same", "--min-new", "--named"):
        parser.add_argument(flag, type=float, default=None)
    parser.add_argument("--voice", default="",
                        help="the voice model (registry name): campplus-zh-en (CAM++) or "
                             "resemblyzer (GE2E); default: the daemon's, the best installed")
    parser.add_argument("--speech", choices=("whisper", "vad", "reference"), default="whisper",
                        help="the turns an import stores (VAD, whisper, voices), every piece of "
                             "the VAD's utterances, or the reference's speech (the voices alone)")
    parser.add_argument("--detect", choices=("silero", "silero-cuts", "loudness"),
                        default="silero",
                        help="how the VAD tells speech: loudness cuts, the Silero model keeps "
                             "what it hears a voice in (the daemon's, when installed); the "
                             "model cuts too (model_cuts); loudness alone (the fallback)")
    parser.add_argument("--no-regroup", action="store_true",
                        help="never merge a session's voices that grow alike (regroup)")
    parser.add_argument("--cut-at", choices=("pieces", "segments", "words"),
                        default=DiarizeConfig().cut_at,
                        help="where a turn is cut inside one of whisper's segments: where the "
                             "voices' pieces change, never, or at each timed word (cut_at)")
    parser.add_argument("--cache", type=Path, default=None,
                        help="a JSON file that keeps whisper's segments between runs (keyed by "
                             "model, file and utterance only: delete it when the decoding "
                             "changes)")
    parser.add_argument("--oracle", action="store_true",
                        help="the reference speaker of each of whisper's segments (or words, "
                             "with --cut-at pieces|words) instead of the voices: the floor the "
                             "speech detection, whisper and one speaker per turn leave; and "
                             "re-identification from each speaker's own windows (the encoder's "
                             "ceiling)")
    parser.add_argument("--explain", action="store_true",
                        help="per file: each speaker's speech and speech alone, and the seconds "
                             "of it under each label found; per pair: what each named voice "
                             "holds, and each shared speaker's likeness to their print")
    parser.add_argument("--grid", default="",
                        help='tune instead: "same=0.7,0.8 change=0.6,0.7" (hop, change, '
                             "min-piece, same, min-new) scored in-sample and leave-one-out")
    args = parser.parse_args(argv)
    try:
        import pyannote.metrics  # noqa: F401
    except ImportError:
        parser.error("needs pyannote.metrics (bench only): .venv/bin/pip install pyannote.metrics")
    if args.oracle and args.speech != "whisper":
        parser.error("--oracle labels whisper's segments: it needs --speech whisper")
    models = args.models or default_models_dir()
    voice = pick_installed("voice", models, args.voice)
    model = ENCODERS[voice.name]
    encoder: WindowEmbedder = model.load(models / voice.filename)
    given = {"hop_s": args.hop, "change_below": args.change, "min_piece_s": args.min_piece,
             "same_voice": args.same, "min_new_voice_s": args.min_new,
             "named_voice": args.named}
    config = replace(model.config, cut_at=args.cut_at, regroup=not args.no_regroup,
                     **{k: v for k, v in given.items() if v is not None})
    print(f"voice model {voice.name}")
    reference = read_rttm((args.data / "reference.rttm").read_text())
    transcripts = Transcripts(models, args.cache) if args.speech == "whisper" else None
    vad = VadConfig(speech_model=None if args.detect == "loudness"
                    else SileroModel.load(resolve_model("vad", "", models)),
                    model_cuts=args.detect == "silero-cuts")
    recordings = {
        name: utterances(args.data / f"{name}.wav", args.speech, turns, transcripts, vad)
        for name, turns in sorted(reference.items())
    }
    source = f"whisper ({transcripts.path.stem})" if transcripts is not None else args.speech
    detected = "" if args.speech == "reference" else f", speech detected by {args.detect}"
    print(f"speech from {source}{detected}")
    if args.grid:
        tune(CachedEmbedder(encoder), recordings, reference, grid_configs(args.grid, config))
        return
    results: dict[str, Result] = {}
    scores: dict[str, FileScore] = {}
    print(f"config: {config}")
    print(f"{'file':6} {'DER':>6} {'miss':>6} {'FA':>6} {'conf':>6} {'spk':>4} {'ref':>4}")
    for name in sorted(reference):
        results[name] = result = diarize(encoder, recordings[name], config)
        if args.oracle:
            result.hypothesis = oracle_turns(reference[name], recordings[name],
                                             config.cut_at != "segments")
        scores[name] = s = score(reference[name], result)
        print(
            f"{name:6} {100 * s.error / s.total:5.1f}% {100 * s.missed / s.total:5.1f}% "
            f"{100 * s.false_alarm / s.total:5.1f}% {100 * s.confusion / s.total:5.1f}% "
            f"{s.found:4d} {s.truth:4d}"
        )
        if args.explain:
            explain(reference[name], result, s)
    right = sum(s.found == s.truth for s in scores.values())
    every = scores.values()
    print(f"overall DER {100 * der(every):.1f}% (missed {sum(s.missed for s in every):.1f} s, "
          f"false alarm {sum(s.false_alarm for s in every):.1f} s, confusion "
          f"{sum(s.confusion for s in every):.1f} s of {sum(s.total for s in every):.1f} s)  "
          f"speaker count right on {right} of {len(scores)}")
    missed_alone = sum(s.missed_alone for s in every)
    print(f"  of the missed: {missed_alone:.1f} s where one speaker spoke alone (speech never "
          f"detected or transcribed), {sum(s.missed for s in every) - missed_alone:.1f} s "
          f"a second voice over the first (one label a moment cannot cover it)")
    if args.oracle:
        oracle_reidentify(encoder, args.data, reference, config)
    else:
        reidentify(encoder, recordings, reference, results, config, args.explain)
    audio_s = sum(r.duration for r in results.values())
    busy_s = sum(r.seconds for r in results.values())
    cpu_s = sum(r.cpu_seconds for r in results.values())
    print(f"RTF {busy_s / audio_s:.3f} ({busy_s:.1f} s for {audio_s:.0f} s of audio; {machine()})")
    # CPU time does not grow with other processes' load the way wall time does: CPU seconds
    # per audio second bound the real-time factor on one free core
    print(f"CPU time per audio second {cpu_s / audio_s:.3f} ({cpu_s:.1f} CPU s, all threads)")
    if args.speech != "reference":
        vad_s = sum(r.vad_cpu_seconds for r in recordings.values())
        print(f"the VAD ({args.detect}): CPU time per audio second {vad_s / audio_s:.4f}")


def explain(reference: Sequence[Turn], result: Result, s: FileScore) -> None:
    """Where one file's error is: missed speech alone or in overlap, and which reference
    speakers each label found holds (a speaker split over labels, two merged into one)."""
    print(f"       missed alone {s.missed_alone:.1f} s, in overlap {s.missed - s.missed_alone:.1f}"
          f" s; speech / alone: " + ", ".join(
              f"{who} {speech:.1f} / {alone:.1f} s"
              for who, (speech, alone) in alone_time(reference).items()))
    for label, held in overlap_matrix(reference, result.hypothesis).items():
        seconds = sum(e - b for b, e, w in result.hypothesis if w == label)
        print(f"       {label} ({seconds:.1f} s): " + ", ".join(
            f"{who} {t:.1f}" for who, t in sorted(held.items(), key=lambda x: -x[1]) if t >= 0.05))


def reidentify(encoder: WindowEmbedder, recordings: dict[str, Recording],
               reference: dict[str, list[Turn]], results: dict[str, Result],
               config: DiarizeConfig, why: bool = False) -> None:
    """Name the voices of the first file of each pair after the reference speakers they map to;
    count the shared speakers whose speech in the second file mostly carries their name
    (``why``: what each named voice holds, and why a shared speaker is not recognised)."""
    from pyannote.metrics.diarization import DiarizationErrorRate

    metric = DiarizationErrorRate(collar=2 * COLLAR_EACH_SIDE_S, skip_overlap=False)
    totals: dict[bool, list[int]] = {True: [0, 0, 0], False: [0, 0, 0]}  # hits, shared, wrong
    for k, (first, second) in enumerate(PAIRS):
        a = results[first]
        mapping = metric.optimal_mapping(_annotation(reference[first]), _annotation(a.hypothesis))
        named = [
            NamedVoice(i, mapping[v.label], v.centroid)
            for i, v in enumerate(a.voices.voices)
            if v.label in mapping
        ]
        b = diarize(encoder, recordings[second], config, named)
        shared = sorted({t[2] for t in reference[first]} & {t[2] for t in reference[second]})
        hits = [s for s in shared if recognised(reference[second], b.hypothesis, s)]
        wrong = misnamed(reference[second], b.hypothesis, {n.name for n in named})
        named_shared = [s for s in shared if s in {n.name for n in named}]
        for i, count in enumerate((len(hits), len(shared), len(wrong))):
            totals[k < 2][i] += count
        print(
            f"re-identification {first} -> {second}: {len(hits)} of {len(shared)} shared "
            f"speakers ({len(named_shared)} named in {first}): {', '.join(hits) or '-'}; "
            f"a name on someone else: {', '.join(wrong) or 'none'}"
        )
        if why:
            explain_names(reference[first], a, named, reference[second], b, shared,
                          config.named_voice)
    for issue, (hits_n, shared_n, wrong_n) in totals.items():
        print(f"re-identification, {'the issue' if issue else 'other'} pairs: {hits_n} of "
              f"{shared_n}, {wrong_n} name(s) on someone else")


def explain_names(reference_a: Sequence[Turn], a: Result, named: Sequence[NamedVoice],
                  reference_b: Sequence[Turn], b: Result, shared: Sequence[str],
                  threshold: float) -> None:
    """What each voice named in the first file holds (its seconds, and whose speech they are),
    and for each shared speaker the voice of the second file that holds most of their speech,
    its likeness to the speaker's named voiceprint against ``threshold`` (``named_voice``)."""
    held_a = overlap_matrix(reference_a, a.hypothesis)
    for n in named:
        voice = a.voices.voices[n.id]  # the bench names voice k with id k
        held = held_a.get(voice.label, {})
        total = sum(held.values())
        print(f"       named {n.name} ({voice.label}): {voice.seconds:.1f} s of voice, "
              f"holding " + ", ".join(
                  f"{who} {100 * t / total:.0f}%" for who, t in
                  sorted(held.items(), key=lambda x: -x[1]) if total and t >= 0.05))
    held_b = overlap_matrix(reference_b, b.hypothesis)
    prints = {n.name: n.voiceprint for n in named}
    for who in shared:
        under = {label: seconds[who] for label, seconds in held_b.items() if seconds[who] > 0}
        if not under:
            print(f"       {who} in the second file: under no label (not transcribed)")
            continue
        label = max(under, key=lambda k: under[k])
        found = b.voices.find(label)
        centroid = None if found is None else found.centroid
        likeness = ", ".join(f"{name} {float(p @ centroid):.2f}" for name, p in prints.items()
                             ) if centroid is not None else "-"
        mine = ("no voiceprint (not a voice of its own in the first file)" if who not in prints
                else f"its print {float(prints[who] @ centroid):.2f} against {threshold}"
                if centroid is not None else "")
        print(f"       {who} in the second file: {under[label]:.1f} s under {label} "
              f"({'; '.join(f'{k} {v:.1f} s' for k, v in under.items() if k != label) or 'only'}"
              f"); {mine}; that voice to each print: {likeness}")


def speaker_prints(turns: Sequence[Turn], starts_s: Sequence[float], embeddings: Vectors,
                   least: float = 0.5) -> dict[str, tuple[Vectors, int]]:
    """Each reference speaker's voiceprint as a perfect diarisation would give it: the sum of
    the windows (at ``starts_s``, ``WINDOW_S`` long) they fill at least ``least`` of, each
    weighted by the seconds of theirs it holds, normed; with the number of those windows."""
    prints: dict[str, tuple[Vectors, int]] = {}
    for who in sorted({t[2] for t in turns}):
        held = [talk_time(turns, who, s, s + WINDOW_S) for s in starts_s]
        picked = [k for k, t in enumerate(held) if t >= least * WINDOW_S]
        if picked:
            total = np.sum([embeddings[k] * held[k] for k in picked], axis=0)
            prints[who] = ((total / np.linalg.norm(total)).astype(np.float32), len(picked))
    return prints


def nearest_print(prints: dict[str, Vectors], voice: Vectors) -> tuple[str, float]:
    """The print most like ``voice`` (cosine), and how alike."""
    likeness = {who: float(p @ voice) for who, p in prints.items()}
    best = max(likeness, key=lambda k: likeness[k])
    return best, likeness[best]


def oracle_reidentify(encoder: WindowEmbedder, data: Path, reference: dict[str, list[Turn]],
                      config: DiarizeConfig) -> None:
    """The ceiling of re-identification with this encoder: every reference speaker's print
    from their own windows in both files of a pair (:func:`speaker_prints`, the whole file
    embedded every ``hop_s``); a shared speaker is recognised when the first file's print most
    like their print in the second is their own and at least ``named_voice`` alike."""
    prints: dict[str, dict[str, tuple[Vectors, int]]] = {}
    for name in sorted({f for pair in PAIRS for f in pair}):
        audio = normalize_volume(load_audio_channels(data / f"{name}.wav").mean(axis=0)
                                 .astype(np.float32))
        starts = window_starts(len(audio), config.hop_s)
        prints[name] = speaker_prints(reference[name], [s * HOP / SAMPLE_RATE for s in starts],
                                      encoder.embed_windows(audio, starts))
    for first, second in PAIRS:
        a = {who: p for who, (p, _) in prints[first].items()}
        shared = sorted({t[2] for t in reference[first]} & {t[2] for t in reference[second]})
        hits = []
        for who in shared:
            if who not in prints[second] or not a:
                print(f"  {who}: no window of theirs in {second if a else first}")
                continue
            vector, windows = prints[second][who]
            best, likeness = nearest_print(a, vector)
            own = f"{float(a[who] @ vector):.2f}" if who in a else "no print"
            if best == who and likeness >= config.named_voice:
                hits.append(who)
            print(f"  {who} in {second} ({windows} windows, in {first} "
                  f"{prints[first][who][1] if who in prints[first] else 0}): nearest {first} "
                  f"print {best} {likeness:.2f}, their own {own}")
        print(f"oracle re-identification {first} -> {second}: {len(hits)} of {len(shared)}: "
              f"{', '.join(hits) or '-'}")


def misnamed(reference: Sequence[Turn], hypothesis: Sequence[Turn], names: set[str]
             ) -> list[str]:
    """The names in ``hypothesis`` whose speech is mostly someone else's in ``reference``."""
    wrong = []
    for name in sorted(names & {h[2] for h in hypothesis}):
        heard: dict[str, float] = defaultdict(float)
        for s, e, who in hypothesis:
            if who == name:
                for speaker in {t[2] for t in reference}:
                    heard[speaker] += talk_time(reference, speaker, s, e)
        if heard and max(heard, key=lambda k: heard[k]) != name:
            wrong.append(name)
    return wrong

if __name__ == "__main__":
    main()

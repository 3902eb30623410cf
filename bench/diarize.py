"""Speaker diarisation figures on real meeting audio (AMI excerpts with an RTTM reference).

    .venv/bin/python -m bench.diarize --data ../shared/audio/ami-excerpts [--models DIR]
                                      [--hop 0.4 --change 0.75 --same 0.78 --named 0.80]

Each file goes through what `braincue import` of a mono file does: the daemon's VAD cuts it
into utterances, and :class:`daemon.voices.diarize.SessionVoices` labels them ("Them 1", ...)
as one session. Printed:

- the diarisation error rate per file and overall (missed + false alarm + confusion over the
  reference speech time, overlapping speech included, a 0.25 s collar on each side of every
  reference boundary) — computed by pyannote.metrics (``pip install pyannote.metrics``, a
  bench-only dependency), with its components;
- the number of speakers found against the reference, and on how many files it is right;
- re-identification across sessions: in the excerpt pairs that share speakers, every voice of
  the first file is named after the reference speaker it maps to (the optimal mapping) and its
  voiceprint kept, as `braincue voices name` does; in the second file a shared speaker is
  recognised when most of their reference speech carries their name;
- the real-time factor of embedding and labelling (the VAD excluded), with the load average,
  and the CPU time per audio second (which a busy machine inflates far less).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the daemon runs numpy (daemon/__main__)

import argparse
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.common import default_models_dir, machine
from daemon.audio.files import load_audio_channels
from daemon.audio.format import SAMPLE_RATE
from daemon.audio.pipeline import segment_tracks
from daemon.models.registry import resolve_model
from daemon.voices.diarize import DiarizeConfig, NamedVoice, SessionVoices
from daemon.voices.encoder import VoiceEncoder

PAIRS = (("trn07", "trn08"), ("dev00", "dev01"))
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


def diarize(
    encoder: VoiceEncoder,
    path: Path,
    config: DiarizeConfig,
    named: Sequence[NamedVoice] = (),
    speech: Sequence[tuple[float, float]] | None = None,
) -> Result:
    """Label ``path`` as one session: utterances from the daemon's VAD, or ``speech``."""
    audio = load_audio_channels(path).mean(axis=0).astype(np.float32)
    utterances = (
        [(u.start, u.audio) for _, u in segment_tracks([("them", audio)])]
        if speech is None
        else [(s, audio[int(s * SAMPLE_RATE) : int(e * SAMPLE_RATE)]) for s, e in speech]
    )
    voices = SessionVoices(config, named)
    hypothesis: list[Turn] = []
    began, cpu_began = time.perf_counter(), time.process_time()
    for start, samples in utterances:
        for piece in voices.label_utterance(encoder, samples):
            hypothesis.append((start + piece.start, start + piece.end, piece.label))
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu_began
    return Result(path.stem, len(audio) / SAMPLE_RATE, hypothesis, voices, seconds, cpu)


def _annotation(turns: Sequence[Turn]):  # type: ignore[no-untyped-def]
    from pyannote.core import Annotation, Segment

    annotation = Annotation()
    for i, (start, end, who) in enumerate(turns):
        annotation[Segment(start, end), i] = who
    return annotation


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/audio/ami-excerpts"))
    parser.add_argument("--models", type=Path, default=None)
    defaults = DiarizeConfig()
    parser.add_argument("--hop", type=float, default=defaults.hop_s)
    parser.add_argument("--change", type=float, default=defaults.change_below)
    parser.add_argument("--min-piece", type=float, default=defaults.min_piece_s)
    parser.add_argument("--same", type=float, default=defaults.same_voice)
    parser.add_argument("--named", type=float, default=defaults.named_voice)
    parser.add_argument("--speech", choices=("vad", "reference"), default="vad",
                        help="utterances from the daemon's VAD (what an import does), or the "
                             "reference's speech (the voices alone)")
    args = parser.parse_args(argv)
    try:
        from pyannote.metrics.diarization import DiarizationErrorRate
    except ImportError:
        parser.error("needs pyannote.metrics (bench only): .venv/bin/pip install pyannote.metrics")
    config = DiarizeConfig(
        hop_s=args.hop,
        change_below=args.change,
        min_piece_s=args.min_piece,
        same_voice=args.same,
        named_voice=args.named,
    )
    models = args.models or default_models_dir()
    encoder = VoiceEncoder.load(resolve_model("voice", "", models))
    reference = read_rttm((args.data / "reference.rttm").read_text())
    # pyannote's collar is the whole width removed around a boundary
    metric = DiarizationErrorRate(collar=2 * COLLAR_EACH_SIDE_S, skip_overlap=False)
    results: dict[str, Result] = {}
    right = 0
    print(f"config: {config}, utterances from {args.speech}")
    print(f"{'file':6} {'DER':>6} {'miss':>6} {'FA':>6} {'conf':>6} {'spk':>4} {'ref':>4}")
    for name in sorted(reference):
        speech = None if args.speech == "vad" else speech_spans(reference[name])
        result = diarize(encoder, args.data / f"{name}.wav", config, speech=speech)
        results[name] = result
        ref, hyp = _annotation(reference[name]), _annotation(result.hypothesis)
        parts = metric(ref, hyp, detailed=True)
        total = parts["total"]
        found = len({t[2] for t in result.hypothesis})
        truth = len({t[2] for t in reference[name]})
        right += found == truth
        print(
            f"{name:6} {100 * parts['diarization error rate']:5.1f}% "
            f"{100 * parts['missed detection'] / total:5.1f}% "
            f"{100 * parts['false alarm'] / total:5.1f}% "
            f"{100 * parts['confusion'] / total:5.1f}% {found:4d} {truth:4d}"
        )
    print(f"overall DER {100 * abs(metric):.1f}%  speaker count right on {right} of {len(results)}")

    found_total = shared_total = 0
    for first, second in PAIRS:
        a = results[first]
        mapping = metric.optimal_mapping(_annotation(reference[first]), _annotation(a.hypothesis))
        named = [
            NamedVoice(i, mapping[v.label], v.centroid)
            for i, v in enumerate(a.voices.voices)
            if v.label in mapping
        ]
        speech = None if args.speech == "vad" else speech_spans(reference[second])
        b = diarize(encoder, args.data / f"{second}.wav", config, named, speech)
        shared = sorted({t[2] for t in reference[first]} & {t[2] for t in reference[second]})
        hits = [s for s in shared if recognised(reference[second], b.hypothesis, s)]
        named_shared = [s for s in shared if s in {n.name for n in named}]
        found_total += len(hits)
        shared_total += len(shared)
        print(
            f"re-identification {first} -> {second}: {len(hits)} of {len(shared)} shared "
            f"speakers ({len(named_shared)} named in {first}): {', '.join(hits) or '-'}"
        )
    print(f"re-identification overall: {found_total} of {shared_total}")
    audio_s = sum(r.duration for r in results.values())
    busy_s = sum(r.seconds for r in results.values())
    cpu_s = sum(r.cpu_seconds for r in results.values())
    print(f"RTF {busy_s / audio_s:.3f} ({busy_s:.1f} s for {audio_s:.0f} s of audio; {machine()})")
    # CPU time does not grow with other processes' load the way wall time does: CPU seconds
    # per audio second bound the real-time factor on one free core
    print(f"CPU time per audio second {cpu_s / audio_s:.3f} ({cpu_s:.1f} CPU s, all threads)")


if __name__ == "__main__":
    main()

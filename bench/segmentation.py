"""Who the segmentation model hears on real meeting audio (AMI excerpts with an RTTM reference).

    .venv/bin/python -m bench.segmentation --data AMI_DIR [--models DIR]
        [--step 5] [--min-active 0.3] [--threshold P]

pyannote segmentation-3.0 (``daemon.voices.segmentation``) runs over 10 s chunks every
``--step`` seconds of each file and says, per 17 ms frame, which of three local speakers of the
chunk speak (at most two at once): the most likely powerset class's speakers, or with
``--threshold`` each local speaker whose probability (``speaker_probs``) reaches it. Printed
per file, against the reference:

- ``speakers``: reference speakers, and how many of them the model finds: a reference speaker is
  found when, in some chunk, the local speaker that best matches them (the assignment of local
  speakers to reference speakers that maximises the frames both speak in) speaks with them for
  at least ``--min-active`` seconds; ``alone<1s``: reference speakers with under 1 s of speech
  nobody speaks over (one voice per moment cannot find them); ``missed``: each speaker not
  found, with their speech and alone seconds;
- ``local max``: the most local speakers active for at least ``--min-active`` s in one chunk,
  beside the reference's most in one chunk; ``chunks ok``: chunks whose local count is the
  reference's (at most 3);
- ``overlap``: seconds of reference frames with two or more speakers, of model frames with two,
  and the model's recall and precision of overlapped frames (each chunk's frames counted, so
  time under two chunks counts twice in both).

Then the CPU time per audio second with one BLAS thread (as the daemon runs numpy): the
file's chunks as one batch, and one chunk at a time (as a live stream would: every new
``--step`` seconds one chunk), with the load average.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the daemon runs numpy (daemon/__main__)

import argparse
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.common import default_models_dir, machine
from bench.diarize import Turn, alone_time, read_rttm
from daemon.audio.files import load_audio_channels
from daemon.models.registry import resolve_model
from daemon.voices.segmentation import (
    CHUNK_SAMPLES,
    FRAME_DURATION,
    FRAME_START,
    FRAME_STEP,
    SAMPLE_RATE,
    Segmenter,
    activity,
    num_frames,
    speaker_probs,
)

CHUNK_S = CHUNK_SAMPLES / SAMPLE_RATE
Active = npt.NDArray[np.bool_]


def chunk_starts(duration_s: float, step_s: float) -> list[float]:
    """Starts of the 10 s chunks every ``step_s`` that fit, and one ending at the end when the
    last of them stops more than a frame step before it (pyannote's sliding window, less its
    chunk for a last sample or two)."""
    if duration_s <= CHUNK_S:
        return [0.0]
    starts = [i * step_s for i in range(int((duration_s - CHUNK_S) // step_s) + 1)]
    if starts[-1] + CHUNK_S < duration_s - FRAME_STEP:
        starts.append(duration_s - CHUNK_S)
    return starts


def frame_centres(start_s: float) -> npt.NDArray[np.float64]:
    """The time at the centre of each frame of the chunk starting at ``start_s``."""
    frames = np.arange(num_frames(CHUNK_SAMPLES), dtype=np.float64)
    first = start_s + FRAME_START + FRAME_DURATION / 2
    centres: npt.NDArray[np.float64] = first + FRAME_STEP * frames
    return centres


def reference_activity(turns: Sequence[Turn], speakers: Sequence[str],
                       times: npt.NDArray[np.float64]) -> Active:
    """``(len(times), len(speakers))``: who speaks at each time."""
    active = np.zeros((len(times), len(speakers)), bool)
    for start, end, who in turns:
        active[(times >= start) & (times < end), speakers.index(who)] = True
    return active


def best_match(reference: Active, local: Active) -> dict[int, int]:
    """Reference speaker -> local speaker, the one-to-one assignment that maximises the frames
    both speak in (pairs that never speak together left out)."""
    together = reference.T.astype(np.int64) @ local.astype(np.int64)  # (refs, locals)
    n_ref, n_local = together.shape
    best: tuple[int, dict[int, int]] = (-1, {})
    size = min(n_ref, n_local)
    for refs in itertools.combinations(range(n_ref), size):
        for locals_ in itertools.permutations(range(n_local), size):
            total = sum(int(together[r, k]) for r, k in zip(refs, locals_, strict=True))
            if total > best[0]:
                pairs = {r: k for r, k in zip(refs, locals_, strict=True) if together[r, k]}
                best = (total, pairs)
    return best[1]


@dataclass
class FileFigures:
    name: str
    speakers: int
    found: int
    barely_alone: int
    local_max: int
    reference_max: int
    chunks_ok: int
    chunks: int
    overlap_reference_s: float
    overlap_model_s: float
    overlap_hit_s: float
    missed: list[str]  # "SPEAKER speech s/alone s" of those not found


def file_figures(name: str, turns: Sequence[Turn], starts: Sequence[float], local: Active,
                 min_active_s: float) -> FileFigures:
    """The figures of one file from the model's ``local`` activity ``(chunks, frames, 3)``."""
    speakers = sorted({who for _, _, who in turns})
    need = min_active_s / FRAME_STEP
    found: set[int] = set()
    local_max = reference_max = chunks_ok = 0
    overlap_ref = overlap_model = overlap_hit = 0
    for start, chunk in zip(starts, local, strict=True):
        reference = reference_activity(turns, speakers, frame_centres(start))
        n_local = int((chunk.sum(axis=0) >= need).sum())
        n_reference = int((reference.sum(axis=0) >= need).sum())
        local_max, reference_max = max(local_max, n_local), max(reference_max, n_reference)
        chunks_ok += n_local == min(n_reference, chunk.shape[1])
        for r, k in best_match(reference, chunk).items():
            if (reference[:, r] & chunk[:, k]).sum() >= need:
                found.add(r)
        ref_two, model_two = reference.sum(axis=1) >= 2, chunk.sum(axis=1) >= 2
        overlap_ref += int(ref_two.sum())
        overlap_model += int(model_two.sum())
        overlap_hit += int((ref_two & model_two).sum())
    alone = alone_time(turns)
    missed = [f"{who} {alone[who][0]:.1f}/{alone[who][1]:.1f} s"
              for i, who in enumerate(speakers) if i not in found]
    return FileFigures(
        name, len(speakers), len(found), sum(a < 1.0 for _, a in alone.values()), local_max,
        reference_max, chunks_ok, len(starts), overlap_ref * FRAME_STEP,
        overlap_model * FRAME_STEP, overlap_hit * FRAME_STEP, missed)


def _ratio(part: float, whole: float) -> str:
    return f"{part / whole:6.0%}" if whole else "     -"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.segmentation",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True,
                        help="folder of the excerpts (*.wav) and reference.rttm")
    parser.add_argument("--models", type=Path, default=None, help="models directory")
    parser.add_argument("--step", type=float, default=5.0, help="seconds between chunks")
    parser.add_argument("--min-active", type=float, default=0.3,
                        help="seconds a speaker must speak in a chunk to count")
    parser.add_argument("--threshold", type=float, default=None,
                        help="a local speaker speaks where their probability reaches this "
                        "(default: the most likely class's speakers)")
    args = parser.parse_args(argv)
    models = args.models or default_models_dir()
    model = Segmenter.load(resolve_model("segmentation", "", models))
    reference = read_rttm((args.data / "reference.rttm").read_text())
    rows: list[FileFigures] = []
    batch_cpu = single_cpu = audio_s = 0.0
    single_chunks = 0
    print(f"{'file':6} {'speakers':>8} {'found':>5} {'alone<1s':>8} {'local max':>9} "
          f"{'ref max':>7} {'chunks ok':>9} {'ovl ref s':>9} {'ovl model s':>11} "
          f"{'recall':>6} {'precision':>9}")
    for wav in sorted(args.data.glob("*.wav")):
        name = wav.stem
        if name not in reference:
            continue
        audio = load_audio_channels(wav)[0]
        duration = len(audio) / SAMPLE_RATE
        starts = chunk_starts(duration, args.step)
        chunks = np.stack([
            np.pad(piece, (0, CHUNK_SAMPLES - len(piece)))
            for piece in (audio[round(s * SAMPLE_RATE) :][:CHUNK_SAMPLES] for s in starts)
        ]).astype(np.float32)
        began = time.process_time()
        log_probs = model.log_probs(chunks)
        batch_cpu += time.process_time() - began
        began = time.process_time()
        model.log_probs(chunks[0])
        single_cpu += time.process_time() - began
        single_chunks += 1
        audio_s += duration
        local = (activity(log_probs).astype(bool) if args.threshold is None
                 else speaker_probs(log_probs) >= args.threshold)
        figures = file_figures(name, reference[name], starts, local, args.min_active)
        rows.append(figures)
        f = figures
        print(f"{f.name:6} {f.speakers:8} {f.found:5} {f.barely_alone:8} {f.local_max:9} "
              f"{f.reference_max:7} {f.chunks_ok:5}/{f.chunks:<3} {f.overlap_reference_s:9.1f} "
              f"{f.overlap_model_s:11.1f} {_ratio(f.overlap_hit_s, f.overlap_reference_s)} "
              f"{_ratio(f.overlap_hit_s, f.overlap_model_s):>9}"
              + (f"  missed {', '.join(f.missed)}" if f.missed else ""))
    if not rows:
        raise SystemExit(f"no excerpt of {args.data} is in its reference.rttm")
    all_found = sum(r.found == r.speakers for r in rows)
    hard = [r for r in rows if r.barely_alone]
    print(f"\nspeakers found: {sum(r.found for r in rows)} of {sum(r.speakers for r in rows)}; "
          f"every speaker found in {all_found} of {len(rows)} files "
          f"({sum(r.found == r.speakers for r in hard)} of the {len(hard)} files where a speaker "
          f"has under 1 s alone)")
    print(f"chunks whose local speaker count is the reference's: "
          f"{sum(r.chunks_ok for r in rows)} of {sum(r.chunks for r in rows)}")
    ref_s, model_s = sum(r.overlap_reference_s for r in rows), sum(r.overlap_model_s for r in rows)
    hit = sum(r.overlap_hit_s for r in rows)
    print(f"overlapped frames: reference {ref_s:.1f} s, model {model_s:.1f} s, "
          f"recall{_ratio(hit, ref_s)}, precision{_ratio(hit, model_s)}")
    print(f"CPU s per audio s (one BLAS thread, {args.step:g} s step): "
          f"{batch_cpu / audio_s:.4f} with each file's chunks batched; "
          f"{single_cpu / single_chunks / args.step:.4f} one chunk at a time "
          f"({single_cpu / single_chunks:.3f} s a chunk); {machine()}")


if __name__ == "__main__":
    main()

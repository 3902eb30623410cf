"""Fit when a heard voice is given a known name, by cross-validation over speakers, and write
the thresholds the daemon reads (``daemon/voices/naming-v1.json`` and its sha256).

    .venv/bin/python -m bench.voices_margin --data DIR [--seed N] [--calls 24]
        [--minutes 3 5] [--cache FILE] [--write]

The calls are built as `bench.voices` builds them (``--seed`` other than the benchmark's),
and the "them" channel of each goes through what the daemon's voices do after the speech
model: the VAD's utterances, each cut where the voice changes and its pieces grouped into the
call's voices (``SessionVoices``, the installed encoder and its thresholds; whisper only
decides which words go to which piece, not the voices). Each session voice at the end of its
call is kept with its centroid, its speech and the reference speakers under it (``--cache``
keeps them between runs).

A speaker's print is the voice holding most of their speech in the first call they speak in,
as `braincue voices name` would make it. A voice is then named after the print most like it
when it was heard for ``name_after_s``, is ``named_voice`` alike to it and ``name_ahead_by``
more alike to it than to any other print. The cost of a rule: the named speakers' speech left
unnamed, plus ``--weight`` (10) times the speech given a name not its speaker's — a stranger
given a known name is the error that costs trust.

Cross-validation leaves speakers out: in each fold two speakers are held out; the rule is
chosen on the others (every way of naming half of them), then scored on the held-out
speakers' voices, both named (with half of the others) and strangers. The thresholds written
are the median of the folds' choices; the offered name's threshold (``suggest_voice``) is
chosen the same way with a wrong name costing as much as a missed one (and, of equal costs,
the lowest), never above the naming one.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import itertools
import json
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import default_models_dir, machine
from bench.voices import Call, build_calls, load_speakers, overlap
from daemon.audio.silero import installed_speech_model
from daemon.audio.vad import VadConfig
from daemon.live.pipeline import segment_tracks
from daemon.models.registry import pick_installed
from daemon.voices import naming
from daemon.voices.diarize import SessionVoices
from daemon.voices.service import ENCODERS

NAMED = np.round(np.arange(0.30, 0.851, 0.025), 3)
AHEAD = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25)
AFTER = (0.0, 4.0, 8.0, 16.0)


@dataclass(frozen=True)
class Heard:
    """A session voice at the end of its call."""

    call: int
    centroid: np.ndarray
    seconds: float
    speech: dict[str, float]  # reference speaker -> seconds of theirs under this voice

    @property
    def main(self) -> str:
        return max(self.speech, key=lambda k: self.speech[k])


def heard_voices(calls: Sequence[Call], models: Path) -> tuple[list[Heard], str]:
    voice = pick_installed("voice", models, "")
    model = ENCODERS[voice.name]
    encoder = model.load(models / voice.filename)
    vad = VadConfig(speech_model=installed_speech_model(models))
    found: list[Heard] = []
    for call in calls:
        voices = SessionVoices(model.config, ())
        spans: list[tuple[float, float, str]] = []
        for _, utterance in segment_tracks([("them", call.right)], vad):
            for piece in voices.label_utterance(encoder, utterance.audio):
                spans.append((utterance.start + piece.start, utterance.start + piece.end,
                              piece.voice))
            merged = voices.merge_alike()
            spans = [(s, e, merged[v].session_label if v in merged else v) for s, e, v in spans]
        reference = call.reference()
        for v in voices.voices:
            speech: dict[str, float] = defaultdict(float)
            for s, e, label in spans:
                if label == v.session_label:
                    for r in reference:
                        speech[r.speaker] += overlap(s, e, r.start, r.end)
            if sum(speech.values()) > 0:
                found.append(Heard(call.index, v.centroid, v.seconds, dict(speech)))
        print(f"call {call.index}: {len(call.them)} spoke, {len(voices.voices)} voices",
              flush=True)
    return found, voice.name


@dataclass(frozen=True)
class Rule:
    named_voice: float
    name_ahead_by: float
    name_after_s: float


@dataclass
class Tally:
    named_speech: float = 0.0  # named speakers' speech
    named_right: float = 0.0  # ... shown with their name
    speech: float = 0.0
    wrong: float = 0.0  # speech shown with a name not its speaker's
    stranger_wrong: float = 0.0

    def cost(self, weight: float) -> float:
        return (self.named_speech - self.named_right) + weight * self.wrong

    def add(self, other: Tally) -> None:
        for k in vars(self):
            setattr(self, k, getattr(self, k) + getattr(other, k))


def judge(voices: Sequence[Heard], prints: dict[str, np.ndarray], rule: Rule) -> Tally:
    tally = Tally()
    names = sorted(prints)
    matrix = np.stack([prints[n] for n in names]) if names else np.zeros((0, 1))
    for v in voices:
        given = None
        if names and v.seconds >= rule.name_after_s:
            sims = matrix @ v.centroid
            order = np.argsort(-sims)
            best = float(sims[order[0]])
            second = float(sims[order[1]]) if len(order) > 1 else -1.0
            if best >= rule.named_voice and best - second >= rule.name_ahead_by:
                given = names[order[0]]
        for speaker, seconds in v.speech.items():
            tally.speech += seconds
            if speaker in prints:
                tally.named_speech += seconds
                tally.named_right += seconds if given == speaker else 0.0
            if given is not None and given != speaker:
                tally.wrong += seconds
                tally.stranger_wrong += seconds if speaker not in prints else 0.0
    return tally


def prints_of(voices: Sequence[Heard], calls: Sequence[Call]) -> tuple[dict[str, np.ndarray],
                                                                       set[int]]:
    """Each speaker's print (the voice with most of their speech in their first call), and the
    calls that made a print (not scored)."""
    prints: dict[str, np.ndarray] = {}
    naming_calls: set[int] = set()
    for speaker in sorted({s for c in calls for s in c.them}):
        first = next(c for c in calls if speaker in c.them)
        mine = [v for v in voices if v.call == first.index and speaker in v.speech]
        if mine:
            prints[speaker] = max(mine, key=lambda v: v.speech[speaker]).centroid
            naming_calls.add(first.index)
    return prints, naming_calls


def halves(speakers: Sequence[str], most: int, rng: np.random.Generator) -> list[tuple[str, ...]]:
    every = list(itertools.combinations(speakers, len(speakers) // 2))
    if len(every) > most:
        every = [every[i] for i in rng.choice(len(every), most, replace=False)]
    return every


def choose(voices: Sequence[Heard], prints: dict[str, np.ndarray], speakers: Sequence[str],
           rules: Sequence[Rule], weight: float, rng: np.random.Generator) -> Rule:
    """The rule of least cost over the ways of naming half of ``speakers``, judged on their
    voices only; of equal costs, the strictest when a wrong name costs more than a miss (to
    name), else the most lenient (to offer a name)."""
    mine = [v for v in voices if v.main in speakers]
    enrolments = halves(speakers, 20, rng)
    costs = []
    for rule in rules:
        total = Tally()
        for named in enrolments:
            total.add(judge(mine, {s: prints[s] for s in named}, rule))
        costs.append((total.cost(weight),
                      -rule.named_voice if weight > 1 else rule.named_voice, rule))
    return min(costs, key=lambda c: (c[0], c[1]))[2]


def cross_validate(voices: Sequence[Heard], prints: dict[str, np.ndarray],
                   rules: Sequence[Rule], weight: float, seed: int
                   ) -> tuple[list[Rule], Tally, Tally]:
    """The rule chosen in each fold, and the held-out tallies (named, strangers)."""
    rng = np.random.default_rng(seed)
    speakers = sorted(prints)
    order = [str(s) for s in rng.permutation(speakers)]
    folds = [order[i:i + 2] for i in range(0, len(order), 2)]
    chosen, as_named, as_strangers = [], Tally(), Tally()
    for held in folds:
        rest = [s for s in speakers if s not in held]
        rule = choose([v for v in voices if all(s not in held for s in v.speech)], prints, rest,
                      rules, weight, rng)
        chosen.append(rule)
        theirs = [v for v in voices if v.main in held]
        for others in halves(rest, 10, rng):
            as_named.add(judge(theirs, {s: prints[s] for s in [*held, *others]}, rule))
            as_strangers.add(judge(theirs, {s: prints[s] for s in others}, rule))
        print(f"held out {', '.join(held)}: {rule}", flush=True)
    return chosen, as_named, as_strangers


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--models", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=100, help="the calls fitted on")
    parser.add_argument("--calls", type=int, default=24)
    parser.add_argument("--minutes", type=float, nargs=2, default=(3.0, 5.0))
    parser.add_argument("--weight", type=float, default=10.0,
                        help="what a second of speech given a wrong name costs, in seconds of "
                             "a named speaker's speech left unnamed")
    parser.add_argument("--cache", type=Path, default=None, help="keeps the calls' voices")
    parser.add_argument("--write", action="store_true",
                        help="write the thresholds to the daemon's data file")
    args = parser.parse_args(argv)
    models = args.models or default_models_dir()
    calls = build_calls(load_speakers(args.data), args.calls, tuple(args.minutes), args.seed)
    if args.cache is not None and args.cache.exists():
        saved = np.load(args.cache, allow_pickle=False)
        meta = json.loads(str(saved["meta"]))
        voices = [Heard(m["call"], saved["centroids"][i], m["seconds"], m["speech"])
                  for i, m in enumerate(meta["voices"])]
        model_name = meta["model"]
    else:
        voices, model_name = heard_voices(calls, models)
        if args.cache is not None:
            meta = {"model": model_name, "voices": [
                {"call": v.call, "seconds": v.seconds, "speech": v.speech} for v in voices]}
            np.savez(args.cache, centroids=np.stack([v.centroid for v in voices]),
                     meta=np.array(json.dumps(meta)))
    model_id = ENCODERS[model_name].model_id
    prints, naming_calls = prints_of(voices, calls)
    scored = [v for v in voices if v.call not in naming_calls]
    rules = [Rule(float(n), a, s) for n in NAMED for a in AHEAD for s in AFTER]
    chosen, as_named, as_strangers = cross_validate(scored, prints, rules, args.weight,
                                                    args.seed)
    fitted = Rule(statistics.median(r.named_voice for r in chosen),
                  statistics.median(r.name_ahead_by for r in chosen),
                  statistics.median(r.name_after_s for r in chosen))
    offered, _, _ = cross_validate(scored, prints, [Rule(float(n), 0.0, 0.0) for n in NAMED],
                                   1.0, args.seed)
    suggest = min(statistics.median(r.named_voice for r in offered), fitted.named_voice)
    recall = as_named.named_right / max(as_named.named_speech, 1e-9)
    wrong = (as_named.wrong + as_strangers.wrong) / max(as_named.speech + as_strangers.speech,
                                                        1e-9)
    stranger = as_strangers.stranger_wrong / max(as_strangers.speech, 1e-9)
    print(f"{len(voices)} voices of {len(calls)} calls ({len(scored)} scored), {model_id}: "
          f"named at {fitted.named_voice:.3f}, ahead by {fitted.name_ahead_by:.2f}, after "
          f"{fitted.name_after_s:.0f} s; offered at {suggest:.3f}. Held out: named speakers' "
          f"speech named {recall:.1%}, speech given a wrong name {wrong:.2%}, a stranger's "
          f"speech named {stranger:.2%}; {machine()}")
    if args.write:
        data: dict[str, Any] = json.loads(naming.DATA.read_text()) if naming.DATA.exists() \
            else {"version": 1, "encoders": {}}
        data["encoders"][model_id] = {
            "named_voice": round(fitted.named_voice, 3),
            "name_ahead_by": round(fitted.name_ahead_by, 3),
            "name_after_s": round(fitted.name_after_s, 1),
            "suggest_voice": round(suggest, 3),
            "fitted": (f"python -m bench.voices_margin --data DIR --seed={args.seed} --calls "
                       f"{args.calls} --minutes {args.minutes[0]:g} {args.minutes[1]:g} "
                       f"--weight {args.weight:g}; {len(prints)} speakers, leaving two out "
                       f"per fold"),
            "held_out": {"named_recall": round(recall, 4), "wrong_name": round(wrong, 4),
                         "stranger_named": round(stranger, 4)},
        }
        text = json.dumps(data, indent=1, sort_keys=True) + "\n"
        naming.DATA.write_text(text)
        naming.DIGEST.write_text(f"{naming.digest(text.encode())}  {naming.DATA.name}\n")
        print(f"wrote {naming.DATA.name} and {naming.DIGEST.name}")


if __name__ == "__main__":
    main()

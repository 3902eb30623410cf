"""Training and measuring the turn detector (:mod:`daemon.memory.detect`).

    python -m bench.decision_detector cv [--data FILE]
    python -m bench.decision_detector train [--data FILE] [--write]
    python -m bench.decision_detector dev --dev QMSUM_DEV_DIR [--readers]

Examples: every labelled turn of the training set (``bench.decision_data``; an alignment
scoring under ``MIN_LABEL_SCORE`` is doubtful and left out) and ``NEGATIVES`` turns a meeting
drawn from those not within ``TOLERANCE`` turns of a label, each weighted for the turns not
drawn (embedding all 46,000 turns takes most of an hour on two busy cores; a turn's features
read only its own vector). ``cv`` leaves each series out in turn, fits the two heads on the
others and scores the series left out; the threshold of each head is the one with the best
F0.5 (precision counting twice) over the series left out.
``train`` fits on every training meeting and, with ``--write``, writes the weights and their
manifest (version, sha256, embedding model, the cross-validated thresholds) into the daemon's
data. ``dev`` runs the shipped detector on the dev meetings and scores the turns it finds
against the gold decisions' and action items' evidence turns (the same tolerance): never used
to fit or to choose anything. ``--readers`` scores the hand-written readers' turns the same
way.

The models are logistic regressions fitted by full-batch gradient descent (L2 penalty, the
positives weighing as much as the negatives), which numpy does in seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np

from bench.common import default_models_dir, machine
from bench.decision_data import DEFAULT_OUT, EMBED_MODEL, TrainMeeting, load, turn_vectors
from daemon.llm.embed import Embedder, LlamaEmbedder
from daemon.memory import detect
from daemon.memory.detect import HEADS, Turn
from daemon.models.registry import model_path

TOLERANCE = 2  # a found turn this close to a labelled one finds it
L2 = 300.0  # of the loss normalised to 1: ~500 features, ~170 positives
STEPS = 400
RATE = 0.5
WEIGHTS_NAME = "turn_detector.npz"
MIN_LABEL_SCORE = 0.55  # an alignment scoring less is doubtful: neither positive nor negative
NEGATIVES = 45  # turns of a meeting drawn as negatives (weighted for the others)
SEED = 52


@dataclass
class Examples:
    """The sampled turns of one meeting: features, and per head labels and weights (a
    sampled negative stands for the negatives not sampled; a turn close to a label of the head
    but not labelled weighs nothing: the alignment is approximate)."""

    meeting: str
    series: str
    x: np.ndarray
    y: dict[str, np.ndarray]
    w: dict[str, np.ndarray]


def examples(embedder: Embedder, m: TrainMeeting) -> Examples:
    at = {ref: i for i, ref in enumerate(m.refs)}
    rng = np.random.default_rng([SEED, *m.name.encode()])
    positive: dict[str, set[int]] = {h: set() for h in HEADS}
    near: dict[str, set[int]] = {h: set() for h in HEADS}
    for lab in m.labels:
        i = at[int(lab["ref"])]  # type: ignore[call-overload]
        head = str(lab["kind"])
        near[head].update(range(i - TOLERANCE, i + TOLERANCE + 1))
        if float(lab["score"]) >= MIN_LABEL_SCORE:  # type: ignore[arg-type]
            positive[head].add(i)
    labelled = set().union(*positive.values())
    close = set().union(*near.values())
    # drawn from all the turns (then those near a label left out), so that the draw and its
    # vectors stay the same when the labels change
    drawn = rng.choice(len(m.refs), size=min(NEGATIVES, len(m.refs)), replace=False)
    sampled = sorted(int(i) for i in drawn if int(i) not in close)
    pool = len(m.refs) - len(close & set(range(len(m.refs))))
    stands_for = pool / max(len(sampled), 1)
    rows = sorted(labelled | set(sampled))
    turns = [Turn(sp, t) for sp, t in zip(m.speakers, m.texts, strict=True)]
    x = detect.features(turns, turn_vectors(embedder, m.name, m.texts, only=rows))[rows]
    y, w = {}, {}
    for h in HEADS:
        y[h] = np.array([float(i in positive[h]) for i in rows], np.float32)
        w[h] = np.array([1.0 if i in positive[h] else 0.0 if i in near[h] else
                         stands_for if i in sampled else 1.0 for i in rows], np.float32)
    return Examples(m.name, m.series, x, y, w)


def fit(x: np.ndarray, y: np.ndarray, weight: np.ndarray, l2: float = L2
        ) -> tuple[np.ndarray, float]:
    """Weighted logistic regression, the positives weighing as much as the negatives in all."""
    pos = max(float((weight * y).sum()), 1.0)
    neg = max(float((weight * (1 - y)).sum()), 1.0)
    weight = (weight * np.where(y > 0, 0.5 / pos, 0.5 / neg)).astype(np.float32)
    w = np.zeros(x.shape[1], np.float32)
    b = 0.0
    vw = np.zeros_like(w)
    vb = 0.0
    for _ in range(STEPS):  # Nesterov momentum
        lw, lb = w + 0.9 * vw, b + 0.9 * vb
        p = 1.0 / (1.0 + np.exp(-(x @ lw + lb)))
        g = weight * (p - y)
        gw = x.T @ g + l2 * lw / len(y)
        gb = float(g.sum())
        vw = 0.9 * vw - RATE * gw
        vb = 0.9 * vb - RATE * gb
        w, b = w + vw, b + vb
    return w, b


def standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = x.mean(axis=0)
    scale = x.std(axis=0) + 1e-3
    return mean.astype(np.float32), scale.astype(np.float32)


def found_moments(p: np.ndarray, threshold: float) -> list[int]:
    kept: list[int] = []
    for i in np.argsort(-p, kind="stable"):
        if p[i] < threshold:
            break
        if all(abs(int(i) - j) > TOLERANCE for j in kept):
            kept.append(int(i))
    return kept


def moment_counts(p: np.ndarray, gold: Sequence[Sequence[int]], threshold: float,
                  neutral: Sequence[int] = ()) -> tuple[int, int, int, int]:
    """(gold found, gold, found right, found counted) for one meeting: a gold item is a list
    of turn indices (any of them found within the tolerance finds it); a found turn near only
    ``neutral`` ones (doubtful items) counts neither way."""
    found = found_moments(p, threshold)

    def near(i: int, g: Sequence[int]) -> bool:
        return any(abs(i - t) <= TOLERANCE for t in g)

    hit = sum(1 for g in gold if any(near(i, g) for i in found))
    right = counted = 0
    for i in found:
        if any(near(i, g) for g in gold):
            right += 1
            counted += 1
        elif not any(abs(i - t) <= TOLERANCE for t in neutral):
            counted += 1
    return hit, len(gold), right, counted


def f1(hit: int, gold: int, right: int, counted: int) -> float:
    r = hit / gold if gold else 0.0
    p = right / counted if counted else 0.0
    return 2 * p * r / (p + r) if p + r else 0.0


def stacked(parts: Sequence[Examples], head: str) -> tuple[np.ndarray, ...]:
    return (np.vstack([e.x for e in parts]), np.concatenate([e.y[head] for e in parts]),
            np.concatenate([e.w[head] for e in parts]))


def f_half(recall: float, precision: float) -> float:
    """F0.5: precision counts twice as much as recall (a wrong decision is worse than none)."""
    return 1.25 * precision * recall / (0.25 * precision + recall) if precision + recall else 0.0


def cross_validate(parts: Sequence[Examples]) -> dict[str, float]:
    """Each series left out in turn; the threshold of each head with the best F0.5 over the
    turns of the series left out (precision from the weighted sample of negatives)."""
    series = sorted({e.series for e in parts})
    oof: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {h: [] for h in HEADS}
    for s in series:
        train = [e for e in parts if e.series != s]
        held = [e for e in parts if e.series == s]
        mean, scale = standardise(np.vstack([e.x for e in train]))
        for h in HEADS:
            x, y, w = stacked(train, h)
            coef, bias = fit((x - mean) / scale, y, w)
            hx, hy, hw = stacked(held, h)
            oof[h].append((1.0 / (1.0 + np.exp(-(((hx - mean) / scale) @ coef + bias))), hy, hw))
    thresholds = {}
    for h in HEADS:
        p = np.concatenate([o[0] for o in oof[h]])
        y = np.concatenate([o[1] for o in oof[h]])
        w = np.concatenate([o[2] for o in oof[h]])
        best = (0.0, 0.5)
        print(f"{h} ({int(y.sum())} labelled turns), each series left out: threshold, recall, "
              f"precision, F0.5")
        for t in np.arange(0.50, 0.996, 0.005):
            hit = float(((p >= t) & (y > 0)).sum())
            false = float((w * ((p >= t) & (y == 0))).sum())
            recall = hit / max(float(y.sum()), 1.0)
            precision = hit / (hit + false) if hit + false else 0.0
            score = f_half(recall, precision)
            if round(float(t), 3) in (0.5, 0.7, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99):
                print(f"  {t:.3f} {recall:.1%} {precision:.1%} {score:.3f}")
            if score > best[0]:
                best = (score, round(float(t), 3))
        thresholds[h] = best[1]
        print(f"  chosen {best[1]:.3f} (F0.5 {best[0]:.3f})")
    return thresholds


def train(embedder: Embedder, parts: Sequence[Examples], thresholds: dict[str, float],
          out_dir: Path | None, data_sha: str) -> None:
    mean, scale = standardise(np.vstack([e.x for e in parts]))
    arrays: dict[str, np.ndarray] = {"mean": mean, "scale": scale}
    for h in HEADS:
        x, y, w = stacked(parts, h)
        coef, bias = fit((x - mean) / scale, y, w)
        arrays[f"w_{h}"] = coef
        arrays[f"b_{h}"] = np.array(bias, np.float32)
        print(f"{h}: {int(y.sum())} positive turns of {len(y)} sampled")
    if out_dir is None:
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    weights = out_dir / WEIGHTS_NAME
    with weights.open("wb") as f:
        np.savez(f, **arrays)  # type: ignore[arg-type]
    manifest = {
        "format": detect.FORMAT_VERSION,
        "version": f"{date.today().isoformat()}-{data_sha[:8]}",
        "file": WEIGHTS_NAME,
        "sha256": detect.file_sha256(weights),
        "embed_model": embedder.model_id,
        "embed_name": EMBED_MODEL,
        "thresholds": thresholds,
        "trained_on": f"bench/data/decisions/train.jsonl sha256 {data_sha}",
        "built_by": "python -m bench.decision_detector train --write",
    }
    (out_dir / "turn_detector.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {weights} ({manifest['sha256']})")


def dev_items(meeting: str, turns: Sequence[dict[str, object]], gold: dict[str, object]
              ) -> dict[str, tuple[list[list[int]], list[int]]]:
    at = {str(t["ref"]): i for i, t in enumerate(turns)}

    def indices(refs: object) -> list[int]:
        out = []
        for r in refs:  # type: ignore[attr-defined]
            if r in at:
                out.append(at[r])
            else:  # a dropped turn: the nearest kept one
                n = int(str(r).split(":")[1])
                out.append(min(range(len(turns)), key=lambda i: abs(
                    int(str(turns[i]["ref"]).split(":")[1]) - n)))
        return out

    g = gold.get(meeting, {})
    assert isinstance(g, dict)
    items = {}
    for head, key in (("decision", "decisions"), ("action", "actions")):
        items[head] = ([indices(d["evidence_refs"]) for d in g.get(key, [])],
                       [i for d in g.get(f"borderline_{key}", [])
                        for i in indices(d.get("evidence_refs", []))])
    return items


def dev(embedder: Embedder, data: Path, readers: bool) -> None:
    from bench.meetings import keep_decisions
    from bench.meetings import load as load_dev

    detector = detect.load()
    gold = json.loads((data / "decisions.json").read_text())
    totals = {h: np.zeros(4, int) for h in HEADS}
    reader_totals = {h: np.zeros(4, int) for h in HEADS}
    union_totals = {h: np.zeros(4, int) for h in HEADS}
    per_series: dict[str, dict[str, np.ndarray]] = {}
    spent = 0.0
    turns_seen = 0
    for meeting in load_dev(data):
        doc = json.loads(meeting.path.read_text())
        turns = doc["turns"]
        tt = [Turn(t["speaker"], t["text"]) for t in turns]
        vectors = turn_vectors(embedder, meeting.name, [t.text for t in tt])
        began = time.perf_counter()
        scores = detector.scores(tt, vectors)
        spent += time.perf_counter() - began
        turns_seen += len(tt)
        items = dev_items(meeting.name, turns, gold)
        row = [meeting.name]
        for h in HEADS:
            c = np.array(moment_counts(scores[h], items[h][0], detector.thresholds[h],
                                       items[h][1]))
            totals[h] += c
            per_series.setdefault(meeting.series, {k: np.zeros(4, int) for k in HEADS})[h] += c
            row.append(f"{h} found {c[0]}/{c[1]} right {c[2]}/{c[3]}")
        if readers:
            kept = keep_decisions(meeting)
            at = {str(t["ref"]): i for i, t in enumerate(turns)}
            for h, refs in (("decision", [d.ref for d in kept.decisions]),
                            ("action", [a.ref for a in kept.actions])):
                p = np.zeros(len(turns))
                for r in refs:
                    if r in at:
                        p[at[r]] = 1.0
                c = np.array(moment_counts(p, items[h][0], 0.5, items[h][1]))
                reader_totals[h] += c
                row.append(f"readers {h} {c[0]}/{c[1]} {c[2]}/{c[3]}")
                both = np.maximum(p, np.where(scores[h] >= detector.thresholds[h],
                                              scores[h], 0.0))
                union_totals[h] += moment_counts(both, items[h][0], detector.thresholds[h],
                                                 items[h][1])
        print("  ".join(row), flush=True)
    for name, tot in (("detector", totals), ("readers", reader_totals if readers else None),
                      ("both", union_totals if readers else None)):
        if tot is None:
            continue
        for h in HEADS:
            hit, g, right, counted = tot[h]
            print(f"{name} {h}: recall {hit}/{g} ({hit / max(g, 1):.0%}), precision "
                  f"{right}/{counted} ({right / max(counted, 1):.0%})")
    for s, tot in per_series.items():
        print(f"  {s}: " + ", ".join(f"{h} {t[0]}/{t[1]} at {t[2]}/{t[3]}"
                                     for h, t in tot.items()))
    print(f"detector inference {1000 * spent / max(turns_seen, 1):.3f} ms a turn "
          f"(features and both heads, vectors given), {machine()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("cv", "train", "dev"))
    parser.add_argument("--data", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--dev", type=Path, help="the QMSum dev folder (for dev)")
    parser.add_argument("--readers", action="store_true")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--models-dir", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print(machine())
    embedder = LlamaEmbedder(model_path(EMBED_MODEL, args.models_dir or default_models_dir()),
                             threads=args.threads, batch=32, query_prefix="")
    try:
        if args.command == "dev":
            dev(embedder, args.dev, args.readers)
            return
        parts = [examples(embedder, m) for m in load(args.data)]
        data_sha = hashlib.sha256(args.data.read_bytes()).hexdigest()
        thresholds = cross_validate(parts)
        if args.command == "train":
            train(embedder, parts, thresholds,
                  detect.DATA_DIR if args.write else None, data_sha)
    finally:
        embedder.close()


if __name__ == "__main__":
    main()

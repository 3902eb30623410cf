"""Training the context model of the sensitive-data gate (:mod:`daemon.sensitive.judge`).

    python -m bench.secrets_train cv [DATA_DIR] [--parts P ...] [--unseen-words] [--model-only]
    python -m bench.secrets_train fit [DATA_DIR] --parts P ... [--write]

Every value-shaped span of a labelled turn is one example: a credential when it overlaps the
labelled value of a secret turn, not one otherwise (the other spans of a secret turn, every span
of a look-alike). The model is a logistic regression over the span's feature names, fitted by
gradient descent with an L2 penalty. ``cv`` trains on all parts but one and measures the whole
gate (rules and model, as ``bench.secrets`` does) on the part left out, for each part; ``fit``
trains on the parts named and, with ``--write``, writes the judge's weights file and its pin.

``--unseen-words`` keeps on the judge's word lists, for each part left out, only the words the
other parts say: the lists as they would be had the part been written after them, so the figure
counts what a fresh part's new words cost (and what the word vectors win back). Both modes read
the installed embedding model's word pieces as word vectors (``--vectors PATH``; ``--no-vectors``:
the lists alone).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.secrets import DEFAULT_DATA, Case, default_vectors, load, readable
from daemon.sensitive import gate, judge
from daemon.sensitive.gate import clear_cache, mask_lines
from daemon.sensitive.spoken import spoken
from daemon.sensitive.vectors import WordVectors, read

L2 = 1.0
STEPS = 3000
RATE = 0.5
THRESHOLD = 0.5  # chosen by cross-validation: see docs/benchmarks/secrets.md
MIN_COUNT = 2  # a feature seen once is a name, not evidence


def examples(cases: Sequence[Case]) -> list[tuple[list[str], int]]:
    out = []
    for case in cases:
        at = case.text.find(case.value) if case.kind == "secret" and case.value else -1
        span = (at, at + len(case.value)) if at >= 0 else None
        for c in judge.candidates(case.text, case.before):
            label = int(span is not None and c.start < span[1] and span[0] < c.end)
            out.append((judge.features(case.text, case.before, c), label))
    return out


def fit(cases: Sequence[Case], l2: float = L2) -> tuple[float, dict[str, float]]:
    rows = examples(cases)
    counts: dict[str, int] = {}
    for names, _ in rows:
        for n in set(names):
            counts[n] = counts.get(n, 0) + 1
    vocab = sorted(n for n, k in counts.items() if k >= MIN_COUNT)
    index = {n: i for i, n in enumerate(vocab)}
    x = np.zeros((len(rows), len(vocab)))
    for r, (names, _) in enumerate(rows):
        for n in names:
            if n in index:
                x[r, index[n]] = 1.0
    y = np.array([label for _, label in rows], dtype=float)
    w = np.zeros(len(vocab))
    b = 0.0
    for _ in range(STEPS):
        p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
        g = p - y
        w -= RATE * (x.T @ g / len(y) + l2 * w / len(y))
        b -= RATE * float(g.mean())
    return b, {n: float(v) for n, v in zip(vocab, w, strict=True) if abs(v) >= 1e-3}


def unlisted(cases: Sequence[Case], part: str) -> dict[str, frozenset[str]]:
    """The judge's word classes less every word no other part than ``part`` says: the lists as
    they would be had that part never been read."""
    said = {w for c in cases if c.part != part for w in judge.words(f"{c.before} {c.text}")}
    return {name: words & said for name, words in judge.CLASSES.items()}


def lexicon(classes: dict[str, frozenset[str]], vectors: WordVectors | None) -> None:
    judge.use_vectors(None)
    judge.LEXICON = judge.Lexicon(classes, vectors)
    clear_cache()


def use(bias: float, weights: dict[str, float], threshold: float) -> None:
    judge.MODEL = judge.Model(bias, weights, threshold)
    clear_cache()


def measure(cases: Sequence[Case]) -> tuple[int, int, int, int, list[Case]]:
    """Secrets caught, secrets, false alarms, look-alikes — and the misses and alarms."""
    caught = alarms = 0
    wrong = []
    for case in cases:
        masked = mask_lines([case.text], case.before)[0]
        if case.kind == "secret":
            if readable(case.value, case.text, masked):
                wrong.append(case)
            else:
                caught += 1
        elif masked != case.text:
            alarms += 1
            wrong.append(case)
    secrets = sum(c.kind == "secret" for c in cases)
    return caught, secrets, alarms, len(cases) - secrets, wrong


def write(bias: float, weights: dict[str, float], threshold: float, parts: Sequence[str]) -> None:
    """The judge's weights file, and its sha256 pinned in the judge's module."""
    name, version = judge.WEIGHTS_FORMAT
    data = {"format": name, "version": version,
            "fitted_by": f"python -m bench.secrets_train fit --threshold {threshold} --write",
            "word_vectors": "all-MiniLM-L6-v2 word pieces", "fitted_on": list(parts),
            "bias": round(bias, 4), "threshold": threshold,
            "weights": {n: round(v, 4) for n, v in sorted(weights.items())}}
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    judge.WEIGHTS_FILE.write_text(text)
    module = Path(judge.__file__)
    pinned = re.sub(r'WEIGHTS_SHA256 = "[0-9a-f]{64}"',
                    f'WEIGHTS_SHA256 = "{hashlib.sha256(text.encode()).hexdigest()}"',
                    module.read_text())
    module.write_text(pinned)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["cv", "fit"])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--parts", nargs="*", help="the parts used (default: every part)")
    parser.add_argument("--threshold", type=float, nargs="*", default=[THRESHOLD])
    parser.add_argument("--l2", type=float, default=L2)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--show", action="store_true")
    parser.add_argument("--vectors", type=Path, default=default_vectors(),
                        help="the embedding model whose word pieces place unlisted words "
                             "(default: the installed one)")
    parser.add_argument("--no-vectors", action="store_true", help="the word lists alone")
    parser.add_argument("--unseen-words", action="store_true",
                        help="cv: the word classes less the words only the left-out part says")
    parser.add_argument("--model-only", action="store_true",
                        help="without the spoken rules: what the model finds by itself")
    args = parser.parse_args()
    if args.model_only:
        gate.DETECTORS = tuple(d for d in gate.DETECTORS if d is not spoken)
    cases = [c for c in load(args.data) if not args.parts or c.part in args.parts]
    vectors = None if args.no_vectors else read(args.vectors)
    lexicon(judge.CLASSES, vectors)
    parts = sorted({c.part for c in cases})
    if args.mode == "fit":
        bias, weights = fit(cases, args.l2)
        threshold = args.threshold[0]
        use(bias, weights, threshold)
        caught, n, alarms, looks, _ = measure(cases)
        print(f"fitted on {', '.join(parts)}: {len(weights)} weights; on them recall "
              f"{caught}/{n}, false alarms {alarms}/{looks}")
        if args.write:
            write(bias, weights, threshold, parts)
        return
    totals: dict[float, list[int]] = {t: [0, 0, 0, 0] for t in args.threshold}
    for part in parts:
        lexicon(unlisted(cases, part) if args.unseen_words else judge.CLASSES, vectors)
        bias, weights = fit([c for c in cases if c.part != part], args.l2)
        for t in args.threshold:
            use(bias, weights, t)
            caught, n, alarms, looks, wrong = measure([c for c in cases if c.part == part])
            print(f"{part} (threshold {t}): recall {caught}/{n} = {caught / n:.1%}, "
                  f"false alarms {alarms}/{looks}")
            for i, v in enumerate((caught, n, alarms, looks)):
                totals[t][i] += v
            if args.show and t == args.threshold[0]:
                for c in wrong:
                    print(f"  {c.kind} {c.id}: {c.before!r} -> {c.text!r} [{c.value}]")
    for t, (caught, n, alarms, looks) in totals.items():
        print(f"all parts held out in turn (threshold {t}): recall {caught}/{n} = "
              f"{caught / n:.1%}, false alarms {alarms}/{looks} = {alarms / looks:.1%}")


if __name__ == "__main__":
    main()

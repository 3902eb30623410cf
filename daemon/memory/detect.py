"""Which turns of a meeting settle a decision or make an action item: a learned detector.

A turn is read in its context: its own sentence vector (the installed embedding model; a turn
of one or two words has none), who speaks (their share of the meeting, whether they spoke just
before, how many others answer in the next turns and whether the next turn agrees), its place
in the meeting, its length, and cue words — its own, the turn before's and the next turns' —
as features (never as rules: the weights say what a cue is worth). Two logistic heads read the
same features: "a decision is settled here" and "an action item is made here".

The weights are data, not code: ``data/turn_detector.npz`` beside its manifest
``data/turn_detector.json`` (format version, the weights file's sha256, the embedding model the
features were computed with, the thresholds chosen by cross-validation). Both are written by
the training script of the benchmarks; :func:`load` checks the version and the sha256 and says
plainly what is wrong when the file is missing or altered.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from daemon.errors import BrainCueError

FORMAT_VERSION = 1
DATA_DIR = Path(__file__).parent / "data"
MANIFEST = DATA_DIR / "turn_detector.json"
HEADS = ("decision", "action")
AFTER = 3  # turns after whose speakers and words tell whether others take a turn up

# cue words and phrases, each one feature (a turn says it or not); the weights decide
CUES: tuple[str, ...] = (
    r"\bdecid", r"\bdecision", r"\bagree", r"\bsettle", r"\bfinal", r"\bchoose|\bchose",
    r"\bgo (with|for)\b", r"\bgoing (with|for)\b", r"\blet'?s\b", r"\bshall we\b",
    r"\bwe('ll| will)\b", r"\bwe('re| are) (gonna|going to)\b", r"\bwe (should|could|can)\b",
    r"\bwe (have|need) to\b", r"\bso\b", r"\bokay\b|\bok\b", r"\balright\b|\ball right\b",
    r"\byeah\b|\byes\b", r"\bgood\b|\bgreat\b|\bfine\b", r"\bno\b|\bnot\b",
    r"\binstead\b", r"\bbecause\b|\b'?cause\b", r"\brather\b", r"\bbut\b",
    r"\bI('ll| will)\b", r"\bI('m| am) (gonna|going to)\b", r"\byou('ll| will)\b",
    r"\byou('re| are) (gonna|going to)\b", r"\bcan you\b|\bcould you\b",
    r"\bnext (meeting|time|week)\b", r"\bby (monday|tuesday|wednesday|thursday|friday|tomorrow)",
    r"\bsend\b|\bemail\b|\be-mail\b", r"\bwork on\b|\blook (at|into)\b|\bprepare\b",
    r"\btask\b|\bresponsib", r"\bmeeting\b", r"\bthink\b", r"\bmaybe\b|\bperhaps\b",
    r"\bwould\b", r"\bdefinitely\b|\bcertainly\b", r"\?",
)
_CUES = tuple(re.compile(c, re.IGNORECASE) for c in CUES)
_AGREEING = re.compile(
    r"^\W*(yeah|yes|yep|okay|ok|right|sure|alright|all right|good|great|fine|exactly|"
    r"definitely|agreed|mm-hmm|uh-huh|cool|perfect)\b", re.IGNORECASE)
SCALARS = 9
MIN_EMBEDDED_WORDS = 3  # a shorter turn ("Okay.", "Mm-hmm.") has a zero vector: cues say enough
EMBEDDED_WORDS = 60  # the start of a long turn says what it is about


def embedded_text(text: str) -> str | None:
    """What of a turn is embedded for its features: its first ``EMBEDDED_WORDS`` words, or
    None for a turn too short to need a vector."""
    words = text.split()
    return " ".join(words[:EMBEDDED_WORDS]) if len(words) >= MIN_EMBEDDED_WORDS else None


def to_embed(texts: Sequence[str]) -> tuple[list[int], list[str]]:
    """Which turns have a vector, and the text of each that is embedded."""
    wanted = [(i, embedded_text(t)) for i, t in enumerate(texts)]
    kept = [(i, w) for i, w in wanted if w is not None]
    return [i for i, _ in kept], [w for _, w in kept]


def placed(turns: int, at: Sequence[int], vectors: np.ndarray, dimensions: int) -> np.ndarray:
    """The vector of each of ``turns`` turns for :func:`features`: the embedded ones at their
    place (``at``), zeros elsewhere."""
    out = np.zeros((turns, dimensions), np.float32)
    if len(at):
        out[list(at)] = vectors
    return out


def turn_vectors(texts: Sequence[str], embed: Callable[[list[str]], np.ndarray],
                 dimensions: int) -> np.ndarray:
    """The vector of each turn for :func:`features` (``embed`` embeds a list of texts)."""
    at, wanted = to_embed(texts)
    return placed(len(texts), at, embed(wanted) if at else np.zeros((0, dimensions)),
                  dimensions)


class DetectorError(BrainCueError):
    """The detector's weights are missing, altered, or of another format."""


@dataclass(frozen=True)
class Turn:
    speaker: str
    text: str


def _cues(text: str) -> np.ndarray:
    return np.array([bool(c.search(text)) for c in _CUES], np.float32)


def context_features(turns: Sequence[Turn]) -> np.ndarray:
    """The non-vector features of every turn: its place, length, who speaks and who answers,
    its cue words and those of the turn before and the turns after."""
    n = len(turns)
    speakers = [t.speaker for t in turns]
    share = {s: speakers.count(s) / max(n, 1) for s in set(speakers)}
    cues = np.array([_cues(t.text) for t in turns], np.float32).reshape(n, len(_CUES))
    rows = np.zeros((n, SCALARS + 3 * len(_CUES)), dtype=np.float32)
    for i, turn in enumerate(turns):
        words = len(turn.text.split())
        after = turns[i + 1:i + 1 + AFTER]
        others = {t.speaker for t in after if t.speaker != turn.speaker}
        next_agrees = bool(after) and after[0].speaker != turn.speaker and bool(
            _AGREEING.match(after[0].text))
        agreeing_after = sum(
            1 for t in after if t.speaker != turn.speaker and _AGREEING.match(t.text))
        rows[i, :SCALARS] = (
            i / max(n - 1, 1),
            (i / max(n - 1, 1)) ** 2,
            np.log1p(words) / 5.0,
            share[turn.speaker],
            float(i > 0 and speakers[i - 1] == turn.speaker),
            len(others) / AFTER,
            float(next_agrees),
            agreeing_after / AFTER,
            float(bool(_AGREEING.match(turn.text)) and words <= 3),
        )
        rows[i, SCALARS:SCALARS + len(_CUES)] = cues[i]
        if i > 0:
            rows[i, SCALARS + len(_CUES):SCALARS + 2 * len(_CUES)] = cues[i - 1]
        if after:
            rows[i, SCALARS + 2 * len(_CUES):] = cues[i + 1:i + 1 + AFTER].max(axis=0)
    return rows


def features(turns: Sequence[Turn], vectors: np.ndarray) -> np.ndarray:
    """Each turn's feature row: its vector and :func:`context_features`."""
    n = len(turns)
    if vectors.shape[0] != n:
        raise ValueError(f"{vectors.shape[0]} vectors for {n} turns")
    return np.hstack([vectors.astype(np.float32), context_features(turns)])


@dataclass(frozen=True)
class Detector:
    """Two logistic heads over :func:`features`, with their thresholds."""

    version: str
    embed_model: str
    mean: np.ndarray
    scale: np.ndarray
    weights: dict[str, np.ndarray]
    biases: dict[str, float]
    thresholds: dict[str, float]

    def scores(self, turns: Sequence[Turn], vectors: np.ndarray) -> dict[str, np.ndarray]:
        """The probability of each head for each turn."""
        if not turns:
            return {h: np.zeros(0, np.float32) for h in HEADS}
        x = (features(turns, vectors) - self.mean) / self.scale
        return {h: 1.0 / (1.0 + np.exp(-(x @ self.weights[h] + self.biases[h]))) for h in HEADS}

    def detected(self, turns: Sequence[Turn], vectors: np.ndarray) -> dict[str, list[int]]:
        """The turns each head finds at its threshold, best first, one per run of neighbours
        (a turn within two of a better one is the same moment)."""
        found: dict[str, list[int]] = {}
        for head, p in self.scores(turns, vectors).items():
            kept: list[int] = []
            for i in np.argsort(-p, kind="stable"):
                if p[i] < self.thresholds[head]:
                    break
                if all(abs(int(i) - j) > 2 for j in kept):
                    kept.append(int(i))
            found[head] = kept
        return found


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load(manifest: Path = MANIFEST) -> Detector:
    """The detector described by ``manifest``; DetectorError when it or its weights are
    missing, of another format version, or not the file the manifest pins."""
    fix = "rebuild it with the benchmarks' detector training (bench.decision_detector train)"
    try:
        meta = json.loads(manifest.read_text())
    except FileNotFoundError:
        raise DetectorError(f"no turn detector: {manifest} is missing", fix=fix) from None
    except (OSError, ValueError) as e:
        raise DetectorError(f"turn detector manifest {manifest} unreadable: {e}", fix=fix) from None
    if meta.get("format") != FORMAT_VERSION:
        raise DetectorError(
            f"turn detector format {meta.get('format')!r}, this version reads {FORMAT_VERSION}",
            fix=fix)
    weights = manifest.parent / str(meta.get("file", ""))
    if not weights.is_file():
        raise DetectorError(f"no turn detector: {weights} is missing", fix=fix)
    if file_sha256(weights) != meta.get("sha256"):
        raise DetectorError(f"turn detector {weights} is not the file its manifest pins "
                            f"(sha256 differs)", fix=fix)
    with np.load(weights) as data:
        arrays = {k: data[k] for k in data.files}
    return Detector(
        version=str(meta.get("version", "")),
        embed_model=str(meta["embed_model"]),
        mean=arrays["mean"],
        scale=arrays["scale"],
        weights={h: arrays[f"w_{h}"] for h in HEADS},
        biases={h: float(arrays[f"b_{h}"]) for h in HEADS},
        thresholds={h: float(meta["thresholds"][h]) for h in HEADS},
    )


@functools.cache
def shipped() -> Detector:
    """The detector shipped with the daemon, loaded once (:func:`load`)."""
    return load()

"""The training set of the turn detector (:mod:`daemon.memory.detect`), built from public
annotations of meetings that are not in any evaluation set.

    python -m bench.decision_data build QMSUM_DIR AMI_ABSTRACTIVE_DIR [--out FILE]
    python -m bench.decision_data sample [--n 50] [--seed 7] [--kind decision|action|both]

Sources (both CC BY 4.0 AMI material; QMSum's annotations MIT):

- ``QMSUM_DIR``: a checkout of QMSum (Zhong et al., 2021). Only the AMI meetings of its *train*
  split are read (``data/Product/train``); the names of its val and test meetings are listed to
  refuse any overlap, their files are never opened. Each meeting gives its turns (turn numbers
  kept as ``ref``), its general summary and its specific queries with the turn spans that
  answer them.
- ``AMI_ABSTRACTIVE_DIR``: plain-text copies of the AMI corpus's abstractive summaries, one
  ``<meeting>.abssumm.txt`` each (as in gcunhase/AMICorpusXML, ``data/ami-summary/abstractive``).

Labels. A sentence of a summary (the AMI abstract, QMSum's general summary) that says the group
decided, agreed, chose or settled something is a decision; one that says work was handed out
(asked to, assigned, responsible for, for the next meeting, will work on ...) an action. An
answer to a query asking what was decided / agreed / concluded, or who takes what task, gives
its sentences the same way, limited to the query's turn span. Each such sentence is aligned to
the turn that says it best: of the ``CANDIDATES`` turns whose words (with the next turn's) share
most of the sentence's content words, the one with the highest cosine of the sentence's and the
turn's vectors (the installed embedding model) plus half that share; a sentence whose best turn
scores under ``MIN_SCORE`` gives no label (the training may ask for more). The alignment is
approximate: its precision on a hand-checked sample is in ``docs/benchmarks/keep.md``.

The set is one JSON line per meeting (meeting, series, turns as ``[ref, speaker, text]``, labels
as ``{ref, kind, source, sentence, score}``), written with sorted keys so that a rebuild gives
the same bytes; ``build`` prints the sha256 and compares it with the one in ``README.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.common import default_models_dir
from daemon.llm.embed import Embedder, LlamaEmbedder
from daemon.memory import detect
from daemon.models.registry import model_path

DATA_DIR = Path(__file__).parent / "data" / "decisions"
DEFAULT_OUT = DATA_DIR / "train.jsonl"
README = DATA_DIR / "README.md"
EMBED_MODEL = "all-minilm-l6-v2"
MIN_SCORE = 0.45  # cosine + half the word share of the best turn; below it, no label
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "braincue-bench"
CANDIDATES = 12  # turns sharing most words with a sentence, compared with it by meaning
MIN_WORDS = 4  # a shorter turn ("Okay.", "Yeah, sure.") settles nothing by itself

DECIDED = re.compile(
    r"\b(decided|decides|decide|decision|agreed|agrees|agree to|settled|chose|chosen|opted|"
    r"concluded|conclusion|finali[sz]ed|determined|made up their minds?)\b", re.IGNORECASE)
NOT_DECIDED = re.compile(r"\bdisagree|\bdid not (decide|agree)|\bno decision|\bundecided",
                         re.IGNORECASE)
HANDED_OUT = re.compile(
    r"\b(asked|instructed|assigned|told|reminded) (\w+ ){0,4}to\b|\bresponsible for\b|"
    r"\b(tasks?|assignments?|homework)\b|\b(for|before|by) the next meeting\b|"
    r"\b(will|would|should|was to|were to|is to|are to) (\w+ )?(work on|look (at|into)|"
    r"prepare|investigate|find out|send|research|gather|email|e-mail)\b", re.IGNORECASE)
# a sentence about what the group still had to decide, or who decided before the meeting,
# tells of no decision settled in it
UNSETTLED = re.compile(
    r"\b(discussed and decided|to decide|had to decide|need(ed)? to decide|would decide|"
    r"decide (on )?(what|which|how|whether)|decisions? (about|on) (what|which|how)|"
    r"(corporate|management|company|the board) (had )?(decided|agreed))\b", re.IGNORECASE)
DECISION_QUERY = re.compile(
    r"\b(decid|decision|agree|conclu|settle|final|chose|choose)", re.IGNORECASE)
ACTION_QUERY = re.compile(
    r"\b(task|assign|responsib|next meeting|to do (next|before)|homework|work on next)",
    re.IGNORECASE)
STOP = set(re.findall(r"\S+", """
a an the and or but of to in on at for with by from as is are was were be been
being it its this that these those they them their there then than so such not no yes do did
does done have has had will would could should can may might must also about into over after
before more most some any each other which who whom what when where why how all both group
team members member meeting remote control project manager marketing industrial designer user
interface expert discussed discuss discussion decided decide decision agreed agree final
finally they he she his her we our us i you your"""))


def clean(text: str) -> str:
    """A transcript turn as the dev set writes it: markup such as ``{vocalsound}`` out, no
    space before punctuation, one space between words."""
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\s+([,.?!;:])", r"\1", text)
    text = re.sub(r"([.?!])[.?!]+", r"\1", text)
    return re.sub(r"\s+", " ", text).strip()


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 4]


def content_words(text: str) -> set[str]:
    return {w[:6] for w in re.findall(r"[a-z][a-z'-]+", text.lower())
            if w not in STOP and len(w) > 2}


@dataclass
class Meeting:
    name: str
    refs: list[int]
    speakers: list[str]
    texts: list[str]
    general: str
    queries: list[tuple[str, str, list[tuple[int, int]]]]  # query, answer, turn spans

    @property
    def series(self) -> str:
        return self.name[:6]


def read_qmsum(qmsum: Path) -> list[Meeting]:
    product = qmsum / "data" / "Product"
    train = sorted((product / "train").glob("*.json"))
    held = {p.stem for part in ("val", "test") for p in (product / part).glob("*.json")}
    overlap = sorted({p.stem for p in train} & held)
    if overlap:
        sys.exit(f"train meetings also in val/test: {', '.join(overlap)}")
    meetings = []
    for path in train:
        data = json.loads(path.read_text())
        refs, speakers, texts = [], [], []
        for i, turn in enumerate(data["meeting_transcripts"]):
            text = clean(turn["content"])
            if text:
                refs.append(i)
                speakers.append(turn["speaker"])
                texts.append(text)
        general = " ".join(q["answer"] for q in data["general_query_list"])
        queries = [(q["query"], q["answer"],
                    [(int(a), int(b)) for a, b in q["relevant_text_span"]])
                   for q in data["specific_query_list"]]
        meetings.append(Meeting(path.stem, refs, speakers, texts, general, queries))
    return meetings


def labelled_sentences(meeting: Meeting, abstract: str
                       ) -> Iterable[tuple[str, str, str, list[tuple[int, int]] | None]]:
    """(kind, source, sentence, span or None for the whole meeting) of every labelling
    sentence."""
    for source, text in (("ami-abstract", abstract), ("qmsum-summary", meeting.general)):
        for s in sentences(text):
            if DECIDED.search(s) and not (NOT_DECIDED.search(s) or UNSETTLED.search(s)):
                yield "decision", source, s, None
            elif HANDED_OUT.search(s):
                yield "action", source, s, None
    for query, answer, spans in meeting.queries:
        if DECISION_QUERY.search(query) and not NOT_DECIDED.search(query):
            said = [s for s in sentences(answer)
                    if DECIDED.search(s) and not UNSETTLED.search(s)] or sentences(answer)[:1]
            for s in said:
                yield "decision", "qmsum-query", s, spans
        elif ACTION_QUERY.search(query):
            for s in sentences(answer):
                if HANDED_OUT.search(s):
                    yield "action", "qmsum-query", s, spans


def candidates(sentence: str, meeting: Meeting, spans: Sequence[tuple[int, int]] | None
               ) -> list[tuple[int, float]]:
    """The turns (index into the meeting's kept turns, word share) that may carry
    ``sentence``: long enough, inside the span when there is one, the ``CANDIDATES`` whose words
    (with the next turn's) share most of the sentence's content words."""
    words = content_words(sentence)
    if not words:
        return []
    found = []
    for i, ref in enumerate(meeting.refs):
        if spans is not None and not any(a <= ref <= b for a, b in spans):
            continue
        if len(meeting.texts[i].split()) < MIN_WORDS:
            continue
        said = content_words(meeting.texts[i])
        if i + 1 < len(meeting.texts):
            said |= content_words(meeting.texts[i + 1])
        found.append((i, len(words & said) / len(words)))
    found.sort(key=lambda c: (-c[1], c[0]))
    return found[:CANDIDATES]


def align(embedder: Embedder, sentence: str, meeting: Meeting,
          spans: Sequence[tuple[int, int]] | None) -> tuple[int, float] | None:
    """The index (into the meeting's kept turns) of the turn that says ``sentence`` best and
    its score (the cosine of the two vectors plus half the word share), or None."""
    found = candidates(sentence, meeting, spans)
    if not found:
        return None
    vectors = text_vectors(embedder, [sentence, *(meeting.texts[i] for i, _ in found)])
    scored = [(i, float(vectors[k + 1] @ vectors[0]) + 0.5 * share)
              for k, (i, share) in enumerate(found)]
    return max(scored, key=lambda c: (c[1], -c[0]))


_TEXT_VECTORS: dict[str, np.ndarray] = {}


def text_vectors(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """The vectors of ``texts``, each text embedded once per run (a turn is a candidate of
    several sentences) and kept on disk between runs (the alignment embeds ~3,000 texts)."""
    path = CACHE / f"{embedder.model_id[:16]}-texts.npz"
    if not _TEXT_VECTORS and path.is_file():
        with np.load(path) as stored:
            _TEXT_VECTORS.update({k: stored[k] for k in stored.files})
    keys = [hashlib.sha256(t.encode()).hexdigest()[:24] for t in texts]
    missing = sorted({k: t for k, t in zip(keys, texts, strict=True)
                      if k not in _TEXT_VECTORS}.items())
    if missing:
        new = embedder.embed_sync([t for _, t in missing])
        _TEXT_VECTORS.update({k: new[i] for i, (k, _) in enumerate(missing)})
        CACHE.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as f:
            np.savez(f, **_TEXT_VECTORS)  # type: ignore[arg-type]
    return np.stack([_TEXT_VECTORS[k] for k in keys])


def vectors_of(embedder: Embedder, key: str, texts: Sequence[str]) -> np.ndarray:
    """The vectors of ``texts`` (already as :func:`detect.embedded_text` cuts them), kept on
    disk by the texts' digest and the model: the training and the dev figures share them."""
    digest = hashlib.sha256("\x1e".join(texts).encode()).hexdigest()[:20]
    path = CACHE / f"{embedder.model_id[:16]}-{key}-{digest}.npy"
    if path.is_file():
        return np.asarray(np.load(path), np.float32)
    vectors = embedder.embed_sync(list(texts)) if texts else np.zeros((0, embedder.dimensions))
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def turn_vectors(embedder: Embedder, key: str, texts: Sequence[str],
                 only: Sequence[int] | None = None) -> np.ndarray:
    """The detector's vectors of a meeting's turns (:func:`detect.turn_vectors`); with
    ``only``, of those turns only (the others zero: a turn's features read its own vector)."""
    at, wanted = detect.to_embed(texts)
    if only is not None:
        keep = set(only)
        pairs = [(i, w) for i, w in zip(at, wanted, strict=True) if i in keep]
        at, wanted = [i for i, _ in pairs], [w for _, w in pairs]
    return detect.placed(len(texts), at, vectors_of(embedder, key, wanted), embedder.dimensions)


def build(qmsum: Path, abstracts: Path, out: Path, embedder: Embedder) -> str:
    meetings = read_qmsum(qmsum)
    lines = []
    for n, m in enumerate(meetings, 1):
        path = abstracts / f"{m.name}.abssumm.txt"
        abstract = path.read_text() if path.is_file() else ""
        wanted = list(labelled_sentences(m, abstract))
        labels: dict[tuple[int, str], dict[str, object]] = {}
        for kind, source, sentence, spans in wanted:
            found = align(embedder, sentence, m, spans)
            if found is None or found[1] < MIN_SCORE:
                continue
            i, score = found
            key = (m.refs[i], kind)
            if key not in labels or float(labels[key]["score"]) < score:  # type: ignore[arg-type]
                labels[key] = {"ref": m.refs[i], "kind": kind, "source": source,
                               "sentence": sentence, "score": round(score, 3)}
        lines.append(json.dumps({
            "meeting": m.name,
            "series": m.series,
            "turns": [[r, s, t] for r, s, t in zip(m.refs, m.speakers, m.texts, strict=True)],
            "labels": sorted(labels.values(), key=lambda x: (x["ref"], x["kind"])),
        }, sort_keys=True, ensure_ascii=False))
        print(f"{n}/{len(meetings)} {m.name}: {len(m.texts)} turns, "
              f"{len(labels)} labels of {len(wanted)} sentences", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    return hashlib.sha256(out.read_bytes()).hexdigest()


def committed_sha256() -> str | None:
    if not README.is_file():
        return None
    found = re.search(r"sha256 `([0-9a-f]{64})`", README.read_text())
    return found.group(1) if found else None


@dataclass
class TrainMeeting:
    name: str
    series: str
    refs: list[int]
    speakers: list[str]
    texts: list[str]
    labels: list[dict[str, object]]


def load(path: Path = DEFAULT_OUT) -> list[TrainMeeting]:
    meetings = []
    for line in path.read_text().splitlines():
        d = json.loads(line)
        meetings.append(TrainMeeting(d["meeting"], d["series"], [t[0] for t in d["turns"]],
                                     [t[1] for t in d["turns"]], [t[2] for t in d["turns"]],
                                     d["labels"]))
    return meetings


def sample(path: Path, n: int, seed: int, kind: str) -> None:
    """Print ``n`` random alignments with the turns around them, to be read by hand."""
    meetings = load(path)
    pool = [(m, lab) for m in meetings for lab in m.labels if kind in ("both", lab["kind"])]
    for k, (m, lab) in enumerate(random.Random(seed).sample(pool, min(n, len(pool))), 1):
        at = m.refs.index(int(lab["ref"]))  # type: ignore[call-overload]
        print(f"\n#{k} {m.name}:{lab['ref']} {lab['kind']} ({lab['source']}, "
              f"score {lab['score']})\n  SUMMARY: {lab['sentence']}")
        for i in range(max(0, at - 2), min(len(m.texts), at + 3)):
            mark = ">>" if i == at else "  "
            print(f"  {mark} {m.speakers[i]}: {m.texts[i][:300]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build the training set from the two public sources")
    b.add_argument("qmsum", type=Path, help="a QMSum checkout (its data/Product/train is read)")
    b.add_argument("abstracts", type=Path, help="the AMI abstractive summaries as text files")
    b.add_argument("--out", type=Path, default=DEFAULT_OUT)
    b.add_argument("--models-dir", type=Path, default=None)
    b.add_argument("--threads", type=int, default=2)
    s = sub.add_parser("sample", help="print alignments to check by hand")
    s.add_argument("--data", type=Path, default=DEFAULT_OUT)
    s.add_argument("--n", type=int, default=50)
    s.add_argument("--seed", type=int, default=7)
    s.add_argument("--kind", choices=("decision", "action", "both"), default="both")
    args = parser.parse_args()
    if args.command == "sample":
        sample(args.data, args.n, args.seed, args.kind)
        return
    embedder = LlamaEmbedder(model_path(EMBED_MODEL, args.models_dir or default_models_dir()),
                             threads=args.threads, batch=32, query_prefix="")
    try:
        digest = build(args.qmsum, args.abstracts, args.out, embedder)
    finally:
        embedder.close()
    pinned = committed_sha256()
    print(f"{args.out}: sha256 {digest}")
    if pinned is None:
        print("no sha256 committed yet: put this one in the README")
    elif pinned == digest:
        print("matches the committed file's sha256")
    else:
        sys.exit(f"differs from the committed sha256 {pinned}")


if __name__ == "__main__":
    main()

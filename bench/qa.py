"""Answer quality and latency side by side, through a real daemon: QMSum meetings and LoCoMo chats.

    .venv/bin/python -m bench.qa --qmsum QMSUM_DIR [--series ES2006 ...] [--keep]
    .venv/bin/python -m bench.qa --locomo LOCOMO_JSON --sample 200
        [--sample N] [--offset N] [--seed 7] [--json FILE]

A daemon subprocess runs with its own home; everything goes through the protocol, the way
`braincue import-transcript`, `braincue search` and `braincue ask` use it.

- **QMSum** (Zhong et al., NAACL 2021; real AMI product-design meetings): each series is
  imported into its own Space (with ``--keep``, every meeting is also kept: archive and
  assertions), then every ``specific`` query is asked in that Space. The answer (citations
  removed) is scored against the gold answer with ROUGE-1/2/Lsum F1 (``rouge-score``, Porter
  stemming, the metric of the QMSum paper). Beside it, the search the answer starts from
  (``Search`` k=5): hit@5 — at least one turn of the gold span among the results' turns — and
  the in-span share — the share of the results' turns that lie in the gold span.
- **LoCoMo** (Maharana et al., ACL 2024; CC BY-NC 4.0 — pass its path, never copy it): each
  conversation into its own Space, each of its sessions one imported session dated from
  ``session_N_date_time``; a seeded sample of the questions of categories 1-4 is asked and
  scored with the paper's token F1 (lower-case, punctuation, articles and "and" removed, Porter
  stemming; multi-hop answers split on commas, each gold part scored by its best predicted part;
  open-domain gold answers cut at ";").
- Every answer is timed as a client sees it: to its first streamed token and to the checked
  reply (p50/p95). An answer that only restates the question is counted (``echoes``, the
  deterministic detector of :func:`daemon.memory.grounding.echoes_question`).

``--set NAME=VALUE`` is a line of the daemon's config.toml (each run writes it anew);
``--vary NAME=V1,V2,...`` asks the same questions once per value of a setting (changed over
IPC between the rounds, one import), with a table per value — paired figures, e.g.
``--vary ask_source_chars=500,1100,2400``.

``--daemon-root DIR`` runs the daemon from another checkout (the code before a change, say,
with a ``--home`` of its own: its store is its own), with the same client, questions and scores.

``--sample N`` / ``--offset N`` take a slice of the (shuffled, seeded) questions, so a long run can
be split into pieces that each fit a hold of the CPU lock; ``--json FILE`` writes every answer.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import shutil
import statistics
import string
import sys
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from bench.ask import ask_timed
from bench.common import default_models_dir, machine, per_space, percentile
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    AddSpace,
    Ask,
    ImportTranscript,
    ListSpaces,
    Remember,
    Search,
    SearchReply,
    SettingsSet,
)
from daemon.ipc.testing import short_home, start_daemon
from daemon.memory.grounding import echoes_question

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                     5: "never said"}
NEVER_SAID = 5  # LoCoMo's adversarial questions: about things nobody said; declining is right
# Published figures to read ours against (the QMSum paper; the LoCoMo paper's table 3,
# F1 with retrieval; A-Mem, Xu et al. 2025, for small models)
QMSUM_PUBLISHED = [
    ("BART, whole transcript", 29.2, 6.4, 25.5),
    ("Locator + HMNet", 32.3, 8.7, 28.2),
    ("HMNet, gold span", 36.1, 11.4, 31.3),
]
LOCOMO_PUBLISHED = "GPT-3.5-turbo with retrieval 41.4 overall; small models with A-Mem 18-24"
_CITATION = re.compile(r"\s?\[\d+(?:\s*,\s*\d+)*\]")
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # LoCoMo: "1:56 pm on 8 May, 2023"


class Asked(msgspec.Struct, kw_only=True):
    """One question asked, with what came back and its scores."""

    dataset: str
    space: str
    question: str
    gold: str
    answer: str
    first_token_s: float
    answer_s: float
    echo: bool
    category: str = ""  # LoCoMo
    f1: float | None = None  # LoCoMo
    rouge: dict[str, float] = {}  # QMSum: rouge1 / rouge2 / rougeLsum F1
    hit5: bool | None = None  # QMSum: a gold-span turn among the search's results
    in_span: float | None = None  # QMSum: share of the results' turns inside the gold span
    sources: int = 0
    nothing_found: bool = False
    declined: bool = False  # the answer said memory holds nothing that answers it
    evidence_gold: bool | None = None  # a gold turn among the evidence shown first
    evidence_s: float = 0.0  # seconds to the evidence
    setting: str = ""  # with --vary: "NAME=VALUE" it was asked with
    streamed: str = ""  # the model's answer before the check
    evidence: list[tuple[str, str]] = []  # the evidence shown: (speaker, text) each


# -- scores (pure) ---------------------------------------------------------------------------------


def without_citations(text: str) -> str:
    """The answer as prose: ``[n]`` citations and the unverified marks removed."""
    return " ".join(_CITATION.sub("", text.replace(" [unverified]", "")).split())


def rouge_f1(answer: str, gold: str) -> dict[str, float]:
    """ROUGE-1/2/Lsum F1 (x100) of ``answer`` against ``gold``, with stemming (QMSum's metric;
    Lsum takes sentences one a line)."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeLsum"], use_stemmer=True)

    def lines(text: str) -> str:
        return "\n".join(s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip())

    scores = scorer.score(lines(gold), lines(answer))
    return {name: 100 * score.fmeasure for name, score in scores.items()}


def _normalise(text: str) -> str:
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the|and)\b", " ", text)
    return " ".join(text.split())


def token_f1(prediction: str, gold: str) -> float:
    """The LoCoMo paper's token F1: normalised, Porter-stemmed tokens, bag overlap."""
    from nltk.stem import PorterStemmer

    stem = PorterStemmer().stem
    predicted = [stem(w) for w in _normalise(prediction).split()]
    wanted = [stem(w) for w in _normalise(gold).split()]
    same = sum((Counter(predicted) & Counter(wanted)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(wanted)
    return 2 * precision * recall / (precision + recall)


def locomo_f1(prediction: str, gold: str, category: int) -> float:
    """F1 per the LoCoMo paper's evaluation: multi-hop (1) parts split on commas, each gold
    part scored by its best predicted part; open-domain (3) gold cut at ";"; else token F1."""
    if category == 1:
        predicted = [p.strip() for p in prediction.split(",")]
        parts = [g.strip() for g in gold.split(",")]
        return statistics.fmean(max(token_f1(p, g) for p in predicted) for g in parts)
    if category == 3:
        gold = gold.split(";")[0].strip()
    return token_f1(prediction, gold)


def span_scores(results_refs: Sequence[Sequence[str]], gold: Iterable[str]) -> tuple[bool, float]:
    """hit@k (a gold turn among the results' turns) and the share of their turns in the span."""
    span = set(gold)
    turns = [ref for refs in results_refs for ref in refs]
    inside = sum(1 for ref in turns if ref in span)
    return inside > 0, (inside / len(turns) if turns else 0.0)



# -- the datasets as imports --------------------------------------------------------------------


def qmsum_series(root: Path, wanted: Sequence[str]) -> list[Path]:
    found = sorted(p for p in root.iterdir() if (p / "queries.json").is_file())
    return [p for p in found if not wanted or p.name in wanted]


def locomo_transcripts(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """One transcript (our import format) per session of a LoCoMo conversation."""
    conversation = sample["conversation"]
    speakers = [conversation["speaker_a"], conversation["speaker_b"]]
    numbers = sorted(int(m[1]) for key in conversation
                     if (m := re.fullmatch(r"session_(\d+)", key)))
    out = []
    for n in numbers:
        started = dt.datetime.strptime(conversation[f"session_{n}_date_time"].replace(
            "am", "AM").replace("pm", "PM"), _DATE_FORMAT).replace(tzinfo=dt.UTC)
        turns = []
        for i, turn in enumerate(conversation[f"session_{n}"]):
            text = turn["text"]
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            turns.append({"speaker": turn["speaker"], "text": text, "t": i * 15.0,
                          "ref": turn["dia_id"]})
        out.append({"title": f"{' and '.join(speakers)}, session {n}",
                    "started_at": started.isoformat(), "activity": "personal",
                    "participants": speakers, "turns": turns})
    return out


# -- through the daemon -------------------------------------------------------------------------


def import_into(client: Client, space: str, activity: str,
                transcripts: Iterable[tuple[str, bytes]], keep: bool) -> int:
    """Import ``transcripts`` into a new Space ``space``; none when it exists (a reused
    ``--home``): how many were imported."""
    if any(s.name == space for s in client.request(ListSpaces()).spaces):
        return 0
    client.request(AddSpace(name=space, activity=activity))
    count = 0
    for name, content in transcripts:
        reply = client.request(ImportTranscript(content=content, filename=name, space=space),
                               timeout=1800)
        if keep:
            client.request(Remember(session_id=reply.session.id, answer="keep"), timeout=1800)
        count += 1
    return count


def ask_one(dataset: str, space: str, question: str, gold: str, gold_refs: Iterable[str]
            ) -> Asked:
    """``question`` asked in ``space``, with what came back (not scored yet)."""
    timed = ask_timed(Ask(id=uuid.uuid4().hex, question=question, space=space))
    reply = timed.reply
    prose = without_citations(reply.answer)
    return Asked(dataset=dataset, space=space, question=question, gold=gold,
                 answer=reply.answer, first_token_s=timed.first_s, answer_s=timed.total_s,
                 evidence_s=timed.evidence_s, echo=echoes_question(prose, question),
                 sources=len(reply.sources), nothing_found=reply.nothing_found,
                 declined=reply.declined, streamed=timed.streamed,
                 evidence=[(e.speaker, e.text) for e in reply.evidence],
                 evidence_gold=bool({e.ref for e in reply.evidence} & set(gold_refs)))


def run_qmsum(client: Client, args: argparse.Namespace) -> list[Asked]:
    queries: list[tuple[str, dict[str, Any]]] = []
    for series in qmsum_series(args.qmsum, args.series):
        meetings = sorted(series.glob(f"{series.name}*.json"))
        n = import_into(client, series.name, "project",
                        ((m.name, m.read_bytes()) for m in meetings), args.keep)
        print(f"imported {series.name}: {n} meetings", flush=True)
        queries += [(series.name, q) for q in json.loads((series / "queries.json").read_text())
                    if q["kind"] == "specific"]
    asked = []
    for space, query in sample(queries, args):
        found = client.request(Search(query=query["query"], space=space, k=5), timeout=120)
        assert isinstance(found, SearchReply)
        hit, share = span_scores([r.refs or (r.anchor.refs if r.anchor else []) for r in
                                  found.results], query["refs"])
        one = (Asked(dataset="qmsum", space=space, question=query["query"],
                     gold=query["answer"], answer="", first_token_s=0.0, answer_s=0.0,
                     echo=False) if args.no_ask
               else ask_one("qmsum", space, query["query"], query["answer"], query["refs"]))
        asked.append(msgspec.structs.replace(
            one, rouge=rouge_f1(without_citations(one.answer), query["answer"]), hit5=hit,
            in_span=share))
        progress(asked[-1], f"R-1 {asked[-1].rouge['rouge1']:5.1f}  hit@5 {hit:d}  "
                            f"in-span {100 * share:3.0f}%")
    return asked


def import_locomo(client: Client, data: list[dict[str, Any]], keep: bool
                  ) -> list[tuple[str, dict[str, Any]]]:
    """Each conversation of ``data`` (a LoCoMo file's) imported into a Space of its own, unless
    it is there already; the questions asked of them (categories 1-5), each with its Space."""
    questions: list[tuple[str, dict[str, Any]]] = []
    for conversation in data:
        space = conversation["sample_id"]
        transcripts = locomo_transcripts(conversation)
        n = import_into(client, space, "personal",
                        ((f"{space}-{i}.json", json.dumps(t).encode())
                         for i, t in enumerate(transcripts, 1)), keep)
        print(f"imported {space}: {n} sessions", flush=True)
        questions += [(space, q) for q in locomo_questions(conversation, never_said=True)]
    return questions


def run_locomo(client: Client, args: argparse.Namespace) -> list[Asked]:
    questions = import_locomo(client, json.loads(args.locomo.read_text()), args.keep)
    asked = []
    for space, q in sample(questions, args):
        gold = str(q.get("answer", q.get("adversarial_answer", "")))
        one = ask_one("locomo", space, q["question"], gold, q["evidence"])
        f1 = None if q["category"] == NEVER_SAID else 100 * locomo_f1(
            without_citations(one.answer), gold, q["category"])
        asked.append(msgspec.structs.replace(one, category=LOCOMO_CATEGORIES[q["category"]],
                                             f1=f1))
        progress(asked[-1], f"F1 {asked[-1].f1 or 0:5.1f}  {asked[-1].category:<11}")
    return asked


def locomo_questions(conversation: dict[str, Any], *, never_said: bool = False
                     ) -> list[dict[str, Any]]:
    """The questions of a LoCoMo conversation that are asked: categories 1-4, with evidence and
    an answer; with ``never_said``, category 5 too (things nobody said: its
    ``adversarial_answer`` is what an answer would invent)."""
    wanted = set(LOCOMO_CATEGORIES) if never_said else set(LOCOMO_CATEGORIES) - {NEVER_SAID}
    return [q for q in conversation["qa"]
            if q.get("category") in wanted and q.get("evidence")
            and ("answer" in q or "adversarial_answer" in q)]


def sample(items: list[tuple[str, dict[str, Any]]], args: argparse.Namespace
           ) -> list[tuple[str, dict[str, Any]]]:
    shuffled = list(items)
    random.Random(args.seed).shuffle(shuffled)
    end = None if args.sample is None else args.offset + args.sample
    return shuffled[args.offset:end]


def progress(asked: Asked, score: str) -> None:
    echo = "  ECHO" if asked.echo else ""
    declined = "  DECLINED" if asked.declined else ""
    gold = "" if asked.evidence_gold is None else f"  evidence-gold {asked.evidence_gold:d}"
    print(f"  {score}{gold}{declined}  first {asked.first_token_s:5.2f} s  all "
          f"{asked.answer_s:5.2f} s{echo}  "
          f"{asked.question[:70]}\n      -> {' '.join(asked.answer.split())[:300]}", flush=True)


# -- tables ---------------------------------------------------------------------------------------


def latency_line(asked: Sequence[Asked]) -> str:
    firsts = [a.first_token_s for a in asked]
    totals = [a.answer_s for a in asked]
    shown = [a.evidence_s for a in asked]
    return (f"evidence p50 {statistics.median(shown):.2f} s / p95 {percentile(shown, 0.95):.2f} s;"
            f" first token p50 {statistics.median(firsts):.2f} s / p95 "
            f"{percentile(firsts, 0.95):.2f} s; whole answer p50 {statistics.median(totals):.2f} s"
            f" / p95 {percentile(totals, 0.95):.2f} s (n={len(asked)}; load average now "
            f"{os.getloadavg()[0]:.2f})")


def qmsum_table(asked: Sequence[Asked]) -> str:
    def mean(name: str, rows: Sequence[Asked]) -> float:
        return statistics.fmean(a.rouge[name] for a in rows)

    lines = ["| QMSum dev, specific queries | n | R-1 | R-2 | R-Lsum | hit@5 | in-span | "
             "evidence holds gold | declined | echoes |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, rows in per_space(asked, lambda a: a.space):
        hits = statistics.fmean(1.0 if a.hit5 else 0.0 for a in rows)
        share = statistics.fmean(a.in_span or 0.0 for a in rows)
        lines.append(f"| {name} | {len(rows)} | {mean('rouge1', rows):.1f} | "
                     f"{mean('rouge2', rows):.1f} | {mean('rougeLsum', rows):.1f} | "
                     f"{100 * hits:.0f}% | {100 * share:.0f}% | {_share(rows, 'evidence_gold')} "
                     f"| {_share(rows, 'declined')} | {sum(a.echo for a in rows)} |")
    for name, r1, r2, rl in QMSUM_PUBLISHED:
        lines.append(f"| published (test): {name} | | {r1} | {r2} | {rl} | | | | | |")
    return "\n".join(lines)


def locomo_table(asked: Sequence[Asked]) -> str:
    """F1 per category and over categories 1-4 ("all": the answerable ones), how often the
    answer declined, how often the evidence shown first held a gold evidence turn."""
    lines = ["| LoCoMo | n | F1 | declined | evidence holds gold | echoes | nothing found |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    by_category: dict[str, list[Asked]] = defaultdict(list)
    for a in asked:
        by_category[a.category].append(a)
    never = LOCOMO_CATEGORIES[NEVER_SAID]
    for name in [*LOCOMO_CATEGORIES.values(), "all"]:
        rows = ([a for a in asked if a.category != never] if name == "all"
                else by_category.get(name, []))
        if rows:
            f1 = "" if name == never else f"{statistics.fmean(a.f1 or 0 for a in rows):.1f}"
            label = "all answerable (1-4)" if name == "all" else name
            lines.append(f"| {label} | {len(rows)} | {f1} | {_share(rows, 'declined')} | "
                         f"{_share(rows, 'evidence_gold')} | {sum(a.echo for a in rows)} | "
                         f"{sum(a.nothing_found for a in rows)} |")
    lines.append(f"| published: {LOCOMO_PUBLISHED} | | | | | | |")
    return "\n".join(lines)


def _share(rows: Sequence[Asked], field: str) -> str:
    return f"{100 * statistics.fmean(bool(getattr(a, field)) for a in rows):.0f}%"


def ask_datasets(client: Client, args: argparse.Namespace, setting: str) -> list[Asked]:
    """The datasets asked for, each imported once, their tables printed."""
    asked: list[Asked] = []
    if args.qmsum is not None:
        qmsum = [msgspec.structs.replace(a, setting=setting) for a in run_qmsum(client, args)]
        asked += qmsum
        if qmsum:
            print(f"\n{qmsum_table(qmsum)}\n\nQMSum: {latency_line(qmsum)}", flush=True)
    if args.locomo is not None:
        locomo = [msgspec.structs.replace(a, setting=setting)
                  for a in run_locomo(client, args)]
        asked += locomo
        if locomo:
            print(f"\n{locomo_table(locomo)}\n\nLoCoMo: {latency_line(locomo)}", flush=True)
    return asked


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qmsum", type=Path)
    parser.add_argument("--series", nargs="*", default=[], help="QMSum series (default: all)")
    parser.add_argument("--locomo", type=Path)
    parser.add_argument("--sample", type=int, default=None, help="questions to ask (default all)")
    parser.add_argument("--offset", type=int, default=0, help="skip this many sampled questions")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep every imported session")
    parser.add_argument("--no-ask", action="store_true",
                        help="QMSum: only the search figures (hit@5, in-span), no answers")
    parser.add_argument("--set", dest="settings", action="append", default=[],
                        metavar="NAME=VALUE", help="a config.toml line for the daemon")
    parser.add_argument("--vary", metavar="NAME=V1,V2,...",
                        help="ask the questions once per value of this setting")
    parser.add_argument("--json", type=Path, help="write every answer and score here")
    parser.add_argument("--home", type=Path,
                        help="keep the daemon's home here and reuse what it imported before "
                             "(a short path: its sockets live inside)")
    parser.add_argument("--daemon-root", type=Path,
                        help="run the daemon from this checkout (e.g. the code before a change, "
                             "with a home of its own): the same questions, client and scores")
    args = parser.parse_args(argv)
    if args.qmsum is None and args.locomo is None:
        parser.error("give --qmsum DIR and/or --locomo FILE")

    home = short_home() if args.home is None else args.home
    home.mkdir(parents=True, exist_ok=True)
    config = home / "config" / "config.toml"  # (a reused home's earlier settings go)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("".join(f"{line}\n" for line in args.settings))
    os.environ["BRAINCUE_HOME"] = str(home)
    os.environ.setdefault("BRAINCUE_MODELS", str(default_models_dir()))
    os.environ.setdefault("BRAINCUE_CAPTURE", "off")  # a benchmark never listens
    print(f"machine: {machine()}", flush=True)
    daemon = start_daemon(home, root=args.daemon_root)
    asked: list[Asked] = []
    try:
        name, _, values = (args.vary or "").partition("=")
        with Client(timeout=600) as client:
            for value in values.split(",") if args.vary else [""]:
                setting = f"{name}={value}" if args.vary else ""
                if setting:
                    client.request(SettingsSet(key=name, value=value))
                    print(f"\n-- {setting}", flush=True)
                asked += ask_datasets(client, args, setting)
    finally:
        code = daemon.stop()
        if code != 0:
            print(f"daemon exited with {code}:\n{daemon.log()[-2000:]}", file=sys.stderr)
        if args.home is None:
            shutil.rmtree(home, ignore_errors=True)
    if args.json is not None:
        args.json.write_bytes(msgspec.json.format(msgspec.json.encode(
            {"machine": machine(), "args": {k: str(v) for k, v in vars(args).items()},
             "asked": asked}), indent=2))


if __name__ == "__main__":
    main()

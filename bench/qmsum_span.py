"""QMSum with the gold span as the only source: what the language model writes when the search
finds exactly the right place, scored as ``bench.qa`` scores the daemon's answers.

    .venv/bin/python -m bench.qmsum_span --qmsum QMSUM_DIR [--series ES2006 ...]
        [--models DIR --model qwen2.5-coder-1.5b] [--source compact|first:1500]

Each ``specific`` query gets one transcript source holding only the turns of its gold span:
``compact`` (the default) chooses among them as the daemon's ask does
(:func:`daemon.memory.grounding.compact_turns`, the same prompt and its source budget), and
``first:N`` gives the span's first N characters of turns instead (more of the right place).
The prompt is :func:`daemon.memory.grounding.build_prompt`'s, the model the daemon's
(``LlamaGenerator``, sampled as the daemon samples it, at most ``ask_answer_tokens`` tokens,
checked as the daemon checks it); no
daemon, search or store. Against ``bench.qa``'s ROUGE-1 on the same queries it separates what
the search and the turn choice cost from what the model's writing does.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from bench.common import default_models_dir, machine
from bench.qa import qmsum_series, rouge_f1, without_citations
from daemon.config import Settings
from daemon.llm.generate import LlamaGenerator, ModelLoad
from daemon.memory import grounding
from daemon.memory.ask import source_budget
from daemon.memory.grounding import Passage, Source
from daemon.models.registry import resolve_model


def span_source(meeting: dict[str, Any], query: dict[str, Any], source: str) -> Source:
    """The query's gold span of ``meeting`` as one transcript source (see the module doc)."""
    span = set(query["refs"])
    turns = [Passage(t["text"], t["speaker"], t["ref"]) for t in meeting["turns"]
             if t["ref"] in span]
    if source == "compact":
        passages = list(grounding.compact_turns(turns, query["query"]))
    else:
        limit, used, passages = int(source.removeprefix("first:")), 0, []
        for turn in turns:
            used += len(turn.speaker) + len(turn.text) + 2
            if used > limit and passages:
                break
            passages.append(turn)
    return Source(n=1, kind="transcript", title=meeting["title"], passages=tuple(passages),
                  label="transcript")


def prompt_budget(source: str, question: str) -> int:
    """The prompt's source budget: the daemon's for ``question``, or room for the whole
    ``first:N``."""
    if source == "compact":
        return source_budget(Settings(), question)
    return int(source.removeprefix("first:")) + 200


async def answer_all(generator: LlamaGenerator, args: argparse.Namespace) -> list[float]:
    framing = grounding.framing_for("project")
    tokens = Settings().ask_answer_tokens
    scores: list[float] = []
    for series in qmsum_series(args.qmsum, args.series):
        meetings = {m.stem: json.loads(m.read_text())
                    for m in sorted(series.glob(f"{series.name}*.json"))}
        for query in json.loads((series / "queries.json").read_text()):
            if query["kind"] != "specific":
                continue
            source = span_source(meetings[query["meeting"]], query, args.source)
            messages = grounding.build_prompt(framing, query["query"], [source],
                                              prompt_budget(args.source, query["query"]))
            written = [token async for token in generator.stream(messages, max_tokens=tokens)]
            raw = "".join(written)
            if len(written) >= tokens:  # as the daemon: an unfinished sentence is no answer
                raw = grounding.whole_sentences(raw)
            checked = grounding.check_answer(raw, [source], query["query"]).text
            answer = without_citations(checked)
            rouge = rouge_f1(answer, query["answer"])["rouge1"]
            scores.append(rouge)
            print(f"{series.name} R-1 {rouge:5.1f}  {len(answer.split()):3d} words  "
                  f"{query['query'][:80]}", flush=True)
    return scores


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qmsum", type=Path, required=True)
    parser.add_argument("--series", nargs="*", default=[], help="QMSum series (default: all)")
    parser.add_argument("--model", default="", help="the language model (default: the best "
                                                    "installed, as the daemon picks it)")
    parser.add_argument("--source", default="compact",
                        help="compact (the daemon's turn choice within the gold span) or "
                             "first:N (the span's first N characters of turns)")
    parser.add_argument("--models", type=Path, default=None,
                        help="the models directory (default: the daemon's); a model tried here "
                             "belongs in a directory of its own, or every daemon would run it")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if args.source != "compact" and not args.source.removeprefix("first:").isdigit():
        parser.error("--source: compact or first:N")
    path = resolve_model("llm", args.model, args.models or default_models_dir())
    print(f"machine: {machine()}; model {path.stem}; source {args.source}", flush=True)
    generator = LlamaGenerator(ModelLoad(path, threads=args.threads, n_ctx=4096))
    try:
        scores = trio.run(answer_all, generator, args)
    finally:
        generator.close()
    print(f"QMSum gold span as the source ({args.source}), {path.stem}: n {len(scores)}, "
          f"mean ROUGE-1 {statistics.fmean(scores):.1f}")


if __name__ == "__main__":
    main()

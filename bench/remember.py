"""Keeping a 30-minute meeting: time, tokens generated and peak memory.

    .venv/bin/python -m bench.remember [--models-dir DIR] [--model NAME] [--threads N]
                                       [--context TOKENS] [--minutes M]

What is timed is ``Rememberer.remember(session, "keep")`` — the archive (summarised in pieces
that fit the context), the extraction of assertions and memory candidates, reconciliation
against last week's assertions of the same Space (seeded, so that the model is asked to rule),
and every write — with the real language and embedding models. The transcript is synthetic:
four people working through an agenda at about 150 spoken words a minute.
"""

from __future__ import annotations

import argparse
import random
import resource
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from bench.common import default_models_dir, machine
from daemon.config import Settings
from daemon.llm import LlamaEmbedder, LlamaGenerator, ModelLoad
from daemon.memory.remember import Rememberer
from daemon.models.registry import model_path
from daemon.store.records import NewAssertion, NewTurn
from daemon.store.store import Store

WORDS_PER_MINUTE = 150
PEOPLE = ["me", "Dana", "Priya", "Marco"]
PROJECTS = ["Atlas", "Beacon", "Cobalt", "Delta", "Ember", "Fjord", "Granite", "Harbor",
            "Iris", "Juniper", "Kestrel", "Lumen"]
MONTHS = ["March", "April", "May", "June"]


def agenda_item(rng: random.Random, project: str) -> list[str]:
    """About two minutes of talk about one project: status, a problem, options, a decision,
    an owner, an amount, an open question."""
    old_day, new_day = rng.sample(range(3, 28), 2)
    month = rng.choice(MONTHS)
    owner = rng.choice(PEOPLE[1:])
    amount = rng.randrange(8, 40) * 1000
    return [
        f"Next up is {project}. Where are we with it since last week?",
        f"The {project} team finished the integration tests on Tuesday, and most of the open "
        "bugs from the last review are closed, but two of them still block the release.",
        "What are the two blockers exactly? I remember one was about the export job.",
        "Yes, the export job times out on large accounts, and the other one is the login "
        "page on older phones. Both need about a week of work.",
        f"So the {month} {old_day} date is not realistic any more, is it?",
        f"I don't think so. We could ship on {month} {old_day} without the export fix, or move "
        f"the release to {month} {new_day} and ship everything together.",
        "Shipping without the export would annoy the big customers, they asked for it twice.",
        f"Agreed. Then we move the {project} release to {month} {new_day} and ship it complete.",
        f"{owner} will tell the customer team about the new date by Thursday.",
        f"And the budget? The contractor asked for {amount:,} euros for the extra week.",
        "That is within what we set aside, so I am fine with it. Let's approve it.",
        f"One thing we have not settled is who maintains {project} after the release.",
        "Let's leave that open and come back to it next week with a proposal.",
    ]


def meeting(minutes: float, seed: int = 3) -> list[NewTurn]:
    """Turns until ``minutes`` have passed, a second of silence between turns."""
    rng = random.Random(seed)
    lines = ["Good morning everyone, let's go through the projects one by one.",
             "I prefer short written updates over long calls, so let's be quick."]
    for project in PROJECTS * 4:
        lines += agenda_item(rng, project)
    turns: list[NewTurn] = []
    at = 0.0
    for i, line in enumerate(lines):
        if at >= minutes * 60:
            break
        seconds = len(line.split()) / WORDS_PER_MINUTE * 60
        turns.append(NewTurn(speaker=PEOPLE[i % len(PEOPLE)], text=line, start=at,
                             end=at + seconds))
        at += seconds + 1.0
    return turns


def last_week(space_id: int) -> list[NewAssertion]:
    """What the Space already believes: the old dates the meeting moves."""
    return [NewAssertion(kind="decision", text=f"The {p} release is planned for March 10.",
                         source="user", space_id=space_id) for p in PROJECTS[:6]]


@dataclass
class Usage:
    calls: int = 0
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class CountingGenerator(LlamaGenerator):
    """The llama.cpp generator, recording llama.cpp's token usage per kind of call."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.by_kind: dict[str, Usage] = defaultdict(Usage)  # (self.usage: the sum)
        self._kind = ""

    def _load(self) -> Any:
        llm = super()._load()
        if not getattr(llm, "_bench_wrapped", False):
            complete = llm.create_chat_completion

            def counted(*args: Any, **kwargs: Any) -> Any:
                result = complete(*args, **kwargs)
                usage = self.by_kind[self._kind]
                usage.prompt_tokens += result["usage"]["prompt_tokens"]
                usage.completion_tokens += result["usage"]["completion_tokens"]
                return result

            llm.create_chat_completion = counted
            llm._bench_wrapped = True
        return llm

    async def generate(self, messages: Any, output_type: Any, **kwargs: Any) -> Any:
        self._kind = output_type.__name__
        started = time.perf_counter()
        try:
            return await super().generate(messages, output_type, **kwargs)
        finally:
            self.by_kind[self._kind].calls += 1
            self.by_kind[self._kind].seconds += time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", type=Path, default=default_models_dir(),
                        help="models directory (default: BRAINCUE_MODELS or the user's)")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--embed-model", default="all-minilm-l6-v2")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--context", type=int, default=4096, help="the model's context tokens")
    parser.add_argument("--minutes", type=float, default=30.0)
    args = parser.parse_args()

    turns = meeting(args.minutes)
    words = sum(len(t.text.split()) for t in turns)
    chars = sum(len(t.text) for t in turns)
    print(f"{machine()} at start; {args.model} ({args.threads} threads, context "
          f"{args.context}), {args.embed_model}")
    print(f"transcript: {len(turns)} turns, {words} words, {chars} characters, "
          f"{(turns[-1].end or 0) / 60:.1f} minutes")

    generator = CountingGenerator(ModelLoad(model_path(args.model, args.models_dir),
                                            threads=args.threads, n_ctx=args.context))
    embedder = LlamaEmbedder(model_path(args.embed_model, args.models_dir),
                             threads=args.threads, batch=32)
    settings = Settings(memory_enabled=True, llm_context=args.context)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp), embedder)
        try:
            space = store.create_space("Weekly")
            store.add_assertions(last_week(space.id))
            session = store.create_session(space_id=space.id, title="Weekly projects review",
                                           participants=PEOPLE)
            store.append_turns(session.id, turns)
            store.end_session(session.id)
            rememberer = Rememberer(store, generator=lambda: generator,
                                    settings=lambda: settings)
            started = time.perf_counter()
            outcome = trio.run(rememberer.remember, session.id, "keep")
            elapsed = time.perf_counter() - started
        finally:
            store.close()
            generator.close()
            embedder.close()

    header = f"{'call':<20} {'calls':>5} {'seconds':>8} {'prompt tok':>10} {'generated':>9}"
    print(header)
    print("-" * len(header))
    for kind, u in generator.by_kind.items():
        print(f"{kind:<20} {u.calls:>5} {u.seconds:>8.1f} {u.prompt_tokens:>10} "
              f"{u.completion_tokens:>9}")
    generated = sum(u.completion_tokens for u in generator.by_kind.values())
    model_s = sum(u.seconds for u in generator.by_kind.values())
    print(f"keep took {elapsed:.1f} s ({model_s:.1f} s in the language model); "
          f"{generated} tokens generated ({generated / model_s if model_s else 0:.1f}/s overall)")
    print(f"kept: archived {outcome.archived}, {outcome.assertions} assertions "
          f"({outcome.superseded} superseding), {outcome.duplicates} duplicates, "
          f"{outcome.candidates} memory candidates, {outcome.redactions} redactions")
    for note in outcome.notes:
        print(f"note: {note}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"peak RSS {peak:.0f} MiB")
    print(f"{machine()} at end")


if __name__ == "__main__":
    main()

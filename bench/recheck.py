"""The ask's check run again on the answers a ``bench.qa --json`` run recorded: a change to the
check (what an answer keeps, drops or declines) scored without the language model.

    PYTHONPATH=$PWD python -m bench.recheck RUN.json --home H [--json OUT] [--show]
        [--as-written]

``H`` is the home the run imported into (``bench.qa ... --home H``; its daemon stopped). For
each recorded answer the model wrote (``streamed``), the sources are gathered again as the
daemon gathers them and fitted as the model read them (``bench.prompt_evidence``, the run's
``ask_*`` settings), and the model's text goes through the check of the code this runs from
(``daemon.memory.ask``), as the daemon's answer does; an answer declined before the model
wrote is kept as recorded, and one the code reads off the named one's words without a model
("When did ...?", ``daemon.memory.when``) is read again. Printed: the run's tables scored
again, how many answers changed (``--show``: each, before and after). On the code the run
was made with, the answers it reproduces say how exact the replay is (an answer cut at its
length is known only by its shape: long, its last sentence unfinished). ``--as-written``
shows the model's text as it wrote it wherever the check declines it: what the declines cost
in the scores, and how many never-said questions they keep from an answer.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Sequence
from pathlib import Path

import msgspec

from bench.prompt_evidence import AskSources
from bench.qa import (
    LOCOMO_CATEGORIES,
    Asked,
    locomo_f1,
    locomo_table,
    qmsum_table,
    rouge_f1,
    without_citations,
)
from daemon.memory import grounding
from daemon.memory.ask import check_written, decided_before_model

CUT_CHARS = 300  # a recorded answer at least this long, its last sentence unfinished: cut


class Run(msgspec.Struct):
    args: dict[str, str]
    asked: list[Asked]


def rechecked(asking: AskSources, one: Asked, as_written: bool = False) -> Asked:
    """``one`` with the model's recorded text checked again, and scored; ``as_written``: the
    model's text shown as it wrote it wherever the check declines it (what the declines cost
    and what they keep out)."""
    if one.declined and not one.streamed:  # declined before the model wrote
        return one
    sources, forced = asking.gather(one.question, one.space)
    _, dated = decided_before_model(one.question, sources, forced)
    if dated is not None:  # read off the named one's words, no model: stated as the daemon does
        text, declined = grounding.check_answer(dated, sources, one.question).text, False
    else:
        read = asking.read(one.question, sources, forced)
        raw = one.streamed
        if len(raw) >= CUT_CHARS:  # stopped at its length: the unfinished sentence goes
            raw = grounding.whole_sentences(raw)
        checked, _ = check_written(raw, read, one.question,
                                   grounding.speakers_of(sources).values())
        declined = (not checked.text.strip()
                    or grounding.echoes_question(checked.text, one.question))
        text = grounding.nothing_says(one.question) if declined else checked.text
        if declined and as_written and raw.strip() and raw.strip() != text:
            text, declined = raw.strip(), False
    again = msgspec.structs.replace(one, answer=text, declined=declined)
    if one.dataset == "locomo":
        category = {v: k for k, v in LOCOMO_CATEGORIES.items()}[one.category]
        f1 = None if one.f1 is None else 100 * locomo_f1(without_citations(text), one.gold,
                                                         category)
        return msgspec.structs.replace(again, f1=f1)
    return msgspec.structs.replace(again, rouge=rouge_f1(without_citations(text), one.gold))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a bench.qa --json file")
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--json", type=Path, help="write the answers checked again here")
    parser.add_argument("--show", action="store_true", help="print each changed answer")
    parser.add_argument("--as-written", action="store_true",
                        help="show the model's text as written wherever the check declines it")
    args = parser.parse_args(argv)
    run = msgspec.json.decode(args.run.read_bytes(), type=Run)
    asking = AskSources(args.home)
    settings = dict(line.split("=", 1) for line in ast.literal_eval(run.args.get("settings",
                                                                                  "[]")))
    asking.settings = msgspec.convert(
        {**msgspec.to_builtins(asking.settings),
         **{k: v for k, v in settings.items() if k.startswith("ask_")}},
        type(asking.settings), strict=False)
    try:
        again = [rechecked(asking, one, args.as_written) for one in run.asked]
    finally:
        asking.close()
    changed = [(a, b) for a, b in zip(run.asked, again, strict=True) if a.answer != b.answer]
    for name, table in (("locomo", locomo_table), ("qmsum", qmsum_table)):
        rows = [(a, b) for a, b in zip(run.asked, again, strict=True) if a.dataset == name]
        if rows:
            print(f"recorded:\n{table([a for a, _ in rows])}\n\nchecked again:\n"
                  f"{table([b for _, b in rows])}\n")
    print(f"{len(changed)} of {len(again)} answers changed")
    if args.show:
        for a, b in changed:
            print(f"- {a.question}\n    before: {a.answer}\n    after:  {b.answer}")
    if args.json is not None:
        args.json.write_bytes(msgspec.json.format(msgspec.json.encode(again), indent=2))


if __name__ == "__main__":
    main()

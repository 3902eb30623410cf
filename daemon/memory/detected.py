"""The model words what the turn detector found: a decision record or an action item, each
checked against the turns it rests on.

For each turn :mod:`daemon.memory.detect` finds, the model is shown that turn and a few around
it (a few hundred words) and fills one record in a fixed JSON schema: for a decision, what was
settled, the option chosen, the options rejected and the reason; for an action item, its
owner, the task and when it is due. The record is then checked against those turns and only
what they say is kept: a chosen option or a task most of whose words nobody said is dropped
with its record; an alternative, a reason or a due date they do not say is left out; an owner
must be one of the speakers. What passes becomes an :class:`ExtractedAssertion` (then checked
by the content rules like every other), and a record that repeats one already kept is merged
into it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Annotated, Any

import msgspec

from daemon.errors import BrainCueError
from daemon.llm.generate import ChatMessage, Generator
from daemon.memory import validate
from daemon.memory.extract import ExtractedAssertion, check_assertion
from daemon.memory.pieces import repeats

log = logging.getLogger(__name__)

SPAN_BEFORE = 3  # turns shown before a detected one
SPAN_AFTER = 2  # and after
LINE_CHARS = 400
GROUNDED = 0.6  # share of a field's content words the turns shown must say
RECORD_TOKENS = 160
# the words a sentence stating a decision frames it with, said or not
FRAMING = validate.content_words(
    "group team everyone decided decide decision chose choose chosen agreed agree settled "
    "going use using will instead rather because")


def _text(chars: int) -> Any:
    return Annotated[str, msgspec.Meta(max_length=chars)]


class DecisionRecord(msgspec.Struct, frozen=True):
    settled: bool  # whether these turns settle something at all
    decision: _text(200) = ""  # type: ignore[valid-type]
    chosen: _text(100) = ""  # type: ignore[valid-type]
    rejected: Annotated[list[_text(100)],  # type: ignore[valid-type]
                        msgspec.Meta(max_length=3)] = []
    reason: _text(200) = ""  # type: ignore[valid-type]


class ActionRecord(msgspec.Struct, frozen=True):
    given: bool  # whether someone takes on or is given work here
    owner: _text(60) = ""  # type: ignore[valid-type]
    task: _text(160) = ""  # type: ignore[valid-type]
    due: _text(60) = ""  # type: ignore[valid-type]


def span(turns: Sequence[tuple[str, str]], index: int) -> range:
    return range(max(0, index - SPAN_BEFORE), min(len(turns), index + SPAN_AFTER + 1))


def _lines(turns: Sequence[tuple[str, str]], shown: range) -> str:
    out = []
    for i in shown:
        speaker, text = turns[i]
        words = " ".join(text.split())
        if len(words) > LINE_CHARS:
            words = words[:LINE_CHARS].rsplit(" ", 1)[0] + " ..."
        out.append(f"{speaker}: {words}")
    return "\n".join(out)


def decision_prompt(turns: Sequence[tuple[str, str]], index: int) -> list[ChatMessage]:
    system = ("You write the minutes of a meeting from a few of its turns. Use only what the "
              "speakers said. Reply with JSON only.")
    user = (f"{_lines(turns, span(turns, index))}\n\n"
            "Do these turns settle a decision of the group (not just a proposal or an "
            "opinion)? If not, answer {\"settled\": false}. If so, answer with \"settled\": "
            "true, \"decision\": one sentence that states what was decided, \"chosen\": the "
            "option chosen in a few of their words, \"rejected\": the options they said they "
            "will not take (or []), \"reason\": why, as they said it (or \"\").")
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)]


def action_prompt(turns: Sequence[tuple[str, str]], index: int) -> list[ChatMessage]:
    shown = span(turns, index)
    names = sorted({turns[i][0] for i in shown})
    system = ("You write the action items of a meeting from a few of its turns. Use only what "
              "the speakers said. Reply with JSON only.")
    user = (f"{_lines(turns, shown)}\n\n"
            "Does someone here take on a piece of work or is given one? If not, answer "
            "{\"given\": false}. If so, answer with \"given\": true, \"owner\": who will do "
            f"it (one of: {', '.join(names)}), \"task\": what they will do, in a few of the "
            "words said, \"due\": when, as said (or \"\").")
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)]


def said_in(value: str, said: set[str]) -> bool:
    """Whether most of ``value``'s content words are in ``said`` (an empty value is not)."""
    words = validate.content_words(value)
    return bool(words) and len(words & said) / len(words) >= GROUNDED


def decision_of(record: DecisionRecord, turns: Sequence[tuple[str, str]], index: int,
                people: Sequence[str]) -> ExtractedAssertion | None:
    """The decision ``record`` states as the turns around ``index`` support it, or None."""
    shown = span(turns, index)
    said = set().union(*(validate.content_words(turns[i][1]) for i in shown))
    if not record.settled or not said_in(record.chosen, said):
        return None
    if not said_in(record.decision, said | FRAMING):
        return None
    item = ExtractedAssertion(
        kind="decision", text=record.decision, chosen=record.chosen,
        alternatives=[a for a in record.rejected if said_in(a, said)],
        reasoning=record.reason if said_in(record.reason, said) else "",
        evidence=" ".join(turns[index][1].split())[:160])
    return check_assertion(item, people, [turns[i][1] for i in shown])


def action_of(record: ActionRecord, turns: Sequence[tuple[str, str]], index: int,
              people: Sequence[str]) -> ExtractedAssertion | None:
    """The action item ``record`` states as the turns around ``index`` support it, or None:
    its owner one of the speakers shown, its task said there."""
    shown = span(turns, index)
    said = set().union(*(validate.content_words(turns[i][1]) for i in shown))
    speakers = {turns[i][0] for i in shown}
    owner = validate.owner_of(record.owner, sorted(speakers))
    if not record.given or owner is None or not said_in(record.task, said):
        return None
    task = record.task.strip().rstrip(".")
    if not task:
        return None
    due = record.due if said_in(record.due, said) else ""
    taken = turns[index][0] == owner
    item = ExtractedAssertion(
        kind="commitment" if taken else "task",
        text=f"{owner} will {task[0].lower()}{task[1:]}.", owner=owner, due=due,
        evidence=" ".join(turns[index][1].split())[:160])
    return check_assertion(item, people, [turns[i][1] for i in shown])


async def worded(generator: Generator, turns: Sequence[tuple[str, str]],
                 found: dict[str, list[int]], people: Sequence[str]
                 ) -> tuple[list[ExtractedAssertion], list[str]]:
    """The records the model fills for the detected turns (``found``: head -> turn indices),
    checked and each kept once; and the reasons of the calls that failed."""
    kept: list[ExtractedAssertion] = []
    failures: list[str] = []
    for head, indices in found.items():
        for index in sorted(indices):
            try:
                if head == "decision":
                    d = await generator.generate(decision_prompt(turns, index), DecisionRecord,
                                                 max_tokens=RECORD_TOKENS, temperature=0.0)
                    item = decision_of(d, turns, index, people)
                else:
                    a = await generator.generate(action_prompt(turns, index), ActionRecord,
                                                 max_tokens=RECORD_TOKENS, temperature=0.0)
                    item = action_of(a, turns, index, people)
            except BrainCueError as e:
                failures.append(str(e))
                continue
            if item is None:
                log.info("a detected %s at turn %d not kept: the turns do not say it",
                         head, index)
            elif not repeats(item, kept):
                kept.append(item)
    return kept, failures

"""What a meeting gives someone to do, stated by the real small model (Qwen2.5-Coder 0.5B) from
the close of a real AMI meeting (QMSum dev TS3009a): the owners and kinds are read off the
transcript (the model is never asked who), and what the model writes is kept only when it is
one sentence about the owner made of the words said."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from daemon.llm.generate import LlamaGenerator, ModelLoad
from daemon.memory import validate
from daemon.memory.extract import (
    Undertaken,
    find_undertakings,
    group_undertakings,
    undertaking_assertion,
    undertaking_prompt,
)
from daemon.memory.remember import UNDERTAKING_TOKENS, chat

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


async def test_the_real_model_states_what_the_close_of_a_meeting_gives_each_owner(
    installed_model: Callable[[str], Path], test_data: Path
) -> None:
    meeting = test_data / "meetings" / "TS3009a.json"
    turns = [(t["speaker"], t["text"]) for t in json.loads(meeting.read_text())["turns"]]
    close = turns[480:]  # the Project Manager hands out the work before the meeting ends
    people = validate.speakers(s for s, _ in turns)
    groups = group_undertakings(find_undertakings(close, people))
    assert [(g[0].owner, g[0].assigned) for g in groups] == [
        ("Marketing", False),  # "I will investigate."
        ("Industrial Designer", True),  # "you will look into …" — "… also my task, yeah."
    ]
    generator = LlamaGenerator(ModelLoad(installed_model("qwen2.5-coder-0.5b"), threads=2, n_ctx=4096))
    try:
        stated = []
        for group in groups:
            answer = await generator.generate(chat(undertaking_prompt(close, group)),
                                              Undertaken, max_tokens=UNDERTAKING_TOKENS)
            stated.append((answer.text, undertaking_assertion(answer, group, close)))
    finally:
        generator.close()
    for said, item in stated:
        print(f"{said!r} -> {None if item is None else (item.kind, item.owner, item.text)}")
    kept = [item for _, item in stated if item is not None]
    assert kept, "the model stated neither task in the words said"
    for item in kept:
        assert item.text.startswith(f"{item.owner} will ")
        assert validate.is_statement(item.text, [t for _, t in turns], names=people)

"""The closing ruling with the real small model (Qwen2.5-Coder 0.5B): a later statement that an
open commitment was done, shown beside it. What must hold whatever a 0.5B model rules: the
prompt offers done/dropped only for an open item, the ruling decodes, and a closing is applied
only to the open item. What it ruled is printed (it is reported, not pinned)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from daemon.llm.generate import LlamaGenerator, ModelLoad
from daemon.memory.extract import Existing, Ruling, plan_from_ruling, reconcile_prompt
from daemon.memory.remember import RULING_TOKENS, chat

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

CASES = [
    ("Priya sent the revised budget to everyone yesterday.", "done"),
    ("We no longer need the revised budget; finance approved the old one.", "dropped"),
    ("Atlas launches on March 3rd.", "separate"),
]


async def test_the_real_model_rules_on_closing_an_open_item(
    installed_model: Callable[[str], Path]
) -> None:
    generator = LlamaGenerator(ModelLoad(installed_model("qwen2.5-coder-0.5b"), threads=2, n_ctx=4096))
    existing = [Existing(7, "commitment", "Priya will send the revised budget by Friday.",
                         "2026-11-24", open=True),
                Existing(8, "decision", "The offsite is in Lisbon.", "2026-11-24")]
    try:
        ruled = []
        for text, expected in CASES:
            messages = reconcile_prompt(text, "fact", existing)
            assert '"done" if it says an open task' in messages[0]["content"]
            ruling = await generator.generate(chat(messages), Ruling, max_tokens=RULING_TOKENS)
            plan = plan_from_ruling(ruling, existing, "fact")
            if plan.closes is not None:
                assert plan.target == 7  # only the open item can be closed
            ruled.append((expected, ruling.verdict, ruling.existing, plan.action, plan.closes))
    finally:
        generator.close()
    for expected, verdict, on, action, closes in ruled:
        print(f"expected {expected}: ruled {verdict} on {on} -> {action} {closes}")

"""``bench.recheck``: the recorded model text checked again without a model, and shown as
written where the check declines it."""

from __future__ import annotations

from typing import cast

from bench.prompt_evidence import AskSources
from bench.qa import Asked
from bench.recheck import rechecked
from daemon.memory.grounding import Passage, Source

SOURCE = Source(n=1, kind="transcript", title="Melanie and Caroline, a chat", passages=(
    Passage("I ran a charity race for mental health last Saturday.", "Melanie"),))


class _Gathered:
    """The sources a question gathers, fixed (the store's recall is not under test)."""

    def gather(self, question: str, space: str) -> tuple[list[Source], list[int]]:
        return [SOURCE], []

    def read(self, question: str, sources: list[Source], forced: list[int]) -> list[Source]:
        return sources


def asked(streamed: str) -> Asked:
    return Asked(dataset="locomo", space="conv", question="What did Melanie run for?",
                 gold="mental health", answer="", first_token_s=0.0, answer_s=0.0,
                 echo=False, category="single-hop", f1=0.0, streamed=streamed)


def test_a_supported_answer_is_kept_and_scored() -> None:
    again = rechecked(cast(AskSources, _Gathered()),
                      asked("Melanie ran a charity race for mental health [1]."))
    assert not again.declined
    assert again.answer == "Melanie ran a charity race for mental health [1]."
    assert again.f1 is not None and again.f1 > 40  # "mental health" of 7 words


def test_as_written_shows_what_the_check_declines() -> None:
    invented = "Melanie ran a marathon in Paris for her dog Luna [1]."
    checked = rechecked(cast(AskSources, _Gathered()), asked(invented))
    assert checked.declined and checked.answer.startswith("Nothing in memory")
    shown = rechecked(cast(AskSources, _Gathered()), asked(invented), as_written=True)
    assert not shown.declined and shown.answer == invented

"""The context model of the gate: a value judged by the words around it and the turn before."""

from __future__ import annotations

import pytest

from bench.secrets import DEFAULT_DATA, load
from bench.secrets_train import fit
from daemon.sensitive import weights
from daemon.sensitive.gate import mask_lines
from daemon.sensitive.judge import candidates, judged

# said in ways none of the spoken rules was written for
JUDGED: list[tuple[str, str, str]] = [
    ("", "The shed padlock, I reset it to two seven one eight yesterday.", "two seven one eight"),
    ("", "Our storage unit keypad takes 3 9 0 4 7, then the bell.", "3 9 0 4 7"),
    ("", "The spare laptop unlocks with Quill-Marsh-508 for now.", "Quill-Marsh-508"),
    ("What's your voicemail PIN?", "Mine is 5 0 2 9.", "5 0 2 9"),
]

STAYS: list[tuple[str, str]] = [
    ("", "Order 7715-2290 shipped on Tuesday."),
    ("", "The meeting moved to room 4012 at 3."),
    ("", "Version 2.14.1 fixed the lock bug."),
    ("", "The new lock cost $1,450 with fitting."),
    ("", "Call extension 2291 for the locksmith."),
    ("", "We sold 4417 units in March."),
    ("", "The gate code changes on 12 March 2027."),
    ("How many people came?", "Mine is 5 0 2 9."),
    ("", "The tracking code is 1Z999AA10123456784, it comes Monday."),
]


@pytest.mark.parametrize(("before", "text", "value"), JUDGED)
def test_a_value_given_as_a_credential_is_masked(before: str, text: str, value: str) -> None:
    masked = mask_lines([text], before)[0]
    assert value not in masked and "[redacted password]" in masked
    assert [text[f.start:f.end] for f in judged(text, before)] == [value]


@pytest.mark.parametrize(("before", "text"), STAYS)
def test_a_look_alike_stays(before: str, text: str) -> None:
    assert mask_lines([text], before) == [text]
    assert list(judged(text, before)) == []


def test_a_value_with_no_word_of_a_secret_around_it_is_not_judged() -> None:
    text = "It's 4417-2291."
    assert [text[c.start:c.end] for c in candidates(text)] == ["4417-2291"]
    assert list(judged(text)) == []
    assert [f.kind for f in judged(text, "And the door code?")] == ["password"]


def test_candidates_are_the_value_shaped_spans() -> None:
    text = ("Use Tide-Pool-77 or four four one nine, not 12, in locker B712 by 10:30; "
            "the well-known oh oh oh and camelCaseName are words")
    assert [text[c.start:c.end] for c in candidates(text)] == [
        "Tide-Pool-77", "four four one nine", "B712"]


def test_the_weights_are_what_training_on_the_set_gives() -> None:
    bias, fitted = fit(load(DEFAULT_DATA))
    assert bias == pytest.approx(weights.BIAS, abs=1e-3)
    assert fitted.keys() == weights.WEIGHTS.keys()
    assert all(fitted[n] == pytest.approx(w, abs=1e-3) for n, w in weights.WEIGHTS.items())

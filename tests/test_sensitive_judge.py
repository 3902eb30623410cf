"""The context model of the gate: a value judged by the words around it and the turn before."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench.secrets import DEFAULT_DATA, load
from bench.secrets_train import fit, lexicon, unlisted
from daemon.app import Daemon
from daemon.config import Config
from daemon.models.registry import WORD_VECTORS
from daemon.sensitive import judge
from daemon.sensitive.gate import clear_cache, mask_lines
from daemon.sensitive.judge import (
    CLASSES,
    MODEL,
    WEIGHTS_FILE,
    Lexicon,
    WeightsUnavailable,
    candidates,
    judged,
    load_model,
    use_vectors,
)
from daemon.sensitive.vectors import VectorsUnavailable, WordVectors, read


@pytest.fixture(scope="module")
def vectors(installed_model: Callable[[str], Path]) -> WordVectors:
    return read(installed_model(WORD_VECTORS))


@pytest.fixture
def vectors_reset() -> Iterator[None]:
    """A test that points the judge elsewhere; the next test's set-up points it back."""
    yield
    use_vectors(None)
    clear_cache()

# said in ways none of the spoken rules was written for
JUDGED: list[tuple[str, str, str]] = [
    ("", "The shed padlock, I reset it to two seven one eight yesterday.", "two seven one eight"),
    ("", "Our storage unit keypad takes 3 9 0 4 7, then the bell.", "3 9 0 4 7"),
    ("", "The spare laptop unlocks with Quill-Marsh-508 for now.", "Quill-Marsh-508"),
    ("What's your voicemail PIN?", "Mine is 5 0 2 9.", "5 0 2 9"),
    # a passphrase said as plain words: after its cue (whose rule alone takes the first word),
    # or as the answer, NATO words mixed with digits
    ("", "The passphrase on the archive is tidal marble thirty six.", "tidal marble thirty six"),
    ("Which password did you put on the backup disk?", "Yankee four golf eight, all one word.",
     "Yankee four golf eight"),
    ("", "The pin for the community centre door is 2023.", "2023"),
    # "ends in" says a code's last digits, not a year
    ("", "My banking PIN ends in 2024, the card is in the drawer.", "2024"),
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
    ("", "The password is on the sticky note by the till."),
    ("", "The passphrase is in the vault with the others."),
    ("", "The password is the same as last time."),
    ("What's the surname for the password reset?", "Kowalski, kilo oscar whiskey alpha lima."),
    ("", "The phrase he kept using was blue sky thinking."),
    ("What is the wifi password?", "Ask Maria, she knows it."),
    # a year with its month: an answer resolving "last month" beside a word of secrets
    ("", "Maria took up community work with her church friends in August 2023."),
    ("", "They met at the community garden on 7 July, 2023 and in May 2022."),
    # a year after a word of time: a meeting's "this year" as an answer resolves it
    ("", "Marketing said: If we look back and not uh look at only remote controls I think it's "
         "important to see that the trends are quite the same in many areas so currently the "
         "the trends that we see in l in l big cities like Paris and Milan, well, it seems that "
         "in 2026 things should have uh a fruit and vegetable uh way of of look or feel [2]."),
    ("", "Since 2019 the door code has been the same, and by 2027 it changes."),
    # a cue's sentence ends before the verb of another
    ("", "I noticed a spiderman pin on your purse. Is Spider-Man your favorite superhero?"),
    # a number a unit follows, though the turn before asks for something
    ("That's a tough one! How long do you usually hold that pose?",
     "I typically hold it for 30-60 seconds. It really helps with building strength!"),
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


def test_each_line_is_judged_with_the_line_before_it_as_its_turn_before() -> None:
    # an archive's header: the summary's "key" on the next line is not said of the title's date
    archive = "Topic: Standup 2026-12-04\nSummary: The key point was speed.\nWho: Dana, me"
    assert list(judged(archive)) == []
    # a document that names what the next line holds
    note = "Router\nDoor code\n4471\nCall Dana before noon."
    assert [note[f.start:f.end] for f in judged(note)] == ["4471"]
    asked = "Which password did you put on the backup disk?\nYankee four golf eight, all one word."
    assert [asked[f.start:f.end] for f in judged(asked)] == ["Yankee four golf eight"]


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
    assert bias == pytest.approx(MODEL.bias, abs=1e-3)
    assert fitted.keys() == MODEL.weights.keys()
    assert all(fitted[n] == pytest.approx(w, abs=1e-3) for n, w in MODEL.weights.items())


def test_the_weights_file_is_checked_against_its_pin_and_version(tmp_path: Path) -> None:
    assert load_model() == MODEL and MODEL.threshold == 0.5 and len(MODEL.weights) > 100
    with pytest.raises(WeightsUnavailable, match=r"missing .*reinstall BrainCue"):
        load_model(tmp_path / "judge-weights.json")
    altered = tmp_path / "altered.json"
    altered.write_bytes(WEIGHTS_FILE.read_bytes().replace(b'"bias": -', b'"bias": '))
    with pytest.raises(WeightsUnavailable, match="not the shipped file"):
        load_model(altered)
    other = tmp_path / "other.json"
    other.write_text('{"format": "braincue-secret-judge", "version": 2}')
    digest = hashlib.sha256(other.read_bytes()).hexdigest()
    with pytest.raises(WeightsUnavailable, match="v2, not braincue-secret-judge v1"):
        load_model(other, digest)


# words of the held-out parts that no list holds, placed by their word pieces
PLACED = [("passkeys", "secret"), ("pincodes", "secret"), ("doorcode", "secret"),
          ("padlocks", "opens"), ("masterkey", "secret"), ("alarmcode", "secret")]


@pytest.mark.parametrize(("word", "kind"), PLACED)
def test_an_unlisted_word_is_placed_by_its_vector(vectors: WordVectors, word: str,
                                                  kind: str) -> None:
    assert all(word not in listed for listed in CLASSES.values())
    assert kind in Lexicon(CLASSES, vectors).of(word)
    assert Lexicon(CLASSES).of(word) == ()


# nor the parts of listed compounds ("passcode", "deadbolt", "mastercode"), nor fragments
@pytest.mark.parametrize("word", ["pineapple", "harbor", "courier", "meeting", "weather",
                                  "printer", "shipment", "passed", "dead", "master", "aac"])
def test_an_unrelated_word_is_placed_nowhere(vectors: WordVectors, word: str) -> None:
    assert Lexicon(CLASSES, vectors).of(word) == ()


def test_a_word_splits_into_the_models_pieces(vectors: WordVectors) -> None:
    assert vectors.split("mastercode") == ["\u2581master", "code"]
    assert vectors.split("password") == ["\u2581password"]
    assert vectors.head("mastercode") == "code" and vectors.head("padlocks") == "lock"
    assert vectors.head("password") is None and vectors.head("aac") is None
    assert vectors.split("aac") == ["\u2581aa", "c"] and vectors.vector("aac") is None
    first, again = vectors.vector("deadbolt"), vectors.vector("deadbolt")
    assert first is not None and again is not None and (first == again).all()
    assert abs(float(first @ first) - 1.0) < 1e-5


def test_a_word_taken_off_the_lists_comes_back_by_its_vector(vectors: WordVectors) -> None:
    """A mastercode on a deadbolt, with the fifth part's words taken off the lists: the value
    is still masked: "mastercode" is what its last part, "code", is."""
    cases = load(DEFAULT_DATA)
    classes = unlisted(cases, "dev-fifth-heldout")
    assert "mastercode" not in classes["secret"] and "deadbolt" not in classes["opens"]
    text = "I put a new mastercode on the deadbolt, it's 7 2 6 4 1 9."
    try:
        lexicon(classes, None)
        names_without = judge.features(text, "", next(judge.candidates(text)))
        lexicon(classes, vectors)
        names_with = judge.features(text, "", next(judge.candidates(text)))
    finally:
        lexicon(CLASSES, None)
    assert "bc:secret" not in names_without and "bc:secret" in names_with


# said with a word no list holds; masked only once the word's vector places it
UNLISTED: list[tuple[str, str]] = [
    ("The new doorcode for the annex is 4 9 1 7 2.", "4 9 1 7 2"),
    ("I changed the alarmcode, it is now 8 3 0 5 1.", "8 3 0 5 1"),
    ("My passkeys reset to Otter-Lamp-5521 yesterday.", "Otter-Lamp-5521"),
]


def test_the_daemon_gives_the_judge_the_installed_models_word_pieces(
        braincue_home: Path, vectors_reset: None) -> None:
    use_vectors(None)
    clear_cache()
    assert [mask_lines([text])[0] for text, _ in UNLISTED] == [text for text, _ in UNLISTED]
    Daemon(Config.load())
    clear_cache()
    for text, value in UNLISTED:
        assert mask_lines([text])[0] == text.replace(value, "[redacted password]")


def test_a_cue_further_back_in_the_turn_counts() -> None:
    text = "The safe deposit box combination is left 32, right 14, left 7, so 32 14 7."
    spans = [text[f.start:f.end] for f in judged(text)]
    assert "32 14 7" in spans
    names = judge.features(text, "", list(judge.candidates(text))[-1])
    assert "fc:secret" in names


def test_missing_vectors_fall_back_to_the_lists_with_one_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, vectors_reset: None) -> None:
    corrupt = tmp_path / "model.gguf"
    corrupt.write_bytes(b"GGUF not really a model")
    for path in (tmp_path / "absent.gguf", corrupt):
        with pytest.raises(VectorsUnavailable, match=str(path)):
            read(path)
        use_vectors(path)
        clear_cache()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="daemon.sensitive.judge"):
            masked = [mask_lines([text], before)[0] for before, text, _ in JUDGED]
            mask_lines(["The new mastercode on the deadbolt is 7 2 6 4 1 9."])
        [record] = caplog.records
        assert record.getMessage().startswith(
            "sensitive-data judge without word vectors (the word lists alone): ")
        assert str(path) in record.getMessage()
        assert all(value not in m for m, (_, _, value) in zip(masked, JUDGED, strict=True))

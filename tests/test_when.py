""""When did <person> ...?" answered from that person's own words and their session's day: pure
rules, no model."""

from __future__ import annotations

import datetime as dt

from daemon.memory.grounding import Passage, Source
from daemon.memory.when import when_answer

SUNDAY = dt.datetime(2023, 7, 2, 14, 0).timestamp()  # local time, as the answer reads it
LATER = dt.datetime(2023, 7, 20, 14, 0).timestamp()


def chat(n: int, date: float, *turns: tuple[str, str]) -> Source:
    return Source(n=n, kind="transcript", title=f"Caroline and Melanie, session {n}", date=date,
                  passages=tuple(Passage(text, who, f"D{n}:{i}", 10.0 * i)
                                 for i, (who, text) in enumerate(turns, 1)))


POTTERY = chat(1, SUNDAY,
               ("Caroline", "Did you sign up for anything fun lately?"),
               ("Melanie", "Yes! I just signed up for a pottery class yesterday. So excited."))


def test_the_day_is_read_off_the_named_ones_words_and_their_sessions_date() -> None:
    assert when_answer("When did Melanie sign up for a pottery class?", [POTTERY]) == (
        "On 1 July 2023 [1].")
    last_week = chat(2, LATER, ("Caroline", "I painted a self-portrait last week."))
    assert when_answer("When did Caroline paint a self-portrait?", [POTTERY, last_week]) == (
        "The week before 20 July 2023 [2].")
    # "on Friday" of what was done: the Friday before; a plan says nothing done
    tournament = chat(4, SUNDAY, ("Melanie", "I won the chess tournament on Friday!"),
                      ("Melanie", "I'll play the chess final on Friday."))
    assert when_answer("When did Melanie win the chess tournament?", [tournament]) == (
        "On Friday 30 June 2023 [4].")
    assert when_answer("When did Melanie play the chess final?", [tournament]) is None
    # said with no word of when: done by the day it was said
    today = chat(3, LATER, ("Melanie", "The kids and I finished the sandcastle, look!"))
    assert when_answer("When did Melanie finish the sandcastle?", [today]) == (
        "By 20 July 2023 [3].")


def test_the_user_asking_of_themselves_is_answered_from_their_own_turns() -> None:
    call = Source(n=1, kind="transcript", title="Call with Dana", date=SUNDAY, passages=(
        Passage("Did you get the contract?", "them", "", 0.0),
        Passage("Yes, I sent the contract to you yesterday.", "me", "", 4.0)))
    assert when_answer("When did I send the contract?", [call]) == "On 1 July 2023 [1]."
    assert when_answer("When did Dana send the contract?", [call]) is None  # nobody named Dana


def test_only_the_named_ones_own_sentences_answer() -> None:
    # Caroline asks about it, Melanie did it: not an answer to when Caroline did
    assert when_answer("When did Caroline sign up for a pottery class?", [POTTERY]) is None
    # a transcript's note of a shared photo is not a sentence of theirs
    photo = chat(2, LATER, ("Melanie", "[shares a photo of a pottery class sign-up sheet]"))
    assert when_answer("When did Melanie sign up for a pottery class?", [photo]) is None


def test_a_sentence_saying_too_little_of_the_question_does_not_answer() -> None:
    other = chat(2, LATER, ("Melanie", "Pottery is so relaxing."))
    assert when_answer("When did Melanie sign up for a pottery class?", [other]) is None
    # of two that say it, the one saying more wins, then one saying when
    both = chat(3, LATER, ("Melanie", "The pottery class was fun."),
                ("Melanie", "I signed up for the pottery class last week."))
    assert when_answer("When did Melanie sign up for a pottery class?", [both]) == (
        "The week before 20 July 2023 [3].")


def test_a_month_or_year_the_question_names_must_be_the_answers() -> None:
    parade = chat(2, LATER, ("Caroline", "Last weekend our city held a pride parade and I went!"))
    assert when_answer("When did Caroline go to a pride parade in August?", [parade]) is None
    assert when_answer("When did Caroline go to a pride parade in July?", [parade]) == (
        "The weekend before 20 July 2023 [2].")
    assert when_answer("When did Caroline go to a pride parade in 2022?", [parade]) is None


def test_what_is_to_come_is_read_off_the_named_ones_plan_and_its_time_ahead() -> None:
    plans = chat(5, SUNDAY,  # Sunday 2 July 2023
                 ("Caroline", "I'm hoping to attend a book conference next month."),
                 ("Caroline", "I'll present my paintings on Friday."),
                 ("Caroline", "I'll visit the art fair at some point."),
                 ("Melanie", "We celebrated my daughter's birthday last night."),
                 ("Melanie", "I'm running a charity race next Saturday."),
                 ("Melanie", "We're going to a concert tonight."))
    assert when_answer("When is Caroline attending a book conference?", [plans]) == (
        "In August 2023 [5].")
    assert when_answer("When will Caroline present her paintings?", [plans]) == (
        "On Friday 7 July 2023 [5].")
    assert when_answer("When is Melanie running a charity race?", [plans]) == (
        "On Saturday 8 July 2023 [5].")
    assert when_answer("When is Melanie going to a concert?", [plans]) == (
        "On 2 July 2023 [5].")
    # a plan with no time ahead, or no plan at all, answers nothing
    assert when_answer("When is Caroline visiting the art fair?", [plans]) is None
    assert when_answer("When is Melanie's daughter's birthday?", [plans]) is None


def test_other_questions_are_the_models() -> None:
    for question in ("What did Melanie sign up for?",  # not when
                     "When does Melanie go to her pottery class?",  # no plan of it
                     "When did Caroline and Melanie sign up for a pottery class?",  # two named
                     "When did Gina sign up for a pottery class?"):  # nobody who speaks
        assert when_answer(question, [POTTERY]) is None, question

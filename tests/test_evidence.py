"""What memory holds for a question (shown before the answer), and the check that keeps only
what a cited source supports: pure rules, no model."""

from __future__ import annotations

import datetime as dt

import pytest

from daemon.memory.evidence import (
    MAX_EVIDENCE_CHARS,
    Close,
    closest_sources,
    cut,
    evidence_for,
)
from daemon.memory.extract import content_words
from daemon.memory.grounding import (
    Item,
    Passage,
    Source,
    keep_supported,
    nothing_says,
    one_asked_of,
    spoken_numbers,
)
from daemon.memory.relative_time import resolve

MAY_8 = dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.UTC).timestamp()  # a Monday

CHAT = Source(n=1, kind="transcript", title="Caroline and Melanie, session 1", date=MAY_8,
              passages=(
                  Passage("Hey Mel! Good to see you!", "Caroline", "D1:1", 0.0),
                  Passage("I went to a LGBTQ support group yesterday and it was so powerful.",
                          "Caroline", "D1:3", 30.0),
                  Passage("Wow, that's cool, Caroline! I ran a charity race for mental health "
                          "last Saturday. It made me realize self-care is important.",
                          "Melanie", "D1:4", 45.0)))
DECISION = Source(n=2, kind="assertion", title="Atlas launch review", date=MAY_8, label="decision",
                  item=Item(kind="decision", text="Ship the Atlas beta on Friday",
                            chosen="Friday", alternatives=("Monday",),
                            reasoning="support is staffed on Friday"),
                  passages=(Passage("Ship the Atlas beta on Friday"),
                            Passage("Let's ship the Atlas beta on Friday, not Monday.", "Tom",
                                    "", 12.0)))


def test_the_evidence_is_the_passages_that_share_words_with_the_question_with_their_source(
) -> None:
    (shown,) = evidence_for("When did Caroline go to the LGBTQ support group?", [CHAT])
    assert (shown.n, shown.speaker, shown.start, shown.ref, shown.date) == (
        1, "Caroline", 30.0, "D1:3", MAY_8)
    assert shown.text == "I went to a LGBTQ support group yesterday and it was so powerful."


def test_a_structured_item_is_shown_with_what_it_holds_and_its_turn_beside_it() -> None:
    shown = evidence_for("Which day did we pick to ship the Atlas beta?", [CHAT, DECISION])
    item, turn = shown
    assert item.item == DECISION.item and item.text == "Ship the Atlas beta on Friday"
    assert (turn.n, turn.speaker, turn.item) == (2, "Tom", None)
    # an item a question over items selected is shown whatever words it shares
    (forced,) = evidence_for("What is still open?", [DECISION], always=[2])
    assert forced.item == DECISION.item


def test_the_live_conversation_is_not_shown_and_nothing_shared_is_no_evidence() -> None:
    live = Source(n=3, kind="context", title="now", passages=(Passage("the LGBTQ group", "Tom"),))
    assert evidence_for("Who won the chess tournament?", [CHAT, DECISION]) == []
    assert [e.n for e in evidence_for("LGBTQ group?", [live, CHAT])] == [1]


def _weighed(source: Source, *closeness: float) -> list[Close]:
    return [Close(p, c) for p, c in zip(source.passages, closeness, strict=True)]


FAIR = Source(n=2, kind="transcript", title="Caroline and Melanie, session 2", date=MAY_8,
              passages=(Passage("Did you get to the fair in the end?", "Melanie", "D2:1", 0.0),
                        Passage("Yes! Saturday, with the kids. We stayed until the fireworks.",
                                "Caroline", "D2:2", 8.0),
                        Passage("My car broke down on the way to work.", "Melanie", "D2:3", 20.0)))


def test_weighed_by_meaning_a_turn_that_shares_no_word_but_answers_is_shown() -> None:
    question = "When did Caroline visit the county fair?"
    assert [e.ref for e in evidence_for(question, [FAIR])] == ["D2:1"]  # words alone
    close = {2: _weighed(FAIR, 0.62, 0.55, 0.08)}
    shown = evidence_for(question, [FAIR], close=close)
    # the answer comes with the question it answers, in the order said; the car is neither
    # close nor saying a word of the question
    assert [e.ref for e in shown] == ["D2:1", "D2:2"]
    assert shown[1].text == "Yes! Saturday, with the kids. We stayed until the fireworks."


def test_weighed_the_best_passages_of_all_sources_are_shown_in_source_order() -> None:
    question = "When did Caroline go to the LGBTQ support group?"
    close = {1: _weighed(CHAT, 0.2, 0.7, 0.35), 2: _weighed(FAIR, 0.5, 0.45, 0.1)}
    shown = evidence_for(question, [CHAT, FAIR], limit=3, close=close)
    assert [e.ref for e in shown] == ["D1:3", "D2:1", "D2:2"]
    # a source lower in the list pays for its place: at equal closeness the first one wins
    level = {1: _weighed(CHAT, 0.2, 0.5, 0.1), 2: _weighed(FAIR, 0.5, 0.1, 0.1)}
    assert [e.ref for e in evidence_for(question, [CHAT, FAIR], limit=1, close=level)] == [
        "D1:3"]


def test_weighed_for_the_evidence_a_turn_of_the_one_the_question_names_counts_more() -> None:
    from daemon.memory.evidence import SHOWN, weighing

    question = "Did Caroline enjoy the fair?"
    close = {2: _weighed(FAIR, 0.5, 0.46, 0.1)}  # Melanie's question is a little closer
    assert [e.ref for e in evidence_for(question, [FAIR], limit=1, close=close)] == ["D2:1"]
    assert [e.ref for e in evidence_for(question, [FAIR], limit=1, close=close,
                                        weights=SHOWN)] == ["D2:2"]
    # nobody named: the closer turn, saying a word of the question, as before
    assert [e.ref for e in evidence_for("Did anyone enjoy the fair?", [FAIR], limit=1,
                                        close=close, weights=SHOWN)] == ["D2:1"]
    # declined before the model, what matches being Melanie's words of herself: hers shown
    assert [e.ref for e in evidence_for(question, [FAIR], limit=1, close=close,
                                        weights=weighing(SHOWN, another=True))] == ["D2:1"]


def test_a_role_is_named_as_a_reader_names_it() -> None:
    from daemon.memory.evidence import SHOWN

    meeting = Source(n=1, kind="transcript", title="Design meeting", date=MAY_8, passages=(
        Passage("The shape should follow the hand.", "User Interface", "M:1", 0.0),
        Passage("A curved case costs more to mould.", "Industrial Designer", "M:2", 5.0)))
    close = {1: _weighed(meeting, 0.5, 0.46)}
    for question, shown in [
        ("Why did the Industrial Design disagree about the shape?", "M:2"),
        ("Why did the Industrial Designer disagree about the shape?", "M:2"),
        ("Why did the Industrial Manager disagree about the shape?", "M:1"),  # not the designer
    ]:
        assert [e.ref for e in evidence_for(question, [meeting], limit=1, close=close,
                                            weights=SHOWN)] == [shown], question


def test_weighed_an_item_and_a_source_without_vectors_are_still_shown() -> None:
    memory = Source(n=3, kind="memory", title="about you", label="memory about you",
                    passages=(Passage("You prefer to ship the Atlas beta early in the week."),))
    close = {1: _weighed(CHAT, 0.1, 0.2, 0.1),
             2: [Close(DECISION.passages[1], 0.6)]}
    shown = evidence_for("Which day did we pick to ship the Atlas beta?",
                         [CHAT, DECISION, memory], close=close)
    assert shown[0].item == DECISION.item
    assert [(e.n, e.speaker) for e in shown[1:]] == [(3, ""), (2, "Tom")]


def test_the_model_reads_the_best_weighed_turns_that_fit_its_budget() -> None:
    question = "When did Caroline visit the county fair?"
    close = {1: _weighed(CHAT, 0.2, 0.48, 0.25), 2: _weighed(FAIR, 0.62, 0.55, 0.08)}
    read = closest_sources(question, [CHAT, FAIR], close, budget=140)
    # the fair's question and its answer fit, in the order said; the chat's closest turn is
    # less close and does not fit after them: its source is left out
    assert [s.n for s in read] == [2]
    assert [p.ref for p in read[0].passages] == ["D2:1", "D2:2"]
    assert sum(len(p.speaker) + len(p.text) + 3 for p in read[0].passages) <= 140
    roomy = closest_sources(question, [CHAT, FAIR], close, budget=1000)
    assert [p.ref for s in roomy for p in s.passages] == ["D1:3", "D2:1", "D2:2"]


def test_what_is_kept_or_not_weighed_is_read_whole_and_a_statement_comes_first() -> None:
    memory = Source(n=3, kind="memory", title="about you", label="memory about you",
                    passages=(Passage("You prefer to ship the Atlas beta early in the week."),))
    close = {1: _weighed(CHAT, 0.1, 0.2, 0.1), 2: [Close(DECISION.passages[1], 0.6)]}
    question = "Which day did we pick to ship the Atlas beta?"
    read = closest_sources(question, [CHAT, DECISION, memory], close, budget=500)
    assert [s.n for s in read] == [2, 3]
    assert read[0].passages == DECISION.passages and read[1] == memory
    kept = closest_sources(question, [CHAT, DECISION, memory], close, budget=500, keep=[1])
    assert kept[0] == CHAT  # a source an answer must read, whole
    # a decision the question bears on is read though none of its turns is close
    far = {1: _weighed(CHAT, 0.1, 0.2, 0.1), 2: [Close(Passage("Agreed, done.", "Ann"), 0.1)]}
    (decision,) = closest_sources(question, [CHAT, DECISION], far, budget=500)
    assert decision.passages == DECISION.passages[:1]


def test_a_long_passage_is_cut_to_the_sentences_that_answer() -> None:
    text = ("We spent the first hour on the agenda and who takes notes. " * 3
            + "The battery of the remote lasts two years on standard cells. "
            + "Then we talked about lunch and the weather for a while. " * 3)
    shown = cut(text, content_words("How long does the remote's battery last?"))
    assert len(shown) <= MAX_EVIDENCE_CHARS
    assert "The battery of the remote lasts two years on standard cells." in shown
    assert cut("Short.", set()) == "Short."
    alone = cut("word " * 100, content_words("word"))
    assert len(alone) <= MAX_EVIDENCE_CHARS and alone.endswith("…")


# -- only what a cited source supports ----------------------------------------------------------


def test_a_sentence_its_cited_source_supports_is_kept_and_an_invented_one_dropped() -> None:
    text = ("Caroline went to a LGBTQ support group [1]. She adopted a dog named Rex [1]. "
            "It was powerful.")
    kept, dropped = keep_supported(text, [CHAT], "When did Caroline go to the support group?")
    assert kept == "Caroline went to a LGBTQ support group [1]."
    assert dropped == 2  # the dog nobody mentioned, and the sentence that cites nothing


def test_a_sentence_that_says_again_what_one_given_said_is_not_given_twice() -> None:
    meeting = Source(n=4, kind="transcript", title="Remote control design, meeting C", passages=(
        Passage("Then we need to look at people who want a basic remote control and the cost "
                "of a basic remote control, people who buy the remote control any more.",
                "Project Manager"),
        Passage("And people need to see enough of the remote control.", "Marketing")))
    text = ("The team emphasized the need for a basic remote control and the cost of a basic "
            "remote control [4]. The team also emphasized the need for people to buy the "
            "remote control any more [4]. The team also emphasized the need for people to see "
            "enough of the remote control [4].")
    kept, dropped = keep_supported(text, [meeting],
                                   "What did the team discuss about the use of advanced chips?")
    assert kept == ("The team emphasized the need for a basic remote control and the cost of a "
                    "basic remote control [4]. The team also emphasized the need for people to "
                    "buy the remote control any more [4].")
    assert dropped == 0  # said again is no claim unsupported
    # the same words about another thing are another sentence
    said = "The team wanted a basic remote control [4]. The team wanted a cheap remote [4]."
    assert keep_supported(said, [Source(n=4, kind="transcript", title="t", passages=(
        Passage("We want a basic remote control, a cheap remote.", "Marketing"),))],
        "What did the team want?")[0] == said


def test_a_claim_about_a_person_must_come_from_what_they_said_or_what_is_said_of_them() -> None:
    # Melanie ran the race; her turn names Caroline only to greet her: what Melanie realized
    # is no answer to what Caroline did
    question = "What did Caroline realize after her charity race?"
    assert keep_supported("Melanie realized self-care is important [1].", [CHAT],
                          question) == ("", 1)
    assert keep_supported("Melanie realized self-care is important [1].", [CHAT],
                          "What did Melanie realize after her charity race?")[0] \
        == "Melanie realized self-care is important [1]."
    other = Source(n=1, kind="transcript", title="t", passages=(
        Passage("I ran a charity race. It made me realize self-care is important.", "Melanie"),
        Passage("That sounds great!", "Caroline")))
    assert keep_supported("Caroline realized self-care is important [1].", [other],
                          question) == ("", 1)
    # a greeting names her, but says nothing of her
    greeted = Source(n=1, kind="transcript", title="t", passages=(
        Passage("Hey Caroline! I ran a charity race. It made me realize self-care is important.",
                "Melanie"), Passage("Wow, good for you!", "Caroline")))
    assert keep_supported("Caroline realized self-care is important [1].", [greeted],
                          question) == ("", 1)
    # naming nobody, it is about whom the question names: Caroline said none of it
    assert keep_supported("It made me realize self-care is important [1].", [other],
                          question) == ("", 1)


def test_what_the_one_asked_about_said_is_not_given_to_another_by_name() -> None:
    music = Source(n=1, kind="transcript", title="Tim and John, session 12", passages=(
        Passage("Recently started learning an instrument. Challenging but fun.", "Tim"),
        Passage("Nice one! Learning something new is always a great adventure.", "John")))
    question = "What new activity has Tim started learning in August 2023?"
    assert keep_supported("John started learning an instrument [1].", [music],
                          question) == ("", 1)
    assert keep_supported("Tim started learning an instrument [1].", [music], question)[0] \
        == "Tim started learning an instrument [1]."
    # naming both, or nobody, it may still be about the one asked
    assert keep_supported("Tim told John he started learning an instrument [1].", [music],
                          question)[1] == 0


def test_in_a_chat_of_two_what_one_says_to_the_other_is_said_of_them() -> None:
    trails = Source(n=1, kind="transcript", title="Joanna and Nate, session 11", passages=(
        Passage("I went hiking on the trails near my place last weekend.", "Joanna"),
        Passage("Sure, you should come down and join me on the trails sometime!", "Joanna"),
        Passage("I would love that, thanks!", "Nate")))
    question = "Who invited Nate to join her on the trails sometime?"
    assert keep_supported("Joanna invited Nate to join her on the trails [1].", [trails],
                          question)[0] == "Joanna invited Nate to join her on the trails [1]."
    # what the other says of themselves is still not said of them
    assert keep_supported("Nate went hiking near his place last weekend [1].", [trails],
                          "Where did Nate go hiking?") == ("", 1)


def test_a_sentence_citing_the_wrong_source_is_kept_citing_the_one_that_says_it() -> None:
    kept, dropped = keep_supported("Caroline went to a LGBTQ support group [2].",
                                   [CHAT, DECISION], "Where did Caroline go?")
    assert (kept, dropped) == ("Caroline went to a LGBTQ support group [1].", 0)


def test_a_sentence_citing_a_source_never_read_is_kept_citing_the_one_that_says_it() -> None:
    # only source 2 was read; the model numbered it 1
    kept, dropped = keep_supported("Tom will ship the Atlas beta on Friday [1].", [DECISION],
                                   "When does the Atlas beta ship?")
    assert (kept, dropped) == ("Tom will ship the Atlas beta on Friday [2].", 0)
    # citing nothing at all is still no answer
    assert keep_supported("Tom will ship the Atlas beta on Friday.", [DECISION],
                          "When does the Atlas beta ship?") == ("", 1)


def test_the_other_one_of_two_is_taken_out_of_what_the_question_asks_of_one() -> None:
    # a small model names both from the session's title and credits Melanie too
    chat = [CHAT]
    asked = "Where did Caroline go yesterday?"
    assert one_asked_of("Caroline and Melanie went to a LGBTQ support group [1].", asked,
                        chat) == "Caroline went to a LGBTQ support group [1]."
    assert one_asked_of("Melanie and Caroline both loved the support group [1]. They go.",
                        asked, chat) == "Caroline loved the support group [1]. They go."
    assert one_asked_of("Caroline and Melanie have a dog [1].", asked, chat) == (
        "Caroline has a dog [1].")
    # a present tense, or a word that may be no verb, is left for the check, as is a
    # question about both
    for said in ("Caroline and Melanie love it [1].", "Caroline and Melanie often go [1]."):
        assert one_asked_of(said, asked, chat) == said
    assert one_asked_of("Caroline and Melanie went [1].", "Where did Caroline and Melanie go?",
                        chat) == "Caroline and Melanie went [1]."
    # with the user speaking too, it is not a chat of two: both may have done it
    with_me = Source(n=2, kind="transcript", title="Planning", passages=(
        Passage("Let's both go to the support group.", "me"),))
    assert one_asked_of("Caroline and Melanie went to a LGBTQ support group [1].", asked,
                        [CHAT, with_me]) == "Caroline and Melanie went to a LGBTQ support group [1]."


def test_a_name_no_cited_source_says_drops_its_sentence() -> None:
    # most of its words are said, but not Lennon
    assert keep_supported("Melanie ran a charity race for mental health with Lennon [1].",
                          [CHAT], "What did Melanie do last Saturday?") == ("", 1)
    # one who speaks in it needs no more
    assert keep_supported("Then Melanie told Caroline she ran a charity race [1].", [CHAT],
                          "What did Melanie tell Caroline?") == (
        "Then Melanie told Caroline she ran a charity race [1].", 0)


def test_a_number_no_cited_source_holds_drops_its_sentence() -> None:
    kept, dropped = keep_supported("Tom shipped the Atlas beta on Friday, 14 June [2].",
                                   [DECISION], "When was the Atlas beta shipped?")
    assert (kept, dropped) == ("", 1)
    assert keep_supported("The Atlas beta ships on Friday [2].", [DECISION],
                          "When does the Atlas beta ship?") == (
        "The Atlas beta ships on Friday [2].", 0)


def test_a_name_the_question_gives_needs_a_source_that_holds_it() -> None:
    rome = Source(n=1, kind="transcript", title="Jon and Gina, session 9", passages=(
        Passage("Took a short trip last week to Rome to clear my mind a little.", "Jon"),
        Passage("Wow, Jon, you must be so excited!", "Gina")))
    asked = "What did Jon take a trip to Barcelona for?"
    assert keep_supported("Jon took a short trip to Barcelona to clear his mind [1].", [rome],
                          asked) == ("", 1)
    assert keep_supported("Jon went to Rome to clear his mind [1].", [rome], asked) == (
        "Jon went to Rome to clear his mind [1].", 0)
    # a name of one who speaks in what was recalled, though not in what was read, is a person
    meeting = Source(n=1, kind="transcript", title="Design, meeting B", passages=(
        Passage("The buttons for the common tasks should be big.", "Project Manager"),))
    asked = "Why did the Project Manager agree with User Interface on the buttons?"
    answer = "The Project Manager agreed with User Interface: the common tasks need big buttons [1]."
    assert keep_supported(answer, [meeting], asked) == ("", 1)
    assert keep_supported(answer, [meeting], asked, speaking=["User Interface"]) == (answer, 0)


def test_a_pasted_acknowledgement_is_no_answer() -> None:
    meeting = Source(n=1, kind="transcript", title="Design, meeting D", passages=(
        Passage("Yeah.", "Industrial Designer"),
        Passage("Team-work okay. Only the drawing was very difficult.", "Industrial Designer")))
    asked = "What did the Industrial Designer think about their teamwork?"
    assert keep_supported("Industrial Designer said: Yeah [1].", [meeting], asked) == ("", 1)
    assert keep_supported("Industrial Designer said: Yeah [1]. Only the drawing was very "
                          "difficult [1].", [meeting], asked) == (
        "Only the drawing was very difficult [1].", 1)
    # a greeting to one who speaks in what was recalled, though not in what was read
    chat = Source(n=1, kind="transcript", title="Caroline and Melanie, session 9", passages=(
        Passage("Hey Caroline! Since we last spoke, I took my kids to a park.", "Melanie"),))
    pasted = "Melanie: Hey Caroline [1]! Since we last spoke, I took my kids to a park [1]."
    asked = "Would Melanie go to a national park?"
    assert keep_supported(pasted, [chat], asked, speaking=["Caroline", "Melanie"]) == (
        "Since we last spoke, I took my kids to a park [1].", 1)
    assert keep_supported(pasted, [chat], asked) == (pasted, 0)  # "Caroline" unknown: a word
    # a name alone answers "who"
    assert keep_supported("Industrial Designer [1].", [meeting],
                          "Who found the drawing difficult?") == ("Industrial Designer [1].", 0)
    # what a pasted turn says to the room
    kickoff = Source(n=1, kind="transcript", title="Design, meeting A", passages=(
        Passage("So, hello everyone. We're here to have a kick-off meeting for a new remote "
                "control.", "Project Manager"), Passage("Fabulous.", "Marketing")))
    pasted = ("Project Manager said: So, hello everyone [1]. We're here to have a kick-off "
              "meeting for a new remote control [1]. Marketing said: Fabulous [1].")
    assert keep_supported(pasted, [kickoff], "Summarize the kick-off meeting.") == (
        "We're here to have a kick-off meeting for a new remote control [1].", 2)


def test_a_pasted_question_or_note_is_no_answer() -> None:
    chat = Source(n=1, kind="transcript", title="Nate and Joanna, session 12", passages=(
        Passage("I made vegan ice cream last Friday and shared it with my vegan diet group. "
                "Want the recipe? [shares a photo: a group of people sitting on a bench]",
                "Nate"),))
    asked = "When did Nate make vegan ice cream?"
    answer = "Nate made vegan ice cream last Friday [1]."
    assert keep_supported(f"{answer} [shares a photo: a group of people sitting on a bench] [1]",
                          [chat], asked) == (answer, 1)
    assert keep_supported(f"{answer} Want the recipe [1]?", [chat], asked) == (answer, 1)
    assert keep_supported(f"{answer} Vegan ice cream [1]?!", [chat], asked) == (answer, 1)
    # a note inside a sentence that states something is part of it
    noted = "Nate shared a photo [shares a photo: a group of people sitting on a bench] [1]."
    assert keep_supported(noted, [chat], asked) == (noted, 0)


def test_a_pasted_turn_in_the_first_person_is_given_to_its_speaker() -> None:
    from daemon.memory.grounding import voiced

    meeting = Source(n=1, kind="transcript", title="Design, meeting A", passages=(
        Passage("Uh I gave a presentation on the boards.", "Project Manager"),
        Passage("We familiarised ourselves with the boards.", "Project Manager"),
        Passage("I will send the minutes by Friday.", "me")))
    assert voiced("I gave a presentation [1]. Uh we familiarised ourselves with the boards "
                  "[1]. I will send the minutes by Friday [1].", [meeting]) == (
        "Project Manager said: I gave a presentation [1]. Uh we familiarised ourselves with "
        "the boards [1]. You said: I will send the minutes by Friday [1].")
    # labelled already, an account that copies a word of a turn, a quote: as they are
    for kept in ("Project Manager said: I gave a presentation [1].",
                 "The group familiarised themselves with the boards we use [1].",
                 'The Project Manager said "I gave a presentation" [1].'):
        assert voiced(kept, [meeting]) == kept


def test_a_number_the_question_gives_needs_no_source() -> None:
    # the session's date says 2023, its turns only "December": the year is the question's
    shelter = Source(n=1, kind="transcript", title="Maria and John, session 30", passages=(
        Passage("I donated my old car to the homeless shelter I volunteer at.", "Maria"),))
    asked = "What did Maria donate to a homeless shelter in December 2023?"
    answer = "Maria donated her old car to a homeless shelter in December 2023 [1]."
    assert keep_supported(answer, [shelter], asked) == (answer, 0)
    # a number neither gives is still no answer
    assert keep_supported("Maria donated 2 old cars [1].", [shelter], asked) == ("", 1)


@pytest.mark.parametrize(("said", "meant"), [
    ("I went yesterday.", "I went on 7 May 2023."),
    ("We met last Friday.", "We met on Friday 5 May 2023."),
    ("She moved two weeks ago.", "She moved two weeks before 8 May 2023."),
    ("It was three days ago.", "It was on 5 May 2023."),
    ("They married last year, not last month.", "They married in 2022, not in April 2023."),
    ("I ran a race last week.", "I ran a race the week before 8 May 2023."),
    ("Tonight and the day before yesterday.", "on 8 May 2023 and on 6 May 2023."),
    ("I'm going this month, you next week.", "I'm going in May 2023, you the week after 8 May "
     "2023."),
    ("We present next Monday.", "We present on Monday 15 May 2023."),
])
def test_relative_times_are_resolved_against_the_day_it_was_said(said: str, meant: str) -> None:
    assert resolve(said, dt.date(2023, 5, 8)) == meant


def test_with_nothing_supported_the_reply_says_nothing_in_memory_says_it() -> None:
    held = " The evidence above is what memory holds."
    assert nothing_says("What motivated Melanie to pursue counseling?") == (
        "Nothing in memory says what motivated Melanie to pursue counseling." + held)
    # a question that turns its verb round would not read said of itself: it is quoted
    assert nothing_says("When did Caroline adopt a dog?") == (
        "Nothing in memory answers “When did Caroline adopt a dog?”" + held)
    assert nothing_says("What is   John's favorite book") == (
        "Nothing in memory answers “What is John's favorite book?”" + held)
    assert nothing_says("Did Tom agree?") == "Nothing in memory answers “Did Tom agree?”" + held
    assert nothing_says("Summarize the budget discussion") == (
        "Nothing in memory answers “Summarize the budget discussion.”" + held)


def test_numbers_said_in_words_support_an_answer_that_writes_them_in_digits() -> None:
    said = "The target price is twenty five Euros, the cost twelve point five, profit fifty million."
    assert {"25", "12.5", "50", "50000000"} <= spoken_numbers(said)
    meeting = Source(n=1, kind="transcript", title="Kick-off", passages=(
        Passage(said, "Project Manager"),))
    kept, dropped = keep_supported("The target price is 25 Euros and the cost 12.5 [1].",
                                   [meeting], "What are the target price and cost?")
    assert (kept, dropped) == ("The target price is 25 Euros and the cost 12.5 [1].", 0)
    assert keep_supported("The target price is 30 Euros [1].", [meeting],
                          "What is the target price?") == ("", 1)


def test_an_initial_does_not_end_a_sentence() -> None:
    from daemon.memory.grounding import sentences

    assert sentences("Tim likes a J. K. Rowling quote [1]. It helps [2].") == [
        "Tim likes a J. K. Rowling quote [1].", " ", "It helps [2]."]


def test_a_copy_of_the_prompts_layout_is_taken_out_of_the_answer() -> None:
    from daemon.memory.grounding import unlabelled

    meeting = Source(n=1, kind="transcript", title="Design, meeting C", date=MAY_8,
                     label="transcript", passages=(
                         Passage("Environment friendly.", "Industrial Designer"),
                         Passage("Okay.", "Project Manager")))
    assert unlabelled("[1] 8 May 2023 · Design, meeting C (transcript) Industrial Designer: "
                      "Environment friendly. Project Manager: Okay [1].", [meeting]) == (
        "Industrial Designer said: Environment friendly [1]. Project Manager said: Okay [1].")
    assert unlabelled("They want it environment friendly [1].", [meeting]) == (
        "They want it environment friendly [1].")
    # the heading without its date, all there is of an answer: nothing is left to check
    assert keep_supported(unlabelled("Design, meeting C (transcript), [1].", [meeting]),
                          [meeting], "When did they pick a material?") == ("", 1)
    assert unlabelled("Design, meeting C picked wood [1].", [meeting]) == (
        "Design, meeting C picked wood [1].")
    # the headings repeated until the answer's length cut the last one short
    copied = "Design, meeting C (transcript), [1] Design, meeting C (transcript), [1] Design, meeting C"
    assert unlabelled(copied, [meeting]) == ""


def test_a_copied_headings_number_cites_what_follows_it_not_the_sentence_before() -> None:
    from daemon.memory.grounding import unlabelled

    first = Source(n=1, kind="transcript", title="Design, meeting B", date=MAY_8,
                   label="transcript", passages=(
                       Passage("Alright then we're going to have three presentations.",
                               "Project Manager"),
                       Passage("Well, I'm going to tell you about functional requirements.",
                               "Marketing")))
    second = Source(n=2, kind="transcript", title="Design, meeting C", date=MAY_8,
                    label="transcript", passages=(
                        Passage("We'll look at the notes from the previous meeting. I think "
                                "you have prepared all three.", "Project Manager"),))
    # the model pasted the prompt from the middle of source 1 on, until its length stopped it
    # at the next heading's number
    pasted = ("Project Manager: Alright then we're going to have three presentations.\n"
              "Marketing: Well, I'm going to tell you about functional requirements.\n\n"
              "[2] 8 May 2023 · Design, meeting C (transcript)\n"
              "Project Manager: We'll look at the notes from the previous meeting. I think you "
              "have prepared all three.\n\n[1]")
    assert unlabelled(pasted, [first, second]) == (
        "Project Manager said: Alright then we're going to have three presentations.\n"
        "Marketing said: Well, I'm going to tell you about functional requirements.\n"
        "Project Manager said: We'll look at the notes from the previous meeting [2]. I think "
        "you have prepared all three.")
    # a heading copied with another day than its source's is a heading all the same
    assert unlabelled("[2] 9 May 2023 · Design, meeting C (transcript)\nProject Manager: "
                      "We'll look at the notes.", [first, second]) == (
        "Project Manager said: We'll look at the notes [2].")
    # a number opening a line, its heading left out, opens what follows as well
    assert unlabelled("Rubber was chosen.\n[2] We'll look at the notes.", [first, second]) == (
        "Rubber was chosen.\nWe'll look at the notes [2].")

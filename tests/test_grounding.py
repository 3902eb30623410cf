"""The pure rules of ask: framing, prompt, relevance, the question from "them", the check."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from daemon.memory.grounding import (
    ANSWER_FORMATS,
    UNVERIFIED,
    Passage,
    QuestionKind,
    Said,
    Source,
    build_prompt,
    check_answer,
    drop_unknown_citations,
    fit_sources,
    focus_source,
    framing_for,
    includes_story,
    is_question,
    last_question,
    pick_story,
    question_kind,
    relevant,
    sentences,
    story_like,
    whole_sentences,
)
from daemon.store.records import ACTIVITIES


def transcript(n: int, *turns: tuple[str, str], title: str = "Atlas sync") -> Source:
    return Source(n=n, kind="transcript", title=title, session_id=10 + n, date=1_780_000_000.0,
                  passages=tuple(Passage(text, speaker) for speaker, text in turns))


def document(n: int, text: str, title: str = "Notes") -> Source:
    return Source(n=n, kind="document", title=title, document_id=n, passages=(Passage(text),))


# -- framing -------------------------------------------------------------------------------------


@pytest.mark.parametrize("activity", ACTIVITIES)
def test_the_job_family_is_framed_as_an_interview_and_every_other_activity_as_a_conversation(
    activity: str,
) -> None:
    expected = "interview" if activity == "job" else "conversation"
    assert framing_for(activity) == expected
    assert includes_story(framing_for(activity)) == (activity == "job")


def test_an_unknown_or_empty_activity_is_a_conversation() -> None:
    assert framing_for("") == "conversation"
    assert framing_for("standup") == "conversation"


def test_the_conversation_prompt_forbids_selling_and_the_interview_prompt_speaks_as_the_candidate(
) -> None:
    sources = [transcript(1, ("them", "We ship on Friday."), ("me", "I will tell support."))]
    conversation = build_prompt("conversation", "When do we ship?", sources)
    interview = build_prompt("interview", "When do we ship?", sources)

    # the user's turns are labelled as the one the model answers for
    assert "You: I will tell support." in conversation[0].content
    assert "Me (the candidate): I will tell support." in interview[0].content

    assert "never sell, never perform credentials" in conversation[0].content
    assert "candidate" not in conversation[0].content
    assert "You are the candidate" in interview[0].content
    assert "never sell" not in interview[0].content
    for messages in (conversation, interview):  # the shared rules are the same in both
        assert "cite the source" in messages[0].content
        assert "Never invent" in messages[0].content
        # the sources in the system message; the user's message is the question alone
        assert "[1]" in messages[0].content and "them: We ship on Friday." in messages[0].content
    for messages in (conversation, interview):
        assert messages[1].content == f"When do we ship?\n\n{ANSWER_FORMATS['fact']}"


def test_a_source_is_dated_as_the_day_is_said() -> None:
    noon = dt.datetime(2023, 5, 4, 12).timestamp()  # (local time, as the heading is)
    source = Source(n=1, kind="transcript", title="Atlas sync", date=noon,
                    passages=(Passage("We ship on Friday.", "them"),))

    heading = build_prompt("conversation", "When do we ship?", [source])[0].content

    assert "[1] 4 May 2023 · Atlas sync\n" in heading
    assert "2023-05-04" not in heading


@pytest.mark.parametrize(("question", "kind"), [
    # a fact: who / when / where / which / how many..., or "what" asked of a thing
    ("When do we ship?", "fact"),
    ("Who is responsible for onboarding on Atlas?", "fact"),
    ("Which city did John recommend to Tim in January 2024?", "fact"),
    ("How many turtles does Nate have?", "fact"),
    ("So, where did Joanna go for a road trip?", "fact"),  # a filler is not the opener
    ("What country is Caroline's grandma from?", "fact"),
    ("What city did Tim suggest to John for the team trip?", "fact"),  # "what" and a thing
    ("What is the budget for Atlas?", "fact"),
    ("What's Nate's favorite book series about?", "fact"),
    ("When did Jon and Gina decide to collaborate?", "fact"),  # when, whatever it names
    # an account: the question names an exchange
    ("Summarize the discussion about product quotation.", "account"),
    ("What did the group think of battery design when discussing the functional design?",
     "account"),
    ("What did we decide about pricing for Atlas?", "account"),
    ("What's the conclusion of the discussion about intuitive?", "account"),
    ("What is Marketing's presentation mainly about?", "account"),
    ("Why did Gina decide to start her own clothing store?", "account"),
    # other: why, how, what someone thought, felt, said or proposed
    ("Why did Jon shut down his bank account?", "other"),
    ("How did Melanie feel after the accident?", "other"),
    ("What did Industrial Designer say about the structure of the device?", "other"),
    ("What does John think about trying new classes?", "other"),
    ("What did the marketing learn about the trend?", "other"),
    ("Tell me about a time you led a team.", "other"),
    ("", "other"),
])
def test_a_question_is_a_fact_an_account_or_other_by_its_words(question: str, kind: str) -> None:
    assert question_kind(question) == kind


def test_the_answer_format_follows_the_kind_of_question() -> None:
    cases: list[tuple[str, QuestionKind]] = [
        ("What country is Caroline's grandma from?", "fact"),
        ("Summarize the discussion about product quotation.", "account"),
        ("Why did Jon shut down his bank account?", "other")]
    for question, kind in cases:
        messages = build_prompt("conversation", question, [transcript(1, ("them", "Sweden."))])
        assert messages[1].content == f"{question}\n\n{ANSWER_FORMATS[kind]}"
    # a fact in one sentence, an account in more than the others; no example to copy
    assert "one short sentence" in ANSWER_FORMATS["fact"]
    assert "two or three" in ANSWER_FORMATS["other"]
    assert "four or five" in ANSWER_FORMATS["account"]
    assert all(len(f) <= len(ANSWER_FORMATS["other"]) + 4 for f in ANSWER_FORMATS.values())


@pytest.mark.parametrize(("title", "filename", "expected"), [
    ("STAR stories", "stories.md", True),
    ("My story bank", "bank.txt", True),
    ("Résumé", "star_examples.md", True),
    ("Résumé", "resume.pdf", False),
    ("History of Atlas", "history.md", False),  # "story" inside a word does not count
    ("Starlink notes", "starlink.md", False),
])
def test_story_like_documents_are_named_so(title: str, filename: str, expected: bool) -> None:
    assert story_like(title, filename) is expected


# -- sources in the prompt -----------------------------------------------------------------------


def test_every_source_is_focused_on_the_question_within_its_share() -> None:
    turns = [("them", f"Filler line number {i} about the weather.") for i in range(40)]
    turns[25] = ("them", "The Orion budget is 48,000 euros.")
    long = transcript(1, *turns)
    focused = focus_source(long, "What is the Orion budget?", 400)
    assert len(focused.text()) <= 400
    texts = [p.text for p in focused.passages]
    assert "The Orion budget is 48,000 euros." in texts
    assert texts == [t for _, t in turns if t in texts]  # in order, a window around the match

    live = Source(n=2, kind="context", title="Call", passages=tuple(Passage(t, s) for s, t in turns))
    assert focus_source(live, "Orion budget", 400).passages[-1].text == turns[-1][1]  # the latest

    document_text = "\n".join(f"Paragraph {i} about gardening." for i in range(60))
    doc = document(3, document_text + "\nThe Orion budget rises in May.")
    assert focus_source(doc, "Orion budget", 300).passages[-1].text == (
        "The Orion budget rises in May.")
    assert focus_source(document(4, "y" * 900), "x", 300).text().endswith("…")

    many = [long, live, doc, *[document(i, "z " * 700) for i in range(4, 12)]]
    fitted = fit_sources(many, "What is the Orion budget?", budget=2400)
    assert [s.n for s in fitted] == [s.n for s in many][:len(fitted)]  # the best ones, in order
    assert 3 <= len(fitted) < len(many)  # the budget is not cut into slivers for all eleven
    assert sum(len(s.text()) for s in fitted) <= 2400  # within the prompt's budget
    assert fit_sources([document(1, "short")], "q")[0].text() == "short"


def test_whole_sentences_drops_only_the_sentence_cut_off() -> None:
    assert whole_sentences("It ships Friday [1]. Then we") == "It ships Friday [1]."
    assert whole_sentences("It ships Friday [1]. Sales know! And") == (
        "It ships Friday [1]. Sales know!")
    assert whole_sentences("It ships Friday [1].") == "It ships Friday [1]."
    assert whole_sentences("Nothing ended here") == "Nothing ended here"  # all there is


def test_a_small_source_budget_keeps_the_best_sources_whole_and_leaves_the_rest_out() -> None:
    orion = transcript(1, ("them", "The Orion budget is 48,000 euros."),
                       ("me", "Fine, Lena signs it off on Friday."))
    others = [document(i, f"Paragraph {i} about the garden. " * 20) for i in range(2, 6)]
    short = document(6, "Orion: budget approved.")
    fitted = fit_sources([orion, *others, short], "What is the Orion budget?", budget=350)
    assert [s.n for s in fitted] == [1, 6]  # the best, then what still fits: the short one
    assert fitted[0] == orion  # whole: it fits
    kept = fit_sources([orion, *others], "What is the Orion budget?", budget=350, keep=[3, 5])
    assert [s.n for s in kept] == [1, 3, 5]  # the forced ones whatever the budget
    tiny = fit_sources([others[0], orion], "What is the Orion budget?", budget=120)
    assert [s.n for s in tiny] == [2] and len(tiny[0].text()) <= 120  # the first, cut to fit


# -- relevance -----------------------------------------------------------------------------------


def test_nothing_is_relevant_without_sources_or_without_a_shared_content_word() -> None:
    assert not relevant("What did we decide about pricing?", [])
    unrelated = [transcript(1, ("them", "The weather was lovely in Lisbon."))]
    assert not relevant("What did we decide about pricing?", unrelated)
    # a shared word counts, crudely stemmed, in the text or the title
    assert relevant("What did we decide about pricing?",
                    [transcript(1, ("them", "We decided the price stays."))])
    assert relevant("How is Atlas going?", [transcript(1, ("me", "Fine."), title="Atlas sync")])
    # a question of stop words only shares nothing
    assert not relevant("What was that?", unrelated)


def test_the_forced_story_counts_as_relevant() -> None:
    story = document(2, "Situation: the migration failed at night.", title="STAR stories")
    assert not relevant("Tell me about yourself", [story])
    assert relevant("Tell me about yourself", [story], always=[2])


# -- the question heard from "them" --------------------------------------------------------------


@pytest.mark.parametrize(("sentence", "expected"), [
    ("When can you start?", True),
    ("what is your notice period", True),
    ("So, how would you handle that", True),
    ("Tell me about a time you failed.", True),
    ("We ship on Friday.", False),
    ("Thanks", False),
    ("", False),
])
def test_a_question_ends_with_a_question_mark_or_starts_with_a_question_word(
    sentence: str, expected: bool
) -> None:
    assert is_question(sentence) is expected


def test_the_last_question_is_the_last_one_somebody_else_asked() -> None:
    turns = [
        Said("them", "Hi. What's your background?"),
        Said("me", "I build data pipelines. What about the team?"),
        Said("them", "We are five. And how soon could you start? Thanks for coming."),
        Said("me", "Would two weeks work?"),  # the user's own question is never taken
    ]
    found = last_question(turns)
    assert found == Said("them", "And how soon could you start?")
    assert last_question([Said("me", "Where are we?"), Said("them", "Fine, thanks.")]) is None
    assert last_question([Said("Alice", "who owns the budget")]) == Said(
        "Alice", "who owns the budget")


# -- the check -----------------------------------------------------------------------------------


SOURCES = [
    transcript(1, ("them", "We will ship the Atlas beta on Friday, no later."),
               ("me", "Then I’ll tell the support team.")),
    document(2, "Pricing: 40 euros per seat, per month."),
]


def test_a_verbatim_quote_is_kept_and_attributed_from_the_matched_passage() -> None:
    answer = 'They said "we will ship the Atlas BETA on  Friday" [1]. Price is 40 euros [2].'
    checked = check_answer(answer, SOURCES, "When do we ship?")

    assert checked.text == answer
    assert checked.unverified == 0
    first, second = checked.citations
    assert first.source.n == 1 and first.verified
    assert first.quote == "we will ship the Atlas BETA on Friday"
    assert first.speaker == "them"  # read off the turn, not the model
    assert second.source.n == 2 and second.verified
    assert second.quote == "Pricing: 40 euros per seat, per month."  # no quote: the best passage


def test_a_comma_left_before_a_citation_is_taken_out() -> None:
    # the sentence's last clause dropped, or a time after it resolved: "... on Friday, [1]."
    assert check_answer("The beta ships on Friday, [1].", SOURCES).text == (
        "The beta ships on Friday [1].")
    assert check_answer("Atlas; [1]", SOURCES).text == "Atlas [1]"
    assert check_answer("It costs 40 euros per seat [2], [1].", SOURCES).text == (
        "It costs 40 euros per seat [2] [1].")


def test_a_fabricated_quote_is_marked_never_passed_off() -> None:
    answer = 'They promised “a full refund for everyone” [1]. They said "ship the Atlas beta on Friday" [1].'
    checked = check_answer(answer, SOURCES)

    assert checked.text == ('They promised “a full refund for everyone” [unverified] [1]. '
                            'They said "ship the Atlas beta on Friday" [1].')
    assert checked.unverified == 1
    (citation,) = checked.citations
    assert citation.verified and citation.quote == "ship the Atlas beta on Friday"  # the verified one shows


def test_a_quote_must_be_in_the_source_it_cites() -> None:
    checked = check_answer('The price is "40 euros per seat" [1].', SOURCES)
    assert UNVERIFIED in checked.text
    (citation,) = checked.citations
    assert citation.source.n == 1 and not citation.verified
    assert citation.quote == "40 euros per seat"


def test_an_uncited_quote_is_looked_up_in_every_source() -> None:
    checked = check_answer('Apostrophes differ: "then I\'ll tell the support team."', SOURCES)
    assert checked.unverified == 0
    assert checked.text.endswith('team." [1]')  # and the sentence is attributed to its source
    assert checked.citations[0].speaker == "me"
    assert check_answer('"nobody said this"', SOURCES).text == f'"nobody said this" {UNVERIFIED}'


def test_an_uncited_sentence_a_source_supports_is_cited_and_no_other() -> None:
    answer = ("The Atlas beta ships on Friday. It costs 40 euros per seat a month! "
              "Nobody mentioned the weather. I don't know more.")
    checked = check_answer(answer, SOURCES, "When does Atlas ship?")

    assert checked.text == ("The Atlas beta ships on Friday [1]. It costs 40 euros per seat a "
                            "month [2]! Nobody mentioned the weather. I don't know more.")
    assert checked.attributed == 2
    assert [c.source.n for c in checked.citations] == [1, 2]
    assert checked.citations[0].quote == "We will ship the Atlas beta on Friday, no later."
    # a cited sentence keeps its citation, even one the support rule would put elsewhere
    assert check_answer("Seats cost 40 euros [1].", SOURCES).text == "Seats cost 40 euros [1]."
    # a citation after the full stop belongs to its sentence
    assert check_answer("Ships on Friday. [1] Seats are 40 euros.", SOURCES).text == (
        "Ships on Friday. [1] Seats are 40 euros [2].")


def test_sentences_split_and_join_back() -> None:
    text = "One. [1] Two!\nThree? Four"
    assert "".join(sentences(text)) == text
    assert [p for p in sentences(text) if p.strip()] == ["One. [1]", "Two!", "Three?", "Four"]


def test_citations_of_sources_that_do_not_exist_are_dropped() -> None:
    checked = check_answer("We ship Friday [1][7]. Also [3, 2].", SOURCES)
    assert checked.text == "We ship Friday [1]. Also [2]."
    assert checked.dropped == 2
    assert [c.source.n for c in checked.citations] == [1, 2]
    assert drop_unknown_citations("No source [9].", {1}) == ("No source.", 1)


def test_an_answer_without_citations_cites_nothing() -> None:
    checked = check_answer("I do not know.", SOURCES)
    assert checked.citations == [] and checked.text == "I do not know."


@given(st.text(alphabet=st.sampled_from(list("ab .!?[]1,\n"))))
def test_sentences_always_join_back_to_the_text(text: str) -> None:
    assert "".join(sentences(text)) == text


def test_the_turn_that_asked_the_question_is_no_evidence() -> None:
    live = Source(n=1, kind="context", title="Call", passages=(
        Passage("What is your notice period?", "them"), Passage("Good question.", "me")))
    assert not relevant("What is your notice period?", [live])
    answered = Source(n=1, kind="context", title="Call", passages=(
        Passage("What is your notice period?", "them"), Passage("Three months notice.", "me")))
    assert relevant("What is your notice period?", [answered])


def test_the_story_picked_shares_most_words_else_it_is_the_first() -> None:
    chunks = [(1, "Situation: a tight deadline."), (2, "Situation: a failed migration at night.")]
    assert pick_story("Tell me about a failure", chunks) == 2
    assert pick_story("Tell me about yourself", chunks) == 1
    assert pick_story("anything", []) is None


# -- compact sources: the matched turns with their neighbours ------------------------------------

MEETING = [
    Passage("Okay, let's start with the agenda.", "Project Manager", "m:1"),
    Passage("Mm-hmm.", "Marketing", "m:2"),
    Passage("The remote should cost twenty five euros at most.", "Project Manager", "m:3"),
    Passage("Yeah.", "Industrial Designer", "m:4"),
    Passage("Then the battery has to be a cheap standard one.", "Industrial Designer", "m:5"),
    Passage("Lunch is at noon today.", "Marketing", "m:6"),
    Passage("Kinetic batteries would raise the price a lot.", "User Interface", "m:7"),
    Passage("Uh-huh.", "Marketing", "m:8"),
    Passage("Let's move on to the colours.", "Project Manager", "m:9"),
]


def test_compact_keeps_the_best_matched_turns_with_neighbours_that_say_something() -> None:
    from daemon.memory.grounding import compact_turns

    kept = compact_turns(MEETING, "What did they decide about the battery price?", matched=2)

    # matched: m:7 (battery, price) then m:5 (battery); neighbours skip "Yeah." / "Uh-huh."
    assert [p.ref for p in kept] == ["m:3", "m:5", "m:6", "m:7", "m:9"]
    assert kept[0].speaker == "Project Manager"  # speakers and refs survive


def test_compact_takes_one_neighbour_each_side_and_keeps_the_order() -> None:
    from daemon.memory.grounding import compact_turns

    kept = compact_turns(MEETING, "lunch", matched=1, neighbours=1)
    assert [p.ref for p in kept] == ["m:5", "m:6", "m:7"]
    assert [p.ref for p in compact_turns(MEETING, "lunch", matched=1, neighbours=0)] == ["m:6"]


def test_compact_with_no_shared_word_keeps_the_turn_that_says_most() -> None:
    from daemon.memory.grounding import compact_turns

    kept = compact_turns(MEETING, "zebra", matched=2, neighbours=0)
    assert [p.ref for p in kept] == ["m:3"]


def test_compact_stays_within_its_limit_best_match_first() -> None:
    from daemon.memory.grounding import compact_turns

    kept = compact_turns(MEETING, "kinetic price", matched=2, limit=70)
    assert [p.ref for p in kept] == ["m:7"]  # the best match fits; its neighbours do not
    assert compact_turns([], "battery") == ()


def test_compact_cuts_a_long_matched_turn_around_its_matching_sentence() -> None:
    from daemon.memory.grounding import MAX_TURN_CHARS, compact_turns

    filler = " ".join(f"We talked about item {i} for a while." for i in range(20))
    long = Passage(f"{filler} The battery must be rechargeable. {filler}", "Marketing", "m:1")
    kept = compact_turns([long], "battery", neighbours=0)
    assert len(kept) == 1 and len(kept[0].text) <= MAX_TURN_CHARS
    assert "The battery must be rechargeable." in kept[0].text and kept[0].ref == "m:1"


CHAT = [
    Passage("Hey Maria! I joined a service group last week.", "John", "c:1"),
    Passage("Wow, John! That's awesome! How did the volunteering go?", "Maria", "c:2"),
    Passage("Thanks, Maria! We gave out food at a homeless shelter.", "John", "c:3"),
    Passage("Thanks, John!", "Maria", "c:4"),
    Passage("I also started a toy drive for kids.", "John", "c:5"),
]


def test_a_sentence_that_only_greets_thanks_or_praises_is_left_out() -> None:
    from daemon.memory.grounding import without_phatic

    names = {"john", "maria"}
    assert without_phatic(CHAT[1], names).text == "How did the volunteering go?"
    assert without_phatic(CHAT[2], names).text == "We gave out food at a homeless shelter."
    assert without_phatic(CHAT[2], names).ref == "c:3"  # speaker and ref kept
    # a turn of nothing else stays whole; a name alone, or a topic's word, is no greeting
    assert without_phatic(CHAT[3], names) == CHAT[3]
    design = Passage("Design. Thanks!", "Marketing")
    assert without_phatic(design, {"market"}).text == "Design."
    assert without_phatic(Passage("Good luck with the launch! It ships Friday."), ()).text \
        == "Good luck with the launch! It ships Friday."


def test_compact_reads_chat_turns_without_their_greetings_and_skips_a_thanks() -> None:
    from daemon.memory.grounding import compact_turns

    kept = compact_turns(CHAT, "What did John do at the shelter?", matched=1, neighbours=1)
    # matched c:3 (shelter); its neighbours: c:2 before, and c:5 after ("Thanks, John!" says
    # nothing); the greetings are gone from every turn read
    assert [p.ref for p in kept] == ["c:2", "c:3", "c:5"]
    assert [p.text for p in kept] == ["How did the volunteering go?",
                                      "We gave out food at a homeless shelter.",
                                      "I also started a toy drive for kids."]


def test_the_prompt_opens_with_the_live_conversation_then_the_recalled_sources() -> None:
    from daemon.memory.grounding import prompt_prefix

    context = Source(n=1, kind="context", title="Atlas now", label="the conversation now",
                     passages=(Passage("So when does it ship?", "Sarah"),))
    recalled = transcript(2, ("Tom", "The Atlas beta ships on Friday."))
    messages = build_prompt("conversation", "When does it ship?", [context, recalled])
    prefix = prompt_prefix("conversation", context)

    (opening,) = prefix
    assert messages[0].content.startswith(opening.content)
    assert opening.content.endswith("[1] Atlas now (the conversation now)\n"
                                    "Sarah: So when does it ship?\n\n")
    assert messages[0].content.index("[2]") > messages[0].content.index("Sources:")
    assert messages[1].content.startswith("When does it ship?")
    assert prompt_prefix("conversation")[0].content.endswith("no headings.\n\n")


@pytest.mark.parametrize(("count", "start"), [(0, 0), (11, 0), (12, 0), (23, 0), (24, 12),
                                              (35, 12), (36, 24)])
def test_the_live_window_starts_in_steps_so_what_was_read_stays_the_prefix(
    count: int, start: int
) -> None:
    from daemon.memory.grounding import context_window

    assert context_window(count, step=12) == start


# -- answers that only restate the question -------------------------------------------------------


@pytest.mark.parametrize(("answer", "question"), [
    ("The group discussed battery issues and flip top design in  and .",
     "What did the group discuss about battery issues and flip top design?"),
    ("They talked about the evaluation criteria [1].", "Summarize the evaluation criteria."),
    ("The team discussed the LCD displays.", "Why did the team decide not to use LCD displays?"),
])
def test_an_answer_that_only_restates_the_question_is_an_echo(answer: str, question: str) -> None:
    from daemon.memory.grounding import echoes_question

    assert echoes_question(answer, question)


@pytest.mark.parametrize(("answer", "question"), [
    ("They chose a rubber case because it survives drops [1].",
     "What did the group discuss about the case?"),
    ("The LCD displays cost too much for a 25 euro remote [2].",
     "Why did the team decide not to use LCD displays?"),
    ("", "What did they decide?"),
    ("I don't know: I found nothing about this in your memory of Atlas.", "Who won the match?"),
    ("John scored 40 points in a game recently [1].",
     "What was the highest number of points John scored in a game recently?"),
])
def test_an_answer_that_adds_something_is_no_echo(answer: str, question: str) -> None:
    from daemon.memory.grounding import echoes_question

    assert not echoes_question(answer, question)


def test_an_echo_is_replaced_by_the_matching_passages_quoted_and_verified() -> None:
    from daemon.memory.grounding import echoes_question, passages_answer

    question = "What did the group discuss about the battery price?"
    sources = [transcript(1, ("Tom", "Kinetic batteries would raise the price a lot."),
                          ("Mei", "Lunch is at noon.")),
               transcript(2, ("Sarah", "The battery stays a standard one."))]
    text = passages_answer(question, sources)
    assert text == ('Tom said: "Kinetic batteries would raise the price a lot." [1]. '
                    'Sarah said: "The battery stays a standard one." [2].')
    checked = check_answer(text, sources, question)
    assert checked.unverified == 0 and [c.source.n for c in checked.citations] == [1, 2]
    assert not echoes_question(checked.text, question)


def test_a_matched_question_brings_the_turns_that_answer_it() -> None:
    from daemon.memory.grounding import compact_turns

    chat = [
        Passage("I went to the adoption meeting last week.", "Caroline", "D1:1"),
        Passage("Anything you're excited for in the adoption process?", "Melanie", "D1:2"),
        Passage("Oh yes!", "Caroline", "D1:3"),
        Passage("Creating a family for kids who need one.", "Caroline", "D1:4"),
        Passage("That sounds wonderful.", "Melanie", "D1:5"),
    ]
    kept = compact_turns(chat, "What is Caroline excited about in the adoption process?",
                         matched=1, neighbours=1)
    # the two turns after it that say something ("Oh yes!" only acknowledges), none before
    assert [p.ref for p in kept] == ["D1:2", "D1:4", "D1:5"]


def test_compact_weighs_a_word_few_turns_share_above_one_most_share() -> None:
    from daemon.memory.grounding import compact_turns

    turns = [
        Passage("The remote control design should look fancy.", "Project Manager", "m:1"),
        Passage("A remote control design for everybody, simple.", "Marketing", "m:2"),
        Passage("Long battery life matters to people.", "Industrial Designer", "m:3"),
        Passage("The remote control design needs a menu.", "User Interface", "m:4"),
    ]
    question = "What did the group think of the battery in the remote control design?"
    # 'battery' (one turn) weighs more than 'remote', 'control' and 'design' (three)
    kept = compact_turns(turns, question, matched=1, neighbours=0)
    assert [p.ref for p in kept] == ["m:3"]


def test_compact_prefers_the_named_speakers_turn_between_equal_matches() -> None:
    from daemon.memory.grounding import compact_turns

    turns = [
        Passage("Buttons could go, like on phones.", "Project Manager", "m:1"),
        Passage("Mm-hmm.", "Marketing", "m:2"),
        Passage("Fewer buttons, then a menu.", "Marketing", "m:3"),
    ]
    kept = compact_turns(turns, "What did the Marketing think of buttons?", matched=1,
                         neighbours=0)
    assert [p.ref for p in kept] == ["m:3"]  # not m:1 (said first), not m:2 (says nothing)
    kept = compact_turns(turns, "What was said about buttons?", matched=1, neighbours=0)
    assert [p.ref for p in kept] == ["m:1"]  # nobody named: the first of the equal matches

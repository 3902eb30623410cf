"""The content rules a model's output must pass before it is stored (pure), and the merge of
the pieces of a long keep through summarise() and extract() with a scripted model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import pytest

from daemon.errors import EngineError
from daemon.llm.generate import AnswerCutOff, ChatMessage, ScriptedGenerator
from daemon.memory import validate
from daemon.memory.archive import clean_summary, format_for, take_sections
from daemon.memory.extract import (
    ExtractedAssertion,
    Undertaken,
    Undertaking,
    check_assertion,
    decisions_at,
    extraction_prompt,
    find_decisions,
    find_undertakings,
    group_undertakings,
    said_work,
    spoken_clauses,
    undertaking_assertion,
)
from daemon.memory.remember import checked_decisions, extract, summarise
from daemon.store.records import Session, Turn

TURNS = ["So we go for the rubber case then because the users in the survey said they want "
         "something soft in the hand.", "Mm-hmm.", "I'll send the survey results by Friday.",
         "Jen can draw the case by Monday; it will sell for twenty five euros."]
PEOPLE = ["Project Manager", "Marketing", "Industrial Designer"]


# -- statements --------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "Project Manager",  # a role
    "Design project",  # a heading
    "I'm Jen. Yeah. Mm-hmm.",  # a copied fragment of small talk
    "I'm super hyped to explore different game genres",  # small talk
    "Nice to meet you all, see you next week.",
    "Should we use a rubber case?",  # a question is not established
    "the case the case the case the case the case",  # a loop
    "we go for the rubber case then because the users in the survey said they want",  # a copy
])
def test_what_is_not_a_statement(text: str) -> None:
    assert not validate.is_statement(text, TURNS)


@pytest.mark.parametrize("text", [
    "The team chose a rubber case for the remote.",
    "Marketing will send the survey results by Friday.",
    "The remote will sell for 25 euros.",
])
def test_what_is_a_statement(text: str) -> None:
    assert validate.is_statement(text, TURNS)


def test_an_open_question_is_a_statement_only_where_questions_belong() -> None:
    question = "Who will maintain the remote's firmware after launch?"
    assert not validate.is_statement(question)
    assert validate.is_statement(question, questions=True)


def test_a_copy_is_more_than_twelve_words_of_one_turn() -> None:
    twelve = "we go for the rubber case then because the users in the"
    assert not validate.copied_run(twelve, TURNS)
    assert validate.copied_run(twelve + " survey", TURNS)
    # twelve words across two turns are not a copy of one
    assert not validate.copied_run("soft in the hand. Mm-hmm. I'll send the survey results by "
                                   "Friday now", TURNS)


def test_an_uh_in_the_turn_does_not_hide_a_copy() -> None:
    turn = "so we um we looked at the the uh prices of all the cases and the rubber one is cheap"
    assert validate.copied_run("we looked at the the prices of all the cases and the rubber one", [turn])


@pytest.mark.parametrize(("said", "read"), [
    ("Um, so uh we start.", "so we start."),
    ("That is it, um.", "That is it."),
    ("Hmm.", ""),
    ("An umbrella, uh-huh, er, mm-hmm.", "An umbrella, uh-huh, mm-hmm."),
])
def test_the_sounds_of_hesitation_are_not_words(said: str, read: str) -> None:
    assert validate.fluent(said) == read


def test_prompt_wording_and_piece_labels() -> None:
    words = validate.scaffolding(["action_items", "who will do what"])
    assert words.search("see action_items below") and words.search("Who will do what, when.")
    assert not validate.is_statement("The action_items list has three entries.", (), words)
    assert validate.scrub("The team met (part 2 of 3 of the transcript) twice.") == \
        "The team met twice."


# -- owners, choices, speakers, duplicates -----------------------------------------------------


def test_an_owner_is_a_speaker_or_me_or_them() -> None:
    assert validate.owner_of("marketing", PEOPLE) == "Marketing"
    assert validate.owner_of(" Them ", PEOPLE) == "them"
    assert validate.owner_of("me", PEOPLE) == "me"
    assert validate.owner_of("Jen", PEOPLE) is None
    assert validate.owner_of("", PEOPLE) is None


def test_a_chosen_option_is_more_than_yes_or_no() -> None:
    assert validate.real_choice("rubber case")
    assert not any(validate.real_choice(c) for c in ("Yes", "no", "N/A", "", "maybe"))


def test_participants_are_the_distinct_speakers_in_order() -> None:
    assert validate.speakers(["Marketing", "Project Manager", "marketing ", "me"]) == [
        "Marketing", "Project Manager", "me"]


def test_near_same_items_are_one_item() -> None:
    taken: list[str] = ["The team chose a rubber case for the remote."]
    kept = validate.unique_items(["the team chose the rubber case for the remote",
                                  "The remote gets a yellow case.",
                                  "The remote gets a yellow case"], taken)
    assert kept == ["The remote gets a yellow case."]
    assert not validate.same_item("The remote costs 25 euros.", "The remote has a rubber case.")


# -- assertions --------------------------------------------------------------------------------


def item(kind: str, text: str, **fields: Any) -> ExtractedAssertion:
    return msgspec.convert({"kind": kind, "text": text, **fields}, ExtractedAssertion)


def test_a_decision_needs_a_real_chosen_option() -> None:
    assert check_assertion(item("decision", "The team decided on the case."), PEOPLE, TURNS) \
        is None
    assert check_assertion(item("decision", "The team decided on the case.", chosen="Yes",
                                alternatives=["No", "Maybe"]), PEOPLE, TURNS) is None
    kept = check_assertion(item("decision", "The group picked a rubber case.",
                                chosen="rubber case", alternatives=["Rubber case", "plastic",
                                                                    "No"],
                                reasoning="The group picked a rubber case."), PEOPLE, TURNS)
    assert kept is not None
    assert (kept.chosen, kept.alternatives, kept.reasoning) == ("rubber case", ["plastic"], "")


def test_a_commitment_whose_owner_did_not_speak_is_a_fact() -> None:
    kept = check_assertion(item("commitment", "Marketing will send the results by Friday.",
                                owner="marketing", due="Friday"), PEOPLE, TURNS)
    assert kept is not None and (kept.kind, kept.owner, kept.due) == (
        "commitment", "Marketing", "Friday")
    fact = check_assertion(item("task", "Jen will draw the case by Monday.", owner="Jen",
                                due="Monday"), PEOPLE, TURNS)
    assert fact is not None and (fact.kind, fact.owner, fact.due) == ("fact", "", "")


def test_copies_small_talk_and_scaffolding_are_not_assertions() -> None:
    turns = TURNS
    for text in ("The team chose a rubber case.",  # the prompt's own example
                 "I'm Jen. Yeah. Mm-hmm.",
                 "So we go for the rubber case then because the users in the survey said",
                 "The about_person field is false for this item.",
                 "Nice to meet you all today."):
        assert check_assertion(item("fact", text), PEOPLE, turns) is None, text
    assert check_assertion(item("decision", "The remote gets a kinetic battery.",
                                chosen="Project Manager"), PEOPLE, turns) is None  # a speaker


# -- extract, then abstract --------------------------------------------------------------------


@pytest.mark.parametrize(("said", "decision"), [
    ("Okay, we decided to include voice recognition, so to have the standard buttons.",
     ("The group decided to include voice recognition.", "include voice recognition", [], "")),
    ("So now we seem to have a consensus that LCDs are the way to go because of style and",
     ("The group agreed that LCDs are the way to go.", "LCDs are the way to go", [], "style")),
    ("So we've basically worked out that we're going with a simple battery, the advanced chip.",
     ("The group is going with a simple battery, the advanced chip.",
      "a simple battery, the advanced chip", [], "")),
    ("I chose the rubber case instead of plastic, because it is soft.",
     ("Marketing chose the rubber case.", "the rubber case", ["plastic"], "it is soft")),
    # the dev meetings' other plain forms
    ("Uh um we we're definitely going in for voice recognition as well as L_C_D_s, mm.",
     ("The group is going with voice recognition as well as L_C_D_s.",
      "voice recognition as well as L_C_D_s", [], "")),
    ("Mm'kay um so I'm seeing that we're gonna just basically focus on this young demographic "
     "group, aim it at them, but then in a sense",
     ("The group will focus on this young demographic group, aim it at them.",
      "this young demographic group, aim it at them", [], "")),
    ("So, we want to go for simple push buttons because it need a simple chip and it's really "
     "lesser uh re really less expensive compared to L_C_D_",
     ("The group is going with simple push buttons.", "simple push buttons", [],
      "it need a simple chip and it's really lesser re really less")),  # twelve words
    ("we just went for a classic rubber button.",
     ("The group went with a classic rubber button.", "a classic rubber button", [], "")),
    ("We're gonna have a beep.", ("The group is going with a beep.", "a beep", [], "")),
    ("and we just stick with two batteries so it's not any solar or",
     ("The group is going with two batteries.", "two batteries", [], "")),
    # an option dropped: the one taken instead is the chosen one, else going without it
    ("We will omit the touch screen in favour of voice recognition.",
     ("The group will drop the touch screen in favour of voice recognition.",
      "voice recognition", ["the touch screen"], "")),
    ("Yeah, the sample sensor will have to go,'cause that's the most expensive thing on there.",
     ("The group will drop the sample sensor.", "no sample sensor", ["the sample sensor"],
      "that's the most expensive thing on there")),
])
def test_a_decision_said_in_so_many_words_is_read_off_the_turn(
        said: str, decision: tuple[str, str, list[str], str]) -> None:
    (found,) = find_decisions([("Marketing", said)])
    assert (found.text, found.chosen, found.alternatives, found.reasoning) == decision
    assert found.kind == "decision" and found.evidence


@pytest.mark.parametrize("said", [
    "If we decide to go for the rubber case, we need a new mould.",  # a condition
    "We haven't agreed on the colour yet.",  # a negation
    "Have we decided on the colour?",  # a question
    "We need to decide whether the case is yellow.",  # still to do
    "Let's go with yellow, I think.",  # a proposal
    "Yeah I agreed with him on that, totally, yeah.",  # no option
    "We decided that already and it works.",  # "that" was the option
    "So we decided those were the most important buttons.",  # ES2009d: which ones, said before
    "We're gonna go with that concept I think.",  # TS3009b: which one, said before
    "I picked this color because it's bright and bold.",  # which, only the photo showed
    "I finally picked up a book and it's been awesome!",  # "picked up": no choice
    # ES2006b: why, not what; ES2009b: a question put as a statement
    "I was just defending the fact why we want to keep the remote control close to us.",
    "So do we wanna go for that, or do we want to go for an older demographic, and my thought",
    "If we want to use the latex, then we have to go with one of the other power things.",
    "Maybe we will drop the speaker.",  # a thought
    "If the sample sensor will have to go, what is left?",  # a condition
    "Let's see if we'll drop the light later.",
    "I suspect we're gonna have a couple of minor finance issues, but",  # ES2006d: no option
    "If we're gonna have a non-remote-looking remote, how do we do it?",
    "So now we're gonna have a look at the prototype.",  # what the meeting does
])
def test_what_settles_nothing_is_no_decision(said: str) -> None:
    assert find_decisions([("Marketing", said)]) == []


# -- a summing-up that goes on over the others' "Right." and "Yep." ---------------------------

SUMMING_UP = [  # ES2006c, the close
    ("Industrial Designer", "Uh oh now I've gone too far."),
    ("Project Manager", "Yeah. We're on our way. Okay. So we've basically worked out that we're "
                        "going with a simple battery, the advanced chip"),
    ("Industrial Designer", "Right."),
    ("Project Manager", "and a curved on one side case which is folded in on itself, um made "
                        "out of rubber"),
    ("Industrial Designer", "Yep."),
    ("Project Manager", "and the buttons are also rubber. We're having push-buttons on the "
                        "outside and then on the inside an L_C_D_ with spinning wheel, and we're "
                        "incorporating voice recognition. That's our overall concept,"),
    ("User Interface", "Um"),
    ("Project Manager", "and it's gonna look sort of vegetable,"),
    ("Project Manager", "and be in bright vegetable colours."),
    ("User Interface", "Uh-huh. So w w would with have the spinning wheel inside with the "
                       "L_C_D_, or would it be on the outer"),
    ("Project Manager", "and then we can talk about the colours later."),
]


def test_a_summing_up_lists_each_decision_it_goes_on_to() -> None:
    found = [(i, d.text, d.chosen) for i, d in decisions_at(SUMMING_UP)]
    assert found == [
        (1, "The group is going with a simple battery, the advanced chip.",
         "a simple battery, the advanced chip"),
        (3, "The group is going with a curved on one side case.", "a curved on one side case"),
        (5, "The group settled that the buttons are also rubber.", "rubber"),
        (5, "The group is going with push-buttons on the outside.", "push-buttons on the outside"),
        (5, "The group is going with an L_C_D_ with spinning wheel.",
         "an L_C_D_ with spinning wheel"),
        (5, "The group is going with voice recognition.", "voice recognition"),
        (7, "The group is going with a vegetable look.", "a vegetable look"),
        (8, "The group is going with bright vegetable colours.", "bright vegetable colours"),
    ]  # "That's our overall concept" points back; the turn after another speaker's question
    # is not the summing-up


@pytest.mark.parametrize("said", [
    # no decision starts it: a presentation going on is not a summing-up (ES2006c)
    [("Industrial Designer", "So the case could be rubber"), ("Marketing", "Mm."),
     ("Industrial Designer", "and the buttons are also rubber.")],
    # another speaker's "and" does not go on with it
    [SUMMING_UP[1], ("Marketing", "and a wooden case, I think.")],
    # the speaker goes on with something else
    [SUMMING_UP[1], ("Marketing", "Right."),
     ("Project Manager", "Now the next meeting is in thirty minutes.")],
    [SUMMING_UP[1], ("Marketing", "Right."),
     ("Project Manager", "and you can use it just plain.")],  # TS3009a: no option
])
def test_what_does_not_go_on_with_a_summing_up(said: list[tuple[str, str]]) -> None:
    assert [i for i, _ in decisions_at(said)] == [i for i, (_, t) in enumerate(said)
                                                   if "going with" in t]


def test_a_proposal_accepted_is_no_summing_up() -> None:
    said = [("Marketing", "I think we should make it universal"), ("Project Manager", "Yeah."),
            ("Marketing", "and a plastic case with the buttons on top.")]  # TS3009a's form
    assert [i for i, _ in decisions_at(said)] == [0]


# -- the merge of pieces, through summarise() and extract() ------------------------------------


def session() -> Session:
    return Session(id=1, space_id=1, title="Remote design", activity="project", status="kept",
                   started_at=0.0, ended_at=900.0, participants=("A", "B"), practice=False)


def long_turns() -> list[Turn]:
    texts = [f"Point {i}: the case needs a review of the drawings and the budget owner signs "
             "it off soon." + (" So we decided to go with the rubber case." if i % 15 == 3
                               else "") for i in range(90)]
    return [Turn(id=i + 1, session_id=1, seq=i, speaker="A" if i % 2 else "B", source="import",
                 start=10.0 * i, end=10.0 * i + 8, text=t, ref=None)
            for i, t in enumerate(texts)]


def archive_answer(decided: list[str], summary: str = "The team reviewed the drawings.") -> dict[str, Any]:
    return {"topic": "Remote design", "summary": summary,
            "sections": {"decided": decided, "action_items": [], "still_open": [],
                         "changed_since_last_time": []},
            "key_quotes": []}


async def test_pieces_merge_without_duplicates_beside_a_cut_off_and_a_degenerate_piece() -> None:
    answers: list[object] = [
        archive_answer(["The team chose a rubber case for the remote."]),
        # cut off with nothing complete: asked again in two halves, the halves answer
        AnswerCutOff(1024, '{"topic": "Remote design", "summ'),
        archive_answer(["The team chose the rubber case for the remote"]),  # near-same
        archive_answer(["The budget owner signs off the drawings soon."]),
        # degenerate: a loop, labels and the prompt's wording
        archive_answer(["A", "Project Manager", "the case the case the case the case the case"],
                       summary="the case the case the case the case the case the case."),
        # cut off after a complete section item: salvaged
        AnswerCutOff(1024, '{"topic": "x", "summary": "The yellow colour was picked.", '
                           '"sections": {"decided": ["The remote will be yellow and round.", '
                           '"The remote will be yel'),
    ]
    generator = ScriptedGenerator(answers)
    built = await summarise(generator, 2600, session(), long_turns())
    assert len(generator.calls) == len(answers)  # 4 pieces, the second asked again in halves
    assert built.sections["decided"] == ["The team chose a rubber case for the remote.",
                                         "The budget owner signs off the drawings soon.",
                                         "The remote will be yellow and round."]
    assert "the case the case" not in built.summary
    assert built.summary.startswith("The team reviewed the drawings.")
    assert built.summary.count("The team reviewed the drawings.") == 1  # said by three pieces
    assert built.participants == ["B", "A"]


async def test_a_long_archive_states_decisions_and_action_items_from_the_assertions() -> None:
    turns = [msgspec.structs.replace(t, text=t.text * 2) for t in long_turns()]  # 18k chars

    def respond(messages: Sequence[ChatMessage]) -> object:
        prompt = messages[-1].content
        assert '"decided"' not in prompt and '"action_items"' not in prompt
        assert '"changed_since_last_time"' not in prompt and '"still_open"' not in prompt
        assert "two or three sentences" in prompt  # a part of the meeting
        said = ["The team reviewed the drawings of the case.",
                "The budget owner was asked to sign off soon."][min(len(generator.calls), 2) - 1]
        return {"topic": "Remote design", "summary": said,
                "sections": {"still_open": ["Who signs the budget off is not settled."],
                             "changed_since_last_time": [],
                             "decided": ["Project Manager"]},  # not asked: ignored
                "key_quotes": []}

    generator = ScriptedGenerator(respond)
    statements = [("decision", "The team chose the rubber case over plastic."),
                  ("commitment", "A will send the drawings to the budget owner."),
                  ("commitment", "Marketing will investigate."),  # short, and an assertion
                  ("fact", "The case needs a review of the drawings.")]
    built = await summarise(generator, 16384, session(), turns, statements=statements)
    assert len(generator.calls) >= 2  # read in parts although the context holds it all
    assert built.sections["decided"] == ["The team chose the rubber case over plastic."]
    assert built.sections["action_items"] == ["A will send the drawings to the budget owner.",
                                              "Marketing will investigate."]
    assert built.sections["still_open"] == []  # not asked of a part: it read wrong
    assert built.summary == ("The team reviewed the drawings of the case. The budget owner was "
                             "asked to sign off soon.")


async def test_a_meeting_read_in_parts_is_read_in_at_least_three() -> None:
    turns = long_turns()[:60]  # ~5,900 characters: one piece would hold it
    generator = ScriptedGenerator(lambda _: {"topic": "Remote design", "summary": "A spoke.",
                                             "sections": {}, "key_quotes": []})
    await summarise(generator, 16384, session(), turns, statements=[])
    assert len(generator.calls) == 3


async def test_the_archive_fails_only_when_every_piece_fails() -> None:
    generator = ScriptedGenerator(lambda messages: "not json")
    with pytest.raises(EngineError, match="not a valid"):
        await summarise(generator, 2600, session(), long_turns())


async def test_a_long_transcripts_decisions_need_no_model() -> None:
    generator = ScriptedGenerator(lambda messages: {"assertions": []})
    items = await extract(generator, 4096, session(), long_turns(), memories=False)
    assert generator.calls == []  # nobody takes work on; the decisions are said plainly
    assert [(i.kind, i.text, i.chosen) for i in items] == [
        ("decision", "The group decided to go with the rubber case.",
         "the rubber case")]  # said six times: kept once; the option without its verb
    # the keep's decisions and the bench's (bench.meetings --decisions-only) are one function:
    # the decision with the turn that first states it
    turns = long_turns()
    assert [(t.seq, i.text) for t, i in checked_decisions(turns)] == [
        (3, "The group decided to go with the rubber case.")]
    assert extraction_prompt("x", ["a"], memory_enabled=False)[1]["content"].count("[1]") == 1


ATLAS = [("Sam", "Let's settle the Atlas launch. We decided to launch Atlas on March 3rd, "
                 "not in February."),
         ("Priya", "Fine. And the beta stays closed to the public, we agreed on that."),
         ("Sam", "Right, the beta stays closed.")]


def short_turns(said: Sequence[tuple[str, str]]) -> list[Turn]:
    return [Turn(id=i + 1, session_id=1, seq=i, speaker=speaker, source="import",
                 start=5.0 * i, end=5.0 * i + 4, text=text, ref=None)
            for i, (speaker, text) in enumerate(said)]


async def test_the_model_words_and_completes_a_decision_said_in_so_many_words() -> None:
    read = [{"kind": "decision", "text": "Atlas launches on March 3rd.", "chosen": "March 3rd",
             "alternatives": ["February"], "evidence": "launch Atlas on March 3rd"},
            # another turn's decision: its own
            {"kind": "decision", "text": "The beta stays closed to the public.",
             "chosen": "closed to the public", "evidence": "the beta stays closed"}]
    generator = ScriptedGenerator(lambda messages: {"assertions": read})
    items = await extract(generator, 4096, session(), short_turns(ATLAS), memories=False)
    assert [(i.text, i.chosen, i.alternatives) for i in items if i.kind == "decision"] == [
        ("Atlas launches on March 3rd.", "March 3rd", ["February"]),  # one, not two
        ("The beta stays closed to the public.", "closed to the public", [])]


async def test_a_model_decision_of_another_option_in_the_same_turn_is_not_merged() -> None:
    read = [{"kind": "decision", "text": "Atlas ships with the new installer.",
             "chosen": "the new installer", "evidence": "launch Atlas on March 3rd"}]
    generator = ScriptedGenerator(lambda messages: {"assertions": read})
    items = await extract(generator, 4096, session(), short_turns(ATLAS[:1]), memories=False)
    assert [i.chosen for i in items if i.kind == "decision"] == [
        "launch Atlas on March 3rd, not in February", "the new installer"]


@pytest.mark.parametrize("chosen", ["the team", "The group", "I_C_s?", "yes", "",
                                    "Something something new."])
def test_who_chose_or_a_question_is_not_a_choice(chosen: str) -> None:
    assert not validate.real_choice(chosen)


def test_a_summary_sentence_that_only_names_the_people_is_left_out() -> None:
    summary = ("Project Manager introduces the remote control project. Project Manager, "
               "Marketing, Industrial Designer. Marketing: um and everything else, you know.")
    assert clean_summary(summary, names=PEOPLE) == (
        "Project Manager introduces the remote control project.")


def test_a_summary_sentence_that_is_speech_is_left_out() -> None:
    turns = ["Okay. So, this is uh first meeting of this design project. Um and I um like to "
             "show you the agenda for the meeting, I don't know if it was sent round to all of you."]
    summary = ("Project Manager opens the first meeting of the design project. First meeting of "
               "this design project, I like to show you the agenda for the meeting, I don't know "
               "if it was sent round to all of you. Maybe not. We discuss the importance of each "
               "point. Marketing asks what the agenda of the project meeting is.")
    assert clean_summary(summary, turns=turns, names=PEOPLE) == (
        "Project Manager opens the first meeting of the design project. Marketing asks what the "
        "agenda of the project meeting is.")
    # a speaker called "me" (the microphone's voice in a call) is a name, not speech
    assert clean_summary("Me asks them about the project budget.", turns=turns,
                         names=["me", "them"]) == "Me asks them about the project budget."


def test_a_transcript_line_is_not_a_statement() -> None:
    line = "Project Manager: Yeah. We're on our way with the rubber case."
    assert not validate.is_statement(line, names=PEOPLE)
    assert validate.is_statement(line.partition(": ")[2], names=PEOPLE)
    assert validate.is_statement("Note: the rubber case is on its way.", names=PEOPLE)


async def test_what_is_taken_on_has_its_owner_and_kind_from_the_transcript() -> None:
    turns = long_turns()
    said = {20: ("A", "So uh you will focus on the component concept um"),
            21: ("B", "Yeah yeah."),  # a turn the model is not shown, and the acceptance
            40: ("A", "Right, marketing research. I will investigate what the users want."),
            60: ("A", "And B, you will look into the costs of the case."),
            61: ("B", "Yeah, the costs are my task, I'll do it by Friday."),
            80: ("B", "Mm yeah, also the look and feel of the case is my task, yeah.")}
    for i, (speaker, text) in said.items():
        turns[i] = msgspec.structs.replace(turns[i], speaker=speaker, text=text)

    def respond(messages: Sequence[ChatMessage]) -> object:
        prompt = messages[-1].content
        # only what is not said in so many words is asked of the model
        then = prompt.split("Then:\n")[1].split("\n\n")[0]
        assert 'starts with "B will"' in prompt and then == f"B: {said[80][1]}"
        return {"text": "B will work on the look and feel of the case. And B will sing."}

    generator = ScriptedGenerator(respond)
    items = await extract(generator, 4096, session(), turns, memories=False)
    assert len(generator.calls) == 1  # only the one not said plainly
    assert [(i.kind, i.text, i.owner, i.due) for i in items if i.kind != "decision"] == [
        ("task", "B will focus on the component concept.", "B", ""),
        ("commitment", "A will investigate what the users want.", "A", ""),
        # the assignment and its acceptance: one item, given by A
        ("task", "B will look into the costs of the case.", "B", "by Friday"),
        ("commitment", "B will work on the look and feel of the case.", "B", ""),
    ]


@pytest.mark.parametrize("worded", [
    "Project Manager will send you an email, and then I'll take minutes.",  # the turn copied
    "Project Manager will start on the look, User Interface will work on the design.",
])
def test_a_worded_undertaking_tells_of_its_owners_work_only(worded: str) -> None:
    turns = [("Project Manager", "I'll send you an email and then I'll take minutes. The user "
                                 "interface will work on the design, I start on the look.")]
    group = [Undertaking(0, "Project Manager", False)]
    assert undertaking_assertion(Undertaken(worded), group, turns) is None
    kept = undertaking_assertion(Undertaken("Project Manager will send an email."), group, turns)
    assert kept is not None and kept.owner == "Project Manager"


@pytest.mark.parametrize(("sentence", "work"), [
    ("I will investigate.", "investigate"),
    ("So I'll just send my notes to you, and then we'll see", "send their notes to them"),
    ("you will look into the technical design and form", "look into the technical design and form"),
    ("I'll presume he'll work out what that means", ""),  # not what they will do
    ("You'll be looking at the user interface concept,", "be looking at the user interface concept"),
    ("I'll look at show this board", ""),  # TS3009b: what the speaker does in the meeting
    # ES2006a's close: the second "you" hands the work out, in the present
    ("so you're you'll be getting specific instructions once you go back to your workspace, "
     "but basically you're looking at the working design,",
     "be looking at the working design"),
    # the work named only by pointing back (ES2006b: the minutes, said a clause before)
    ("and then I'll send them to you after the meeting.", ""),
    ("I'll look into that.", ""),
    ("I'll send you the slides after the meeting", "send them the slides after the meeting"),
    ("I will be responsible for the design", ""),  # said, but not as a piece of work
    ("I'll look into the costs of the case and the buttons and the colours of the wheel", ""),
])
def test_the_work_said_is_told_of_its_owner(sentence: str, work: str) -> None:
    assert said_work(sentence) == work


def test_the_work_said_is_of_the_owner_the_undertaking_names() -> None:
    # the speaker's own work, not what "you" are given in the same sentence, and the other way
    sentence = "you'll be getting instructions, and I'll send the minutes after the meeting"
    assert said_work(sentence, given=False) == "send the minutes after the meeting"
    assert said_work(sentence, given=True) == ""
    sentence = "I'll send the minutes, and you'll look into the costs of the case"
    assert said_work(sentence, given=True) == "look into the costs of the case"


PM, MK, ID = "Project Manager", "Marketing", "Industrial Designer"


@pytest.mark.parametrize(("turns", "expected"), [
    # a speaker takes work on: theirs, a commitment
    ([(MK, "Yeah or a Teletubby front. Yeah yeah yeah. I will investigate.")], [(MK, False)]),
    ([(ID, "Mm yeah also the the look and feel uh of the remote's also my task, yeah.")],
     [(ID, False)]),
    ([(PM, "I'll I'll uh make notes and put them in the project folder.")], [(PM, False)]),
    # given to a participant named, or to "you" and accepted by the next speaker: a task
    ([(PM, "So the industrial designer, you will work on the case.")], [(ID, True)]),
    ([(PM, "And you will look into the technical design, I think."),
      (ID, "Mm yeah, that's fine.")], [(ID, True)]),
    ([(PM, "Can you send me your slides?"), (MK, "Sure, I will.")], [(MK, True)]),
    # a close handing the work out (ES2006b, IS1006b): "look at", "focus on" and a "Right."
    ([(PM, "Um as to where we're going from here, you're going to look at the components "
           "concept."), (ID, "Right.")], [(ID, True)]),
    ([(PM, "so uh you will focus on the component concept um"), (ID, "Yeah yeah.")],
     [(ID, True)]),
    # not taken on: a past remark, a description, advice, a question, a clause, a negation,
    # what is done in the meeting, a "you will" nobody accepts
    ([(PM, "We also just released a T_F_T_ thing I saw.")], []),
    ([(MK, "You can zap away and you can put it on the table.")], []),
    ([(MK, "I think you should put more time in the design.")], []),
    ([(PM, "What are you going to do?")], []),
    ([(PM, "I dunno what I'm going to design.")], []),
    ([(ID, "It's not my task to talk about experience with remote controls.")], []),
    ([(PM, "I'll show you the tools, and I'll open it on the Smartboard.")], []),
    ([(PM, "So I'll make an example.")], []),  # "make" is work only when said for later
    ([(MK, "Oh you're much taller than me so I'm gonna write down here.")], []),
    ([(ID, "That's my task. Okay. Where have I put it?")], []),  # "my task" says no task
    ([(MK, "So, my name is Mark, and I am responsible for User Interface Design.")], []),
    ([(PM, "And you will look into the technical design."), (MK, "What do you mean?")], []),
    # ES2006a: said to the User Interface designer, answered by Marketing's "Mm-hmm."
    ([(PM, "you're looking at the technical functions design, and for you it's the user "
           "requirements specification,"), (MK, "Mm-hmm.")], []),
    ([(PM, "Now I'll look at show this board."), (MK, "Okay.")], []),  # TS3009b
    # ES2006a's close hands the work out in the present, and the next speaker takes it
    ([(PM, "Um we've got another meeting in thirty minutes, so you're you'll be getting "
           "specific instructions once you go back to your workspace, but im basically you're "
           "looking at the working design,"), (ID, "Alright.")], [(ID, True)]),
    # what someone sees, not work handed out; and a hand-out nobody takes
    ([(PM, "So what you're looking at here is the cost of the case."), (ID, "Okay.")], []),
    ([(PM, "basically you're looking at the working design,"), (ID, "What's that?")], []),
])
def test_undertakings_and_their_owners(turns: list[tuple[str, str]],
                                       expected: list[tuple[str, bool]]) -> None:
    found = find_undertakings(turns, [PM, MK, "User Interface", ID])
    assert [(u.owner, u.assigned) for u in found] == expected


def test_undertakings_of_one_owner_close_together_are_one() -> None:
    turns = [(PM, "And you will look into the technical design."),
             (ID, "Yeah, also the look and feel is my task."),
             (MK, "Okay."), (MK, "I will investigate the fronts."),
             *[(PM, "Fine.")] * 5, (MK, "And I'll send the survey results.")]
    groups = group_undertakings(find_undertakings(turns, [PM, MK, ID]))
    assert [[u.index for u in g] for g in groups] == [[0, 1], [3], [9]]


# -- specifics the transcript does not say -----------------------------------------------------

MEETING = ["Marketing: I will look at the survey results.",
           "We could use the L_C_D_ screen and sell it for twenty five euros in March."]


@pytest.mark.parametrize(("text", "unsupported"), [
    ("Marketing will send the survey by Friday.", ["Friday"]),  # the prompt's example, copied
    ("The team chose an LCD screen for 25 euros.", []),  # spelled-out letters and numbers count
    ("The screen sells for 30 euros.", ["30"]),
    ("They launch in March. Then Bob calls the shop.", ["Bob"]),  # sentence starts are not names
    ("I think the team likes the screen.", []),
])
def test_names_dates_and_numbers_must_be_in_the_transcript(text: str,
                                                            unsupported: list[str]) -> None:
    assert validate.unsupported_specifics(text, MEETING, ["Marketing"]) == unsupported


def test_a_statement_naming_what_was_not_said_is_not_stored() -> None:
    assert not validate.is_statement("Marketing will send the survey by Friday.", MEETING,
                                     names=["Marketing"])
    assert validate.is_statement("Marketing will look at the survey results.", [],
                                 names=["Marketing"])


def test_an_owner_named_in_the_transcript_counts_while_them_is_one_voice() -> None:
    turns = ["Priya will send the revised budget by Friday."]
    assert validate.named_among_them("Priya", ["me", "them"], turns) == "Priya"
    assert validate.named_among_them("Sam", ["me", "them"], turns) is None  # never named
    # voices told apart (or a transcript with named speakers): the owner must be one of them
    assert validate.named_among_them("Priya", ["me", "Them 1"], turns) is None


def test_a_stated_task_is_what_was_said_not_what_the_model_made_up() -> None:
    turns = [(PM, "That's marketing research, you can ask."),
             (MK, "Yeah or a Teletubby front. I will investigate.")]
    (group,) = group_undertakings(find_undertakings(turns, [PM, MK]))

    def stated(text: str) -> str | None:
        item = undertaking_assertion(Undertaken(text), group, turns)
        return None if item is None else item.text

    assert stated("I will investigate the Teletubby front. Then lunch.") == \
        "Marketing will investigate the Teletubby front."
    assert stated("Marketing will design and implement a smart remote control system.") is None


def test_a_stutter_of_up_to_three_words_is_said_once() -> None:
    # IS1006c kept "User Interface agreed to make to make the like titanium panels"
    assert spoken_clauses("We agreed to make to make the the titanium panels.") == [
        "we agreed to make the titanium panels."]
    assert spoken_clauses("I'll I'll uh make notes, notes and all") == [
        "i'll make notes, notes and all"]  # a comma between is not a stutter


def test_a_stated_task_is_worded_from_the_turn_that_took_it_on_not_the_turns_before() -> None:
    # ES2009a: the 0.5B worded the turns shown before the undertaking as the work
    turns = [(PM, "If you're gonna upgrade your computer, buy it in the States. Do you guys "
                  "know Fry's? Huge computer electronics store?"),
             (MK, "No."),
             (PM, "Right so let's wrap that up. I'm gonna put these initial ideas that we've "
                  "got in the project documents.")]
    (group,) = group_undertakings(find_undertakings(turns, [PM, MK]))
    assert [u.index for u in group] == [2]

    def stated(text: str) -> str | None:
        item = undertaking_assertion(Undertaken(text), group, turns)
        return None if item is None else item.text

    assert stated("Project Manager will buy Fry's electronics store in the States.") is None
    assert stated("Project Manager will put the initial ideas in the project documents.") == \
        "Project Manager will put the initial ideas in the project documents."


@pytest.mark.parametrize(("text", "is_proposal"), [
    ("Marketing suggests a rubber case for the remote.", True),
    ("The team discussed the colours of the remote.", True),
    ("The Industrial Designer thinks a kinetic battery could work.", True),
    ("The team decided on a rubber case, as Marketing suggested.", False),
    ("The remote will be yellow and round.", False),
    ("The group agreed to consider solar power later.", False),
])
def test_a_proposal_is_not_a_decision(text: str, is_proposal: bool) -> None:
    assert validate.proposal(text) is is_proposal
    fmt = format_for("meeting")
    said = [text, "Marketing rubber remote Industrial Designer kinetic battery solar group"]
    kept = take_sections(fmt, {"decided": [text]}, said, PEOPLE)["decided"]
    assert kept == ([] if is_proposal else [text])
    item = check_assertion(ExtractedAssertion(kind="decision", text=text, chosen="rubber case"),
                           PEOPLE, said)
    assert item is not None and item.kind == ("fact" if is_proposal else "decision")


# -- a proposal or a requirement the others accept --------------------------------------------


def meeting(*said: tuple[str, str]) -> list[tuple[str, str]]:
    return [("Project Manager", "Okay, next point on the list then."), *said]


@pytest.mark.parametrize(("said", "decision"), [
    (meeting(("Marketing", "I think we should go for the rubber case, 'cause it is soft."),
             ("Project Manager", "Mm-hmm."), ("Industrial Designer", "Yeah, sounds good.")),
     ("The group agreed to go for the rubber case.", "the rubber case", [], "it is soft")),
    (meeting(("Marketing", "Shall we go with the curved one?"), ("Project Manager", "Okay.")),
     ("The group agreed to go with the curved one.", "the curved one", [], "")),
    (meeting(("Marketing", "We should use plastic as opposed to metal."),
             ("Project Manager", "Fine.")),
     ("The group agreed to use plastic.", "plastic", ["metal"], "")),
])
def test_a_proposal_the_others_accept_is_a_decision(
        said: list[tuple[str, str]], decision: tuple[str, str, list[str], str]) -> None:
    ((index, found),) = decisions_at(said)
    assert index == 1
    assert (found.text, found.chosen, found.alternatives, found.reasoning) == decision
    assert found.kind == "decision" and found.evidence


@pytest.mark.parametrize("said", [
    # a requirement agreed is not an option settled (on the dev meetings: "it should be a good
    # in your hand", "it has to be made in the buttons")
    meeting(("Marketing", "So it has to be very robust."),
            ("User Interface", "Okay, unbreakable.")),
    meeting(("Marketing", "Let's go for the rubber case.")),  # nobody answers
    meeting(("Marketing", "Let's go for the rubber case."),
            ("Project Manager", "For twelve Euros?")),  # answered with a question
    meeting(("Marketing", "Let's go for the rubber case."),
            ("Project Manager", "Yeah, but it is expensive.")),  # an objection
    meeting(("Marketing", "Let's go for the rubber case."), ("Project Manager", "Yeah."),
            ("Industrial Designer", "No, not rubber.")),  # agreed, then objected to
    meeting(("Marketing", "Let's go for the rubber case."), ("Project Manager", "Mm-hmm."),
            ("Marketing", "And the buttons are yellow.")),  # a backchannel, then goes on
    meeting(("Marketing", "Should we go for the rubber case?"),
            ("Project Manager", "Yeah.")),  # a question, not a proposal
    meeting(("Marketing", "If we go for rubber, let's go for the curved case."),
            ("Project Manager", "Yeah.")),  # a condition
    meeting(("Marketing", "Maybe we should use colours."), ("Project Manager", "Yeah.")),
    meeting(("Marketing", "Let's have a look at the presentations."),
            ("Project Manager", "Okay.")),  # what the meeting does next
    meeting(("Marketing", "Let's go for a three."), ("Project Manager", "Okay.")),  # of what?
    meeting(("Marketing", "Take the rubber one, 'cause it has to be cheap."),
            ("Project Manager", "Yeah.")),  # the reason for something else
    meeting(("Marketing", "You have to be careful with it."), ("Project Manager", "Yeah.")),
    meeting(("Marketing", "It should be possible to make it apparent that there are two "
                          "functions for every single button on the remote."),
            ("Project Manager", "Yeah.")),  # a stretch of the turn, not a requirement
    meeting(("Marketing", "So it has to be very robust. That is what the survey says, and it "
                          "is important when you design a thing."),
            ("Project Manager", "Yes.")),  # the answer is to what was said last
    # LoCoMo chats: an exhortation, not an option ("let's keep …", "let's have some fun")
    meeting(("Maria", "Let's keep supporting each other."), ("John", "Yeah, let's!")),
    meeting(("Maria", "Life's too short, let's have some fun!"), ("John", "Sure, Maria!")),
])
def test_a_proposal_or_requirement_not_accepted_settles_nothing(
        said: list[tuple[str, str]]) -> None:
    assert decisions_at(said) == []

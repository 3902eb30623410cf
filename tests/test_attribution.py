"""Whose words answer a question about a person (``attribution.said_by_another``): a question
about one of two people that only the other's words of themselves match is not answered."""

from __future__ import annotations

from daemon.memory.attribution import said_by_another
from daemon.memory.grounding import Passage, Source


def chat(*turns: tuple[str, str]) -> list[Source]:
    return [Source(n=1, kind="transcript", title="Caroline and Melanie, session 2",
                   passages=tuple(Passage(text, speaker, f"D2:{i}")
                                  for i, (speaker, text) in enumerate(turns, 1)))]


RACE = chat(
    ("Melanie", "I ran a charity race for mental health last Saturday. It made me realize "
                "that self-care is really important."),
    ("Caroline", "That's amazing! What did you think of it?"),
    ("Caroline", "I went to an LGBTQ support group yesterday and it was so powerful."),
)


def test_a_question_about_one_that_only_the_others_own_words_match_is_said_by_another() -> None:
    assert said_by_another("What did Caroline realize after her charity race?", RACE)
    assert not said_by_another("What did Melanie realize after her charity race?", RACE)


def test_what_is_said_to_or_of_the_person_asked_about_counts_for_them() -> None:
    to_her = chat(("Melanie", "I ran a charity race last Saturday."),
                  ("Caroline", "Your charity race sounds great, and you realized self-care "
                               "matters."))
    of_her = chat(("Melanie", "I ran a charity race last Saturday."),
                  ("Caroline", "My friend said Melanie realized self-care matters after her "
                               "charity race."))
    assert not said_by_another("What did Caroline realize after her charity race?", RACE[:0])
    question = "What did Melanie realize after her charity race?"
    assert not said_by_another(question, to_her)
    assert not said_by_another(question, of_her)


def test_what_you_say_to_the_other_one_counts_for_them() -> None:
    call = [Source(n=1, kind="transcript", title="Sync with Sarah", passages=(
        Passage("Sarah, your deadline for the budget report is Friday.", "me"),
        Passage("I finished the slides for the budget review yesterday.", "Sarah")))]
    assert not said_by_another("When is Sarah's deadline for the budget report?", call)
    assert said_by_another("When did Sarah finish the budget report?", [Source(
        n=1, kind="transcript", title="Sync with Sarah", passages=(
            Passage("I finished the budget report yesterday.", "me"),
            Passage("Nice.", "Sarah")))])


def test_a_name_said_only_to_greet_its_bearer_says_nothing_of_them() -> None:
    greeted = chat(("Nate", "Hey Joanna, last Monday I taught people vegan ice cream recipes "
                            "on my own cooking show!"),
                   ("Joanna", "Wow, that is so cool."))
    assert said_by_another("What type of show did Joanna host where she taught vegan ice "
                           "cream recipes?", greeted)


def test_a_question_asked_in_the_chat_is_nobodys_evidence() -> None:
    asked = chat(("Melanie", "Why did you choose that adoption agency?"),
                 ("Caroline", "I chose them because they help LGBTQ+ folks with adoption."))
    assert said_by_another("Why did Melanie choose the adoption agency?", asked)


def test_it_cannot_tell_with_no_single_person_named_or_more_than_two_speaking() -> None:
    assert not said_by_another("What did they realize after the charity race?", RACE)
    assert not said_by_another("What did Caroline and Melanie realize after the race?", RACE)
    meeting = [Source(n=1, kind="transcript", title="Design meeting", passages=(
        Passage("I think the remote should have a rubber case.", "Marketing"),
        Passage("The case costs two euro.", "Industrial Designer"),
        Passage("Okay.", "Project Manager")))]
    assert not said_by_another("What did the Project Manager think of the rubber case?",
                               meeting)

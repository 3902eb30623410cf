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


def test_a_question_asked_of_the_other_is_theirs_not_the_askers() -> None:
    asked = chat(("Melanie", "Why did you choose that adoption agency?"),
                 ("Caroline", "I chose them because they help LGBTQ+ folks with adoption."))
    assert said_by_another("Why did Melanie choose the adoption agency?", asked)
    shade = chat(("Joanna", "Wow, your new hair color looks amazing! What made you choose that "
                            "shade? Tell me all about it!"),
                 ("Nate", "Thanks Jo! I picked this color because it's bright and bold - like "
                          "me! I wanted to stand out from the regular options."))
    assert said_by_another("Why did Joanna choose that shade?", shade)
    assert not said_by_another("Why did Nate choose that shade?", shade)
    # a question that says "I" asks nothing of the other: nobody's
    mine = chat(("Joanna", "Should I choose that shade?"), ("Nate", "Sure, go for it!"))
    assert not said_by_another("Why did Nate choose that shade?", mine)
    assert not said_by_another("Why did Joanna choose that shade?", mine)


def test_what_the_person_asked_about_says_to_the_other_is_the_others() -> None:
    hair = chat(("Joanna", "Wow, your new hair color looks amazing!"),
                ("Nate", "Thanks Jo! I picked this color because it's bright and bold - like "
                         "me!"))
    assert said_by_another("What color did Joanna choose for her hair?", hair)
    assert not said_by_another("What color did Nate choose for his hair?", hair)


def test_a_sentence_without_a_person_is_its_speakers_only_where_they_speak_of_themselves(
) -> None:
    violin = chat(("Tim", "I'm learning how to play the violin now. I'm mostly into classical "
                          "music."),
                  ("John", "Wow! You're staying busy and having fun. Learning to play this is "
                           "awesome - it's such a beautiful instrument."))
    assert said_by_another("What instrument is John learning to play?", violin)
    assert not said_by_another("What instrument is Tim learning to play?", violin)
    tattoo = chat(("Gina", "Thanks! Got the tattoo a few years ago, it stands for freedom - "
                           "dancing without worrying what people think. A reminder to follow my "
                           "passions and express myself."),
                  ("Jon", "That's awesome."))
    assert said_by_another("What does Jon's tattoo symbolize?", tattoo)
    assert not said_by_another("What does Gina's tattoo symbolize?", tattoo)


def test_a_word_most_sentences_share_weighs_less_than_a_rare_one() -> None:
    promoted = chat(("Maria", "Thanks, John! I want to get stronger and improve my endurance, "
                              "and I'm trying kundalini yoga."),
                    ("John", "Oh, also...something massive happened since we last spoke. I got "
                             "promoted at work!"),
                    ("Maria", "Yeah John, I get it. Being in nature helps us take a break."),
                    ("John", "It's a symbol of all the obstacles I had to overcome to get here."))
    assert said_by_another("What did Maria recently get promoted to?", promoted)
    assert not said_by_another("What did John recently get promoted to?", promoted)


def test_it_cannot_tell_with_no_single_person_named_or_more_than_two_speaking() -> None:
    assert not said_by_another("What did they realize after the charity race?", RACE)
    assert not said_by_another("What did Caroline and Melanie realize after the race?", RACE)
    meeting = [Source(n=1, kind="transcript", title="Design meeting", passages=(
        Passage("I think the remote should have a rubber case.", "Marketing"),
        Passage("The case costs two euro.", "Industrial Designer"),
        Passage("Okay.", "Project Manager")))]
    assert not said_by_another("What did the Project Manager think of the rubber case?",
                               meeting)


def test_a_turn_is_scored_by_all_its_sentences_of_the_same_person() -> None:
    job = chat(("Maria", "Hey John, how's it going? Just wanted to give you the heads up on "
                         "what's been happening lately- I took a creative writing class "
                         "recently, and it was super enlightening!"),
               ("John", "Hey Maria, great chatting with you again! Crazy thing happened since "
                        "we last talked. I lost my job at the mechanical engineering company."),
               ("Maria", "Sorry to hear about your job, John. I can only imagine how tough it "
                         "must be."))
    assert said_by_another("What happened to Maria's job in August 2023?", job)
    assert not said_by_another("What happened to John's job in August 2023?", job)


def test_the_words_a_question_is_built_with_do_not_decide_whose_words_answer() -> None:
    beach = chat(("Melanie", "My three children loved the beach."),
                 ("Caroline", "I met so many people who want a home for children."))
    assert not said_by_another("How many children does Melanie have?", beach)
    assert said_by_another("How many homes does Melanie want for children?", beach)

"""Asking, on a real store with a scripted model: framing wiring, the story force-include,
citations, streaming and cancel, "I don't know", the question heard from them, the quote
check."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
import trio
from storekit import T0, open_store, recorded_session

from daemon.config import Settings
from daemon.errors import InvalidInput
from daemon.llm.generate import ChatMessage, ScriptedGenerator, split_tokens
from daemon.memory.ask import Answer, Asker, Recall
from daemon.memory.grounding import UNVERIFIED, Passage, Source
from daemon.store.documents import extract_text
from daemon.store.fusion import ItemKey, fuse
from daemon.store.records import NewTurn, Session
from daemon.store.scope import Scope
from daemon.store.store import Store

FILLER = [f"Weekly note {i}: the {w} review went fine." for i, w in enumerate(
    ["garden", "kitchen", "travel", "library", "bicycle", "harbour"])]


def fts_recall(store: Store) -> Recall:
    """Recall from the store's full-text legs, fused: a stand-in for the search, exact and
    predictable on a scripted embedder."""

    def recall(question: str, scope: Scope, k: int) -> list[ItemKey]:
        legs = {
            "fts_chunks": [(ItemKey("chunk", h.id), -h.score)
                           for h in store.fts_chunks(question, scope)],
            "fts_assertions": [(ItemKey("assertion", h.id), -h.score)
                               for h in store.fts_assertions(question, scope)],
        }
        return [f.key for f in fuse(legs)][:k]

    return recall


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(tmp_path / "data")
    yield opened
    opened.close()


def asker(store: Store, generator: ScriptedGenerator, *, recall: Recall | None = None,
          live: Callable[[], int | None] = lambda: None, memory: bool = False) -> Asker:
    settings = Settings(memory_enabled=memory)
    return Asker(store, generator=lambda: generator, settings=lambda: settings,
                 recall=recall or fts_recall(store), live_session=live)


def atlas_space(store: Store, activity: str = "meeting") -> int:
    space = store.create_space("Atlas", activity=activity)
    recorded_session(store, FILLER, space_id=space.id, title="Garden club")
    session = store.create_session(space_id=space.id, title="Atlas launch review",
                                   started_at=T0 + 3600)
    store.append_turns(session.id, [
        NewTurn(speaker="them", text="We will ship the Atlas beta on Friday, no later.", start=0),
        NewTurn(speaker="me", text="Then I will tell the support team.", start=5),
    ])
    store.end_session(session.id, ended_at=T0 + 3700)
    return space.id


THEIR_QUESTION = NewTurn(speaker="them", text="So when does the Atlas beta ship?", start=0)


def atlas_call(store: Store, turns: list[NewTurn]) -> Session:
    """A live session in the Atlas Space (``atlas_space``) with ``turns`` said so far."""
    space_id = atlas_space(store)
    live = store.create_session(space_id=space_id, title="Atlas check-in", started_at=T0 + 9000)
    store.append_turns(live.id, turns)
    return live


def system(generator: ScriptedGenerator) -> str:
    (call,) = generator.calls
    return call[0].content


def prompt(generator: ScriptedGenerator) -> str:
    """The whole prompt: the sources (system message), then the question."""
    (call,) = generator.calls
    return "\n\n".join(m.content for m in call)


# -- framing -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("activity", "framing"), [
    ("job", "interview"), ("meeting", "conversation"), ("project", "conversation"),
    ("personal", "conversation"), ("subject", "conversation"),
])
async def test_the_framing_follows_the_activity_of_the_space(
    store: Store, activity: str, framing: str
) -> None:
    atlas_space(store, activity)
    generator = ScriptedGenerator(["The beta ships on Friday [1]."])

    answer = await asker(store, generator).ask("When does the Atlas beta ship?", space="Atlas")

    assert answer.framing == framing
    if framing == "interview":
        assert "You are the candidate" in system(generator)
    else:
        assert "never sell, never perform credentials" in system(generator)
        assert "candidate" not in system(generator)


async def test_the_live_sessions_activity_decides_over_the_spaces(store: Store) -> None:
    atlas_space(store, "meeting")
    space = store.get_space("Atlas")
    live = store.create_session(space_id=space.id, activity="job", title="Round two",
                                started_at=T0 + 7200)
    store.append_turns(live.id, [NewTurn(speaker="them", text="When does Atlas ship?", start=0)])
    generator = ScriptedGenerator(["On Friday [1]."])

    answer = await asker(store, generator, live=lambda: live.id).ask("When does Atlas ship?")

    assert answer.framing == "interview" and answer.space == "Atlas"


def story_bank(store: Store, space_id: int) -> None:
    store.add_document(
        extract_text("stories.md", b"# Stories\n\nSituation: the night migration broke billing. "
                     b"I rolled it back in ten minutes and wrote the runbook we still use."),
        space_id=space_id, title="STAR stories",
    )


@pytest.mark.parametrize("activity", ["job", "meeting"])
async def test_the_story_is_force_included_in_the_interview_family_only(
    store: Store, activity: str
) -> None:
    story_bank(store, atlas_space(store, activity))
    generator = ScriptedGenerator(["The beta ships on Friday [1]."])

    # the question shares no word with the story: recall alone never finds it
    answer = await asker(store, generator).ask("When does the Atlas beta ship?", space="Atlas")

    kinds = [s.kind for s in answer.sources]
    if activity == "job":
        assert kinds.count("document") == 1
        assert "night migration broke billing" in prompt(generator)
    else:
        assert "document" not in kinds
        assert "migration" not in prompt(generator)


async def test_the_forced_story_lets_an_interview_answer_a_question_nothing_else_matches(
    store: Store,
) -> None:
    story_bank(store, atlas_space(store, "job"))
    generator = ScriptedGenerator(["I once rolled back a broken migration [1]."])

    answer = await asker(store, generator).ask("Walk me through a failure you handled", space="Atlas")

    assert not answer.nothing_found
    assert [c.source.kind for c in answer.citations] == ["document"]


# -- citations, streaming, cancel ----------------------------------------------------------------


async def test_citations_map_to_the_session_title_date_and_the_quoted_speaker(
    store: Store,
) -> None:
    atlas_space(store)
    text = 'They said "we will ship the Atlas beta on Friday" [1], and you would tell support [1].'
    generator = ScriptedGenerator([text])
    tokens: list[str] = []

    answer = await asker(store, generator).ask(
        "When does the Atlas beta ship, and who tells the support team?", space="Atlas",
        on_token=tokens.append)

    assert tokens == split_tokens(text)  # streamed token by token
    assert answer.text == text
    (cited,) = answer.citations
    assert cited.source.title == "Atlas launch review"
    assert cited.source.date == T0 + 3600
    assert cited.source.session_id is not None and cited.source.kind == "transcript"
    assert cited.quote == "we will ship the Atlas beta on Friday"
    assert cited.speaker == "them" and cited.verified


async def test_a_fabricated_quote_is_marked_and_a_verbatim_one_kept(store: Store) -> None:
    atlas_space(store)
    text = ('They said "the Atlas beta goes out Friday" [1]. They said "ship the Atlas beta '
            'on Friday" [1].')
    generator = ScriptedGenerator([text])

    answer = await asker(store, generator).ask("When does the Atlas beta ship?", space="Atlas")

    assert answer.text == ('They said "the Atlas beta goes out Friday" [unverified] [1]. '
                           'They said "ship the Atlas beta on Friday" [1].')
    assert answer.unverified == 1
    assert answer.text.count(UNVERIFIED) == 1


async def test_a_citation_of_a_source_that_does_not_exist_is_dropped(store: Store) -> None:
    atlas_space(store)
    generator = ScriptedGenerator(["Friday [1][9]."])

    answer = await asker(store, generator).ask("When does the Atlas beta ship?", space="Atlas")

    assert answer.text == "Friday [1]."
    assert [c.source.n for c in answer.citations] == [1]


async def test_an_answer_stops_when_asked_and_the_model_stops_with_it(store: Store) -> None:
    atlas_space(store)
    generator = ScriptedGenerator([" ".join(f"word{i}" for i in range(500))])
    stop = trio.Event()
    tokens: list[str] = []

    def on_token(token: str) -> None:
        tokens.append(token)
        if len(tokens) == 5:
            stop.set()

    answer = await asker(store, generator).ask("When does the Atlas beta ship?", space="Atlas",
                                               on_token=on_token, stop=stop)

    assert answer.cancelled
    assert answer.text == ""  # checked like a whole answer: no source supports those words
    assert len(tokens) == 5
    assert generator.streamed == 5  # the model was left there


async def test_an_answer_cut_at_its_length_limit_ends_at_its_last_whole_sentence(
    store: Store,
) -> None:
    atlas_space(store)
    text = ("They ship the Atlas beta on Friday [1]. You will tell the support team on Monday "
            "and then the sales people after")
    limit = len(split_tokens(text)) - 3  # the model is stopped inside the second sentence
    generator = ScriptedGenerator([text])
    settings = Settings(ask_answer_tokens=limit)
    ask = Asker(store, generator=lambda: generator, settings=lambda: settings,
                recall=fts_recall(store))

    answer = await ask.ask("When does the Atlas beta ship?", space="Atlas")

    assert generator.streamed == limit
    assert answer.text == "They ship the Atlas beta on Friday [1]."
    whole = ScriptedGenerator(["It ships on Friday [1]. You tell the support team after"])
    settings = Settings(ask_answer_tokens=100)  # not cut: the model's own ending stays
    ask = Asker(store, generator=lambda: whole, settings=lambda: settings,
                recall=fts_recall(store))
    asked = "When does the Atlas beta ship, and who tells the support team?"
    assert (await ask.ask(asked, space="Atlas")).text.endswith("support team after [1]")


async def test_a_question_asking_for_an_account_reads_more_of_what_was_recalled(
    store: Store,
) -> None:
    space = store.create_space("Atlas", activity="meeting")
    for day, said in enumerate(["the Atlas beta ships on Friday once the installer is signed",
                                "the Atlas beta waits for the vendor's security review first"]):
        session = store.create_session(space_id=space.id, title=f"Atlas sync {day}",
                                       started_at=T0 + day * 86_400)
        store.append_turns(session.id, [NewTurn(
            speaker="them", text=f"For the record, {said}, and {FILLER[day]} " * 2, start=0)])
        store.end_session(session.id, ended_at=T0 + day * 86_400 + 60)
    settings = Settings(ask_source_chars=150, ask_account_source_chars=700)

    async def sources_read(question: str) -> int:
        generator = ScriptedGenerator(["The beta ships on Friday [1]."])
        ask = Asker(store, generator=lambda: generator, settings=lambda: settings,
                    recall=fts_recall(store))
        await ask.ask(question, space="Atlas")
        return system(generator).count("(transcript)")

    assert await sources_read("When does the Atlas beta ship?") == 1  # a fact: 150 characters
    assert await sources_read("What did we decide about the Atlas beta?") == 2  # account: 700


# -- nothing relevant ----------------------------------------------------------------------------


async def test_nothing_recalled_says_so_without_asking_the_model(store: Store) -> None:
    generator = ScriptedGenerator([])  # any call would fail
    tokens: list[str] = []

    answer = await asker(store, generator).ask("What did we decide about pricing?",
                                               on_token=tokens.append)

    assert answer.nothing_found and answer.citations == []
    assert answer.text.startswith("I don't know")
    assert tokens == [answer.text]
    assert generator.calls == []


async def test_recalled_text_sharing_no_word_with_the_question_is_not_relevant(
    store: Store,
) -> None:
    atlas_space(store)
    generator = ScriptedGenerator([])

    def everything(question: str, scope: Scope, k: int) -> list[ItemKey]:
        return [ItemKey("chunk", c.id) for s in store.list_sessions()
                for c in store.chunks(session_id=s.id)][:k]

    answer = await asker(store, generator, recall=everything).ask(
        "What did we decide about pricing?", space="Atlas")

    assert answer.nothing_found and answer.sources  # recalled, but none of it is about this
    assert answer.text == "I don't know: I found nothing about this in your memory of Atlas."
    assert generator.calls == []


async def test_a_question_about_one_answered_only_by_the_others_own_words_is_declined(
    store: Store,
) -> None:
    session = store.create_session(title="Caroline and Melanie, session 2", started_at=T0)
    store.append_turns(session.id, [
        NewTurn(speaker="Melanie", text="I ran a charity race for mental health last Saturday. "
                "It made me realize that self-care is really important.", start=0),
        NewTurn(speaker="Caroline", text="That's amazing, well done!", start=15),
    ])
    store.end_session(session.id, ended_at=T0 + 30)
    generator = ScriptedGenerator(["She realized self-care is important [1]."])  # Melanie did
    tokens: list[str] = []

    answer = await asker(store, generator).ask(
        "What did Caroline realize after her charity race?", on_token=tokens.append)

    assert answer.declined and not answer.nothing_found
    assert answer.text.startswith("Nothing in memory answers “What did Caroline realize")
    assert tokens == [answer.text]
    assert generator.calls == []  # decided on the evidence, before any writing
    assert [e.speaker for e in answer.evidence] == ["Melanie"]  # what memory holds is shown


async def test_when_the_named_one_did_it_is_read_off_their_words_without_the_model(
    store: Store,
) -> None:
    session = store.create_session(title="Caroline and Melanie, session 3", started_at=T0)
    store.append_turns(session.id, [
        NewTurn(speaker="Caroline", text="How was your weekend?", start=0),
        NewTurn(speaker="Melanie", text="Great! I signed up for a pottery class yesterday.",
                start=6),
    ])
    store.end_session(session.id, ended_at=T0 + 30)
    generator = ScriptedGenerator(["Melanie signed up on 25 July 2026 [1]."])  # the session's day
    tokens: list[str] = []

    answer = await asker(store, generator).ask(
        "When did Melanie sign up for a pottery class?", on_token=tokens.append)

    day_before = dt.datetime.fromtimestamp(T0).date() - dt.timedelta(days=1)
    assert answer.text == f"On {day_before.day} {day_before:%B %Y} [1]."
    assert tokens == [answer.text] and not answer.declined
    assert [(c.source.n, c.speaker) for c in answer.citations] == [(1, "Melanie")]
    assert generator.calls == []  # read off the turn and its session's date
    assert [e.speaker for e in answer.evidence][-1:] == ["Melanie"]  # the words it is read off


async def test_a_space_scopes_recall(store: Store) -> None:
    atlas_space(store)
    generator = ScriptedGenerator([])

    answer = await asker(store, generator).ask("When does the Atlas beta ship?")

    assert answer.nothing_found  # kept in Atlas: not recalled profile-wide
    assert "within that Space" in answer.text


# -- the question heard from them ----------------------------------------------------------------


async def test_with_no_question_the_last_one_heard_from_them_is_answered(store: Store) -> None:
    live = atlas_call(store, [
        NewTurn(speaker="them", text="Good morning.", start=0),
        NewTurn(speaker="them", text="So when does the Atlas beta ship?", start=4),
        NewTurn(speaker="me", text="Let me look.", start=8),
    ])
    generator = ScriptedGenerator(["On Friday [1]."])

    answer = await asker(store, generator, live=lambda: live.id).ask(None)

    assert answer.question == "So when does the Atlas beta ship?"
    assert answer.space == "Atlas"  # the live session's Space
    assert generator.calls[0][1].content.startswith("So when does the Atlas beta ship?")
    context = answer.sources[0]  # first: the prompt opens with it, a prefix that stays cached
    assert context.kind == "context" and context.label == "the conversation now"
    assert [p.text for p in context.passages][-1] == "Let me look."


async def test_the_question_itself_is_no_evidence_about_it(store: Store) -> None:
    live = store.create_session(title="Call", started_at=T0)
    store.append_turns(live.id, [NewTurn(speaker="them", text="What is your notice period?",
                                         start=0)])
    generator = ScriptedGenerator([])

    answer = await asker(store, generator, live=lambda: live.id).ask(None)

    assert answer.nothing_found and generator.calls == []


async def test_no_question_and_nothing_live_is_a_clear_error(store: Store) -> None:
    with pytest.raises(InvalidInput, match="no session is live"):
        await asker(store, ScriptedGenerator([])).ask(None)
    live = store.create_session(title="Call", started_at=T0)
    store.append_turns(live.id, [NewTurn(speaker="me", text="What time is it?", start=0)])
    with pytest.raises(InvalidInput, match="nobody but you has asked"):
        await asker(store, ScriptedGenerator([]), live=lambda: live.id).ask(None)


# -- memories and assertions ---------------------------------------------------------------------


async def test_an_assertion_source_carries_its_anchor_turns_for_quotes(store: Store) -> None:
    from daemon.store.records import NewAssertion

    space_id = atlas_space(store)
    session = next(s for s in store.list_sessions() if s.title == "Atlas launch review")
    chunk = store.chunks(session_id=session.id)[0]
    store.add_assertion(NewAssertion(kind="decision", text="Atlas beta ships on Friday.",
                                     chosen="Friday", alternatives=("Monday",),
                                     source="extracted", anchor_chunk_id=chunk.id,
                                     session_id=session.id, space_id=space_id))

    def assertion_first(question: str, scope: Scope, k: int) -> list[ItemKey]:
        found = fts_recall(store)(question, scope, k)
        return sorted(found, key=lambda key: key.kind != "assertion")

    text = 'Friday was chosen over Monday, "no later" [1].'
    generator = ScriptedGenerator([text])
    answer = await asker(store, generator, recall=assertion_first).ask(
        "Which day was chosen for the Atlas beta?", space="Atlas")

    first = answer.sources[0]
    assert first.kind == "assertion" and first.label == "decision"
    assert "Alternatives: Monday" in first.passages[0].text
    assert answer.citations[0].verified and answer.citations[0].speaker == "them"


# -- reading the live conversation ahead ----------------------------------------------------------

THEY_ASK = [NewTurn(speaker="them", text="Good morning, all.", start=0),
            NewTurn(speaker="them", text="So when does the Atlas beta ship?", start=4)]


def they_ask_call(store: Store) -> tuple[Session, ScriptedGenerator, Asker]:
    """A live Atlas call in which "them" asks when the beta ships, and an Asker on it."""
    live = atlas_call(store, THEY_ASK)
    generator = ScriptedGenerator(["On Friday [3]."])
    return live, generator, asker(store, generator, live=lambda: live.id)


async def test_the_live_conversation_read_ahead_is_what_the_question_prompt_opens_with(
    store: Store,
) -> None:
    live, generator, ask_live = they_ask_call(store)

    assert await ask_live.read_ahead(live.id) == 2
    ahead = generator.prefills[-1]

    await ask_live.ask(None)

    (call,) = generator.calls
    assert "So when does the Atlas beta ship?" in ahead[0].content
    assert call[0].content.startswith(ahead[0].content)
    assert generator.prefills[-1] == ahead  # asking read the same opening again: nothing new


async def test_a_source_hook_adds_its_sources_beside_what_recall_found(store: Store) -> None:
    atlas_space(store)
    asked: list[str] = []

    def open_items(question: str, scope: Scope) -> list[Source]:
        asked.append(question)
        return [Source(n=0, kind="assertion", title="Atlas", label="open task",
                       passages=(Passage("Tom will send the beta notes."),))]

    generator = ScriptedGenerator(["Tom still owes the beta notes [2]."])
    ask_it = Asker(store, generator=lambda: generator, settings=Settings, recall=fts_recall(store),
                   source_hooks=[open_items])

    # (a question over open items, "what is still open ...?", is answered from the open items
    # themselves before any hook: daemon.memory.open_items)
    answer = await ask_it.ask("What about the Atlas beta notes?", space="Atlas")

    assert asked == ["What about the Atlas beta notes?"]
    assert [s.label for s in answer.sources][-1] == "open task"
    assert "Tom will send the beta notes." in prompt(generator)


async def test_a_secret_said_in_the_live_call_never_reaches_the_model(store: Store) -> None:
    live = atlas_call(store, [
        NewTurn(speaker="me", text="The staging password is Tangerine-Walrus-4417.", start=0),
        NewTurn(speaker="them", text="So when does the Atlas beta ship?", start=4),
    ])
    generator = ScriptedGenerator(["On Friday [2]."])
    ask_live = asker(store, generator, live=lambda: live.id)

    await ask_live.read_ahead(live.id)
    await ask_live.ask("What is the staging password?")

    read = [m.content for messages in [*generator.prefills, *generator.calls] for m in messages]
    assert read and not any("Tangerine" in text or "4417" in text for text in read)
    assert any("So when does the Atlas beta ship?" in text for text in read)


async def test_them_s_question_is_read_ahead_whole_and_the_hotkey_answer_only_writes(
    store: Store,
) -> None:
    live, generator, ask_live = they_ask_call(store)

    assert await ask_live.read_question_ahead(live.id)
    (ahead,) = generator.prefills
    answer = await ask_live.ask(None)  # the hotkey: "them"'s last question

    (call,) = generator.calls
    assert ahead == call  # the whole prompt was read: the question, its sources
    assert "So when does the Atlas beta ship?" in call[-1].content
    assert "We will ship the Atlas beta on Friday" in call[0].content
    assert len(generator.prefills) == 1  # asking read nothing more
    assert answer.question == "So when does the Atlas beta ship?"
    assert answer.text == "On Friday [3]." and answer.citations[0].source.n == 3


async def test_a_question_read_ahead_is_read_again_as_the_call_goes_on_and_only_then(
    store: Store,
) -> None:
    live = atlas_call(store, [THEIR_QUESTION])
    generator = ScriptedGenerator(["On Friday [2]."])
    ask_live = asker(store, generator, live=lambda: live.id)

    assert await ask_live.read_question_ahead(live.id)
    # nothing new: the same prompt (all read already, a real model reads nothing; after a
    # stop it goes on)
    assert await ask_live.read_question_ahead(live.id)
    assert generator.prefills[1] == generator.prefills[0]
    store.append_turns(live.id, [NewTurn(speaker="me", text="Let me check the notes.", start=5)])
    assert await ask_live.read_question_ahead(live.id)
    assert len(generator.prefills) == 3
    assert "Let me check the notes." in generator.prefills[-1][0].content

    await ask_live.ask(None)
    assert generator.calls == [generator.prefills[-1]]  # the latest reading is the one used


async def test_only_a_recent_question_of_theirs_is_read_ahead_and_a_typed_one_is_asked_anew(
    store: Store,
) -> None:
    live = atlas_call(store, [
        THEIR_QUESTION,
        *(NewTurn(speaker=speaker, text=text, start=4 + i) for i, (speaker, text) in enumerate([
            ("me", "Let me look."), ("them", "Take your time."), ("me", "It is in the notes.")]))
    ])
    generator = ScriptedGenerator(["Tom tells support [2].", "On Friday [2]."])
    ask_live = asker(store, generator, live=lambda: live.id)

    assert not await ask_live.read_question_ahead(live.id)  # asked three turns ago
    assert generator.prefills == []

    store.append_turns(live.id, [
        NewTurn(speaker="them", text="And who tells the support team?", start=9)])
    assert await ask_live.read_question_ahead(live.id)
    typed = await ask_live.ask("When does the Atlas beta ship?")

    assert typed.question == "When does the Atlas beta ship?"
    assert "When does the Atlas beta ship?" in generator.calls[0][-1].content
    assert generator.prefills[-1] != generator.calls[0]  # its own prompt: the opening read
    assert generator.calls[0][0].content.startswith(generator.prefills[-1][0].content)


class SlowReader(ScriptedGenerator):
    """Reads a prompt ahead only once ``release`` is set."""

    def __init__(self, responses: list[str]) -> None:
        super().__init__(list(responses))
        self.reading = trio.Event()
        self.release = trio.Event()

    async def prefill(
        self, messages: Sequence[ChatMessage], *, stop: Callable[[], bool] | None = None
    ) -> None:
        self.reading.set()
        await self.release.wait()
        await super().prefill(messages, stop=stop)


async def test_the_hotkey_pressed_while_their_question_is_read_waits_for_that_reading(
    store: Store,
) -> None:
    live = atlas_call(store, [THEIR_QUESTION])
    generator = SlowReader(["On Friday [3]."])
    ask_live = Asker(store, generator=lambda: generator, settings=Settings,
                     recall=fts_recall(store), live_session=lambda: live.id)
    answers: list[Answer] = []

    async def press_hotkey() -> None:
        answers.append(await ask_live.ask(None))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask_live.read_question_ahead, live.id)
        await generator.reading.wait()
        nursery.start_soon(press_hotkey)
        with trio.fail_after(10):  # until the answer waits (its store reads run on threads)
            while not ask_live._reading.statistics().tasks_waiting:
                await trio.sleep(0)
        assert generator.calls == []  # the answer waits for the reading
        generator.release.set()

    assert generator.calls == generator.prefills  # and it is what was read: nothing again
    assert answers[0].text == "On Friday [3]."

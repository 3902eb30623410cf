"""The language model in its own process, on the real small model: it answers as the model in
the daemon's process does, and a process killed by SIGKILL or SIGSEGV under a request costs
that request (a typed error, reported once), not the next one."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import msgspec
import pytest

from daemon.llm.generate import ChatMessage, LlamaGenerator, ModelLoad
from daemon.llm.supervised import SupervisedGenerator
from daemon.process.supervisor import ModelProcessDied
from daemon.process.testing import killed_while_serving

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

QUESTION = [ChatMessage("system", "You answer in one short paragraph."),
            ChatMessage("user", "Ann: we ship the rubber case on Friday. Bob: I send the "
                                "drawings to the factory tomorrow.\nWhat did Bob promise?")]
OPENING = [*QUESTION[:1], ChatMessage("user", QUESTION[1].content.split("\n")[0])]


class Answer(msgspec.Struct):
    who: str
    what: str


@pytest.fixture(scope="module")
def model(installed_model: Callable[[str], Path]) -> Path:
    return installed_model("qwen2.5-coder-0.5b")


@pytest.fixture
def supervised(model: Path) -> Iterator[tuple[SupervisedGenerator, list[str]]]:
    deaths: list[str] = []
    generator = SupervisedGenerator(ModelLoad(model, threads=1, n_ctx=1024), on_death=deaths.append)
    yield generator, deaths
    generator.close()


async def whole(tokens: AsyncIterator[str]) -> str:
    return "".join([t async for t in tokens])


async def test_the_process_answers_as_the_model_in_the_daemon_does(
        model: Path, supervised: tuple[SupervisedGenerator, list[str]]) -> None:
    generator, deaths = supervised
    local = LlamaGenerator(ModelLoad(model, threads=1, n_ctx=1024))
    try:
        expected_text = await whole(local.stream(QUESTION, max_tokens=40, temperature=0.0))
        expected = await local.generate(QUESTION, Answer, max_tokens=60, temperature=0.0)
    finally:
        local.close()
    assert not generator.loaded
    # read ahead (asked between batches whether to stop), then the question from there
    asked: list[bool] = []

    def stop() -> bool:
        asked.append(True)
        return False

    await generator.prefill(OPENING, stop=stop)
    assert asked and generator.loaded
    assert await whole(generator.stream(QUESTION, max_tokens=40, temperature=0.0)) \
        == expected_text
    assert await generator.generate(QUESTION, Answer, max_tokens=60, temperature=0.0) \
        == expected
    # a prefill told to stop at once reads nothing more and the process serves on
    await generator.prefill(QUESTION, stop=lambda: True)
    assert deaths == [] and generator.deaths == 0


async def test_a_stream_left_early_stops_the_model_and_the_process_serves_on(
        supervised: tuple[SupervisedGenerator, list[str]]) -> None:
    generator, deaths = supervised
    tokens = generator.stream(QUESTION, max_tokens=200, temperature=0.0)
    first = await tokens.__anext__()
    await tokens.aclose()  # type: ignore[attr-defined]
    assert first
    pid = generator.pid
    assert await generator.generate(QUESTION, Answer, max_tokens=60, temperature=0.0)
    assert generator.pid == pid and deaths == []


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV], ids=["SIGKILL", "SIGSEGV"])
async def test_a_process_killed_mid_answer_fails_that_answer_and_restarts(
        sig: signal.Signals, supervised: tuple[SupervisedGenerator, list[str]]) -> None:
    generator, deaths = supervised
    tokens = generator.stream(QUESTION, max_tokens=200, temperature=0.0)
    got = [await tokens.__anext__()]
    first_pid = generator.pid
    assert first_pid is not None
    os.kill(first_pid, sig)
    with pytest.raises(ModelProcessDied, match=f"killed by {sig.name}"):
        async for token in tokens:
            got.append(token)
    # reported once, with its cause
    assert deaths == [f"killed by {sig.name}"] and generator.deaths == 1
    assert generator.last_death == f"killed by {sig.name}" and not generator.loaded
    # the next request starts a new process and is answered
    answer = await whole(generator.stream(QUESTION, max_tokens=40, temperature=0.0))
    assert "drawings" in answer.lower() or "factory" in answer.lower(), answer
    assert generator.pid not in (None, first_pid) and generator.deaths == 1


async def test_a_generate_whose_process_died_is_asked_again_of_a_new_one(
        supervised: tuple[SupervisedGenerator, list[str]]) -> None:
    generator, deaths = supervised
    answers: list[Answer] = []

    async def keep() -> None:
        answers.append(await generator.generate(QUESTION, Answer, max_tokens=60,
                                                temperature=0.0))

    (first_pid,) = await killed_while_serving(generator, keep, signal.SIGSEGV)
    (answer,) = answers
    assert answer.who and deaths == ["killed by SIGSEGV"]
    assert generator.pid not in (None, first_pid)


async def test_a_generate_whose_process_dies_again_fails_with_the_cause(
        supervised: tuple[SupervisedGenerator, list[str]]) -> None:
    """Asked once more, not forever: a model that keeps dying fails the call, saying how."""
    generator, deaths = supervised

    async def keep() -> None:
        with pytest.raises(ModelProcessDied, match="killed by SIGKILL during the request"):
            await generator.generate(QUESTION, Answer, max_tokens=60, temperature=0.0)

    await killed_while_serving(generator, keep, signal.SIGKILL, times=2)
    assert deaths == ["killed by SIGKILL"] * 2 and generator.pid is None


async def test_a_process_killed_between_requests_costs_the_next_stream_only(
        supervised: tuple[SupervisedGenerator, list[str]]) -> None:
    generator, deaths = supervised
    await generator.prefill(OPENING)  # the process is up, the model loaded
    pid = generator.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # dies between requests: the next one finds out
    with pytest.raises(ModelProcessDied):
        await whole(generator.stream(QUESTION, max_tokens=40, temperature=0.0))
    assert deaths == ["killed by SIGKILL"]
    assert (await generator.generate(QUESTION, Answer, max_tokens=60, temperature=0.0)).who


async def test_a_background_model_process_computes_at_nice_19(model: Path) -> None:
    generator = SupervisedGenerator(ModelLoad(model, threads=1, n_ctx=1024, nice=19))
    try:
        assert (await generator.generate(QUESTION, Answer, max_tokens=60, temperature=0.0)).who
        assert generator.pid is not None
        nices = {int(task.name): int((task / "stat").read_text().rsplit(")", 1)[1].split()[16])
                 for task in Path(f"/proc/{generator.pid}/task").iterdir()}
        pid = generator.pid
    finally:
        generator.close()
    # the model's thread (and the compute threads it starts) at the lowest priority, the
    # process's own loop as it was
    assert nices.pop(pid) < 19, nices
    assert 19 in nices.values(), nices


# a call's opening of ~700 tokens: more than a small starting context holds
LONG = [ChatMessage("system", "You answer from the conversation.\n\n" + "\n".join(
            f"Ann: the crate for week {week} costs {week * 40} euros and ships from Porto."
            for week in range(1, 41))),
        ChatMessage("user", "What does the crate for week 7 cost?")]


async def test_a_context_started_small_grows_for_a_prompt_that_does_not_fit(model: Path) -> None:
    """The answer is the one of a model loaded with the whole context at once."""
    full = LlamaGenerator(ModelLoad(model, threads=1, n_ctx=2048))
    small = LlamaGenerator(ModelLoad(model, threads=1, n_ctx=2048, start_ctx=256))
    try:
        short = await small.generate(QUESTION, Answer, max_tokens=40, temperature=0.0)
        assert short.who and small.context == 256  # it fitted: nothing loaded again
        await small.prefill(LONG[:1])
        assert small.context == 1024
        answers = [await whole(g.stream(LONG, max_tokens=30, temperature=0.0))
                   for g in (full, small)]
        assert answers[0] == answers[1] and "280" in answers[0], answers
    finally:
        full.close()
        small.close()

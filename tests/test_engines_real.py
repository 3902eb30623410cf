"""The model engines on the real small models (installed by `braincue models install`).

A missing model fails these tests with the install command in the message; it never skips them.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import aclosing
from pathlib import Path

import msgspec
import numpy as np
import pytest
import trio
from click.testing import CliRunner

from bench.wer import word_error_rate
from clients.shell import cli
from daemon.asr import WhisperTranscriber
from daemon.audio import load_audio
from daemon.audio.format import SAMPLE_RATE
from daemon.llm import ChatMessage, LlamaEmbedder, LlamaGenerator, ModelLoad
from daemon.llm.embed import EmbedProgress
from daemon.llm.generate import PREFILL_BATCH

pytestmark = pytest.mark.slow

ModelPath = Callable[[str], Path]


@pytest.fixture(scope="module")
def whisper_tiny(installed_model: ModelPath) -> Iterator[WhisperTranscriber]:
    transcriber = WhisperTranscriber(installed_model("whisper-tiny.en"), threads=2)
    yield transcriber
    transcriber.close()


@pytest.fixture(scope="module")
def minilm(installed_model: ModelPath) -> Iterator[LlamaEmbedder]:
    embedder = LlamaEmbedder(installed_model("all-minilm-l6-v2"), threads=2, batch=8)
    yield embedder
    embedder.close()


@pytest.fixture(scope="module")
def qwen(installed_model: ModelPath) -> Iterator[LlamaGenerator]:
    generator = LlamaGenerator(ModelLoad(installed_model("qwen2.5-coder-0.5b"), threads=2, n_ctx=2048))
    yield generator
    generator.close()


# -- whisper -----------------------------------------------------------------------------------


async def test_tiny_en_transcribes_jfk(whisper_tiny: WhisperTranscriber, test_data: Path) -> None:
    audio = load_audio(test_data / "audio" / "jfk.wav")
    segments = await whisper_tiny.transcribe(audio)
    reference = (test_data / "audio" / "jfk.txt").read_text()
    assert word_error_rate(reference, " ".join(s.text for s in segments)) <= 0.10
    duration = len(audio) / SAMPLE_RATE
    assert all(0 <= s.start < s.end <= duration + 0.5 for s in segments)
    assert [s.start for s in segments] == sorted(s.start for s in segments)
    # every segment's words, timed in order inside it, spell its text
    for s in segments:
        assert " ".join(w.text for w in s.words) == " ".join(s.text.split())
        times = [t for w in s.words for t in (w.start, w.end)]
        assert times == sorted(times) and s.start - 0.05 <= times[0] and times[-1] <= s.end
    words = {w.text.strip(",.").lower(): w for s in segments for w in s.words}
    # "ask not" (3.3 s in) is said after the pause that follows "Americans" (ends near 2.1 s)
    assert words["americans"].end < 2.6 and 3.0 < words["not"].start < 4.5


def test_digital_silence_gives_no_text(whisper_tiny: WhisperTranscriber) -> None:
    assert whisper_tiny.transcribe_sync(np.zeros(5 * SAMPLE_RATE, dtype=np.float32)) == []


def test_braincue_transcribe_prints_timed_lines(
    installed_model: ModelPath, test_data: Path
) -> None:
    installed_model("whisper-tiny.en")
    result = CliRunner().invoke(
        cli, ["transcribe", str(test_data / "audio" / "jfk.wav"), "--model", "whisper-tiny.en"]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines and all(re.fullmatch(r"\[\d\d:\d\d\.\d\d -> \d\d:\d\d\.\d\d\] \S.*", ln)
                         for ln in lines)
    assert "fellow americans" in result.output.lower()


def test_low_noise_gives_no_text(whisper_tiny: WhisperTranscriber) -> None:
    noise = np.random.default_rng(0).normal(0, 0.003, 5 * SAMPLE_RATE).astype(np.float32)
    assert whisper_tiny.transcribe_sync(noise) == []


def test_a_quiet_recording_is_transcribed_with_a_warning(
    installed_model: ModelPath, test_data: Path
) -> None:
    installed_model("whisper-tiny.en")
    quiet = test_data / "audio" / "fleurs-en-003.ogg"  # speech at -57 dBFS
    result = CliRunner().invoke(cli, ["transcribe", str(quiet), "--model", "whisper-tiny.en"])
    assert result.exit_code == 0, result.output
    assert "warning: fleurs-en-003.ogg is very quiet" in result.stderr
    heard = " ".join(line.split("] ", 1)[1] for line in result.stdout.splitlines())
    assert word_error_rate(quiet.with_suffix(".txt").read_text(), heard) <= 0.2, heard


def test_a_fitted_encoder_context_hears_what_the_full_window_hears(
    installed_model: ModelPath, test_data: Path
) -> None:
    audio = load_audio(test_data / "audio" / "jfk.wav")
    reference = (test_data / "audio" / "jfk.txt").read_text()
    for fit in (False, True):
        transcriber = WhisperTranscriber(installed_model("whisper-tiny.en"), threads=2,
                                         fit_context=fit)
        try:
            heard = " ".join(s.text for s in transcriber.transcribe_sync(audio))
        finally:
            transcriber.close()
        assert word_error_rate(reference, heard) <= 0.10, (fit, heard)


def test_each_utterance_is_decoded_once_not_again_at_higher_temperatures(
    installed_model: ModelPath, test_data: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # read speech on which whisper's default (five samples at each of five higher temperatures
    # when the first decoding is unsure) decodes again: a bounded time per utterance
    import _pywhispercpp as pw  # type: ignore[import-not-found]

    transcriber = WhisperTranscriber(installed_model("whisper-tiny.en"), threads=2)
    try:
        for clip in sorted((test_data / "people").glob("*.ogg")):
            assert transcriber.transcribe_sync(load_audio(clip)), clip.name
        with caplog.at_level(logging.DEBUG, logger="braincue.whisper"):
            pw.whisper_print_timings(transcriber._load()._ctx)  # counts since it was loaded
    finally:
        transcriber.close()
    [fallbacks] = [m for r in caplog.records if (m := FALLBACKS.search(r.getMessage()))]
    assert (int(fallbacks[1]), int(fallbacks[2])) == (0, 0), fallbacks[0]


FALLBACKS = re.compile(r"fallbacks =\s*(\d+) p /\s*(\d+) h")


# -- embeddings --------------------------------------------------------------------------------

PARAPHRASES = [
    ("The meeting has been moved to Thursday afternoon.",
     "We rescheduled the meeting for Thursday after lunch."),
    ("Alice will send the revised budget by Friday.",
     "By Friday, Alice is going to share the updated budget."),
    ("The server crashed because it ran out of memory.",
     "An out-of-memory error brought the server down."),
    ("I prefer tea to coffee in the morning.",
     "In the mornings I'd rather drink tea than coffee."),
    ("The new hire starts on Monday in the design team.",
     "Our new designer joins the team on Monday."),
    ("Sales grew by twelve percent last quarter.",
     "Last quarter revenue from sales rose twelve percent."),
    ("Please book a flight to Berlin for the conference.",
     "Can you reserve plane tickets to Berlin for the conference?"),
    ("The dog barked at the mailman all morning.",
     "All morning the dog kept barking at the postman."),
    ("We decided to use PostgreSQL instead of MySQL.",
     "The team chose Postgres over MySQL for the database."),
    ("My daughter's birthday party is on Saturday.",
     "On Saturday we celebrate my daughter's birthday."),
]


async def test_paraphrases_are_closer_than_unrelated_sentences(minilm: LlamaEmbedder) -> None:
    firsts = await minilm.embed([a for a, _ in PARAPHRASES])
    seconds = await minilm.embed([b for _, b in PARAPHRASES])
    assert firsts.shape == (10, minilm.dimensions) and firsts.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(firsts, axis=1), 1.0, rtol=1e-4)
    cosines = firsts @ seconds.T
    for i in range(len(PARAPHRASES)):
        unrelated = np.delete(cosines[i], i)
        assert cosines[i, i] > unrelated.max(), PARAPHRASES[i]


def test_embedder_truncates_long_text_and_is_batch_independent(minilm: LlamaEmbedder) -> None:
    long_text = " ".join(f"word{i}" for i in range(3000))
    texts = [long_text, "a short sentence", "another one"]
    together = minilm.embed_sync(texts)
    alone = np.concatenate([minilm.embed_sync([t]) for t in texts])
    assert together.shape == (3, minilm.dimensions)
    # f16 arithmetic differs slightly with the batch's composition
    assert np.all(np.sum(together * alone, axis=1) > 0.999)
    assert minilm.embed_sync([]).shape == (0, minilm.dimensions)


async def test_the_embedder_reports_each_batch_to_the_progress_it_is_given(
    minilm: LlamaEmbedder,
) -> None:
    reports: list[tuple[int, int]] = []
    texts = [f"point {i} of the plan" for i in range(20)]
    progress = EmbedProgress(lambda done, total: reports.append((done, total)))
    minilm.embed_sync(texts, progress)  # batches of 8, on the embedder's own thread
    await minilm.embed(texts[:3], progress)
    minilm.embed_sync(texts)  # nobody counts this one
    assert reports == [(0, 20), (8, 20), (16, 20), (20, 20), (20, 23), (23, 23)]


def test_embedder_model_id_names_the_file(minilm: LlamaEmbedder, installed_model: ModelPath) -> None:
    assert re.fullmatch(r"all-minilm-l6-v2[\w.-]*:[0-9a-f]{12}", minilm.model_id)
    again = LlamaEmbedder(installed_model("all-minilm-l6-v2"), threads=1, batch=1)
    assert again.model_id == minilm.model_id and again.dimensions == 384
    again.close()


# -- generation --------------------------------------------------------------------------------


class Task(msgspec.Struct):
    owner: str
    task: str


class Tasks(msgspec.Struct):
    tasks: list[Task]


async def test_schema_constrained_generation_decodes_into_the_type(qwen: LlamaGenerator) -> None:
    messages = [
        ChatMessage("system", "List every task agreed in the conversation with its owner."),
        ChatMessage("user", "Alice: I'll send the revised report by Friday.\n"
                            "Bob: And I will book the meeting room for Monday."),
    ]
    result = await qwen.generate(messages, Tasks, max_tokens=256, temperature=0.0)
    assert isinstance(result, Tasks)
    assert {t.owner for t in result.tasks} >= {"Alice", "Bob"}
    assert qwen.loaded


async def test_stream_stops_generating_when_the_consumer_breaks(qwen: LlamaGenerator) -> None:
    request = [ChatMessage("user", "Count from one to two hundred in words, one per line.")]
    received = []
    async with aclosing(qwen.stream(request, max_tokens=400, temperature=0.0)) as tokens:  # type: ignore[type-var]
        async for token in tokens:
            received.append(token)
            if len(received) == 3:
                break
    # tokens in the model's context: the prompt plus what was generated before it stopped
    evaluated = await qwen._worker.call(lambda: qwen._llm.n_tokens)
    assert evaluated < 150
    answer = "".join([t async for t in qwen.stream([ChatMessage("user", "Say hello.")],
                                                   max_tokens=16)])
    assert answer.strip()


async def test_a_prefilled_opening_survives_other_work_and_changes_no_answer(
    qwen: LlamaGenerator, installed_model: ModelPath
) -> None:
    opening = [ChatMessage("system", "You answer in one short sentence."),
               ChatMessage("user", "Notes: the Atlas beta ships on Friday; Tom owns it.\n\n")]
    question = [opening[0], ChatMessage("user", opening[1].content + "Who owns the beta?")]

    async def answer(generator: LlamaGenerator) -> str:
        return "".join([t async for t in generator.stream(question, max_tokens=24,
                                                            temperature=0.0)])

    await qwen.prefill(opening)
    read_ahead = await qwen._worker.call(lambda: qwen._llm.n_tokens)
    assert read_ahead > 20
    await qwen.generate([ChatMessage("user", "Name a colour as JSON.")], Task, max_tokens=40,
                        temperature=0.0)  # other work replaces what the model holds
    cached = await answer(qwen)
    assert qwen._prefix is not None and qwen._prefix.tokens == (
        await qwen._worker.call(lambda: list(qwen._llm.input_ids[:read_ahead])))

    fresh = LlamaGenerator(ModelLoad(installed_model("qwen2.5-coder-0.5b"), threads=2, n_ctx=2048))
    try:
        assert cached == await answer(fresh)  # the restored state is the state it read
    finally:
        fresh.close()
    await qwen.prefill(opening)  # read already: nothing to do
    assert await qwen._worker.call(lambda: qwen._llm.n_tokens) >= read_ahead


async def test_a_stopped_prefill_keeps_what_it_read_and_goes_on_from_there(
    qwen: LlamaGenerator,
) -> None:
    notes = " ".join(f"Item {i}: the Atlas task {i} is owned by person {i}." for i in range(30))
    opening = [ChatMessage("system", "You answer in one short sentence."),
               ChatMessage("user", f"Notes: {notes}\n\n")]
    asked: list[int] = []
    qwen.unload()  # nothing read before (the model is shared by the tests of this module)

    def after_one_batch() -> bool:
        asked.append(1)
        return len(asked) > 1

    await qwen.prefill(opening, stop=after_one_batch)
    assert await qwen._worker.call(lambda: qwen._llm.n_tokens) == PREFILL_BATCH
    assert qwen._prefix is None  # not all read: no state kept for it

    await qwen.prefill(opening)
    read = await qwen._worker.call(lambda: qwen._llm.n_tokens)
    assert read > 2 * PREFILL_BATCH
    assert qwen._prefix is not None and len(qwen._prefix.tokens) == read


async def test_closing_ends_a_reading_ahead_at_its_next_batch(installed_model: ModelPath) -> None:
    # a daemon told to stop while the model reads a call ahead must not wait for the whole
    # reading (> 20 s under load): close() ends it before the next batch
    generator = LlamaGenerator(ModelLoad(installed_model("qwen2.5-coder-0.5b"), threads=2, n_ctx=4096))
    notes = " ".join(f"Item {i}: the Atlas task {i} is owned by person {i}." for i in range(120))
    opening = [ChatMessage("system", "You answer in one short sentence."),
               ChatMessage("user", f"Notes: {notes}\n\n")]
    asked: list[int] = []
    reading = threading.Event()

    def stop() -> bool:  # the call goes on: only closing can end this reading early
        asked.append(1)
        reading.set()
        generator._closing.wait(30)  # the first batch is read once close() has begun
        return False

    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: generator.prefill(opening, stop=stop))
        await trio.to_thread.run_sync(reading.wait)
        await trio.to_thread.run_sync(generator.close)
    assert asked == [1]  # without the closing check it reads all ~25 batches, asking each time

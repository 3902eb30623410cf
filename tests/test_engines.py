"""The model engines without models: scripted twins, pure helpers, audio files, worker threads."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
import soundfile
import trio
import trio.testing
from click.testing import CliRunner

from bench.wer import word_error_rate
from clients.cli.audio import format_segment, format_timestamp
from clients.shell import cli
from daemon.asr import ScriptedTranscriber, Segment, WhisperTranscriber
from daemon.asr.engine import clean_segments, is_silent
from daemon.audio import load_audio, load_audio_channels
from daemon.audio.format import SAMPLE_RATE
from daemon.errors import AudioError, EngineError, ModelNotInstalled
from daemon.llm import (
    ChatMessage,
    LlamaEmbedder,
    LlamaGenerator,
    ModelLoad,
    ScriptedEmbedder,
    ScriptedGenerator,
)
from daemon.llm.embed import normalize_rows
from daemon.llm.generate import (
    _prompt_tokens,
    decode_output,
    output_schema,
    split_tokens,
    with_schema_instruction,
)
from daemon.worker import WorkerThread


class Task(msgspec.Struct):
    owner: str
    what: str


class Tasks(msgspec.Struct):
    tasks: list[Task]
    note: str | None = None


class Node(msgspec.Struct):
    children: list[Node]


# -- transcriber -------------------------------------------------------------------------------


async def test_scripted_transcriber_returns_its_script_in_order_and_records_audio() -> None:
    first = [Segment(0.0, 1.5, "hello there")]
    second = [Segment(0.2, 0.9, "bye")]
    transcriber = ScriptedTranscriber([first, second])
    audio = np.zeros(SAMPLE_RATE, dtype=np.float32)
    assert await transcriber.transcribe(audio) == first
    assert transcriber.transcribe_sync(audio[:10]) == second
    assert [len(a) for a in transcriber.calls] == [SAMPLE_RATE, 10]
    with pytest.raises(EngineError):
        await transcriber.transcribe(audio)


async def test_scripted_transcriber_can_compute_segments_from_the_audio() -> None:
    transcriber = ScriptedTranscriber(lambda a: [Segment(0.0, len(a) / SAMPLE_RATE, "x")])
    segments = await transcriber.transcribe(np.zeros(SAMPLE_RATE * 2, dtype=np.float32))
    assert segments == [Segment(0.0, 2.0, "x")]


def test_transcribers_refuse_multichannel_audio() -> None:
    with pytest.raises(ValueError, match="mono"):
        ScriptedTranscriber([[]]).transcribe_sync(np.zeros((2, 100), dtype=np.float32))


def test_silence_is_detected_by_level() -> None:
    assert is_silent(np.zeros(SAMPLE_RATE * 5, dtype=np.float32))
    assert is_silent(np.zeros(0, dtype=np.float32))
    assert is_silent(np.full(1000, 1e-4, dtype=np.float32))
    tone = 0.1 * np.sin(np.linspace(0, 2000, SAMPLE_RATE)).astype(np.float32)
    assert not is_silent(tone)


def test_clean_segments_strips_text_and_drops_empty_and_annotation_segments() -> None:
    raw = [
        (0.0, 1.0, "  Hello. "),
        (1.0, 2.0, "   "),
        (2.0, 3.0, "[BLANK_AUDIO]"),
        (3.0, 4.0, "(music)"),
        (4.0, 5.0, "*coughs*"),
        (5.0, 6.0, "We said [laughs] fine"),
    ]
    assert clean_segments(raw) == [
        Segment(0.0, 1.0, "Hello."),
        Segment(5.0, 6.0, "We said [laughs] fine"),
    ]


# -- embedder ----------------------------------------------------------------------------------


async def test_scripted_embedder_rows_are_deterministic_unit_vectors() -> None:
    embedder = ScriptedEmbedder(dimensions=64)
    texts = ["the budget meeting", "", "Budget MEETING the"]
    vectors = await embedder.embed(texts)
    assert vectors.shape == (3, 64) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(vectors, ScriptedEmbedder(dimensions=64).embed_sync(texts))
    np.testing.assert_allclose(vectors[0], vectors[2], atol=1e-6)  # case and order do not matter


def test_scripted_embedder_puts_texts_sharing_words_closer() -> None:
    embedder = ScriptedEmbedder(dimensions=256)
    query, related, unrelated = embedder.embed_sync(
        ["budget review for the marketing team",
         "the marketing budget review is on Friday",
         "my cat likes sleeping in the sun"]
    )
    assert query @ related > query @ unrelated


def test_scripted_embedder_empty_input_and_model_id() -> None:
    assert ScriptedEmbedder(dimensions=32).embed_sync([]).shape == (0, 32)
    assert ScriptedEmbedder().model_id != ScriptedEmbedder(model_id="other").model_id
    assert ScriptedEmbedder(model_id="other").model_id == "other"


def test_normalize_rows_keeps_zero_rows_finite() -> None:
    rows = normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(rows, [[0.6, 0.8], [0.0, 0.0]])
    assert rows.dtype == np.float32


# -- generator: pure helpers -------------------------------------------------------------------


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref"] + [
            r for v in node.values() for r in _refs(v)
        ]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_output_schema_inlines_nested_structs() -> None:
    schema = output_schema(Tasks)
    assert _refs(schema) == [] and "$defs" not in schema
    assert schema["type"] == "object" and schema["required"] == ["tasks"]
    item = schema["properties"]["tasks"]["items"]
    assert item["properties"].keys() == {"owner", "what"}
    assert item["required"] == ["owner", "what"]


def test_output_schema_refuses_recursive_types() -> None:
    with pytest.raises(TypeError, match="recursive"):
        output_schema(Node)


def test_schema_instruction_ends_the_last_message_so_that_prompts_share_their_start() -> None:
    schema = output_schema(Task)
    system, user = ChatMessage("system", "Be brief."), ChatMessage("user", "hi")
    joined = with_schema_instruction([system, user], schema)
    assert joined[0] == system  # the same start as any other request about the same text
    assert [m.role for m in joined] == ["system", "user"]
    assert joined[1].content.startswith("hi\n\n") and '"owner"' in joined[1].content
    alone = with_schema_instruction([], schema)
    assert [m.role for m in alone] == ["user"] and '"owner"' in alone[0].content


class _TemplatedModel:
    """What ``_prompt_tokens`` uses of a llama_cpp.Llama: its chat template and tokenizer (one
    token per byte here)."""

    def __init__(self, template: str) -> None:
        self.metadata = {"tokenizer.chat_template": template}
        self._model = self

    def token_eos(self) -> int:
        return 1

    def token_bos(self) -> int:
        return -1

    def token_get_text(self, token: int) -> str:
        return "<|im_end|>"

    def tokenize(self, text: bytes, *, add_bos: bool, special: bool) -> list[int]:
        return list(text)


def test_a_chat_template_is_compiled_once_for_every_prompt_read(monkeypatch: Any) -> None:
    from llama_cpp import llama_chat_format

    compiled: list[str] = []

    class Compiling(llama_chat_format.Jinja2ChatFormatter):  # type: ignore[misc]
        def __init__(self, **kw: Any) -> None:
            compiled.append(kw["template"])
            super().__init__(**kw)

    monkeypatch.setattr(llama_chat_format, "Jinja2ChatFormatter", Compiling)
    model = _TemplatedModel("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
                            "{{ eos_token }}\n{% endfor %}"
                            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
                            "{# test_a_chat_template_is_compiled_once #}")
    opening = [ChatMessage("system", "Answer from the sources.\n\n")]
    asked = [ChatMessage("system", "Answer from the sources.\n\nSources: [1] ..."),
             ChatMessage("user", "What did we decide?")]
    ahead = _prompt_tokens(model, opening)
    whole = _prompt_tokens(model, asked, whole=True)
    again = _prompt_tokens(model, asked, whole=True)
    assert len(compiled) == 1  # (compiling took 10-25 ms, twice a question, before)
    assert whole[: len(ahead)] == ahead and whole == again
    assert bytes(whole).decode().endswith("What did we decide?<|im_end|>\n<|im_start|>assistant\n")


def test_decode_output_validates_against_the_type() -> None:
    assert decode_output('{"owner": "Ann", "what": "call"}', Task) == Task("Ann", "call")
    with pytest.raises(EngineError, match="not a valid Task"):
        decode_output('{"owner": "Ann"}', Task)
    with pytest.raises(EngineError):
        decode_output('{"owner": "Ann", "what": ', Task)


def test_split_tokens_keeps_the_text_intact() -> None:
    text = "  Alice will  send it.\nBob too "
    assert "".join(split_tokens(text)) == text
    assert len(split_tokens(text)) == 6
    assert split_tokens("") == []


# -- generator: scripted -----------------------------------------------------------------------


async def test_scripted_generator_decodes_strings_and_objects_and_records_messages() -> None:
    generator = ScriptedGenerator(['{"tasks": [{"owner": "Ann", "what": "call"}]}',
                                   Tasks([Task("Bo", "book")], note="n")])
    messages = [ChatMessage("user", "extract")]
    first = await generator.generate(messages, Tasks)
    second = await generator.generate(messages, Tasks)
    assert first == Tasks([Task("Ann", "call")])
    assert second == Tasks([Task("Bo", "book")], note="n")
    assert generator.calls == [messages, messages]
    with pytest.raises(EngineError, match="no response"):
        await generator.generate(messages, Tasks)


async def test_scripted_generator_raises_configured_errors_and_bad_output() -> None:
    generator = ScriptedGenerator([EngineError("model crashed"), '{"tasks": "nope"}'])
    with pytest.raises(EngineError, match="model crashed"):
        await generator.generate([], Tasks)
    with pytest.raises(EngineError, match="not a valid Tasks"):
        await generator.generate([], Tasks)


async def test_scripted_generator_can_answer_from_a_function() -> None:
    generator = ScriptedGenerator(lambda messages: Task(messages[-1].content, "x"))
    assert await generator.generate([ChatMessage("user", "Cy")], Task) == Task("Cy", "x")


async def test_scripted_stream_yields_word_tokens() -> None:
    generator = ScriptedGenerator(["The answer is forty two."])
    tokens = [t async for t in generator.stream([ChatMessage("user", "q")])]
    assert tokens == ["The ", "answer ", "is ", "forty ", "two."]


async def test_breaking_out_of_a_stream_stops_it_at_the_next_token() -> None:
    generator = ScriptedGenerator(["one two three four five six"])
    received: list[str] = []
    async with aclosing(generator.stream([])) as tokens:  # type: ignore[type-var]
        async for token in tokens:
            received.append(token)
            if len(received) == 2:
                break
    assert received == ["one ", "two "] and generator.streamed == 2


async def test_cancelling_a_stream_stops_it_at_the_next_token() -> None:
    generator = ScriptedGenerator(["one two three four five six"])
    received = []
    with trio.CancelScope() as scope:
        async for token in generator.stream([]):
            received.append(token)
            if len(received) == 3:
                scope.cancel()
    assert scope.cancelled_caught and generator.streamed == 3


# -- generator: llama.cpp engine logic with a stand-in model -----------------------------------


class FakeLlama:
    """Stands in for llama_cpp.Llama: streams up to ``limit`` tokens, counting what it made."""

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self.produced = 0
        self.closed = False
        self.metadata: dict[str, str] = {}  # no chat template
        self.input_ids: list[int] = []  # nothing evaluated
        self.n_tokens = 0

    def create_chat_completion(self, messages: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        for _ in range(self.limit):
            self.produced += 1
            yield {"choices": [{"delta": {"content": "tok "}}]}

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake_llama_generator(tmp_path: Path) -> Iterator[tuple[LlamaGenerator, FakeLlama]]:
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF")
    generator = LlamaGenerator(ModelLoad(model, threads=1, n_ctx=512), idle_unload_s=0.0)
    fake = FakeLlama()
    generator._llm = fake
    yield generator, fake
    generator.close()


async def test_llama_stream_stops_the_model_when_the_consumer_breaks(
    fake_llama_generator: tuple[LlamaGenerator, FakeLlama],
) -> None:
    generator, fake = fake_llama_generator
    async with aclosing(generator.stream([ChatMessage("user", "go")])) as tokens:  # type: ignore[type-var]
        async for _ in tokens:
            break
    # the worker runs calls in order: this one starts only once the stream's producer ended
    produced = await generator._worker.call(lambda: fake.produced)
    assert 1 <= produced < fake.limit


async def test_llama_generator_unloads_when_idle(
    fake_llama_generator: tuple[LlamaGenerator, FakeLlama],
) -> None:
    generator, fake = fake_llama_generator
    assert generator.loaded
    assert await generator.unload_if_idle()
    assert fake.closed and not generator.loaded
    assert not await generator.unload_if_idle()  # nothing left to unload


async def test_llama_generator_keeps_a_recently_used_model(tmp_path: Path) -> None:
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF")
    for idle in (None, 3600.0):
        generator = LlamaGenerator(ModelLoad(model, threads=1, n_ctx=512), idle_unload_s=idle)
        generator._llm = FakeLlama()
        assert not await generator.unload_if_idle() and generator.loaded
        generator.close()


def _openmp_spin_count(env: dict[str, str]) -> str:
    """The spin count llama.cpp's OpenMP runtime settles on when daemon.llm is imported first."""
    done = subprocess.run(
        [sys.executable, "-c", "import daemon.llm, llama_cpp"],
        env={**env, "OMP_DISPLAY_ENV": "VERBOSE"}, capture_output=True, text=True, check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    for line in done.stderr.splitlines():
        name, _, value = line.partition("=")
        if name.strip() == "GOMP_SPINCOUNT":
            return value.strip().strip("'")
    raise AssertionError(f"libgomp printed no GOMP_SPINCOUNT: {done.stderr[-500:]}")


def test_llama_threads_sleep_instead_of_spinning_unless_the_user_says_otherwise() -> None:
    # spinning OpenMP threads made generation 30x slower on 2 busy cores
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    assert _openmp_spin_count(env) == "0"
    assert _openmp_spin_count({**env, "OMP_WAIT_POLICY": "active"}) != "0"


def test_engines_report_a_missing_model_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.bin"
    with pytest.raises(ModelNotInstalled, match="not found"):
        LlamaGenerator(ModelLoad(missing, threads=1, n_ctx=512))
    with pytest.raises(ModelNotInstalled, match="not found"):
        LlamaEmbedder(missing, threads=1, batch=1)
    with pytest.raises(ModelNotInstalled, match="not found"):
        WhisperTranscriber(missing, threads=1)


@pytest.fixture
def damaged_model(tmp_path: Path) -> Path:
    path = tmp_path / "damaged.bin"
    path.write_bytes(bytes(range(256)) * 64)
    return path


async def test_engines_report_a_damaged_model_file_instead_of_crashing(damaged_model: Path) -> None:
    transcriber = WhisperTranscriber(damaged_model, threads=1)
    with pytest.raises(EngineError, match=r"cannot load speech model damaged\.bin: .*magic"):
        await transcriber.transcribe(np.full(SAMPLE_RATE, 0.1, dtype=np.float32))
    transcriber.close()
    with pytest.raises(EngineError, match="cannot load embedding model"):
        LlamaEmbedder(damaged_model, threads=1, batch=1)
    generator = LlamaGenerator(ModelLoad(damaged_model, threads=1, n_ctx=512))
    with pytest.raises(EngineError, match="cannot load language model"):
        await generator.generate([ChatMessage("user", "hi")], Task)
    generator.close()


# -- worker thread -----------------------------------------------------------------------------


async def test_a_worker_call_does_not_block_the_event_loop() -> None:
    worker = WorkerThread("test-worker")
    release = threading.Event()
    results: list[bool] = []

    async def call() -> None:
        results.append(await worker.call(lambda: release.wait(timeout=60)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call)
        await trio.testing.wait_all_tasks_blocked()
        release.set()  # reached only while the blocked call leaves the loop running
    assert results == [True]
    worker.close()


async def test_a_worker_call_whose_caller_was_cancelled_finishes_quietly() -> None:
    worker = WorkerThread("test-worker")
    release, finished = threading.Event(), threading.Event()

    def slow() -> bool:
        release.wait(timeout=60)
        finished.set()
        return True

    with trio.move_on_after(0.01):  # the caller gives up while the call runs
        await worker.call(slow)
    release.set()
    await trio.to_thread.run_sync(finished.wait, 60)
    # its result is handed to nobody: nothing is raised into the event loop
    assert await worker.call(lambda: "still serving") == "still serving"
    worker.close()


# -- audio files -------------------------------------------------------------------------------


def _tone(rate: int, seconds: float, channels: int) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    columns = [0.5 * np.sin(2 * np.pi * 440 * (c + 1) * t) for c in range(channels)]
    return np.stack(columns, axis=1).astype(np.float32)


def _dominant_hz(signal: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(signal))
    return float(np.fft.rfftfreq(len(signal), 1 / SAMPLE_RATE)[np.argmax(spectrum)])


@pytest.mark.parametrize(
    ("name", "rate", "channels"),
    [("a.wav", 44100, 2), ("a.flac", 8000, 1), ("a.ogg", 48000, 2), ("a.mp3", 44100, 1)],
)
def test_audio_files_load_as_16k_float32(
    tmp_path: Path, name: str, rate: int, channels: int
) -> None:
    path = tmp_path / name
    soundfile.write(path, _tone(rate, 2.0, channels), rate)
    decoded = load_audio_channels(path)
    assert decoded.dtype == np.float32 and decoded.shape[0] == channels
    assert abs(decoded.shape[1] - 2 * SAMPLE_RATE) < 0.06 * SAMPLE_RATE  # mp3 adds padding
    for c in range(channels):
        assert abs(_dominant_hz(decoded[c]) - 440 * (c + 1)) < 5
    mono = load_audio(path)
    assert mono.ndim == 1 and mono.dtype == np.float32
    np.testing.assert_allclose(mono, decoded.mean(axis=0), atol=1e-6)


def test_unreadable_and_missing_audio_files_name_the_problem(tmp_path: Path) -> None:
    text = tmp_path / "notes.wav"
    text.write_text("not audio at all")
    with pytest.raises(AudioError, match=r"cannot read audio file .*notes\.wav") as error:
        load_audio(text)
    assert error.value.fix is not None and "WAV, FLAC, OGG, MP3" in error.value.fix
    with pytest.raises(AudioError, match="no such file"):
        load_audio(tmp_path / "missing.flac")


# -- `braincue transcribe` ---------------------------------------------------------------------


def test_timestamps_print_as_minutes_seconds_and_hundredths() -> None:
    assert format_timestamp(0) == "00:00.00"
    assert format_timestamp(3.2) == "00:03.20"
    assert format_timestamp(754.456) == "12:34.46"
    assert format_timestamp(3723.5) == "1:02:03.50"
    assert format_segment(Segment(0.0, 3.2, "hi")) == "[00:00.00 -> 00:03.20] hi"


def test_transcribe_without_a_speech_model_says_how_to_install_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAINCUE_MODELS", str(tmp_path / "no-models"))
    audio = tmp_path / "a.wav"
    soundfile.write(audio, _tone(16000, 0.5, 1), 16000)
    result = CliRunner().invoke(cli, ["transcribe", str(audio)])
    assert isinstance(result.exception, ModelNotInstalled)
    assert "braincue models install" in str(result.exception)


# -- the WER helper of the real-model tests ----------------------------------------------------


def test_word_error_rate_ignores_case_and_punctuation() -> None:
    assert word_error_rate("Ask not, what!", "ask NOT what") == 0.0
    assert word_error_rate("a b c d", "a x c") == 0.5  # one substitution, one deletion
    assert word_error_rate("a b", "a b c d") == 1.0  # two insertions
    assert word_error_rate("Don't stop", "don’t stop") == 0.0


async def test_a_changed_language_model_setting_applies_from_the_next_request(
    tmp_path: Path,
) -> None:
    import gc

    from daemon.config import Settings
    from daemon.engines import Engines

    for name in ("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "qwen2.5-1.5b-instruct-q4_k_m.gguf"):
        (tmp_path / name).write_bytes(b"GGUF")
    settings = Settings(llm_model="qwen2.5-coder-0.5b", llm_threads=1, llm_process=False)
    engines = Engines(lambda: settings, tmp_path)
    first = engines.generator()
    assert isinstance(first, LlamaGenerator) and first.model_id.startswith("qwen2.5-coder-0.5b")
    fake = FakeLlama()
    first._llm = fake  # as if loaded
    worker = first._worker._thread

    settings = Settings(llm_model="qwen2.5-coder-0.5b", llm_threads=1, idle_unload_min=0.15,
                        llm_process=False)
    await engines.settings_changed(settings)
    assert engines.generator() is first and first.idle_unload_s == 9.0  # no reload for that

    settings = Settings(llm_model="qwen2.5-1.5b-instruct", llm_threads=1, llm_process=False)
    await engines.settings_changed(settings)
    second = engines.generator()
    assert second is not first and second.model_id.startswith("qwen2.5-1.5b")
    assert fake.closed and not first.loaded  # the old model left memory

    settings = Settings(llm_model="qwen2.5-1.5b-instruct", llm_threads=2, llm_process=False)
    await engines.settings_changed(settings)
    third = engines.generator()
    assert isinstance(third, LlamaGenerator) and third is not second and third.load.threads == 2

    del first
    gc.collect()
    worker.join(5)
    assert not worker.is_alive()  # a set-aside model's thread ends once nothing holds it
    engines.close()


async def test_the_language_model_runs_in_its_own_process_unless_set_otherwise(
    tmp_path: Path,
) -> None:
    from daemon.config import Settings
    from daemon.engines import Engines
    from daemon.llm.supervised import SupervisedGenerator

    (tmp_path / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf").write_bytes(b"GGUF")
    settings = Settings(llm_model="qwen2.5-coder-0.5b", llm_threads=1)
    engines = Engines(lambda: settings, tmp_path)
    first = engines.generator()
    assert isinstance(first, SupervisedGenerator) and first.pid is None  # starts on first use
    assert [(p.priority, p.pid, p.deaths) for p in engines.model_processes()] == [
        ("foreground", None, 0)]
    settings = Settings(llm_model="qwen2.5-coder-0.5b", llm_threads=1, llm_process=False)
    await engines.settings_changed(settings)
    assert isinstance(engines.generator(), LlamaGenerator) and engines.model_processes() == []
    engines.close()


async def test_given_engines_are_never_replaced_by_a_settings_change() -> None:
    from daemon.config import Settings
    from daemon.engines import Engines

    scripted = ScriptedGenerator([])
    engines = Engines(lambda: Settings(), Path("/nonexistent"), generator=scripted)
    await engines.settings_changed(Settings(llm_model="qwen2.5-1.5b-instruct"))
    assert engines.generator() is scripted

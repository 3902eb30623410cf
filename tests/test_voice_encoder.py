"""The voice model: resemblyzer's .pt converted without torch, and the numpy GE2E encoder
matching embeddings that resemblyzer's own code computed on torch (tests/data/voices)."""

from __future__ import annotations

import gc
import json
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from modelkit import assert_load_errors, assert_matches_pin, converted_fixture

from daemon.errors import ModelError
from daemon.models.convert_resemblyzer import convert_resemblyzer, read_legacy_torch
from daemon.voices.encoder import (
    VoiceEncoder,
    mel_frames,
    normalize_volume,
    partial_starts,
    read_voice_model,
)

DATA = Path(__file__).parent / "data" / "voices"


def test_partials_are_placed_as_resemblyzer_places_them() -> None:
    # 1.2 s: one padded window; 11 s at 1.3 windows/s: a window every 77 frames
    assert partial_starts(int(1.2 * 16_000)) == [0]
    starts = partial_starts(11 * 16_000)
    assert starts[:3] == [0, 77, 154] and len(starts) == 13


def test_mel_frames_are_centred_every_10_ms() -> None:
    tone = np.sin(2 * np.pi * 1000 * np.arange(16_000) / 16_000).astype(np.float32)
    mel = mel_frames(tone)
    assert mel.shape == (101, 40)
    # a 1 kHz tone puts its energy in one band, the same in every full frame
    assert len(set(mel[2:-2].argmax(axis=1))) == 1


def test_quiet_audio_is_raised_to_minus_30_dbfs_and_loud_audio_is_left() -> None:
    quiet = np.full(1000, 0.001, np.float32)
    raised = normalize_volume(quiet)
    assert 20 * np.log10(np.sqrt(np.mean(raised**2))) == pytest.approx(-30, abs=0.01)
    loud = np.full(1000, 0.5, np.float32)
    assert normalize_volume(loud) is loud


def test_a_checkpoint_naming_any_other_global_is_refused() -> None:
    evil = pickle.dumps(0x1950A86A20F9469CFC6C) + pickle.dumps(print)
    with pytest.raises(pickle.UnpicklingError, match="refusing global"):
        read_legacy_torch(evil)


def test_a_missing_or_corrupt_voice_model_is_a_one_line_model_error(tmp_path: Path) -> None:
    assert_load_errors(VoiceEncoder.load, tmp_path, "resemblyzer",
                       {"linear.bias": np.zeros(256, np.float32)})


converted = converted_fixture(convert_resemblyzer, "resemblyzer")


@pytest.mark.slow
def test_conversion_is_deterministic_and_matches_the_pin(converted: Path, tmp_path: Path) -> None:
    assert_matches_pin(converted, "resemblyzer")


@pytest.mark.slow
def test_numpy_encoder_matches_resemblyzer_on_torch(converted: Path, test_data: Path) -> None:
    encoder = VoiceEncoder.load(converted)
    reference = json.loads((DATA / "reference.json").read_text())["clips"]
    for name, clip in reference.items():
        audio, rate = sf.read(test_data / clip["path"], dtype="float32")
        end = None if clip["end_s"] is None else int(clip["end_s"] * rate)
        audio = audio[int(clip["start_s"] * rate) : end]
        embedding = encoder.embed_utterance(audio)
        np.testing.assert_allclose(embedding, clip["embedding"], atol=1e-4, err_msg=name)
        louder = normalize_volume(audio)
        partials = encoder.embed_windows(louder, partial_starts(len(louder)))
        np.testing.assert_allclose(partials, clip["partials"], atol=1e-4, err_msg=name)
    # and the embeddings tell voices apart: JFK is closer to JFK than to the AMI speaker
    clips = {
        name: np.asarray(clip["embedding"], np.float32) for name, clip in reference.items()
    }
    assert clips["jfk"] @ clips["jfk-short"] > clips["jfk"] @ clips["dev00-mid"]


def test_a_corrupt_voice_model_leaves_no_file_open(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(b"PK\x03\x04 not really a zip")
    gc.collect()  # what earlier tests left unclosed says so now, not below
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        with pytest.raises(ModelError, match="corrupt"):
            read_voice_model(corrupt, fix="install it again")
        gc.collect()  # an unclosed file says so when it is collected
    assert [w for w in caught
            if issubclass(w.category, ResourceWarning) and str(corrupt) in str(w.message)] == []

"""The turn detector's file: its version and sha256 checked at load, a clear error when it is
missing or altered, and the shipped one loads and scores a meeting."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from daemon.memory import detect
from daemon.memory.detect import HEADS, DetectorError, Turn

TURNS = [
    Turn("Ann", "So the case, plastic or rubber?"),
    Turn("Ben", "I think we should go with rubber instead of plastic, because it survives drops."),
    Turn("Cleo", "Yeah, agreed."),
    Turn("Cleo", "Then the colour: grey would hide the scratches, I think."),
    Turn("Ann", "Okay, rubber it is. Ben, you'll send the drawings to the supplier by Friday."),
    Turn("Ben", "Sure, I'll do that."),
]


def vectors(n: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(3).normal(size=(n, dim)).astype(np.float32)
    return np.asarray(v / np.linalg.norm(v, axis=1, keepdims=True), np.float32)


def write_detector(folder: Path, *, dim: int = 8, threshold: float = 0.5) -> Path:
    width = detect.features(TURNS, vectors(len(TURNS), dim)).shape[1]
    arrays = {"mean": np.zeros(width, np.float32), "scale": np.ones(width, np.float32)}
    for h in HEADS:
        w = np.zeros(width, np.float32)
        w[dim + 6] = 4.0  # "the next turn agrees"
        arrays[f"w_{h}"] = w
        arrays[f"b_{h}"] = np.array(-2.0, np.float32)
    weights = folder / "d.npz"
    with weights.open("wb") as f:
        np.savez(f, **arrays)  # type: ignore[arg-type]
    manifest = folder / "d.json"
    manifest.write_text(json.dumps({
        "format": detect.FORMAT_VERSION, "version": "t1", "file": "d.npz",
        "sha256": detect.file_sha256(weights), "embed_model": "m",
        "thresholds": {h: threshold for h in HEADS}}))
    return manifest


def test_a_detector_file_loads_and_finds_the_turn_others_agree_to(tmp_path: Path) -> None:
    found = detect.load(write_detector(tmp_path)).detected(TURNS, vectors(len(TURNS)))
    assert found["decision"] == [1, 4]  # answered "Yeah, agreed." / "Sure, I'll do that."


def test_missing_manifest_or_weights_say_so(tmp_path: Path) -> None:
    with pytest.raises(DetectorError, match="missing"):
        detect.load(tmp_path / "none.json")
    manifest = write_detector(tmp_path)
    (tmp_path / "d.npz").unlink()
    with pytest.raises(DetectorError, match="missing"):
        detect.load(manifest)


def test_altered_weights_are_refused(tmp_path: Path) -> None:
    manifest = write_detector(tmp_path)
    with (tmp_path / "d.npz").open("ab") as f:
        f.write(b"\0")
    with pytest.raises(DetectorError, match="sha256"):
        detect.load(manifest)


def test_another_format_version_is_refused(tmp_path: Path) -> None:
    manifest = write_detector(tmp_path)
    meta = json.loads(manifest.read_text())
    meta["format"] = detect.FORMAT_VERSION + 1
    manifest.write_text(json.dumps(meta))
    with pytest.raises(DetectorError, match="format"):
        detect.load(manifest)


def test_vectors_must_be_one_a_turn() -> None:
    with pytest.raises(ValueError, match="vectors"):
        detect.features(TURNS, vectors(len(TURNS) - 1))


def test_the_shipped_detector_loads_and_scores_every_turn() -> None:
    detector = detect.load()
    assert detector.version and detector.embed_model
    dim = detector.weights["decision"].shape[0] - detect.features(
        TURNS, vectors(len(TURNS), 1)).shape[1] + 1
    scores = detector.scores(TURNS, vectors(len(TURNS), dim))
    assert set(scores) == set(HEADS)
    assert all(s.shape == (len(TURNS),) and ((s >= 0) & (s <= 1)).all() for s in scores.values())


def test_a_keep_without_the_detector_file_says_so(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import trio

    from daemon.config import Settings
    from daemon.llm.embed import ScriptedEmbedder
    from daemon.memory.remember import Remembered, Rememberer
    from daemon.store.store import Store

    missing = tmp_path / "turn_detector.json"
    monkeypatch.setattr(detect, "shipped", lambda: detect.load(missing))
    store = Store(tmp_path / "profile", ScriptedEmbedder())
    try:
        rememberer = Rememberer(store, generator=lambda: None,  # type: ignore[arg-type,return-value]
                                settings=Settings)
        out = Remembered(session_id=1, answer="keep", status="kept")
        assert trio.run(rememberer._detect, [], out) is None
    finally:
        store.close()
    (note,) = out.notes
    assert note.startswith("decisions and action items were not detected: no turn detector")
    assert "missing" in note

"""Capture while nobody speaks reads 500 ms or 1 s at a time (by the clock, all the server holds
taken in one hold of its lock) and 100 ms while someone does (soundcard's reads): through a real
PulseAudio server, what is played arrives whole across the changes, nothing lost or repeated,
its first 100 ms included."""

from __future__ import annotations

import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

from daemon.audio.capture import BLOCK, IDLE_BLOCK, QUIET_BLOCK
from daemon.audio.format import SAMPLE_RATE
from daemon.audio.testing import THEM_SINK, PulseServer

RECORDER = Path(__file__).with_name("capture_recorder.py")
pytestmark = pytest.mark.slow


def write_wav(path: Path, samples: np.ndarray) -> Path:
    with wave.open(str(path), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(SAMPLE_RATE)
        f.writeframes((samples * 32767).astype("<i2").tobytes())
    return path


def window_correlations(heard: np.ndarray, played: np.ndarray, window: int) -> list[float]:
    """Where ``played`` best lines up in ``heard``, the correlation of each ``window`` of it
    with what was heard there: one window out of step (a piece lost or repeated before it)
    falls to about 0."""
    spectrum = np.fft.irfft(np.fft.rfft(heard, 2 * len(heard)).conj()
                            * np.fft.rfft(played, 2 * len(heard)))
    offset = (-int(np.argmax(spectrum))) % (2 * len(heard))
    assert offset + len(played) <= len(heard), "the signal is not all in what was heard"
    aligned = heard[offset:offset + len(played)]
    return [float(np.corrcoef(aligned[k:k + window], played[k:k + window])[0, 1])
            for k in range(0, len(played) - window + 1, window)]


def test_quiet_and_speaking_reads_deliver_what_was_played_whole(
    pulse: PulseServer, tmp_path: Path
) -> None:
    played = (np.random.default_rng(7).standard_normal(4 * SAMPLE_RATE) * 0.1).clip(-1, 1)
    signal = write_wav(tmp_path / "signal.wav", played)
    out = tmp_path / "heard.npz"
    run = subprocess.run([sys.executable, str(RECORDER), str(signal), str(out), THEM_SINK],
                         env=pulse.env, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    heard = np.load(out)
    sizes = heard["sizes"].tolist()
    assert len(set(heard["epochs"].tolist())) == 1  # one opening of the device throughout
    # 1 s reads, then 100 ms ones, then 500 ms
    assert sizes[0] == IDLE_BLOCK and set(sizes) == {IDLE_BLOCK, BLOCK, QUIET_BLOCK}
    assert QUIET_BLOCK in sizes[sizes.index(BLOCK):] and IDLE_BLOCK not in sizes[sizes.index(BLOCK):]
    correlations = window_correlations(heard["audio"].astype(np.float64),
                                       played.astype(np.float64), SAMPLE_RATE // 10)
    # what was played reached capture from its first 100 ms on (where paplay starts within
    # it, silence before: 0.36-0.72 measured) and the rest in step (0.8-0.94 measured); a
    # head lost to the server, or a piece lost or repeated, gives about 0 or nothing
    assert correlations[0] > 0.2 and min(correlations[1:]) > 0.7, correlations

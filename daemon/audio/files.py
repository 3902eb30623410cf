"""Reading audio files into 16 kHz float32 arrays (WAV, FLAC, OGG, MP3 via libsndfile)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile
import soxr

from daemon.audio.format import SAMPLE_RATE
from daemon.errors import AudioError

_BLOCK_SECONDS = 30  # read and resample in blocks: a long recording never exists at its own rate


def load_audio_channels(path: Path) -> np.ndarray:
    """The file's channels as a float32 array of shape (channels, samples) at 16 kHz."""
    if not path.is_file():
        raise _unreadable(path, "is a directory" if path.is_dir() else "no such file")
    try:
        with soundfile.SoundFile(str(path)) as f:
            resampler = soxr.ResampleStream(
                f.samplerate, SAMPLE_RATE, f.channels, dtype="float32", quality="HQ"
            )
            blocks = f.blocks(
                blocksize=f.samplerate * _BLOCK_SECONDS, dtype="float32", always_2d=True
            )
            parts = [resampler.resample_chunk(block) for block in blocks]
            parts.append(resampler.resample_chunk(np.zeros((0, f.channels), np.float32), last=True))
    except (soundfile.LibsndfileError, RuntimeError, OSError) as e:
        raise _unreadable(path, _reason(e)) from e
    frames = np.concatenate(parts)
    return np.ascontiguousarray(frames.T, dtype=np.float32)


def load_audio(path: Path) -> np.ndarray:
    """The file as 16 kHz mono float32 (channels averaged)."""
    return np.ascontiguousarray(load_audio_channels(path).mean(axis=0), dtype=np.float32)


def _reason(error: Exception) -> str:
    reason = getattr(error, "error_string", None) or str(error)
    return str(reason).rstrip(".")


def _unreadable(path: Path, reason: str) -> AudioError:
    return AudioError(
        f"cannot read audio file {path}: {reason}",
        fix="use an audio file in a supported format: WAV, FLAC, OGG, MP3",
    )

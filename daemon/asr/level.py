"""Levels of speech audio: how loud it is, whether it holds anything, and leveling it.

Recording levels vary by 50 dB between a close microphone and a soft-spoken caller on a laptop
(bench.asr's read-speech files peak anywhere from -2 to -49 dBFS). Whisper's log-mel input is
not level invariant, and an absolute "is it silent" threshold loses quiet speakers entirely,
so:

- a signal's *speech level* is the 95th percentile of its 20 ms frame levels (the loud part,
  not one click), its *floor* the 10th percentile (the pauses between words);
- it holds something when its speech level stands clear of its own floor, or is plainly loud —
  never by an absolute level alone, except below the dither of any real recording;
- before recognition its gain is raised so the speech level reaches a common target (never
  lowered, never past a full-scale peak, at most +40 dB).

Pure functions over float32 16 kHz mono arrays.
"""

from __future__ import annotations

import numpy as np

FRAME = 320  # 20 ms at 16 kHz
DITHER_DB = -80.0  # below this nothing real was recorded (16-bit dither is about -96 dBFS)
LOUD_DB = -40.0  # speech this loud is heard whatever its floor (a steady tone, a hum) ...
STANDS_OUT_DB = 12.0  # ... quieter sound must stand this far above its own floor
QUIET_DB = -40.0  # speech below this is "very quiet": it is leveled, and the user told
TARGET_DB = -18.0  # leveled speech level: that of a normal close-microphone recording
MAX_GAIN_DB = 40.0
PEAK_LIMIT = 0.9  # leveled peaks stay under -1 dBFS: no clipping


def frame_levels(audio: np.ndarray) -> np.ndarray:
    """RMS level in dBFS of each whole 20 ms frame (a shorter signal is one frame)."""
    n = len(audio) // FRAME
    frames = audio[: n * FRAME].reshape(n, FRAME) if n else audio.reshape(1, -1)
    rms = np.sqrt(np.mean(np.square(frames, dtype=np.float64), axis=1))
    levels: np.ndarray = 20.0 * np.log10(np.maximum(rms, 1e-6))
    return levels


def speech_level_db(audio: np.ndarray) -> float:
    """The level of the loud part of ``audio`` (dBFS): its 95th-percentile frame level."""
    if audio.size == 0:
        return -120.0
    return float(np.percentile(frame_levels(audio), 95))


def holds_sound(audio: np.ndarray) -> bool:
    """Whether ``audio`` holds anything to recognise: speech level above the dither, and either
    loud or clear of its own floor (steady low noise is not, however it is amplified)."""
    if audio.size == 0:
        return False
    levels = frame_levels(audio)
    speech, floor = np.percentile(levels, [95, 10])
    if speech < DITHER_DB:
        return False
    return bool(speech >= LOUD_DB or speech - floor >= STANDS_OUT_DB)


def gain_db(audio: np.ndarray) -> float:
    """The gain that brings the speech level of ``audio`` to the target (0 when it is there)."""
    if audio.size == 0:
        return 0.0
    wanted = min(MAX_GAIN_DB, max(0.0, TARGET_DB - speech_level_db(audio)))
    peak = float(np.max(np.abs(audio)))
    if peak > 0:
        wanted = min(wanted, 20.0 * np.log10(PEAK_LIMIT / peak))
    return max(0.0, wanted)


def level(audio: np.ndarray) -> np.ndarray:
    """``audio`` with its speech brought to the target level (a copy; the same array when no
    gain is needed)."""
    gain = gain_db(audio)
    if gain < 0.5:
        return audio
    leveled: np.ndarray = (audio * np.float32(10.0 ** (gain / 20.0))).astype(np.float32)
    return leveled


def is_quiet(audio: np.ndarray) -> bool:
    """Speech that is there but very quiet: worth telling the user (check the microphone)."""
    return holds_sound(audio) and speech_level_db(audio) < QUIET_DB


def level_warning(audio: np.ndarray, what: str = "the audio") -> str | None:
    """What to tell the user about the level of ``audio`` (None: nothing to say): silence, or
    speech so quiet that it was amplified to be heard."""
    if audio.size == 0 or not holds_sound(audio):
        return f"{what} is silent: no speech to transcribe"
    speech = speech_level_db(audio)
    if speech >= QUIET_DB:
        return None
    return (f"{what} is very quiet (speech at {speech:.0f} dBFS); it was amplified by "
            f"{gain_db(audio):.0f} dB to be transcribed: raise the recording level if you can")

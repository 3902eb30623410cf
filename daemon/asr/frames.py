"""What the daemon and its speech-model process say to each other over a pipe (framed by
:mod:`daemon.process.frames`): the daemon sends one ``Transcribe`` at a time, the process
answers ``Transcribed`` or ``Failed``; ``Load`` (answered ``Loaded``) loads the model before the
first utterance. The audio travels as the bytes of its float32 samples
(little endian): 30 s of speech is 1.9 MB.
"""

from __future__ import annotations

import msgspec
import numpy as np

from daemon.asr.engine import Segment
from daemon.process.frames import Failed

SAMPLE = np.dtype("<f4")


class Transcribe(msgspec.Struct, tag=True):
    audio: bytes  # 16 kHz mono float32 samples, little endian
    threads: int = 0  # 0: the process chooses

    @classmethod
    def of(cls, audio: np.ndarray, threads: int = 0) -> Transcribe:
        return cls(np.ascontiguousarray(audio, dtype=SAMPLE).tobytes(), threads)

    def samples(self) -> np.ndarray:
        """The audio as float32 samples (read-only, without a copy)."""
        return np.frombuffer(self.audio, dtype=SAMPLE)


class Transcribed(msgspec.Struct, tag=True):
    segments: list[Segment]


class Load(msgspec.Struct, tag=True):
    pass


class Loaded(msgspec.Struct, tag=True):
    pass


ToSpeech = Transcribe | Load
FromSpeech = Transcribed | Loaded | Failed

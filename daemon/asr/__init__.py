"""Speech recognition: the :class:`Transcriber` protocol and its implementations."""

from daemon.asr.engine import (
    SAMPLE_RATE,
    ScriptedTranscriber,
    Segment,
    Transcriber,
    WhisperTranscriber,
)

__all__ = ["SAMPLE_RATE", "ScriptedTranscriber", "Segment", "Transcriber", "WhisperTranscriber"]

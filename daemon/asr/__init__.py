"""Speech recognition: the :class:`Transcriber` protocol and its implementations."""

from daemon.asr.engine import ScriptedTranscriber, Segment, Transcriber, WhisperTranscriber

__all__ = ["ScriptedTranscriber", "Segment", "Transcriber", "WhisperTranscriber"]

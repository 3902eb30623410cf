"""The speech model in a supervised process: a :class:`Transcriber` whose whisper.cpp runs in
:mod:`daemon.asr.speech_process`, so that a native crash or an out-of-memory kill of the model
costs at most the utterance being transcribed, not the daemon and its capture
(:mod:`daemon.process.supervisor`): that utterance is asked once more of a new process, and
fails with :class:`daemon.process.supervisor.ModelProcessDied` only when that one dies too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from daemon.asr import frames
from daemon.asr.engine import Segment, as_mono_float32, require_speech_model
from daemon.errors import EngineError
from daemon.process.supervisor import Supervisor


class SupervisedTranscriber(Supervisor):
    """A :class:`daemon.asr.engine.Transcriber` served by a speech-model process: the model
    file, ``threads``, ``language`` and ``fit_context`` as
    :class:`daemon.asr.engine.WhisperTranscriber` takes them."""

    def __init__(
        self,
        model_path: Path,
        threads: int,
        language: str,
        fit_context: bool,
        *,
        on_death: Callable[[str], None] | None = None,
    ) -> None:
        require_speech_model(model_path)
        super().__init__(
            "speech model", model_path.stem,
            ["daemon.asr.speech_process", str(model_path), "--threads", str(threads),
             "--language", language, *([] if fit_context else ["--full-window"])],
            frames.FromSpeech, on_death=on_death)

    async def load(self) -> None:
        reply = await self.ask_twice(frames.Load())
        if not isinstance(reply, frames.Loaded):
            raise EngineError(f"the speech model's process answered with {reply!r}")

    async def transcribe(self, audio: np.ndarray, threads: int = 0) -> list[Segment]:
        reply = await self.ask_twice(frames.Transcribe.of(as_mono_float32(audio), threads))
        if not isinstance(reply, frames.Transcribed):
            raise EngineError(f"the speech model's process answered with {reply!r}")
        return reply.segments

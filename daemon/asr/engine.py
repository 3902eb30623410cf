"""Transcription: the :class:`Transcriber` protocol, whisper.cpp and scripted implementations.

Input is 16 kHz mono float32 audio, typically one utterance cut by the VAD; output is a list of
segments with times in seconds from the start of that audio.
"""

from __future__ import annotations

import atexit
import logging
import math
import re
import threading
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

import msgspec
import numpy as np
import trio

from daemon.asr.level import holds_sound, level
from daemon.asr.threads import ThreadChooser
from daemon.audio.format import SAMPLE_RATE
from daemon.errors import EngineError, ModelNotInstalled
from daemon.worker import WorkerThread

# whisper's encoder sees 30 s as 1500 positions (50 a second). An utterance needs only its own
# positions plus a margin: cut tight, the decoder loses track of the end and repeats itself
# (whisper.cpp#1855, #1951), hence 128 positions (2.6 s) of margin. And never fewer than
# 500 (10 s): fitted to a short utterance alone, whisper drops its first words and invents
# (the bench.live script's 37 utterances, base: 13.8% WER with the full window, 16.8-20.2%
# with the utterance plus the margin, 11.6% with at least 10 s; tiny.en: 18.1% fitted tight,
# 25.7% live against 9.6% full window) — it was trained on windows that are mostly longer.
FULL_CONTEXT = 1500
POSITIONS_PER_S = 50
CONTEXT_PAD = 128
MIN_CONTEXT = 500

_log = logging.getLogger("braincue.whisper")


class Word(msgspec.Struct, frozen=True):
    """One word of a segment, timed by whisper.cpp's token timestamps (seconds)."""

    start: float
    end: float
    text: str


class Segment(msgspec.Struct, frozen=True):
    start: float  # seconds
    end: float
    text: str
    # its words, when the transcriber timed them (whisper.cpp does): where a voice changes
    # inside a segment, and where the speech of a segment begins and ends
    words: tuple[Word, ...] = ()


class Transcriber(Protocol):
    """A speech model: loaded on its first ``transcribe``; ``unload`` frees its memory until
    the next one (``loaded`` says whether it holds it now); ``close`` ends it for good."""

    model_id: str

    @property
    def loaded(self) -> bool: ...

    async def load(self) -> None:
        """Load the model now (a call begins), not with the first utterance."""

    async def transcribe(self, audio: np.ndarray, threads: int = 0) -> list[Segment]:
        """The segments heard in ``audio``, on ``threads`` threads (0: as the transcriber
        chooses; a count set for it wins)."""

    def unload(self) -> None: ...

    def close(self) -> None: ...


# -- pure helpers ------------------------------------------------------------------------------


def as_mono_float32(audio: np.ndarray) -> np.ndarray:
    audio = np.ascontiguousarray(audio, dtype=np.float32)
    if audio.ndim != 1:
        raise ValueError(f"expected mono audio (one dimension), got shape {audio.shape}")
    return audio


def is_silent(audio: np.ndarray) -> bool:
    """Nothing to transcribe: whisper given silence or steady low noise invents text ("Thank
    you."). Judged against the audio's own floor, so quiet speech is not silence."""
    return not holds_sound(audio)


def audio_context(samples: int, pad: int = CONTEXT_PAD, minimum: int = MIN_CONTEXT) -> int:
    """whisper.cpp's ``audio_ctx`` for ``samples`` of audio: its encoder positions plus ``pad``,
    at least ``minimum``, or 0 (the full 30 s window) when that is no smaller."""
    needed = max(minimum, math.ceil(samples * POSITIONS_PER_S / SAMPLE_RATE) + pad)
    return 0 if needed >= FULL_CONTEXT else needed


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.lower())


# A fitted context's timestamps are coarse: on the bench.live script they ended up to 3.1 s
# past the audio (11.9 s said as 0-15 s) with the words right; an invented tail runs further
# (11.4 s of read speech ran on to 21.1 s with "You, it's you, it's you").
OVERRUN_S = 5.0
# ... but a short utterance's one segment may end at the context's end (1.8 s said as 0-7 s),
# its words timed inside the audio: words that fit there at a rate people speak (2-4 words a
# second in conversation) were heard; crammed into its last moment, invented
MAX_WORDS_PER_S = 6.0


def runs_on(segment: Segment, duration: float) -> bool:
    """Whether ``segment`` runs on well past the audio's end with words not heard in it."""
    if segment.end <= duration + OVERRUN_S:
        return False
    if not segment.words:
        return True
    first = max(segment.start, min(w.start for w in segment.words))
    span = min(duration, max(w.end for w in segment.words)) - first
    return len(segment.words) > MAX_WORDS_PER_S * max(0.0, span) + 1


def looks_looped(segments: list[Segment], duration: float) -> bool:
    """Signs that a decoder given a shortened encoder context lost track of the end and went
    on inventing (whisper.cpp#1855, #1951): a segment that repeats the start of an
    earlier one, one that starts after the audio, or one that runs on well past it."""
    seen: list[list[str]] = []
    for segment in segments:
        if segment.start >= duration or runs_on(segment, duration):
            return True
        words = _words(segment.text)
        head = words[:4]
        if len(head) == 4 and any(
            earlier[i : i + 4] == head for earlier in seen for i in range(len(earlier) - 3)
        ):
            return True
        seen.append(words)
    return False


def within(segments: list[Segment], duration: float) -> list[Segment]:
    """``segments`` with their times inside the audio (coarse timestamps run past its end)."""
    return [
        s if s.end <= duration
        else Segment(min(s.start, duration), duration, s.text, tuple(
            Word(min(w.start, duration), min(w.end, duration), w.text) for w in s.words))
        for s in segments
    ]


_NON_SPEECH = re.compile(r"^\s*(\[[^\]]*\]|\([^)]*\)|\*[^*]*\*)\s*$")


def clean_segments(
    raw: Iterable[tuple[float, float, str] | tuple[float, float, str, tuple[Word, ...]]],
) -> list[Segment]:
    """Strip text and drop empty segments and whole-segment annotations like ``[BLANK_AUDIO]``."""
    segments = []
    for start, end, text, *words in raw:
        text = text.strip()
        if text and not _NON_SPEECH.match(text):
            segments.append(Segment(start, end, text, words[0] if words else ()))
    return segments


def timed_words(ctx: Any, segment: int) -> tuple[Word, ...]:
    """The words of whisper.cpp's ``segment`` from its token timestamps: a token that starts
    with a space starts a word, special tokens (timestamps, end of text) are left out."""
    import _pywhispercpp as pw  # type: ignore[import-not-found]

    end_of_text = pw.whisper_token_eot(ctx)
    words: list[tuple[int, int, bytes]] = []
    for j in range(pw.whisper_full_n_tokens(ctx, segment)):
        if pw.whisper_full_get_token_id(ctx, segment, j) >= end_of_text:
            continue
        data = pw.whisper_full_get_token_data(ctx, segment, j)
        text = pw.whisper_full_get_token_text(ctx, segment, j)
        piece = text if isinstance(text, bytes) else text.encode()
        if words and not piece.startswith(b" "):
            t0, _, joined = words[-1]
            words[-1] = (t0, max(data.t1, t0), joined + piece)
        else:
            words.append((data.t0, max(data.t1, data.t0), piece))
    # whisper.cpp times are in units of 10 ms; a character may span two tokens
    decoded = [(t0 / 100, t1 / 100, raw.decode("utf-8", "replace").strip())
               for t0, t1, raw in words]
    return tuple(Word(t0, t1, text) for t0, t1, text in decoded if text)


# -- whisper.cpp -------------------------------------------------------------------------------


def require_speech_model(model_path: Path) -> None:
    """ModelNotInstalled, naming the fix, unless the speech model's file is there."""
    if not model_path.is_file():
        raise ModelNotInstalled(
            f"speech model file {model_path} not found",
            fix="install one with `braincue models install`",
        )


_GGML_LOG_ERROR = 4
_logs_routed = False
_load_errors = threading.local()  # errors whisper.cpp logs while this thread loads a model


def _route_whisper_logs() -> None:
    """Send whisper.cpp's stderr chatter to the debug log instead.

    The default C logger is restored at exit: a Python callback invoked while the interpreter
    finalises (a model freed by the garbage collector) aborts the process.
    """
    global _logs_routed
    if _logs_routed:
        return
    import _pywhispercpp  # type: ignore[import-not-found]

    def forward(level: int, text: str) -> None:
        text = text.rstrip()
        errors = getattr(_load_errors, "messages", None)
        if level == _GGML_LOG_ERROR and errors is not None:
            errors.append(text)
        _log.debug("%s", text)

    _pywhispercpp.whisper_log_set(forward)
    atexit.register(_pywhispercpp.whisper_log_set, None)
    _logs_routed = True


def _load_failure(errors: list[str]) -> str | None:
    """The reason a model did not load, from whisper.cpp's error log lines (None: it loaded)."""
    if not any("failed to load model" in e for e in errors):
        return None
    return errors[0].split(": ", 1)[-1]


class WhisperTranscriber:
    """A whisper.cpp ggml model on its own thread, loaded on first use.

    ``threads`` 0 chooses the count before every call from what else keeps the cores busy
    (:mod:`daemon.asr.threads`). ``fit_context`` sizes the encoder to the audio instead of
    whisper's 30 s window: an utterance costs in proportion to its length. Audio is ``leveled``
    (:mod:`daemon.asr.level`) before recognition.
    """

    def __init__(
        self,
        model_path: Path,
        *,
        threads: int = 0,
        language: str = "en",
        fit_context: bool = True,
        leveled: bool = True,
    ) -> None:
        require_speech_model(model_path)
        self.model_path = model_path
        self.model_id = model_path.stem
        self.threads = threads
        # an English-only model decodes English whatever it is told
        self.language = "en" if self.model_id.endswith(".en") else language
        # fitted, English kept its accuracy; other languages did not (bench.asr, multilingual
        # base: German 20.5% WER fitted against 19.1% full window, French 39.2% against 32.3%)
        self.fit_context = fit_context and self.language == "en"
        self.leveled = leveled
        self.full_window_retries = 0  # fitted decodings that looked looped, redone in full
        self._chooser = ThreadChooser()
        self._model: Any = None
        self._worker = WorkerThread(f"asr-{self.model_id}")
        # an engine replaced while someone still used it is never closed: its thread ends
        # when it is collected
        weakref.finalize(self, self._worker.close)

    def _load(self) -> Any:
        if self._model is None:
            _route_whisper_logs()
            from pywhispercpp.model import Model

            errors: list[str] = []
            _load_errors.messages = errors
            try:
                model = Model(
                    str(self.model_path),
                    n_threads=self.threads or 1,
                    language=self.language,
                    no_context=True,  # carried-over text feeds hallucinations
                    single_segment=False,
                    suppress_blank=True,
                    suppress_nst=True,
                    # no decoding again at higher temperatures, five samples each, when the
                    # first is unsure: on 100 utterances of read speech (2 threads) that took
                    # one of them 41 s (base; tiny.en 9.8 s) and all 255 s (160 s) against
                    # 152 s (74 s) without, the text read side by side no worse and the word
                    # error rate where there is a reference the same; it also made the text
                    # depend on the decodings before (its sampler's state). A looped decoding
                    # is still caught and done again in the full window
                    temperature_inc=0.0,
                    print_progress=False,
                    print_realtime=False,
                    print_timestamps=False,
                )
            finally:
                _load_errors.messages = None
            # whisper.cpp reports a failed load only in its log, and decoding with the null
            # context it returns would crash the process
            reason = _load_failure(errors)
            if reason is not None:
                raise EngineError(
                    f"cannot load speech model {self.model_path.name}: {reason}",
                    fix="the file may be damaged; reinstall it with `braincue models install`",
                )
            self._model = model
        return self._model

    def _transcribe(self, audio: np.ndarray, threads: int = 0) -> list[Segment]:
        if is_silent(audio):
            return []
        if self.leveled:
            audio = level(audio)
        context = audio_context(len(audio)) if self.fit_context else 0
        threads = self.threads or threads or self._chooser.choose()
        try:
            segments = self._decode(audio, threads, context)
            duration = len(audio) / SAMPLE_RATE
            if context and looks_looped(segments, duration):
                self.full_window_retries += 1
                segments = self._decode(audio, threads, 0)
        finally:
            self._chooser.finished()
        return within(segments, duration)

    def _decode(self, audio: np.ndarray, threads: int, context: int) -> list[Segment]:
        model = self._load()
        # token timestamps only time the tokens decoded, the text is the same
        raw = model.transcribe(audio, n_threads=threads, audio_ctx=context,
                               token_timestamps=True)
        # whisper.cpp times are in units of 10 ms; the tokens are read from the context
        # pywhispercpp keeps (``_ctx``: it has no accessor), which holds this decoding until
        # the next one on this thread
        return clean_segments((s.t0 / 100, s.t1 / 100, s.text, timed_words(model._ctx, i))
                              for i, s in enumerate(raw))

    async def load(self) -> None:
        await self._worker.call(self._load)

    async def transcribe(self, audio: np.ndarray, threads: int = 0) -> list[Segment]:
        audio = as_mono_float32(audio)
        return await self._worker.call(lambda: self._transcribe(audio, threads))

    def transcribe_sync(self, audio: np.ndarray) -> list[Segment]:
        audio = as_mono_float32(audio)
        return self._worker.call_sync(lambda: self._transcribe(audio))

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def unload(self) -> None:
        """Free the model (blocking: after the work queued before); the next call loads it."""
        def free() -> None:
            self._model = None  # pywhispercpp frees the context when the model is collected

        self._worker.call_sync(free)

    def close(self) -> None:
        self.unload()
        self._worker.close()


# -- scripted (tests) --------------------------------------------------------------------------


class ScriptedTranscriber:
    """Returns scripted segments, for tests: the next list per call, or ``script(audio)``.

    ``calls`` records the audio of every call.
    """

    def __init__(
        self,
        script: list[list[Segment]] | Callable[[np.ndarray], list[Segment]],
        *,
        model_id: str = "scripted",
    ) -> None:
        self.model_id = model_id
        self._script = script
        self._next = 0
        self.calls: list[np.ndarray] = []
        self.threads: list[int] = []  # the thread count each transcribe was given
        self.loaded = False  # as a real model: loaded by a call, freed by unload
        self.unloads = 0

    def transcribe_sync(self, audio: np.ndarray) -> list[Segment]:
        audio = as_mono_float32(audio)
        self.calls.append(audio)
        self.loaded = True
        if callable(self._script):
            return self._script(audio)
        if self._next >= len(self._script):
            raise EngineError(f"scripted transcriber has no result left for call {self._next + 1}")
        result = self._script[self._next]
        self._next += 1
        return result

    async def load(self) -> None:
        await trio.lowlevel.checkpoint()
        self.loaded = True

    async def transcribe(self, audio: np.ndarray, threads: int = 0) -> list[Segment]:
        await trio.lowlevel.checkpoint()
        self.threads.append(threads)
        return self.transcribe_sync(audio)

    def unload(self) -> None:
        self.loaded = False
        self.unloads += 1

    def close(self) -> None:
        self.loaded = False

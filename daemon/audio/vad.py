"""Voice activity detection: cut a stream of 16 kHz mono blocks into utterances.

Which 20 ms frames are voiced is decided by the Silero VAD model (:mod:`daemon.audio.silero`,
``VadConfig.speech_model``) when it is installed: a frame is speech when the probability of
the 32 ms chunk it falls in reaches ``speech_threshold`` (or, inside an utterance, stays above
``silence_threshold``: silero-vad's own defaults, 0.5 and 0.15 less). Without the model, an
energy detector over a noise floor estimated by minimum statistics (the quietest frame of the
last few seconds: speech always pauses within that time, steady noise never does, so noise
becomes the floor and stays below the voicing threshold). Energy cannot tell a voice from the
hum, rustle and keyboard of a room: on real meeting excerpts it took 104 s of noise for
speech against 187 s of real speech (bench.diarize). Either way utterances end after
``end_silence_s`` without voice; whisper then sees only the voiced spans, and `is_phantom`
filters what it still invents.

Pure: no threads, no I/O. Feed blocks with :meth:`Segmenter.feed`; it returns finished
utterances.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from daemon.audio.format import SAMPLE_RATE
from daemon.audio.silero import CHUNK, SileroModel, SileroStream

FRAME = 320  # 20 ms analysis frames


@dataclass(frozen=True)
class VadConfig:
    # an utterance ends after this much silence: it is most of the wait between a speaker
    # stopping and the turn stored, and still longer than the pauses inside a sentence
    end_silence_s: float = 0.5
    # ... or at this length, cut at the quietest point: a monologue is stored piece by piece,
    # each piece a turn as soon as it is cut, instead of all at once when it ends
    max_utterance_s: float = 10.0
    cut_window_s: float = 4.0  # where to look for that quiet point, before the maximum
    min_speech_s: float = 0.25  # shorter bursts (clicks, coughs) are not utterances
    start_frames: int = 3  # consecutive voiced frames that start an utterance
    pre_roll_s: float = 0.2  # audio kept before the detected start (soft onsets)
    post_roll_s: float = 0.15  # audio kept after the last voiced frame
    margin_db: float = 12.0  # voiced = this far above the noise floor ...
    # ... and above the dither of a real recording: a soft voice on a quiet line (read speech
    # at -56 to -61 dBFS over a -85 dBFS floor) is speech; the floor, not a level, decides
    min_db: float = -80.0
    # sound quieter than this (dBFS) must also rise and fall like syllables (its levels spread
    # over modulation_db): the onset of steady low noise stands above the floor for a few
    # seconds too, until minimum statistics catch up, but it is flat
    quiet_db: float = -48.0
    modulation_db: float = 6.0
    floor_window_s: float = 3.0  # the noise floor is the quietest level over this window
    # the speech model (None: loudness alone). Loudness cuts the utterances, its hangover
    # keeping a speaker's pauses inside one; the model keeps those it hears a voice in, trimmed
    # to where it does and the sound joined to that (``join_pause_s``) ...
    speech_model: SileroModel | None = field(default=None, compare=False, repr=False)
    # ... or, cutting, decides every frame itself: tighter and shorter utterances
    model_cuts: bool = False
    speech_threshold: float = 0.5  # a chunk this likely is speech (it starts an utterance) ...
    silence_threshold: float = 0.35  # ... and, cutting, inside one only less than this is not
    # what the model heard of an utterance grows over the loud frames around it, up to a pause
    # this long: the model is slow to trust a soft onset (a whispered sentence played into the
    # loopback got 0.1-0.4 over its first 1.5 s, depending on where the chunks fell), and
    # whisper given the rest alone wrote nothing; loudness heard one sound, so it is kept
    join_pause_s: float = 0.3
    # the model reads only what loudness may cut an utterance from (a frame loud enough to
    # start or hold one, and everything until the utterance ends): it sleeps through silence,
    # which is most of a day, and on waking first reads this much of the audio that went by,
    # so that its state is warm and the pre-roll of the first word has its probabilities
    # (cutting with the model, or ``model_sleeps`` false, it reads everything)
    model_wake_s: float = 0.5
    model_sleeps: bool = True


@dataclass(frozen=True)
class Utterance:
    """A voiced span: ``start``/``end`` in seconds of stream time, ``audio`` float32 16 kHz."""

    start: float
    end: float
    audio: np.ndarray = field(repr=False)


def frame_db(frames: np.ndarray) -> np.ndarray:
    """RMS level in dBFS of each row of ``frames`` (shape (n, FRAME))."""
    rms = np.sqrt(np.mean(np.square(frames, dtype=np.float64), axis=1))
    levels: np.ndarray = 20.0 * np.log10(np.maximum(rms, 1e-5))
    return levels


class Segmenter:
    """Stateful utterance segmenter for one source."""

    def __init__(self, config: VadConfig | None = None) -> None:
        self.config = config or VadConfig()
        c = self.config
        self._recent: deque[float] = deque(
            maxlen=max(1, round(c.floor_window_s * SAMPLE_RATE / FRAME))
        )
        self._pending = np.zeros(0, dtype=np.float32)  # samples not yet framed
        self._samples_seen = 0  # samples framed so far (stream clock)
        # the buffer of the current (or candidate) utterance, with one level per frame
        self._buf: list[np.ndarray] = []
        self._levels: list[float] = []
        self._voiced: list[bool] = []
        self._buf_start = 0  # stream sample index of self._buf[0]
        self._in_speech = False
        self._run = 0  # consecutive voiced frames
        self._silence = 0  # consecutive unvoiced frames while in speech
        self._pre_frames = max(1, round(c.pre_roll_s * SAMPLE_RATE / FRAME))
        self._end_frames = max(1, round(c.end_silence_s * SAMPLE_RATE / FRAME))
        self._post_frames = round(c.post_roll_s * SAMPLE_RATE / FRAME)
        self._max_frames = round(c.max_utterance_s * SAMPLE_RATE / FRAME)
        self._cut_frames = round(c.cut_window_s * SAMPLE_RATE / FRAME)
        self._min_voiced = max(1, round(c.min_speech_s * SAMPLE_RATE / FRAME))
        # the model's speech probabilities, from chunk ``self._chunk_base`` on
        self._detector = None if c.speech_model is None else SileroStream(c.speech_model)
        self._speech: list[float] = []
        self._chunk_base = 0
        # asleep (see ``model_wake_s``): the audio of the chunks let by unread, the latest
        # ``model_wake_s`` of it; None while the model reads
        self._unread: deque[np.ndarray] | None = None
        self._wake_chunks = max(1, round(c.model_wake_s * SAMPLE_RATE / CHUNK))
        self.model_chunks = 0  # chunks the model read (for the figures)
        self.quiet_s = 0.0  # how long nothing an utterance may start from was heard

    @property
    def in_speech(self) -> bool:
        return self._in_speech

    @property
    def noise_floor_db(self) -> float:
        return min(self._recent, default=-100.0)

    def feed(self, block: np.ndarray) -> list[Utterance]:
        """Add samples; return the utterances that ended within them."""
        block = np.asarray(block, dtype=np.float32).ravel()
        samples = np.concatenate([self._pending, block])
        n = len(samples) // FRAME
        levels = frame_db(samples[: n * FRAME].reshape(n, FRAME))
        may_be_speech = self._may_be_speech(levels)
        self.quiet_s = 0.0 if may_be_speech else self.quiet_s + len(block) / SAMPLE_RATE
        if self._detector is not None:
            c = self.config
            if c.model_cuts or not c.model_sleeps or may_be_speech:
                self._wake()
                read = self._detector.feed(block)
                self.model_chunks += len(read)
                self._speech.extend(read.tolist())
            else:
                self._sleep(block)
        return self._frames(samples, levels, voiceless=not may_be_speech)

    def _may_be_speech(self, levels: np.ndarray) -> bool:
        """Whether loudness may start or hold an utterance in the frames of these ``levels``:
        one above the lowest voicing threshold the noise floor can give it (the floor falls
        to the quietest frame at most), or speech going on."""
        if self._in_speech or self._run:
            return True
        if not len(levels):
            return False
        c = self.config
        lowest = max(min(self.noise_floor_db, float(levels.min())) + c.margin_db, c.min_db)
        return bool(levels.max() > lowest)

    def _sleep(self, block: np.ndarray) -> None:
        """Let ``block`` by unread: its chunks are not speech, their audio is kept a while."""
        assert self._detector is not None
        unread = self._detector.skip(block)
        if self._unread is None:
            self._unread = deque()
        for k in range(0, len(unread), CHUNK):
            self._unread.append(unread[k : k + CHUNK])
            self._speech.append(0.0)
        while len(self._unread) > self._wake_chunks:
            self._unread.popleft()

    def _wake(self) -> None:
        """Read what went by unread lately, and take its probabilities."""
        assert self._detector is not None
        if self._unread is None:
            return
        chunks, self._unread = list(self._unread), None
        if not chunks:
            return
        read = self._detector.reread(np.concatenate(chunks)).tolist()
        self.model_chunks += len(read)
        kept = min(len(read), len(self._speech))
        if kept:
            self._speech[len(self._speech) - kept :] = read[len(read) - kept :]

    def flush(self) -> list[Utterance]:
        """End of stream: return what is still open, if it is speech."""
        out: list[Utterance] = []
        judged = self._chunk_base + len(self._speech)
        if self._detector is not None:
            # the last frames get the probability of their chunk padded with silence, a guess
            # the stream itself does not take: it goes on when capture does (a stop or a pause
            # cuts here), and its chunks must stay where the audio's are
            self._speech.extend(self._detector.tail().tolist())
            out = self._frames(self._pending)
        if self._in_speech:
            out += [u for u in [self._emit(len(self._buf))] if u is not None]
        del self._speech[judged - self._chunk_base :]
        return out

    def _frames(self, samples: np.ndarray, levels: np.ndarray | None = None, *,
                voiceless: bool = False) -> list[Utterance]:
        """Step through the whole frames of ``samples`` (``levels``: theirs, when known);
        ``voiceless``: loudness voices none of them (see ``_may_be_speech``)."""
        n = len(samples) // FRAME
        if self._detector is not None:  # only the frames whose chunk the model has judged
            judged = -(-(CHUNK * (self._chunk_base + len(self._speech)) - FRAME // 2) // FRAME)
            n = max(0, min(n, judged - self._samples_seen // FRAME))
        self._pending = samples[n * FRAME :]
        if n == 0:
            return []
        frames = samples[: n * FRAME].reshape(n, FRAME)
        levels = frame_db(frames) if levels is None else levels[:n]
        out: list[Utterance] = []
        if voiceless and not self.config.model_cuts:  # loudness alone voices a frame
            self._pass_unvoiced(frames, levels)
        else:
            for frame, level in zip(frames, levels, strict=True):
                utterance = self._step(frame, float(level))
                if utterance is not None:
                    out.append(utterance)
        # forget the probabilities of chunks before the buffer: no frame will ask again
        drop = self._buf_start // CHUNK - self._chunk_base
        if drop > 64:
            del self._speech[:drop]
            self._chunk_base += drop
        return out

    # -- internals -------------------------------------------------------------------------

    def _is_voiced(self, level: float) -> bool:
        """Is the frame about to be framed (at ``self._samples_seen``) speech?"""
        c = self.config
        if self._detector is None or not c.model_cuts:
            return level > max(self.noise_floor_db + c.margin_db, c.min_db)
        speech = self._speech[(self._samples_seen + FRAME // 2) // CHUNK - self._chunk_base]
        return speech >= (c.silence_threshold if self._in_speech else c.speech_threshold)

    def _heard(self, utterance: Utterance, begin: int, loud: list[bool]) -> Utterance | None:
        """``utterance`` (its first sample at stream sample ``begin``, ``loud`` its frames that
        loudness voiced) trimmed to the chunks the model hears speech in, grown over the loud
        frames joined to them (see ``join_pause_s``), with the rolls around them; None when
        the model hears too little."""
        c = self.config
        last = min((begin + len(utterance.audio) - 1) // CHUNK,
                   self._chunk_base + len(self._speech) - 1)
        voiced = [k for k in range(begin // CHUNK, last + 1)
                  if self._speech[k - self._chunk_base] >= c.speech_threshold]
        if len(voiced) * CHUNK < c.min_speech_s * SAMPLE_RATE:
            return None
        first = max(0, voiced[0] * CHUNK - begin) // FRAME
        end = min(len(loud), -(-((voiced[-1] + 1) * CHUNK - begin) // FRAME))
        pause = max(1, round(c.join_pause_s * SAMPLE_RATE / FRAME))
        first -= _reach(loud[:first][::-1], pause)
        end += _reach(loud[end:], pause)
        lo = max(0, first * FRAME - round(c.pre_roll_s * SAMPLE_RATE))
        hi = end * FRAME + round(c.post_roll_s * SAMPLE_RATE)
        audio = utterance.audio[lo:hi]
        start = utterance.start + lo / SAMPLE_RATE
        return Utterance(start=start, end=start + len(audio) / SAMPLE_RATE, audio=audio)

    def _pass_unvoiced(self, frames: np.ndarray, levels: np.ndarray) -> None:
        """What :meth:`_step` does for frames none of which is voiced, outside an utterance,
        at once: their levels join the noise floor's window and the pre-roll keeps the last
        of them (most of a day goes through here)."""
        self._recent.extend(levels.tolist())
        self._samples_seen += len(frames) * FRAME
        self._buf.extend(frames)
        self._levels.extend(levels.tolist())
        self._voiced.extend([False] * len(frames))
        drop = len(self._buf) - self._pre_frames
        if drop > 0:
            del self._buf[:drop], self._levels[:drop], self._voiced[:drop]
            self._buf_start += drop * FRAME

    def _step(self, frame: np.ndarray, level: float) -> Utterance | None:
        self._recent.append(level)
        voiced = self._is_voiced(level)
        self._buf.append(frame)
        self._levels.append(level)
        self._voiced.append(voiced)
        self._samples_seen += FRAME
        if not self._in_speech:
            self._run = self._run + 1 if voiced else 0
            if self._run >= self.config.start_frames:
                self._in_speech = True
                self._silence = 0
            # keep only the pre-roll plus the candidate run
            keep = self._pre_frames + self._run
            if len(self._buf) > keep:
                drop = len(self._buf) - keep
                del self._buf[:drop], self._levels[:drop], self._voiced[:drop]
                self._buf_start += drop * FRAME
            return None
        self._silence = 0 if voiced else self._silence + 1
        if self._silence >= self._end_frames:
            return self._emit(len(self._buf) - self._silence + self._post_frames)
        if len(self._buf) >= self._max_frames:
            return self._emit(self._quiet_cut())
        return None

    def _quiet_cut(self) -> int:
        """Frame index to cut a too-long utterance at: the quietest point near its end."""
        lo = max(self._pre_frames + 1, len(self._levels) - self._cut_frames)
        window = np.asarray(self._levels[lo:])
        # smooth over ~100 ms so a single quiet frame inside a word is not chosen
        smooth = np.convolve(window, np.ones(5) / 5, mode="same") if len(window) >= 5 else window
        return lo + int(np.argmin(smooth)) + 1

    def _speech_like(self, levels: list[float]) -> bool:
        """Loud enough to be taken as speech, or quiet but modulated like it (``levels``: from
        its first voiced frame to its last)."""
        if self._detector is not None:
            return True  # the model heard a voice
        loud, dip = np.percentile(levels, [90, 10])
        return bool(loud >= self.config.quiet_db or loud - dip >= self.config.modulation_db)

    def _emit(self, cut: int) -> Utterance | None:
        cut = max(1, min(cut, len(self._buf)))
        voiced = [i for i, v in enumerate(self._voiced[:cut]) if v]
        start = self._buf_start / SAMPLE_RATE
        audio = np.concatenate(self._buf[:cut])
        utterance = (
            Utterance(start=start, end=start + len(audio) / SAMPLE_RATE, audio=audio)
            if len(voiced) >= self._min_voiced
            and self._speech_like(self._levels[voiced[0] : voiced[-1] + 1])
            else None
        )
        if utterance is not None and self._detector is not None and not self.config.model_cuts:
            utterance = self._heard(utterance, self._buf_start, self._voiced[:cut])
        # what follows the cut stays buffered: silence is dropped, a too-long utterance goes on
        rest_voiced = self._voiced[cut:]
        self._buf_start += cut * FRAME
        del self._buf[:cut], self._levels[:cut], self._voiced[:cut]
        if self._silence >= self._end_frames or not any(rest_voiced):
            self._in_speech = False
            self._run = 0
            keep = min(len(self._buf), self._pre_frames)
            drop = len(self._buf) - keep
            del self._buf[:drop], self._levels[:drop], self._voiced[:drop]
            self._buf_start += drop * FRAME
        self._silence = 0
        return utterance


def _reach(beyond: list[bool], pause: int) -> int:
    """How many of the frames ``beyond`` an edge (nearest first; True: loud) go with it: up to
    the last loud one before ``pause`` quiet frames in a row."""
    reach = quiet = 0
    for i, loud in enumerate(beyond, start=1):
        if loud:
            reach, quiet = i, 0
        else:
            quiet += 1
            if quiet >= pause:
                break
    return reach


# -- what whisper invents ----------------------------------------------------------------------

_PHANTOMS = {
    "you", "thank you", "thanks", "thank you for watching", "thanks for watching",
    "thank you so much for watching", "please subscribe", "subscribe", "bye", "so",
    "the end", "okay", "oh", "uh", "um", "hmm", "silence", "music", "applause",
    "i'm going to go ahead and do it", "subtitles by the amara.org community",
}


def _normalise(text: str) -> str:
    kept = "".join(c.lower() if c.isalnum() or c in " '" else " " for c in text)
    return " ".join(kept.split())


def is_phantom(text: str) -> bool:
    """True for text whisper produces from silence or noise rather than from speech.

    Non-speech tags ("[BLANK_AUDIO]", "(music)"), the stock phrases of its training captions,
    and degenerate repetitions ("the the the the ...").
    """
    stripped = text.strip()
    if not stripped:
        return True
    if stripped[0] in "[(*♪" and stripped[-1] in "])*♪":
        return True
    norm = _normalise(stripped)
    if not norm or norm in _PHANTOMS:
        return True
    return is_degenerate(norm)


def is_degenerate(norm: str) -> bool:
    """A text that is mostly one short phrase repeated, the way a looping decoder writes."""
    words = norm.split()
    if len(words) < 6:
        return False
    for size in (1, 2, 3, 4):
        grams = [" ".join(words[i : i + size]) for i in range(0, len(words) - size + 1, size)]
        if len(grams) >= 4:
            top = max(grams.count(g) for g in set(grams))
            if top / len(grams) >= 0.6:
                return True
    distinct = len(set(words)) / len(words)
    return distinct < 0.2 and len(words) >= 10


def db_to_amplitude(db: float) -> float:
    return math.pow(10.0, db / 20.0)

"""From captured blocks to transcribed utterances: VAD per source, one ASR worker.

    capture threads ─▶ BlockChannel ─▶ segment task ─▶ UtteranceQueue ─▶ ASR task ─▶ on_text
     (mic, loopback)   (drops oldest)  (Segmenter per    (bounded,       (one transcriber,
                                         source)          earliest end    in order)
                                                          first)

Capture never waits: when transcription falls behind, the utterance queue fills, the segment
task waits for room, the block channel fills and drops its oldest blocks, counted in
:attr:`Pipeline.dropped_blocks`. Times are wall-clock seconds (the clock of the blocks).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import statistics
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import trio

from daemon.asr.engine import Segment, Transcriber
from daemon.asr.threads import ThreadChooser, read_own_ticks
from daemon.audio.capture import Block, BlockChannel, Source
from daemon.audio.format import SAMPLE_RATE
from daemon.audio.vad import Segmenter, Utterance, VadConfig
from daemon.errors import EngineError

log = logging.getLogger(__name__)

UTTERANCE_QUEUE = 32  # about as many turns: minutes of speech before blocks are dropped
TIMED_UTTERANCES = 200  # the stage figures are over this many recent utterances

# the stages between the end of an utterance and its turn stored, in order: the VAD's
# hangover (end of speech -> utterance cut), the wait for the transcriber, transcription,
# telling voices apart, storing (and making it searchable)
STAGES = ("cut", "queued", "asr", "voices", "stored")


@dataclass
class Timing:
    """When one utterance passed each stage (clock seconds), for the live figures."""

    ended: float  # the end of its audio
    marks: dict[str, float] = field(default_factory=dict)
    threads: int = 0  # whisper's threads for it, and the load they were chosen from (cores)
    load: float = 0.0

    def mark(self, stage: str, at: float) -> None:
        self.marks[stage] = at

    def durations(self) -> dict[str, float]:
        """Seconds spent in each stage reached, and ``total`` from the end to the last."""
        spent, previous = {}, self.ended
        for stage in STAGES:
            if stage in self.marks:
                spent[stage] = max(0.0, self.marks[stage] - previous)
                previous = self.marks[stage]
        spent["total"] = max(0.0, previous - self.ended)
        return spent


class StageFigures:
    """The per-stage durations of recent utterances, summarised as medians."""

    def __init__(self, keep: int = TIMED_UTTERANCES) -> None:
        self._recent: deque[dict[str, float]] = deque(maxlen=keep)

    def add(self, timing: Timing) -> None:
        self._recent.append(timing.durations())

    def after_asr_max(self) -> float:
        """The longest the daemon took, among recent utterances, from the end of one's
        transcription to its turn stored (telling voices apart, storing): its own share."""
        return round(max((d.get("voices", 0.0) + d.get("stored", 0.0) for d in self._recent),
                         default=0.0), 3)

    def medians(self) -> dict[str, float]:
        stages = [*STAGES, "total"]
        return {
            stage: round(statistics.median(values), 3)
            for stage in stages
            if (values := [d[stage] for d in self._recent if stage in d])
        }


@dataclass(frozen=True)
class Heard:
    """An utterance from one source, in wall-clock seconds."""

    source: Source
    start: float
    end: float
    audio: np.ndarray = field(repr=False, compare=False)
    timing: Timing = field(default_factory=lambda: Timing(0.0), repr=False, compare=False)


class SourceSegmenter:
    """The VAD of one source, mapping its stream time to wall-clock time.

    A new capture epoch (the device was reopened) starts a fresh segmenter, after handing over
    whatever the old one held. Stream time is mapped through the latest block's time, so a
    clock that was re-anchored (see ``BlockClock``) is followed.
    """

    def __init__(self, source: Source, config: VadConfig | None = None) -> None:
        self.source = source
        self.config = config
        self._segmenter = Segmenter(config)
        self._epoch: int | None = None
        self._fed = 0  # samples fed in this epoch
        self._origin = 0.0  # wall-clock time of stream time 0
        self.heard_until: float | None = None  # wall-clock end of the last block fed

    @property
    def in_speech(self) -> bool:
        return self._segmenter.in_speech

    @property
    def quiet_s(self) -> float:
        """How long nothing an utterance may start from was heard (see ``Segmenter``)."""
        return self._segmenter.quiet_s

    @property
    def epoch(self) -> int | None:
        """The capture epoch of the last block fed (None: none yet)."""
        return self._epoch

    def feed(self, block: Block) -> list[Heard]:
        out: list[Heard] = []
        if block.epoch != self._epoch:
            out = self.flush()
            self._segmenter = Segmenter(self.config)
            self._epoch = block.epoch
            self._fed = 0
        self._origin = block.t - self._fed / SAMPLE_RATE
        self._fed += len(block.samples)
        self.heard_until = block.t + len(block.samples) / SAMPLE_RATE
        return out + self._wall(self._segmenter.feed(block.samples))

    def flush(self) -> list[Heard]:
        """Cut the speech in progress, if any, and return it."""
        return self._wall(self._segmenter.flush())

    def _wall(self, utterances: Iterable[Utterance]) -> list[Heard]:
        return [
            Heard(self.source, self._origin + u.start, self._origin + u.end, u.audio,
                  Timing(self._origin + u.end))
            for u in utterances
        ]


class UtteranceQueue:
    """A bounded queue that hands out the utterance that ended first."""

    def __init__(self, capacity: int = UTTERANCE_QUEUE) -> None:
        self.capacity = capacity
        self._heap: list[tuple[float, int, Heard]] = []
        self._order = itertools.count()
        self._changed = trio.lowlevel.ParkingLot()

    def __len__(self) -> int:
        return len(self._heap)

    def items(self) -> list[Heard]:
        """What the queue holds, the earliest end first."""
        return [item[2] for item in sorted(self._heap, key=lambda item: item[:2])]

    def oldest_end(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    async def put(self, heard: Heard) -> None:
        """Add ``heard``; waits while the queue is full."""
        while len(self._heap) >= self.capacity:
            await self._changed.park()
        heapq.heappush(self._heap, (heard.end, next(self._order), heard))
        self._changed.unpark_all()
        await trio.lowlevel.checkpoint()

    async def get(self) -> Heard:
        while not self._heap:
            await self._changed.park()
        heard = heapq.heappop(self._heap)[2]
        self._changed.unpark_all()
        return heard


OnText = Callable[[Heard, list[Segment]], Awaitable[None]]
OnBlock = Callable[[Block, bool], None]  # a block segmented; whether speech is heard in it
OnUntranscribed = Callable[[Heard, str], None]  # an utterance lost, and why


@dataclass(frozen=True)
class Hooks:
    """What the pipeline asks and tells the one it works for.

    ``transcriber`` returns the Transcriber to use, or None when no speech model is available
    (then utterances are counted as skipped); ``wants_text`` says whether anyone needs the text
    of what is heard right now (a live session, or auto-start listening for one) — when not,
    utterances are dropped before transcription to spare the CPU. ``on_text`` gets every
    transcribed utterance; ``on_block`` every block once segmented, ``on_untranscribed``
    every utterance wanted but never transcribed (the capture receipt keeps both).
    """

    transcriber: Callable[[], Transcriber | None]
    on_text: OnText
    clock: Callable[[], float]
    wants_text: Callable[[], bool] = lambda: True
    on_block: OnBlock | None = None
    on_untranscribed: OnUntranscribed | None = None


class Pipeline:
    """Segments blocks into utterances and transcribes them one at a time, in order, for
    ``hooks`` (see :class:`Hooks`)."""

    def __init__(
        self,
        channel: BlockChannel,
        hooks: Hooks,
        *,
        vad: VadConfig | None = None,
        queue_capacity: int = UTTERANCE_QUEUE,
        chooser: ThreadChooser | None = None,
    ) -> None:
        self.channel = channel
        self._hooks = hooks
        self._clock = hooks.clock
        self.segmenters: dict[Source, SourceSegmenter] = {
            "mic": SourceSegmenter("mic", vad),
            "loopback": SourceSegmenter("loopback", vad),
        }
        self.queue = UtteranceQueue(queue_capacity)
        self._progress = trio.lowlevel.ParkingLot()
        self._block_seen: dict[Source, float] = {}  # clock time each source last delivered
        self.current: Heard | None = None  # the utterance being transcribed
        self.last_lag = 0.0
        self.utterances = 0  # cut by the VAD
        self.transcribed = 0
        self.skipped = 0  # dropped untranscribed: nobody wanted the text, or no model
        self.failed = 0
        self.asr_busy_s = 0.0  # time spent transcribing ...
        self.asr_audio_s = 0.0  # ... this much audio
        self.stages = StageFigures()  # where the time between speech and turn goes
        # whisper's threads: the cores the load since someone began speaking leaves free
        # (work that waits for a pause, the read-ahead, stops as speech starts and must not
        # count, nor the daemon's own, which runs before or after whisper); a count set in
        # the settings wins (see daemon.asr.threads)
        self._chooser = chooser or ThreadChooser(own=read_own_ticks)

    # -- figures -------------------------------------------------------------------------------

    @property
    def dropped_blocks(self) -> int:
        return self.channel.dropped

    @property
    def queued(self) -> int:
        """Utterances waiting for transcription, the one being transcribed included."""
        return len(self.queue) + (self.current is not None)

    def busy(self) -> bool:
        """Whether speech is being heard, waits for transcription or is being transcribed."""
        return self.queued > 0 or any(s.in_speech for s in self.segmenters.values())

    def real_time_factor(self) -> float:
        return self.asr_busy_s / self.asr_audio_s if self.asr_audio_s else 0.0

    def lag(self) -> float:
        """ASR lag in seconds: how long ago the utterance being transcribed ended, or, when
        idle, how long after its end the last one was transcribed."""
        oldest = self.current.end if self.current is not None else self.queue.oldest_end()
        if oldest is None:
            return self.last_lag
        return max(0.0, self._clock() - oldest)

    # -- tasks ---------------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._segment_blocks)
            nursery.start_soon(self._transcribe_utterances)
            task_status.started()

    async def _segment_blocks(self) -> None:
        async for block in self.channel.receive:
            self._block_seen[block.source] = self._clock()
            segmenter = self.segmenters[block.source]
            quiet = not self.busy()
            for heard in segmenter.feed(block):
                await self._enqueue(heard)
            if quiet and segmenter.in_speech:  # someone began to speak: measure from here
                self._chooser.finished()
            if self._hooks.on_block is not None:
                self._hooks.on_block(block, segmenter.in_speech)
            self._progress.unpark_all()

    async def _enqueue(self, heard: Heard) -> None:
        self.utterances += 1
        heard.timing.mark("cut", self._clock())
        if not self._hooks.wants_text():
            self.skipped += 1
            return
        await self.queue.put(heard)

    async def _transcribe_utterances(self) -> None:
        while True:
            heard = await self.queue.get()
            self.current = heard
            try:
                await self._transcribe(heard)
            finally:
                self.current = None
                self.last_lag = max(0.0, self._clock() - heard.end)
                self._progress.unpark_all()

    async def _transcribe(self, heard: Heard) -> None:
        transcriber = self._hooks.transcriber()
        if transcriber is None:
            self.skipped += 1
            self._untranscribed(heard, "no speech model")
            return
        began = self._clock()
        heard.timing.mark("queued", began)
        try:
            try:
                heard.timing.threads = self._chooser.choose()
                heard.timing.load = self._chooser.busy_elsewhere
                segments = await transcriber.transcribe(heard.audio, heard.timing.threads)
            finally:
                self._chooser.finished()
        except Exception as e:  # one bad utterance must not stop the worker
            why = "transcription failed"
            if isinstance(e, EngineError):  # said plainly: a model's process that died twice
                why = e.message
                log.error("a %.1f s utterance was not transcribed: %s", heard.end - heard.start,
                          why)
            else:
                log.exception("transcription of a %.1f s utterance failed",
                              heard.end - heard.start)
            self.failed += 1
            self._untranscribed(heard, why)
            return
        self.transcribed += 1
        heard.timing.mark("asr", self._clock())
        self.asr_busy_s += heard.timing.marks["asr"] - began
        self.asr_audio_s += len(heard.audio) / SAMPLE_RATE
        try:
            await self._hooks.on_text(heard, segments)
        except Exception:  # e.g. the store refused the turn: logged, and the worker goes on
            log.exception("a transcribed utterance could not be kept")
            self.failed += 1
            return
        if "stored" in heard.timing.marks:
            self.stages.add(heard.timing)
            if log.isEnabledFor(logging.DEBUG):  # what the live figures' slowest turns spent
                spent = heard.timing.durations()
                log.debug("utterance %s %.3f-%.3f: %s threads=%d (load %.2f)", heard.source,
                          heard.start, heard.end,
                          " ".join(f"{stage}={s:.3f}" for stage, s in spent.items()),
                          heard.timing.threads, heard.timing.load)

    def _untranscribed(self, heard: Heard, why: str) -> None:
        if self._hooks.on_untranscribed is not None:
            self._hooks.on_untranscribed(heard, why)

    def waiting(self) -> list[Heard]:
        """The utterances not transcribed yet, the one in progress included, by end."""
        held = self.queue.items()
        return ([self.current] if self.current is not None else []) + held

    # -- settling (for stop and pause) ---------------------------------------------------------

    async def cut(self) -> float:
        """Hand over the speech in progress on every source; returns how far audio was heard."""
        heard_until = max((s.heard_until or -math.inf for s in self.segmenters.values()),
                          default=-math.inf)
        for segmenter in self.segmenters.values():
            for heard in segmenter.flush():
                await self._enqueue(heard)
        return heard_until

    async def settle(self, until: float, *, flowing_s: float = 1.0) -> None:
        """Return once everything heard up to ``until`` is transcribed and handed to on_text.

        Waits for each source still delivering audio (a block within ``flowing_s``) to catch
        up to ``until``, cuts the speech in progress there, then waits for the queue to empty.
        Callers bound it with a timeout.

        A source that delivered before is given ``flowing_s`` from the start of the wait, however
        old its last block: a daemon that did not run for a while (a busy machine) handles the
        stop before the capture threads hand over the audio heard meanwhile, and taking those
        sources for stopped lost the last thing said.
        """
        waiting_since = self._clock()

        def caught_up() -> bool:
            now = self._clock()
            for source, segmenter in self.segmenters.items():
                seen = self._block_seen.get(source)
                flowing = seen is not None and now - max(seen, waiting_since) <= flowing_s
                if flowing and (segmenter.heard_until or -float("inf")) < until:
                    return False
            return True

        while not caught_up():
            with trio.move_on_after(flowing_s):
                await self._progress.park()
        # the speech in progress is cut where each segmenter is now: at or just after `until`
        limit = max(until, await self.cut())

        def pending_before_until() -> bool:
            oldest = self.queue.oldest_end()
            return (oldest is not None and oldest <= limit) or (
                self.current is not None and self.current.end <= limit
            )

        while pending_before_until():
            await self._progress.park()


def segment_tracks(
    tracks: Iterable[tuple[str, np.ndarray]], vad: VadConfig | None = None
) -> list[tuple[str, Utterance]]:
    """The utterances of whole recordings (one per speaker), by end time: the same VAD as
    live capture, for imported files."""
    found: list[tuple[str, Utterance]] = []
    piece = 30 * SAMPLE_RATE
    for speaker, audio in tracks:
        segmenter = Segmenter(vad)
        for i in range(0, len(audio), piece):
            found += [(speaker, u) for u in segmenter.feed(audio[i : i + piece])]
        found += [(speaker, u) for u in segmenter.flush()]
    return sorted(found, key=lambda item: item[1].end)

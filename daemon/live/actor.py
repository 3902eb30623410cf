"""Live capture wired to sessions: what the daemon hears becomes searchable turns.

The microphone ("me") and the loopback of the default output ("them") are captured on their
own threads, cut into utterances and transcribed one at a time (``daemon.live.pipeline``).
Each transcribed utterance is then kept or not by the session rules (``daemon.live.rules``):

- during a live session it becomes a turn — stored (and so searchable at once) and published
  as a ``turn`` event;
- outside one, nothing is stored: listening is always on, but what is heard outside a session
  is only held in memory for the auto-start window and then forgotten.

Sessions start with :meth:`Live.start` or automatically, and end with :meth:`Live.stop` or
after the configured silence; an ending publishes the keep prompt (:class:`Ended`). What it
takes, answers and publishes is plain data (``daemon.live.records``).
Audio files go through the same VAD and transcriber with :meth:`Live.import_audio`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import numpy as np
import trio

from daemon.asr.engine import Segment, Transcriber, WhisperTranscriber
from daemon.asr.level import is_quiet, level_warning
from daemon.asr.supervised import SupervisedTranscriber
from daemon.asr.threads import ThreadChooser
from daemon.audio.capture import (
    BLOCK,
    IDLE_BLOCK,
    QUIET_BLOCK,
    SPEAKER,
    Block,
    BlockChannel,
    CaptureThread,
    Source,
)
from daemon.audio.files import load_audio_channels
from daemon.audio.format import SAMPLE_RATE
from daemon.audio.vad import Utterance, VadConfig, is_phantom
from daemon.config import Settings
from daemon.errors import BrainCueError, InvalidInput, ModelError, StoreError
from daemon.live.gaps import Alert, GapTracker, cause_of
from daemon.live.pipeline import UTTERANCE_QUEUE, Heard, Hooks, Pipeline, Timing, segment_tracks
from daemon.live.records import (
    Began,
    CaptureChanged,
    Carried,
    Ended,
    Imported,
    ImportedSoFar,
    ImportOptions,
    LiveEvent,
    LiveState,
    SourceState,
    Started,
    StartOptions,
)
from daemon.live.rules import (
    START_WINDOW_S,
    AutoStart,
    capture_summary,
    check_start,
    end_due,
    gist,
    start_message,
)
from daemon.memory import open_items
from daemon.models.registry import speech_model
from daemon.process.supervisor import ModelProcess, unload_check_interval
from daemon.sensitive import judge
from daemon.store.receipts import Receipt, save_receipt
from daemon.store.records import NewTurn, Session, Space, Turn
from daemon.store.store import Store
from daemon.voices.service import Said as VoiceSaid
from daemon.voices.service import Voices

log = logging.getLogger(__name__)

T = TypeVar("T")
Call = Callable[[Callable[[], Any]], Awaitable[Any]]
Publish = Callable[[LiveEvent], None]

BLOCK_BACKLOG = 100  # blocks (10 s of audio over both sources) before the oldest are dropped
SETTLE_TIMEOUT_S = 60.0  # a stop waits at most this long for the transcription to catch up
SOURCES: tuple[Source, ...] = ("mic", "loopback")
QUIET_NOTE_S = 600.0  # a quiet source is mentioned again after this long
SLEEP_CHECK_S = 1.0  # how often the wall clock is compared with the monotonic one ...
SLEPT_S = 5.0  # ... and how far ahead it must have jumped for the machine to have slept
QUIET_AFTER_S = 2.0  # a source quiet this long is read in larger pieces (capture.QUIET_BLOCK)
IDLE_AFTER_S = 30.0  # ... and, between calls, this long: larger still (capture.IDLE_BLOCK)


@dataclass(frozen=True)
class Said:
    """A transcribed utterance: wall-clock times; its audio and segments for telling voices
    apart."""

    source: Source
    start: float
    end: float
    text: str
    audio: np.ndarray | None = field(default=None, repr=False, compare=False)
    segments: Sequence[Segment] = field(default=(), repr=False, compare=False)
    timing: Timing | None = field(default=None, repr=False, compare=False)


def speakers_of(turns: Sequence[Turn]) -> list[str]:
    """Who spoke, in order of first speech."""
    return list(dict.fromkeys(t.speaker for t in turns))


def text_of(segments: Sequence[Segment]) -> str:
    return " ".join(" ".join(s.text for s in segments).split())


class Live:
    """Capture, transcription and the session lifecycle of one daemon.

    ``settings`` is read on every decision, so settings changed while the daemon runs apply.
    ``call`` runs a blocking function, the store's or a model's (a thread by default);
    ``clock`` is the wall clock (tests give trio's, with a mock clock). ``transcriber``, when
    given, is used instead of the configured speech model.
    """

    def __init__(
        self,
        store: Store,
        settings: Callable[[], Settings],
        models_dir: Path,
        publish: Publish,
        *,
        capture: bool = True,
        clock: Callable[[], float] = time.time,
        call: Call = trio.to_thread.run_sync,
        transcriber: Transcriber | None = None,
        vad: VadConfig | None = None,
        block_backlog: int = BLOCK_BACKLOG,
        queue_capacity: int = UTTERANCE_QUEUE,
        voices: Voices | None = None,
        preload: bool | None = None,
        chooser: ThreadChooser | None = None,
    ) -> None:
        self.store = store
        self._settings = settings
        self.models_dir = models_dir
        self._publish = publish
        self.capture_enabled = capture
        # load the models a call's turns need as it begins (default: when capturing)
        self.preload = capture if preload is None else preload
        self._chooser = chooser  # whisper's thread count (None: measured on this machine)
        self.clock = clock
        self._call = call
        self._transcriber = transcriber
        self._own_transcriber = transcriber is None
        self._transcriber_made_with: tuple[str, int, bool, str, bool] | None = None
        self._told_no_model = False
        self.vad = vad
        self.block_backlog = block_backlog
        self.queue_capacity = queue_capacity
        self.session: Session | None = None
        self.space: Space | None = None
        self.carried: Carried | None = None  # what the live session's Space left open
        self._closing = False
        self._last_speech: float | None = None
        self._auto: AutoStart[Said] = AutoStart(window_s=START_WINDOW_S)
        self._lock = trio.Lock()
        self._session_changed = trio.lowlevel.ParkingLot()
        self.captures: list[CaptureThread] = []
        self.pipeline: Pipeline | None = None
        self.paused = False
        self._token: trio.lowlevel.TrioToken | None = None
        self.phantoms = 0  # transcriptions dropped as whisper's inventions
        self.turns = 0  # stored live
        self._unsaved: dict[int, list[NewTurn]] = {}  # by session: turns the store refused
        self._unindexed: dict[int, list[int]] = {}  # by session: turns shown, not yet embedded
        self._to_index = trio.lowlevel.ParkingLot()
        self._indexing = trio.Lock()  # held while a batch is embedded: the end waits for it
        self.voices = voices  # tells "them" apart (None: every loopback turn is "them")
        self._quiet_told: dict[Source, float] = {}  # when each source was last said quiet
        self.receipt: GapTracker | None = None  # what the live session heard and missed
        self._receipt_changed = trio.lowlevel.ParkingLot()
        self._speech_used_at = -math.inf  # trio clock: the speech model's last use
        self._importing = 0  # imports running (each holds the speech model)
        self.speech_unloaded_at: float | None = None  # clock: last unloaded for being unused

    # -- running -------------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Capture and transcribe until cancelled; then stop capture and end the session."""
        self._token = trio.lowlevel.current_trio_token()
        await self._end_stale_sessions()
        channel = BlockChannel(self.block_backlog, on_drop=self._dropped)
        hooks = Hooks(self._speech_model, self._on_text, self.clock, wants_text=self._wants_text,
                      on_block=self._heard_block, on_untranscribed=self._untranscribed)
        self.pipeline = Pipeline(channel, hooks, vad=self.vad, queue_capacity=self.queue_capacity,
                                 chooser=self._chooser)
        async with trio.open_nursery() as nursery:
            await nursery.start(self.pipeline.run)
            nursery.start_soon(self._end_when_silent)
            nursery.start_soon(self._save_receipts)
            nursery.start_soon(self._notice_sleep)
            nursery.start_soon(self._unload_speech_model_when_unused)
            nursery.start_soon(self._load_models_when_a_call_begins)
            nursery.start_soon(self._index_turns_shown)
            if self.capture_enabled:
                settings = self._settings()
                devices = {"mic": settings.mic_device, "loopback": settings.loopback_device}
                for source in SOURCES:
                    thread = CaptureThread(
                        source, channel.put_threadsafe, device=devices[source],
                        on_state=self._capture_state_changed,
                        read_frames=partial(self._read_frames, source),
                    )
                    self.captures.append(thread)
                    thread.start()
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True):
                    await self._shut_down()

    async def _load_models_when_a_call_begins(self) -> None:
        """As each call begins, load what its turns need and is not loaded — the speech model
        (unloaded when unused for a while), the voice encoder and the secret gate's word
        vectors (read once) — rather than in its first turns' way. A model that does not load
        is said where a turn needs it."""
        while self.preload:
            await self.wait_for_session()
            session = self.session
            transcriber = self._speech_model()
            if transcriber is not None and not transcriber.loaded:
                try:
                    await transcriber.load()
                except BrainCueError as e:
                    log.warning("the speech model did not load as the call began: %s", e)
            voices = self.voices
            if voices is not None and voices.switched_on:
                await trio.to_thread.run_sync(voices.encoder)  # a failed load is logged there
            await trio.to_thread.run_sync(judge.prepare)  # (logged there too)
            while self.session is session:
                await self._session_changed.park()

    def _read_frames(self, source: Source) -> int:
        """From a capture thread: how much of ``source`` to read next — more at a time the
        longer it has been quiet, most between calls."""
        pipeline = self.pipeline
        quiet_s = 0.0 if pipeline is None else pipeline.segmenters[source].quiet_s
        if quiet_s >= IDLE_AFTER_S and self.session is None:
            return IDLE_BLOCK
        return QUIET_BLOCK if quiet_s >= QUIET_AFTER_S else BLOCK

    def _stop_capture(self) -> None:
        for thread in self.captures:
            thread.stop(timeout=2.0)

    async def _shut_down(self) -> None:
        if self.captures:
            await trio.to_thread.run_sync(self._stop_capture)
        if self.session is not None:
            try:
                await self._end(self.session, self.clock())
            except Exception:  # shutting down regardless; the next start ends it
                log.exception("could not end session %d at shutdown", self.session.id)
        if self._transcriber is not None and self._own_transcriber:
            await trio.to_thread.run_sync(self._transcriber.close)
            self._transcriber = None

    async def _end_stale_sessions(self) -> None:
        """Sessions left live by a daemon that died end where their last turn ended."""
        def end_stale() -> list[int]:
            ended = []
            for session in self.store.list_sessions(statuses=["live"]):
                last = max((t.end for t in self.store.turns(session.id)), default=0.0)
                self.store.end_session(session.id, ended_at=session.started_at + last)
                ended.append(session.id)
            return ended

        for session_id in await self._db(end_stale):
            log.info("session %d was left live by a previous run; ended it", session_id)

    async def _db(self, fn: Callable[[], T]) -> T:
        """Run a blocking store call off the event loop."""
        result: T = await self._call(fn)
        return result

    def _capture_state_changed(self, source: Source, state: str, detail: str) -> None:
        """From a capture thread: tell subscribers (the tray shows "no audio")."""
        if self._token is not None:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._capture_state, source, state, detail)

    def _capture_state(self, source: Source, state: str, detail: str) -> None:
        """A capture state change, on the event loop: a live session's receipt opens a gap
        when a source has no audio, and says so at once."""
        alert = None
        if state == "no audio" and self.receipt is not None:
            alert = self.receipt.no_audio(source, self.clock(), cause_of(detail), detail)
        if alert is not None:
            self._alert([alert])
        else:
            self._publish_status(f"{source}: {state}"
                                 + (f" ({detail})" if state == "no audio" else ""))

    def _publish_status(self, message: str) -> None:
        self._publish(CaptureChanged(capture=self.capture_state(), message=message))

    # -- the capture receipt -------------------------------------------------------------------

    def _alert(self, alerts: Sequence[Alert | None]) -> None:
        """Tell at once of gaps found in the live session, and save its receipt soon."""
        found = [a for a in alerts if a is not None]
        for alert in found:
            log.warning("session %s: %s", None if self.session is None else self.session.id,
                        alert.message)
            self._publish(CaptureChanged(capture=self.capture_state(), message=alert.message,
                                         alert=True))
        if found:
            self._receipt_changed.unpark_all()

    def _heard_block(self, block: Block, speaking: bool) -> None:
        if self.receipt is not None:
            self._alert(self.receipt.block(block.source, block.t,
                                           len(block.samples) / SAMPLE_RATE, block.epoch,
                                           speaking))

    def _dropped(self, block: Block) -> None:
        if self.receipt is not None:
            self._alert([self.receipt.dropped(block.source, block.t,
                                              len(block.samples) / SAMPLE_RATE)])

    def _untranscribed(self, heard: Heard, why: str) -> None:
        if self.receipt is not None and heard.end > self.receipt.started_at:
            self._alert([self.receipt.not_transcribed(heard.source, heard.start, heard.end,
                                                      why)])

    def _new_receipt(self, started_at: float) -> GapTracker:
        """The receipt of a session starting now: from where capture stands."""
        segmenters = {} if self.pipeline is None else self.pipeline.segmenters
        tracker = GapTracker(
            started_at, self._settings().silent_mic_min * 60,
            heard_until={s: seg.heard_until for s, seg in segmenters.items()},
            epochs={s: seg.epoch for s, seg in segmenters.items()},
        )
        now = self.clock()
        for thread in self.captures:
            if self.paused:
                tracker.no_audio(thread.source, now, "paused")
            elif thread.state == "no audio":
                tracker.no_audio(thread.source, now, cause_of(thread.detail), thread.detail)
        return tracker

    def _final_receipt(self, until: float) -> Receipt | None:
        """The receipt of the live session ending at ``until``: what is still waiting for
        transcription then is listed as not transcribed."""
        tracker, self.receipt = self.receipt, None
        if tracker is None:
            return None
        for heard in [] if self.pipeline is None else self.pipeline.waiting():
            if tracker.started_at < heard.end <= until:
                tracker.not_transcribed(heard.source, heard.start, heard.end,
                                        "the session ended before it was transcribed")
        return tracker.receipt(until)

    async def _save_receipts(self) -> None:
        """Save the live session's receipt whenever it found a gap (at most every second), so
        that a daemon that dies keeps what it knew."""
        while True:
            await self._receipt_changed.park()
            session, tracker = self.session, self.receipt
            if session is not None and tracker is not None:
                receipt = tracker.receipt(self.clock())
                try:
                    await self._db(partial(save_receipt, self.store, session.id, receipt))
                except StoreError as e:
                    log.warning("could not save the receipt of session %d: %s", session.id, e)
            await trio.sleep(1.0)

    async def _notice_sleep(self) -> None:
        """A wall clock that jumps ahead of the monotonic one means the machine slept: the
        live session heard nothing meanwhile."""
        wall, mono = self.clock(), trio.current_time()
        while True:
            if self.receipt is None:  # nothing to tell it to: wait for a session
                await self.wait_for_session()
                wall, mono = self.clock(), trio.current_time()
            await trio.sleep(SLEEP_CHECK_S)
            now_wall, now_mono = self.clock(), trio.current_time()
            slept = (now_wall - wall) - (now_mono - mono)
            if slept > SLEPT_S and self.receipt is not None:
                self._alert(self.receipt.suspended(now_wall - slept, now_wall))
            wall, mono = now_wall, now_mono

    async def pause(self, paused: bool) -> None:
        """Stop listening — the devices are released and nothing is heard, so no session
        starts by itself — or listen again. A live session stays live while paused (and ends
        after the silence setting like any other)."""
        if paused == self.paused:
            return
        self.paused = paused
        if paused and self.receipt is not None:
            for source in SOURCES:
                self.receipt.no_audio(source, self.clock(), "paused")
        if paused:
            if self.captures:
                await trio.to_thread.run_sync(self._stop_capture)
            if self.pipeline is not None:
                await self.pipeline.cut()  # what was being said is still transcribed
        else:
            for thread in self.captures:
                thread.start()
        self._publish_status("listening paused" if paused else "listening again")

    async def use_devices(self, settings: Settings) -> None:
        """Follow a change of ``mic_device``/``loopback_device`` now: that source's capture
        reopens on the new device (or will when listening resumes, if paused)."""
        wanted: dict[Source, str] = {
            "mic": settings.mic_device, "loopback": settings.loopback_device
        }
        changed = [thread for thread in self.captures if thread.device != wanted[thread.source]]
        if not changed:
            return

        def reopen() -> None:
            for thread in changed:
                thread.stop(timeout=2.0)
                thread.device = wanted[thread.source]
                if not self.paused:
                    thread.start()

        await trio.to_thread.run_sync(reopen)
        for thread in changed:
            self._publish_status(f"{thread.source}: now {thread.device or 'the system default'}")

    # -- the speech model ----------------------------------------------------------------------

    def _speech_model(self) -> Transcriber | None:
        """The transcriber; None while no speech model is installed (looked for again on
        every utterance, so installing one needs no restart)."""
        self._speech_used_at = trio.current_time()
        try:
            return self._require_speech_model()
        except ModelError as e:
            if not self._told_no_model:
                log.warning("not transcribing: %s", e)
                self._told_no_model = True
            return None

    def speech_model_loaded(self) -> str | None:
        """The speech model in memory now (None: none)."""
        made = self._transcriber
        return made.model_id if made is not None and made.loaded else None

    async def _unload_speech_model_when_unused(self) -> None:
        while True:
            await trio.sleep(unload_check_interval(self._settings().idle_unload_s))
            await self.unload_speech_model_if_unused()

    async def unload_speech_model_if_unused(self) -> bool:
        """Free the speech model (its process ends) once unused for ``idle_unload_min``,
        nobody speaking and nothing waiting for it; the next utterance loads it again.
        Returns whether it did."""
        made = self._transcriber
        if (made is None or not made.loaded or self._importing
                or (self.pipeline is not None and self.pipeline.busy())
                or trio.current_time() - self._speech_used_at < self._settings().idle_unload_s):
            return False
        await self._call(made.unload)
        self.speech_unloaded_at = self.clock()
        log.info("speech model %s unloaded after %g min unused", made.model_id,
                 self._settings().idle_unload_min)
        return True

    def speech_process(self) -> ModelProcess | None:
        """The speech model's process, when it runs in one (``asr_process``)."""
        made = self._transcriber
        if not isinstance(made, SupervisedTranscriber):
            return None
        return msgspec.structs.replace(made.describe("asr", "live"),
                                       unloaded_at=self.speech_unloaded_at)

    def _speech_model_died(self, cause: str) -> None:
        """Say at once that the speech model's process died (capture goes on)."""
        self._publish_status(f"the speech model was {cause}: the utterance it was "
                             "transcribing is asked again of a new process")

    def _require_speech_model(self) -> Transcriber:
        settings = self._settings()
        wanted = (settings.asr_model, settings.asr_threads, settings.asr_fit_context,
                  settings.asr_language, settings.asr_process)
        if self._own_transcriber and self._transcriber_made_with not in (None, wanted):
            # a new speech model or thread count applies from the next utterance; the old
            # model leaves memory once nothing (an import running now) uses it any more
            log.info("speech model %s set aside: the settings changed",
                     self._transcriber.model_id if self._transcriber else "")
            self._transcriber = self._transcriber_made_with = None
        if self._transcriber is None:
            path = speech_model(settings.asr_model, settings.asr_language, self.models_dir)
            if settings.asr_process:
                self._transcriber = SupervisedTranscriber(
                    path, settings.asr_threads, settings.asr_language,
                    settings.asr_fit_context, on_death=self._speech_model_died)
            else:
                self._transcriber = WhisperTranscriber(path, threads=settings.asr_threads,
                                                       language=settings.asr_language,
                                                       fit_context=settings.asr_fit_context)
            self._transcriber_made_with = wanted
            self._told_no_model = False
        return self._transcriber

    # -- what is heard -------------------------------------------------------------------------

    def _wants_text(self) -> bool:
        return self.session is not None or self._settings().auto_start

    async def _on_text(self, heard: Heard, segments: list[Segment]) -> None:
        self._speech_used_at = trio.current_time()
        self._tell_if_quiet(heard)
        text = text_of(segments)
        if is_phantom(text):
            self.phantoms += 1
            return
        said = Said(heard.source, heard.start, heard.end, text, heard.audio, segments,
                    heard.timing)
        async with self._lock:
            if self.session is not None:
                await self._keep(self.session, [said])
            elif self._settings().auto_start:
                held = self._auto.heard(said.source, said.end, said)
                if held:
                    started_at = min(s.start for s in held)
                    session = await self._begin(None, "", "", started_at)
                    await self._keep(session, held)

    def _tell_if_quiet(self, heard: Heard) -> None:
        """A status event when a source speaks very quietly (at most every QUIET_NOTE_S): its
        words are still heard, amplified, but the user may want to raise the level."""
        if not is_quiet(heard.audio):
            return
        told = self._quiet_told.get(heard.source)
        if told is not None and heard.end - told < QUIET_NOTE_S:
            return
        self._quiet_told[heard.source] = heard.end
        warning = level_warning(heard.audio, f"{heard.source} input")
        if warning is not None:
            self._publish_status(warning)

    async def _keep(self, session: Session, said: Sequence[Said]) -> None:
        self._last_speech = max([self._last_speech or -math.inf, *(s.end for s in said)])
        new = []
        for s in said:
            start = max(0.0, s.start - session.started_at)
            end = max(start, s.end - session.started_at)
            by_voice = await self._voices_of(session.id, s)
            if s.timing is not None:
                s.timing.mark("voices", self.clock())
            if by_voice is None:
                new.append(NewTurn(speaker=SPEAKER[s.source], text=s.text, start=start, end=end,
                                   source=s.source))
                continue
            for part in by_voice:
                new.append(NewTurn(speaker=part.speaker, text=part.text,
                                   start=min(end, start + part.start),
                                   end=min(end, start + part.end), source=s.source,
                                   voice_label=part.voice, voice_id=part.voice_id))
        await self._save(session, new)
        for s in said:
            if s.timing is not None:
                s.timing.mark("stored", self.clock())
        self._session_changed.unpark_all()

    async def _voices_of(self, session_id: int, said: Said) -> list[VoiceSaid] | None:
        """Who among "them" said what in one loopback utterance (None: not told apart)."""
        if self.voices is None or said.source != "loopback" or said.audio is None:
            return None
        try:
            voices, audio = self.voices, said.audio
            parts: list[VoiceSaid] | None = await self._call(
                lambda: voices.label(session_id, audio, said.segments))
            return parts
        except Exception:  # the turn is kept as "them" rather than lost
            log.exception("telling the voices of a %.1f s utterance apart failed",
                          said.end - said.start)
            return None

    async def _save(self, session: Session, new: Sequence[NewTurn]) -> None:
        """Store ``new`` after any turns of ``session`` the store refused before (a full disk):
        those are held in memory and saved, in order, with the next turn that can be."""
        held = self._unsaved.pop(session.id, [])
        turns = [*held, *new]
        if not turns:
            return
        try:  # shown once committed; searchable by meaning a moment later
            stored = await self._db(lambda: self.store.append_turns(session.id, turns,
                                                                    index=False))
        except StoreError as e:
            self._unsaved[session.id] = turns
            log.error("session %d: %d turn(s) held in memory, not saved: %s", session.id,
                      len(turns), e)
            if not held:
                self._publish_status(f"what is heard is not saved yet: {e}")
            return
        if held:
            log.info("session %d: %d held turn(s) saved", session.id, len(held))
            self._publish_status(f"{len(held)} held turn(s) saved")
        self.turns += len(stored)
        for turn in stored:
            self._publish(turn)
        self._unindexed.setdefault(session.id, []).extend(t.id for t in stored)
        self._to_index.unpark_all()

    async def _index_turns_shown(self) -> None:
        """Embed the turns stored live after they are shown, off the speech path (the next
        utterance is not held for them); those a stop leaves are embedded at the next start."""
        while True:
            while not self._unindexed:
                await self._to_index.park()
            await self._index_pending()

    async def _index_pending(self) -> None:
        async with self._indexing:
            while self._unindexed:
                session_id, ids = self._unindexed.popitem()
                await self._db(partial(self.store.index_turns, session_id, ids))

    # -- sessions ------------------------------------------------------------------------------

    async def _space(self, name: str | None) -> Space | None:
        return None if name is None else await self._db(lambda: self.store.get_space(name))

    async def _begin(
        self, space: Space | None, activity: str, title: str, started_at: float
    ) -> Session:
        session = await self._db(
            lambda: self.store.create_session(
                space_id=None if space is None else space.id,
                activity=activity or None,
                title=title,
                started_at=started_at,
            )
        )
        self.session, self.space, self._last_speech = session, space, None
        # a daemon that does not capture (turns come another way) keeps no receipt
        self.receipt = self._new_receipt(session.started_at) if self.capture_enabled else None
        self._session_changed.unpark_all()
        self._publish(Began(session_id=session.id, started_at=session.started_at,
                            space=None if space is None else space.name,
                            activity=session.activity, title=session.title))
        log.info("session %d started%s", session.id, "" if space is None else f" in {space.name}")
        await self._carry_forward(session, space)
        return session

    async def _carry_forward(self, session: Session, space: Space | None) -> None:
        """Say what earlier sessions of the Space left open ("3 open from last time"): a
        Carried event, kept for what the start answers. Never fails a start."""
        self.carried = None
        if space is None:
            return
        try:
            self.carried = await self._db(lambda: self._carried(session, space))
        except StoreError as e:
            log.warning("could not read what is open in %s: %s", space.name, e)
        if self.carried is not None:
            self._publish(self.carried)

    def _carried(self, session: Session, space: Space) -> Carried | None:
        carried = open_items.carried_forward(self.store, session)
        return None if carried is None else Carried(space=space.name, forward=carried)

    async def start(self, options: StartOptions) -> Started:
        """Start a session now; when one is live, give it these details instead."""
        space = await self._space(options.space)
        activity = options.activity or (space.activity if space is not None else "meeting")
        check_start(activity, None if space is None else space.name)
        async with self._lock:
            if self._closing:
                raise InvalidInput("the live session is ending", fix="try again in a moment")
            continued = self.session is not None
            if self.session is None:
                session = await self._begin(space, options.activity, options.title, self.clock())
                self._auto.forget()
            else:
                session = await self._amend(self.session, space, options)
        remembered = space is None or space.memory_enabled
        carried = self.carried if self.carried and self.carried.session_id == session.id else None
        return Started(
            session_id=session.id,
            started_at=session.started_at,
            message=start_message(session.id, None if space is None else space.name, remembered,
                                  continued=continued),
            space=None if space is None else space.name,
            activity=session.activity,
            title=session.title,
            carried=carried,
        )

    async def _amend(self, session: Session, space: Space | None,
                     options: StartOptions) -> Session:
        """File the live session into ``space`` and give it the title and activity asked for."""
        if space is not None and session.space_id != space.id:
            await self._db(lambda: self.store.file_session(session.id, space.id))
            self.space = space
            await self._carry_forward(session, space)
        session = await self._db(
            lambda: self.store.update_session(
                session.id,
                title=options.title or None,
                activity=options.activity or (space.activity if space is not None else None),
            )
        )
        self.session = session
        return session

    async def stop(self) -> Ended:
        """End the live session once everything said until now is in it."""
        async with self._lock:
            if self.session is None or self._closing:
                raise InvalidInput("no session is live", fix="start one with `braincue start`")
            session = self.session
            self._closing = True
        until = self.clock()
        try:
            pipeline = self.pipeline
            if pipeline is not None:
                with trio.move_on_after(SETTLE_TIMEOUT_S) as waited:
                    await pipeline.settle(until)
                if waited.cancelled_caught:  # never silently: what is still queued is not kept
                    log.warning("session %d ends with %d utterance(s) not yet transcribed, which "
                                "it will not hold: transcription is %.0f s behind", session.id,
                                pipeline.queued, pipeline.lag())
            async with self._lock:
                reply = await self._end(self.session or session, until)
                # the conversation just stopped must not start again by itself: wait for a
                # silence as long as the one that ends a session
                silence_s = self._settings().auto_end_silence_min * 60
                self._auto.stopped_by_hand(until, max(START_WINDOW_S, silence_s))
                return reply
        finally:
            self._closing = False

    async def _end(self, session: Session, ended_at: float) -> Ended:
        ended_at = max(ended_at, session.started_at)
        await self._save(session, [])
        await self._index_pending()  # a search right after the end finds every turn
        receipt = self._final_receipt(ended_at)
        if receipt is not None:
            try:
                await self._db(partial(save_receipt, self.store, session.id, receipt))
            except StoreError as e:  # the session ends all the same
                log.warning("could not save the receipt of session %d: %s", session.id, e)
        await self._db(lambda: self.store.end_session(session.id, ended_at=ended_at))
        space = self.space
        self.session, self.space = None, None
        self._session_changed.unpark_all()
        turns = await self._db(lambda: self.store.turns(session.id))
        ended = Ended(
            session_id=session.id,
            duration_s=ended_at - session.started_at,
            gist=gist([t.text for t in turns]),
            turns=len(turns),
            space=None if space is None else space.name,
            speakers=speakers_of(turns),
            receipt=receipt,
        )
        self._publish(ended)
        log.info("session %d ended after %.0f s, %d turns", session.id, ended.duration_s,
                 len(turns))
        return ended

    async def _end_when_silent(self) -> None:
        """End the live session after ``auto_end_silence_min`` minutes without speech."""
        while True:
            due = None
            if self.session is not None and not self._closing:
                silence_s = self._settings().auto_end_silence_min * 60
                due = end_due(self.session.started_at, self._last_speech, silence_s)
            if due is not None and self.clock() >= due:
                async with self._lock:
                    if self.session is not None and not self._closing:
                        session = self.session
                        try:
                            await self._end(session, self._last_speech or session.started_at)
                        except Exception:  # the daemon goes on; the next start ends it
                            log.exception("could not end session %d after silence", session.id)
                            self.session = None
                continue
            wait = math.inf if due is None else due - self.clock()
            with trio.move_on_after(wait):
                await self._session_changed.park()

    # -- status --------------------------------------------------------------------------------

    def is_live(self) -> bool:
        return self.session is not None

    def hearing(self) -> bool:
        """Whether someone is speaking or what they said is still being transcribed: work that
        can wait (the language model reading the conversation ahead) waits for a pause, so
        that it never delays the next turn."""
        return self.pipeline is not None and self.pipeline.busy()

    async def wait_for_session(self) -> None:
        """Return once a session is live (at once when one is)."""
        while self.session is None:
            await self._session_changed.park()

    async def wait_until_no_session(self) -> None:
        """Return once no session is live (at once when none is): background work such as a
        keep waits here so as not to slow a call down."""
        while self.session is not None:
            await self._session_changed.park()

    def status(self) -> LiveState:
        if self.paused:
            sources: dict[str, SourceState] = {s: SourceState(state="paused") for s in SOURCES}
        elif self.captures:
            sources = {
                c.source: SourceState(state=c.state, device=c.device_name, detail=c.detail)
                for c in self.captures
            }
        else:
            sources = {s: SourceState(state="off") for s in SOURCES}
        pipeline = self.pipeline
        return LiveState(
            sources=sources,
            utterances_queued=0 if pipeline is None else pipeline.queued,
            asr_lag_s=0.0 if pipeline is None else round(pipeline.lag(), 2),
            dropped_blocks=0 if pipeline is None else pipeline.dropped_blocks,
            asr_real_time_factor=0.0 if pipeline is None else round(
                pipeline.real_time_factor(), 3),
            asr_model="" if self._transcriber is None else self._transcriber.model_id,
            session_id=None if self.session is None else self.session.id,
            stages_p50_s={} if pipeline is None else pipeline.stages.medians(),
            after_asr_max_s=0.0 if pipeline is None else pipeline.stages.after_asr_max(),
        )

    def capture_state(self) -> str:
        """One word when both sources agree (capturing, no audio, off), else each."""
        states = {name: s.state for name, s in self.status().sources.items()}
        if len(set(states.values())) == 1:
            return next(iter(states.values()))
        return ", ".join(f"{name} {state}" for name, state in states.items())

    # -- import --------------------------------------------------------------------------------

    def _import_voices(self, options: ImportOptions) -> Voices | None:
        """The voices that tell the speakers of a mono import (or a stereo one's "them") apart,
        when asked and able."""
        if not options.voices or self.voices is None:
            return None
        if not self.voices.enabled():
            log.warning("importing %s as one speaker: voices %s", options.path,
                        self.voices.status())
            return None
        return self.voices

    async def import_audio(self, options: ImportOptions,
                           progress: Callable[[ImportedSoFar], None]) -> Imported:
        """Transcribe an audio file into a new, ended session (mono: one speaker, or its
        voices told apart; stereo: left "me", right "them", whose voices are told apart as a
        live call's are), telling ``progress`` after each utterance; the ending is
        published as a live session's is."""
        path = options.path
        check_import(options)
        space = await self._space(options.space)
        activity = options.activity or (space.activity if space is not None else "meeting")
        check_start(activity, None if space is None else space.name)
        transcriber = self._require_speech_model()
        channels = await self._db(lambda: load_audio_channels(path))
        if options.stereo and channels.shape[0] != 2:
            raise InvalidInput(
                f"--stereo needs a file with two channels; {path.name} has {channels.shape[0]}",
                fix="import it without --stereo",
            )
        duration = channels.shape[1] / SAMPLE_RATE
        if duration == 0:
            raise InvalidInput(f"{path.name} holds no audio")
        tracks = (
            [("me", channels[0]), ("them", channels[1])]
            if options.stereo
            else [(options.speaker.strip(), channels.mean(axis=0))]
        )
        warnings = track_warnings(tracks, path)
        utterances = await self._db(lambda: segment_tracks(tracks, self.vad))
        started_at = (
            options.started_at if options.started_at is not None
            else path.stat().st_mtime - duration
        )
        session = await self._db(
            lambda: self.store.create_session(
                space_id=None if space is None else space.id,
                activity=options.activity or None,
                title=options.title or path.stem,
                started_at=started_at,
            )
        )
        turns = 0
        texts: list[str] = []
        voices = self._import_voices(options)
        self._importing += 1
        try:
            for speaker, utterance in utterances:
                segments = await transcriber.transcribe(utterance.audio)
                self._speech_used_at = trio.current_time()
                text = text_of(segments)
                if not is_phantom(text):
                    said = Said("loopback", utterance.start, utterance.end, text,
                                utterance.audio, segments)
                    parts = (None if voices is None or (options.stereo and speaker == "me")
                             else await self._voices_of(session.id, said))
                    new = imported_turns(speaker, utterance, text, parts)
                    await self._db(partial(self.store.append_turns, session.id, new))
                    turns += len(new)
                    texts.append(text)
                progress(ImportedSoFar(done_s=utterance.end, total_s=duration, turns=turns))
        finally:
            self._importing -= 1
            with trio.CancelScope(shield=True):
                await self._db(lambda: self.store.end_session(
                    session.id, ended_at=started_at + duration))
        progress(ImportedSoFar(done_s=duration, total_s=duration, turns=turns))
        space_name = None if space is None else space.name
        speakers = speakers_of(await self._db(lambda: self.store.turns(session.id)))
        self._publish(Ended(session_id=session.id, duration_s=duration, gist=gist(texts),
                            turns=turns, space=space_name, speakers=speakers))
        summary = capture_summary(space_name, space is None or space.memory_enabled)
        return Imported(
            session_id=session.id,
            turns=turns,
            duration_s=duration,
            message=f"imported {turns} turns into session {session.id}: {summary}",
            warnings=warnings,
        )


def track_warnings(tracks: Sequence[tuple[str, np.ndarray]], path: Path) -> list[str]:
    """What is said of the level of each track of the file ``path`` (too quiet, clipped)."""
    return [w for name, audio in tracks
            if (w := level_warning(audio, path.name if len(tracks) == 1
                                   else f"the {name} channel of {path.name}")) is not None]


def imported_turns(speaker: str, utterance: Utterance, text: str,
                   parts: Sequence[VoiceSaid] | None) -> list[NewTurn]:
    """The turns one imported utterance becomes: one of ``speaker``, or (``parts``) one per
    voice heard in it, each within the utterance."""
    if parts is None:
        return [NewTurn(speaker=speaker, text=text, start=utterance.start, end=utterance.end,
                        source="import")]
    return [NewTurn(speaker=p.speaker, text=p.text,
                    start=min(utterance.end, utterance.start + p.start),
                    end=min(utterance.end, utterance.start + p.end),
                    source="import", voice_label=p.voice, voice_id=p.voice_id)
            for p in parts]


def check_import(options: ImportOptions) -> None:
    """An import's file is named by its full path, and a mono file without voices told apart
    is said by someone named."""
    if not options.path.is_absolute():
        raise InvalidInput(f"path: {str(options.path)!r} is not absolute",
                           fix="clients pass the file's full path")
    if not options.stereo and not options.voices and not options.speaker.strip():
        raise InvalidInput("speaker: the speaker of a mono import needs a name")

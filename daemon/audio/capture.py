"""Capture threads: the default microphone ("me") and the loopback of the default output
("them"), as 16 kHz mono float32 blocks of 100 ms (500 ms or, between calls, 1 s while nobody
speaks).

`soundcard` connects to the audio server when it is imported and raises a bare AssertionError
when none runs (notes/platform.md), so it is imported only inside the capture threads and a
missing server is a state ("no audio"), never a crash. When the server or the device goes away
the thread retries with backoff and resumes; a change of the default device is followed.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from types import ModuleType
from typing import Any, Literal

import numpy as np
import trio

from daemon.audio import _pulse
from daemon.audio.format import SAMPLE_RATE

log = logging.getLogger(__name__)

BLOCK = 1600  # 100 ms
# while nobody speaks, audio is read this much at a time (the capture thread then sleeps
# between reads): a fraction of the wake-ups, and the first word after a quiet stretch is
# heard at most this late, long before its end is ...
QUIET_BLOCK = 8000  # 500 ms
# ... and between calls this much: the first utterance of a call, when it is short, may then
# be cut up to 0.2 s later; never inside one, where a short reply must not wait
IDLE_BLOCK = 16000  # 1 s
PRESENT_CHECK_S = 1.0  # a device chosen by name is looked for this often ...
DEFAULT_CHECK_S = 3.0  # ... and a change of the default device this often
Source = Literal["mic", "loopback"]
SPEAKER: dict[Source, str] = {"mic": "me", "loopback": "them"}
CaptureState = Literal["stopped", "starting", "capturing", "no audio"]


@dataclass(frozen=True)
class Block:
    """100 ms of audio from one source (more while it is quiet); ``t`` is the wall-clock
    time of its first sample and ``epoch`` changes whenever the device was (re)opened, so a gap
    is never mistaken for continuous audio."""

    source: Source
    t: float
    epoch: int
    samples: np.ndarray


# -- the soundcard connection, shared by the capture threads ----------------------------------

_connection_lock = threading.Lock()
_generation = 0


def _soundcard(failed_generation: int | None = None) -> tuple[ModuleType, int]:
    """Import soundcard (connecting to the server); after a failure, reconnect once."""
    global _generation
    with _connection_lock:
        try:
            import soundcard  # connects at import: only ever inside capture threads

            _guard_queries()
            if failed_generation is not None and failed_generation == _generation:
                from soundcard import pulseaudio

                pulseaudio._pulse = pulseaudio._PulseAudio()
                _generation += 1
        except AssertionError as e:  # soundcard's way of saying "no server"
            _free_failed_connection(e)
            raise
        return soundcard, _generation


def _guard_queries() -> None:
    """Make a query on a dead connection raise instead of aborting the process.

    soundcard unreferences the operation a query returns without checking it; on a connection
    that has just died it is NULL and libpulse aborts. :func:`_check_connected` narrows the
    window, this closes it: the query then fails as a Python exception in the capture thread.
    """
    from soundcard import pulseaudio

    cls = pulseaudio._PulseAudio
    if getattr(cls, "_braincue_guarded", False):
        return
    unref = cls._pa_operation_unref

    def checked_unref(self: Any, operation: Any) -> None:
        if operation == pulseaudio._ffi.NULL:
            raise ConnectionError("the audio server connection is gone")
        unref(self, operation)

    cls._pa_operation_unref = checked_unref
    cls._braincue_guarded = True


def _free_failed_connection(error: AssertionError) -> None:
    """Stop the mainloop thread and free the context of a connection attempt that failed.

    ``_PulseAudio()`` starts a mainloop thread before it asserts that the context connected, and
    nothing stops it: without this every retry while the server is away leaks a thread and
    three file descriptors (measured), and the daemon runs out of descriptors within hours.
    The half-built object is only reachable from the failed ``__init__`` frame.
    """
    tb = error.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        pulse: Any = frame.f_locals.get("self")
        if frame.f_code.co_name == "__init__" and type(pulse).__name__ == "_PulseAudio":
            pa = frame.f_globals["_pa"]
            pa.pa_threaded_mainloop_stop(pulse.mainloop)
            pa.pa_context_unref(pulse.context)
            pa.pa_threaded_mainloop_free(pulse.mainloop)
            return
        tb = tb.tb_next


def _check_connected() -> None:
    """Raise unless the server connection is up.

    soundcard unreferences a NULL operation when a query runs on a dead connection, and
    libpulse then aborts the whole process; checking the context state first keeps a vanished
    server an exception in this thread.
    """
    from soundcard import pulseaudio

    pulse = pulseaudio._pulse
    state = pulse._pa_context_get_state(pulse.context)
    if state != pulseaudio._pa.PA_CONTEXT_READY:
        raise ConnectionError("the audio server connection is gone")


def _open_device(sc: ModuleType, source: Source, device: str) -> Any:
    _check_connected()
    if source == "mic":
        return sc.get_microphone(id=device) if device else sc.default_microphone()
    name = device or str(sc.default_speaker().name)
    return sc.get_microphone(id=name, include_loopback=True)


class DeviceGone(Exception):
    """The device being recorded went away (the server connection is fine)."""


def _present(sc: ModuleType, source: Source, device: str) -> bool:
    """Whether the device named ``device`` is still there."""
    try:
        _open_device(sc, source, device)
    except IndexError:  # soundcard's "no such device"
        return False
    return True


def _current_default(sc: ModuleType, source: Source) -> str:
    """The id of the default device now: one query of the server (``default_microphone()``
    lists every device to find it)."""
    from soundcard import pulseaudio

    _check_connected()
    info = pulseaudio._pulse.server_info
    return str(info["default source id" if source == "mic" else "default sink id"])


@dataclass(eq=False)
class CaptureThread:
    """Records one source on its own thread and hands each block to ``deliver``.

    ``deliver`` must not block (see :class:`BlockChannel`); ``on_state`` is told of every
    state change with a human-readable detail; ``read_frames`` says how much audio to read
    next (:data:`BLOCK`, or more while nobody is heard: :data:`QUIET_BLOCK`,
    :data:`IDLE_BLOCK`). ``device`` is empty for
    the system default; ``state`` and ``detail`` say what capture does now, ``device_name``
    what it records from, ``blocks`` how many it delivered and ``epoch`` which opening of the
    device they came from.
    """

    source: Source
    deliver: Callable[[Block], None]
    _: KW_ONLY
    device: str = ""
    on_state: Callable[[Source, CaptureState, str], None] | None = None
    read_frames: Callable[[], int] = lambda: BLOCK
    max_backoff_s: float = 10.0
    state: CaptureState = field(default="stopped", init=False)
    detail: str = field(default="", init=False)
    device_name: str = field(default="", init=False)
    blocks: int = field(default=0, init=False)
    epoch: int = field(default=0, init=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive() and not self._stop.is_set():
            return
        # A new thread with its own stop flag: a previous one may still be blocked in a
        # recorder that stopped delivering, and must not be revived by clearing its flag.
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(self._stop,), name=f"capture-{self.source}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 3.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._set_state("stopped", "")

    def _set_state(self, state: CaptureState, detail: str) -> None:
        if (state, detail) == (self.state, self.detail):
            return
        self.state, self.detail = state, detail
        if state == "no audio":
            log.warning("capture %s: no audio (%s)", self.source, detail)
        else:
            log.info("capture %s: %s %s", self.source, state, detail)
        if self.on_state is not None:
            self.on_state(self.source, state, detail)

    def _run(self, stop: threading.Event) -> None:
        backoff = 0.5
        generation: int | None = None
        failed = reconnect = False
        while not stop.is_set():
            if not failed:
                self._set_state("starting", "")
            try:
                sc, generation = _soundcard(generation if reconnect else None)
                device = _open_device(sc, self.source, self.device)
                default_at_open = "" if self.device else _current_default(sc, self.source)
                self.epoch += 1  # never reused, even when the thread is started again
                failed = False
                self._record(sc, device, default_at_open, self.epoch, stop)
                backoff = 0.5  # a clean return: the default device changed, reopen at once
            except Exception as e:  # the server or device went away: a state, not a crash
                failed = True
                # a device that is gone leaves the connection (which the other source's
                # capture shares) as it is; anything else may be a dead connection
                reconnect = not isinstance(e, DeviceGone | IndexError)
                # soundcard says "no server" with a bare AssertionError
                reason = "no audio server" if isinstance(e, AssertionError) else str(e) or repr(e)
                self._set_state("no audio", reason)
                stop.wait(backoff)
                backoff = min(backoff * 2, self.max_backoff_s)

    def _record(
        self, sc: ModuleType, device: Any, default_at_open: str, epoch: int, stop: threading.Event
    ) -> None:
        self.device_name = str(device.name)
        with device.recorder(samplerate=SAMPLE_RATE, channels=1, blocksize=BLOCK) as recorder:
            self._set_state("capturing", self.device_name)
            clock = BlockClock()
            checked = {"present": time.monotonic(), "default": time.monotonic()}
            callback = True  # soundcard's read callback on the stream
            while not stop.is_set():
                frames = self.read_frames()
                if callback != (frames == BLOCK):  # only soundcard's record waits for it
                    _pulse.read_callback(recorder, on=not callback)
                    callback = not callback
                read = _read_quiet(recorder, frames, stop) if frames != BLOCK else None
                if read is None and stop.is_set():
                    return
                data = recorder.record(numframes=frames) if read is None else read[:, None]
                samples = np.ascontiguousarray(data[:, 0], dtype=np.float32)
                t = clock.stamp(len(samples), time.time())
                self.deliver(Block(self.source, t, epoch, samples))
                self.blocks += 1
                now = time.monotonic()
                # notice that a device chosen by name went away (the server moves its stream
                # to another device, which must not be heard as this one)
                if self.device and now - checked["present"] >= PRESENT_CHECK_S:
                    checked["present"] = now
                    if not _present(sc, self.source, self.device):
                        raise DeviceGone(f"{self.device_name} is gone")
                # follow a change of the default device
                if default_at_open and now - checked["default"] >= DEFAULT_CHECK_S:
                    checked["default"] = now
                    if _current_default(sc, self.source) != default_at_open:
                        log.info("capture %s: default device changed, reopening", self.source)
                        return


def _read_quiet(recorder: Any, frames: int, stop: threading.Event) -> np.ndarray | None:
    """``frames`` samples of ``recorder``, waited for by the clock and then taken in one hold
    of the server connection's lock: soundcard's ``record`` wakes for each 100 ms fragment the
    server hands over and makes three locked calls and a copy for it, which while nobody
    speaks is most of what capture costs. Waiting half a fragment longer than the audio asked
    for, one wake-up reads it (what came beyond it starts the next read). None where the
    stream cannot be read this way (soundcard's ``record`` then reads it), or when ``stop``
    is set."""
    parts = [np.asarray(getattr(recorder, "_pending_chunk", ()), dtype=np.float32).ravel()]
    have, waited = len(parts[0]), 0.0
    while have < frames:
        wait = (max(frames - have, BLOCK) + BLOCK // 2) / SAMPLE_RATE  # never a spin
        if stop.wait(wait):
            return None
        chunk = _pulse.drain(recorder)
        if chunk is None:
            return None
        waited = 0.0 if len(chunk) else waited + wait
        if waited >= 1.0:  # nothing for a second: say why, as soundcard's record does
            _check_stream(recorder)
            waited = 0.0
        parts.append(chunk)
        have += len(chunk)
    samples = np.concatenate(parts)
    recorder._pending_chunk = samples[frames:]
    return samples[:frames]


def _check_stream(recorder: Any) -> None:
    """Raise when nothing came because the stream or the connection failed (soundcard's
    ``record`` raises the same after a second without data)."""
    from soundcard import pulseaudio

    _check_connected()
    if pulseaudio._pulse._pa_stream_get_state(recorder.stream) == pulseaudio._pa.PA_STREAM_FAILED:
        raise RuntimeError("Recording failed, stream is in status FAILED")


class BlockClock:
    """Wall-clock times of recorded blocks, counted in frames.

    The first frames arrive about a second after a recorder opens, and they are fresh audio,
    not a backlog: time is anchored at the arrival of the first block, then advanced by the
    frames counted, which is steadier than the arrival times. When the count falls behind the
    wall clock by more than ``resync_s`` (the server dropped audio, or the machine slept), it
    is anchored again.
    """

    def __init__(self, resync_s: float = 2.0) -> None:
        self.resync_s = resync_s
        self._anchor: float | None = None
        self._frames = 0

    def stamp(self, frames: int, arrived: float) -> float:
        """The time of the first sample of a block of ``frames`` that has just ``arrived``."""
        start = self._frames / SAMPLE_RATE
        self._frames += frames
        if self._anchor is None or arrived - (self._anchor + self._frames / SAMPLE_RATE) > (
            self.resync_s
        ):
            self._anchor = arrived - self._frames / SAMPLE_RATE
        return self._anchor + start


class BlockChannel:
    """A bounded trio memory channel fed from a capture thread that never blocks it.

    When the consumer falls behind, the oldest block is dropped, counted and handed to
    ``on_drop``.
    """

    def __init__(self, capacity: int, token: trio.lowlevel.TrioToken | None = None,
                 on_drop: Callable[[Block], None] | None = None) -> None:
        self._token = token or trio.lowlevel.current_trio_token()
        self._send, self.receive = trio.open_memory_channel[Block](capacity)
        self.dropped = 0
        self.on_drop = on_drop

    def put_threadsafe(self, block: Block) -> None:
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(self.put, block)

    def put(self, block: Block) -> None:
        """Queue ``block`` (from the trio thread), dropping the oldest one when full."""
        try:
            self._send.send_nowait(block)
        except trio.WouldBlock:
            try:
                lost = self.receive.receive_nowait()
                self.dropped += 1
                if self.on_drop is not None:
                    self.on_drop(lost)
            except trio.WouldBlock:
                pass
            self._send.send_nowait(block)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    def pending(self) -> int:
        return self._send.statistics().current_buffer_used

    def close(self) -> None:
        self._send.close()

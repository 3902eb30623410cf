"""Two libpulse calls on a soundcard recorder's stream that soundcard does not make: taking
everything readable in one hold of the lock, and taking its read callback off.

soundcard's bindings declare only the functions it calls itself, so these go to libpulse
through ctypes, on the stream soundcard opened and under its threaded mainloop's lock (every
call on a stream from outside the mainloop thread must hold it: pulse/thread-mainloop.h).
Where libpulse cannot be loaded, or the recorder is not soundcard's PulseAudio one, nothing is
asked and the callers read as soundcard does.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Any, NamedTuple

import numpy as np


class _Lib(NamedTuple):
    peek: Any
    drop: Any
    set_read_callback: Any


@functools.cache
def _lib() -> _Lib | None:
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("pulse") or "libpulse.so.0")
    except OSError:
        return None
    stream = ctypes.c_void_p
    lib.pa_stream_peek.restype = ctypes.c_int
    lib.pa_stream_peek.argtypes = [stream, ctypes.POINTER(ctypes.c_void_p),
                                   ctypes.POINTER(ctypes.c_size_t)]
    lib.pa_stream_drop.restype = ctypes.c_int
    lib.pa_stream_drop.argtypes = [stream]
    lib.pa_stream_set_read_callback.argtypes = [stream, ctypes.c_void_p, ctypes.c_void_p]
    return _Lib(lib.pa_stream_peek, lib.pa_stream_drop, lib.pa_stream_set_read_callback)


def _stream(recorder: Any) -> tuple[_Lib, int, Any] | None:
    """libpulse, ``recorder``'s stream as an address, and soundcard's connection."""
    lib = _lib()
    stream = getattr(recorder, "stream", None)
    if lib is None or stream is None:
        return None
    from soundcard import pulseaudio

    return lib, int(pulseaudio._ffi.cast("uintptr_t", stream)), pulseaudio._pulse


def drain(recorder: Any) -> np.ndarray | None:
    """All the float32 mono samples ``recorder``'s stream holds now (possibly none), in one
    hold of the lock; None where the stream cannot be read this way.

    ``pa_stream_peek`` gives the next fragment, NULL with a length for a hole in the
    recording (given as silence, as soundcard does) and a length of 0 when nothing is left
    (pulse/stream.h)."""
    found = _stream(recorder)
    if found is None:
        return None
    lib, stream, pulse = found
    data, nbytes = ctypes.c_void_p(), ctypes.c_size_t()
    parts: list[np.ndarray] = []
    with pulse._lock_mainloop():
        while lib.peek(stream, ctypes.byref(data), ctypes.byref(nbytes)) == 0 and nbytes.value:
            if data.value:
                parts.append(np.frombuffer(ctypes.string_at(data.value, nbytes.value),
                                           dtype=np.float32))
            else:
                parts.append(np.zeros(nbytes.value // 4, dtype=np.float32))
            lib.drop(stream)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)


def read_callback(recorder: Any, on: bool) -> bool:
    """Take soundcard's read callback off ``recorder``'s stream, or put it back: it runs
    Python on the mainloop thread for each fragment, to wake a ``record`` that waits, which
    a reader going by the clock does not need; False where it could not be done."""
    found = _stream(recorder)
    callback = getattr(recorder, "_callback", None)
    if found is None or callback is None:
        return False
    lib, stream, pulse = found
    from soundcard import pulseaudio

    address = int(pulseaudio._ffi.cast("uintptr_t", callback)) if on else None
    with pulse._lock_mainloop():
        lib.set_read_callback(stream, address, None)
    if on:
        recorder._record_event.set()  # whatever came meanwhile is looked at
    return True

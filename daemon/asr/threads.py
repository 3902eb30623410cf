"""How many threads whisper gets: the cores that other work leaves free, at least one.

whisper.cpp's threads meet at a barrier after every layer, so one thread that loses its core to
another program stalls all of them: on two cores with one busy elsewhere, two threads ran 10-20x
slower than one (notes/platform.md). Two threads on an idle machine halve the time of an
utterance. So the count follows what the machine did while whisper was *not* running (the gap
since its last call): that is the load whisper will compete with. Live, the daemon chooses
(:class:`daemon.live.pipeline.Pipeline`) and starts that gap again when someone begins to
speak: its own work that waits for a pause (the model reading ahead) stops then, and counted,
it had whisper take one thread of two on an idle machine. Work at a lower priority
(``nice``) counts too: nice 5 still takes a third of a core from whisper, and on a shared
machine whose other work ran at nice 5-19, the live run that counted it as idle transcribed
slower than one fixed thread (bench.live, real-time factor 1.85 against 1.54).

Linux reads ``/proc/stat``; elsewhere the chooser answers one thread less than the cores.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from pathlib import Path

PROC_STAT = Path("/proc/stat")
MIN_GAP_S = 0.25  # a shorter idle gap says too little: the last estimate stands
# less than half a core of other work in bursts (the audio server and the call itself while
# someone speaks: 0.1-0.6 cores, bench.live) is not a competitor: the thread sharing its core
# still runs more than half the time, and two threads finish before one. At 0.3, one thread of
# two was taken for a third of a call's turns, ASR p50 0.85-0.97 s against 0.83 s on two
SLACK_CORES = 0.5


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def threads_for(cores: int, busy_elsewhere: float, cap: int | None = None) -> int:
    """Threads for ``cores`` of which ``busy_elsewhere`` (in cores) run other work."""
    free = cores - max(0, math.ceil(busy_elsewhere - SLACK_CORES))
    return max(1, min(free, cap or cores))


def read_busy_ticks(stat: Path = PROC_STAT) -> tuple[int, int] | None:
    """(busy, total) clock ticks of all CPUs since boot (niced work is busy)."""
    try:
        line = stat.read_text().split("\n", 1)[0]
    except OSError:
        return None
    fields = [int(v) for v in line.split()[1:]]
    if len(fields) < 4:
        return None
    user, nice, system, idle, *rest = fields
    iowait, irq, softirq, steal = [*rest, 0, 0, 0, 0][:4]
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait


def read_own_ticks(stat: Path = Path("/proc/self/stat")) -> int | None:
    """Clock ticks this process has run (user + system, all its threads) since it started."""
    try:
        text = stat.read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after the name, which may hold spaces
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))


class ThreadChooser:
    """Picks a thread count before each call from the load seen since the previous one ended.

    ``cap`` bounds the count (None: all cores). Call :meth:`choose` when a transcription
    starts and :meth:`finished` when it ends. ``own`` (the ticks of the process choosing, e.g.
    :func:`read_own_ticks`): its own work is left out of the load — a daemon whose work beside
    whisper runs before or after it (telling voices apart, storing, capture) competes with
    nobody.
    """

    def __init__(
        self,
        cap: int | None = None,
        *,
        cores: int | None = None,
        ticks: Callable[[], tuple[int, int] | None] = read_busy_ticks,
        clock: Callable[[], float] = time.monotonic,
        own: Callable[[], int | None] | None = None,
    ) -> None:
        self.cores = cores or cpu_count()
        self.cap = cap
        self._ticks = ticks
        self._clock = clock
        self._own = own
        self.busy_elsewhere = max(0.0, self.cores - 1.0)  # until measured: one core busy
        self._since: tuple[float, tuple[int, int], int] | None = None
        self.finished()  # the first call measures from here

    def choose(self) -> int:
        now, ticks, own = self._clock(), self._ticks(), self._own_ticks()
        if self._since is not None and ticks is not None:
            began, before, own_before = self._since
            busy, total = ticks[0] - before[0], ticks[1] - before[1]
            busy = max(0, busy - (own - own_before))
            if now - began >= MIN_GAP_S and total > 0:
                self.busy_elsewhere = self.cores * busy / total
        return threads_for(self.cores, self.busy_elsewhere, self.cap)

    def finished(self) -> None:
        ticks = self._ticks()
        self._since = None if ticks is None else (self._clock(), ticks, self._own_ticks())

    def _own_ticks(self) -> int:
        return (self._own() if self._own is not None else None) or 0

"""A keep's model runs behind everything else, on the real small model: the background engine's
thread and the threads llama.cpp starts from it (its OpenMP pool) all run at nice 19, read from
/proc like `top` does; the foreground engine's do not."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from daemon.engines import BACKGROUND_NICE
from daemon.llm import ChatMessage, LlamaGenerator, ModelLoad

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sys.platform != "linux", reason="nice is per thread on Linux")]

ModelPath = Callable[[str], Path]


class Word(msgspec.Struct):
    word: str


def thread_nices() -> dict[int, int]:
    """This process's threads: id -> nice value (field 19 of /proc/self/task/ID/stat)."""
    found = {}
    for stat in Path("/proc/self/task").glob("*/stat"):
        try:
            found[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[16])
        except (OSError, ValueError):
            continue  # ended meanwhile
    return found


async def threads_of(make: Callable[[], LlamaGenerator]) -> dict[int, int]:
    """The threads that appeared while the generator ``make()`` returns started, loaded and
    answered, with their nice values."""
    before = set(thread_nices())
    generator = make()
    seen: dict[int, int] = {}
    stop = threading.Event()

    def watch() -> None:  # compute threads may end with the call: look while it runs too
        while not stop.wait(0.005):
            seen.update({t: n for t, n in thread_nices().items() if t not in before})

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        await generator.generate([ChatMessage("user", "Give one English word.")], Word,
                                 max_tokens=12)
        seen.update({t: n for t, n in thread_nices().items() if t not in before})
    finally:
        stop.set()
        watcher.join()
        generator.close()
    seen.pop(watcher.native_id or -1, None)
    return seen


async def test_the_background_engine_and_its_llama_threads_run_at_nice_19(
    installed_model: ModelPath,
) -> None:
    base = os.getpriority(os.PRIO_PROCESS, 0)
    path = installed_model("qwen2.5-coder-0.5b")
    started = await threads_of(
        lambda: LlamaGenerator(ModelLoad(path, threads=2, n_ctx=512, nice=BACKGROUND_NICE)))
    # the engine's own thread and at least one compute thread of llama.cpp (2 threads asked)
    assert len(started) >= 2, started
    assert set(started.values()) == {min(19, base + BACKGROUND_NICE)}, started

    started = await threads_of(lambda: LlamaGenerator(ModelLoad(path, threads=2, n_ctx=512)))
    assert len(started) >= 2 and set(started.values()) == {base}, started

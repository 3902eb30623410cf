"""What the benchmarks share: where the models are, and the machine's state."""

from __future__ import annotations

import math
import os
import warnings
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from daemon.config import Paths

T = TypeVar("T")


def default_models_dir() -> Path:
    """BRAINCUE_MODELS, else the user's models directory."""
    with warnings.catch_warnings():  # the runtime directory is irrelevant here
        warnings.simplefilter("ignore")
        return Paths.resolve().models_dir


def machine() -> str:
    return f"cpu cores {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}"


def model_speed(model: Path, threads: int, read: int = 500, write: int = 32) -> str:
    """What llama.cpp alone does with ``model`` on this machine right now — tokens read and
    written per second — so that timings taken hours apart on a shared host can be compared
    (the same code's keep of ES2006c took 105 s one evening and 178 s the next night)."""
    import importlib
    import time

    importlib.import_module("daemon.llm")  # first: llama.cpp's threads wait as the daemon's do
    from llama_cpp import Llama

    llm = Llama(model_path=str(model), n_ctx=read + write + 8, n_threads=threads, verbose=False)
    try:
        began = time.perf_counter()
        llm.eval(list(range(1000, 1000 + read)))
        reading = time.perf_counter() - began
        began = time.perf_counter()
        for _ in range(write):
            llm.eval([llm.sample(temp=0.0)])
        writing = time.perf_counter() - began
    finally:
        llm.close()
    return (f"llama.cpp alone now: reads {read / reading:.0f} tokens/s, writes "
            f"{write / writing:.1f} tokens/s ({model.name}, {threads} threads)")


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (``share`` in 0..1) of ``values``: p95 of 20 is the 19th."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered), math.ceil(share * len(ordered))) - 1)]


def per_space(rows: Sequence[T], space: Callable[[T], str]) -> list[tuple[str, list[T]]]:
    """``rows`` grouped by their space (conversation or series), in name order, then all of
    them as "all": the rows of a per-space table."""
    groups: dict[str, list[T]] = defaultdict(list)
    for row in rows:
        groups[space(row)].append(row)
    return [*sorted(groups.items()), ("all", list(rows))]

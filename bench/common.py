"""What the benchmarks share: where the models are, and the machine's state."""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

from daemon.config import Paths


def default_models_dir() -> Path:
    """BRAINCUE_MODELS, else the user's models directory."""
    with warnings.catch_warnings():  # the runtime directory is irrelevant here
        warnings.simplefilter("ignore")
        return Paths.resolve().models_dir


def machine() -> str:
    return f"cpu cores {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}"


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (``share`` in 0..1) of ``values``: p95 of 20 is the 19th."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered), math.ceil(share * len(ordered))) - 1)]

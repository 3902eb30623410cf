"""What the benchmarks share: where the models are, and the machine's state."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from daemon.config import Paths


def default_models_dir() -> Path:
    """BRAINCUE_MODELS, else the user's models directory."""
    with warnings.catch_warnings():  # the runtime directory is irrelevant here
        warnings.simplefilter("ignore")
        return Paths.resolve().models_dir


def machine() -> str:
    return f"cpu cores {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}"

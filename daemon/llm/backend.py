"""What llama.cpp runs the embedded language model on: its GPU backend, if it was built with
one, and how many of a model's layers go there (``llm_gpu_layers``)."""

from __future__ import annotations

import functools
import logging
import re
from pathlib import Path

log = logging.getLogger(__name__)

# the names llama.cpp's system information gives its GPU backends
GPU_BACKENDS = ("CUDA", "Metal", "Vulkan", "ROCm", "HIP", "SYCL", "MUSA", "OpenCL", "CANN")


@functools.cache
def gpu_backend() -> str | None:
    """The GPU backend of the installed llama.cpp ("CUDA", "Metal", ...), None when it runs on
    the CPU alone (a GPU backend whose name it does not say is "GPU")."""
    try:
        import llama_cpp
    except ImportError:
        return None
    if not llama_cpp.llama_supports_gpu_offload():
        return None
    info = llama_cpp.llama_print_system_info()
    text = info.decode(errors="replace") if isinstance(info, bytes) else str(info)
    found = [name for name in GPU_BACKENDS if re.search(rf"\b{name}\b", text, re.IGNORECASE)]
    return found[0] if found else "GPU"


def gpu_layers(setting: int) -> int:
    """``n_gpu_layers`` for llama.cpp: ``llm_gpu_layers`` (-1: all layers, llama.cpp's own
    meaning) where there is a GPU backend, else 0."""
    return setting if gpu_backend() is not None else 0


def offloaded(setting: int, layers: int | None) -> int:
    """How many of a model's ``layers`` ``llm_gpu_layers`` puts on the GPU."""
    if layers is None:
        return max(setting, 0)
    return layers if setting < 0 else min(setting, layers)


@functools.lru_cache(maxsize=8)
def gguf_layers(path: Path) -> int | None:
    """The number of layers (``<architecture>.block_count``) of a GGUF model; None when the
    file does not say."""
    from daemon.models.gguf_check import read_header

    try:
        return read_header(path).layers
    except Exception as e:  # a file that does not read: the model's load says why
        log.debug("cannot read the layers of %s: %s", path, e)
        return None

"""What a GGUF language model file says about itself, and whether BrainCue can run it.

:func:`read_header` reads the header (the ``gguf`` package's tensor types): the architecture,
the layers, the context the model was trained for and its chat template; a file that is not
GGUF, or whose tensors run past its end (a download cut short), is a :class:`ModelError`
naming the problem. :func:`check_language_model` adds what a language model needs: a chat
template (BrainCue's prompts are chats), a context of at least :data:`MIN_CONTEXT` tokens, and
an architecture the installed llama.cpp loads (its vocabulary is loaded, not its weights).
"""

from __future__ import annotations

import math
import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daemon.errors import ModelError

MAGIC = b"GGUF"
MIN_CONTEXT = 2048  # an answer's prompt is up to ~1,600 tokens and its answer 128


@dataclass(frozen=True)
class GgufHeader:
    architecture: str
    name: str  # the model's own name (general.name), may be empty
    layers: int | None
    context_length: int | None
    chat_template: str | None


_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
            11: "<q", 12: "<d"}  # GGUF value types -> struct formats (8 string, 9 array)
_STRING, _ARRAY = 8, 9


class _Cursor:
    """Reads GGUF's little-endian values from a mapped file; IndexError past its end."""

    def __init__(self, data: mmap.mmap) -> None:
        self.data = data
        self.at = 0

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.data):
            raise IndexError("the file ends in the middle of its header")
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += size
        return value

    def string(self) -> str:
        n = self.take("<Q")
        if self.at + n > len(self.data):
            raise IndexError("the file ends in the middle of its header")
        text = bytes(self.data[self.at:self.at + n]).decode("utf-8", errors="replace")
        self.at += n
        return text

    def value(self, kind: int) -> Any:
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:  # skipped, kept as its length (the vocabulary: 150k strings)
            item, count = self.take("<I"), self.take("<Q")
            if item == _STRING:
                for _ in range(count):
                    length = self.take("<Q")
                    self.at += length
            else:
                self.at += struct.calcsize(_SCALARS[item]) * count
            return count
        return self.take(_SCALARS[kind])


def read_header(path: Path) -> GgufHeader:
    """The header of the GGUF file ``path``; ModelError when it is not one or is damaged (its
    key-value pairs and tensor table read directly: the ``gguf`` package's reader builds an
    array for every token of the vocabulary, a minute on a busy machine)."""
    try:
        with path.open("rb") as f:
            magic = f.read(4)
            if magic != MAGIC:
                raise ModelError(f"{path.name} is not a GGUF model file (it does not begin "
                                 "with GGUF)", fix="give the path of a .gguf file")
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                cursor = _Cursor(data)
                cursor.at = len(MAGIC)
                fields, end = _read(cursor)
    except OSError as e:
        raise ModelError(f"cannot read {path}: {e.strerror}") from e
    except (IndexError, KeyError, ValueError, struct.error, OverflowError) as e:
        raise ModelError(f"{path.name} is damaged: its GGUF header does not read ({e})",
                         fix="download the file again") from e
    size = path.stat().st_size
    if end > size:
        raise ModelError(f"{path.name} is incomplete: its tensors need {end:,} bytes, the file "
                         f"has {size:,}", fix="download the file again (it was cut short)")
    architecture = str(fields.get("general.architecture") or "")
    if not architecture:
        raise ModelError(f"{path.name} names no architecture (general.architecture)",
                         fix="use a GGUF file written by llama.cpp's converter")

    def number(key: str) -> int | None:
        value = fields.get(f"{architecture}.{key}")
        return int(value) if value is not None else None

    template = fields.get("tokenizer.chat_template")
    return GgufHeader(architecture=architecture, name=str(fields.get("general.name") or ""),
                      layers=number("block_count"), context_length=number("context_length"),
                      chat_template=str(template) if template else None)


def _read(cursor: _Cursor) -> tuple[dict[str, Any], int]:
    """The key-value pairs after the magic, and where the last tensor's data ends."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    version = cursor.take("<I")
    if version < 2:
        raise ValueError(f"GGUF version {version} is older than llama.cpp reads")
    tensors, pairs = cursor.take("<Q"), cursor.take("<Q")
    fields = {}
    for _ in range(pairs):
        key = cursor.string()
        fields[key] = cursor.value(cursor.take("<I"))
    end = 0
    for _ in range(tensors):
        cursor.string()
        dims = [cursor.take("<Q") for _ in range(cursor.take("<I"))]
        block, size = GGML_QUANT_SIZES[GGMLQuantizationType(cursor.take("<I"))]
        offset = cursor.take("<Q")
        end = max(end, offset + math.prod(dims) // block * size)
    alignment = int(fields.get("general.alignment") or 32)
    data_start = -(-cursor.at // alignment) * alignment
    return fields, data_start + end


def check_language_model(path: Path) -> GgufHeader:
    """``path`` read and checked as a language model BrainCue can run (ModelError: why not)."""
    header = read_header(path)
    if not header.chat_template:
        raise ModelError(f"{path.name} has no chat template (tokenizer.chat_template): it is "
                         "not an instruct model, or was converted without its template",
                         fix="use the instruct (chat) version of the model")
    if header.context_length is not None and header.context_length < MIN_CONTEXT:
        raise ModelError(f"{path.name} reads at most {header.context_length} tokens; an "
                         f"answer's prompt needs {MIN_CONTEXT}",
                         fix="use a model with a longer context")
    try:
        from llama_cpp import Llama
        from llama_cpp._utils import suppress_stdout_stderr

        with suppress_stdout_stderr(disable=False):  # llama.cpp's notes about the context
            Llama(str(path), vocab_only=True, verbose=False).close()
    except (ValueError, RuntimeError, OSError) as e:
        raise ModelError(f"llama.cpp cannot load {path.name} (architecture "
                         f"{header.architecture!r}): {e}",
                         fix="use a model of an architecture this llama.cpp supports, or "
                             "update llama-cpp-python") from e
    return header

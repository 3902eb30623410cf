"""Convert Silero VAD's ``silero_vad_16k_op15.onnx`` to the ``.npz`` :mod:`daemon.audio.silero`
reads.

The weights are the ONNX graph's initializers, read without onnx: an ONNX file is a protobuf
``ModelProto`` whose field 7 is the graph, whose fields 5 are the initializer tensors (field 1
dims, 2 data type, 4 packed floats, 8 name, 9 raw little-endian data). The wheel's
``silero_vad_16k.safetensors`` is another checkpoint (its weights differ from the released
model's), so the ONNX file, the one silero-vad itself loads, is the source.

Output: float32 arrays under the names of :data:`daemon.audio.silero.SHAPES`, written like the
voice model (sorted names, fixed timestamps): the same input always gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt

from daemon.audio.silero import SHAPES
from daemon.errors import ModelError
from daemon.models.convert_resemblyzer import Weights, npz_converter, read_source

__all__ = ["ONNX_FILE", "convert_silero", "read_onnx_initializers"]

ONNX_FILE = "silero_vad_16k_op15.onnx"
_FIX = "reinstall it: `braincue models install --source wheels silero-vad-v6`"
_FLOAT = 1  # TensorProto.DataType.FLOAT

ONNX_NAMES: dict[str, str] = {
    "stft_conv.weight": "model.stft.forward_basis_buffer",
    **{f"conv{i + 1}.{kind}": f"model.encoder.{i}.reparam_conv.{kind}"
       for i in range(4) for kind in ("weight", "bias")},
    **{f"lstm_cell.{kind}": f"model.decoder.rnn.{kind}"
       for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")},
    "final_conv.weight": "model.decoder.decoder.2.weight",
    "final_conv.bias": "model.decoder.decoder.2.bias",
}


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """``(field number, value)`` of a protobuf message: an int, or the bytes of a
    length-delimited or fixed-width field."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            yield number, value
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            yield number, data[at : at + width]
            at += width
        elif wire == 2:
            length, at = _varint(data, at)
            if at + length > len(data):
                raise ValueError("a field runs past the end of the message")
            yield number, data[at : at + length]
            at += length
        else:
            raise ValueError(f"unsupported wire type {wire}")


def _tensor(message: bytes) -> tuple[str, npt.NDArray[np.float32] | None]:
    dims: list[int] = []
    name, kind, raw, floats = "", 0, b"", b""
    for number, value in _fields(message):
        if number == 1:  # dims: packed or one varint each
            if isinstance(value, bytes):
                at = 0
                while at < len(value):
                    dim, at = _varint(value, at)
                    dims.append(dim)
            else:
                dims.append(value)
        elif number == 2 and isinstance(value, int):
            kind = value
        elif number == 4 and isinstance(value, bytes):
            floats += value
        elif number == 8 and isinstance(value, bytes):
            name = value.decode()
        elif number == 9 and isinstance(value, bytes):
            raw = value
    if kind != _FLOAT:
        return name, None
    array = np.frombuffer(raw or floats, dtype="<f4")
    return name, array.reshape(dims) if dims else array


def read_onnx_initializers(data: bytes) -> dict[str, npt.NDArray[np.float32]]:
    """The float initializers of an ONNX model's main graph, by name."""
    tensors: dict[str, npt.NDArray[np.float32]] = {}
    for number, graph in _fields(data):
        if number == 7 and isinstance(graph, bytes):
            for field, message in _fields(graph):
                if field == 5 and isinstance(message, bytes):
                    name, array = _tensor(message)
                    if array is not None:
                        tensors[name] = array
    return tensors


def silero_weights(source: Path) -> Weights:
    """The weights of ``silero_vad_16k_op15.onnx``, as float32."""
    data = read_source(source, _FIX)
    try:
        found = read_onnx_initializers(data)
    except (ValueError, IndexError, UnicodeDecodeError) as exc:
        raise ModelError(f"{source} is not a readable ONNX model: {exc}", fix=_FIX) from exc
    weights: Weights = {}
    for ours, theirs in ONNX_NAMES.items():
        array = found.get(theirs)
        if array is None or array.shape != SHAPES[ours]:
            raise ModelError(f"{source} is not Silero VAD v6 (bad {theirs})", fix=_FIX)
        weights[ours] = array.astype(np.float32)
    return weights


convert_silero = npz_converter(ONNX_FILE, silero_weights)

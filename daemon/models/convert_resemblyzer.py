"""Convert resemblyzer's ``pretrained.pt`` (a GE2E speaker encoder) to an ``.npz`` numpy reads.

The ``.pt`` is torch's legacy serialisation (before the zip format): five pickles one after
another — a magic number, the protocol version, system info, the checkpoint (tensors pickled as
references to storages), the list of storage keys — then each storage's raw bytes (an int64
element count, then the data) in that order. We read it without torch: a restricted unpickler
that only knows the few globals a tensor checkpoint names (anything else is refused, so the file
cannot run code), and numpy views over the raw storages.

The output is a zip of ``.npy`` arrays (``np.load`` opens it as an npz) with fixed timestamps
and sorted names, so the same input always gives the same bytes. Arrays (float32):
``lstm.weight_ih_l{0,1,2}`` (1024, 40 | 256), ``lstm.weight_hh_l*`` (1024, 256),
``lstm.bias_ih_l*`` / ``lstm.bias_hh_l*`` (1024,), ``linear.weight`` (256, 256),
``linear.bias`` (256,) — torch's gate order i, f, g, o.
"""

from __future__ import annotations

import io
import pickle
import struct
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from daemon.errors import ModelError

__all__ = [
    "EXPECTED_SHAPES", "Weights", "convert_resemblyzer", "npz_converter", "read_legacy_torch",
    "write_npz",
]

_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
STORAGE_DTYPES: dict[str, np.dtype[Any]] = {
    "FloatStorage": np.dtype("<f4"),
    "DoubleStorage": np.dtype("<f8"),
    "HalfStorage": np.dtype("<f2"),
    "LongStorage": np.dtype("<i8"),
    "IntStorage": np.dtype("<i4"),
}
_FIX = "reinstall it: `braincue models install --source wheels resemblyzer`"

EXPECTED_SHAPES: dict[str, tuple[int, ...]] = {
    **{
        f"lstm.weight_ih_l{layer}": (1024, 40 if layer == 0 else 256) for layer in range(3)
    },
    **{f"lstm.weight_hh_l{layer}": (1024, 256) for layer in range(3)},
    **{f"lstm.bias_ih_l{layer}": (1024,) for layer in range(3)},
    **{f"lstm.bias_hh_l{layer}": (1024,) for layer in range(3)},
    "linear.weight": (256, 256),
    "linear.bias": (256,),
}


@dataclass(frozen=True)
class StorageType:
    name: str


@dataclass(frozen=True)
class TensorRef:
    storage_key: str
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]


def _rebuild_tensor(storage: tuple[str, StorageType], offset: int, size: Any, stride: Any,
                    *_: Any) -> TensorRef:
    return TensorRef(storage[0], int(offset), tuple(size), tuple(stride))


class CheckpointUnpickler(pickle.Unpickler):
    """Knows tensors, storages and ordered dicts; refuses every other global. Records the type
    of every storage it meets in ``storage_types``."""

    def __init__(self, file: BinaryIO, storage_types: dict[str, StorageType]) -> None:
        super().__init__(file)
        self.storage_types = storage_types

    def find_class(self, module: str, name: str) -> Any:
        if module == "collections" and name == "OrderedDict":
            return OrderedDict
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            return _rebuild_tensor
        if module == "torch" and name in STORAGE_DTYPES:
            return StorageType(name)
        raise pickle.UnpicklingError(f"refusing global {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        # ('storage', storage type, key, location, element count[, view metadata])
        if not (isinstance(pid, tuple) and len(pid) >= 3 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        storage_type, key = pid[1], str(pid[2])
        if not isinstance(storage_type, StorageType):
            raise pickle.UnpicklingError(f"unknown storage type {storage_type!r}")
        self.storage_types[key] = storage_type
        return (key, storage_type)


def read_legacy_torch(data: bytes) -> dict[str, npt.NDArray[Any]]:
    """The ``model_state`` tensors of a legacy-format torch checkpoint, as numpy arrays."""
    f = io.BytesIO(data)
    types: dict[str, StorageType] = {}

    def load() -> Any:
        return CheckpointUnpickler(f, types).load()

    if load() != _LEGACY_MAGIC:
        raise ModelError("not a legacy torch checkpoint (bad magic number)", fix=_FIX)
    load()  # protocol version
    load()  # system info
    checkpoint = load()
    keys = load()
    storages: dict[str, npt.NDArray[Any]] = {}
    for key in keys:
        dtype = STORAGE_DTYPES[types[key].name]
        (count,) = struct.unpack("<q", f.read(8))
        raw = f.read(count * dtype.itemsize)
        if len(raw) != count * dtype.itemsize:
            raise ModelError("the checkpoint ends inside a tensor storage", fix=_FIX)
        storages[str(key)] = np.frombuffer(raw, dtype=dtype)
    state = checkpoint.get("model_state") if isinstance(checkpoint, Mapping) else None
    if not isinstance(state, Mapping):
        raise ModelError("the checkpoint has no model_state", fix=_FIX)
    arrays = {}
    for name, ref in state.items():
        if not isinstance(ref, TensorRef):
            continue
        storage = storages[ref.storage_key]
        itemsize = storage.dtype.itemsize
        view = np.lib.stride_tricks.as_strided(
            storage[ref.offset :],
            shape=ref.shape,
            strides=tuple(s * itemsize for s in ref.stride),
            writeable=False,
        )
        arrays[str(name)] = np.ascontiguousarray(view)
    return arrays


def _write_npz(out: BinaryIO, arrays: Mapping[str, npt.NDArray[Any]]) -> None:
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as archive:
        for name in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, arrays[name], version=(1, 0), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            archive.writestr(info, buf.getvalue())


def read_source(source: Path, fix: str) -> bytes:
    """The bytes of the model file ``source``; an unreadable one is a ModelError."""
    try:
        return source.read_bytes()
    except OSError as exc:
        raise ModelError(f"cannot read {source}: {exc.strerror or exc}", fix=fix) from exc


def write_npz(out_path: Path, arrays: Mapping[str, npt.NDArray[Any]],
              progress: Callable[[int, int], None] | None = None) -> None:
    """Write ``arrays`` to ``out_path`` as an npz whose bytes depend on the arrays only (sorted
    names, fixed timestamps), then report them all done to ``progress``."""
    try:
        with out_path.open("wb") as out:
            _write_npz(out, arrays)
    except OSError as exc:
        raise ModelError(
            f"cannot write {out_path}: {exc.strerror or exc}", fix="check free disk space"
        ) from exc
    if progress is not None:
        progress(len(arrays), len(arrays))


Weights = dict[str, npt.NDArray[np.float32]]


def npz_converter(filename: str, weights: Callable[[Path], Weights]) -> Callable[..., None]:
    """A converter ``convert(model_dir, out_path, *, progress=None)`` that writes
    ``out_path``: the weights ``weights`` reads out of ``model_dir/filename``, as an npz (see
    :func:`write_npz`)."""

    def convert(model_dir: Path, out_path: Path, *,
                progress: Callable[[int, int], None] | None = None) -> None:
        write_npz(out_path, weights(model_dir / filename), progress)

    return convert


def resemblyzer_weights(source: Path) -> Weights:
    """The encoder weights of resemblyzer's ``pretrained.pt``, as float32."""
    data = read_source(source, _FIX)
    try:
        arrays = read_legacy_torch(data)
    except (pickle.UnpicklingError, EOFError, KeyError, ValueError, struct.error) as exc:
        raise ModelError(f"{source} is not a readable torch checkpoint: {exc}", fix=_FIX) from exc
    wrong = [n for n, shape in EXPECTED_SHAPES.items() if arrays.get(n, np.empty(0)).shape != shape]
    if wrong:
        raise ModelError(f"{source} is not resemblyzer's encoder (bad {wrong[0]})", fix=_FIX)
    return {name: arrays[name].astype(np.float32) for name in EXPECTED_SHAPES}


convert_resemblyzer = npz_converter("pretrained.pt", resemblyzer_weights)

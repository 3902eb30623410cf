"""Silero VAD v6 in numpy: the probability that each 32 ms of 16 kHz audio is speech.

The network of ``silero-vad`` (MIT; weights converted from its ONNX model by
:mod:`daemon.models.convert_silero`): every chunk
of 512 samples, with the 64 samples before it as context, goes through a fixed STFT (a conv of
258 filters of 256 samples, stride 128, after 64 samples of reflection padding on the right;
the magnitude of 129 bins), four convolutions with ReLU (129->128, 128->64 stride 2, 64->64
stride 2, 64->128), an LSTM cell of 128 carried from chunk to chunk, ReLU, a 1x1 conv and a
sigmoid. The convolutions see one chunk only, so a whole buffer of chunks goes through them at
once; only the LSTM steps one chunk at a time.

Pure numpy, no I/O but :meth:`SileroModel.load`. :class:`SileroStream` keeps one stream's state.
"""

from __future__ import annotations

import logging
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from daemon.errors import ModelError

Array = npt.NDArray[np.float32]
log = logging.getLogger(__name__)

CHUNK = 512  # samples a probability is given for (32 ms at 16 kHz)
CONTEXT = 64  # samples of the chunk before that the network also sees
_PAD = 64
_HOP = 128
_BINS = 129

SHAPES: dict[str, tuple[int, ...]] = {
    "stft_conv.weight": (258, 1, 256),
    "conv1.weight": (128, 129, 3),
    "conv1.bias": (128,),
    "conv2.weight": (64, 128, 3),
    "conv2.bias": (64,),
    "conv3.weight": (64, 64, 3),
    "conv3.bias": (64,),
    "conv4.weight": (128, 64, 3),
    "conv4.bias": (128,),
    "lstm_cell.weight_ih": (512, 128),
    "lstm_cell.weight_hh": (512, 128),
    "lstm_cell.bias_ih": (512,),
    "lstm_cell.bias_hh": (512,),
    "final_conv.weight": (1, 128, 1),
    "final_conv.bias": (1,),
}


def _conv(x: Array, weight: Array, bias: Array, stride: int) -> Array:
    """Conv1d, kernel 3, padding 1, over ``x`` of shape (batch, time, channels)."""
    out_ch, in_ch, width = weight.shape
    padded = np.pad(x, ((0, 0), (1, 1), (0, 0)))
    steps = (padded.shape[1] - width) // stride + 1
    taps = np.stack([padded[:, k : k + stride * (steps - 1) + 1 : stride] for k in range(width)],
                    axis=2)  # (batch, steps, width, in)
    kernel = weight.transpose(2, 1, 0).reshape(width * in_ch, out_ch)
    out: Array = taps.reshape(len(x), steps, width * in_ch) @ kernel + bias
    return out


@dataclass(frozen=True)
class SileroModel:
    tensors: dict[str, Array]

    @classmethod
    def load(cls, path: Path) -> SileroModel:
        """The converted weights; a missing or corrupt file is a one-line ModelError."""
        fix = "reinstall it: `braincue models install silero-vad-v6`"
        if not path.is_file():
            raise ModelError(f"the VAD model {path} is missing", fix=fix)
        try:
            with np.load(path, allow_pickle=False) as archive:
                tensors = {name: archive[name] for name in archive.files}
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
            raise ModelError(f"the VAD model {path.name} is corrupt ({e})", fix=fix) from e
        wrong = sorted(k for k, s in SHAPES.items() if tensors.get(k, np.zeros(0)).shape != s)
        if wrong:
            raise ModelError(f"the VAD model {path.name} lacks {', '.join(wrong)}", fix=fix)
        return cls({k: np.ascontiguousarray(tensors[k], dtype=np.float32) for k in SHAPES})

    def features(self, windows: Array) -> Array:
        """The LSTM's inputs (n, 128) for ``windows`` (n, CONTEXT + CHUNK): everything before
        the recurrence."""
        t = self.tensors
        padded = np.concatenate([windows, windows[:, -2 : -_PAD - 2 : -1]], axis=1)
        frames = (padded.shape[1] - 256) // _HOP + 1
        stacked = np.stack([padded[:, i * _HOP : i * _HOP + 256] for i in range(frames)], axis=1)
        spectrum = stacked @ t["stft_conv.weight"][:, 0, :].T  # (n, frames, 258)
        x = np.sqrt(spectrum[..., :_BINS] ** 2 + spectrum[..., _BINS:] ** 2)
        for name, stride in (("conv1", 1), ("conv2", 2), ("conv3", 2), ("conv4", 1)):
            x = np.maximum(_conv(x, t[f"{name}.weight"], t[f"{name}.bias"], stride), 0)
        out: Array = x[:, 0, :]  # one step left
        return out


class SileroStream:
    """One audio stream through the model: feed samples, get a speech probability for every
    chunk of 512 they complete (what is left waits for the next feed)."""

    def __init__(self, model: SileroModel) -> None:
        self.model = model
        t = model.tensors
        self._w_ih = t["lstm_cell.weight_ih"].T.copy()
        self._w_hh = t["lstm_cell.weight_hh"].T.copy()
        self._bias = t["lstm_cell.bias_ih"] + t["lstm_cell.bias_hh"]
        self._out_w = t["final_conv.weight"][0, :, 0].copy()
        self._out_b = float(t["final_conv.bias"][0])
        self.reset()

    def reset(self) -> None:
        self._h = np.zeros(128, dtype=np.float32)
        self._c = np.zeros(128, dtype=np.float32)
        self._context = np.zeros(CONTEXT, dtype=np.float32)
        self._pending = np.zeros(0, dtype=np.float32)

    def feed(self, samples: npt.ArrayLike) -> Array:
        audio = np.concatenate([self._pending, np.asarray(samples, dtype=np.float32).ravel()])
        n = len(audio) // CHUNK
        self._pending = audio[n * CHUNK :]
        if n == 0:
            return np.zeros(0, dtype=np.float32)
        stream = np.concatenate([self._context, audio[: n * CHUNK]])
        self._context = stream[-CONTEXT:].copy()
        windows = np.lib.stride_tricks.sliding_window_view(stream, CONTEXT + CHUNK)[::CHUNK]
        gates_in = self.model.features(np.ascontiguousarray(windows)) @ self._w_ih + self._bias
        probabilities = np.empty(n, dtype=np.float32)
        h, c = self._h, self._c
        for i in range(n):
            gates = gates_in[i] + h @ self._w_hh
            # torch's gate order: input, forget, cell, output
            i_g, f_g, g_g, o_g = np.split(gates, 4)
            c = _sigmoid(f_g) * c + _sigmoid(i_g) * np.tanh(g_g)
            h = _sigmoid(o_g) * np.tanh(c)
            probabilities[i] = _sigmoid(np.maximum(h, 0) @ self._out_w + self._out_b)
        self._h, self._c = h, c
        return probabilities

    def skip(self, samples: npt.ArrayLike) -> np.ndarray:
        """Let ``samples`` go by unread (nothing computed): returns the audio of the chunks
        they complete, which :meth:`reread` can read later."""
        audio = np.concatenate([self._pending, np.asarray(samples, dtype=np.float32).ravel()])
        n = len(audio) // CHUNK
        self._pending = audio[n * CHUNK :]
        if n:
            self._context = audio[n * CHUNK - CONTEXT : n * CHUNK].copy()
        return audio[: n * CHUNK]

    def reread(self, chunks: np.ndarray) -> Array:
        """The probabilities of ``chunks`` (whole chunks that just went by unread, the last of
        them ending where the samples still short of a chunk begin), read from a fresh state:
        the stream then goes on from them as if it had read everything."""
        pending = self._pending
        self.reset()
        probabilities = self.feed(chunks)
        self._pending = pending
        return probabilities

    def tail(self) -> Array:
        """The probability of the samples still short of a chunk, as if the stream ended after
        them (padded with silence); the stream is left as it was, to go on with the audio."""
        if not len(self._pending):
            return np.zeros(0, dtype=np.float32)
        state = self._h, self._c, self._context, self._pending
        try:
            return self.feed(np.zeros(CHUNK - len(self._pending), dtype=np.float32))
        finally:
            self._h, self._c, self._context, self._pending = state


def _sigmoid(x: npt.ArrayLike) -> Array:
    # as tanh: no overflow for large negative x
    out: Array = (0.5 + 0.5 * np.tanh(0.5 * np.asarray(x, dtype=np.float32))).astype(np.float32)
    return out


def installed_speech_model(models_dir: Path) -> SileroModel | None:
    """The installed Silero model, or None — said once in the log, in one line, with the fix:
    utterances are then cut by the energy detector, and transcription goes on."""
    from daemon.models.registry import resolve_model

    try:
        return SileroModel.load(resolve_model("vad", "", models_dir))
    except ModelError as e:
        log.warning("speech is told from noise by loudness only: %s", e)
        return None

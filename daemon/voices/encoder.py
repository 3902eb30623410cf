"""Voice embeddings with numpy: resemblyzer's GE2E speaker encoder, without torch.

The network (weights converted by ``daemon.models.convert_resemblyzer``): a 40-band mel power
spectrogram (25 ms Hann windows every 10 ms at 16 kHz, centred, zero-padded — librosa's
``melspectrogram`` defaults), a 3-layer LSTM of 256 units over a 160-frame (1.6 s) window, the
top layer's last hidden state through a 256 -> 256 linear layer, ReLU and L2 normalisation. An
utterance's embedding is the normalised mean of its partial windows' embeddings, the windows
placed as resemblyzer's ``compute_partial_slices`` places them. Audio is first raised to
-30 dBFS when quieter (resemblyzer's ``normalize_volume(increase_only=True)``): the network
reads power, not log power, so loudness matters.

All windows of a call run through the LSTM together as one batch: per time step one matrix
product per layer for the whole batch, which is what keeps this well under real time.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from daemon.audio.format import SAMPLE_RATE
from daemon.errors import ModelError
from daemon.models.convert_resemblyzer import EXPECTED_SHAPES
from daemon.models.convert_whisper import mel_filter_bank

Audio = npt.NDArray[np.float32]
Vectors = npt.NDArray[np.float32]

N_FFT = 400  # 25 ms
HOP = 160  # 10 ms
N_MELS = 40
PARTIAL_FRAMES = 160  # 1.6 s
EMBEDDING_SIZE = 256
TARGET_DBFS = -30.0
_INT16_MAX = 2**15 - 1

_FIX = "run `braincue models install resemblyzer`"


def normalize_volume(audio: Audio, target_dbfs: float = TARGET_DBFS) -> Audio:
    """Raise quiet audio to ``target_dbfs`` (never lowers it), as resemblyzer does."""
    if not len(audio):
        return audio
    rms = float(np.sqrt(np.mean((audio.astype(np.float64) * _INT16_MAX) ** 2)))
    if rms == 0.0:
        return audio
    change_db = target_dbfs - 20 * np.log10(rms / _INT16_MAX)
    if change_db < 0:
        return audio
    return (audio * np.float32(10 ** (change_db / 20))).astype(np.float32)


_WINDOW = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)).astype(np.float32)
_MEL = mel_filter_bank(N_MELS, sample_rate=SAMPLE_RATE, n_fft=N_FFT)


def mel_frames(audio: Audio) -> Vectors:
    """The mel power spectrogram, shape ``(1 + len(audio) // HOP, 40)``."""
    padded = np.pad(audio.astype(np.float32), (N_FFT // 2, N_FFT // 2))
    n_frames = 1 + (len(padded) - N_FFT) // HOP
    frames = np.lib.stride_tricks.as_strided(
        padded,
        shape=(n_frames, N_FFT),
        strides=(padded.strides[0] * HOP, padded.strides[0]),
        writeable=False,
    )
    power = np.abs(np.fft.rfft(frames * _WINDOW, axis=1)) ** 2
    return (power.astype(np.float32) @ _MEL.T).astype(np.float32)


def partial_starts(n_samples: int, rate: float = 1.3, min_coverage: float = 0.75) -> list[int]:
    """First frame of each partial window of an utterance (resemblyzer's placement)."""
    n_frames = int(np.ceil((n_samples + 1) / HOP))
    step = int(np.round((SAMPLE_RATE / rate) / HOP))
    if not 0 < step <= PARTIAL_FRAMES:
        raise ValueError(f"rate {rate} gives a step of {step} frames")
    starts = list(range(0, max(1, n_frames - PARTIAL_FRAMES + step + 1), step))
    coverage = (n_samples - starts[-1] * HOP) / (PARTIAL_FRAMES * HOP)
    if coverage < min_coverage and len(starts) > 1:
        starts.pop()
    return starts


# torch's gate order is i, f, g, o; rows are reordered to i, f, o, g so that the three
# sigmoid gates are one contiguous block
_GATE_ORDER = np.r_[0:512, 768:1024, 512:768]


@dataclass(frozen=True)
class _Layer:
    w_ih_t: Vectors  # (in, 1024)
    w_hh_t: Vectors  # (256, 1024)
    bias: Vectors  # (1024,)



def read_voice_model(path: Path, fix: str) -> dict[str, npt.NDArray[np.float32]]:
    """The arrays of a converted voice model (``.npz``); a missing or unreadable file is a
    one-line ModelError with ``fix``."""
    try:
        # the file opened here, not by np.load: a zip it cannot read would leave its file open
        with path.open("rb") as file, np.load(file, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except FileNotFoundError as exc:
        raise ModelError(f"the voice model {path} is missing", fix=fix) from exc
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise ModelError(f"the voice model {path} is corrupt ({exc})", fix=fix) from exc


class VoiceEncoder:
    """The speaker encoder; ``embed_windows`` for diarisation, ``embed_utterance`` for one
    voice."""

    model_id = "resemblyzer-ge2e"

    def __init__(self, weights: dict[str, Vectors]) -> None:
        for name, shape in EXPECTED_SHAPES.items():
            if name not in weights or weights[name].shape != shape:
                raise ModelError(f"the voice model lacks {name} {shape}", fix=_FIX)
        self._layers = [
            _Layer(
                np.ascontiguousarray(weights[f"lstm.weight_ih_l{i}"][_GATE_ORDER].T, np.float32),
                np.ascontiguousarray(weights[f"lstm.weight_hh_l{i}"][_GATE_ORDER].T, np.float32),
                (weights[f"lstm.bias_ih_l{i}"] + weights[f"lstm.bias_hh_l{i}"])[_GATE_ORDER]
                .astype(np.float32),
            )
            for i in range(3)
        ]
        self._linear_t = np.ascontiguousarray(weights["linear.weight"].T, dtype=np.float32)
        self._linear_b = weights["linear.bias"].astype(np.float32)

    @classmethod
    def load(cls, path: Path) -> VoiceEncoder:
        """Raises ModelError (one line, with the fix) for a missing or unreadable file."""
        return cls(read_voice_model(path, _FIX))

    def embed_mels(self, mels: Vectors) -> Vectors:
        """Embeddings of a batch of mel windows ``(batch, frames, 40)``: ``(batch, 256)``."""
        batch, steps, _ = mels.shape
        x = mels.astype(np.float32)
        h = np.zeros((batch, EMBEDDING_SIZE), np.float32)
        for index, layer in enumerate(self._layers):
            projected = (x.reshape(batch * steps, -1) @ layer.w_ih_t + layer.bias).reshape(
                batch, steps, -1
            )
            last = index == len(self._layers) - 1
            outputs = None if last else np.empty((batch, steps, EMBEDDING_SIZE), np.float32)
            h = np.zeros((batch, EMBEDDING_SIZE), np.float32)
            c = np.zeros((batch, EMBEDDING_SIZE), np.float32)
            gates_buf = np.empty((batch, 4 * EMBEDDING_SIZE), np.float32)
            for t in range(steps):
                gates = np.matmul(h, layer.w_hh_t, out=gates_buf)
                gates += projected[:, t]
                # sigmoid(x) = (1 + tanh(x / 2)) / 2, in place on the i, f, o block
                sig = gates[:, :768]
                sig *= 0.5
                np.tanh(sig, out=sig)
                sig += 1.0
                sig *= 0.5
                g = np.tanh(gates[:, 768:], out=gates[:, 768:])
                c *= sig[:, 256:512]
                c += sig[:, :256] * g
                h = sig[:, 512:768] * np.tanh(c)
                if outputs is not None:
                    outputs[:, t] = h
            if outputs is not None:
                x = outputs
        raw = np.maximum(h @ self._linear_t + self._linear_b, 0.0)
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        normed: Vectors = (raw / np.maximum(norms, 1e-12)).astype(np.float32)
        return normed

    def embed_windows(self, audio: Audio, starts: list[int]) -> Vectors:
        """Embeddings of the 160-frame windows starting at the given frames (zero-padded past
        the end); ``audio`` should already be volume-normalised."""
        end = (max(starts) + PARTIAL_FRAMES) * HOP
        padded = np.pad(audio, (0, max(0, end - len(audio))))
        mel = mel_frames(padded)
        windows = np.stack([mel[s : s + PARTIAL_FRAMES] for s in starts])
        return self.embed_mels(windows)

    def embed_utterance(self, audio: Audio) -> Vectors:
        """One voice's embedding: resemblyzer's ``embed_utterance`` (rate 1.3, coverage 0.75)."""
        audio = normalize_volume(audio.astype(np.float32))
        partials = self.embed_windows(audio, partial_starts(len(audio)))
        mean = partials.mean(axis=0)
        embedding: Vectors = (mean / np.linalg.norm(mean)).astype(np.float32)
        return embedding

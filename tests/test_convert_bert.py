"""Converting a sentence-transformers BERT folder to GGUF."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest
from modelkit import folder_fixture

from daemon.errors import ModelError
from daemon.models.convert_bert import (
    bert_vocab,
    convert_st_bert,
    phantom_space,
    read_safetensors,
)

MINILM_GGUF_SHA256 = "f30441625544e21715634db86a21ec2eb794b86028217b775f1535e368b85ef0"
MINILM_GGUF_SIZE = 46_223_456


def write_safetensors(path: Path, tensors: dict[str, tuple[str, np.ndarray[Any, Any]]]) -> None:
    """A minimal safetensors writer: name -> (dtype code, array whose bytes are stored)."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    blobs = []
    offset = 0
    for name, (dtype, array) in tensors.items():
        blob = np.ascontiguousarray(array).tobytes()
        header[name] = {
            "dtype": dtype,
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs))


def raw_safetensors(path: Path, header: object, data: bytes = b"") -> Path:
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + data)
    return path


# --- safetensors ------------------------------------------------------------------------------


def test_read_safetensors_returns_each_tensor_with_its_shape_and_values(tmp_path: Path) -> None:
    matrix = np.arange(6, dtype="<f4").reshape(2, 3) / 4
    half = np.array([1.5, -2.0, 65504.0], dtype="<f2")
    ids = np.array([[0, 1, 511]], dtype="<i8")
    # bfloat16 is the top half of a float32: 1.0 -> 0x3F80, -2.5 -> 0xC020
    bf16 = np.array([0x3F80, 0xC020], dtype="<u2")
    write_safetensors(
        tmp_path / "m.safetensors",
        {"w": ("F32", matrix), "h": ("F16", half), "ids": ("I64", ids), "b": ("BF16", bf16)},
    )

    tensors = read_safetensors(tmp_path / "m.safetensors")

    assert sorted(tensors) == ["b", "h", "ids", "w"]
    np.testing.assert_array_equal(tensors["w"], matrix)
    assert tensors["w"].dtype == np.float32
    np.testing.assert_array_equal(tensors["h"], half)
    assert tensors["h"].dtype == np.float16
    np.testing.assert_array_equal(tensors["ids"], ids)
    np.testing.assert_array_equal(tensors["b"], np.array([1.0, -2.5], dtype=np.float32))
    assert tensors["b"].dtype == np.float32


def test_read_safetensors_of_an_empty_file_has_no_tensors(tmp_path: Path) -> None:
    path = raw_safetensors(tmp_path / "e.safetensors", {"__metadata__": {}})
    assert read_safetensors(path) == {}


@pytest.mark.parametrize(
    ("header", "data", "problem"),
    [
        ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4, "outside"),
        ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8, "size"),
        ({"w": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}}, b"\0" * 8, "dtype"),
        ({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}}, b"", "shape"),
        ({"w": {"dtype": "F32", "shape": [1]}}, b"\0" * 4, "incomplete"),
        ([1, 2], b"", "not a JSON object"),
    ],
)
def test_read_safetensors_rejects_a_malformed_header(
    tmp_path: Path, header: object, data: bytes, problem: str
) -> None:
    path = raw_safetensors(tmp_path / "bad.safetensors", header, data)
    with pytest.raises(ModelError, match=problem):
        read_safetensors(path)


def test_read_safetensors_rejects_a_truncated_file(tmp_path: Path) -> None:
    short = tmp_path / "short.safetensors"
    short.write_bytes(b"\x10\0\0")
    with pytest.raises(ModelError, match="shorter"):
        read_safetensors(short)

    lying = tmp_path / "lying.safetensors"
    lying.write_bytes(struct.pack("<Q", 1000) + b"{}")
    with pytest.raises(ModelError, match="exceeds the file"):
        read_safetensors(lying)

    not_json = tmp_path / "notjson.safetensors"
    not_json.write_bytes(struct.pack("<Q", 3) + b"{{{")
    with pytest.raises(ModelError, match="not JSON"):
        read_safetensors(not_json)


# --- vocabulary -------------------------------------------------------------------------------


def test_phantom_space_marks_word_starts_and_strips_continuations() -> None:
    assert phantom_space("the", gguf.TokenType.NORMAL) == "\u2581the"
    assert phantom_space("##ing", gguf.TokenType.NORMAL) == "ing"
    assert phantom_space("[CLS]", gguf.TokenType.CONTROL) == "[CLS]"
    assert phantom_space("!", gguf.TokenType.NORMAL) == "\u2581!"


def tiny_tokenizer() -> dict[str, Any]:
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, "the": 5, "##s": 6}
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    return {
        "added_tokens": [
            {"id": vocab[t], "content": t, "special": True, "normalized": False} for t in specials
        ],
        "normalizer": {"type": "BertNormalizer", "lowercase": True, "strip_accents": None},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
            ],
        },
        "padding": None,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": vocab},
    }


def test_bert_vocab_rewrites_wordpiece_tokens_and_marks_specials_as_control() -> None:
    vocab = bert_vocab(tiny_tokenizer(), vocab_size=8, pad_token_id=0)

    assert vocab.tokens == [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "\u2581the",
        "s",
        "[PAD7]",
    ]
    control, normal = gguf.TokenType.CONTROL, gguf.TokenType.NORMAL
    assert vocab.token_types == [control] * 5 + [normal, normal, gguf.TokenType.UNUSED]
    assert vocab.special_ids == {"bos": 2, "eos": 3, "unk": 1, "sep": 3, "pad": 0, "mask": 4}
    assert (vocab.lowercase, vocab.strip_accents) == (True, None)


def test_bert_vocab_accepts_the_older_bert_post_processor() -> None:
    tokenizer = tiny_tokenizer()
    tokenizer["post_processor"] = {
        "type": "BertProcessing",
        "sep": ["[SEP]", 3],
        "cls": ["[CLS]", 2],
    }
    tokenizer["padding"] = {"pad_id": 0, "pad_token": "[PAD]"}

    vocab = bert_vocab(tokenizer, vocab_size=7)

    assert vocab.special_ids == {"bos": 2, "eos": 3, "unk": 1, "sep": 3, "pad": 0, "mask": 4}


def test_bert_vocab_keeps_non_special_added_tokens_as_user_defined() -> None:
    tokenizer = tiny_tokenizer()
    tokenizer["added_tokens"].append({"id": 7, "content": "braincue", "special": False})

    vocab = bert_vocab(tokenizer, vocab_size=8)

    assert vocab.tokens[7] == "\u2581braincue"
    assert vocab.token_types[7] == gguf.TokenType.USER_DEFINED


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"model": {"type": "BPE", "vocab": {}}}, "not WordPiece"),
        ({"post_processor": None}, "no post_processor"),
        ({"post_processor": {"type": "RobertaProcessing"}}, "not a BERT template"),
    ],
)
def test_bert_vocab_rejects_other_tokenizers(change: dict[str, Any], problem: str) -> None:
    with pytest.raises(ModelError, match=problem):
        bert_vocab(tiny_tokenizer() | change, vocab_size=7)


def test_bert_vocab_rejects_ids_beyond_the_model_vocabulary() -> None:
    with pytest.raises(ModelError, match="exceeds the model's vocab_size 5"):
        bert_vocab(tiny_tokenizer(), vocab_size=5)


# --- a whole (tiny, synthetic) folder ---------------------------------------------------------

HIDDEN, FFN, LAYERS = 8, 16, 2


def tiny_bert_folder(folder: Path, *, modules: list[dict[str, Any]] | None = None) -> Path:
    folder.mkdir()
    rng = np.random.default_rng(7)

    def weights(*shape: int) -> tuple[str, np.ndarray[Any, Any]]:
        return "F32", rng.standard_normal(shape).astype("<f4")

    tensors = {
        "embeddings.position_ids": ("I64", np.arange(16, dtype="<i8").reshape(1, 16)),
        "embeddings.word_embeddings.weight": weights(8, HIDDEN),
        "embeddings.position_embeddings.weight": weights(16, HIDDEN),
        "embeddings.token_type_embeddings.weight": weights(2, HIDDEN),
        "embeddings.LayerNorm.weight": weights(HIDDEN),
        "embeddings.LayerNorm.bias": weights(HIDDEN),
        "pooler.dense.weight": weights(HIDDEN, HIDDEN),
        "pooler.dense.bias": weights(HIDDEN),
    }
    for i in range(LAYERS):
        layer = f"encoder.layer.{i}"
        for part, rows, cols in [
            ("attention.self.query", HIDDEN, HIDDEN),
            ("attention.self.key", HIDDEN, HIDDEN),
            ("attention.self.value", HIDDEN, HIDDEN),
            ("attention.output.dense", HIDDEN, HIDDEN),
            ("intermediate.dense", FFN, HIDDEN),
            ("output.dense", HIDDEN, FFN),
        ]:
            tensors[f"{layer}.{part}.weight"] = weights(rows, cols)
            tensors[f"{layer}.{part}.bias"] = weights(rows)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[f"{layer}.{norm}.gamma"] = weights(HIDDEN)  # old-style names
            tensors[f"{layer}.{norm}.beta"] = weights(HIDDEN)
    write_safetensors(folder / "model.safetensors", tensors)

    config = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_size": HIDDEN,
        "intermediate_size": FFN,
        "num_attention_heads": 2,
        "num_hidden_layers": LAYERS,
        "max_position_embeddings": 16,
        "layer_norm_eps": 1e-12,
        "type_vocab_size": 2,
        "vocab_size": 8,
        "pad_token_id": 0,
    }
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "tokenizer.json").write_text(json.dumps(tiny_tokenizer()))
    if modules is None:
        modules = [
            {"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ]
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True})
    )
    return folder


def test_convert_writes_the_bert_tensors_in_the_reference_types(tmp_path: Path) -> None:
    folder = tiny_bert_folder(tmp_path / "tiny")
    out = tmp_path / "tiny.gguf"
    calls: list[tuple[int, int]] = []

    convert_st_bert(folder, out, progress=lambda done, total: calls.append((done, total)))

    reader = gguf.GGUFReader(out)
    types = {t.name: t.tensor_type.name for t in reader.tensors}
    assert types["token_embd.weight"] == "F16"
    assert types["blk.1.attn_q.weight"] == "F16"
    assert types["blk.1.ffn_down.weight"] == "F16"
    assert types["position_embd.weight"] == "F32"
    assert types["token_types.weight"] == "F32"
    assert types["blk.0.attn_q.bias"] == "F32"
    assert types["blk.0.layer_output_norm.weight"] == "F32"
    assert types["blk.0.attn_output_norm.bias"] == "F32"
    assert len(types) == 5 + LAYERS * 16  # embeddings + per layer 6 linear (w, b) + 2 norms
    assert not any(name.startswith("pooler") or "position_ids" in name for name in types)

    source = read_safetensors(folder / "model.safetensors")
    query = next(t for t in reader.tensors if t.name == "blk.1.attn_q.weight")
    np.testing.assert_array_equal(
        np.asarray(query.data).reshape(HIDDEN, HIDDEN),
        source["encoder.layer.1.attention.self.query.weight"].astype(np.float16),
    )

    fields = reader.fields
    assert fields["general.architecture"].contents() == "bert"
    assert fields["bert.pooling_type"].contents() == gguf.PoolingType.MEAN
    assert fields["bert.attention.causal"].contents() is False
    assert fields["tokenizer.ggml.model"].contents() == "bert"
    assert fields["tokenizer.ggml.tokens"].contents()[5:7] == ["\u2581the", "s"]

    assert calls[-1][0] == calls[-1][1] > 0
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)


def test_convert_is_byte_deterministic(tmp_path: Path) -> None:
    folder = tiny_bert_folder(tmp_path / "tiny")
    convert_st_bert(folder, tmp_path / "a.gguf")
    convert_st_bert(folder, tmp_path / "b.gguf")
    assert (tmp_path / "a.gguf").read_bytes() == (tmp_path / "b.gguf").read_bytes()


def test_convert_rejects_a_model_with_an_extra_dense_layer(tmp_path: Path) -> None:
    modules = [
        {"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
    ]
    folder = tiny_bert_folder(tmp_path / "dense", modules=modules)
    with pytest.raises(ModelError, match="Dense"):
        convert_st_bert(folder, tmp_path / "out.gguf")


def test_convert_names_the_missing_file(tmp_path: Path) -> None:
    folder = tiny_bert_folder(tmp_path / "tiny")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelError, match=r"tokenizer\.json is missing"):
        convert_st_bert(folder, tmp_path / "out.gguf")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"model_type": "roberta"}, "not describe a BERT"),
        ({"num_hidden_layers": LAYERS + 1}, "lacks 8 BERT tensors"),
        ({"vocab_size": 9}, r"word embeddings are \(8, 8\), config.json says \(9, 8\)"),
        ({"hidden_size": "8"}, "no positive integer 'hidden_size'"),
    ],
)
def test_convert_rejects_a_config_that_does_not_fit_the_checkpoint(
    tmp_path: Path, change: dict[str, Any], problem: str
) -> None:
    folder = tiny_bert_folder(tmp_path / "tiny")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | change))
    with pytest.raises(ModelError, match=problem):
        convert_st_bert(folder, tmp_path / "out.gguf")


# --- the real model ---------------------------------------------------------------------------


# the sentence-transformers all-MiniLM-L6-v2 folder
minilm_dir = folder_fixture("all-minilm-l6-v2", "BRAINCUE_TEST_MINILM_DIR")


@pytest.mark.slow
def test_convert_all_minilm_gives_the_pinned_file_that_llama_cpp_embeds_with(
    minilm_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "all-minilm-l6-v2-f16.gguf"
    convert_st_bert(minilm_dir, out)

    assert out.stat().st_size == MINILM_GGUF_SIZE
    assert hashlib.sha256(out.read_bytes()).hexdigest() == MINILM_GGUF_SHA256

    import llama_cpp

    model = llama_cpp.Llama(str(out), embedding=True, verbose=False, n_threads=2)
    assert model.tokenize(b"Hello cats") == [101, 7592, 8870, 102]
    cat, cat_again, markets = np.array(
        model.embed(
            ["The cat sits on the mat.", "A cat is sitting on a mat.", "Stock markets fell today."],
            normalize=True,
        )
    )
    assert cat.shape == (384,)
    assert float(cat @ cat_again) > 0.9
    assert float(cat @ markets) < 0.3

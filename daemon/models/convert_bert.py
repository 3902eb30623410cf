"""Convert a sentence-transformers BERT folder to a GGUF file llama.cpp embeds with.

The output follows llama.cpp's own ``convert_hf_to_gguf.py`` (class ``BertModel``) with
``--outtype f16``: same metadata, same WordPiece vocabulary rewrite, same tensor names (taken
from gguf-py's BERT tensor map), f16 for 2-D weight matrices and f32 for everything else.
Only numpy and the ``gguf`` writer are used; the result is byte-for-byte deterministic.

Input folder: ``config.json``, ``tokenizer.json``, ``model.safetensors``, ``modules.json`` and
the pooling module's ``config.json`` (``1_Pooling/config.json`` usually).
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

import gguf
import numpy as np
import numpy.typing as npt

from daemon.errors import ModelError

__all__ = [
    "BertVocab",
    "SafetensorsTensor",
    "bert_vocab",
    "convert_st_bert",
    "phantom_space",
    "read_safetensors",
]

_FIX_FOLDER = "point to a sentence-transformers BERT folder (config.json, tokenizer.json, "
_FIX_FOLDER += "model.safetensors, modules.json, 1_Pooling/config.json)"

# Newer llama.cpp reads these; the installed gguf package may predate their helper methods.
_KEY_LOWERCASE = "tokenizer.ggml.normalizer.lowercase"
_KEY_STRIP_ACCENTS = "tokenizer.ggml.normalizer.strip_accents"

# llama.cpp ignores the pre-tokenizer name for WordPiece vocabularies; the reference converter
# only derives one by hashing a transformers tokenizer's output, which we do not have.
_TOKENIZER_PRE = "default"

_SENTENCE_TRANSFORMERS = "sentence_transformers.models."
_SUPPORTED_MODULES = ("Transformer", "Pooling", "Normalize")

_POOLING_FLAGS = (
    ("pooling_mode_mean_tokens", gguf.PoolingType.MEAN),
    ("pooling_mode_cls_token", gguf.PoolingType.CLS),
    ("pooling_mode_lasttoken", gguf.PoolingType.LAST),
)
_POOLING_MODES = {
    "mean": gguf.PoolingType.MEAN,
    "cls": gguf.PoolingType.CLS,
    "lasttoken": gguf.PoolingType.LAST,
}


# --- safetensors ------------------------------------------------------------------------------

_SAFETENSORS_DTYPES: dict[str, np.dtype[Any]] = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),  # raw bits; widened to float32 on load
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_MAX_HEADER_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True)
class SafetensorsTensor:
    """One entry of a safetensors header; offsets are relative to the data section."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    start: int
    end: int


def parse_safetensors_header(
    header: bytes, data_size: int, source: str = "safetensors file"
) -> list[SafetensorsTensor]:
    """Validate a safetensors JSON header against a data section of ``data_size`` bytes."""
    try:
        entries = json.loads(header)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _malformed(source, f"header is not JSON ({exc})") from exc
    if not isinstance(entries, dict):
        raise _malformed(source, "header is not a JSON object")

    tensors = []
    for name, entry in entries.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (start, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
        except (KeyError, TypeError, ValueError) as exc:
            raise _malformed(source, f"tensor {name!r} has an incomplete header entry") from exc
        if dtype not in _SAFETENSORS_DTYPES:
            raise _malformed(source, f"tensor {name!r} has unsupported dtype {dtype!r}")
        if not (isinstance(shape, list) and all(_is_count(n) for n in shape)):
            raise _malformed(source, f"tensor {name!r} has an invalid shape {shape!r}")
        if not (_is_count(start) and _is_count(end) and start <= end <= data_size):
            raise _malformed(source, f"tensor {name!r} lies outside the file")
        if end - start != math.prod(shape) * _SAFETENSORS_DTYPES[dtype].itemsize:
            raise _malformed(source, f"tensor {name!r} size does not match its shape")
        tensors.append(SafetensorsTensor(name, dtype, tuple(shape), start, end))
    return tensors


def read_safetensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """Map every tensor of a safetensors file to a read-only numpy array (memory-mapped).

    BF16 tensors come back as float32, since numpy has no bfloat16.
    """
    try:
        file_size = path.stat().st_size
        with path.open("rb") as f:
            prefix = f.read(8)
            if len(prefix) < 8:
                raise _malformed(str(path), "file is shorter than its 8-byte header length")
            (header_size,) = struct.unpack("<Q", prefix)
            if header_size > min(_MAX_HEADER_BYTES, file_size - 8):
                raise _malformed(str(path), f"header length {header_size} exceeds the file")
            header = f.read(header_size)
    except OSError as exc:
        raise ModelError(f"cannot read {path}: {exc.strerror}", fix=_FIX_FOLDER) from exc

    data_start = 8 + header_size
    tensors = parse_safetensors_header(header, file_size - data_start, str(path))
    if not tensors:
        return {}
    raw = np.memmap(path, dtype=np.uint8, mode="r", offset=data_start)
    return {t.name: _tensor_array(raw[t.start : t.end], t) for t in tensors}


def _tensor_array(raw: npt.NDArray[np.uint8], tensor: SafetensorsTensor) -> npt.NDArray[Any]:
    array = raw.view(_SAFETENSORS_DTYPES[tensor.dtype]).reshape(tensor.shape)
    if tensor.dtype == "BF16":
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _malformed(source: str, problem: str) -> ModelError:
    return ModelError(f"malformed safetensors {source}: {problem}", fix=_FIX_FOLDER)


# --- vocabulary -------------------------------------------------------------------------------


@dataclass(frozen=True)
class BertVocab:
    """The GGUF tokenizer metadata of a WordPiece vocabulary."""

    tokens: list[str]
    token_types: list[int]
    special_ids: dict[str, int]  # GGUF names: bos, eos, unk, sep, pad, mask
    lowercase: bool | None
    strip_accents: bool | None


def phantom_space(token: str, token_type: int) -> str:
    """Rewrite a WordPiece token the way llama.cpp's tokenizer expects it.

    Word-initial pieces get the U+2581 "phantom space" prefix, continuation pieces (``##x``)
    lose their marker, control tokens stay as they are.
    """
    if token_type == gguf.TokenType.CONTROL:
        return token
    if token.startswith("##"):
        return token[2:]
    return "\u2581" + token


def bert_vocab(
    tokenizer: Mapping[str, Any], vocab_size: int, pad_token_id: int | None = None
) -> BertVocab:
    """Build the GGUF vocabulary from a parsed ``tokenizer.json`` of a WordPiece tokenizer.

    ``vocab_size`` comes from the model config (the embedding rows); ids without a token are
    filled with unused ``[PADn]`` entries, as the reference converter does.
    """
    model = tokenizer.get("model")
    if not isinstance(model, dict) or model.get("type") != "WordPiece":
        raise _bad_tokenizer("its model is not WordPiece")
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not all(_is_count(i) for i in vocab.values()):
        raise _bad_tokenizer("model.vocab is not a token -> id mapping")

    by_id: dict[int, str] = {i: token for token, i in vocab.items()}
    added_ids: set[int] = set()
    special_ids: set[int] = set()
    for added in tokenizer.get("added_tokens") or []:
        token_id, content = _field(added, "id"), _field(added, "content")
        if not (_is_count(token_id) and isinstance(content, str)):
            raise _bad_tokenizer("an added token lacks an id or content")
        by_id[token_id] = content
        added_ids.add(token_id)
        if _field(added, "special"):
            special_ids.add(token_id)

    if by_id and max(by_id) >= vocab_size:
        raise _bad_tokenizer(f"token id {max(by_id)} exceeds the model's vocab_size {vocab_size}")

    tokens: list[str] = []
    token_types: list[int] = []
    for i in range(vocab_size):
        token = by_id.get(i)
        if token is None:
            tokens.append(f"[PAD{i}]")
            token_types.append(gguf.TokenType.UNUSED)
            continue
        if i in special_ids:
            token_type = gguf.TokenType.CONTROL
        elif i in added_ids:
            token_type = gguf.TokenType.USER_DEFINED
        else:
            token_type = gguf.TokenType.NORMAL
        tokens.append(phantom_space(token, token_type))
        token_types.append(token_type)

    token_ids: dict[str, int] = {}
    for i in sorted(by_id):
        token_ids.setdefault(by_id[i], i)
    # As the reference: [CLS] doubles as BOS and [SEP] as EOS.
    cls, sep = _cls_sep(tokenizer.get("post_processor"), token_ids)
    specials = {"bos": cls, "eos": sep}
    unk = model.get("unk_token")
    if isinstance(unk, str) and unk in token_ids:
        specials["unk"] = token_ids[unk]
    specials["sep"] = sep
    padding = tokenizer.get("padding")
    if pad_token_id is None and isinstance(padding, dict) and _is_count(padding.get("pad_id")):
        pad_token_id = padding["pad_id"]
    if pad_token_id is not None and pad_token_id < vocab_size:
        specials["pad"] = pad_token_id
    if "[MASK]" in token_ids:
        specials["mask"] = token_ids["[MASK]"]

    lowercase, strip_accents = _normalizer_options(tokenizer.get("normalizer"))
    return BertVocab(tokens, token_types, specials, lowercase, strip_accents)


def _cls_sep(post_processor: object, token_ids: Mapping[str, int]) -> tuple[int, int]:
    """The ids framing a single sequence: ``[CLS] text [SEP]``."""
    if not isinstance(post_processor, dict):
        raise _bad_tokenizer("it has no post_processor naming [CLS] and [SEP]")
    kind = post_processor.get("type")
    try:
        if kind == "BertProcessing":
            cls, sep = post_processor["cls"][0], post_processor["sep"][0]
        elif kind == "TemplateProcessing":
            single = post_processor["single"]
            cls, sep = single[0]["SpecialToken"]["id"], single[-1]["SpecialToken"]["id"]
        else:
            raise _bad_tokenizer(f"post_processor {kind!r} is not a BERT template")
    except (KeyError, IndexError, TypeError) as exc:
        raise _bad_tokenizer("its post_processor does not frame text as [CLS] ... [SEP]") from exc
    if not (isinstance(cls, str) and isinstance(sep, str)):
        raise _bad_tokenizer("its post_processor does not frame text as [CLS] ... [SEP]")
    if cls not in token_ids or sep not in token_ids:
        raise _bad_tokenizer(f"special tokens {cls!r}/{sep!r} are not in the vocabulary")
    return token_ids[cls], token_ids[sep]


def _normalizer_options(normalizer: object) -> tuple[bool | None, bool | None]:
    if not isinstance(normalizer, dict):
        return None, None
    kind = normalizer.get("type")
    if kind == "BertNormalizer":
        lowercase, strip_accents = normalizer.get("lowercase"), normalizer.get("strip_accents")
        return (
            lowercase if isinstance(lowercase, bool) else None,
            strip_accents if isinstance(strip_accents, bool) else None,
        )
    if kind == "Lowercase":
        return True, None
    if kind == "StripAccents":
        return None, True
    if kind == "Sequence":
        lowercase = strip_accents = None
        for step in normalizer.get("normalizers") or []:
            step_lower, step_strip = _normalizer_options(step)
            lowercase = step_lower if step_lower is not None else lowercase
            strip_accents = step_strip if step_strip is not None else strip_accents
        return lowercase, strip_accents
    return None, None


def _field(entry: object, key: str) -> object:
    return entry.get(key) if isinstance(entry, dict) else None


def _bad_tokenizer(problem: str) -> ModelError:
    return ModelError(
        f"tokenizer.json is not a BERT WordPiece tokenizer: {problem}", fix=_FIX_FOLDER
    )


# --- tensors ----------------------------------------------------------------------------------

# Present in checkpoints but not used by llama.cpp for embeddings (the reference drops them).
_DROPPED_PREFIXES = ("pooler.", "cls.predictions", "cls.seq_relationship")
_DROPPED_NAMES = ("embeddings.position_ids",)
# Matrices the reference keeps in f32 even when writing f16.
_F32_MATRICES = ("position_embd.weight", "token_types.weight")


def _hf_tensor_name(name: str) -> str | None:
    """The checkpoint name as the reference maps it, or None for tensors it drops."""
    name = name.removeprefix("bert.")
    if name.endswith(".gamma"):
        name = name.removesuffix(".gamma") + ".weight"
    if name.endswith(".beta"):
        name = name.removesuffix(".beta") + ".bias"
    if name in _DROPPED_NAMES or name.startswith(_DROPPED_PREFIXES):
        return None
    return name


def _gguf_type(gguf_name: str, n_dims: int) -> gguf.GGMLQuantizationType:
    if (
        n_dims <= 1
        or gguf_name.endswith("_norm.weight")
        or not gguf_name.endswith(".weight")
        or gguf_name in _F32_MATRICES
    ):
        return gguf.GGMLQuantizationType.F32
    return gguf.GGMLQuantizationType.F16


@dataclass(frozen=True)
class _OutputTensor:
    name: str
    source: npt.NDArray[Any]
    dtype: np.dtype[Any]

    @property
    def nbytes(self) -> int:
        return int(self.source.size) * self.dtype.itemsize

    def data(self) -> npt.NDArray[Any]:
        return np.ascontiguousarray(self.source, dtype=self.dtype)


def _output_tensors(
    checkpoint: Mapping[str, npt.NDArray[Any]], block_count: int
) -> list[_OutputTensor]:
    tensor_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, block_count)
    tensors = []
    for checkpoint_name in sorted(checkpoint):
        name = _hf_tensor_name(checkpoint_name)
        if name is None:
            continue
        gguf_name = tensor_map.get_name(name, try_suffixes=(".weight", ".bias"))
        if gguf_name is None:
            raise ModelError(
                f"model.safetensors has tensor {checkpoint_name!r} that llama.cpp's BERT "
                "does not know",
                fix="only plain BERT encoders (BertModel) can be converted",
            )
        source = checkpoint[checkpoint_name]
        if source.dtype.kind != "f":
            raise ModelError(
                f"model.safetensors tensor {checkpoint_name!r} is {source.dtype}, not floating",
                fix="only floating-point BERT checkpoints can be converted",
            )
        ggml_type = _gguf_type(gguf_name, source.ndim)
        dtype = np.dtype(np.float16 if ggml_type == gguf.GGMLQuantizationType.F16 else np.float32)
        tensors.append(_OutputTensor(gguf_name, source, dtype))

    missing = sorted(_required_tensors(block_count) - {tensor.name for tensor in tensors})
    if missing:
        raise ModelError(
            f"model.safetensors lacks {len(missing)} BERT tensors, e.g. {missing[0]!r}",
            fix="the checkpoint is incomplete or not a BertModel: use the original folder",
        )
    return tensors


def _required_tensors(block_count: int) -> set[str]:
    embeddings = ("token_embd", "position_embd", "token_types", "token_embd_norm")
    per_block = (
        "attn_q", "attn_k", "attn_v", "attn_output", "attn_output_norm",
        "ffn_up", "ffn_down", "layer_output_norm",
    )  # fmt: skip
    names = {f"{name}.weight" for name in embeddings}
    names |= {f"blk.{i}.{name}.weight" for i in range(block_count) for name in per_block}
    return names


# --- folder -----------------------------------------------------------------------------------


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ModelError(f"{path.name} is missing in {path.parent}", fix=_FIX_FOLDER) from exc
    except OSError as exc:
        raise ModelError(f"cannot read {path}: {exc.strerror}", fix=_FIX_FOLDER) from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"{path} is not valid JSON ({exc})", fix=_FIX_FOLDER) from exc


def _config_int(config: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = config.get(key, default)
    if not (_is_count(value) and value > 0):
        raise ModelError(f"config.json has no positive integer {key!r}", fix=_FIX_FOLDER)
    return value


def _pooling_type(model_dir: Path) -> gguf.PoolingType:
    modules = _read_json(model_dir / "modules.json")
    if not isinstance(modules, list):
        raise ModelError("modules.json is not a list of modules", fix=_FIX_FOLDER)
    pooling_path = None
    for module in modules:
        kind = str(module.get("type", "")) if isinstance(module, dict) else ""
        short = kind.removeprefix(_SENTENCE_TRANSFORMERS)
        if short not in _SUPPORTED_MODULES:
            raise ModelError(
                f"modules.json has module {kind or module!r}, which llama.cpp cannot run",
                fix="only Transformer + Pooling (+ Normalize) sentence-transformers models convert",
            )
        if short == "Transformer" and module.get("path", "") != "":
            raise ModelError("modules.json puts the Transformer in a sub-folder", fix=_FIX_FOLDER)
        if short == "Pooling":
            pooling_path = str(module.get("path", ""))
    if pooling_path is None:
        raise ModelError("modules.json has no Pooling module", fix=_FIX_FOLDER)

    pooling = _read_json(model_dir / pooling_path / "config.json")
    if not isinstance(pooling, dict):
        raise ModelError(f"{pooling_path}/config.json is not a JSON object", fix=_FIX_FOLDER)
    for flag, pooling_type in _POOLING_FLAGS:
        if pooling.get(flag):
            return pooling_type
    if (mode := pooling.get("pooling_mode")) in _POOLING_MODES:
        return _POOLING_MODES[mode]
    raise ModelError(
        f"{pooling_path}/config.json asks for a pooling llama.cpp lacks",
        fix="only mean, CLS and last-token pooling convert",
    )


def convert_st_bert(
    model_dir: Path,
    out_path: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Write ``out_path``: a GGUF (f16) of the sentence-transformers BERT in ``model_dir``.

    ``progress(done, total)`` is called after each tensor with bytes of tensor data written.
    Raises ModelError when the folder is not a convertible BERT.
    """
    config = _read_json(model_dir / "config.json")
    if not isinstance(config, dict) or config.get("model_type") != "bert":
        raise ModelError(f"{model_dir}/config.json does not describe a BERT model", fix=_FIX_FOLDER)
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ModelError(
            "config.json asks for relative position embeddings, which llama.cpp's BERT lacks",
            fix="only BERT models with absolute position embeddings convert",
        )
    block_count = _config_int(config, "num_hidden_layers")
    vocab_size = _config_int(config, "vocab_size")
    eps = config.get("layer_norm_eps", 1e-12)
    if not isinstance(eps, float | int) or isinstance(eps, bool):
        raise ModelError("config.json layer_norm_eps is not a number", fix=_FIX_FOLDER)
    pad_token_id = config.get("pad_token_id")

    pooling_type = _pooling_type(model_dir)
    tokenizer = _read_json(model_dir / "tokenizer.json")
    if not isinstance(tokenizer, dict):
        raise _bad_tokenizer("it is not a JSON object")
    vocab = bert_vocab(tokenizer, vocab_size, pad_token_id if _is_count(pad_token_id) else None)
    tensors = _output_tensors(read_safetensors(model_dir / "model.safetensors"), block_count)
    hidden_size = _config_int(config, "hidden_size")
    embeddings = next(tensor.source for tensor in tensors if tensor.name == "token_embd.weight")
    if embeddings.shape != (vocab_size, hidden_size):
        raise ModelError(
            f"model.safetensors word embeddings are {embeddings.shape}, config.json says "
            f"{(vocab_size, hidden_size)}",
            fix="config.json and model.safetensors come from different models",
        )

    writer = gguf.GGUFWriter(path=None, arch=gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT])
    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_block_count(block_count)
    writer.add_context_length(_config_int(config, "max_position_embeddings"))
    writer.add_embedding_length(hidden_size)
    writer.add_feed_forward_length(_config_int(config, "intermediate_size"))
    writer.add_head_count(_config_int(config, "num_attention_heads"))
    writer.add_layer_norm_eps(float(eps))
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_causal_attention(False)
    writer.add_pooling_type(pooling_type)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)

    writer.add_token_type_count(_config_int(config, "type_vocab_size", default=1))
    _add_tokenizer(writer, vocab)
    _write_gguf(writer, tensors, out_path, progress)


def _add_tokenizer(writer: gguf.GGUFWriter, vocab: BertVocab) -> None:
    """The WordPiece vocabulary and its normalisation, as llama.cpp's BERT reads them."""
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre(_TOKENIZER_PRE)
    writer.add_token_list(vocab.tokens)
    writer.add_token_types(vocab.token_types)
    for kind, token_id in vocab.special_ids.items():
        getattr(writer, f"add_{kind}_token_id")(token_id)
    # What the reference derives from the "[CLS] $A [SEP]" template.
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(True)
    if vocab.lowercase is not None:
        writer.add_bool(_KEY_LOWERCASE, vocab.lowercase)
    if vocab.strip_accents is not None:
        writer.add_bool(_KEY_STRIP_ACCENTS, vocab.strip_accents)


def _write_gguf(
    writer: gguf.GGUFWriter,
    tensors: Sequence[_OutputTensor],
    out_path: Path,
    progress: Callable[[int, int], None] | None,
) -> None:
    """Write the header, the metadata and the tensors to ``out_path``, then close ``writer``."""
    for tensor in tensors:
        writer.add_tensor_info(tensor.name, tensor.source.shape, tensor.dtype, tensor.nbytes)

    total = sum(tensor.nbytes for tensor in tensors)
    done = 0
    try:
        writer.write_header_to_file(path=out_path)
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        for tensor in tensors:
            writer.write_tensor_data(tensor.data())
            done += tensor.nbytes
            if progress is not None:
                progress(done, total)
    except OSError as exc:
        raise ModelError(
            f"cannot write {out_path}: {exc.strerror or exc}", fix="check free disk space"
        ) from exc
    finally:
        writer.close()

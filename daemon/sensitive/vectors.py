"""Word vectors for the judge: a word nobody listed placed by what it is near.

The vectors are the input word-piece embeddings of the sentence-embedding model already
installed (all-MiniLM-L6-v2, a GGUF file): a word is split into the model's word pieces the way
its tokenizer splits it (longest piece first) and its vector is the mean of its pieces' rows
("servers" near "server", "temporary" near "temp"); a compound's last piece is its head
("mastercode": "code"). Pieces of one or two letters spell rather than mean: a word that splits
into one has no vector. Nothing is computed by the model itself: one table read once, then a
lookup and a mean per word.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["VectorsUnavailable", "WordVectors", "read"]

_TABLE = "token_embd.weight"
_TOKENS = "tokenizer.ggml.tokens"
_START = "\u2581"  # how the GGUF vocabulary marks a word's first piece
_LONGEST_WORD = 30
_SHORTEST_PIECE = 3
_PLURAL = frozenset({"s", "es"})

Vector = npt.NDArray[np.float32]


class VectorsUnavailable(Exception):
    """The vector file is missing or not a word-piece embedding model."""


class WordVectors:
    """A word-piece vocabulary and its embedding rows (unit length per word)."""

    def __init__(self, pieces: dict[str, int], table: npt.NDArray[np.floating[Any]]) -> None:
        self._pieces = pieces
        self._table = table

    def split(self, word: str) -> list[str] | None:
        """``word``'s pieces, longest first as the tokenizer takes them; None if one is
        missing."""
        out: list[str] = []
        rest = _START + word
        while rest:
            for end in range(len(rest), 0, -1):
                if rest[:end] in self._pieces:
                    out.append(rest[:end])
                    rest = rest[end:]
                    break
            else:
                return None
        return out

    def head(self, word: str) -> str | None:
        """The last part of a compound, as a word ("mastercode": "code", "padlocks": "lock"),
        when the word splits into two or more pieces of three letters or more; else None."""
        pieces = self._meaningful(word)
        return pieces[-1] if pieces and len(pieces) > 1 else None

    def _meaningful(self, word: str) -> list[str] | None:
        pieces = self.split(word) if 0 < len(word) <= _LONGEST_WORD else None
        if pieces and len(pieces) > 1 and pieces[-1] in _PLURAL:
            pieces = pieces[:-1]  # "padlocks": pad + lock (+ s)
        if not pieces or any(len(p.lstrip(_START)) < _SHORTEST_PIECE for p in pieces):
            return None
        return pieces

    def vector(self, word: str) -> Vector | None:
        """The unit-length mean of ``word``'s pieces; None for a word that does not split, or
        splits into a fragment shorter than three letters ("aac": "aa" + "c"), which spells
        rather than means; a plural ending is left out."""
        pieces = self._meaningful(word)
        if not pieces:
            return None
        rows = self._table[[self._pieces[p] for p in pieces]].astype(np.float32)
        v = rows.mean(axis=0)
        norm = float(np.linalg.norm(v))
        return (v / norm).astype(np.float32) if norm > 0 else None


def read(path: Path) -> WordVectors:
    """The word vectors of the GGUF embedding model at ``path``.

    Raises VectorsUnavailable when the file is missing, unreadable or holds no word-piece
    vocabulary and embedding table of matching size.
    """
    import gguf  # the reader of the model file; imported only when vectors are wanted

    try:
        reader = gguf.GGUFReader(path)
        field = reader.fields.get(_TOKENS)
        tensor = next((t for t in reader.tensors if t.name == _TABLE), None)
        if field is None or tensor is None:
            raise VectorsUnavailable(f"{path} has no word-piece vocabulary and embedding table")
        tokens = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
        table = tensor.data  # the file's rows as they are stored (f16), mapped, not copied
    except (OSError, ValueError, KeyError, IndexError, UnicodeDecodeError) as e:
        raise VectorsUnavailable(f"cannot read word vectors from {path}: {e}") from e
    if table.ndim != 2 or table.shape[0] != len(tokens) or table.dtype.kind != "f":
        raise VectorsUnavailable(f"{path}: {len(tokens)} tokens but a table of {table.shape}")
    pieces = {t: i for i, t in enumerate(tokens)}
    return WordVectors(pieces, table)

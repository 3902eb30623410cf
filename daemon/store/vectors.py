"""The usearch index: a cache over the vectors stored as BLOBs in the database.

The database is the source of truth: every vector is a row of ``embeddings`` (owner, model id,
dimensions, float32 BLOB). A :class:`VectorIndex` holds the rows of one owner kind (chunks,
assertions) embedded by the current model, keyed by the embedding row id, in a usearch file in
the profile's data directory beside a small JSON sidecar (model id, dimensions, count, highest
id, sha256 of the index file). On open it is checked against the database and:

- rebuilt from the BLOBs when the file is missing, fails its checksum or cannot be loaded, or was
  built by another model or with other dimensions (each with a log line saying why);
- reconciled (missing rows added, deleted rows removed) when it is out of step, as after a crash
  between a commit and the next save. Embedding rows are never updated in place — re-embedding
  writes a new row with a new id — so comparing the sets of ids is enough.

With a key (the database's, when it is encrypted) the index file is never written in the clear
(vectors can be inverted towards their text): the serialised index is sealed with AES-256-GCM
under a key derived from the database key, and opened the same way; a file that does not open
with the key is rebuilt like a corrupt one.

usearch cannot filter while searching, so :func:`scoped_search` over-fetches from the index and
keeps the keys the caller allows, falling back to an exact search over the allowed rows' vectors
when the index is small or the over-fetch runs short.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import apsw
import msgspec
import numpy as np
import numpy.typing as npt

# onnxruntime (the search re-ranker's runtime) crashes the process with a segmentation fault
# when it is imported after usearch (usearch 2.26, onnxruntime 1.28-1.32); imported first, both
# work. Every path to usearch comes through here, so this import keeps the order.
import onnxruntime  # noqa: F401
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from usearch.index import Index

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]
Keys = npt.NDArray[np.uint64]

EXPANSION_SEARCH = 128  # notes/platform.md: recall 0.87-0.99 for expansion 64-256
EXACT_BELOW = 2048  # an index this small is searched exactly: as fast, and never approximate
MAX_OVERFETCH = 4096
# Saved once this many changes are unsaved (at least SAVE_EVERY, else a tenth of the index): a
# crash then costs a reconcile of the recent changes, not a rebuild of everything, which takes
# minutes for a large index on two cores; the save itself takes well under a second.
SAVE_EVERY = 1000
_REBUILD_BATCH = 4096
# An index file of this many vectors or more, when not encrypted, is memory-mapped (usearch's
# ``view``) instead of read into memory: a million 384-dimensional vectors are ~0.9 GB, of
# which a search touches a few pages. A mapped file is read-only, so what changes after it was
# saved lives in a small in-memory index beside it until the next save.
MAP_FROM = 50_000


class IndexMeta(msgspec.Struct, frozen=True):
    """The sidecar: what the index file holds, to tell whether it is still usable."""

    model_id: str
    dims: int
    count: int
    max_id: int
    sha256: str
    encrypted: bool = False
    # the file's size and mtime when it was saved: while they are unchanged the checksum is
    # not recomputed at open (it reads the whole file, a second per GB)
    size: int = 0
    mtime_ns: int = 0


def to_blob(vector: npt.ArrayLike) -> bytes:
    """A vector as stored in ``embeddings.vector``: little-endian float32."""
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes, dims: int) -> Vectors:
    """One BLOB as a vector (:func:`from_blobs` of one)."""
    vector: Vectors = from_blobs([blob], dims)[0]
    return vector


def from_blobs(blobs: Sequence[bytes], dims: int) -> Vectors:
    """Many BLOBs as the rows of one matrix (one copy, not one array per row)."""
    for blob in blobs:
        if len(blob) != 4 * dims:
            raise ValueError(f"vector BLOB of {len(blob) / 4:g} floats, expected {dims}")
    joined = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dims)
    return joined.astype(np.float32)


def normalise(vectors: npt.ArrayLike) -> Vectors:
    """Unit rows (cosine = dot product); a zero row stays zero."""
    matrix = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)


def exact_search(
    query: Vectors, keys: Sequence[int], matrix: Vectors, k: int
) -> list[tuple[int, float]]:
    """The ``k`` rows of ``matrix`` most like ``query``: (key, cosine similarity), best first."""
    if not len(keys) or k <= 0:
        return []
    sims = normalise(matrix) @ normalise(query)[0]
    top = np.argsort(-sims, kind="stable")[:k]
    return [(int(keys[i]), float(sims[i])) for i in top]


class VectorIndex:
    """The usearch cache of one owner kind's vectors under one embedding model."""

    def __init__(self, path: Path, *, owner_kind: str, model_id: str, dims: int,
                 key: bytes | None = None) -> None:
        self.path = path
        self._sealer = None if key is None else AESGCM(_index_key(key))
        self.meta_path = path.with_suffix(".json")
        self.owner_kind = owner_kind
        self.model_id = model_id
        self.dims = dims
        self._lock = threading.Lock()
        self._save_lock = threading.Lock()  # saves come from the writer thread and from close
        # everything, or — while the saved file is memory-mapped (``_view``) — what was added
        # since it was saved; keys removed from the mapped file since are ``_hidden``
        self._index = self._new_index()
        self._view: Index | None = None
        self._hidden: set[int] = set()
        self._unsaved = 0
        self._saved: IndexMeta | None = None  # the sidecar of the file loaded

    def __len__(self) -> int:
        with self._lock:
            return self._len()

    def _len(self) -> int:
        viewed = len(self._view) - len(self._hidden) if self._view is not None else 0
        return len(self._index) + viewed

    @property
    def mapped(self) -> bool:
        """Whether the saved file is memory-mapped rather than read into memory."""
        with self._lock:
            return self._view is not None

    def open(self, conn: apsw.Connection) -> None:
        """Load the file and bring it in step with the database, or rebuild it from the BLOBs."""
        reason = self._load(conn)
        if reason is not None:
            log.warning("rebuilding the %s vector index: %s", self.owner_kind, reason)
            self._rebuild(conn)
            self.save()
            return
        if self._saved is not None and _extent(conn, self) == (
                self._saved.count, self._saved.max_id):
            return  # ids only grow and rows are never updated: nothing was added or deleted
        missing, extra = self._reconcile(conn)
        if missing or extra:
            log.warning(
                "the %s vector index was out of step with the database "
                "(%d vectors missing, %d deleted): reconciled",
                self.owner_kind,
                missing,
                extra,
            )
            self.save()

    def add(self, keys: Sequence[int], vectors: Vectors) -> None:
        if not len(keys):
            return
        with self._lock:
            self._index.add(np.asarray(keys, dtype=np.uint64), normalise(vectors))
            self._unsaved += len(keys)

    def remove(self, keys: Sequence[int]) -> None:
        if not len(keys):
            return
        with self._lock:
            present = [k for k in keys if k in self._index]
            if present:
                self._index.remove(np.asarray(present, dtype=np.uint64))
                self._unsaved += len(present)
            if self._view is not None:  # a mapped file is read-only: its keys are hidden
                mapped = [k for k in keys if k in self._view and k not in self._hidden]
                self._hidden.update(mapped)
                self._unsaved += len(mapped)

    def keys(self) -> set[int]:
        with self._lock:
            found = {int(k) for k in np.asarray(self._index.keys)}
            if self._view is not None:
                found |= {int(k) for k in np.asarray(self._view.keys)} - self._hidden
            return found

    def search(self, query: Vectors, count: int) -> list[tuple[int, float]]:
        """Approximate nearest neighbours: (key, cosine similarity), best first."""
        if count <= 0:
            return []
        unit = normalise(query)[0]
        found: list[tuple[int, float]] = []
        with self._lock:
            for index, hidden in ((self._index, set()), (self._view, self._hidden)):
                if index is None or not len(index):
                    continue
                matches = index.search(unit, min(len(index), count + len(hidden)))
                found += [
                    (int(key), 1.0 - float(distance))
                    for key, distance in zip(matches.keys, matches.distances, strict=True)
                    if int(key) not in hidden
                ]
        return sorted(found, key=lambda hit: -hit[1])[:count]

    @property
    def dirty(self) -> bool:
        """Whether the file lacks changes made here since it was loaded or saved."""
        with self._lock:
            return self._unsaved > 0 or not self.path.exists()

    def save_if_due(self) -> bool:
        """Save when enough has changed since the last save (see SAVE_EVERY)."""
        with self._lock:
            due = self._unsaved >= max(SAVE_EVERY, self._len() // 10)
        if due:
            self.save()
        return due

    def save(self) -> None:
        """Write the index and its sidecar atomically (a crash leaves the old pair or a
        checksum mismatch, never a silently wrong index)."""
        tmp = self.path.with_suffix(".usearch.tmp")
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with self._save_lock:
            with self._lock:
                whole = self._whole()
                if self._sealer is None:
                    whole.save(str(tmp))
                else:
                    serialised = whole.save()
                    assert serialised is not None  # no path: the index as bytes
                    self._write_sealed(tmp, bytes(serialised))
                keys = np.asarray(whole.keys)
                self._unsaved = 0
                if self._sealer is None and len(whole) >= MAP_FROM:
                    mapped = Index.restore(str(tmp), view=True)  # the new file, mapped
                    assert mapped is not None
                    mapped.expansion_search = EXPANSION_SEARCH  # type: ignore[misc]
                    self._view, self._index = mapped, self._new_index()
                else:
                    self._view, self._index = None, whole
                self._hidden = set()
            os.chmod(tmp, 0o600)
            stat = tmp.stat()  # a rename keeps it
            meta = IndexMeta(
                model_id=self.model_id,
                dims=self.dims,
                count=len(keys),
                max_id=int(keys.max()) if len(keys) else 0,
                sha256=_sha256(tmp),
                encrypted=self._sealer is not None,
                size=stat.st_size,
                mtime_ns=stat.st_mtime_ns,
            )
            os.replace(tmp, self.path)
            _write_private(self.meta_path, msgspec.json.encode(meta))

    # -- internals ---------------------------------------------------------------------------

    def _whole(self) -> Index:
        """Everything in one in-memory index (with a mapped file: read in, the changes since
        applied — memory for the whole index only while it is saved)."""
        if self._view is None:
            return self._index
        whole = Index.restore(str(self.path))
        assert whole is not None
        # (another process may have saved the file since it was mapped: the next open's
        # reconcile settles any difference, so only keys present are removed, absent added)
        hidden = [key for key in sorted(self._hidden) if key in whole]
        if hidden:
            whole.remove(np.asarray(hidden, dtype=np.uint64))
        added = np.asarray([int(k) for k in np.asarray(self._index.keys) if int(k) not in whole],
                           dtype=np.uint64)
        if len(added):
            got: Any = self._index.get(added, dtype="f32")  # a tuple of rows, or one matrix
            whole.add(added, np.stack([np.asarray(row, dtype=np.float32) for row in got]))
        return whole

    def _write_sealed(self, path: Path, data: bytes) -> None:
        assert self._sealer is not None
        nonce = os.urandom(12)
        sealed = self._sealer.encrypt(nonce, data, self.owner_kind.encode())
        with path.open("wb") as f:
            f.write(nonce + sealed)

    def _read_sealed(self) -> bytes:
        assert self._sealer is not None
        data = self.path.read_bytes()
        return self._sealer.decrypt(data[:12], data[12:], self.owner_kind.encode())

    def _new_index(self) -> Index:
        return Index(ndim=self.dims, metric="cos", dtype="bf16", expansion_search=EXPANSION_SEARCH)

    def _load(self, conn: apsw.Connection) -> str | None:
        """Load the file; on failure return why it must be rebuilt (None when loaded)."""
        if not self.path.exists():
            return None if not _count_rows(conn, self) else "no index file"
        try:
            meta = msgspec.json.decode(self.meta_path.read_bytes(), type=IndexMeta)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError) as e:
            return f"its sidecar {self.meta_path.name} is missing or unreadable ({e})"
        if meta.model_id != self.model_id:
            return (
                f"it was built by model {meta.model_id!r}, the current model is {self.model_id!r}"
            )
        if meta.dims != self.dims:
            return f"it holds {meta.dims}-dimensional vectors, the model makes {self.dims}"
        stat = self.path.stat()
        unchanged = (stat.st_size, stat.st_mtime_ns) == (meta.size, meta.mtime_ns)
        if not unchanged and _sha256(self.path) != meta.sha256:
            return "the index file is corrupt (checksum mismatch)"
        if meta.encrypted != (self._sealer is not None):
            return ("it is encrypted and the database is not" if meta.encrypted
                    else "it was written in the clear and the database is encrypted")
        mapped = self._sealer is None and meta.count >= MAP_FROM
        try:
            index = Index.restore(str(self.path) if self._sealer is None
                                  else self._read_sealed(), view=mapped)
        except InvalidTag:
            return "the index file does not open with the database's key"
        except (ValueError, RuntimeError, OSError) as e:
            return f"the index file cannot be loaded ({e})"
        if index is None or index.ndim != self.dims or len(index) != meta.count:
            return "the index file does not match its sidecar"
        index.expansion_search = EXPANSION_SEARCH  # type: ignore[misc]  # the stub lacks the setter
        with self._lock:
            if mapped:
                self._view, self._index = index, self._new_index()
            else:
                self._view, self._index = None, index
            self._hidden = set()
        if not unchanged:  # checked once: the next open trusts the file as it is now
            meta = msgspec.structs.replace(meta, size=stat.st_size, mtime_ns=stat.st_mtime_ns)
            _write_private(self.meta_path, msgspec.json.encode(meta))
        self._saved = meta
        return None

    def _rebuild(self, conn: apsw.Connection) -> None:
        index = self._new_index()
        keys: list[int] = []
        blobs: list[bytes] = []
        for key, blob in _rows(conn, self):
            keys.append(key)
            blobs.append(blob)
            if len(keys) >= _REBUILD_BATCH:
                _add_blobs(index, keys, blobs, self.dims)
                keys, blobs = [], []
        _add_blobs(index, keys, blobs, self.dims)
        with self._lock:
            self._view, self._index, self._hidden = None, index, set()

    def _reconcile(self, conn: apsw.Connection) -> tuple[int, int]:
        """Add the rows the index lacks, drop the keys the database no longer has."""
        in_db = {
            key
            for (key,) in conn.execute(
                "SELECT id FROM embeddings WHERE owner_kind = ? AND model_id = ? AND dims = ?",
                (self.owner_kind, self.model_id, self.dims),
            )
        }
        in_index = self.keys()
        extra = sorted(in_index - in_db)
        missing = sorted(in_db - in_index)
        self.remove(extra)
        for start in range(0, len(missing), _REBUILD_BATCH):
            batch = missing[start : start + _REBUILD_BATCH]
            rows: list[Any] = conn.execute(
                "SELECT id, vector FROM embeddings WHERE id IN (SELECT value FROM json_each(?))",
                (msgspec.json.encode(batch).decode(),),
            ).fetchall()
            with self._lock:
                _add_blobs(self._index, [r[0] for r in rows], [r[1] for r in rows], self.dims)
        return len(missing), len(extra)


def scoped_search(
    index: VectorIndex,
    query: Vectors,
    k: int,
    *,
    allowed: Callable[[list[int]], dict[int, int]],
    allowed_rows: Callable[[], tuple[list[int], list[int], Vectors]],
    allowed_count: Callable[[int], int] | None = None,
) -> list[tuple[int, float]]:
    """The ``k`` nearest owners within a scope: (owner id, cosine similarity), best first.

    ``allowed(keys)`` maps the keys (embedding ids) that are within the scope to their owner ids;
    ``allowed_rows()`` returns every in-scope row as (keys, owner ids, vectors) for the exact
    fallback. ``allowed_count(at_most)``, when given, counts the in-scope rows first (stopping
    at ``at_most``): a scope that admits few rows of a large index is searched exactly at once,
    instead of over-fetching from the index for matches that are not there.
    """
    if k <= 0 or not len(index):
        return []
    size = len(index)
    first_fetch = max(64, 8 * k)  # the index's first over-fetch for what the scope admits
    if allowed_count is not None and size > EXACT_BELOW:
        # beyond every bound the size is compared with below, a larger count changes nothing
        # (at a million items the archives alone are 7,600 rows, each a read of two tables)
        size = min(size, allowed_count(max(EXACT_BELOW, MAX_OVERFETCH, first_fetch) + 1))
        if not size:
            return []
    if size > EXACT_BELOW:
        fetch = min(size, first_fetch)
        while True:
            candidates = index.search(query, fetch)
            owners = allowed([key for key, _ in candidates])
            hits = [(owners[key], sim) for key, sim in candidates if key in owners]
            if len(hits) >= k:
                return hits[:k]
            if fetch >= min(size, MAX_OVERFETCH):
                break
            fetch = min(size, MAX_OVERFETCH, fetch * 4)
    keys, owner_ids, matrix = allowed_rows()
    owner_of = dict(zip(keys, owner_ids, strict=True))
    return [(owner_of[key], sim) for key, sim in exact_search(query, keys, matrix, k)]


def _rows(conn: apsw.Connection, index: VectorIndex) -> apsw.Cursor:
    return conn.execute(
        "SELECT id, vector FROM embeddings WHERE owner_kind = ? AND model_id = ? AND dims = ?",
        (index.owner_kind, index.model_id, index.dims),
    )


def _extent(conn: apsw.Connection, index: VectorIndex) -> tuple[int, int]:
    """How many rows the index should hold and the highest id (read from the model's index on
    ``embeddings`` alone: a second for a million rows less than reading their ids)."""
    row: Any = conn.execute(
        "SELECT count(*), coalesce(max(id), 0) FROM embeddings"
        " WHERE model_id = ? AND owner_kind = ?",
        (index.model_id, index.owner_kind),
    ).fetchall()[0]
    return int(row[0]), int(row[1])


def _count_rows(conn: apsw.Connection, index: VectorIndex) -> int:
    count: int = conn.execute(
        "SELECT count(*) FROM embeddings WHERE owner_kind = ? AND model_id = ? AND dims = ?",
        (index.owner_kind, index.model_id, index.dims),
    ).get
    return count


def _add_blobs(index: Index, keys: list[int], blobs: list[bytes], dims: int) -> None:
    if keys:
        matrix = from_blobs(blobs, dims)
        index.add(np.asarray(keys, dtype=np.uint64), normalise(matrix))


def remove_index_files(data_dir: Path) -> None:
    """Delete the index files of a profile (after its database was replaced or re-keyed):
    they are rebuilt from the database at the next open."""
    for path in (*data_dir.glob("vectors-*.usearch"), *data_dir.glob("vectors-*.json")):
        path.unlink(missing_ok=True)


def _index_key(database_key: bytes) -> bytes:
    """The index files' key: derived from the database key, never equal to it."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                info=b"braincue vector index").derive(database_key)


def _write_private(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, readable by the user alone."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()

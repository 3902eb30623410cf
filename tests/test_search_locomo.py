"""bench/locomo.py on a small file of LoCoMo's shape: evidence repair, loading, scoring."""

from __future__ import annotations

import json
from pathlib import Path

from bench.locomo import (
    SYSTEMS,
    EvidenceFixes,
    Found,
    cached_store,
    fix_evidence,
    load,
    report,
    run,
    within_budget,
)
from daemon.llm.embed import ScriptedEmbedder
from daemon.store.store import Store

KNOWN = {"D1:1", "D1:2", "D4:4", "D8:6", "D9:1", "D9:17", "D11:26", "D30:5"}


def test_evidence_entries_are_split_normalised_and_dropped() -> None:
    fixes = EvidenceFixes()
    entries = ["D8:6; D9:17", "D9:1 D4:4", "D:11:26", "D30:05", "D", "D10:19", "D1:1", "D1:1"]

    assert fix_evidence(entries, KNOWN, fixes) == (
        "D8:6", "D9:17", "D9:1", "D4:4", "D11:26", "D30:5", "D1:1")
    assert (fixes.split, fixes.normalised, fixes.dropped) == (2, 2, 2)
    assert fixes.total == 6


def sample() -> list[dict[str, object]]:
    filler = [f"We talked about the weather and item {i} of the grocery list." for i in range(30)]
    session_1 = [{"speaker": "Ann" if i % 2 else "Bob", "dia_id": f"D1:{i + 1}", "text": t}
                 for i, t in enumerate(filler)]
    session_1[4]["text"] = "I adopted a puppy called Biscuit from the shelter."
    session_2 = [
        {"speaker": "Ann", "dia_id": "D2:1", "text": "Look at my new painting!",
         "blip_caption": "a photo of a lighthouse at sunset", "img_url": ["x"]},
        {"speaker": "Bob", "dia_id": "D2:2", "text": "Lovely colours."},
    ]
    return [{
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": session_1,
            "session_2_date_time": "10:37 am on 27 June, 2023", "session_2": session_2,
        },
        "qa": [
            {"question": "What is the name of the puppy from the shelter?", "answer": "Biscuit",
             "evidence": ["D1:5"], "category": 4},
            {"question": "What did Ann paint?", "answer": "a lighthouse",
             "evidence": ["D2:1; D1:05"], "category": 1},
            {"question": "Unanswerable?", "evidence": ["D1:1"], "category": 5},
            {"question": "No evidence left", "answer": "x", "evidence": ["D"], "category": 2},
            {"question": "Empty", "answer": "x", "evidence": [], "category": 3},
        ],
    }]


def test_load_reads_sessions_captions_and_questions(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(sample()))

    (conversation,), fixes = load(path)

    assert [len(s.turns) for s in conversation.sessions] == [30, 2]
    assert conversation.sessions[1].started_at.isoformat() == "2023-06-27T10:37:00"
    first = conversation.sessions[1].turns[0]
    assert (first.ref, first.text) == (
        "D2:1", "Look at my new painting! [image: a photo of a lighthouse at sunset]")
    assert [(q.category, q.evidence) for q in conversation.questions] == [
        (4, ("D1:5",)), (1, ("D2:1", "D1:5"))]
    assert (fixes.split, fixes.normalised, fixes.dropped, fixes.skipped) == (1, 1, 1, 2)


def test_run_scores_every_system_and_the_character_budget(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(sample()))
    conversations, fixes = load(path)

    tally = run(conversations, ScriptedEmbedder(64), [1, 5])

    assert tally.count() == 2
    for system in SYSTEMS:
        assert tally.percent(system, "all", 5, 4) == 100.0, system  # the puppy: exact words
    assert tally.percent("shipped", "any", 5, 1) == 100.0
    assert tally.mean_chars("shipped_budget", 1) <= tally.mean_chars("fts", 1)
    table = report(tally, [1, 5], fixes)
    assert "| shipped search |" in table and "| FTS5 BM25 only |" in table
    # the puppy is said in one chunk, the painting question's evidence lies in two sessions
    assert "shipped search, all@1 by where the evidence lies: in 1 chunk 100.0% of 1," \
        " in 2 chunks 0.0% of 1, in 3 chunks or more – of 0" in table


def test_a_cached_store_is_built_once_and_scores_as_a_fresh_one(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(sample()))
    conversations, _ = load(path)
    embedder = ScriptedEmbedder(64)
    cache = tmp_path / "cache"

    fresh = run(conversations, embedder, [1, 5])
    first = run(conversations, embedder, [1, 5], cache=cache)
    (built,) = [d for d in cache.iterdir() if (d / "built.json").exists()]
    stamp = (built / "built.json").stat().st_mtime_ns
    second = run(conversations, embedder, [1, 5], cache=cache)

    assert (built / "built.json").stat().st_mtime_ns == stamp  # reused, not rebuilt
    assert list(cache.iterdir()) == [built]
    figures = [json.dumps(t.figures([*SYSTEMS], [1, 5])) for t in (fresh, first, second)]
    assert figures[0] == figures[1] == figures[2]  # json: a category without questions is NaN


def test_an_unfinished_cached_store_is_built_again(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(sample()))
    (conversation,), _ = load(path)
    embedder = ScriptedEmbedder(64)
    data_dir, _ = cached_store(conversation, tmp_path, embedder)
    (data_dir / "built.json").unlink()  # as a build that was stopped leaves it
    (data_dir / "leftover").write_text("x")

    again, scope = cached_store(conversation, tmp_path, embedder)

    assert again == data_dir and not (again / "leftover").exists()
    assert (again / "built.json").exists() and scope.space_id is not None


def test_a_changed_conversation_gets_a_store_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(sample()))
    (before,), _ = load(path)
    changed = sample()
    changed[0]["conversation"]["session_2"][1]["text"] = "Lovely colours, and a new frame."  # type: ignore[index]
    path.write_text(json.dumps(changed))
    (after,), _ = load(path)
    embedder = ScriptedEmbedder(64)

    old_dir, _ = cached_store(before, tmp_path, embedder)
    new_dir, _ = cached_store(after, tmp_path, embedder)

    assert old_dir != new_dir
    with Store(new_dir, embedder) as store:
        texts = [t.text for s in store.list_sessions() for t in store.turns(s.id)]
    assert "Lovely colours, and a new frame." in texts


def test_the_budget_keeps_leading_results_that_fit() -> None:
    found = [Found(frozenset({"a"}), 500), Found(frozenset({"b"}), 400), Found(frozenset(), 10)]
    assert within_budget(found, 905) == found[:2]
    assert within_budget(found, 910) == found
    assert within_budget(found, 400) == []

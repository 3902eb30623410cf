"""bench.qmsum_span's source: the gold span's turns only, chosen as the ask chooses or cut."""

from __future__ import annotations

from typing import Any

from bench.qmsum_span import span_source

MEETING: dict[str, Any] = {
    "title": "Remote control design, meeting A",
    "turns": [
        {"speaker": "Project Manager", "text": "Let's start with the budget.", "ref": "M:1"},
        {"speaker": "Marketing", "text": "The battery should last a year.", "ref": "M:2"},
        {"speaker": "Industrial Designer", "text": "A kinetic battery costs more.", "ref": "M:3"},
        {"speaker": "Marketing", "text": "Then we keep the normal battery.", "ref": "M:4"},
        {"speaker": "Project Manager", "text": "Lunch is at noon.", "ref": "M:5"},
    ],
}
QUERY = {"query": "What did the group decide about the battery?", "refs": ["M:2", "M:3", "M:4"]}


def test_the_source_holds_only_turns_of_the_gold_span() -> None:
    for mode in ("compact", "first:1000"):
        source = span_source(MEETING, QUERY, mode)
        assert {p.ref for p in source.passages} <= {"M:2", "M:3", "M:4"}
        assert source.kind == "transcript" and source.title == MEETING["title"]
    assert [p.ref for p in span_source(MEETING, QUERY, "first:1000").passages] == [
        "M:2", "M:3", "M:4"]


def test_first_n_stops_at_n_characters_but_keeps_one_turn() -> None:
    assert [p.ref for p in span_source(MEETING, QUERY, "first:60").passages] == ["M:2"]
    assert [p.ref for p in span_source(MEETING, QUERY, "first:1").passages] == ["M:2"]

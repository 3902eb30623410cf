"""Keeping a real meeting (AMI TS3010a from the QMSum dev set, 121 turns) with the real default
language model: whatever the model writes, what is stored holds the content rules — the
deterministic hygiene counts of bench.meetings are all 0 — and the archive is written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from test_keep_short_real import keeping

from bench.meetings import StoredAssertion, archive_sections, hygiene
from daemon.store.transcript import import_transcript, parse_transcript

# A few model calls over a 5k-character meeting: about a minute on two idle cores, far more on
# a shared CI machine; the timeout only guards against a hang.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


async def test_a_kept_real_meeting_holds_the_content_rules(
    installed_model: Callable[[str], Path], test_data: Path, tmp_path: Path
) -> None:
    path = test_data / "meetings" / "TS3010a.json"
    async with keeping(installed_model, tmp_path, "TS3010") as (store, _, rememberer):
        session, turns, _ = import_transcript(store, parse_transcript(path.read_bytes()),
                                              "TS3010")

        outcome = await rememberer.remember(session.id, "keep")

        print(outcome)
        assert outcome.archived, outcome.notes
        assert not [n for n in outcome.notes if "failed" in n]
        (chunk,) = store.archive(session.id)
        print(chunk.body)
        assert chunk.body.startswith("Topic: ")
        who, _ = archive_sections(chunk.body)
        assert who == list(dict.fromkeys(t.speaker for t in turns))
        stored = [StoredAssertion(a.kind, a.text, a.chosen or "", a.alternatives,
                                  a.reasoning or "", a.owner or "")
                  for a in store.list_assertions(session_id=session.id)]
        for a in stored:
            print(a)
        counts = hygiene(chunk.body, stored, [t.speaker for t in turns], [t.text for t in turns])
        assert counts == dict.fromkeys(counts, 0), counts

"""Crash safety: a process writing turns is SIGKILLed; every turn it committed survives, the
vector index is rebuilt or reconciled, and search finds the last committed turn."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from storekit import open_store

from daemon.llm.embed import ScriptedEmbedder
from daemon.store.scope import Scope

WRITER = Path(__file__).with_name("store_crash_writer.py")
ROOT = Path(__file__).resolve().parents[1]
COMMITS = 60  # enough for chunks to close while the writer runs


def test_committed_turns_survive_sigkill(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data_dir = tmp_path / "profile"
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), str(data_dir)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    try:
        session_line = proc.stdout.readline()
        assert session_line.startswith("session "), session_line
        session_id = int(session_line.split()[1])
        reported = 0
        while reported < COMMITS:
            line = proc.stdout.readline()
            assert line, "the writer died before it was killed"
            reported = int(line)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL

    with (
        caplog.at_level(logging.WARNING, logger="daemon.store.vectors"),
        open_store(data_dir, ScriptedEmbedder()) as store,
    ):
        turns = store.turns(session_id)
        assert len(turns) >= reported
        assert [t.text.split()[0] for t in turns[:reported]] == [
            f"marker{n}" for n in range(1, reported + 1)
        ]
        assert [t.seq for t in turns] == list(range(1, len(turns) + 1))

        messages = [r.getMessage() for r in caplog.records]
        assert any("rebuilding the chunk vector index" in m or "reconciled" in m for m in messages)
        in_db = store.db.read(
            lambda c: c.execute("SELECT count(*) FROM embeddings WHERE owner_kind = 'chunk'").get
        )
        assert store.index.count("chunk") == in_db > 0

        last = turns[-1]
        hits = store.fts_chunks(last.text.split()[0], Scope())
        covering = [h.id for h in hits if last in store.turns_of_chunk(h.id)]
        assert covering, f"no chunk found for the last committed turn {last.text!r}"
        chunks = store.chunks(session_id=session_id)
        assert [c.closed for c in chunks] == [True] * (len(chunks) - 1) + [False]

        store.index.embed_pending()
        assert store.vector_chunks(last.text, Scope(), limit=len(chunks))

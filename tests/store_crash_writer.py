"""Run by tests/test_store_crash.py: append turns to a live session forever, one commit per
turn, printing each committed turn's number on stdout, until killed.

    python tests/store_crash_writer.py DATA_DIR
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

from daemon.llm.embed import ScriptedEmbedder
from daemon.store.records import NewTurn
from daemon.store.store import Store


def main() -> None:
    store = Store(Path(sys.argv[1]), ScriptedEmbedder())
    session = store.create_session(title="crash test")
    print(f"session {session.id}", flush=True)
    for n in itertools.count(1):
        text = f"marker{n} is said here, with a few more words to fill the chunk"
        store.append_turns(session.id, [NewTurn(speaker="me", text=text, start=float(n))])
        print(n, flush=True)


if __name__ == "__main__":
    main()

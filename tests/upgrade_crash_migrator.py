"""Run by tests/test_upgrade.py: open a profile with today's migrations, the last of them
stopping once its statements have run (inside the upgrade's transaction) to print
``migrating`` and wait for stdin, which never comes: the test kills it there.

    python tests/upgrade_crash_migrator.py DATA_DIR [KEY_HEX]
"""

from __future__ import annotations

import sys
from pathlib import Path

import apsw

from daemon.store import store
from daemon.store.keys import DatabaseKey
from daemon.store.schema import MIGRATIONS
from daemon.store.store import Store


def main() -> None:
    data_dir = Path(sys.argv[1])
    key = DatabaseKey(sys.argv[2], "the test's key") if len(sys.argv) > 2 else None
    last = MIGRATIONS[-1]

    def stop_midway(conn: apsw.Connection) -> None:
        last(conn)
        print("migrating", flush=True)
        sys.stdin.read()

    stop_midway.__name__ = last.__name__
    store.MIGRATIONS = (*MIGRATIONS[:-1], stop_midway)  # type: ignore[attr-defined]
    Store(data_dir, key=key).close()


if __name__ == "__main__":
    main()

"""A process's memory and its children, as status and bench.live count them."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from daemon.resident import children, resident


def test_memory_counts_what_a_process_touches() -> None:
    before = resident(os.getpid())
    assert before is not None and before.pss is not None and before.private is not None
    assert 0 < before.private <= before.rss and 0 < before.pss <= before.rss
    # 128 MB written, private to this process. Other threads of a long test run free memory
    # while this runs, so the growth is asked to be most of it, not all of it.
    held = np.ones(128 << 20, dtype=np.uint8)
    after = resident(os.getpid())
    assert after is not None and after.private is not None
    assert after.rss - before.rss >= 96 << 20 and after.private - before.private >= 96 << 20
    del held


def test_children_and_a_process_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        assert child.pid in children(os.getpid())
        assert resident(child.pid) is not None
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
    assert child.pid not in children(os.getpid())
    assert resident(child.pid) is None

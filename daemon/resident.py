"""How much memory a process holds, and which processes a process started.

Three measures, as the kernel counts them (``/proc/PID/smaps_rollup`` on Linux):

- **RSS**: every page the process has in memory, including pages of files it maps (the
  language model's weights are mapped from their file: two processes mapping it each count
  all of it);
- **PSS**: the same, each shared page divided among the processes sharing it (summed over
  processes, shared pages count once);
- **private**: the pages no other process has (what ending the process gives back for sure).

Elsewhere only RSS is known (``ps``); PSS and private are None.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec

KB = 1024


class Resident(msgspec.Struct, frozen=True):
    """A process's memory in bytes."""

    rss: int
    pss: int | None = None
    private: int | None = None


def resident(pid: int) -> Resident | None:
    """The memory of process ``pid`` now; None when it is gone (or cannot be read)."""
    if sys.platform.startswith("linux"):
        return _from_proc(pid)
    try:
        out = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True,
                             text=True, timeout=5, check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Resident(int(out) * KB) if out.isdigit() else None


def _from_proc(pid: int) -> Resident | None:
    fields: dict[str, int] = {}
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return None
    for line in text.splitlines()[1:]:
        name, _, value = line.partition(":")
        parts = value.split()
        if parts and parts[0].isdigit():
            fields[name] = int(parts[0]) * KB
    if "Rss" not in fields:
        return None
    return Resident(fields["Rss"], fields.get("Pss"),
                    fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0))


def children(pid: int) -> list[int]:
    """The processes ``pid`` started and that still run, and theirs (Linux; elsewhere none)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            direct = [int(p) for p in task.read_text().split()]
        except (OSError, ValueError):
            continue  # the thread ended meanwhile
        for child in direct:
            found += [child, *children(child)]
    return found

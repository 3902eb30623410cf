"""The sensitive-data gate on labelled turns: secrets said aloud caught, look-alikes left alone.

    python -m bench.secrets [DATA_DIR]

``DATA_DIR`` (default ``bench/data/secrets``) holds JSON-lines files, one labelled turn a line:
``{"id", "kind": "secret" | "look-alike", "before": the turn said before, "text", "value"}``.
Each file is one part of the set (``dev.jsonl``, ``heldout.jsonl``): recall is printed per part
and for the whole set. A secret is caught when its value cannot be read in the masked turn: not
whole, and no part of it (three characters or more) more often than in the rest of the turn. A
look-alike is a false alarm when anything in it is masked. The turn is masked as the store masks
a chunk's first turn (``mask_lines([text], before)``), and each call is timed with nothing
cached: the per-turn detection time, median and 95th percentile; then the turns arrive one by
one as live turns, each re-masking the open chunk it joins, as the store does.

``--vectors PATH``: the embedding model whose word pieces the judge reads as word vectors
(default: the installed one, as the daemon reads it; a missing file: the word lists alone).

``--transcripts DIR`` also reads real meetings (every ``*.json`` under ``DIR`` holding a
``"turns"`` list, as the QMSum meetings are kept) as live turns: the time a turn costs there,
where most turns hold no value at all, and every turn in which anything was masked (no
credential is said in them: each is a false alarm to read).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import machine, percentile
from daemon.config import Paths
from daemon.models.registry import word_vectors_file
from daemon.sensitive import judge
from daemon.sensitive.gate import MARKER, clear_cache, mask_lines

DEFAULT_DATA = Path(__file__).parent / "data" / "secrets"
CHUNK_CHARS = 1400  # the store's chunk limit (daemon.store.chunking.DEFAULT_LIMIT)
_PART = re.compile(r"[A-Za-z0-9]{3,}")
_SPACE = re.compile(r"\s+")
_MARKER = re.compile(re.escape(MARKER).replace(re.escape("{kind}"), r"[^\]]*"))


@dataclass(frozen=True)
class Case:
    part: str
    id: str
    kind: str
    before: str
    text: str
    value: str


def load(data_dir: Path) -> list[Case]:
    cases = []
    for path in sorted(data_dir.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                cases.append(Case(path.stem, row["id"], row["kind"], row.get("before", ""),
                                  row["text"], row.get("value", "")))
    return cases


def default_vectors() -> Path:
    """The installed embedding model whose word pieces the judge reads, as the daemon uses it."""
    return word_vectors_file(Paths.resolve().models_dir)


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).lower()


def readable(value: str, text: str, masked: str) -> bool:
    """Whether ``value`` (said in ``text``) can still be read in ``masked``."""
    shown = _norm(_MARKER.sub(" ", masked))
    if _norm(value) in shown:
        return True
    rest = _norm(text.replace(value, " "))
    return any(shown.count(p.lower()) > rest.count(p.lower())
               for p in _PART.findall(value))


def timed(text: str, before: str) -> tuple[str, float]:
    """``text`` masked, and the seconds it took with nothing read before (no cached turn)."""
    clear_cache()
    began = time.perf_counter()
    masked = mask_lines([text], before)[0]
    return masked, time.perf_counter() - began


def live_turns(cases: list[Case]) -> list[float]:
    """The seconds each turn costs when it arrives live: the open chunk it joins (up to the
    store's chunk limit) is masked again with it, as the store does on every live turn."""
    clear_cache()
    times: list[float] = []
    open_lines: list[str] = []
    before = ""
    for case in cases:
        if open_lines and sum(map(len, open_lines)) + len(case.text) > CHUNK_CHARS:
            before, open_lines = open_lines[-1], []
        open_lines.append(case.text)
        began = time.perf_counter()
        mask_lines(open_lines, before)
        times.append(time.perf_counter() - began)
    return times


def transcripts(data: Path) -> list[list[str]]:
    meetings = []
    for path in sorted(data.rglob("*.json")):
        turns = json.loads(path.read_text())
        if isinstance(turns, dict) and isinstance(turns.get("turns"), list):
            meetings.append([str(t["text"]) for t in turns["turns"]])
    return meetings


def real_meetings(meetings: list[list[str]]) -> tuple[list[float], list[tuple[str, str]]]:
    """Each turn's seconds as a live turn, and the turns (with the one before) masked."""
    clear_cache()
    times: list[float] = []
    masked: list[tuple[str, str]] = []
    for turns in meetings:
        before = ""
        open_lines: list[str] = []
        for text in turns:
            if open_lines and sum(map(len, open_lines)) + len(text) > CHUNK_CHARS:
                before, open_lines = open_lines[-1], []
            open_lines.append(text)
            began = time.perf_counter()
            shown = mask_lines(open_lines, before)
            times.append(time.perf_counter() - began)
            if shown[-1] != text:
                masked.append((open_lines[-2] if len(open_lines) > 1 else before, shown[-1]))
    return times, masked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--show", action="store_true", help="print every miss and false alarm")
    parser.add_argument("--transcripts", type=Path, help="real meetings, read as live turns")
    parser.add_argument("--vectors", type=Path, default=default_vectors(),
                        help="the embedding model whose word pieces the judge reads "
                             "(default: the installed one, as the daemon reads it)")
    args = parser.parse_args()
    judge.use_vectors(args.vectors)
    cases = load(args.data)
    for case in cases[:20]:  # warm up: the regular expressions compiled and used once
        timed(case.text, case.before)
    times: list[float] = []
    missed: dict[str, list[Case]] = {}
    alarms: list[tuple[Case, str]] = []
    for case in cases:
        masked, seconds = timed(case.text, case.before)
        times.append(seconds)
        if case.kind == "secret" and readable(case.value, case.text, masked):
            missed.setdefault(case.part, []).append(case)
        elif case.kind == "look-alike" and masked != case.text:
            alarms.append((case, masked))
    parts = sorted({c.part for c in cases})
    secrets = [c for c in cases if c.kind == "secret"]
    looks = [c for c in cases if c.kind == "look-alike"]
    print(f"machine: {machine()}")
    for part in parts:
        n = sum(1 for c in secrets if c.part == part)
        caught = n - len(missed.get(part, []))
        if n:
            print(f"recall {part}: {caught}/{n} = {caught / n:.1%}")
    all_missed = sum(len(m) for m in missed.values())
    print(f"recall whole set: {len(secrets) - all_missed}/{len(secrets)} = "
          f"{(len(secrets) - all_missed) / len(secrets):.1%}")
    print(f"false alarms: {len(alarms)}/{len(looks)} = {len(alarms) / max(1, len(looks)):.1%}")
    timings = {"detection per turn": times,
               "per live turn (open chunk re-masked)": live_turns(cases)}
    in_meetings: list[tuple[str, str]] = []
    if args.transcripts:
        meetings = transcripts(args.transcripts)
        timings["per live turn of real meetings"], in_meetings = real_meetings(meetings)
        print(f"real meetings: {len(meetings)}, turns masked: {len(in_meetings)} of "
              f"{sum(map(len, meetings))}")
    for label, measured in timings.items():
        ms = [t * 1000 for t in measured]
        print(f"{label}: median {statistics.median(ms):.3f} ms, "
              f"p95 {percentile(ms, 0.95):.3f} ms ({len(ms)} turns)")
    if args.show:
        for part_missed in missed.values():
            for c in part_missed:
                print(f"MISSED {c.part}/{c.id}: {c.before!r} -> {c.text!r} [{c.value}]")
        for c, masked in alarms:
            print(f"FALSE ALARM {c.part}/{c.id}: {c.before!r} -> {masked!r}")
        for before, masked in in_meetings:
            print(f"MASKED IN A MEETING: {before!r} -> {masked!r}")


if __name__ == "__main__":
    main()

"""The project speaks of the product, not of how it was made.

Tracked files (README, docs, code, comments, tests, scripts) name no tracker numbers, no people
or roles who did the work, no dated work sessions, no design documents kept outside the
repository and no paths outside it. What those documents specify is said in
``docs/architecture.md``; benchmark data outside the repository is passed by argument.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Each pattern is written so that this file does not match itself.
FORBIDDEN: dict[str, re.Pattern[str]] = {
    "a tracker number": re.compile(r"\bissues?[\s-]+#?\d+", re.IGNORECASE),
    "a worker's name": re.compile(r"\b[hw]\d{1,3}[a-z]\b", re.IGNORECASE),
    "a role in the work": re.compile(
        r"\bthe\s+lead\b(?!-)|\bhelpers?'|\b(?:helper|worker|engineer)\s+[hw]\d", re.IGNORECASE
    ),
    "a dated work session": re.compile(
        r"\b(?:session|stop)\s+of\s+\d{4}-|\bstops?\s+\d+\b", re.IGNORECASE
    ),
    "a point in the project's history": re.compile(
        r"\b(?:main|commit)\s+(?:at\s+)?[0-9a-f]{7,12}\b", re.IGNORECASE
    ),
    "a design-document citation": re.compile(
        r"\bseeds?\s+\d{3}\b|\bseeds/|(?-i:ARCHITECTURE[.]md)|\u00a7", re.IGNORECASE
    ),
    "a path outside the repository": re.compile(
        r"[.][.]/shared\b|\bshared/(?:bench|audio|wheels|seeds|notes)\b|/wor[k]/"
        r"|--[\w-]+[ =]/tm[p]/"  # one machine's scratch folder given to a command
    ),
}


def hits(text: str) -> list[tuple[int, str, str]]:
    """(line number, what, line) for every forbidden phrase in ``text``."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in FORBIDDEN.items():
            if pattern.search(line):
                found.append((number, what, line.strip()))
    return found


# labelled speech: what people say in calls and meetings (a look-alike names a code revision,
# a meeting's chair names roles in the work), not the project's own words
SPEECH = ("bench/data/secrets/", "bench/data/decisions/")


def tracked_text_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    paths = [ROOT / name for name in out.split("\0") if name and not name.startswith(SPEECH)]
    return [p for p in paths if p.is_file() and b"\0" not in p.read_bytes()[:8192]]


def test_tracked_files_speak_of_the_product() -> None:
    files = tracked_text_files()
    assert ROOT / "README.md" in files and Path(__file__) in files
    found = [
        f"{path.relative_to(ROOT)}:{number}: {what}: {line}"
        for path in files
        for number, what, line in hits(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not found, "\n".join(found)


def test_every_forbidden_kind_is_caught() -> None:
    # written with a "~" that is taken out, so that this file itself stays clean
    bad = [
        line.replace("~", "")
        for line in (
            "fixed in iss~ue 14",
            "see Iss~ues #7",
            "the pre-iss~ue-19 decoding",
            "measured by h1~4v",
            "as the le~ad ran it",
            "the help~ers' runs",
            "help~er h1~6s found",
            "the sess~ion of 2026-12-02",
            "as st~op 29 noted",
            "measured on ma~in 2f768a4",
            "the data in sha~red/bench/",
            "as se~ed 000 says",
            "the spec in se~eds/001.md",
            "see ARCHITECT~URE.md",
            "section \u00a74",
            "--data ../sha~red/bench/x.json",
            "/wo~rk/main/.venv",
            "bench.scale --cache /t~mp/bcscale",
        )
    ]
    for line in bad:
        assert hits(line), line
    assert {what for line in bad for _, what, _ in hits(line)} == set(FORBIDDEN)


def test_product_words_pass() -> None:
    good = [
        "pure helpers for the store",
        "--seed 7 draws the same sample",
        "a later session of the same Space",
        "the stop() method returns",
        "the main loop",
        "the lead-in silence is trimmed",
        "whisper.cpp#1855 reports the loop",
        "docs/architecture.md",
        "--data DIR (the QMSum dev set)",
    ]
    for line in good:
        assert not hits(line), line

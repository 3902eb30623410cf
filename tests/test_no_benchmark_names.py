"""No comment, constant or rule of the daemon names a benchmark's person, meeting or data set:
product code states general rules, with examples written for them (the benchmark cases live in
``bench/``)."""

from __future__ import annotations

import re
from pathlib import Path

DAEMON = Path(__file__).resolve().parents[1] / "daemon"
# the speakers of the LoCoMo dev conversations (``speaker_a`` / ``speaker_b`` of each sample of
# the dev file, written out here so that the test runs without the data), and the one speaker
# of the recording bench.asr times
PEOPLE = ("Caroline", "Melanie", "Jon", "Gina", "John", "Maria", "Joanna", "Nate", "Tim", "JFK")
# a meeting of the AMI corpus (series and letter: "ES2006c"; QMSum's product meetings are
# AMI's) or of the ICSI corpus, QMSum's academic meetings ("Bmr013")
MEETING = r"(?:ES|IS|TS|EN|IB|IN)\d{4}[a-d]?|B(?:ed|mr|ro|ns|db|sr|tr)\d{3}"
# the data sets the benchmarks measure on
DATA_SETS = ("LoCoMo", "QMSum", "AMI", "ICSI", "FLEURS", "LibriSpeech")
NAMED = re.compile(rf"\b(?:(?i:{'|'.join(PEOPLE + DATA_SETS)})|{MEETING})\b")


def named(line: str) -> list[str]:
    return NAMED.findall(line)


def test_the_names_are_found_as_words_and_in_any_case() -> None:
    assert named('# "Thanks, Maria!" (ES2006c)') == ["Maria", "ES2006c"]
    assert named("content-word form (\"melanie\"), chosen on locomo dev, Bmr013") == [
        "melanie", "locomo", "Bmr013"]
    assert named("Timing, Johnson, Natalie and the famiLY; ES20061, amid the jonquils") == []


def test_no_daemon_source_names_a_benchmark_person_meeting_or_data_set() -> None:
    found = [f"{path.relative_to(DAEMON.parent)}:{n}: {line.strip()}"
             for path in sorted(DAEMON.rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if named(line)]
    assert found == [], "state the general rule, with invented names:\n" + "\n".join(found)

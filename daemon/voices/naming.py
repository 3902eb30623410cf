"""When a heard voice is given a known name: the thresholds fitted on real voices.

They are data, not code: ``naming-v1.json`` beside this module, written with its sha256
(``naming.sha256``) by ``python -m bench.voices_margin``, which chooses them by
cross-validation over speakers (docs/benchmarks/speakers.md). Each encoder has its own scale
of likeness, so each has its own entry; an encoder without one keeps its hand-set thresholds.
A file that does not match its sha256 is not used: said once in the log, and no voice is named
without the user (names are still offered as questions).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from functools import cache
from pathlib import Path

log = logging.getLogger(__name__)

DATA = Path(__file__).with_name("naming-v1.json")
DIGEST = Path(__file__).with_name("naming.sha256")
FIELDS = ("named_voice", "name_ahead_by", "name_after_s", "suggest_voice")


@dataclass(frozen=True)
class Naming:
    """A session voice is named when it was heard for ``name_after_s``, is ``named_voice``
    alike to a named voice's print and ``name_ahead_by`` more alike to it than to any other;
    below that, the name is offered as a question from ``suggest_voice``."""

    named_voice: float
    name_ahead_by: float
    name_after_s: float
    suggest_voice: float


# what a file that fails its check leaves: nobody named without the user, names only offered
NEVER = Naming(named_voice=2.0, name_ahead_by=0.0, name_after_s=0.0, suggest_voice=0.5)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@cache
def fitted(model_id: str) -> Naming | None:
    """The fitted thresholds of the encoder ``model_id`` (None: none were fitted for it)."""
    try:
        data = DATA.read_bytes()
        expected = DIGEST.read_text().split()[0]
    except (OSError, IndexError) as e:
        log.error("voices are not named automatically: %s", e)
        return NEVER
    if digest(data) != expected:
        log.error("voices are not named automatically: %s does not match its sha256 (%s)",
                  DATA.name, DIGEST.name)
        return NEVER
    entry = json.loads(data)["encoders"].get(model_id)
    if entry is None:
        return None
    return Naming(**{k: float(entry[k]) for k in FIELDS})

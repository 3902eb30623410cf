"""The rules of a session's life, as pure functions and one small state machine (no I/O).

When a session starts and ends:

- by hand: ``braincue start`` / ``braincue stop``;
- automatically (setting ``auto_start``, on by default): a session starts when speech is heard on
  both sources — the microphone and the system audio — within :data:`START_WINDOW_S` of each
  other, which is what a call sounds like (one source alone is someone talking in the room, or
  a video playing). It ends after ``auto_end_silence_min`` minutes without speech.

What is kept: listening is always on, but nothing is stored outside a session. Speech heard
while no session is live is held in memory for :data:`START_WINDOW_S` only, so that the words
that started a session belong to it, and is otherwise forgotten.

What survives a session: only a session filed into a Space is summarised or
remembered, and starting says so. An interview (activity ``job``) cannot start without a Space:
its value is entirely cumulative, so "no Space" there is a mistake rather than a choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from daemon.audio.capture import Source
from daemon.errors import InvalidInput
from daemon.store.fts import query_terms

T = TypeVar("T")

START_WINDOW_S = 30.0
GIST_CHARS = 90
NEEDS_SPACE = frozenset({"job"})


def check_start(activity: str, space: str | None) -> None:
    """Refuse a start the rules forbid: an interview without a Space."""
    if activity in NEEDS_SPACE and space is None:
        raise InvalidInput(
            "an interview (activity job) needs a Space: it is one round of several, and what "
            "they asked and what you said only helps in the next round if it is kept",
            fix="start it with --space NAME (create one with `braincue spaces add NAME`)",
        )


def capture_summary(space: str | None, space_remembered: bool = True) -> str:
    """What will survive the session, in one line."""
    if space is None:
        return "nothing is summarised or remembered — pick a Space for that"
    if not space_remembered:
        return f"nothing is summarised or remembered — the Space {space} is set to be forgotten"
    return f"a summary and memory suggestions will be filed into {space}"


def start_message(
    session_id: int, space: str | None, space_remembered: bool = True, *, continued: bool = False
) -> str:
    """What starting a session says (``continued``: the session was already live)."""
    what = "continues" if continued else "started"
    where = f" in {space}" if space is not None else ""
    return f"session {session_id} {what}{where}: {capture_summary(space, space_remembered)}"


def gist(texts: Sequence[str], limit: int = GIST_CHARS) -> str:
    """One line saying what a session was about, without a model: its most content-rich turn
    (the most distinct words that are not stop words; the earliest wins a tie), shortened."""
    best = max(texts, key=lambda text: len(query_terms(text)), default="")
    line = " ".join(best.split())
    if not line:
        return "nothing was said"
    if len(line) <= limit:
        return line
    cut = line[: limit - 1].rsplit(" ", 1)[0] if " " in line[: limit - 1] else line[: limit - 1]
    return cut.rstrip(" ,;:.-—") + "…"


@dataclass
class AutoStart(Generic[T]):
    """Decides when speech heard outside a session starts one.

    Feed every piece of speech heard while no session is live with :meth:`heard`; it holds each
    for ``window_s`` and returns all it holds once both sources have spoken within the window.
    After a session ended by hand, it stays quiet until ``rearm_silence_s`` without speech: the
    conversation the user just stopped recording must not start again by itself.
    """

    window_s: float = START_WINDOW_S
    rearm_silence_s: float = 300.0
    _held: list[tuple[Source, float, T]] = field(default_factory=list)
    _quiet_until_silence: bool = False
    _last_speech: float | None = None

    def heard(self, source: Source, end: float, item: T) -> list[T] | None:
        """Speech from ``source`` ending at ``end``: the items that start a session, or None."""
        if self._quiet_until_silence:
            if self._last_speech is not None and end - self._last_speech < self.rearm_silence_s:
                self._last_speech = max(self._last_speech, end)
                return None
            self._quiet_until_silence = False
        self._last_speech = end if self._last_speech is None else max(self._last_speech, end)
        self._held = [h for h in self._held if end - h[1] <= self.window_s]
        self._held.append((source, end, item))
        if {h[0] for h in self._held} == {"mic", "loopback"}:
            items = [h[2] for h in sorted(self._held, key=lambda h: h[1])]
            self._held = []
            return items
        return None

    def stopped_by_hand(self, at: float, rearm_silence_s: float | None = None) -> None:
        """A session was just stopped by the user at ``at``; it starts by itself again after
        ``rearm_silence_s`` (default: as set at construction) without speech."""
        if rearm_silence_s is not None:
            self.rearm_silence_s = rearm_silence_s
        self._held = []
        self._quiet_until_silence = True
        self._last_speech = at

    def forget(self) -> None:
        """Drop what is held (a session started by hand takes over from here)."""
        self._held = []


def end_due(started_at: float, last_speech: float | None, silence_s: float) -> float | None:
    """When a live session ends by itself: ``silence_s`` after the last speech (or after its
    start, if nothing was said yet); None when automatic ending is off (``silence_s`` <= 0)."""
    if silence_s <= 0:
        return None
    return max(started_at, last_speech or started_at) + silence_s

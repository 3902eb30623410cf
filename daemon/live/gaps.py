"""What a live session heard of each source and what it missed: its capture receipt (pure).

The live actor tells a :class:`GapTracker` everything capture does while its session is live
(wall-clock seconds throughout):

- every block of audio, with whether the VAD hears speech in it: a break in a source's blocks
  of :data:`GAP_MIN_S` or more is a gap, caused by what was told since the block before — the
  source's capture said "no audio" (device lost, or the audio server gone), it had not
  delivered yet (capture starting: a recorder's first audio comes a second or two after it
  opens), it reopened on another device (device changed), the machine slept (suspend), the
  user paused listening — or nothing known (audio stopped);
- blocks dropped because transcription fell behind, and utterances heard but not transcribed;
- the mic silent while the other side talked for ``silent_mic_s`` or more (a muted mic): told
  once the stretch reaches that length, kept in the receipt when the mic speaks again (or the
  session ends).

What is found during the session comes back as :class:`Alert` (the actor publishes it at once);
:meth:`GapTracker.receipt` says what the session heard so far. :func:`receipt_text` says a
receipt in a line: "heard 41:20 of 41:20", or each gap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import msgspec

from daemon.store.receipts import NOT_CAPTURED, SOURCES, CaptureGap, Receipt

GAP_MIN_S = 0.5  # a shorter break between a source's blocks is jitter, not a gap
TRAILING_S = 2.0  # at the end, a source whose last block is older than this stopped early
FLOWING_S = 2.0  # the mic counts as captured while its last block ended this recently
MERGE_S = 1.0  # drops or skipped utterances this close together are one gap
SPEAKER = {"mic": "me", "loopback": "them"}


@dataclass(frozen=True)
class Alert:
    """A gap found while the session is live, and what to tell the user at once."""

    gap: CaptureGap  # wall-clock times
    message: str


def cause_of(detail: str) -> str:
    """The gap cause of a capture thread's "no audio" reason."""
    lowered = detail.lower()
    if "server" in lowered or "connection" in lowered:
        return "audio server gone"
    return "device lost"


def clock_text(seconds: float) -> str:
    """41:20 (05:03 under ten minutes), or 1:02:03 past an hour."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def gap_text(gap: CaptureGap, origin: float = 0.0) -> str:
    """One gap in words, its times counted from ``origin`` ("me 12:03–15:18: device lost")."""
    start, end = gap.start - origin, gap.end - origin
    when = f"{clock_text(start)}–{clock_text(end)}"
    if gap.cause == "mic silent":
        what = "silent while they talked (muted?)"
    elif gap.cause == "not transcribed":
        what = "heard but not transcribed"
    else:
        what = gap.cause
    detail = f" ({gap.detail})" if gap.detail else ""
    return f"{SPEAKER.get(gap.source, gap.source)} {when}: {what}{detail}"


def receipt_text(receipt: Receipt) -> str:
    """ "heard 41:20 of 41:20" when nothing is missing, else what each source was heard for
    and every gap."""
    of = clock_text(receipt.length_s)
    heard = {source: clock_text(receipt.heard_s.get(source, 0.0)) for source in SOURCES}
    if len(set(heard.values())) == 1:
        line = f"heard {heard[SOURCES[0]]} of {of}"
    else:
        line = "heard " + ", ".join(f"{SPEAKER[s]} {heard[s]}" for s in SOURCES) + f" of {of}"
    if not receipt.gaps:
        return line
    return line + " — " + "; ".join(gap_text(g) for g in receipt.gaps)


@dataclass
class _Source:
    last_end: float | None = None  # the end of the last block heard (or known to be gone)
    epoch: int | None = None
    noted: tuple[str, str] | None = None  # a cause told since that block: (cause, detail)
    open_since: float | None = None  # capture said "no audio" / paused: the gap since then


@dataclass
class GapTracker:
    """The receipt of one live session, built as capture goes (see the module docstring).

    ``heard_until`` and ``epochs``: where each source's capture stood when the session began,
    so the first block is not taken for the end of a gap.
    """

    started_at: float
    silent_mic_s: float = 120.0
    heard_until: dict[str, float | None] = field(default_factory=dict)
    epochs: dict[str, int | None] = field(default_factory=dict)
    _gaps: list[CaptureGap] = field(default_factory=list)  # wall-clock, closed
    _sources: dict[str, _Source] = field(default_factory=dict)
    _them_from: float | None = None  # the other side's speech since the mic last spoke
    _them_to: float | None = None
    _silence_told: bool = False
    _told: set[tuple[str, str]] = field(default_factory=set)  # drops, untranscribed: told

    def __post_init__(self) -> None:
        self._sources = {s: _Source(self.heard_until.get(s), self.epochs.get(s))
                         for s in SOURCES}

    # -- what capture tells --------------------------------------------------------------

    def no_audio(self, source: str, at: float, cause: str, detail: str = "") -> Alert | None:
        """Capture of ``source`` stopped at ``at`` for ``cause``: a gap is open from its last
        block until blocks come again. Returns the alert of a gap newly opened."""
        track = self._sources[source]
        if track.open_since is not None:  # the first cause told stays
            return None
        track.noted = (cause, detail)
        since = max(self.started_at, min(at, track.last_end if track.last_end is not None
                                         else at))
        track.open_since = since
        if source == "mic":
            self._close_silence()
        gap = CaptureGap(source, cause, since, since, detail)
        return Alert(gap, f"{SPEAKER[source]}: nothing heard since {self._at(since)} "
                          f"({cause}{f': {detail}' if detail else ''})")

    def block(self, source: str, t: float, seconds: float, epoch: int,
              speaking: bool) -> list[Alert]:
        """A block of ``seconds`` from ``source`` starting at ``t``; ``speaking``: the VAD
        hears speech in it."""
        track = self._sources[source]
        alerts: list[Alert] = []
        missing_from = track.open_since if track.open_since is not None else track.last_end
        if missing_from is None:
            missing_from = self.started_at
        missing_from = max(missing_from, self.started_at)
        if t - missing_from >= GAP_MIN_S:
            if track.noted is not None:
                cause, detail = track.noted
            elif track.last_end is None:  # the first audio since capture started
                cause, detail = "capture starting", ""
            elif track.epoch is not None and epoch != track.epoch:
                cause, detail = "device changed", ""
            else:
                cause, detail = "audio stopped", ""
            gap = CaptureGap(source, cause, missing_from, t, detail)
            if source == "mic":
                self._close_silence()
            self._gaps.append(gap)
            if track.open_since is None:  # an open gap was told when it opened
                alerts.append(Alert(gap, f"{SPEAKER[source]}: nothing heard "
                                         f"{self._at(gap.start)}–{self._at(gap.end)} ({cause})"))
        track.open_since, track.noted, track.epoch = None, None, epoch
        track.last_end = max(track.last_end or -math.inf, t + seconds)
        alerts += self._silence(source, t, t + seconds, speaking)
        return alerts

    def dropped(self, source: str, t: float, seconds: float) -> Alert | None:
        """A block of ``source`` was dropped unheard (transcription fell behind)."""
        track = self._sources[source]
        track.last_end = max(track.last_end or -math.inf, t + seconds)
        return self._merged(CaptureGap(source, "blocks dropped", t, t + seconds),
                            "audio dropped: transcription fell behind")

    def not_transcribed(self, source: str, start: float, end: float,
                        reason: str) -> Alert | None:
        """An utterance of ``source`` was heard but never transcribed (``reason``)."""
        return self._merged(CaptureGap(source, "not transcribed", start, end, reason),
                            f"speech not transcribed: {reason}")

    def suspended(self, start: float, end: float) -> list[Alert]:
        """The machine slept from ``start`` to ``end``: nothing was heard meanwhile."""
        alerts = []
        for source, track in self._sources.items():
            relabelled = False
            for i, gap in enumerate(self._gaps):
                if (gap.source == source and gap.cause == "audio stopped"
                        and gap.start < end and gap.end > start):
                    self._gaps[i] = msgspec.structs.replace(gap, cause="suspend")
                    relabelled = True
            if not relabelled and end > self.started_at:
                gap = CaptureGap(source, "suspend", max(start, self.started_at), end)
                self._gaps.append(gap)
                alerts.append(Alert(gap, f"{SPEAKER[source]}: nothing heard "
                                         f"{self._at(gap.start)}–{self._at(end)} (suspend)"))
            track.last_end = max(track.last_end or -math.inf, end)
            if source == "mic":
                self._close_silence()
        return alerts

    # -- the receipt ---------------------------------------------------------------------

    def receipt(self, until: float) -> Receipt:
        """What the session heard from its start until ``until`` (open gaps end there; a
        source silent for more than :data:`TRAILING_S` before it stopped early)."""
        until = max(until, self.started_at)
        gaps = list(self._gaps)
        silence = self._silence_gap()
        if silence is not None:
            gaps.append(silence)
        for source, track in self._sources.items():
            if track.open_since is not None:
                cause, detail = track.noted or ("audio stopped", "")
                gaps.append(CaptureGap(source, cause, track.open_since, until, detail))
                continue
            last = self.started_at if track.last_end is None else track.last_end
            if until - max(last, self.started_at) > TRAILING_S:
                cause, detail = track.noted or ("audio stopped", "")
                gaps.append(CaptureGap(source, cause, max(last, self.started_at), until,
                                       detail))
        length = until - self.started_at
        relative = sorted(
            (msgspec.structs.replace(
                g, start=round(max(0.0, g.start - self.started_at), 1),
                end=round(min(length, max(0.0, g.end - self.started_at)), 1))
             for g in gaps if g.end > self.started_at and g.start < until),
            key=lambda g: (g.start, g.source),
        )
        heard = {s: round(length - _covered([g for g in relative
                                              if g.source == s and g.cause in NOT_CAPTURED]), 1)
                 for s in SOURCES}
        return Receipt(round(length, 1), heard, tuple(relative))

    # -- inside ----------------------------------------------------------------------------

    def _at(self, t: float) -> str:
        return clock_text(t - self.started_at)

    def _merged(self, gap: CaptureGap, message: str) -> Alert | None:
        """Add ``gap``, or extend the last gap of its source and cause when it is close."""
        for i in range(len(self._gaps) - 1, -1, -1):
            last = self._gaps[i]
            if (last.source, last.cause) == (gap.source, gap.cause) and (
                    gap.start - last.end <= MERGE_S):
                self._gaps[i] = msgspec.structs.replace(last, end=max(last.end, gap.end))
                return None
        self._gaps.append(gap)
        if (gap.source, gap.cause) in self._told:  # said once a session: they come in runs
            return None
        self._told.add((gap.source, gap.cause))
        return Alert(gap, f"{SPEAKER[gap.source]} {self._at(gap.start)}: {message}")

    def _silence(self, source: str, start: float, end: float, speaking: bool) -> list[Alert]:
        """Follow the mic's silence while the other side talks."""
        if source == "mic":
            if speaking:
                self._close_silence()
            return []
        mic = self._sources["mic"]
        mic_flowing = mic.open_since is None and mic.last_end is not None and (
            start - mic.last_end <= FLOWING_S)
        if not mic_flowing:
            self._close_silence()
            return []
        if not speaking:
            return []
        if self._them_from is None:
            self._them_from = start
        self._them_to = end
        if self._silence_told or self._them_to - self._them_from < self.silent_mic_s:
            return []
        self._silence_told = True
        gap = CaptureGap("mic", "mic silent", self._them_from, self._them_to)
        return [Alert(gap, f"me: the mic has been silent since {self._at(self._them_from)} "
                           f"while they talked: is it muted?")]

    def _silence_gap(self) -> CaptureGap | None:
        if self._them_from is None or self._them_to is None:
            return None
        if self._them_to - self._them_from < self.silent_mic_s:
            return None
        return CaptureGap("mic", "mic silent", self._them_from, self._them_to)

    def _close_silence(self) -> None:
        gap = self._silence_gap()
        if gap is not None:
            self._gaps.append(gap)
        self._them_from = self._them_to = None
        self._silence_told = False


def _covered(gaps: list[CaptureGap]) -> float:
    """Seconds covered by the union of ``gaps``."""
    total, reach = 0.0, -math.inf
    for gap in sorted(gaps, key=lambda g: g.start):
        start = max(gap.start, reach)
        if gap.end > start:
            total += gap.end - start
        reach = max(reach, gap.end)
    return total

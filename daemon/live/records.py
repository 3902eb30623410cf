"""What live capture takes and gives: plain data, which the live handler turns into the
protocol's requests, replies and events (``daemon.handlers.wire``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from daemon.memory.open_items import CarriedForward
from daemon.store.receipts import Receipt
from daemon.store.records import Turn

# -- what is asked ----------------------------------------------------------------------------


@dataclass(frozen=True)
class StartOptions:
    """A session started now (or the live one given these details)."""

    space: str | None = None  # a Space name; None: nothing will be summarised or remembered
    activity: str = ""  # empty: the Space's kind, else meeting
    title: str = ""


@dataclass(frozen=True)
class ImportOptions:
    """An audio file transcribed into a new, ended session."""

    path: Path  # absolute
    stereo: bool = False  # left channel "me", right channel "them"; else one speaker
    speaker: str = "me"  # the one speaker of a mono import ...
    voices: bool = False  # ... unless its voices are told apart ("Them 1", "Them 2", names);
    # a stereo import: the voices of "them" told apart (as live)
    space: str | None = None
    activity: str = ""
    title: str = ""
    started_at: float | None = None  # unix time; None: the file's modification time - duration


# -- what is answered and told ------------------------------------------------------------------


@dataclass(frozen=True)
class Carried:
    """What the earlier sessions of a session's Space left open ("3 open from last time")."""

    space: str  # the Space's name
    forward: CarriedForward

    @property
    def session_id(self) -> int:
        return self.forward.session_id


@dataclass(frozen=True)
class Started:
    """A session started, or the live one given new details."""

    session_id: int
    started_at: float  # unix time
    message: str  # what will survive the session
    space: str | None
    activity: str
    title: str
    carried: Carried | None = None  # what its Space left open


@dataclass(frozen=True)
class Began:
    """Event: a session started."""

    session_id: int
    started_at: float
    space: str | None
    activity: str
    title: str


@dataclass(frozen=True)
class Ended:
    """Event, and what a stop answers: a session ended (what the keep prompt shows)."""

    session_id: int
    duration_s: float
    gist: str  # one line
    turns: int
    space: str | None
    speakers: list[str] = field(default_factory=list)  # in order of first speech
    receipt: Receipt | None = None  # what it heard of each source, and every gap


@dataclass(frozen=True)
class CaptureChanged:
    """Event: what capture is doing now (``capture``), and why it is said (``message``);
    ``alert``: the live session is missing audio (a gap, a silent mic), to show at once."""

    capture: str
    message: str = ""
    alert: bool = False


@dataclass(frozen=True)
class Imported:
    session_id: int
    turns: int
    duration_s: float  # of the audio
    message: str
    warnings: list[str] = field(default_factory=list)  # silent, or so quiet it was amplified


@dataclass(frozen=True)
class ImportedSoFar:
    """How far an import has got, in seconds of audio."""

    done_s: float
    total_s: float
    turns: int


# A stored turn is itself the event that tells of it.
LiveEvent = Began | Carried | Ended | CaptureChanged | Turn


# -- status ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceState:
    """One capture source: ``state`` is stopped | starting | capturing | no audio | paused |
    off."""

    state: str
    device: str = ""
    detail: str = ""  # why there is no audio


@dataclass(frozen=True)
class LiveState:
    """Live capture and transcription."""

    sources: dict[str, SourceState]  # by source: mic, loopback
    utterances_queued: int  # waiting for transcription, the one in progress included
    asr_lag_s: float  # how far transcription is behind the end of speech
    dropped_blocks: int  # audio dropped because transcription fell behind
    asr_real_time_factor: float  # transcription time / audio transcribed, so far
    asr_model: str  # empty: no speech model loaded
    session_id: int | None  # the live session
    stages_p50_s: dict[str, float]  # median seconds per stage (see Pipeline.stages)
    after_asr_max_s: float = 0.0  # the longest from an utterance's ASR ended to it stored

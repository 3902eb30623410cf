"""Capture: start, stop and pause listening, import a recording; the turn and session events
it publishes."""

from __future__ import annotations

from daemon.ipc.protocol.base import (
    TOPIC_PROGRESS,
    TOPIC_SESSIONS,
    TOPIC_TURNS,
    Event,
    Ok,
    Reply,
    Request,
    progress_topic,
)
from daemon.ipc.protocol.open_items import ItemInfo
from daemon.ipc.protocol.store import ReceiptInfo

__all__ = [
    "ImportAudio", "ImportAudioReply", "ImportProgress", "Pause", "SessionStarted", "Start",
    "StartReply", "Stop", "StopReply", "TurnEvent"
]


class StartReply(Reply):
    session_id: int
    started_at: float  # unix time
    message: str  # what will survive the session
    space: str | None = None
    activity: str = ""
    title: str = ""
    # what is still open in the Space from its earlier sessions ("3 open from last time"),
    # oldest first (as in CarriedForward; the list may be cut, the message counts them all)
    carried_message: str = ""
    carried: list[ItemInfo] = []


class StopReply(Reply):
    """The keep prompt of the session that ended (as in :class:`SessionEnded`)."""

    session_id: int
    duration_s: float
    gist: str
    turns: int
    space: str | None = None
    receipt: ReceiptInfo | None = None


class ImportAudioReply(Reply):
    session_id: int
    turns: int
    duration_s: float  # of the audio
    message: str
    warnings: list[str] = []  # about the recording: silent, or so quiet it was amplified


class Start(Request[StartReply]):
    """Start a live session now (or give the live one these details)."""

    space: str | None = None  # a Space name; None: nothing will be summarised or remembered
    activity: str = ""  # empty: the Space's kind, else meeting
    title: str = ""


class Stop(Request[StopReply]):
    """End the live session; everything said until now is transcribed into it first."""


class ImportAudio(Request[ImportAudioReply]):
    """Transcribe an audio file into a new session, with ImportProgress events on
    ``progress_topic(id)``."""

    path: str  # absolute, resolved by the client; the daemon reads and validates the file
    stereo: bool = False  # left channel "me", right channel "them"; else one speaker
    speaker: str = "me"  # the one speaker of a mono import ...
    voices: bool = False  # ... unless its voices are told apart ("Them 1", "Them 2", names);
    # a stereo import: the voices of "them" told apart (as live)
    space: str | None = None
    activity: str = ""
    title: str = ""
    started_at: float | None = None  # unix time; None: the file's modification time - duration


class Pause(Request[Ok]):
    """Stop listening (``paused``) or listen again; while paused, status reports capture
    "paused" and nothing is heard, so no session starts by itself."""

    paused: bool = True


class TurnEvent(Event):
    """A transcribed turn, as soon as it is stored."""

    topic_prefix = TOPIC_TURNS
    session_id: int
    turn_id: int
    speaker: str
    source: str  # mic | loopback | import
    start: float  # seconds from the start of the session
    end: float
    text: str


class SessionStarted(Event):
    topic_prefix = TOPIC_SESSIONS
    session_id: int
    started_at: float  # unix time
    space: str | None = None
    activity: str = ""
    title: str = ""


class ImportProgress(Event):
    """How far the import ``request_id`` has got, in seconds of audio."""

    topic_prefix = TOPIC_PROGRESS
    request_id: str
    done_s: float
    total_s: float
    turns: int

    def topic(self) -> str:
        return progress_topic(self.request_id)

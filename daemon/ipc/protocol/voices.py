"""Voices: the enrolled and heard voices, naming, merging and forgetting them."""

from __future__ import annotations

import msgspec

from daemon.ipc.protocol.base import Reply, Request

__all__ = [
    "HeardVoiceInfo", "VoiceForget", "VoiceInfo", "VoiceMerge", "VoiceName", "VoiceReply",
    "VoiceShow", "VoicesList", "VoicesReply"
]


class VoiceInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A named voice: its voiceprint is kept in the profile (never sent)."""

    id: int
    name: str
    sessions: int  # sessions with turns of this voice
    turns: int
    seconds: float  # speech its voiceprint was learnt from
    created_at: float
    model_id: str = ""  # the encoder it was named under: only that one recognises it
    last_heard: float | None = None  # when a turn shown with its name last ended (unix time)


class HeardVoiceInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A voice of a session heard since the daemon started (kept in memory only)."""

    session_id: int
    label: str  # "Them 2"
    name: str | None  # the named voice it was recognised as
    seconds: float
    # not sure enough to name it: the named voice it may be, offered as a question ("Sarah?");
    # `voices name LABEL NAME` confirms it
    suggestion: str | None = None


class VoicesReply(Reply):
    voices: list[VoiceInfo]
    heard: list[HeardVoiceInfo]
    voices_enabled: bool
    state: str  # "on", "off (...)", "unavailable: <why>"
    model_id: str = ""  # the encoder the voices run ("" without one)
    # named voices that encoder does not recognise (named under another), and what to do
    note: str = ""


class VoiceReply(Reply):
    voice: VoiceInfo
    message: str


class VoicesList(Request[VoicesReply]):
    pass


class VoiceName(Request[VoiceReply]):
    """Name ``voice``: a session voice ("Them 2", in ``session_id`` or the latest session that
    has one) or a named voice by id (a rename). The name updates its past turns."""

    voice: str
    name: str
    session_id: int | None = None


class VoiceShow(Request[VoiceReply]):
    """One named voice (id or name): what its print rests on and when it was last heard."""

    voice: str


class VoiceMerge(Request[VoiceReply]):
    """Two named voices (ids or names) are one person: ``other`` becomes ``keep``."""

    keep: str
    other: str


class VoiceForget(Request[VoiceReply]):
    """Delete a named voice's voiceprint and its name from every turn, header and archive."""

    voice: str

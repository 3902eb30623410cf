"""Remembering: keep / discard / later, an assertion's history, the review of memories."""

from __future__ import annotations

from typing import Literal

import msgspec

from daemon.ipc.protocol.base import Reply, Request

__all__ = [
    "AssertionInfo", "ClosureInfo", "History", "HistoryReply", "MemoryApprove", "MemoryArchive",
    "MemoryEdit", "MemoryExpire", "MemoryList", "MemoryListReply", "MemoryReject", "MemoryReply",
    "MemoryScope", "Remember", "RememberReply", "RestatementInfo"
]


class RememberReply(Reply):
    """What answering "Keep this conversation?" did. Counts may be 0; ``notes`` say why
    (no Space, practice, the Space opted out, a switch off) and what failed, one line each."""

    session_id: int
    answer: str  # keep | discard | later
    status: str  # the session's status now; "discarded" once it is deleted
    space: str | None = None  # the Space it is filed in
    archived: bool = False
    assertions: int = 0  # new assertions stored
    superseded: int = 0  # of which replace an earlier assertion (kept in its history)
    closed: int = 0  # of which close an open commitment or task (done, or no longer needed)
    duplicates: int = 0  # statements already stored, linked instead of stored again
    restated: int = 0  # of which newly recorded as said again in this session (see History)
    candidates: int = 0  # memories about you proposed for review
    redactions: int = 0  # secrets replaced by a marker before anything was stored
    deleted: dict[str, int] = {}  # discard: what was deleted, by kind
    notes: list[str] = []
    keep_status: str | None = None  # a keep: done | failed (None: no model was needed)
    stored: dict[str, int] = {}  # a keep: the new assertions by kind
    decisions: list[str] = []  # a keep: the text of each new decision


class AssertionInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One assertion (or memory about the person) as clients show it."""

    id: int
    kind: str  # decision | fact | commitment | preference | task
    text: str
    about_person: bool
    review_status: str  # pending | approved | rejected | archived
    source: str  # extracted | user | agent
    space_id: int | None  # None: profile-wide
    space: str | None  # the Space's name
    occurred_at: float
    recorded_at: float
    chosen: str | None = None
    alternatives: list[str] = []
    reasoning: str | None = None
    owner: str | None = None
    due: str | None = None
    session_id: int | None = None
    anchor_chunk_id: int | None = None
    invalidated_at: float | None = None
    superseded_by: int | None = None
    expires_at: float | None = None


class RestatementInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A later session of the same Space that said an assertion again (a duplicate, linked
    instead of stored twice)."""

    assertion_id: int  # the version that was said again
    session_id: int
    session_title: str
    occurred_at: float  # when it was said again (unix time)
    anchor_chunk_id: int | None = None  # where in that session's transcript


class ClosureInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A version that closed an open commitment or task: done, or dropped (no longer needed),
    and the turn that said so (none when it was closed by hand)."""

    assertion_id: int  # the closed version
    status: str  # done | dropped
    evidence_turn_id: int | None = None
    speaker: str = ""
    text: str = ""


class HistoryReply(Reply):
    chain: list[AssertionInfo]  # oldest first; the last one is the current version
    # where the versions in ``chain`` were said again, earliest first (absent from older daemons)
    restatements: list[RestatementInfo] = []
    closures: list[ClosureInfo] = []  # the versions in ``chain`` that closed an open item


class MemoryListReply(Reply):
    memories: list[AssertionInfo]  # newest first
    memory_enabled: bool  # consent: without it nothing here is recalled
    session_archive_enabled: bool  # the other switch, shown beside it


class MemoryReply(Reply):
    memory: AssertionInfo


class Remember(Request[RememberReply]):
    """Answer "Keep this conversation?" for an ended session. It is filed first: into
    ``space``, out of every Space with ``no_space``, else where it ran. A keep reports its
    model work as StageProgress events on ``progress_topic(id)``."""

    session_id: int
    answer: Literal["keep", "discard", "later"]
    space: str | None = None
    no_space: bool = False


class History(Request[HistoryReply]):
    """The supersede chain an assertion belongs to."""

    assertion_id: int


class MemoryList(Request[MemoryListReply]):
    """Memories about the person, of every Space or of one (``space``) or profile-wide only."""

    space: str | None = None
    profile_wide: bool = False
    status: Literal["", "pending", "approved", "rejected", "archived"] = ""  # "": every status


class MemoryApprove(Request[MemoryReply]):
    memory_id: int


class MemoryReject(Request[MemoryReply]):
    memory_id: int


class MemoryArchive(Request[MemoryReply]):
    memory_id: int


class MemoryEdit(Request[MemoryReply]):
    memory_id: int
    text: str


class MemoryScope(Request[MemoryReply]):
    """Where a memory is recalled: in ``space`` only, or everywhere with ``profile``."""

    memory_id: int
    space: str | None = None
    profile: bool = False


class MemoryExpire(Request[MemoryReply]):
    memory_id: int
    expires_at: float | None  # unix time; None: never

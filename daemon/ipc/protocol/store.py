"""What the store holds, as the protocol shows it: sessions, Spaces, documents, export and
transcript import, speaker names of a session."""

from __future__ import annotations

import msgspec

from daemon.ipc.protocol.base import MAX_FRAME_BYTES, TOPIC_SESSIONS, Event, Reply, Request
from daemon.ipc.protocol.memory import AssertionInfo

__all__ = [
    "ACTIVITIES", "EXPORT_FORMATS", "MAX_CONTENT_BYTES", "AddDocument", "AddSpace", "DeletedReply",
    "DocumentInfo", "DocumentReply", "DocumentsReply", "ExportReply", "ExportSession", "GapInfo",
    "ImportTranscript", "ImportTranscriptReply", "ListDocuments", "ListSessions", "ListSpaces",
    "ReceiptInfo", "RemoveDocument", "RemoveSpace", "RenameSpeaker", "SessionEnded", "SessionInfo",
    "SessionReply", "SessionsReply", "SetSpace", "ShowSession", "SpaceInfo", "SpaceReply",
    "SpacesReply", "TurnInfo"
]

# What the store holds, as the protocol shows it: the wire format of the product's API, kept
# apart from the store's own rows so that either can change without the other.
ACTIVITIES = ("meeting", "custom", "project", "job", "subject", "personal", "game", "solo")
EXPORT_FORMATS = ("md", "json", "srt", "vtt")

# The bytes of a file sent in one request, leaving room in the frame for the other fields.
MAX_CONTENT_BYTES = MAX_FRAME_BYTES - 64 * 1024


class SpaceInfo(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    name: str
    activity: str
    memory_enabled: bool  # False: opted out, its sessions are never summarised or remembered
    created_at: float  # unix time
    sessions: int = 0
    documents: int = 0


class GapInfo(msgspec.Struct, frozen=True):
    """A stretch of one source (mic | loopback) a live session misses, in seconds from its
    start; ``cause``: device lost, device changed, audio server gone, suspend, blocks dropped,
    capture starting, audio stopped, paused (nothing captured), not transcribed, or mic silent
    (while the other side talked: muted?)."""

    source: str
    cause: str
    start: float
    end: float
    detail: str = ""


class ReceiptInfo(msgspec.Struct, frozen=True):
    """What a live session heard of ``length_s``: seconds per source, every gap, and ``text``
    saying it ("heard 41:20 of 41:20", or each gap)."""

    text: str
    length_s: float
    heard_s: dict[str, float]
    gaps: list[GapInfo] = []


class SessionInfo(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    title: str
    activity: str
    status: str  # live | ended | kept | later | discarded
    started_at: float  # unix time
    ended_at: float | None
    space: str | None  # the Space's name; None: in no Space
    participants: list[str]
    turns: int
    practice: bool = False
    # a kept session: where the model's work stands (pending | running | done | failed) and,
    # when it failed, why; None: no keep needed the model
    keep_status: str | None = None
    keep_reason: str | None = None
    receipt: ReceiptInfo | None = None  # a live session's: what it heard (None: imported)


class TurnInfo(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    seq: int
    speaker: str
    source: str  # mic | loopback | import
    start: float  # seconds from the start of the session
    end: float
    text: str
    ref: str | None = None  # an external id given at import
    # the text as search, ask and MCP hand it out, when a secret said in it is masked there
    masked: str | None = None


class DocumentInfo(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    title: str
    filename: str
    media_type: str
    chars: int
    chunks: int
    added_at: float  # unix time
    space: str | None  # None: profile-wide


class SessionsReply(Reply):
    sessions: list[SessionInfo]  # newest first


class SessionReply(Reply):
    session: SessionInfo
    turns: list[TurnInfo]  # in order
    archive: str | None = None  # the rendered archive of a kept session
    assertions: list[AssertionInfo] = []  # what its keep extracted, in the order said
    # the turns each of those assertions was said in, by assertion id
    evidence: dict[int, list[int]] = {}


class ExportReply(Reply):
    text: str
    format: str


class ImportTranscriptReply(Reply):
    session: SessionInfo
    chunks: int
    note: str = ""  # e.g. that vectors follow once an embedding model is installed


class SpacesReply(Reply):
    spaces: list[SpaceInfo]  # by name


class SpaceReply(Reply):
    space: SpaceInfo


class DocumentsReply(Reply):
    documents: list[DocumentInfo]  # newest first


class DocumentReply(Reply):
    document: DocumentInfo
    note: str = ""


class DeletedReply(Reply):
    """What a deletion removed: ``name`` of what was asked for, ``deleted`` counts by kind
    (``sessions``, ``turns``, ``chunks``, ``documents``, ``assertions``, ``vectors``...)."""

    name: str
    deleted: dict[str, int]


class ListSessions(Request[SessionsReply]):
    space: str | None = None  # only this Space's sessions
    limit: int | None = None  # the newest ones


class ShowSession(Request[SessionReply]):
    session_id: int


class ExportSession(Request[ExportReply]):
    """A session's transcript as text (``format`` one of EXPORT_FORMATS); the client writes
    the file."""

    session_id: int
    format: str


class ImportTranscript(Request[ImportTranscriptReply]):
    """Make an ended session from the bytes of a JSON transcript (the format of
    ``daemon.store.transcript``), read by the client; the daemon validates them. Embedding is
    reported as StageProgress events on ``progress_topic(id)``."""

    content: bytes
    filename: str = ""  # for messages only
    space: str | None = None


class ListSpaces(Request[SpacesReply]):
    pass


class AddSpace(Request[SpaceReply]):
    name: str
    activity: str = "meeting"
    memory_enabled: bool = True


class SetSpace(Request[SpaceReply]):
    """Change a Space: what is None stays as it is."""

    name: str
    rename: str | None = None
    activity: str | None = None
    memory_enabled: bool | None = None


class RemoveSpace(Request[DeletedReply]):
    """Delete a Space and everything recorded in it; profile-wide memory stays."""

    name: str


class ListDocuments(Request[DocumentsReply]):
    space: str | None = None


class AddDocument(Request[DocumentReply]):
    """Add a .txt, .md or .pdf file, sent as its bytes (at most MAX_CONTENT_BYTES). Embedding
    is reported as StageProgress events on ``progress_topic(id)``."""

    filename: str  # its extension says how to read it
    content: bytes
    space: str | None = None  # None: profile-wide
    title: str | None = None  # None: the file name without its extension
    modified_at: float | None = None  # the file's mtime: the date in its chunks' headers


class RemoveDocument(Request[DeletedReply]):
    document_id: int


class RenameSpeaker(Request[SessionReply]):
    """Call ``speaker`` of one session ``name``: its turns, the transcript's headers, the
    archive and the owners and texts of the session's assertions follow (as a voice's name
    does). The reply is the session as it is now."""

    session_id: int
    speaker: str
    name: str


class SessionEnded(Event):
    """A session ended: what a client needs to ask "Keep this conversation?"."""

    topic_prefix = TOPIC_SESSIONS
    session_id: int
    duration_s: float
    gist: str  # one line
    space: str | None = None
    speakers: list[str] = []  # who spoke, in order of first speech ("me", "Them 1", names)
    receipt: ReceiptInfo | None = None  # what it heard, every gap named

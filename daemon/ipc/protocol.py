"""The BrainCue protocol: every message between the daemon and its clients.

Imported by the daemon and by every client, so it depends on msgspec only.

Wire format: each message is one msgpack map tagged by ``type`` (the snake-case class name).
Requests go to the daemon's ROUTER socket as the two frames ``[b"", payload]`` (a DEALER with an
empty delimiter, so REQ sockets work too); each carries the protocol version ``v`` and a request
id ``id`` that its reply echoes. Events come from the PUB socket as ``[topic, payload]``.

Adding a request type is one struct here plus one handler in the daemon::

    class Forget(Request[Ok]):
        session_id: int

Subclasses of :class:`Request`, :class:`Reply` and :class:`Event` register themselves, so the
decoders always know every type; ``Request[Ok]`` declares the reply the request gets.
"""

from __future__ import annotations

import functools
import operator
import re
from typing import Any, ClassVar, Generic, Literal, TypeVar, get_args, get_origin

import msgspec

PROTOCOL_VERSION = 1

# A transcript of several hours is far below this; anything larger is rejected with `too_large`.
MAX_FRAME_BYTES = 4 * 1024 * 1024
MAX_ID_LENGTH = 128  # request ids are echoed in replies and event topics

# Error codes of the protocol itself. Errors raised by request handlers use the `code` of their
# daemon.errors class ("not_found", "invalid", "config", ...).
BAD_REQUEST = "bad_request"
UNKNOWN_TYPE = "unknown_type"
VERSION = "version"
TOO_LARGE = "too_large"
INTERNAL = "internal"
UNAVAILABLE = "unavailable"
NOT_FOUND = "not_found"
INVALID = "invalid"

# Event topics (PUB/SUB filters by prefix; each topic ends with "/" so that no topic is a prefix
# of another).
TOPIC_TURNS = "turn/"
TOPIC_SESSIONS = "session/"
TOPIC_STATUS = "status/"
TOPIC_ANSWERS = "answer/"
TOPIC_SYNC = "sync/"
TOPIC_PROGRESS = "progress/"


def answer_topic(request_id: str) -> str:
    """The topic of the answer events streamed for one request."""
    return f"{TOPIC_ANSWERS}{request_id}/"


def progress_topic(request_id: str) -> str:
    """The topic of the progress events of one long request (an audio or transcript import,
    a document, a keep)."""
    return f"{TOPIC_PROGRESS}{request_id}/"


def sync_topic(nonce: str) -> str:
    """The topic on which the daemon confirms one subscription (see :class:`Subscribed`)."""
    return f"{TOPIC_SYNC}{nonce}/"


def snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class Message(msgspec.Struct, tag_field="type", tag=snake_case):
    """Base of every message on the wire."""


M = TypeVar("M", bound=Message)


class _Family(Generic[M]):
    """The registered types of one kind of message and a decoder for their union."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._classes: list[type[M]] = []
        self._types: dict[str, type[M]] | None = None
        self._decoder: msgspec.msgpack.Decoder[M] | None = None

    def register(self, cls: type[M]) -> None:
        # Called from __init_subclass__, before msgspec has set the class's tag: read it later.
        self._classes.append(cls)
        self._types = self._decoder = None

    @property
    def types(self) -> dict[str, type[M]]:
        """Every registered type by its tag."""
        if self._types is None:
            types: dict[str, type[M]] = {}
            for cls in self._classes:
                tag = tag_of(cls)
                if tag in types:
                    raise TypeError(f"two {self.kind} types are tagged {tag!r}")
                types[tag] = cls
            self._types = types
        return self._types

    def decode(self, frame: bytes) -> M:
        if self._decoder is None:
            union: Any = functools.reduce(operator.or_, self.types.values())
            self._decoder = msgspec.msgpack.Decoder(union)
        return self._decoder.decode(frame)


def tag_of(cls: type[Message]) -> str:
    """The wire name of a message type (``SettingsGet`` -> ``"settings_get"``)."""
    return str(cls.__struct_config__.tag)


# ---------------------------------------------------------------------------------------------
# Replies


class Reply(Message, kw_only=True):
    """Base of every reply. The daemon fills ``id`` with the id of the request answered."""

    id: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        REPLIES.register(cls)


REPLIES: _Family[Reply] = _Family("reply")


class Error(Reply):
    """A request failed; ``code`` is one of the protocol codes above or a daemon.errors code."""

    code: str
    message: str
    fix: str = ""


class Ok(Reply):
    """Done, nothing to report."""


class Pong(Reply):
    pass


class SourceStatus(msgspec.Struct):
    """One capture source: ``state`` is stopped | starting | capturing | no audio."""

    state: str
    device: str = ""
    detail: str = ""  # why there is no audio


class LiveStatus(msgspec.Struct):
    """Live capture and transcription."""

    sources: dict[str, SourceStatus]  # by source: mic, loopback
    utterances_queued: int  # waiting for transcription, the one in progress included
    asr_lag_s: float  # how far transcription is behind the end of speech
    dropped_blocks: int  # audio dropped because transcription fell behind
    asr_real_time_factor: float = 0.0  # transcription time / audio transcribed, so far
    asr_model: str = ""  # empty: no speech model installed
    session_id: int | None = None  # the live session
    # where the time from the end of an utterance to its turn stored goes, median seconds per
    # stage over recent utterances: cut (the VAD's hangover), queued, asr, voices, stored, total
    stages_p50_s: dict[str, float] = {}


class ModelProcessInfo(msgspec.Struct, frozen=True):
    """A model's own process: ``pid`` None while it is not running (it starts on first use);
    ``deaths`` since the daemon started, ``last_death`` how (\"killed by SIGSEGV\")."""

    role: str  # "llm"
    priority: str  # "foreground" (asks) or "background" (keeps)
    model_id: str
    pid: int | None
    deaths: int = 0
    last_death: str | None = None


class StatusReply(Reply):
    profile: str
    version: str
    protocol: int
    pid: int
    uptime_s: float
    models_loaded: list[str]
    capture: str
    counts: dict[str, int]  # filled by the parts of the daemon that own the counted things
    ipc: dict[str, int]  # request counters of the server
    live: LiveStatus | None = None  # None: capture is not part of this daemon
    model_processes: list[ModelProcessInfo] = []


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


SettingValue = str | int | float | bool


class SettingsReply(Reply):
    settings: dict[str, SettingValue]


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


class SearchLeg(msgspec.Struct, frozen=True):
    """How one search leg ranked a result: its rank (1 is best) and raw score, higher better
    (cosine similarity, or BM25 negated)."""

    rank: int
    score: float


class SearchExplain(msgspec.Struct, frozen=True):
    score: float  # the fused score, bonus included: an order, never a threshold
    bonus: float  # the recency bonus in it (0 unless the query asked about time)
    legs: dict[str, SearchLeg]  # fts_chunks, vector_chunks, fts_assertions, vector_assertions


class SearchAnchor(msgspec.Struct, frozen=True):
    """The chunk an assertion was extracted from, shown with it."""

    chunk_id: int
    text: str
    turn_ids: list[int] = []
    refs: list[str] = []


class SearchLinked(msgspec.Struct, frozen=True):
    """An assertion extracted from a chunk that was found, shown with it."""

    id: int
    kind: str
    text: str


class SearchHit(msgspec.Struct, frozen=True, kw_only=True):
    """One thing found: a chunk (``item`` chunk: transcript, session archive, document) or an
    assertion (``item`` assertion: decision, fact, commitment, preference, task)."""

    item: str
    id: int
    kind: str
    text: str  # a chunk's header and body, or the assertion's statement
    title: str  # the session's or document's title ("" when it has none)
    date: float  # unix time it occurred
    speakers: list[str] = []  # in order of first appearance
    session_id: int | None = None
    document_id: int | None = None
    turn_ids: list[int] = []  # the turns it covers (an assertion: its anchor's)
    refs: list[str] = []  # their external refs, where they have one
    anchor: SearchAnchor | None = None
    assertions: list[SearchLinked] = []
    explain: SearchExplain | None = None  # only when asked for


class SearchReply(Reply):
    results: list[SearchHit]  # best first


# ---------------------------------------------------------------------------------------------
# Requests

R = TypeVar("R", bound=Reply)


class Request(Message, Generic[R], kw_only=True, forbid_unknown_fields=True):
    """Base of every request; subclass as ``class Foo(Request[FooReply])``."""

    v: int = PROTOCOL_VERSION
    id: str = ""

    reply_type: ClassVar[type[Reply]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            if get_origin(base) is Request:
                cls.reply_type = get_args(base)[0]
        if not hasattr(cls, "reply_type"):
            name = cls.__name__
            raise TypeError(f"declare the reply of {name}: class {name}(Request[ItsReply])")
        REQUESTS.register(cls)


REQUESTS: _Family[Request[Any]] = _Family("request")


class Ping(Request[Pong]):
    pass


class Status(Request[StatusReply]):
    pass


class SettingsGet(Request[SettingsReply]):
    key: str = ""  # empty: every setting


class SettingsSet(Request[SettingsReply]):
    key: str
    value: str  # parsed like a TOML value; a bare word is a string


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
    voices: bool = False  # ... unless its voices are told apart ("Them 1", "Them 2", names)
    space: str | None = None
    activity: str = ""
    title: str = ""
    started_at: float | None = None  # unix time; None: the file's modification time - duration


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


class Search(Request[SearchReply]):
    """Fusion search (full text and vectors, over chunks and assertions) in one scope: the
    Space's memory and profile-wide memory; without ``space``, profile-wide memory only."""

    query: str
    k: int | None = None  # results wanted; None: the search_k setting
    space: str | None = None
    as_of: float | None = None  # unix time: what was believed then, nothing said later
    explain: bool = False  # each result's fused score and its legs' ranks and raw scores


class Pause(Request[Ok]):
    """Stop listening (``paused``) or listen again; while paused, status reports capture
    "paused" and nothing is heard, so no session starts by itself."""

    paused: bool = True


# ---------------------------------------------------------------------------------------------
# Remembering: keep / discard / later, an assertion's history, the review of memories


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


class ForgetReply(Reply):
    """What ``Forget`` deleted: the sessions, and their rows by kind."""

    session_ids: list[int]
    deleted: dict[str, int] = {}


class Forget(Request[ForgetReply]):
    """Delete every session (not live) that started before ``before`` (unix time), in one
    Space or all, cascading like a discard; memories the user reviewed stay."""

    before: float
    space: str | None = None


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


# ---------------------------------------------------------------------------------------------
# Open items: commitments and tasks not yet done or dropped; selections over a person and period


class ItemInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A commitment or task (or, in a selection, a decision) as lists show it: who, what, by
    when, its status, and where it was said."""

    id: int
    kind: str
    text: str
    occurred_at: float  # when it was said (unix time)
    status: str = ""  # open | done | dropped for a commitment or task; "" for other kinds
    owner: str | None = None
    due: str | None = None
    space: str | None = None  # None: profile-wide
    session_id: int | None = None
    session_title: str = ""  # where it was said ("" when added by hand or the session is gone)
    chosen: str | None = None
    alternatives: list[str] = []
    reasoning: str | None = None
    closed_by: int | None = None  # the version that closed it
    closed_at: float | None = None


class ItemsReply(Reply):
    items: list[ItemInfo]  # oldest first
    period_start: float | None = None  # the period read (SelectItems), unix time
    period_end: float | None = None


class OpenItems(Request[ItemsReply]):
    """What is open, oldest first: in ``space`` (with profile-wide items), or in every Space
    when none is given; of ``owner`` ("Sarah" is "Sarah Chen"); as it was at ``as_of``."""

    space: str | None = None
    owner: str = ""
    as_of: float | None = None  # unix time; with ``space`` only


class SelectItems(Request[ItemsReply]):
    """Every assertion of ``kinds`` (empty: commitments and tasks) in ``space`` (with
    profile-wide ones; None: profile-wide only) of ``owner``, said within ``period`` (a phrase:
    "this month", "since March", "last week"; "": any time), oldest first; with ``open_only``
    the commitments and tasks still open. A closed item is listed as committed, with its
    status."""

    space: str | None = None
    kinds: list[Literal["decision", "fact", "commitment", "preference", "task"]] = []
    owner: str = ""
    period: str = ""
    open_only: bool = False


class CloseItem(Request[HistoryReply]):
    """Close an open commitment or task by hand (source ``user``): ``done``, or ``dropped``
    (no longer needed). The reply is its history, the closed version last."""

    item_id: int
    status: Literal["done", "dropped"]


class CorrectItem(Request[HistoryReply]):
    """Correct a decision, commitment or task by hand: a new version (source ``user``, said
    now) with the fields given supersedes the current one, which stays in the history and in
    what as-of reads return. A field left None stays as it is; "" clears owner, due, chosen or
    reasoning. A closed item stays closed."""

    item_id: int
    text: str | None = None
    chosen: str | None = None
    alternatives: list[str] | None = None
    reasoning: str | None = None
    owner: str | None = None
    due: str | None = None


class RetractItem(Request[HistoryReply]):
    """Delete a decision, commitment or task as wrong: it stops being current now, with no
    new version; its history and as-of reads still hold it."""

    item_id: int


class ReopenItem(Request[HistoryReply]):
    """Open again a commitment or task closed by mistake: a new open version (source ``user``)
    supersedes the closed one."""

    item_id: int


# ---------------------------------------------------------------------------------------------
# Asking


class Citation(msgspec.Struct, frozen=True, kw_only=True):
    """A source an answer cites as ``[n]``."""

    n: int
    title: str  # the session's (or document's) title
    session_id: int | None = None  # None: a Space document
    date: float = 0.0  # unix time the session started; 0: unknown
    speaker: str = ""
    quote: str = ""
    verified: bool = True  # False: the quote was not found verbatim in the cited source
    kind: str = ""  # transcript | archive | document | assertion | memory | context (live turns)
    chunk_id: int | None = None
    document_id: int | None = None


class EvidenceInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One thing memory holds for a question, shown before the answer: a verbatim passage cut
    to the sentences that answer (240 characters at most) or a structured item (a decision:
    ``chosen`` over ``alternatives``, ``reasoning``; a commitment or task: ``owner``, ``due``,
    ``status``), with its source and the number ``n`` the answer cites it by."""

    n: int
    kind: str  # the source's: transcript | archive | document | assertion | memory
    title: str  # the session's (or document's) title
    text: str
    date: float = 0.0  # unix time the session started (an item: when it was said); 0: unknown
    speaker: str = ""
    start: float | None = None  # seconds from the session's start
    ref: str = ""  # the turn's external ref (an imported transcript's), where it has one
    session_id: int | None = None
    chunk_id: int | None = None
    document_id: int | None = None
    item_kind: str = ""  # a structured item's kind: decision | commitment | task | fact | ...
    chosen: str | None = None
    alternatives: list[str] = []
    reasoning: str | None = None
    owner: str | None = None
    due: str | None = None
    status: str = ""


class AskReply(Reply):
    """The whole answer, checked: each sentence kept only when a source it cites supports it
    (none left: ``declined``, the answer says nothing in memory says it), every quote verified
    against its source or marked ``[unverified]``, citations of sources that do not exist
    dropped. Its evidence was streamed first as AnswerEvidence, its text (unchecked) as
    AnswerToken events, then AnswerDone."""

    answer: str
    sources: list[Citation] = []
    question: str = ""  # the question answered (asked with none: the one heard from "them")
    evidence: list[EvidenceInfo] = []  # what memory holds for the question, as shown first
    nothing_found: bool = False  # nothing relevant was recalled: the answer says so, no model
    declined: bool = False  # memory holds nothing that answers it (nothing_found included)
    cancelled: bool = False  # stopped by AskCancel: ``answer`` is what came until then


class Ask(Request[AskReply]):
    """Answer from memory, streaming on ``answer_topic(id)`` AnswerEvidence first (what memory
    holds), then AnswerToken events and AnswerDone.

    With no ``question``, answer the last question "them" asked in the live session. The answer
    stops early on AskCancel, or when the client that subscribed to ``answer_topic(id)`` goes
    away.
    """

    question: str | None = None
    space: str | None = None  # recall within this Space (and profile-wide memory)
    session: int | None = None  # ground on this session first (default: the live one)


class AskCancel(Request[Ok]):
    """Stop the answer being streamed for the Ask ``request_id`` (its reply says cancelled)."""

    request_id: str


class AssertionsReply(Reply):
    assertions: list[AssertionInfo]  # newest first


class ListAssertions(Request[AssertionsReply]):
    """What is believed now in ``space`` (with profile-wide assertions; None: profile-wide
    only): approved, not superseded, unexpired; of ``kinds`` (empty: every kind)."""

    space: str | None = None
    kinds: list[Literal["decision", "fact", "commitment", "preference", "task"]] = []


# ---------------------------------------------------------------------------------------------
# Voices


class VoiceInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A named voice: its voiceprint is kept in the profile (never sent)."""

    id: int
    name: str
    sessions: int  # sessions with turns of this voice
    turns: int
    seconds: float  # speech its voiceprint was learnt from
    created_at: float
    model_id: str = ""  # the encoder it was named under: only that one recognises it


class HeardVoiceInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A voice of a session heard since the daemon started (kept in memory only)."""

    session_id: int
    label: str  # "Them 2"
    name: str | None  # the named voice it was recognised as
    seconds: float


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


class RenameSpeaker(Request[SessionReply]):
    """Call ``speaker`` of one session ``name``: its turns, the transcript's headers, the
    archive and the owners and texts of the session's assertions follow (as a voice's name
    does). The reply is the session as it is now."""

    session_id: int
    speaker: str
    name: str


class VoiceMerge(Request[VoiceReply]):
    """Two named voices (ids or names) are one person: ``other`` becomes ``keep``."""

    keep: str
    other: str


class VoiceForget(Request[VoiceReply]):
    """Delete a named voice's voiceprint and its name from every turn, header and archive."""

    voice: str


# ---------------------------------------------------------------------------------------------
# Events


class Event(Message):
    """Base of every event published by the daemon."""

    topic_prefix: ClassVar[str]

    def topic(self) -> str:
        return self.topic_prefix

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        EVENTS.register(cls)


EVENTS: _Family[Event] = _Family("event")


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


class SessionEnded(Event):
    """A session ended: what a client needs to ask "Keep this conversation?"."""

    topic_prefix = TOPIC_SESSIONS
    session_id: int
    duration_s: float
    gist: str  # one line
    space: str | None = None
    speakers: list[str] = []  # who spoke, in order of first speech ("me", "Them 1", names)
    receipt: ReceiptInfo | None = None  # what it heard, every gap named


class CarriedForward(Event):
    """A session started in a Space (or was filed into one) where earlier sessions left
    commitments or tasks open: ``message`` ("3 open from last time") and the items, oldest
    first (the list may be cut; the message counts them all)."""

    topic_prefix = TOPIC_SESSIONS
    session_id: int
    space: str
    message: str
    items: list[ItemInfo]


class AnswerEvidence(Event):
    """What memory holds for the question of ``request_id``: the first event of its answer,
    sent before the model writes."""

    topic_prefix = TOPIC_ANSWERS
    request_id: str
    evidence: list[EvidenceInfo]

    def topic(self) -> str:
        return answer_topic(self.request_id)


class AnswerToken(Event):
    """A piece of a streamed answer to the request ``request_id``."""

    topic_prefix = TOPIC_ANSWERS
    request_id: str
    token: str

    def topic(self) -> str:
        return answer_topic(self.request_id)


class AnswerDone(Event):
    """The streamed answer to ``request_id`` is complete (its reply carries the result)."""

    topic_prefix = TOPIC_ANSWERS
    request_id: str
    cancelled: bool = False

    def topic(self) -> str:
        return answer_topic(self.request_id)


class ImportProgress(Event):
    """How far the import ``request_id`` has got, in seconds of audio."""

    topic_prefix = TOPIC_PROGRESS
    request_id: str
    done_s: float
    total_s: float
    turns: int

    def topic(self) -> str:
        return progress_topic(self.request_id)


class StageProgress(Event):
    """How far one stage of the long request ``request_id`` has got: ``done`` of ``total``.

    A keep (Remember) goes through ``extraction`` and ``archive`` (pieces of the transcript
    sent to the language model) and ``reconciliation`` (extracted statements checked against
    what is stored); an ImportTranscript or AddDocument through ``embedding`` (texts embedded,
    where ``total`` may grow as the store finds more to embed). A stage is reported when it
    starts (``done`` 0) and after each step; a stage that failed stops short of its total (the
    reply says why). ``stage`` is a plain string: a client shows a stage it does not know.
    """

    topic_prefix = TOPIC_PROGRESS
    request_id: str
    stage: str
    done: int
    total: int

    def topic(self) -> str:
        return progress_topic(self.request_id)


class StatusEvent(Event):
    """What capture is doing; ``alert``: the live session is missing audio (a gap, a mic
    silent while the other side talks), for the user to see at once."""

    topic_prefix = TOPIC_STATUS
    capture: str
    message: str = ""
    alert: bool = False


class Subscribed(Event):
    """The daemon saw the subscription to ``sync_topic(nonce)``, and every one before it."""

    topic_prefix = TOPIC_SYNC
    nonce: str

    def topic(self) -> str:
        return sync_topic(self.nonce)


# ---------------------------------------------------------------------------------------------
# Encoding and decoding

_encoder = msgspec.msgpack.Encoder()
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


class ProtocolError(Exception):
    """A frame that is not a valid request; ``reply`` is the Error to send back."""

    def __init__(self, reply: Error) -> None:
        super().__init__(reply.message)
        self.reply = reply


class _Envelope(msgspec.Struct):
    """What is read from a request before its type is known, to give a precise error."""

    type: Any = None
    v: Any = None
    id: Any = None


_envelope_decoder = msgspec.msgpack.Decoder(_Envelope)


def encode(message: Message) -> bytes:
    return _encoder.encode(message)


def decode_request(frame: bytes) -> Request[Any]:
    """Decode one request frame, or raise :class:`ProtocolError` with the reply to send."""

    def fail(code: str, message: str, request_id: str = "", fix: str = "") -> ProtocolError:
        return ProtocolError(Error(id=request_id, code=code, message=message, fix=fix))

    if len(frame) > MAX_FRAME_BYTES:
        raise fail(TOO_LARGE, f"a request of {len(frame)} bytes is over the limit of "
                              f"{MAX_FRAME_BYTES} bytes")
    try:
        envelope = _envelope_decoder.decode(frame)
    except _DECODE_ERRORS as e:
        raise fail(BAD_REQUEST, f"a request must be a msgpack map: {e}") from None
    if not isinstance(envelope.id, str):
        raise fail(BAD_REQUEST, f"the request id must be a string, not {_short(envelope.id)}")
    if len(envelope.id) > MAX_ID_LENGTH:
        raise fail(BAD_REQUEST, f"the request id is longer than {MAX_ID_LENGTH} characters")
    request_id = envelope.id
    if type(envelope.v) is not int or envelope.v != PROTOCOL_VERSION:
        raise fail(VERSION, f"protocol version {_short(envelope.v)} is not supported (this daemon "
                            f"speaks {PROTOCOL_VERSION})", request_id,
                   fix="use a client from the same BrainCue version as the daemon")
    if not isinstance(envelope.type, str) or envelope.type not in REQUESTS.types:
        raise fail(UNKNOWN_TYPE, f"unknown request type {_short(envelope.type)}", request_id)
    try:
        return REQUESTS.decode(frame)
    except _DECODE_ERRORS as e:
        raise fail(BAD_REQUEST, f"invalid {envelope.type} request: {_clip(str(e), 300)}",
                   request_id) from None


def decode_reply(frame: bytes) -> Reply:
    """Decode a reply; raises msgspec.DecodeError / ValidationError on a malformed frame."""
    return REPLIES.decode(frame)


def decode_event(frame: bytes) -> Event:
    """Decode an event; raises msgspec.DecodeError / ValidationError on a malformed frame."""
    return EVENTS.decode(frame)


def _short(value: object) -> str:
    return _clip(repr(value), 60)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


"""The rows the store reads and writes, as plain msgspec structs (shared with clients as is).

Times are seconds since the epoch (UTC); a turn's ``start``/``end`` are seconds from its
session's start.
"""

from __future__ import annotations

from typing import Literal

import msgspec

ACTIVITIES = ("meeting", "custom", "project", "job", "subject", "personal", "game", "solo")
SESSION_STATUSES = ("live", "ended", "kept", "later", "discarded")
ASSERTION_KINDS = ("decision", "fact", "commitment", "preference", "task")
REVIEW_STATUSES = ("pending", "approved", "rejected", "archived")

SessionStatus = Literal["live", "ended", "kept", "later", "discarded"]
TurnSource = Literal["mic", "loopback", "import"]
ChunkKind = Literal["transcript", "session", "document"]
AssertionKind = Literal["decision", "fact", "commitment", "preference", "task"]
ReviewStatus = Literal["pending", "approved", "rejected", "archived"]
AssertionSource = Literal["extracted", "user", "agent"]
OwnerKind = Literal["chunk", "assertion", "turn"]  # what an embedding belongs to
ItemStatus = Literal["open", "done", "dropped"]  # of a commitment or task
ITEM_KINDS = ("commitment", "task")


class Space(msgspec.Struct, frozen=True):
    """A body of knowledge: what is recorded in it is recalled in it and nowhere else."""

    id: int
    name: str
    activity: str
    memory_enabled: bool  # False: this Space is never summarised or extracted (opt-out)
    created_at: float


class Session(msgspec.Struct, frozen=True):
    id: int
    space_id: int | None  # None: no Space (nothing is summarised or remembered)
    activity: str
    title: str
    started_at: float
    ended_at: float | None
    status: SessionStatus
    practice: bool  # a rehearsal: never archived
    participants: tuple[str, ...]
    turn_count: int = 0


KEEP_STATUSES = ("pending", "running", "done", "failed")
KeepStatus = Literal["pending", "running", "done", "failed"]


class KeepState(msgspec.Struct, frozen=True):
    """Where the model's work for a kept session stands: ``pending`` (asked for, waiting for
    its turn), ``running``, ``done`` or ``failed`` (``reason`` says what failed). ``since``:
    when it entered that status (a running keep: when it started); ``attempts``: how many times
    it started running since it was last done or failed."""

    session_id: int
    status: KeepStatus
    reason: str | None
    since: float
    attempts: int = 0


class NewTurn(msgspec.Struct, frozen=True, kw_only=True):
    """A turn to append: ``start``/``end`` in seconds from the session start."""

    speaker: str
    text: str
    start: float
    end: float | None = None  # None: same as start
    source: TurnSource = "import"
    ref: str | None = None  # an external id (e.g. a dataset's dialogue id)
    voice_label: str | None = None  # diarised: the session voice ("Them 2") ...
    voice_id: int | None = None  # ... and the named voice it is, if any


class Turn(msgspec.Struct, frozen=True):
    id: int
    session_id: int
    seq: int
    speaker: str
    source: TurnSource
    start: float
    end: float
    text: str
    ref: str | None


class TurnHead(msgspec.Struct, frozen=True):
    """A turn without its text: who said it, and its external id."""

    id: int
    speaker: str
    ref: str | None


class Chunk(msgspec.Struct, frozen=True):
    """A searchable piece of text: transcript turns, a session archive or a document part."""

    id: int
    kind: ChunkKind
    session_id: int | None
    document_id: int | None
    space_id: int | None
    header: str
    body: str
    occurred_at: float
    first_turn: int | None  # turn ids (transcript chunks only)
    last_turn: int | None
    closed: bool  # False only for the newest chunk of a live session, which still grows

    @property
    def text(self) -> str:
        """What is embedded: the header and the body."""
        return f"{self.header}\n{self.body}"


class Document(msgspec.Struct, frozen=True):
    id: int
    space_id: int | None
    title: str
    filename: str
    media_type: str
    sha256: str
    chars: int
    added_at: float
    chunk_count: int = 0


class NewAssertion(msgspec.Struct, frozen=True, kw_only=True):
    """An assertion to write. ``source`` is mandatory; ``extracted`` needs ``anchor_chunk_id``.

    ``review_status`` defaults to ``pending`` for memories about the person (they are reviewed
    one by one) and ``approved`` for everything else. ``space_id`` None means profile-wide.
    ``occurred_at`` defaults to now.
    """

    kind: AssertionKind
    text: str
    source: AssertionSource
    space_id: int | None = None
    session_id: int | None = None
    anchor_chunk_id: int | None = None
    occurred_at: float | None = None
    chosen: str | None = None
    alternatives: tuple[str, ...] = ()
    reasoning: str | None = None
    owner: str | None = None
    due: str | None = None
    about_person: bool = False
    review_status: ReviewStatus | None = None
    expires_at: float | None = None


class Assertion(msgspec.Struct, frozen=True):
    id: int
    kind: AssertionKind
    text: str
    chosen: str | None
    alternatives: tuple[str, ...]
    reasoning: str | None
    owner: str | None
    due: str | None
    about_person: bool
    review_status: ReviewStatus
    space_id: int | None
    source: AssertionSource
    anchor_chunk_id: int | None  # may name a chunk deleted since (provenance is kept)
    session_id: int | None  # likewise
    occurred_at: float  # when it was said
    recorded_at: float  # when it was stored
    invalidated_at: float | None  # when it stopped being believed
    superseded_by: int | None  # what replaced it
    expires_at: float | None

    @property
    def current(self) -> bool:
        return self.invalidated_at is None


class ItemClosure(msgspec.Struct, frozen=True, kw_only=True):
    """How an open commitment or task was closed: done, or dropped (no longer needed), and the
    turn that said so (None: closed by hand). Belongs to the closed version of the item."""

    status: Literal["done", "dropped"]
    evidence_turn_id: int | None = None


class NewRestatement(msgspec.Struct, frozen=True, kw_only=True):
    """A session said again what ``assertion_id`` says: where (``anchor_chunk_id``), when."""

    assertion_id: int
    anchor_chunk_id: int | None = None
    occurred_at: float | None = None  # None: now


class Restatement(msgspec.Struct, frozen=True):
    """An assertion said again in a later session of its Space (a duplicate not stored twice)."""

    id: int
    assertion_id: int
    session_id: int
    session_title: str
    anchor_chunk_id: int | None  # may name a chunk deleted since (provenance is kept)
    occurred_at: float  # when it was said again
    recorded_at: float


class Hit(msgspec.Struct, frozen=True):
    """One row found by a search leg.

    For full-text legs ``score`` is SQLite's bm25 (more negative is better); for vector legs it
    is the cosine similarity (higher is better). Hits come best first.
    """

    id: int
    score: float


class Deleted(msgspec.Struct):
    """What a deletion removed."""

    spaces: int = 0
    sessions: int = 0
    turns: int = 0
    chunks: int = 0
    documents: int = 0
    assertions: int = 0
    vectors: int = 0
    restatements: int = 0

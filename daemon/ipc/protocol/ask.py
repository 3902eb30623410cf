"""Asking: a question, its streamed answer and the evidence behind it; the assertions listed
for a client."""

from __future__ import annotations

from typing import Literal

import msgspec

from daemon.ipc.protocol.base import TOPIC_ANSWERS, Event, Ok, Reply, Request, answer_topic
from daemon.ipc.protocol.memory import AssertionInfo

__all__ = [
    "AnswerDone", "AnswerEvidence", "AnswerToken", "Ask", "AskCancel", "AskReply",
    "AssertionsReply", "Citation", "EvidenceInfo", "ListAssertions"
]


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

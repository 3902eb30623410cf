"""Open items: commitments and tasks not yet done or dropped; selections over a person and
period; the items carried forward into a new session."""

from __future__ import annotations

from typing import Literal

import msgspec

from daemon.ipc.protocol.base import TOPIC_SESSIONS, Event, Reply, Request
from daemon.ipc.protocol.memory import HistoryReply

__all__ = [
    "CarriedForward", "CloseItem", "CorrectItem", "ItemInfo", "ItemsReply", "OpenItems",
    "ReopenItem", "RetractItem", "SelectItems"
]


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


class CarriedForward(Event):
    """A session started in a Space (or was filed into one) where earlier sessions left
    commitments or tasks open: ``message`` ("3 open from last time") and the items, oldest
    first (the list may be cut; the message counts them all)."""

    topic_prefix = TOPIC_SESSIONS
    session_id: int
    space: str
    message: str
    items: list[ItemInfo]

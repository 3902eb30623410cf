"""Forgetting: removing a session and everything derived from it."""

from __future__ import annotations

from daemon.ipc.protocol.base import Reply, Request

__all__ = [
    "Forget", "ForgetReply"
]


class ForgetReply(Reply):
    """What ``Forget`` deleted: the sessions, and their rows by kind."""

    session_ids: list[int]
    deleted: dict[str, int] = {}


class Forget(Request[ForgetReply]):
    """Delete every session (not live) that started before ``before`` (unix time), in one
    Space or all, cascading like a discard; memories the user reviewed stay."""

    before: float
    space: str | None = None

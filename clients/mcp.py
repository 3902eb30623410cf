"""`braincue mcp`: the profile's memory for other tools, as an MCP server over stdio.

Read-only: the tools search, ask, list sessions, read a session's transcript, and list the
open commitments and tasks and the decisions of a Space. Every call is a request to the
daemon over its protocol — this process never opens the database — so the daemon's rules
(scope, consent, the quote check) hold here too. Replies are JSON text.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import msgspec
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from daemon.errors import BrainCueError
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    Ask,
    ItemInfo,
    ListSessions,
    Reply,
    Request,
    Search,
    SelectItems,
    ShowSession,
)

log = logging.getLogger("braincue.mcp")

P = ParamSpec("P")
R = TypeVar("R", bound=Reply)
T = TypeVar("T")

ASK_TIMEOUT_S = 300.0
MAX_K = 50
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
OPEN_KINDS = ["commitment", "task"]

INSTRUCTIONS = (
    "BrainCue is the user's private memory of their own conversations (meetings, calls, "
    "interviews), their documents and what was decided in them. Search it or ask it; an answer "
    "cites its sources as [n]. Spaces separate bodies of knowledge (one client, one project): "
    "pass the Space's name to stay inside it."
)


def _json(value: object) -> str:
    return msgspec.json.encode(value).decode()


def _tool_errors(fn: Callable[P, T]) -> Callable[P, T]:
    """A BrainCue error becomes a tool error the calling model can read (and act on)."""

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return fn(*args, **kwargs)
        except BrainCueError as e:
            raise ToolError(str(e)) from e

    return call


class Tools:
    """What each tool does, as plain synchronous calls to one profile's daemon."""

    def __init__(self, profile: str) -> None:
        self.profile = profile

    def _request(self, request: Request[R], timeout: float | None = None) -> R:
        with Client(self.profile) as client:
            return client.request(request, timeout=timeout)

    def search(self, query: str, space: str | None = None, k: int = 5) -> str:
        """Search the user's memory — conversations, kept summaries, documents, decisions and
        commitments — by words and by meaning; the best ``k`` results first, each with its
        text, title, date and speakers."""
        reply = self._request(Search(query=query, space=space, k=max(1, min(k, MAX_K))))
        return _json(reply.results)

    def ask(self, question: str, space: str | None = None) -> CallToolResult:
        """Ask the user's memory a question. ``evidence``: what memory holds for it — structured
        items (a decision's chosen / alternatives / reasoning, a commitment's owner and due) and
        verbatim passages with their source (title, date, speaker, time), each numbered; then
        the ``answer``, which keeps only what the sources it cites as [n] support. ``declined``:
        nothing in memory answers it (the evidence is the closest it holds)."""
        reply = self._request(Ask(question=question, space=space), ASK_TIMEOUT_S)
        held = msgspec.to_builtins({
            "answer": reply.answer, "evidence": reply.evidence, "sources": reply.sources,
            "nothing_found": reply.nothing_found, "declined": reply.declined})
        return CallToolResult(content=[TextContent(type="text", text=_json(held))],
                              structured_content=held)

    def list_sessions(self, space: str | None = None, limit: int = 20) -> str:
        """The recorded conversations, newest first: id, title, activity, start time (unix),
        Space, participants, number of turns."""
        reply = self._request(ListSessions(space=space, limit=max(1, min(limit, 200))))
        return _json(reply.sessions)

    def get_transcript(self, session_id: int) -> str:
        """One session's details and its transcript, turn by turn (speaker, seconds from the
        start, text)."""
        reply = self._request(ShowSession(session_id=session_id))
        # another program gets the turns with any secret said in them masked
        turns = [{"speaker": t.speaker, "start": round(t.start, 1), "text": t.masked or t.text}
                 for t in reply.turns]
        return _json({"session": reply.session, "turns": turns})

    def open_commitments(self, space: str | None = None, owner: str = "",
                         period: str = "") -> str:
        """The commitments and tasks still open in a Space (with profile-wide ones), oldest
        first: who owes what, by when if it was said, and where it was said. ``owner``: only
        this person's ("Sarah" matches "Sarah Chen"); ``period``: only those made then ("this
        month", "last week", "since March")."""
        return self._items(space, OPEN_KINDS, owner, period, open_only=True)

    def decisions(self, space: str | None = None, owner: str = "", period: str = "") -> str:
        """The decisions currently standing in a Space (with profile-wide ones), oldest first:
        what was chosen, the alternatives not taken, and why; superseded ones are left out.
        ``owner`` and ``period`` filter as for open_commitments."""
        return self._items(space, ["decision"], owner, period, open_only=False)

    def _items(self, space: str | None, kinds: list[Any], owner: str, period: str, *,
               open_only: bool) -> str:
        reply = self._request(SelectItems(space=space, kinds=kinds, owner=owner, period=period,
                                          open_only=open_only))
        return _json([_item(i) for i in reply.items])


def _item(i: ItemInfo) -> dict[str, Any]:
    """What a reader needs of an item: its words, its structure, status, where it came from."""
    fields = {"id": i.id, "kind": i.kind, "text": i.text, "status": i.status or None,
              "space": i.space, "occurred_at": i.occurred_at, "session_id": i.session_id,
              "session_title": i.session_title or None, "chosen": i.chosen,
              "alternatives": i.alternatives or None, "reasoning": i.reasoning,
              "owner": i.owner, "due": i.due, "closed_at": i.closed_at}
    return {key: value for key, value in fields.items() if value is not None}


def build_server(profile: str) -> MCPServer[Any]:
    """The MCP server of one profile, its tools registered (read-only)."""
    tools = Tools(profile)
    server: MCPServer[Any] = MCPServer("braincue", instructions=INSTRUCTIONS, log_level="WARNING")
    for fn in (tools.search, tools.ask, tools.list_sessions, tools.get_transcript,
               tools.open_commitments, tools.decisions):
        server.add_tool(_tool_errors(fn), name=fn.__name__, annotations=READ_ONLY,
                        structured_output=False)
    return server


def serve(profile: str) -> None:
    """Serve over stdin/stdout until the client closes the connection."""
    build_server(profile).run("stdio")

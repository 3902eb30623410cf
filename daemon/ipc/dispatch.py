"""From a request frame to a reply frame, without sockets: the handler table and ``dispatch``.

The server reads frames off its socket and hands each payload to :func:`reply_to`; tests call
:func:`dispatch` with a frame and get the frame a client would receive (httpx's MockTransport
idea: everything but the transport is the real thing). Whatever the frame holds, the answer is
a reply or a typed Error: a handler's daemon.errors exception becomes an Error with its code,
any other exception an ``internal`` Error, logged.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec

from daemon.errors import user_error
from daemon.ipc import protocol
from daemon.ipc.protocol import Error, Event, Reply, Request

log = logging.getLogger("braincue.ipc")

MAX_ERROR_MESSAGE = 1000

Q = TypeVar("Q", bound=Request[Any])
Publish = Callable[[Event], None]
_Call = Callable[[Any, Publish], Awaitable[Reply]]


class Handlers:
    """Request type -> the async function that answers it.

    A handler returns the request's reply type (or raises a daemon.errors exception, which
    becomes an Error reply with its code); :func:`reply_to` fills in the reply's id.
    """

    def __init__(self) -> None:
        self._calls: dict[type[Request[Any]], _Call] = {}

    def add(self, request_type: type[Q], handler: Callable[[Q], Awaitable[Reply]]) -> None:
        async def call(request: Q, publish: Publish) -> Reply:
            return await handler(request)

        self._register(request_type, call)

    def add_streaming(
        self, request_type: type[Q], handler: Callable[[Q, Publish], Awaitable[Reply]]
    ) -> None:
        """Register a handler that also publishes events, e.g. AnswerToken for its request."""
        self._register(request_type, handler)

    def _register(self, request_type: type[Request[Any]], call: _Call) -> None:
        if request_type in self._calls:
            raise ValueError(f"a handler for {request_type.__name__} is already registered")
        self._calls[request_type] = call

    def get(self, request_type: type[Request[Any]]) -> _Call | None:
        return self._calls.get(request_type)

    def __contains__(self, request_type: type[Request[Any]]) -> bool:
        return request_type in self._calls


def drop(event: Event) -> None:
    """A ``publish`` for callers that have nobody to send events to."""


async def dispatch(handlers: Handlers, frame: bytes, publish: Publish = drop) -> bytes:
    """The reply frame to the request ``frame``, as the server would send it."""
    return encode_reply(await reply_to(handlers, frame, publish))


async def reply_to(handlers: Handlers, frame: bytes, publish: Publish) -> Reply:
    """The reply to the request ``frame`` (an Error for anything that is not a request that a
    handler answers with its reply type), with the request's id."""
    try:
        request = protocol.decode_request(frame)
    except protocol.ProtocolError as e:
        return e.reply
    call = handlers.get(type(request))
    if call is None:
        return Error(id=request.id, code=protocol.UNAVAILABLE,
                     message=f"this daemon does not serve "
                             f"{protocol.tag_of(type(request))} requests")
    try:
        reply = await call(request, publish)
    except Exception as e:
        if (known := user_error(e)) is not None:
            reply = error(known.code, known.message, known.fix or "")
        else:
            log.exception("%s handler failed", type(request).__name__)
            reply = error(protocol.INTERNAL, f"{type(e).__name__}: {e}")
    else:
        if not isinstance(reply, request.reply_type | Error):
            reply = error(protocol.INTERNAL,
                          f"the {type(request).__name__} handler returned a "
                          f"{type(reply).__name__}")
    return msgspec.structs.replace(reply, id=request.id)


def encode_reply(reply: Reply) -> bytes:
    """``reply`` as a frame; an ``internal`` Error frame when it cannot be encoded."""
    try:
        return protocol.encode(reply)
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError) as e:
        log.exception("could not encode a %s", type(reply).__name__)
        return protocol.encode(
            error(protocol.INTERNAL, f"the reply could not be encoded: {e}", id=reply.id)
        )


def error(code: str, message: str, fix: str = "", *, id: str = "") -> Error:
    if len(message) > MAX_ERROR_MESSAGE:
        message = message[: MAX_ERROR_MESSAGE - 1] + "…"
    return Error(id=id, code=code, message=message, fix=fix)

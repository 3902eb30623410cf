"""``dispatch(handlers, frame) -> frame`` without sockets: what the server sends for each frame,
and real handlers answered on a real store with no transport at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from storekit import open_store

from daemon.errors import NotFound
from daemon.handlers.open_items import register_open_items
from daemon.ipc import protocol
from daemon.ipc.dispatch import Handlers, Publish, dispatch
from daemon.ipc.protocol import (
    CloseItem,
    Error,
    Event,
    HistoryReply,
    ItemsReply,
    OpenItems,
    Ping,
    Pong,
    Status,
    StatusEvent,
)
from daemon.store.records import NewAssertion


async def answer(handlers: Handlers, request: protocol.Request[Any]) -> protocol.Reply:
    return protocol.decode_reply(await dispatch(handlers, protocol.encode(request)))


async def test_a_reply_carries_its_request_id() -> None:
    handlers = Handlers()

    async def ping(request: Ping) -> Pong:
        return Pong()

    handlers.add(Ping, ping)
    assert await answer(handlers, Ping(id="r1")) == Pong(id="r1")


async def test_what_no_handler_answers_gets_a_typed_error() -> None:
    reply = await answer(Handlers(), Status(id="r2"))
    assert isinstance(reply, Error)
    assert (reply.id, reply.code) == ("r2", protocol.UNAVAILABLE)
    garbage = protocol.decode_reply(await dispatch(Handlers(), b"\x93not msgpack"))
    assert isinstance(garbage, Error) and garbage.code == protocol.BAD_REQUEST


async def test_a_handlers_exception_becomes_an_error_with_its_code() -> None:
    handlers = Handlers()

    async def missing(request: Ping) -> Pong:
        raise NotFound("no such thing", fix="look elsewhere")

    async def broken(request: Status) -> Pong:  # the wrong reply type, and then it fails
        raise ZeroDivisionError("oops")

    handlers.add(Ping, missing)
    handlers.add(Status, broken)  # type: ignore[arg-type]
    found = await answer(handlers, Ping(id="a"))
    assert isinstance(found, Error)
    assert (found.id, found.code, found.message, found.fix) == (
        "a", NotFound.code, "no such thing", "look elsewhere")
    failed = await answer(handlers, Status(id="b"))
    assert isinstance(failed, Error) and failed.code == protocol.INTERNAL
    assert "ZeroDivisionError: oops" in failed.message


async def test_a_reply_of_the_wrong_type_is_an_internal_error() -> None:
    handlers = Handlers()

    async def wrong(request: Status) -> Pong:
        return Pong()

    handlers.add(Status, wrong)  # type: ignore[arg-type]
    reply = await answer(handlers, Status(id="c"))
    assert isinstance(reply, Error) and reply.code == protocol.INTERNAL
    assert "returned a Pong" in reply.message


async def test_a_streaming_handler_publishes_through_the_given_function() -> None:
    handlers = Handlers()
    sent: list[Event] = []

    async def ping(request: Ping, publish: Publish) -> Pong:
        publish(StatusEvent(capture="off", message=f"for {request.id}"))
        return Pong()

    handlers.add_streaming(Ping, ping)
    frame = await dispatch(handlers, protocol.encode(Ping(id="s")), sent.append)
    assert protocol.decode_reply(frame) == Pong(id="s")
    assert sent == [StatusEvent(capture="off", message="for s")]


async def test_the_open_items_handlers_answer_on_a_real_store(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    space = store.create_space("Atlas")
    task = store.add_assertion(NewAssertion(kind="task", text="Send the deck to Ben",
                                            source="user", owner="me", space_id=space.id, occurred_at=100.0))
    handlers = Handlers()
    register_open_items(handlers, store)

    listed = await answer(handlers, OpenItems(id="o", space="Atlas"))
    assert isinstance(listed, ItemsReply)
    assert [(i.id, i.text, i.status, i.space) for i in listed.items] == [
        (task.id, "Send the deck to Ben", "open", "Atlas")]

    closed = await answer(handlers, CloseItem(id="c", item_id=task.id, status="done"))
    assert isinstance(closed, HistoryReply)
    assert [c.status for c in closed.closures] == ["done"]
    again = await answer(handlers, OpenItems(id="p", space="Atlas"))
    assert isinstance(again, ItemsReply) and again.items == []

    unknown = await answer(handlers, OpenItems(id="q", space="Nowhere"))
    assert isinstance(unknown, Error) and unknown.code == NotFound.code
    assert "Nowhere" in unknown.message

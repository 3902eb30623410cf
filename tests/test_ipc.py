"""The IPC layer on real sockets: protocol, trio adapter, server, client."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import stat
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
import zmq
from hypothesis import given
from hypothesis import strategies as st

from daemon.config import Paths
from daemon.errors import (
    ConfigError,
    DaemonAlreadyRunning,
    DaemonNotRunning,
    DaemonTimeout,
    InvalidInput,
    IpcError,
    NotFound,
)
from daemon.ipc import protocol
from daemon.ipc.client import Client, error_from_reply
from daemon.ipc.dispatch import Handlers, Publish
from daemon.ipc.protocol import (
    AnswerDone,
    AnswerToken,
    Error,
    Ok,
    Ping,
    Pong,
    Reply,
    Request,
    SessionEnded,
    SessionStarted,
    SettingsGet,
    SettingsSet,
    Status,
    StatusEvent,
    TurnEvent,
)
from daemon.ipc.runtime import RuntimeFiles, endpoint
from daemon.ipc.server import HARD_FRAME_LIMIT, IpcServer, serve_ipc
from daemon.ipc.testing import short_home
from daemon.ipc.trio_zmq import TrioSocket, trio_socket


class EchoReply(Reply):
    text: str


class EchoProbe(Request[EchoReply]):
    text: str


class HangProbe(Request[Pong]):
    pass


class FailProbe(Request[Ok]):
    kind: str


class StreamProbe(Request[Ok]):
    tokens: list[str]


class UnservedProbe(Request[Ok]):
    pass


@pytest.fixture
def paths(short_home: Path) -> Paths:
    return Paths.resolve("default")


@pytest.fixture
def zmq_context() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    yield context
    context.destroy(linger=0)


def connected(
    context: zmq.Context[zmq.Socket[bytes]], bound_type: int, connected_type: int, name: str
) -> tuple[zmq.Socket[bytes], zmq.Socket[bytes]]:
    """Two sockets over the address ``name`` in a short home: the first bound, the second
    connected to it."""
    address = f"ipc://{short_home()}/{name}"
    bound, other = context.socket(bound_type), context.socket(connected_type)
    bound.bind(address)
    other.connect(address)
    return bound, other


@asynccontextmanager
async def trio_pair(
    context: zmq.Context[zmq.Socket[bytes]], bound_type: int, connected_type: int, name: str
) -> AsyncIterator[tuple[TrioSocket, TrioSocket]]:
    """:func:`connected` sockets, each in the trio adapter."""
    bound, other = connected(context, bound_type, connected_type, name)
    async with trio_socket(bound) as first, trio_socket(other) as second:
        yield first, second


def raw_dealer(
    context: zmq.Context[zmq.Socket[bytes]], paths: Paths
) -> AbstractAsyncContextManager[TrioSocket]:
    """A DEALER that sends whatever frames a test wants to the daemon's request socket."""
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint(RuntimeFiles.of(paths).requests))
    return trio_socket(sock)


def encoded(**fields: Any) -> bytes:
    return msgspec.msgpack.encode(fields)


# ---------------------------------------------------------------------------------------------
# protocol


def test_types_are_tagged_with_snake_case_names() -> None:
    assert protocol.tag_of(SettingsGet) == "settings_get"
    assert protocol.tag_of(StatusEvent) == "status_event"
    assert {"ping", "status", "settings_get", "settings_set"} <= set(protocol.REQUESTS.types)
    assert {"turn_event", "session_started", "session_ended", "answer_token", "answer_done",
            "status_event"} <= set(protocol.EVENTS.types)
    assert msgspec.msgpack.decode(protocol.encode(Ping(id="a"))) == {"type": "ping", "v": 1,
                                                                      "id": "a"}


def test_each_request_declares_its_reply() -> None:
    assert Ping.reply_type is Pong
    assert Status.reply_type is protocol.StatusReply
    assert SettingsSet.reply_type is protocol.SettingsReply
    assert EchoProbe.reply_type is EchoReply
    with pytest.raises(TypeError, match="declare the reply"):
        class NoReply(Request):  # type: ignore[type-arg]
            pass


@pytest.mark.parametrize("request_", [
    Ping(id="1"), Status(id="2"), SettingsGet(id="3"), SettingsGet(key="search_k", id="4"),
    SettingsSet(key="search_k", value="7", id="5"), EchoProbe(text="é" * 10, id="6"),
])
def test_requests_round_trip(request_: Request[Any]) -> None:
    assert protocol.decode_request(protocol.encode(request_)) == request_


@pytest.mark.parametrize("event", [
    TurnEvent(session_id=1, turn_id=2, speaker="me", source="mic", start=0.5, end=1.5, text="hi"),
    SessionStarted(session_id=1, started_at=1.7e9, space="work"),
    SessionEnded(session_id=1, duration_s=61.0, gist="planning the release", space=None),
    AnswerToken(request_id="r1", token="Hel"),
    AnswerDone(request_id="r1"),
    protocol.ImportProgress(request_id="r2", done_s=12.5, total_s=60.0, turns=3),
    protocol.StageProgress(request_id="r3", stage="extraction", done=1, total=4),
    StatusEvent(capture="live", message="listening"),
])
def test_events_round_trip_with_topics(event: protocol.Event) -> None:
    assert protocol.decode_event(protocol.encode(event)) == event
    assert event.topic().endswith("/")


def test_answer_events_are_published_on_their_request_topic() -> None:
    assert AnswerToken(request_id="r1", token="x").topic() == protocol.answer_topic("r1")
    assert AnswerDone(request_id="r1").topic() == "answer/r1/"
    assert not protocol.answer_topic("r12").startswith(protocol.answer_topic("r1"))


def test_a_history_reply_with_restatements_reads_both_ways_across_versions() -> None:
    """An older daemon's reply has no ``restatements``; an older client ignores them."""
    info = protocol.AssertionInfo(
        id=1, kind="decision", text="Ship on Friday", about_person=False,
        review_status="approved", source="extracted", space_id=1, space="Atlas",
        occurred_at=1.7e9, recorded_at=1.7e9)
    old_frame = msgspec.msgpack.encode({"type": "history_reply", "id": "r1",
                                        "chain": [msgspec.to_builtins(info)]})
    old = protocol.decode_reply(old_frame)
    assert isinstance(old, protocol.HistoryReply) and old.restatements == []

    class OldHistoryReply(msgspec.Struct, tag_field="type", tag="history_reply"):
        chain: list[protocol.AssertionInfo]
        id: str = ""

    again = protocol.RestatementInfo(assertion_id=1, session_id=7, session_title="Check-in",
                                     occurred_at=1.7e9 + 86400, anchor_chunk_id=40)
    new = protocol.HistoryReply(id="r2", chain=[info], restatements=[again])
    assert protocol.decode_reply(protocol.encode(new)) == new
    assert msgspec.msgpack.decode(protocol.encode(new), type=OldHistoryReply).chain == [info]


DEEP = b"\x81\xa2id" + b"\x91" * 100_000 + b"\x01"

BAD_FRAMES = [
    # frame, code, id echoed back
    (protocol.encode(Ping(id="a"))[:-1], protocol.BAD_REQUEST, ""),
    (b"", protocol.BAD_REQUEST, ""),
    (b"\xc1", protocol.BAD_REQUEST, ""),
    (msgspec.msgpack.encode([1, 2]), protocol.BAD_REQUEST, ""),
    (encoded(type="ping", v=1, id=5), protocol.BAD_REQUEST, ""),
    (encoded(type="ping", v=1, id="i" * 129), protocol.BAD_REQUEST, ""),
    (DEEP, protocol.BAD_REQUEST, ""),
    (encoded(type="ping", v=2, id="a"), protocol.VERSION, "a"),
    (encoded(type="ping", id="a"), protocol.VERSION, "a"),
    (encoded(type="ping", v=True, id="a"), protocol.VERSION, "a"),
    (encoded(type="nope", v=1, id="a"), protocol.UNKNOWN_TYPE, "a"),
    (encoded(type=3, v=1, id="a"), protocol.UNKNOWN_TYPE, "a"),
    (encoded(type="pong", v=1, id="a"), protocol.UNKNOWN_TYPE, "a"),
    (encoded(type="settings_set", v=1, id="a", key=1, value="x"), protocol.BAD_REQUEST, "a"),
    (encoded(type="settings_set", v=1, id="a", key="k"), protocol.BAD_REQUEST, "a"),
    (encoded(type="ping", v=1, id="a", extra=1), protocol.BAD_REQUEST, "a"),
    (b"\x00" * (protocol.MAX_FRAME_BYTES + 1), protocol.TOO_LARGE, ""),
]


@pytest.mark.parametrize(("frame", "code", "request_id"), BAD_FRAMES)
def test_bad_frames_raise_the_error_to_reply(frame: bytes, code: str, request_id: str) -> None:
    with pytest.raises(protocol.ProtocolError) as caught:
        protocol.decode_request(frame)
    assert (caught.value.reply.code, caught.value.reply.id) == (code, request_id)
    assert 0 < len(caught.value.reply.message) < 400


def test_wrong_field_type_is_named() -> None:
    frame = encoded(type="settings_set", v=1, id="a", key=1, value="x")
    with pytest.raises(protocol.ProtocolError, match=r"\$\.key"):
        protocol.decode_request(frame)


@given(st.binary(max_size=300))
def test_any_bytes_decode_to_a_request_or_a_protocol_error(frame: bytes) -> None:
    try:
        assert isinstance(protocol.decode_request(frame), Request)
    except protocol.ProtocolError as e:
        assert isinstance(e.reply, Error)


@given(st.data())
def test_damaged_requests_decode_or_fail_cleanly(data: st.DataObject) -> None:
    frame = bytearray(protocol.encode(SettingsSet(key="search_k", value="7", id="abc")))
    for _ in range(data.draw(st.integers(1, 4))):
        frame[data.draw(st.integers(0, len(frame) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(frame)))
    with contextlib.suppress(protocol.ProtocolError):
        protocol.decode_request(bytes(frame[:cut]))


def test_error_replies_map_back_to_daemon_errors() -> None:
    assert type(error_from_reply(Error(code="not_found", message="m"))) is NotFound
    assert type(error_from_reply(Error(code="invalid", message="m"))) is InvalidInput
    config = error_from_reply(Error(code="config", message="bad", fix="do this"))
    assert type(config) is ConfigError and str(config) == "bad — do this"
    internal = error_from_reply(Error(code="internal", message="boom"))
    assert type(internal) is IpcError and internal.code == "internal"
    assert error_from_reply(Error(code="from_the_future", message="m")).code == "from_the_future"


# ---------------------------------------------------------------------------------------------
# trio adapter


async def test_a_burst_of_1000_messages_is_all_received(
    zmq_context: zmq.Context[zmq.Socket[bytes]]
) -> None:
    received: list[bytes] = []
    async with trio_pair(zmq_context, zmq.PULL, zmq.PUSH, "burst") as (receiver, sender):

        async def receive(count: int) -> None:
            for _ in range(count):
                received.extend(await receiver.recv_multipart())

        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                # two receivers parked on the same socket before anything is sent
                nursery.start_soon(receive, 500)
                nursery.start_soon(receive, 500)
                await trio.testing.wait_all_tasks_blocked()
                for i in range(1000):
                    await sender.send_multipart([b"%d" % i])
    assert sorted(received) == sorted(b"%d" % i for i in range(1000))


async def test_one_socket_sends_and_receives_at_once(
    zmq_context: zmq.Context[zmq.Socket[bytes]]
) -> None:
    echoed: list[bytes] = []
    async with trio_pair(zmq_context, zmq.ROUTER, zmq.DEALER, "echo") as (server, client):

        async def echo() -> None:
            while True:
                await server.send_multipart(await server.recv_multipart())

        async def send_all() -> None:
            for i in range(1000):
                await client.send_multipart([b"%d" % i])

        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(echo)
                nursery.start_soon(send_all)
                for _ in range(1000):
                    echoed.extend(await client.recv_multipart())
                nursery.cancel_scope.cancel()
    assert echoed == [b"%d" % i for i in range(1000)]


async def test_a_cancelled_receive_loses_no_message(
    zmq_context: zmq.Context[zmq.Socket[bytes]]
) -> None:
    pull, push = connected(zmq_context, zmq.PULL, zmq.PUSH, "cancel")
    async with trio_socket(pull) as receiver, trio_socket(push) as sender:
        async with trio.open_nursery() as nursery:
            scope = trio.CancelScope()

            async def receive_until_cancelled() -> None:
                with scope:
                    await receiver.recv_multipart()
                    raise AssertionError("nothing was sent yet")

            nursery.start_soon(receive_until_cancelled)
            await trio.testing.wait_all_tasks_blocked()
            scope.cancel()
        await sender.send_multipart([b"kept"])
        with trio.fail_after(10):
            assert await receiver.recv_multipart() == [b"kept"]
    assert pull.closed and push.closed


# ---------------------------------------------------------------------------------------------
# server


class Probes:
    """Handlers for the probe requests, with hooks for the tests."""

    def __init__(self) -> None:
        self.release = trio.Event()
        self.entered = 0
        self.entered_changed = trio.Event()

    def handlers(self) -> Handlers:
        handlers = Handlers()
        handlers.add(Ping, self.ping)
        handlers.add(EchoProbe, self.echo)
        handlers.add(HangProbe, self.hang)
        handlers.add(FailProbe, self.fail)
        handlers.add_streaming(StreamProbe, self.stream)
        return handlers

    async def ping(self, request: Ping) -> Pong:
        return Pong()

    async def echo(self, request: EchoProbe) -> EchoReply:
        if request.text == "release":
            self.release.set()
        return EchoReply(text=request.text)

    async def hang(self, request: HangProbe) -> Pong:
        self.entered += 1
        self.entered_changed.set()
        self.entered_changed = trio.Event()
        await self.release.wait()
        return Pong()

    async def wait_entered(self, count: int) -> None:
        while self.entered < count:
            await self.entered_changed.wait()

    async def fail(self, request: FailProbe) -> Reply:
        if request.kind == "not_found":
            raise NotFound("no session 42", fix="list them with `braincue sessions`")
        if request.kind == "wrong_reply":
            return Pong()
        if request.kind == "in_nursery":
            async with trio.open_nursery():
                raise InvalidInput("the query is empty")
        raise RuntimeError("boom")

    async def stream(self, request: StreamProbe, publish: Publish) -> Ok:
        for token in request.tokens:
            publish(AnswerToken(request_id=request.id, token=token))
        publish(AnswerDone(request_id=request.id))
        return Ok()


@asynccontextmanager
async def running(paths: Paths, handlers: Handlers, **options: Any) -> AsyncIterator[IpcServer]:
    async with trio.open_nursery() as nursery:
        server: IpcServer = await nursery.start(partial(serve_ipc, paths, handlers, **options))
        yield server
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def dealing(
    paths: Paths, zmq_context: zmq.Context[zmq.Socket[bytes]], handlers: Handlers | None = None,
    **options: Any,
) -> AsyncIterator[tuple[IpcServer, TrioSocket]]:
    """A server of ``handlers`` (default: the probes') and a :func:`raw_dealer` talking to it."""
    async with (
        running(paths, handlers or Probes().handlers(), **options) as server,
        raw_dealer(zmq_context, paths) as dealer,
    ):
        yield server, dealer


async def in_thread(fn: Any, *args: Any) -> Any:
    return await trio.to_thread.run_sync(fn, *args)


async def test_requests_are_answered_with_their_id(paths: Paths) -> None:
    async with running(paths, Probes().handlers()) as server:
        client = Client(paths, timeout=10)
        reply = await in_thread(client.request, EchoProbe(text="hello", id="my-id"))
        assert reply == EchoReply(text="hello", id="my-id")
        assert type(await in_thread(client.request, Ping())) is Pong
        client.close()
    assert server.stats.replied == 2


async def test_runtime_files_are_private_and_removed_on_stop(paths: Paths) -> None:
    files = RuntimeFiles.of(paths)
    async with running(paths, Handlers()):
        assert stat.S_IMODE(files.directory.stat().st_mode) == 0o700
        for sock in (files.requests, files.events):
            assert stat.S_ISSOCK(sock.stat().st_mode)
            assert stat.S_IMODE(sock.stat().st_mode) == 0o600
        assert stat.S_IMODE(files.lock.stat().st_mode) == 0o600
        assert files.lock.read_text().strip() == str(os.getpid())
    assert not files.requests.exists()
    assert not files.events.exists()
    assert not files.lock.exists()


async def test_a_socket_path_over_the_os_limit_is_a_clear_error(tmp_path: Path) -> None:
    long = Paths(profile="default", config_dir=tmp_path, data_root=tmp_path,
                 runtime_root=tmp_path / ("r" * 120), cache_dir=tmp_path, models_dir=tmp_path)
    with pytest.raises(ConfigError, match="107 bytes"):
        await serve_ipc(long, Handlers())
    with pytest.raises(ConfigError, match="shorter directory"):
        Client(long)


async def test_a_second_server_for_the_profile_is_refused(paths: Paths) -> None:
    async with running(paths, Probes().handlers()):
        with pytest.raises(DaemonAlreadyRunning, match=f"pid {os.getpid()}.*'default'"):
            await serve_ipc(paths, Handlers())
        # the refused server touched nothing of the running one
        assert type(await in_thread(Client(paths).request, Ping())) is Pong


async def test_a_stale_lock_and_socket_are_taken_over(paths: Paths) -> None:
    files = RuntimeFiles.of(paths)
    files.directory.mkdir(parents=True, mode=0o700)
    files.lock.write_text("999999\n")
    with socket.socket(socket.AF_UNIX) as dead:
        dead.bind(str(files.requests))  # a socket file nobody listens on
    with pytest.raises(DaemonNotRunning):
        Client(paths).request(Ping())
    async with running(paths, Probes().handlers()):
        assert files.lock.read_text().strip() == str(os.getpid())
        assert type(await in_thread(Client(paths).request, Ping())) is Pong


async def test_handler_failures_become_error_replies(paths: Paths) -> None:
    async with running(paths, Probes().handlers()) as server:
        client = Client(paths, timeout=10)
        with pytest.raises(NotFound, match="no session 42 — list them"):
            await in_thread(client.request, FailProbe(kind="not_found"))
        with pytest.raises(IpcError, match="RuntimeError: boom") as internal:
            await in_thread(client.request, FailProbe(kind="crash"))
        assert internal.value.code == protocol.INTERNAL
        with pytest.raises(IpcError, match="returned a Pong"):
            await in_thread(client.request, FailProbe(kind="wrong_reply"))
        with pytest.raises(InvalidInput, match=r"^the query is empty$"):
            await in_thread(client.request, FailProbe(kind="in_nursery"))
        with pytest.raises(IpcError, match="does not serve unserved_probe") as unserved:
            await in_thread(client.request, UnservedProbe())
        assert unserved.value.code == protocol.UNAVAILABLE
        assert type(await in_thread(client.request, Ping())) is Pong
    assert server.stats.errors == 5


async def test_requests_are_handled_concurrently(paths: Paths) -> None:
    probes = Probes()
    async with running(paths, probes.handlers()), trio.open_nursery() as nursery:
        hung = Client(paths, timeout=30)
        nursery.start_soon(in_thread, hung.request, HangProbe())
        await probes.wait_entered(1)
        # answered while the first request is still running; it releases the first one
        reply = await in_thread(Client(paths, timeout=30).request, EchoProbe(text="release"))
        assert reply.text == "release"


async def test_at_most_max_concurrent_requests_are_taken_in(
    paths: Paths, zmq_context: zmq.Context[zmq.Socket[bytes]]
) -> None:
    probes = Probes()
    async with dealing(paths, zmq_context, probes.handlers(),
                       max_concurrent=2) as (server, dealer):
        for request in (HangProbe(id="h1"), HangProbe(id="h2"), Ping(id="p")):
            await dealer.send_multipart([b"", protocol.encode(request)])
        await probes.wait_entered(2)
        with trio.move_on_after(0.5):
            await dealer.recv_multipart()
            raise AssertionError("a third request was taken in while two were running")
        assert server.stats.received == 2
        probes.release.set()
        with trio.fail_after(10):
            ids = {protocol.decode_reply((await dealer.recv_multipart())[1]).id
                   for _ in range(3)}
        assert ids == {"h1", "h2", "p"}


async def test_messages_without_an_envelope_are_dropped(
    paths: Paths, zmq_context: zmq.Context[zmq.Socket[bytes]]
) -> None:
    async with dealing(paths, zmq_context) as (server, dealer):
        await dealer.send_multipart([protocol.encode(Ping(id="no-delimiter"))])
        await dealer.send_multipart([b"x", b"", protocol.encode(Ping(id="bad-delimiter"))])
        await dealer.send_multipart([b"", protocol.encode(Ping(id="after"))])
        with trio.fail_after(10):
            frames = await dealer.recv_multipart()
        assert protocol.decode_reply(frames[1]).id == "after"
        await trio.testing.wait_all_tasks_blocked()
        assert server.stats.dropped == 2


@pytest.mark.parametrize(("frames", "code"), [
    ([b""], protocol.BAD_REQUEST),
    ([b"", b""], protocol.BAD_REQUEST),
    ([b"", protocol.encode(Ping()), b"extra"], protocol.BAD_REQUEST),
    ([b"", b"\x91" * 10_000], protocol.BAD_REQUEST),
    ([b"", b"\x00" * (protocol.MAX_FRAME_BYTES + 1)], protocol.TOO_LARGE),
])
async def test_malformed_requests_get_an_error_reply(
    paths: Paths, zmq_context: zmq.Context[zmq.Socket[bytes]], frames: list[bytes], code: str
) -> None:
    async with dealing(paths, zmq_context) as (_, dealer):
        await dealer.send_multipart(frames)
        with trio.fail_after(10):
            _, payload = await dealer.recv_multipart()
        reply = protocol.decode_reply(payload)
        assert isinstance(reply, Error) and reply.code == code
        await dealer.send_multipart([b"", protocol.encode(Ping(id="next"))])
        with trio.fail_after(10):
            assert protocol.decode_reply((await dealer.recv_multipart())[1]).id == "next"


async def test_a_frame_over_the_hard_limit_disconnects_only_its_sender(
    paths: Paths, zmq_context: zmq.Context[zmq.Socket[bytes]]
) -> None:
    async with dealing(paths, zmq_context) as (server, dealer):
        await dealer.send_multipart([b"", b"\x00" * (HARD_FRAME_LIMIT + 1)])
        client = Client(paths, timeout=10)
        for _ in range(3):
            assert type(await in_thread(client.request, Ping())) is Pong
        # the sender reconnects by itself
        await dealer.send_multipart([b"", protocol.encode(Ping(id="again"))])
        with trio.fail_after(10):
            assert protocol.decode_reply((await dealer.recv_multipart())[1]).id == "again"
    assert server.stats.received == 4


async def test_subscribers_get_the_events_of_their_topics_in_order(paths: Paths) -> None:
    turns = [TurnEvent(session_id=1, turn_id=i, speaker="me", source="mic", start=i, end=i + 1,
                       text=f"turn {i}") for i in range(3)]
    async with running(paths, Handlers()) as server:
        client = Client(paths, timeout=10)
        subscription = await in_thread(client.subscribe, [protocol.TOPIC_TURNS])
        with subscription:
            server.publish(turns[0])
            server.publish(StatusEvent(capture="live"))
            server.publish(turns[1])
            server.publish(turns[2])
            received = [await in_thread(subscription.receive, 10.0) for _ in turns]
        assert received == turns
    assert server.stats.events == 5  # four, and the confirmation of the subscription


async def test_a_streaming_handler_publishes_tokens_for_its_request(paths: Paths) -> None:
    async with running(paths, Probes().handlers()):
        client = Client(paths, timeout=10)
        request = StreamProbe(tokens=["Hel", "lo", "!"], id="ask-1")
        with await in_thread(client.subscribe, [protocol.answer_topic("ask-1")]) as answer:
            assert type(await in_thread(client.request, request)) is Ok
            events = [await in_thread(answer.receive, 10.0) for _ in range(4)]
    assert [e.token for e in events if isinstance(e, AnswerToken)] == ["Hel", "lo", "!"]
    assert events[-1] == AnswerDone(request_id="ask-1")


async def test_following_events_notices_when_the_daemon_stops(paths: Paths) -> None:
    client = Client(paths, timeout=10)
    async with running(paths, Handlers()):
        subscription = await in_thread(client.subscribe, [""])
    with subscription, pytest.raises(DaemonNotRunning):
        await in_thread(next, iter(subscription))


# ---------------------------------------------------------------------------------------------
# client


def test_no_daemon_is_a_clear_error(paths: Paths) -> None:
    with pytest.raises(DaemonNotRunning) as caught:
        Client(paths).request(Ping())
    assert str(caught.value) == (
        "the BrainCue daemon is not running for profile 'default' — start it with `braincued` "
        "(or `braincue service install`)"
    )
    with pytest.raises(DaemonNotRunning, match="braincued --profile work"):
        Client(Paths.resolve("work")).subscribe()


def test_the_client_refuses_requests_the_daemon_would_refuse(paths: Paths) -> None:
    client = Client(paths)
    with pytest.raises(InvalidInput, match=r"echo_probe request is .* over the limit"):
        client.request(EchoProbe(text="x" * protocol.MAX_FRAME_BYTES))
    with pytest.raises(InvalidInput, match="at most 128 characters"):
        client.request(Ping(id="i" * 129))


async def test_after_a_timeout_the_next_request_gets_its_own_reply(paths: Paths) -> None:
    probes = Probes()
    async with running(paths, probes.handlers()):
        client = Client(paths, timeout=0.5)
        with pytest.raises(DaemonTimeout, match=r"did not answer within 0\.5 s"):
            await in_thread(client.request, HangProbe())
        probes.release.set()  # the hung request is answered now, too late
        reply = await in_thread(partial(client.request, EchoProbe(text="mine"), timeout=10))
        assert reply.text == "mine"


async def test_replies_to_other_requests_are_ignored(
    paths: Paths, zmq_context: zmq.Context[zmq.Socket[bytes]]
) -> None:
    files = RuntimeFiles.of(paths)
    files.directory.mkdir(parents=True)
    router = zmq_context.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    router.bind(endpoint(files.requests))
    async with trio_socket(router) as fake_daemon, trio.open_nursery() as nursery:

        async def answer_twice() -> None:
            identity, _, payload = await fake_daemon.recv_multipart()
            request = protocol.decode_request(payload)
            for reply in (EchoReply(text="stale", id="earlier"), EchoReply(text="yes", id=request.id)):
                await fake_daemon.send_multipart([identity, b"", protocol.encode(reply)])

        nursery.start_soon(answer_twice)
        reply = await in_thread(Client(paths, timeout=10).request, EchoProbe(text="q"))
        assert reply.text == "yes"


async def test_an_operation_that_consumes_the_signal_still_wakes_receivers(
    zmq_context: zmq.Context[zmq.Socket[bytes]]
) -> None:
    router, dealer = connected(zmq_context, zmq.ROUTER, zmq.DEALER, "edge")
    async with trio_socket(router) as server, trio_socket(dealer) as client:
        await client.send_multipart([b"hello"])
        identity, _ = await server.recv_multipart()
        # libzmq skips processing its signals in a send made soon after the last processing,
        # so the race below happens in some rounds only: enough rounds make it certain.
        for attempt in range(20):
            received = trio.Event()

            async def receive(expected: list[bytes], received: trio.Event) -> None:
                assert await client.recv_multipart() == expected
                received.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(receive, [b"reply %d" % attempt], received)
                await trio.testing.wait_all_tasks_blocked()
                # Without yielding to trio: the reply reaches the dealer and signals its fd,
                # then a send on the dealer consumes the signal before the watcher sees it.
                router.send_multipart([identity, b"reply %d" % attempt])
                select.select([dealer.fileno()], [], [], 10)
                assert client.send_nowait([b"another"])
                with trio.fail_after(5):
                    await received.wait()

"""The synchronous client library every BrainCue client uses (shell, tray, hotkey, MCP).

    with Client("default") as client:
        status = client.request(Status())          # -> StatusReply, typed
        with client.subscribe([TOPIC_TURNS]) as events:
            for event in events: ...

A Client is for one thread. Error replies raise the daemon.errors class of their code (NotFound,
InvalidInput, ConfigError, ...) or IpcError for protocol-level codes. When no daemon serves the
profile, DaemonNotRunning says how to start one; when it does not answer in time, DaemonTimeout.
After a timeout the next request uses a fresh socket, and replies are matched by request id, so a
late reply is never taken for another request's.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any, TypeVar, cast

import msgspec
import zmq

from daemon.config import DEFAULT_PROFILE, Paths
from daemon.errors import (
    BrainCueError,
    DaemonNotRunning,
    DaemonTimeout,
    InvalidInput,
    IpcError,
)
from daemon.ipc import protocol
from daemon.ipc.protocol import Error, Event, Reply, Request, Subscribed
from daemon.ipc.runtime import RuntimeFiles, endpoint

R = TypeVar("R", bound=Reply)

DEFAULT_TIMEOUT = 5.0
# A keep runs the language model over the whole transcript, piece by piece: its Remember
# request waits this long for the reply.
KEEP_TIMEOUT_S = 3 * 3600.0
# How often a subscription with no events checks that the daemon is still there.
LIVENESS_INTERVAL = 1.0


class Client:
    def __init__(self, target: str | Paths = DEFAULT_PROFILE, *,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        paths = Paths.resolve(target) if isinstance(target, str) else target
        self.files = RuntimeFiles.of(paths)
        self.files.check_socket_paths()
        self.timeout = timeout
        self._context: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        self._socket: zmq.Socket[bytes] | None = None

    def request(self, message: Request[R], *, timeout: float | None = None) -> R:
        """Send ``message`` and return its reply; raises the error an Error reply names."""
        wait = self.timeout if timeout is None else timeout
        if not message.id:
            message = msgspec.structs.replace(message, id=uuid.uuid4().hex)
        elif len(message.id) > protocol.MAX_ID_LENGTH:
            raise InvalidInput(f"a request id is at most {protocol.MAX_ID_LENGTH} characters")
        payload = protocol.encode(message)
        if len(payload) > protocol.MAX_FRAME_BYTES:
            raise InvalidInput(f"the {protocol.tag_of(type(message))} request is "
                               f"{len(payload)} bytes, over the limit of "
                               f"{protocol.MAX_FRAME_BYTES} bytes")
        sock = self._connected_socket()
        deadline = time.monotonic() + wait
        try:
            sock.send_multipart([b"", payload], zmq.NOBLOCK)
        except zmq.Again:
            self._discard_socket()
            raise self._no_answer(wait) from None
        while True:
            remaining_ms = max(0, round((deadline - time.monotonic()) * 1000))
            if not sock.poll(remaining_ms):
                self._discard_socket()
                raise self._no_answer(wait)
            frames = sock.recv_multipart()
            if len(frames) != 2 or frames[0] != b"":
                continue
            try:
                reply = protocol.decode_reply(frames[1])
            except (msgspec.DecodeError, msgspec.ValidationError) as e:
                raise IpcError(f"the daemon sent an unreadable reply: {e}",
                               fix="use a client from the same BrainCue version") from None
            if isinstance(reply, Error) and reply.id in (message.id, ""):
                raise error_from_reply(reply)  # no id: the daemon could not read it from ours
            if reply.id != message.id:
                continue  # the late reply to a request given up on earlier
            if not isinstance(reply, message.reply_type):
                raise IpcError(f"the daemon answered {type(reply).__name__} to "
                               f"{type(message).__name__}")
            return cast(R, reply)

    def subscribe(self, topics: Iterable[str] = ("",), *,
                  timeout: float | None = None) -> Subscription:
        """Receive the events of ``topics`` (prefixes; "" is every event).

        Returns once the daemon has confirmed the subscription, so an event published after
        this returns (e.g. the tokens of an Ask sent next) is not missed.
        """
        self.probe()
        return Subscription(self, list(topics), self.timeout if timeout is None else timeout)

    def probe(self) -> None:
        """Raise DaemonNotRunning (or IpcError) unless something listens on the socket."""
        path = self.files.requests
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
            try:
                raw.connect(str(path))
            except (FileNotFoundError, ConnectionRefusedError):
                raise self.not_running() from None
            except PermissionError:
                raise IpcError(f"permission denied on the daemon's socket {path}",
                               fix="run the client as the user who runs the daemon") from None
            except OSError as e:
                raise IpcError(f"cannot reach the daemon at {path}: {e.strerror}") from None

    def not_running(self) -> DaemonNotRunning:
        profile = self.files.profile
        start = "braincued" if profile == DEFAULT_PROFILE else f"braincued --profile {profile}"
        return DaemonNotRunning(
            f"the BrainCue daemon is not running for profile {profile!r}",
            fix=f"start it with `{start}` (or `braincue service install`)",
        )

    def close(self) -> None:
        self._discard_socket()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _connected_socket(self) -> zmq.Socket[bytes]:
        if self._socket is None:
            self.probe()
            sock = self._context.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(endpoint(self.files.requests))
            self._socket = sock
        return self._socket

    def _discard_socket(self) -> None:
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None

    def _no_answer(self, waited: float) -> IpcError:
        self.probe()
        return DaemonTimeout(
            f"the BrainCue daemon for profile {self.files.profile!r} did not answer within "
            f"{waited:g} s",
            fix="it may be busy; try again, or look at its log",
        )


class Subscription:
    """Events from the daemon; iterate (blocks) or :meth:`receive` with a timeout."""

    def __init__(self, client: Client, topics: list[str], timeout: float) -> None:
        self._client = client
        self._socket: zmq.Socket[bytes] = client._context.socket(zmq.SUB)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.connect(endpoint(client.files.events))
        self._early: list[list[bytes]] = []  # events that came before the confirmation
        for topic in topics:
            self._socket.setsockopt(zmq.SUBSCRIBE, topic.encode())
        try:
            self._await_confirmation(timeout)
        except BaseException:
            self.close()
            raise

    def _await_confirmation(self, timeout: float) -> None:
        nonce = uuid.uuid4().hex
        sync = protocol.sync_topic(nonce).encode()
        self._socket.setsockopt(zmq.SUBSCRIBE, sync)
        deadline = time.monotonic() + timeout
        while True:
            remaining_ms = max(0, round((deadline - time.monotonic()) * 1000))
            if not self._socket.poll(remaining_ms):
                raise self._client._no_answer(timeout)
            frames = self._socket.recv_multipart()
            if frames[0] == sync:
                break
            self._early.append(frames)
        self._socket.setsockopt(zmq.UNSUBSCRIBE, sync)

    def receive(self, timeout: float | None = None) -> Event | None:
        """The next event, or None when none came within ``timeout`` seconds (None: wait)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._early:
                frames = self._early.pop(0)
            else:
                remaining_ms = (None if deadline is None
                                else max(0, round((deadline - time.monotonic()) * 1000)))
                if not self._socket.poll(remaining_ms):
                    return None
                frames = self._socket.recv_multipart()
            if len(frames) != 2:
                continue
            try:
                event = protocol.decode_event(frames[1])
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue  # an event type from a newer daemon
            if not isinstance(event, Subscribed):  # another client's confirmation
                return event

    def __iter__(self) -> Iterator[Event]:
        while True:
            event = self.receive(LIVENESS_INTERVAL)
            if event is not None:
                yield event
            else:
                self._client.probe()

    def close(self) -> None:
        self._socket.close(linger=0)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _codes() -> dict[str, type[BrainCueError]]:
    found: dict[str, type[BrainCueError]] = {}
    pending: list[type[BrainCueError]] = [BrainCueError]
    while pending:
        cls = pending.pop()
        found.setdefault(cls.code, cls)
        pending.extend(cls.__subclasses__())
    return found


def error_from_reply(reply: Error) -> BrainCueError:
    """The exception an Error reply stands for: its daemon.errors class, else IpcError."""
    fix = reply.fix or None
    cls: Any = _codes().get(reply.code)
    if cls is None or issubclass(cls, IpcError) or cls is BrainCueError:
        return IpcError(reply.message, fix=fix, code=reply.code)
    error: BrainCueError = cls(reply.message, fix=fix)
    return error

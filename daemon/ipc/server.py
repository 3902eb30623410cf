"""The daemon's end of the protocol: a ROUTER socket for requests, an XPUB socket for events.

Requests are answered concurrently, each in its own task, at most ``max_concurrent`` at a time
(the receive loop waits for a free slot, so a flood backs up in ZeroMQ's bounded queues instead
of in memory). Whatever arrives, the server answers with a reply or an Error, or drops and logs
a message that has no envelope to answer to; it never dies on input. What a payload is answered
with is :func:`daemon.ipc.dispatch.reply_to`'s business; handlers may be registered at any time.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import trio
import zmq

from daemon.config import Paths
from daemon.ipc import protocol
from daemon.ipc.dispatch import Handlers, encode_reply, reply_to
from daemon.ipc.protocol import Error, Event, Reply
from daemon.ipc.runtime import RuntimeFiles, endpoint, profile_lock
from daemon.ipc.trio_zmq import TrioSocket, trio_socket

log = logging.getLogger("braincue.ipc")

MAX_CONCURRENT_REQUESTS = 64
# Frames above MAX_FRAME_BYTES get a `too_large` reply; ZeroMQ disconnects a peer that sends a
# frame above this hard limit before it is ever buffered whole.
HARD_FRAME_LIMIT = 4 * protocol.MAX_FRAME_BYTES
EVENTS_LINGER_MS = 250


@dataclass
class IpcStats:
    received: int = 0  # messages read from the request socket
    replied: int = 0  # replies sent (errors included)
    errors: int = 0  # of which Error replies
    dropped: int = 0  # messages with nobody to answer
    events: int = 0  # events published

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


class IpcServer:
    """A running server, as handed to ``task_status.started``."""

    def __init__(self, files: RuntimeFiles, handlers: Handlers, events: TrioSocket) -> None:
        self.files = files
        self.handlers = handlers
        self.stats = IpcStats()
        self._events = events
        self._closed = False
        self._left: dict[str, trio.Event] = {}  # topic -> set when its last subscriber leaves

    def publish(self, event: Event) -> None:
        """Send an event to every subscriber of its topic (call from the trio thread)."""
        if self._closed:
            return
        frames = [event.topic().encode(), protocol.encode(event)]
        if self._events.send_nowait(frames):
            self.stats.events += 1
        else:
            log.warning("event %s dropped: the event socket is full", protocol.tag_of(type(event)))

    @contextlib.contextmanager
    def watch_subscribers(self, topic: str) -> Iterator[trio.Event]:
        """An event set when the last subscriber of ``topic`` unsubscribes or disconnects,
        for as long as the context lasts (e.g. to stop an answer nobody reads any more)."""
        left = self._left.setdefault(topic, trio.Event())
        try:
            yield left
        finally:
            if self._left.get(topic) is left:
                del self._left[topic]

    async def _serve_requests(
        self, requests: TrioSocket, nursery: trio.Nursery, max_concurrent: int
    ) -> None:
        slots = trio.CapacityLimiter(max_concurrent)
        while True:
            slot = object()
            await slots.acquire_on_behalf_of(slot)
            frames = await requests.recv_multipart()
            self.stats.received += 1
            nursery.start_soon(self._answer, requests, frames, slots, slot)

    async def _answer(
        self, requests: TrioSocket, frames: list[bytes], slots: trio.CapacityLimiter, slot: object
    ) -> None:
        try:
            # [identity, b"", payload]: anything without the delimiter cannot be answered.
            if len(frames) < 2 or frames[1] != b"":
                self.stats.dropped += 1
                log.debug("dropped a message of %d frames without an envelope", len(frames))
                return
            reply = await self._reply_to(frames[2:])
            await requests.send_multipart([frames[0], b"", encode_reply(reply)])
            self.stats.replied += 1
            if isinstance(reply, Error):
                self.stats.errors += 1
        except zmq.ZMQError as e:
            log.warning("could not send a reply: %s", e)
        finally:
            slots.release_on_behalf_of(slot)

    async def _reply_to(self, body: list[bytes]) -> Reply:
        if len(body) != 1:
            return Error(code=protocol.BAD_REQUEST,
                         message=f"expected one payload frame after the delimiter, got {len(body)}")
        return await reply_to(self.handlers, body[0], self.publish)

    async def _confirm_subscriptions(self) -> None:
        """Answer each subscription to a sync topic with a Subscribed event on it.

        XPUB hands up a subscription after applying it and every earlier one from the same
        client, so a client that sees its Subscribed event knows its subscriptions are live.
        """
        sync = b"\x01" + protocol.TOPIC_SYNC.encode()
        while True:
            frames = await self._events.recv_multipart()
            first = frames[0] if frames else b""
            if len(frames) == 1 and first.startswith(sync) and first.endswith(b"/"):
                nonce = first[len(sync):-1].decode("utf-8", "replace")
                self.publish(protocol.Subscribed(nonce=nonce))
            elif len(frames) == 1 and first.startswith(b"\x00"):
                # XPUB hands up an unsubscription when a topic's last subscriber leaves
                left = self._left.get(first[1:].decode("utf-8", "replace"))
                if left is not None:
                    left.set()


async def serve_ipc(
    paths: Paths,
    handlers: Handlers,
    *,
    locked: RuntimeFiles | None = None,
    max_concurrent: int = MAX_CONCURRENT_REQUESTS,
    task_status: trio.TaskStatus[IpcServer] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Take the profile's daemon lock, bind the sockets, serve until cancelled, clean up.

    ``locked``: the caller already holds the lock (:func:`profile_lock`) and releases it
    after this returns, e.g. once what the daemon opened behind the lock is closed.
    Raises DaemonAlreadyRunning when another daemon holds the lock, ConfigError when the
    socket paths are too long or the runtime directory is not ours.
    """
    with contextlib.ExitStack() as stack:
        files = locked if locked is not None else stack.enter_context(profile_lock(paths))
        await _serve(files, handlers, max_concurrent, task_status)


async def _serve(
    files: RuntimeFiles,
    handlers: Handlers,
    max_concurrent: int,
    task_status: trio.TaskStatus[IpcServer],
) -> None:
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    try:
        router = context.socket(zmq.ROUTER)
        xpub = context.socket(zmq.XPUB)
        for sock in (router, xpub):
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.MAXMSGSIZE, HARD_FRAME_LIMIT)
        # the last events (the daemon stopping) still reach the subscribers, or give up soon
        xpub.setsockopt(zmq.LINGER, EVENTS_LINGER_MS)
        # A stale socket file from a killed daemon is replaced by the bind.
        _bind_private(router, files.requests)
        _bind_private(xpub, files.events)
        async with trio_socket(router) as requests, trio_socket(xpub) as events:
            server = IpcServer(files, handlers, events)
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(server._confirm_subscriptions)
                    log.info("listening on %s", endpoint(files.requests))
                    task_status.started(server)
                    await server._serve_requests(requests, nursery, max_concurrent)
            finally:
                server._closed = True
    finally:
        context.destroy(linger=0)
        for path in (files.requests, files.events):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def _bind_private(sock: zmq.Socket[bytes], path: Path) -> None:
    """Bind to ``path`` with the socket file created 0600 (no window where it is wider)."""
    previous = os.umask(0o177)
    try:
        sock.bind(endpoint(path))
    finally:
        os.umask(previous)
    os.chmod(path, 0o600)

"""pyzmq sockets for trio tasks.

``zmq.FD`` is edge-triggered and does not mean "a message is ready" (notes/platform.md): it
only says the socket's state may have changed, and reading ``zmq.EVENTS`` processes what is
pending and re-arms it. Any send or recv can consume the edge another task was waiting for.
Hence: one watcher task per socket waits on the fd and wakes every parked task; operations
always try NOBLOCK first and wake every parked task after they succeed; the watcher is stopped
before the socket is closed.

    async with trio_socket(ctx.socket(zmq.DEALER)) as sock:
        await sock.send_multipart([b"", payload])
        frames = await sock.recv_multipart()
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import trio
import zmq


class TrioSocket:
    """A pyzmq socket shared by any number of trio tasks (use :func:`trio_socket`)."""

    def __init__(self, sock: zmq.Socket[bytes]) -> None:
        self.socket = sock
        self._fd = sock.fileno()
        self._changed = trio.lowlevel.ParkingLot()

    async def _watch(self) -> None:
        while True:
            self.socket.getsockopt(zmq.EVENTS)
            self._changed.unpark_all()
            await trio.lowlevel.wait_readable(self._fd)

    async def recv_multipart(self) -> list[bytes]:
        await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            try:
                frames = self.socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                await self._changed.park()
                continue
            self._changed.unpark_all()
            # Received: never lose the message to a cancellation here.
            await trio.lowlevel.cancel_shielded_checkpoint()
            return frames

    async def send_multipart(self, frames: Sequence[bytes]) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        while not self.send_nowait(frames):
            await self._changed.park()
        await trio.lowlevel.cancel_shielded_checkpoint()

    def send_nowait(self, frames: Sequence[bytes]) -> bool:
        """Send if the socket accepts the message now; False if it would block."""
        try:
            self.socket.send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:
            return False
        self._changed.unpark_all()
        return True


@asynccontextmanager
async def trio_socket(sock: zmq.Socket[bytes]) -> AsyncIterator[TrioSocket]:
    """Watch ``sock`` for trio tasks; on exit stop watching, then close it (with its LINGER)."""
    try:
        wrapped = TrioSocket(sock)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wrapped._watch)
            try:
                yield wrapped
            finally:
                nursery.cancel_scope.cancel()
    finally:
        sock.close()

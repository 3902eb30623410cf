"""Messages over a pipe between the daemon and a model's process, and the process's side of it.

Each message is a msgpack-encoded tagged msgspec struct behind its length (4 bytes, big
endian). Each model names its own requests and replies; :class:`Failed` is every model's
reply to a request that raised an error in the process.
"""

from __future__ import annotations

import argparse
import logging
import os
import struct
import sys
from collections.abc import Awaitable, Callable

import msgspec
import trio

HEADER = struct.Struct(">I")
# a prompt of a full context is ~1 MB, 30 s of speech ~2 MB; anything far beyond is an error
MAX_FRAME = 64 << 20


class Failed(msgspec.Struct, tag=True):
    """The request raised an error in the process: the daemon raises it as an EngineError."""

    message: str
    fix: str | None = None


_encoder = msgspec.msgpack.Encoder()


def encode(message: msgspec.Struct) -> bytes:
    body = _encoder.encode(message)
    return HEADER.pack(len(body)) + body


class FrameReader:
    """Messages of one type union from a byte stream; None once the stream ends."""

    def __init__(self, stream: trio.lowlevel.FdStream, kind: object) -> None:
        self._stream = stream
        self._decoder: msgspec.msgpack.Decoder[object] = msgspec.msgpack.Decoder(kind)
        self._buffer = bytearray()

    async def _fill(self, size: int) -> bool:
        while len(self._buffer) < size:
            data = await self._stream.receive_some(max(65536, size - len(self._buffer)))
            if not data:
                return False
            self._buffer += data
        return True

    def close(self) -> None:
        """Close the pipe (the frames not read yet are dropped); in the event loop only."""
        self._stream.close()

    async def next(self) -> object | None:
        if not await self._fill(HEADER.size):
            return None
        (size,) = HEADER.unpack_from(self._buffer)
        if size > MAX_FRAME:
            raise msgspec.DecodeError(f"a frame of {size} bytes")
        if not await self._fill(HEADER.size + size):
            return None
        body = bytes(self._buffer[HEADER.size:HEADER.size + size])
        del self._buffer[:HEADER.size + size]
        return self._decoder.decode(body)


Serve = Callable[[FrameReader, trio.abc.SendStream], Awaitable[None]]


def run_child(name: str, serve: Callable[[argparse.Namespace], Serve], requests: object,
              args: argparse.Namespace) -> None:
    """A model process's whole life: ``serve(args)`` reads ``requests`` from stdin and writes
    replies to stdout until stdin closes (the daemon stopped it, or died); the log goes to
    stderr, which the daemon shares. Then the process ends at once, without waiting for work
    in progress that nobody will read (the model's threads may still compute)."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s {name} %(levelname)s %(name)s: %(message)s")

    async def main() -> None:
        stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
        stdout = trio.lowlevel.FdStream(os.dup(sys.stdout.fileno()))
        async with stdin, stdout:
            await serve(args)(FrameReader(stdin, requests), stdout)

    trio.run(main)
    logging.shutdown()
    os._exit(0)

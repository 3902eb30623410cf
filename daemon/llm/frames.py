"""What the daemon and its language-model process say to each other over a pipe.

Each message is a msgpack-encoded tagged msgspec struct behind its length (4 bytes, big
endian). The daemon sends one request at a time (``Generate``, ``Stream`` or ``Prefill``) and
reads replies until the request's last one (``Completed``, ``Done`` or ``Failed``); while a
stream runs it may send ``Cancel``, and while a prefill runs the process asks ``ShouldStop``
between batches, answered by ``StopAnswer``.
"""

from __future__ import annotations

import struct

import msgspec
import trio

from daemon.llm.generate import ChatMessage

HEADER = struct.Struct(">I")
MAX_FRAME = 64 << 20  # a prompt of a full context is ~1 MB; anything far beyond is an error


class Generate(msgspec.Struct, tag=True):
    messages: list[ChatMessage]
    schema: dict[str, object]
    max_tokens: int
    temperature: float


class Stream(msgspec.Struct, tag=True):
    messages: list[ChatMessage]
    max_tokens: int
    temperature: float


class Prefill(msgspec.Struct, tag=True):
    messages: list[ChatMessage]
    stoppable: bool  # whether the daemon is to be asked between batches


class Cancel(msgspec.Struct, tag=True):
    """Stop the stream running now (its ``Done`` follows)."""


class StopAnswer(msgspec.Struct, tag=True):
    stop: bool


class Completed(msgspec.Struct, tag=True):
    raw: str
    cut_off: bool


class Token(msgspec.Struct, tag=True):
    text: str


class Done(msgspec.Struct, tag=True):
    """A stream or a prefill finished (or was cancelled)."""


class ShouldStop(msgspec.Struct, tag=True):
    """A prefill asks whether to stop reading."""


class Failed(msgspec.Struct, tag=True):
    """The request raised an error in the process: the daemon raises it as an EngineError."""

    message: str
    fix: str | None = None


ToWorker = Generate | Stream | Prefill | Cancel | StopAnswer
FromWorker = Completed | Token | Done | ShouldStop | Failed

_encoder = msgspec.msgpack.Encoder()


def encode(message: ToWorker | FromWorker) -> bytes:
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

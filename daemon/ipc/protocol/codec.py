"""Encoding and decoding frames: a request is checked before its type is known, so a bad
frame gets a precise error."""

from __future__ import annotations

from typing import Any

import msgspec

from daemon.ipc.protocol.base import (
    BAD_REQUEST,
    EVENTS,
    MAX_FRAME_BYTES,
    MAX_ID_LENGTH,
    PROTOCOL_VERSION,
    REPLIES,
    REQUESTS,
    TOO_LARGE,
    UNKNOWN_TYPE,
    VERSION,
    Error,
    Event,
    Message,
    Reply,
    Request,
)

__all__ = [
    "ProtocolError", "decode_event", "decode_reply", "decode_request", "encode"
]

_encoder = msgspec.msgpack.Encoder()
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


class ProtocolError(Exception):
    """A frame that is not a valid request; ``reply`` is the Error to send back."""

    def __init__(self, reply: Error) -> None:
        super().__init__(reply.message)
        self.reply = reply


class _Envelope(msgspec.Struct):
    """What is read from a request before its type is known, to give a precise error."""

    type: Any = None
    v: Any = None
    id: Any = None


_envelope_decoder = msgspec.msgpack.Decoder(_Envelope)


def encode(message: Message) -> bytes:
    return _encoder.encode(message)


def decode_request(frame: bytes) -> Request[Any]:
    """Decode one request frame, or raise :class:`ProtocolError` with the reply to send."""

    def fail(code: str, message: str, request_id: str = "", fix: str = "") -> ProtocolError:
        return ProtocolError(Error(id=request_id, code=code, message=message, fix=fix))

    if len(frame) > MAX_FRAME_BYTES:
        raise fail(TOO_LARGE, f"a request of {len(frame)} bytes is over the limit of "
                              f"{MAX_FRAME_BYTES} bytes")
    try:
        envelope = _envelope_decoder.decode(frame)
    except _DECODE_ERRORS as e:
        raise fail(BAD_REQUEST, f"a request must be a msgpack map: {e}") from None
    if not isinstance(envelope.id, str):
        raise fail(BAD_REQUEST, f"the request id must be a string, not {_short(envelope.id)}")
    if len(envelope.id) > MAX_ID_LENGTH:
        raise fail(BAD_REQUEST, f"the request id is longer than {MAX_ID_LENGTH} characters")
    request_id = envelope.id
    if type(envelope.v) is not int or envelope.v != PROTOCOL_VERSION:
        raise fail(VERSION, f"protocol version {_short(envelope.v)} is not supported (this daemon "
                            f"speaks {PROTOCOL_VERSION})", request_id,
                   fix="use a client from the same BrainCue version as the daemon")
    if not isinstance(envelope.type, str) or envelope.type not in REQUESTS.types:
        raise fail(UNKNOWN_TYPE, f"unknown request type {_short(envelope.type)}", request_id)
    try:
        return REQUESTS.decode(frame)
    except _DECODE_ERRORS as e:
        raise fail(BAD_REQUEST, f"invalid {envelope.type} request: {_clip(str(e), 300)}",
                   request_id) from None


def decode_reply(frame: bytes) -> Reply:
    """Decode a reply; raises msgspec.DecodeError / ValidationError on a malformed frame."""
    return REPLIES.decode(frame)


def decode_event(frame: bytes) -> Event:
    """Decode an event; raises msgspec.DecodeError / ValidationError on a malformed frame."""
    return EVENTS.decode(frame)


def _short(value: object) -> str:
    return _clip(repr(value), 60)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"

"""The protocol's frame: the bases every message derives from, their registers and the
wire's constants (version, limits, error codes, event topics)."""

from __future__ import annotations

import functools
import operator
import re
from typing import Any, ClassVar, Generic, TypeVar, get_args, get_origin

import msgspec

__all__ = [
    "BAD_REQUEST", "EVENTS", "INTERNAL", "INVALID", "MAX_FRAME_BYTES", "MAX_ID_LENGTH",
    "NOT_FOUND", "PROTOCOL_VERSION", "REPLIES", "REQUESTS", "TOO_LARGE", "TOPIC_ANSWERS",
    "TOPIC_PROGRESS", "TOPIC_SESSIONS", "TOPIC_STATUS", "TOPIC_SYNC", "TOPIC_TURNS", "UNAVAILABLE",
    "UNKNOWN_TYPE", "VERSION", "Error", "Event", "Message", "Ok", "Reply", "Request",
    "answer_topic", "progress_topic", "snake_case", "sync_topic", "tag_of"
]

PROTOCOL_VERSION = 1

# A transcript of several hours is far below this; anything larger is rejected with `too_large`.
MAX_FRAME_BYTES = 4 * 1024 * 1024
MAX_ID_LENGTH = 128  # request ids are echoed in replies and event topics

# Error codes of the protocol itself. Errors raised by request handlers use the `code` of their
# daemon.errors class ("not_found", "invalid", "config", ...).
BAD_REQUEST = "bad_request"
UNKNOWN_TYPE = "unknown_type"
VERSION = "version"
TOO_LARGE = "too_large"
INTERNAL = "internal"
UNAVAILABLE = "unavailable"
NOT_FOUND = "not_found"
INVALID = "invalid"

# Event topics (PUB/SUB filters by prefix; each topic ends with "/" so that no topic is a prefix
# of another).
TOPIC_TURNS = "turn/"
TOPIC_SESSIONS = "session/"
TOPIC_STATUS = "status/"
TOPIC_ANSWERS = "answer/"
TOPIC_SYNC = "sync/"
TOPIC_PROGRESS = "progress/"


def answer_topic(request_id: str) -> str:
    """The topic of the answer events streamed for one request."""
    return f"{TOPIC_ANSWERS}{request_id}/"


def progress_topic(request_id: str) -> str:
    """The topic of the progress events of one long request (an audio or transcript import,
    a document, a keep)."""
    return f"{TOPIC_PROGRESS}{request_id}/"


def sync_topic(nonce: str) -> str:
    """The topic on which the daemon confirms one subscription (see :class:`Subscribed`)."""
    return f"{TOPIC_SYNC}{nonce}/"


def snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class Message(msgspec.Struct, tag_field="type", tag=snake_case):
    """Base of every message on the wire."""


M = TypeVar("M", bound=Message)


class _Family(Generic[M]):
    """The registered types of one kind of message and a decoder for their union."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._classes: list[type[M]] = []
        self._types: dict[str, type[M]] | None = None
        self._decoder: msgspec.msgpack.Decoder[M] | None = None

    def register(self, cls: type[M]) -> None:
        # Called from __init_subclass__, before msgspec has set the class's tag: read it later.
        self._classes.append(cls)
        self._types = self._decoder = None

    @property
    def types(self) -> dict[str, type[M]]:
        """Every registered type by its tag."""
        if self._types is None:
            types: dict[str, type[M]] = {}
            for cls in self._classes:
                tag = tag_of(cls)
                if tag in types:
                    raise TypeError(f"two {self.kind} types are tagged {tag!r}")
                types[tag] = cls
            self._types = types
        return self._types

    def decode(self, frame: bytes) -> M:
        if self._decoder is None:
            union: Any = functools.reduce(operator.or_, self.types.values())
            self._decoder = msgspec.msgpack.Decoder(union)
        return self._decoder.decode(frame)


def tag_of(cls: type[Message]) -> str:
    """The wire name of a message type (``SettingsGet`` -> ``"settings_get"``)."""
    return str(cls.__struct_config__.tag)


class Reply(Message, kw_only=True):
    """Base of every reply. The daemon fills ``id`` with the id of the request answered."""

    id: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        REPLIES.register(cls)


REPLIES: _Family[Reply] = _Family("reply")


class Error(Reply):
    """A request failed; ``code`` is one of the protocol codes above or a daemon.errors code."""

    code: str
    message: str
    fix: str = ""


class Ok(Reply):
    """Done, nothing to report."""


R = TypeVar("R", bound=Reply)


class Request(Message, Generic[R], kw_only=True, forbid_unknown_fields=True):
    """Base of every request; subclass as ``class Foo(Request[FooReply])``."""

    v: int = PROTOCOL_VERSION
    id: str = ""

    reply_type: ClassVar[type[Reply]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            if get_origin(base) is Request:
                cls.reply_type = get_args(base)[0]
        if not hasattr(cls, "reply_type"):
            name = cls.__name__
            raise TypeError(f"declare the reply of {name}: class {name}(Request[ItsReply])")
        REQUESTS.register(cls)


REQUESTS: _Family[Request[Any]] = _Family("request")


class Event(Message):
    """Base of every event published by the daemon."""

    topic_prefix: ClassVar[str]

    def topic(self) -> str:
        return self.topic_prefix

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        EVENTS.register(cls)


EVENTS: _Family[Event] = _Family("event")

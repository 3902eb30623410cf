"""What the daemon and its language-model process say to each other over a pipe (framed by
:mod:`daemon.process.frames`). The daemon sends one request at a time (``Generate``,
``Stream`` or ``Prefill``) and reads replies until the request's last one (``Completed``,
``Done`` or ``Failed``); while a stream runs it may send ``Cancel``, and while a prefill runs
the process asks ``ShouldStop`` between batches, answered by ``StopAnswer``.
"""

from __future__ import annotations

import msgspec

from daemon.llm.generate import ChatMessage
from daemon.process.frames import Failed


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
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Token(msgspec.Struct, tag=True):
    text: str


class Done(msgspec.Struct, tag=True):
    """A stream or a prefill finished (or was cancelled)."""


class ShouldStop(msgspec.Struct, tag=True):
    """A prefill asks whether to stop reading."""


ToWorker = Generate | Stream | Prefill | Cancel | StopAnswer
FromWorker = Completed | Token | Done | ShouldStop | Failed

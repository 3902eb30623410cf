"""Long requests with progress: the request is sent from a thread while the events the daemon
publishes on ``progress_topic(request.id)`` are shown here, on stderr.

A keep (summarising, extracting, reconciling with the local model) or a large import (embedding
every turn) takes minutes on a small CPU; a bar per stage says it is alive and how far it got.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from daemon.ipc.client import Client
from daemon.ipc.protocol import Event, Reply, Request, StageProgress, progress_topic

if TYPE_CHECKING:
    from tqdm import tqdm

R = TypeVar("R", bound=Reply)

POLL_S = 0.2  # how often the event loop looks whether the reply came
# An import transcribes or embeds a whole file: the largest the protocol carries takes hours on
# a small CPU. Its progress shows it is alive; Ctrl+C stops waiting.
IMPORT_TIMEOUT_S = 6 * 3600.0

# stage -> (what the bar says, what one step is)
STAGES = {
    "archive": ("summarising", "part"),
    "extraction": ("extracting", "part"),
    "reconciliation": ("reconciling", "statement"),
    "embedding": ("embedding", "text"),
}


def stage_label(stage: str) -> tuple[str, str]:
    """What the bar of ``stage`` says and the unit of its steps (a stage from a newer daemon
    shows under its own name)."""
    return STAGES.get(stage, (stage, "step"))


def with_id(request: Request[R]) -> Request[R]:
    """``request`` with an id, which names the topic of its progress events."""
    return request if request.id else msgspec.structs.replace(request, id=uuid.uuid4().hex)


def request_watching(profile: str, request: Request[R], *, timeout: float,
                     on_event: Callable[[Event], None]) -> R:
    """Send ``request`` (with an id) from a thread and hand every event of its progress topic
    to ``on_event`` here until the reply comes, and those that came with it; return the reply
    or raise what the request raised."""
    outcome: list[R | BaseException] = []

    def send() -> None:
        try:
            with Client(profile) as client:
                outcome.append(client.request(request, timeout=timeout))
        except BaseException as e:  # handed to this thread
            outcome.append(e)

    with Client(profile) as client, client.subscribe([progress_topic(request.id)]) as events:
        sender = threading.Thread(target=send, name="progress-request", daemon=True)
        sender.start()
        while sender.is_alive():
            event = events.receive(POLL_S)
            if event is not None:
                on_event(event)
        sender.join()
        while (event := events.receive(0)) is not None:  # the last ones came with the reply
            on_event(event)
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


class StageBars:
    """One tqdm bar on stderr for the stage in progress; the next stage replaces it."""

    def __init__(self) -> None:
        self.stage = ""
        self._bar: tqdm[Any] | None = None

    def __call__(self, event: Event) -> None:
        if not isinstance(event, StageProgress):
            return
        from tqdm import tqdm

        if event.stage != self.stage or self._bar is None:
            self.close()
            label, unit = stage_label(event.stage)
            self.stage = event.stage
            self._bar = tqdm(total=event.total, desc=label, unit=unit, leave=False)
        self._bar.total = event.total
        self._bar.n = event.done
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> StageBars:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def request_with_progress(profile: str, request: Request[R], *, timeout: float,
                          show: bool) -> R:
    """Send ``request`` and return its reply, showing its StageProgress events as bars on
    stderr when ``show`` (else it is a plain request)."""
    if not show:
        with Client(profile) as client:
            return client.request(request, timeout=timeout)
    with StageBars() as bars:
        return request_watching(profile, with_id(request), timeout=timeout, on_event=bars)

"""A desktop client's line to the daemon, kept up while the daemon comes and goes.

The desktop clients run a UI event loop that must never block on the daemon, so everything here
happens on threads of its own and reports back through ``post``: the UI's "run this on your
thread" (see :class:`clients.desktop.qt.MainThread`).

- One thread follows the daemon: it subscribes to events, asks for the status every few seconds,
  and when the daemon goes away it says so and tries again until it is back.
- Requests are sent one at a time from another thread, each answered by a callback.
- :meth:`DaemonLink.ask` streams an answer: its tokens arrive as events while the request waits.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import msgspec

from daemon.config import Paths
from daemon.errors import BrainCueError
from daemon.ipc.client import DEFAULT_TIMEOUT, Client
from daemon.ipc.protocol import (
    AnswerDone,
    AnswerEvidence,
    AnswerToken,
    Ask,
    AskReply,
    Event,
    EvidenceInfo,
    Reply,
    Request,
    Status,
    StatusReply,
    answer_topic,
)

log = logging.getLogger("braincue.desktop")

R = TypeVar("R", bound=Reply)
Post = Callable[[Callable[[], None]], None]

RETRY_S = 1.0  # between attempts to reach a daemon that is not there
STATUS_EVERY_S = 2.0  # status is also polled: it notices a daemon that restarted in between
POLL_S = 0.25  # how long a thread waits on a socket before looking at the stop flag
REQUEST_TIMEOUT_S = DEFAULT_TIMEOUT  # how long a request waits, unless it says otherwise
ASK_TIMEOUT_S = 300.0  # a long answer on a slow machine; its tokens show progress meanwhile


@dataclass(frozen=True)
class _Answering:
    """Where one streamed answer goes (see :meth:`DaemonLink.ask`)."""

    on_token: Callable[[str], None]
    on_reply: Callable[[AskReply], None]
    on_error: Callable[[BrainCueError], None]
    on_evidence: Callable[[list[EvidenceInfo]], None]


@dataclass(frozen=True)
class Down:
    """The daemon cannot be reached; ``error`` says why (DaemonNotRunning, DaemonTimeout...)."""

    error: BrainCueError


class DaemonLink:
    """Sends one profile's daemon requests off the UI thread, and can follow its events.

    Callbacks run through ``post``. Requests are sent one at a time, in order.
    """

    def __init__(self, paths: Paths, post: Post) -> None:
        self.paths = paths
        self._post = post
        self._stopping = threading.Event()
        self.timeout = REQUEST_TIMEOUT_S
        self._requests: queue.Queue[Callable[[Client], None] | None] = queue.Queue()
        self._threads = [threading.Thread(target=self._send, name="braincue-requests",
                                          daemon=True)]
        self._threads[0].start()

    def follow(
        self,
        *,
        on_status: Callable[[StatusReply], None],
        on_event: Callable[[Event], None],
        on_down: Callable[[Down], None],
        topics: Sequence[str] = ("",),
        retry_s: float = RETRY_S,
        status_every_s: float = STATUS_EVERY_S,
    ) -> None:
        """Follow the daemon until :meth:`stop`, through restarts: ``on_status`` gets every
        StatusReply (at each connection, then every ``status_every_s``), ``on_event`` every
        event of ``topics``, ``on_down`` each outage (once, until the daemon is back)."""
        thread = threading.Thread(
            target=self._follow,
            args=(on_status, on_event, on_down, list(topics), retry_s, status_every_s),
            name="braincue-follow", daemon=True,
        )
        self._threads.append(thread)
        thread.start()

    def _client(self) -> Client:
        """A connection to the daemon whose requests wait ``timeout`` unless they say."""
        return Client(self.paths, timeout=self.timeout)

    def stop(self) -> None:
        self._stopping.set()
        self._requests.put(None)
        for thread in self._threads:
            thread.join(timeout=5)

    def submit(
        self,
        request: Request[R],
        on_reply: Callable[[R], None],
        on_error: Callable[[BrainCueError], None],
        *,
        timeout: float | None = None,
        apart: bool = False,
    ) -> None:
        """Send ``request``; ``on_reply`` or ``on_error`` runs (through ``post``) when it is
        answered or has failed (``timeout``: seconds to wait, for a request known to be long;
        the requests after it wait too, unless it goes ``apart``: on a connection of its own,
        beside them)."""

        def send(client: Client) -> None:
            try:
                reply = client.request(request, timeout=timeout)
            except BrainCueError as e:
                self._post(partial(on_error, e))
            else:
                self._post(partial(on_reply, reply))

        if not apart:
            self._requests.put(send)
            return

        def alone() -> None:
            try:
                with self._client() as client:
                    send(client)
            except Exception:
                log.exception("a request failed unexpectedly")

        threading.Thread(target=alone, name="braincue-long-request", daemon=True).start()

    def ask(
        self,
        request: Ask,
        on_token: Callable[[str], None],
        on_reply: Callable[[AskReply], None],
        on_error: Callable[[BrainCueError], None],
        on_evidence: Callable[[list[EvidenceInfo]], None] = lambda evidence: None,
    ) -> str:
        """Send ``request`` and stream its answer: ``on_evidence`` with what memory holds for
        it (first, before the model writes), ``on_token`` for each piece as it comes, then
        ``on_reply`` with the whole answer and its sources. Returns the request id."""
        request = msgspec.structs.replace(request, id=request.id or uuid.uuid4().hex)
        to = _Answering(on_token, on_reply, on_error, on_evidence)
        threading.Thread(target=self._ask, args=(request, to),
                         name="braincue-ask", daemon=True).start()
        return request.id

    # -- threads -------------------------------------------------------------------------------

    def _follow(
        self,
        on_status: Callable[[StatusReply], None],
        on_event: Callable[[Event], None],
        on_down: Callable[[Down], None],
        topics: list[str],
        retry_s: float,
        status_every_s: float,
    ) -> None:
        down = False
        while not self._stopping.is_set():
            try:
                with self._client() as client, client.subscribe(topics) as events:
                    self._post(partial(on_status, client.request(Status())))
                    down = False
                    next_status = time.monotonic() + status_every_s
                    while not self._stopping.is_set():
                        event = events.receive(POLL_S)
                        if event is not None:
                            self._post(partial(on_event, event))
                        if time.monotonic() >= next_status:
                            self._post(partial(on_status, client.request(Status())))
                            next_status = time.monotonic() + status_every_s
            except BrainCueError as e:
                if not down:
                    log.info("daemon unreachable: %s", e)
                    self._post(partial(on_down, Down(e)))
                    down = True
                self._stopping.wait(retry_s)
            except Exception:  # a bug here must not end the client: report, retry
                log.exception("following the daemon failed")
                self._stopping.wait(retry_s)

    def _send(self) -> None:
        with self._client() as client:
            while True:
                send = self._requests.get()
                if send is None or self._stopping.is_set():
                    return
                try:
                    send(client)
                except Exception:
                    log.exception("a request failed unexpectedly")

    def _ask(self, request: Ask, to: _Answering) -> None:
        listening = threading.Event()
        finished = threading.Event()
        failure: list[BrainCueError] = []

        def stream() -> None:
            try:
                with self._client() as client, \
                        client.subscribe([answer_topic(request.id)]) as events:
                    listening.set()
                    while not (finished.is_set() or self._stopping.is_set()):
                        event = events.receive(POLL_S)
                        if isinstance(event, AnswerEvidence):
                            self._post(partial(to.on_evidence, event.evidence))
                        elif isinstance(event, AnswerToken):
                            self._post(partial(to.on_token, event.token))
                        elif isinstance(event, AnswerDone):
                            return
            except BrainCueError as e:
                failure.append(e)
            finally:
                listening.set()

        streamer = threading.Thread(target=stream, name="braincue-answer", daemon=True)
        streamer.start()
        listening.wait()
        if failure:
            self._post(partial(to.on_error, failure[0]))
            return
        try:
            with self._client() as client:
                reply = client.request(request, timeout=ASK_TIMEOUT_S)
        except BrainCueError as e:
            finished.set()
            self._post(partial(to.on_error, e))
            return
        # The tokens were published before the reply was sent: let the streamer deliver them
        # all (it returns at AnswerDone) before the reply, so the order on screen is right.
        streamer.join(timeout=2)
        finished.set()
        self._post(partial(to.on_reply, reply))

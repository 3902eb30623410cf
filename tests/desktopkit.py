"""What the desktop client tests run against: a virtual X server, a private D-Bus session bus,
a fake notification server that records what it is asked to show and clicks buttons on
request, and a fake daemon — the real IPC server (daemon.ipc.server) with scripted handlers
that record every request."""

from __future__ import annotations

import os
import select
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from queue import Queue
from typing import Any, TypeVar

import msgspec
import trio
from daemonkit import running_daemon
from jeepney import DBusAddress, MatchRule, message_bus, new_method_return, new_signal
from jeepney.io.threading import DBusRouter, Proxy, open_dbus_connection
from jeepney.low_level import HeaderFields, Message

from daemon.app import Daemon
from daemon.config import Config, Paths
from daemon.engines import Engines
from daemon.ipc.dispatch import Handlers, Publish
from daemon.ipc.protocol import (
    AnswerDone,
    AnswerEvidence,
    AnswerToken,
    Ask,
    AskReply,
    Citation,
    Event,
    EvidenceInfo,
    HeardVoiceInfo,
    ItemsReply,
    ListSessions,
    ListSpaces,
    LiveStatus,
    MemoryList,
    MemoryListReply,
    Ok,
    OpenItems,
    Pause,
    Remember,
    RememberReply,
    Reply,
    Request,
    SessionInfo,
    SessionReply,
    SessionsReply,
    ShowSession,
    SourceStatus,
    SpaceInfo,
    SpacesReply,
    Start,
    StartReply,
    Status,
    StatusReply,
    VoiceInfo,
    VoiceName,
    VoiceReply,
    VoicesList,
    VoicesReply,
)
from daemon.ipc.server import IpcServer, serve_ipc

SCREENSHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "screenshots"
Q = TypeVar("Q", bound=Request[Any])


def wait_until(condition: Callable[[], object], what: str, timeout: float = 15.0) -> None:
    """Run the Qt event loop until ``condition()`` holds; fail after ``timeout`` seconds."""
    from PySide6.QtCore import QEventLoop
    from PySide6.QtWidgets import QApplication

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)


def screenshot(name: str) -> Path:
    """The whole virtual screen, as ``artifacts/screenshots/<name>.png``."""
    from PySide6.QtWidgets import QApplication

    for _ in range(3):  # let pending paints reach the X server
        QApplication.processEvents()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    screen = QApplication.primaryScreen()
    assert screen.grabWindow(0).save(str(path)), f"could not save {path}"
    return path


# ---------------------------------------------------------------------------------------------
# X server and session bus


def start_xvfb() -> tuple[subprocess.Popen[bytes], str]:
    """Xvfb on a display number it picks itself (-displayfd): no clash with other servers."""
    read_end, write_end = os.pipe()
    process = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_end), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    os.close(write_end)
    try:
        number = b""
        while not number.endswith(b"\n"):
            readable, _, _ = select.select([read_end], [], [], 30)
            chunk = os.read(read_end, 16) if readable else b""
            if not chunk:
                process.kill()
                raise RuntimeError("Xvfb did not start")
            number += chunk
    finally:
        os.close(read_end)
    return process, f":{number.decode().strip()}"


def start_session_bus() -> tuple[subprocess.Popen[bytes], str]:
    process = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--print-address=1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    address = process.stdout.readline().decode().strip()
    if not address:
        process.kill()
        raise RuntimeError("dbus-daemon did not start")
    return process, address


# ---------------------------------------------------------------------------------------------
# A notification server


@dataclass(frozen=True)
class NotifyCall:
    id: int
    app_name: str
    summary: str
    body: str
    actions: list[tuple[str, str]]
    timeout_ms: int
    sender: str
    updates: int = 0  # times it was replaced on the screen (Notify with its id)


INTERFACE = "org.freedesktop.Notifications"
OBJECT_PATH = "/org/freedesktop/Notifications"


class FakeNotificationServer:
    """org.freedesktop.Notifications on the test bus: records Notify calls (one that replaces
    a notification takes its place, as on the screen), and :meth:`click` sends ActionInvoked
    as a real server does when a button is pressed."""

    def __init__(self, bus_address: str, capabilities: tuple[str, ...] = ("actions", "body")):
        self.capabilities = list(capabilities)
        self.calls: list[NotifyCall] = []
        self.closed: list[int] = []
        self._lock = threading.Lock()
        self._router = DBusRouter(open_dbus_connection(bus_address))
        self._incoming: Queue[Message | None] = Queue()
        self._filter = self._router.filter(
            MatchRule(type="method_call", interface=INTERFACE), queue=self._incoming)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        (result,) = Proxy(message_bus, self._router, timeout=5).RequestName(INTERFACE, 4)
        assert result == 1, f"could not own {INTERFACE}: {result}"

    def close(self) -> None:
        self._incoming.put(None)
        self._thread.join(timeout=5)
        self._filter.close()
        self._router.close()
        self._router.conn.close()

    def notifications(self, summary: str) -> list[NotifyCall]:
        with self._lock:
            return [call for call in self.calls if call.summary == summary]

    def click(self, call: NotifyCall, key: str) -> None:
        emitter = DBusAddress(OBJECT_PATH, interface=INTERFACE)
        for member, signature, body in (("ActionInvoked", "us", (call.id, key)),
                                        ("NotificationClosed", "uu", (call.id, 2))):
            signal = new_signal(emitter, member, signature, body)
            signal.header.fields[HeaderFields.destination] = call.sender
            self._router.send(signal)

    def _serve(self) -> None:
        while True:
            message = self._incoming.get()
            if message is None:
                return
            member = message.header.fields.get(HeaderFields.member)
            if member == "Notify":
                app_name, replaces, _icon, summary, body, actions, _hints, timeout = message.body
                with self._lock:
                    shown = [i for i, c in enumerate(self.calls) if c.id == replaces]
                    call = NotifyCall(replaces if shown else len(self.calls) + 1, app_name,
                                      summary, body,
                                      list(zip(actions[::2], actions[1::2], strict=True)),
                                      timeout, message.header.fields[HeaderFields.sender],
                                      self.calls[shown[0]].updates + 1 if shown else 0)
                    if shown:
                        self.calls[shown[0]] = call
                    else:
                        self.calls.append(call)
                reply = new_method_return(message, "u", (call.id,))
            elif member == "GetCapabilities":
                reply = new_method_return(message, "as", (self.capabilities,))
            elif member == "GetServerInformation":
                reply = new_method_return(message, "ssss", ("fake", "braincue-tests", "1", "1.2"))
            elif member == "CloseNotification":
                with self._lock:
                    self.closed.append(message.body[0])
                reply = new_method_return(message)
            else:
                continue
            self._router.send(reply)


# ---------------------------------------------------------------------------------------------
# A daemon


def live_status(session_id: int | None = None, *, no_audio: bool = False) -> LiveStatus:
    state = "no audio" if no_audio else "capturing"
    detail = "no audio server" if no_audio else ""
    return LiveStatus(
        sources={"mic": SourceStatus(state, detail=detail),
                 "loopback": SourceStatus(state, detail=detail)},
        utterances_queued=0, asr_lag_s=0.0, dropped_blocks=0, session_id=session_id,
    )


ANSWER_TOKENS = ["We agreed ", "to ship the beta ", "on Friday [1]."]
SOURCES = [Citation(n=1, title="Launch review", session_id=7, date=1_785_000_000.0,
                    speaker="them", quote="let's ship the beta on Friday")]
EVIDENCE = [EvidenceInfo(n=1, kind="transcript", title="Launch review", session_id=7,
                         date=1_785_000_000.0, speaker="them", start=95.0,
                         text="So, let's ship the beta on Friday.")]


class TrioThread:
    """A trio run on a thread of its own, from :meth:`start` until :meth:`stop`: a subclass's
    ``_serve`` starts what it runs, calls ``ready.set()``, then awaits ``self._stop``."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None

    def start(self, timeout: float = 15.0) -> None:
        ready = threading.Event()
        self._thread = threading.Thread(target=trio.run, args=(self._main, ready), daemon=True)
        self._thread.start()
        assert ready.wait(timeout), f"{type(self).__name__} did not start"

    def stop(self) -> None:
        if self._thread is None:
            return
        assert self._token is not None and self._stop is not None
        trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join(timeout=30)
        self._thread = None

    async def _main(self, ready: threading.Event) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        await self._serve(ready)

    async def _serve(self, ready: threading.Event) -> None:
        raise AssertionError("a TrioThread serves something")


class FakeDaemon(TrioThread):
    """The real IPC server on a profile's sockets, answering from a script.

    Every request is recorded (:meth:`wait_for`); Ask streams ``ANSWER_TOKENS``, stopping after
    the first two until :attr:`release_answer` is set, so a test can see a partial answer.
    ShowSession answers from :attr:`shown`, the review queue and open items are empty;
    `voices list` lists :attr:`heard` (once :attr:`release_voices` is set: it is), and naming
    one of those voices names it and its turns in :attr:`shown`, as the daemon does; a keep
    takes :attr:`keep_takes_s`.
    """

    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self.requests: list[Request[Any]] = []
        self.capture = "capturing"
        self.live = live_status()
        self.spaces = ["Atlas", "Hiring"]
        self.sessions: list[SessionInfo] = []
        self.shown: dict[int, SessionReply] = {}
        self.heard: list[HeardVoiceInfo] = []
        self.release_voices = threading.Event()
        self.release_voices.set()
        self.release_answer = threading.Event()
        self.keep_takes_s = 0.0
        self._lock = threading.Lock()
        self._server: IpcServer | None = None
        super().__init__()

    async def _serve(self, ready: threading.Event) -> None:
        assert self._stop is not None
        async with trio.open_nursery() as nursery:
            self._server = await nursery.start(serve_ipc, self.paths, self._handlers())
            ready.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    def publish(self, event: Event) -> None:
        assert self._token is not None and self._server is not None
        trio.from_thread.run_sync(self._server.publish, event, trio_token=self._token)

    # -- what it received ----------------------------------------------------------------------

    def wait_for(self, request_type: type[Q], timeout: float = 15.0) -> Q:
        """The first request of ``request_type`` received (waits for it, running the Qt loop:
        the clients send from callbacks that run there)."""
        wait_until(lambda: self.of_type(request_type), f"a {request_type.__name__} request",
                   timeout)
        return self.of_type(request_type)[0]

    def of_type(self, request_type: type[Q]) -> list[Q]:
        with self._lock:
            return [r for r in self.requests if isinstance(r, request_type)]

    def _record(self, request: Request[Any]) -> None:
        with self._lock:
            self.requests.append(request)

    # -- the script ----------------------------------------------------------------------------

    def _handlers(self) -> Handlers:
        handlers = Handlers()

        def add(request_type: type[Q], answer: Callable[[Q], Reply]) -> None:
            async def handler(request: Q) -> Reply:
                self._record(request)
                return answer(request)

            handlers.add(request_type, handler)

        add(Status, lambda r: StatusReply(
            profile=self.paths.profile, version="test", protocol=1, pid=os.getpid(),
            uptime_s=1.0, models_loaded=[], capture=self.capture, counts={}, ipc={},
            live=self.live))
        add(ListSpaces, lambda r: SpacesReply(spaces=[
            SpaceInfo(id=i, name=name, activity="meeting", memory_enabled=True, created_at=0.0)
            for i, name in enumerate(self.spaces, 1)]))
        add(ListSessions, lambda r: SessionsReply(sessions=self.sessions))
        add(Start, lambda r: StartReply(session_id=9, started_at=time.time(),
                                        message=f"session 9 started in {r.space}"))
        add(Pause, lambda r: Ok())
        add(ShowSession, lambda r: self.shown[r.session_id])
        add(MemoryList, lambda r: MemoryListReply(memories=[], memory_enabled=False,
                                                  session_archive_enabled=True))
        add(OpenItems, lambda r: ItemsReply(items=[]))
        add(VoiceName, self._name)

        async def voices_list(request: VoicesList) -> VoicesReply:
            self._record(request)
            released = await trio.to_thread.run_sync(self.release_voices.wait, 15,
                                                      abandon_on_cancel=True)
            assert released, "the test never released the voices"
            return VoicesReply(voices=[], heard=list(self.heard), voices_enabled=True,
                               state="on")

        handlers.add(VoicesList, voices_list)

        async def remember(request: Remember) -> RememberReply:
            self._record(request)
            if request.answer == "keep":  # a keep runs the language model: it takes a while
                await trio.sleep(self.keep_takes_s)
            return RememberReply(session_id=request.session_id, answer=request.answer,
                                 status="kept", space=request.space,
                                 archived=request.answer == "keep" and request.space is not None)

        handlers.add(Remember, remember)

        async def ask(request: Ask, publish: Publish) -> AskReply:
            self._record(request)
            publish(AnswerEvidence(request_id=request.id, evidence=EVIDENCE))
            for i, token in enumerate(ANSWER_TOKENS):
                if i == 2:
                    released = await trio.to_thread.run_sync(self.release_answer.wait, 15,
                                                              abandon_on_cancel=True)
                    assert released, "the test never released the answer"
                publish(AnswerToken(request_id=request.id, token=token))
            publish(AnswerDone(request_id=request.id))
            question = request.question or "When can you ship the beta?"
            return AskReply(answer="".join(ANSWER_TOKENS), sources=SOURCES, question=question,
                            evidence=EVIDENCE)

        handlers.add_streaming(Ask, ask)
        return handlers

    def _name(self, request: VoiceName) -> VoiceReply:
        [heard] = [h for h in self.heard
                   if (h.session_id, h.label) == (request.session_id, request.voice)]
        self.heard[self.heard.index(heard)] = msgspec.structs.replace(
            heard, name=request.name, suggestion=None)
        turns = 0
        shown = self.shown.get(heard.session_id)
        if shown is not None:
            renamed = [msgspec.structs.replace(t, speaker=request.name)
                       if t.speaker == heard.label else t for t in shown.turns]
            turns = sum(t.speaker == heard.label for t in shown.turns)
            self.shown[heard.session_id] = msgspec.structs.replace(shown, turns=renamed)
        voice = VoiceInfo(id=1, name=request.name, sessions=1, turns=turns,
                          seconds=heard.seconds, created_at=0.0)
        return VoiceReply(voice=voice, message=f"{request.voice} is {request.name}: {turns} "
                                               f"turns in 1 session(s) show the name")


class ThreadedDaemon(TrioThread):
    """The real daemon (``daemon.app.serve`` on the profile of ``BRAINCUE_HOME``) in a trio
    run on a thread of its own, so that a Qt client can run on the main thread against its
    sockets; ``engines``: the models it uses instead of the installed ones."""

    def __init__(self, engines: Engines, config: Config) -> None:
        super().__init__()
        self.engines = engines
        self.config = config
        self.daemon: Daemon | None = None

    async def _serve(self, ready: threading.Event) -> None:
        assert self._stop is not None
        async with running_daemon(self.engines, self.config) as daemon:
            self.daemon = daemon
            ready.set()
            await self._stop.wait()

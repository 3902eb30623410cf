"""A real daemon whose language model's process is killed in the middle of an answer: the ask
gets an error reply, a status event says so at once, ``status`` counts the restart, search goes
on meanwhile, and the next ask is answered by a new process (the real small models)."""

from __future__ import annotations

import os
import signal
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from askkit import SPACE, import_kept_sessions

from clients.cli.status import status_lines
from daemon.errors import BrainCueError
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    TOPIC_STATUS,
    AnswerToken,
    Ask,
    AskReply,
    Search,
    SettingsSet,
    Status,
    StatusEvent,
    answer_topic,
)
from daemon.ipc.testing import DaemonProcess, start_daemon

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

LLM = "qwen2.5-coder-0.5b"
QUESTION = "What is the Orion server budget?"


@pytest.fixture
def daemon(short_home: Path, installed_model: Callable[[str], Path]) -> Iterator[DaemonProcess]:
    installed_model(LLM)
    installed_model("all-minilm-l6-v2")
    started = start_daemon(short_home)
    yield started
    started.stop()


def foreground_pid(client: Client) -> int | None:
    (process,) = [p for p in client.request(Status()).model_processes
                  if p.priority == "foreground"]
    return process.pid


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV], ids=["SIGKILL", "SIGSEGV"])
def test_a_model_process_killed_mid_answer_costs_that_answer_only(
        daemon: DaemonProcess, sig: signal.Signals) -> None:
    with Client(timeout=60) as client:
        import_kept_sessions(client)
        client.request(SettingsSet(key="llm_model", value=LLM))

    request = Ask(id=uuid.uuid4().hex, question=QUESTION, space=SPACE)
    outcome: list[AskReply | BrainCueError] = []

    def send() -> None:
        try:
            outcome.append(Client(timeout=900).request(request, timeout=900))
        except BrainCueError as e:
            outcome.append(e)

    said: list[StatusEvent] = []
    killed = None
    with Client(timeout=60) as client, \
            client.subscribe([answer_topic(request.id), TOPIC_STATUS]) as events:
        sender = threading.Thread(target=send)
        sender.start()
        while killed is None:
            event = events.receive(900)
            assert event is not None, "no answer token within 15 minutes"
            if isinstance(event, AnswerToken):
                with Client(timeout=60) as other:
                    killed = foreground_pid(other)
                assert killed is not None and killed != daemon.pid
                os.kill(killed, sig)
        sender.join()
        # the death is said at once (published before the ask's error reply)
        while not said:
            event = events.receive(60)
            assert event is not None, "no status event"
            if isinstance(event, StatusEvent):
                said.append(event)
    (reply,) = outcome
    assert isinstance(reply, BrainCueError), reply
    assert f"killed by {sig.name}" in str(reply)
    assert [e.message for e in said] == [
        f"the language model (foreground) was killed by {sig.name}: the request it served "
        "failed; it restarts on the next one"]
    with Client(timeout=60) as client:
        status = client.request(Status())
        (foreground,) = [p for p in status.model_processes if p.priority == "foreground"]
        assert (foreground.deaths, foreground.last_death) == (1, f"killed by {sig.name}")
        assert f"restarted 1 time (last: killed by {sig.name})" in "\n".join(
            status_lines(status))
        # the daemon answered searches while its model was gone, and answers again
        assert client.request(Search(query="Orion budget", space=SPACE)).results
        again = client.request(Ask(id=uuid.uuid4().hex, question=QUESTION, space=SPACE),
                               timeout=900)
        assert "48,000" in again.answer or "48000" in again.answer, again.answer
        assert foreground_pid(client) not in (None, killed)

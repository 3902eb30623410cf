"""A real daemon whose language model's process is killed in the middle of an answer: the ask
gets an error reply, a status event says so at once, ``status`` counts the restart, search goes
on meanwhile, and the next ask is answered by a new process (the real small models)."""

from __future__ import annotations

import os
import re
import signal
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from askkit import LLM, QUESTION, SPACE, Asking, foreground, foreground_pid, import_kept_sessions

from clients.cli.status import status_lines
from daemon.errors import BrainCueError
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    TOPIC_STATUS,
    AnswerToken,
    Ask,
    Search,
    SettingsSet,
    Status,
    StatusEvent,
    answer_topic,
)
from daemon.ipc.testing import DaemonProcess, start_daemon

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]



@pytest.fixture
def daemon(short_home: Path, installed_model: Callable[[str], Path]) -> Iterator[DaemonProcess]:
    installed_model(LLM)
    installed_model("all-minilm-l6-v2")
    started = start_daemon(short_home)
    yield started
    started.stop()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV], ids=["SIGKILL", "SIGSEGV"])
def test_a_model_process_killed_mid_answer_costs_that_answer_only(
        daemon: DaemonProcess, sig: signal.Signals) -> None:
    with Client(timeout=60) as client:
        import_kept_sessions(client)
        client.request(SettingsSet(key="llm_model", value=LLM))

    asking = Asking()
    said: list[StatusEvent] = []
    killed = None
    with Client(timeout=60) as client, \
            client.subscribe([answer_topic(asking.request.id), TOPIC_STATUS]) as events:
        asking.start()
        while killed is None:
            event = events.receive(900)
            assert event is not None, "no answer token within 15 minutes"
            if isinstance(event, AnswerToken):
                with Client(timeout=60) as other:
                    killed = foreground_pid(other)
                assert killed is not None and killed != daemon.pid
                os.kill(killed, sig)
        reply = asking.join()
        # the death is said at once (published before the ask's error reply)
        while not said:
            event = events.receive(60)
            assert event is not None, "no status event"
            if isinstance(event, StatusEvent):
                said.append(event)
    assert isinstance(reply, BrainCueError), reply
    assert f"killed by {sig.name}" in str(reply)
    assert [e.message for e in said] == [
        f"the language model (foreground) was killed by {sig.name}: the request it served "
        "failed; it restarts on the next one"]
    with Client(timeout=60) as client:
        status = client.request(Status())
        process = foreground(status)
        assert (process.deaths, process.last_death) == (1, f"killed by {sig.name}")
        assert f"restarted 1 time (last: killed by {sig.name})" in "\n".join(
            status_lines(status))
        # the daemon answered searches while its model was gone, and answers again
        assert client.request(Search(query="Orion budget", space=SPACE)).results
        again = client.request(Ask(id=uuid.uuid4().hex, question=QUESTION, space=SPACE),
                               timeout=900)
        assert "48,000" in again.answer or "48000" in again.answer, again.answer
        assert foreground_pid(client) not in (None, killed)
        # the memory of each process, the new model process's beside the daemon's
        assert re.search(r"memory: [\d,]+ MB resident \(daemon [\d,]+ MB, llm foreground "
                         r"[\d,]+ MB\)", "\n".join(status_lines(client.request(Status()))))

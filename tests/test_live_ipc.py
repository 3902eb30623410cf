"""Start, Stop and the live status over the real sockets of an in-process daemon (no capture)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from daemonkit import running_daemon

from daemon.errors import InvalidInput, NotFound
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    TOPIC_SESSIONS,
    SessionEnded,
    SessionStarted,
    Start,
    Status,
    Stop,
)


async def test_sessions_start_and_stop_over_ipc_with_the_keep_prompt(short_home: Path) -> None:
    async with running_daemon() as daemon:
        assert daemon.store is not None
        daemon.store.create_space("Atlas")

        def exchange() -> None:
            client = Client(timeout=30)
            with client.subscribe([TOPIC_SESSIONS]) as events:
                with pytest.raises(InvalidInput, match="needs a Space"):
                    client.request(Start(activity="job"))
                with pytest.raises(NotFound, match="no Space 'Nowhere'"):
                    client.request(Start(space="Nowhere"))
                started = client.request(Start(space="Atlas", title="planning"))
                assert started.message.endswith(
                    "a summary and memory suggestions will be filed into Atlas")
                status = client.request(Status())
                assert status.live is not None
                assert status.live.session_id == started.session_id
                assert set(status.live.sources) == {"mic", "loopback"}
                assert {s.state for s in status.live.sources.values()} == {"off"}
                assert (status.live.utterances_queued, status.live.dropped_blocks) == (0, 0)
                assert status.capture == "off"

                stopped = client.request(Stop())
                assert (stopped.session_id, stopped.space, stopped.turns) == (
                    started.session_id, "Atlas", 0)
                assert stopped.gist == "nothing was said"
                with pytest.raises(InvalidInput, match="no session is live"):
                    client.request(Stop())

                first, second = events.receive(10), events.receive(10)
                assert isinstance(first, SessionStarted) and first.space == "Atlas"
                assert isinstance(second, SessionEnded)
                assert (second.session_id, second.space) == (started.session_id, "Atlas")

        await trio.to_thread.run_sync(exchange)
        session = daemon.store.list_sessions()[0]
        assert (session.status, session.title) == ("ended", "planning")


async def test_the_shell_starts_and_stops_sessions(short_home: Path) -> None:
    from click.testing import CliRunner

    from clients.shell import cli

    async with running_daemon():

        def run(*args: str) -> str:
            result = CliRunner().invoke(cli, list(args))
            assert result.exit_code == 0, result.output
            return result.output

        def exchange() -> None:
            assert run("start", "--title", "chat") == (
                "session 1 started: nothing is summarised or remembered — pick a Space for that\n")
            assert run("stop") == "session 1 ended after 0 s, 0 turns: nothing was said\n"
            refused = CliRunner().invoke(cli, ["start", "--activity", "job"])
            assert refused.exit_code != 0
            assert "needs a Space" in str(refused.exception)

        await trio.to_thread.run_sync(exchange)

"""`braincue keep|discard|later`, `history` and `memory ...` against a real daemon (in-process,
scripted models): the shell speaks only the protocol."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from click.testing import CliRunner, Result
from daemonkit import running_daemon
from test_persistence_e2e import ATLAS, Script

from clients.cli.memory import parse_expiry, remember_lines
from clients.cli.output import local_time
from clients.shell import cli
from daemon.app import Daemon
from daemon.config import Config, Paths, Settings, save_settings
from daemon.engines import Engines
from daemon.errors import InvalidInput
from daemon.ipc.client import Client
from daemon.ipc.protocol import History, RememberReply
from daemon.llm.embed import ScriptedEmbedder
from daemon.llm.generate import ScriptedGenerator
from daemon.store.records import NewTurn


@asynccontextmanager
async def scripted_daemon(script: Script) -> AsyncIterator[Daemon]:
    """A daemon with memory on, the scripted embedder and ``script`` as its language model."""
    paths = Paths.resolve("default")
    save_settings(paths, Settings(memory_enabled=True))
    config = Config.load()
    engines = Engines(lambda: config.settings, paths.models_dir,
                      embedder=ScriptedEmbedder(), generator=ScriptedGenerator(script))
    async with running_daemon(engines, config) as daemon:
        yield daemon


async def braincue(*args: str) -> Result:
    def invoke() -> Result:
        return CliRunner().invoke(cli, list(args), catch_exceptions=True)

    return await trio.to_thread.run_sync(invoke)


async def ok(*args: str) -> str:
    result = await braincue(*args)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


async def recorded(daemon: Daemon, space: str | None = None, title: str = "Atlas sync") -> int:
    def record() -> int:
        store = daemon.store
        space_id = None if space is None else store.get_space(space).id
        session = store.create_session(space_id=space_id, title=title)
        store.append_turns(session.id, [NewTurn(speaker=s, text=t, start=5.0 * i)
                                        for i, (s, t) in enumerate(ATLAS)])
        store.end_session(session.id)
        return session.id

    return await daemon.store.run(record)


async def test_keep_review_and_history_from_the_shell(short_home: Path) -> None:
    async with scripted_daemon(Script()) as daemon:
        await daemon.store.run(lambda: daemon.store.create_space("Atlas"))
        session_id = await recorded(daemon)

        out = await ok("keep", str(session_id), "--space", "Atlas")
        assert out.splitlines() == [
            f"session {session_id} kept in Space 'Atlas'",
            "  archive: written",
            "  assertions: 2 new assertions",
            "  stored: 1 commitment, 1 decision",
            "  decided: Atlas launches on March 3rd.",
            "  memories to review: 1 (`braincue memory list --status pending`)",
        ]

        listing = await ok("memory", "list")
        assert "  memory_enabled           on " in listing
        assert "  session_archive_enabled  on " in listing
        assert "\nSpace 'Atlas'\n  ID  STATUS   KIND" in listing
        memory_id = int(re.findall(r"\n  (\d+) +pending +preference", listing)[0])

        assert (await ok("memory", "approve", str(memory_id))).startswith(
            f"memory {memory_id} approved (approved, Space 'Atlas'): Prefers concise")
        assert "profile-wide" in await ok("memory", "scope", str(memory_id), "--profile")
        listing = await ok("memory", "list", "--profile")
        assert "Profile-wide (recalled in every Space)" in listing
        assert "Space 'Atlas'" not in listing
        assert "edited" in await ok("memory", "edit", str(memory_id), "Prefers short notes.")
        assert "expires" in await ok("memory", "expire", str(memory_id), "30d")
        assert "never expires" in await ok("memory", "expire", str(memory_id), "never")
        assert "(archived," in await ok("memory", "archive", str(memory_id))
        assert "(rejected," in await ok("memory", "reject", str(memory_id))
        assert "no memories" in await ok("memory", "list", "--status", "approved")

        decision = await daemon.store.run(lambda: next(
            a for a in daemon.store.list_assertions() if a.kind == "decision"))
        history = (await ok("history", str(decision.id))).splitlines()
        assert history[0].startswith(f"{decision.id}  ")
        assert history[0].endswith("decision  [Atlas; current]")
        assert history[1:4] == ["    Atlas launches on March 3rd.", "    chosen: March 3rd",
                                "    over: February"]
        assert not any("also said in" in line for line in history)

        # the same decision said again in a later call: one assertion, where it was confirmed
        again = await recorded(daemon, "Atlas", title="Atlas check-in")
        out = await ok("keep", str(again))
        assert "  assertions: 0 new assertions, 2 already known (2 noted as said again here)" \
            in out.splitlines()
        said = await daemon.store.run(lambda: daemon.store.restatements([decision.id]))
        history = (await ok("history", str(decision.id))).splitlines()
        assert history[-1] == (f"    also said in: Atlas check-in · "
                               f"{local_time(said[0].occurred_at)} (session {again})")
        assert history[-2] == f"    source: extracted, session {session_id}"
        reply = await trio.to_thread.run_sync(
            lambda: Client().request(History(assertion_id=decision.id)))
        assert [(r.assertion_id, r.session_id, r.session_title) for r in reply.restatements] == [
            (decision.id, again, "Atlas check-in")]
        await ok("keep", str(again))  # keeping it twice records nothing twice
        assert (await ok("history", str(decision.id))).count("also said in") == 1

        settings = await ok("settings", "get")
        assert ("what is remembered (two independent switches):\n"
                "  session_archive_enabled  on   what a kept conversation WAS") in settings
        assert "\n  memory_enabled           on   standing claims about YOU" in settings

        not_a_memory = await braincue("memory", "approve", str(decision.id))
        assert "is not a memory about you" in str(not_a_memory.exception)


async def test_no_space_later_and_discard_from_the_shell(short_home: Path) -> None:
    async with scripted_daemon(Script()) as daemon:
        session_id = await recorded(daemon)
        out = await ok("keep", str(session_id))
        assert out.splitlines()[0] == f"session {session_id} kept in no Space"
        assert "note: no Space: nothing was summarised or remembered" in out

        assert (await ok("later", str(session_id))).startswith(
            f"session {session_id} left undecided in no Space")

        both = await braincue("keep", str(session_id), "--space", "X", "--no-space")
        assert both.exit_code == 2 and "not both" in both.output

        refused = await braincue("discard", str(session_id))  # asks first; no answer: abort
        assert refused.exit_code == 1 and "Delete session" in refused.output
        out = await ok("discard", str(session_id), "--yes")
        assert out.startswith(f"session {session_id} discarded: deleted 1 session, 3 turns")

        missing = await braincue("keep", str(session_id))
        assert f"no session {session_id}" in str(missing.exception)


def test_remember_lines_say_what_was_superseded_and_redacted() -> None:
    reply = RememberReply(session_id=3, answer="keep", status="kept", space="Atlas",
                          archived=True, assertions=3, superseded=1, duplicates=2, restated=1,
                          candidates=0, redactions=1, notes=["memory is off"])
    assert remember_lines(reply) == [
        "session 3 kept in Space 'Atlas'",
        "  archive: written",
        "  assertions: 3 new assertions (1 replacing an earlier one), 2 already known"
        " (1 noted as said again here)",
        "  memories to review: 0",
        "  redacted: 1 secret",
        "note: memory is off",
    ]


def test_expiry_is_a_duration_a_date_or_never() -> None:
    assert parse_expiry("never", 100.0) is None
    assert parse_expiry("30d", 100.0) == 100.0 + 30 * 86400
    assert parse_expiry(" 12h ", 0.0) == 12 * 3600
    end_of_day = parse_expiry("2026-12-31", 0.0)
    assert end_of_day is not None
    assert dt.datetime.fromtimestamp(end_of_day) == dt.datetime(2027, 1, 1)
    with pytest.raises(InvalidInput, match="cannot read 'soon'"):
        parse_expiry("soon", 0.0)

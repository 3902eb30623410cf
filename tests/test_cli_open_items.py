"""`braincue open|done|drop`, the items `braincue start` carries forward and the CarriedForward
event, against a real daemon (in-process, scripted models) over its real sockets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from test_cli_memory import braincue, ok, recorded, scripted_daemon
from test_persistence_e2e import COMMITMENT, Script

from clients.cli.items import carried_lines, item_rows
from clients.cli.memory import history_lines
from daemon.errors import InvalidInput
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    TOPIC_SESSIONS,
    AssertionInfo,
    CarriedForward,
    ClosureInfo,
    History,
    ItemInfo,
    OpenItems,
    SelectItems,
    SessionStarted,
    Start,
    Stop,
)


async def test_open_done_and_carried_forward_from_the_shell(short_home: Path) -> None:
    async with scripted_daemon(Script()) as daemon:
        await ok("spaces", "add", "Atlas")
        await ok("spaces", "add", "Beta")
        session = await recorded(daemon, "Atlas")
        await ok("keep", str(session))

        listed = await ok("open", "--space", "Atlas")
        assert listed.splitlines()[0] == "1 open item in Atlas"
        assert "Priya" in listed and "Friday" in listed and "Atlas sync ·" in listed
        (item,) = json.loads(await ok("open", "--json"))
        assert (item["owner"], item["text"], item["status"], item["space"]) == (
            "Priya", COMMITMENT["text"], "open", "Atlas")
        assert await ok("open", "--space", "Beta") == "nothing open in Beta\n"
        assert await ok("open", "--owner", "Tom") == "nothing open\n"

        def start_and_listen(space: str) -> tuple[str, list[object]]:
            client = Client(timeout=30)
            with client.subscribe([TOPIC_SESSIONS]) as events:
                started = client.request(Start(space=space, title="next"))
                first = events.receive(10)
                assert isinstance(first, SessionStarted)
                seen: list[object] = [first]
                if started.carried:
                    seen.append(events.receive(10))
                client.request(Stop())
            return started.carried_message, seen

        message, events = await trio.to_thread.run_sync(start_and_listen, "Atlas")
        assert message == "1 open from last time"
        carried = events[1]
        assert isinstance(carried, CarriedForward)
        assert (carried.space, carried.message) == ("Atlas", "1 open from last time")
        assert [i.id for i in carried.items] == [item["id"]]
        assert await trio.to_thread.run_sync(
            lambda: Client().request(OpenItems(space="Beta")).items) == []
        # Beta inherits nothing of Atlas's
        message, events = await trio.to_thread.run_sync(start_and_listen, "Beta")
        assert message == "" and len(events) == 1

        # the shell prints it when it starts a session
        started = await ok("start", "--space", "Atlas")
        assert "1 open from last time:" in started and COMMITMENT["text"] in started
        await ok("stop")

        closed = await ok("done", str(item["id"]))
        assert closed.startswith(f"{item['id']} done: {COMMITMENT['text']}")
        assert await ok("open", "--space", "Atlas") == "nothing open in Atlas\n"
        history = await ok("history", str(item["id"]))
        assert "    done by hand" in history
        reply = await trio.to_thread.run_sync(
            lambda: Client().request(History(assertion_id=item["id"])))
        assert [c.status for c in reply.closures] == ["done"]
        again = await braincue("drop", str(item["id"]))
        assert "no longer current" in str(again.exception)
        started = await ok("start", "--space", "Atlas")
        assert "open from last time" not in started
        await ok("stop")

        # the selection the MCP tools use: Priya's, as committed, with its status now
        def select() -> list[ItemInfo]:
            client = Client()
            with pytest.raises(InvalidInput, match="names no period"):
                client.request(SelectItems(space="Atlas", period="whenever"))
            return client.request(SelectItems(space="Atlas", owner="priya")).items

        (selected,) = await trio.to_thread.run_sync(select)
        assert (selected.id, selected.status, selected.closed_by is not None) == (
            item["id"], "done", True)


def test_history_says_what_closed_an_item_and_the_turn() -> None:
    def version(id_: int, text: str, **fields: Any) -> AssertionInfo:
        return AssertionInfo(id=id_, kind="commitment", text=text, about_person=False,
                             review_status="approved", space_id=1, space="Atlas",
                             occurred_at=0.0, recorded_at=0.0, owner="Priya", **fields)

    chain = [version(2, "Priya will send the budget.", source="extracted", session_id=1,
                     invalidated_at=3600.0, superseded_by=5),
             version(5, "Priya sent the budget.", source="extracted", session_id=4)]
    closure = ClosureInfo(assertion_id=5, status="done", evidence_turn_id=40, speaker="Dana",
                          text="Priya sent the budget yesterday.")
    lines = history_lines(chain, (), [closure])
    assert lines[lines.index("    Priya sent the budget.") + 3] == (
        "    done: Dana: “Priya sent the budget yesterday.”")
    assert not any(line.startswith("    done") for line in history_lines(chain))


def test_what_the_shell_prints_for_open_items() -> None:
    info = ItemInfo(id=7, kind="task", text="Send the deck.", occurred_at=0.0, status="open",
                    owner=None, due=None, space=None, session_title="")
    assert item_rows([info], spaces=True)[1][:4] == ("7", "-", "Send the deck.", "-")
    assert item_rows([info], spaces=True)[1][5] == "profile-wide"
    assert carried_lines("", [info]) == []
    lines = carried_lines("1 open from last time", [info])
    assert lines[0] == "1 open from last time:" and lines[1].startswith("  7  -: Send the deck.")

"""`braincue mcp` spawned by the official MCP client over stdio, against a running daemon."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from askkit import FACT_TITLE, SPACE, import_kept_sessions
from mcp.client.client import Client as McpClient
from mcp.client.stdio import StdioServerParameters
from mcp_types import TextContent

from daemon.ipc.client import Client
from daemon.ipc.protocol import ListAssertions
from daemon.ipc.testing import DaemonProcess, start_daemon

BRAINCUE = Path(sys.executable).parent / "braincue"
TOOLS = {"search", "ask", "list_sessions", "get_transcript", "open_commitments", "decisions"}


@pytest.fixture
def daemon(short_home: Path) -> Iterator[DaemonProcess]:
    started = start_daemon(short_home)
    yield started
    started.stop()


def server(home: Path) -> StdioServerParameters:
    env = {"BRAINCUE_HOME": str(home), "BRAINCUE_MODELS": os.environ["BRAINCUE_MODELS"]}
    if "PYTHONPATH" in os.environ:  # the code under test, where it is not the installed one
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return StdioServerParameters(command=str(BRAINCUE), args=["mcp"], env=env)


def text(result: object) -> str:
    content = result.content  # type: ignore[attr-defined]
    assert len(content) == 1 and isinstance(content[0], TextContent)
    return content[0].text


async def test_an_mcp_client_lists_the_tools_and_searches_and_asks(
    daemon: DaemonProcess,
) -> None:
    with Client(timeout=60) as client:
        ids = import_kept_sessions(client)
        assert client.request(ListAssertions(space=SPACE)).assertions == []

    async with McpClient(server(daemon.home)) as mcp:
        tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
        assert set(tools) == TOOLS
        assert all(t.annotations is not None and t.annotations.read_only_hint
                   for t in tools.values())
        assert tools["search"].input_schema["required"] == ["query"]

        found = await mcp.call_tool("search", {"query": "Orion server budget", "space": SPACE})
        assert not found.is_error
        results = json.loads(text(found))
        assert results[0]["title"] == FACT_TITLE
        assert "48,000 euros" in results[0]["text"]

        # nothing kept is about this: the answer says so (and no model is needed for it)
        asked = await mcp.call_tool("ask", {"question": "Who won the chess tournament?",
                                            "space": SPACE})
        answer = json.loads(text(asked))
        assert answer["nothing_found"] and answer["answer"].startswith("I don't know")
        assert asked.structured_content == answer and answer["declined"]
        assert answer["evidence"] == []

        sessions = json.loads(text(await mcp.call_tool("list_sessions", {"space": SPACE})))
        assert {s["title"] for s in sessions} == set(ids)
        transcript = json.loads(text(await mcp.call_tool(
            "get_transcript", {"session_id": ids[FACT_TITLE]})))
        assert transcript["turns"][2] == {
            "speaker": "Tom", "start": 20.0,
            "text": "The Orion server budget is 48,000 euros for this year."}
        assert json.loads(text(await mcp.call_tool("open_commitments", {"space": SPACE}))) == []

        missing = await mcp.call_tool("search", {"query": "budget", "space": "Nowhere"})
        assert missing.is_error and "Nowhere" in text(missing)


async def test_mcp_ask_returns_what_memory_holds_as_structured_content(
    short_home: Path, installed_model: Callable[[str], Path],
) -> None:
    installed_model("qwen2.5-coder-0.5b")  # fails, never skips, when it is missing
    installed_model("all-minilm-l6-v2")
    daemon = start_daemon(short_home)
    try:
        with Client(timeout=60) as client:
            import_kept_sessions(client)
        async with McpClient(server(daemon.home)) as mcp:
            asked = await mcp.call_tool("ask", {"question": "What is the Orion server budget?",
                                                "space": SPACE})
    finally:
        daemon.stop()
    assert not asked.is_error
    held = asked.structured_content
    assert held is not None and held == json.loads(text(asked))
    (orion,) = [e for e in held["evidence"]
                if e["text"] == "The Orion server budget is 48,000 euros for this year."]
    assert (orion["title"], orion["speaker"], orion["start"]) == (FACT_TITLE, "Tom", 20.0)
    assert "48,000" in held["answer"] and f"[{orion['n']}]" in held["answer"]

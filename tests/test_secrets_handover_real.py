"""A handover meeting full of credentials said the way people say them, kept with the real
default models and read back through every way words leave the store: `braincue search --json`,
`braincue ask` (its sources, its answer and the tokens it streamed), the MCP tools, the archive,
the assertions and memory candidates, `braincue open`. No value may be readable in any of them;
`braincue show` keeps the words as said and marks the turns that hold one.

The same meeting holds one decision and two commitments: masking the credentials beside them
must not cost them — the decision is stored with its chosen option, the alternative and the
reason, and both commitments with their owner and due date.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client as McpClient
from mcp.client.stdio import StdioServerParameters
from mcp_types import TextContent

from clients.cli.ask import stream_answer
from daemon.ipc.protocol import Ask
from daemon.ipc.testing import start_daemon

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

BRAINCUE = Path(sys.executable).parent / "braincue"
SPACE = "Handover"

LOGIN = "Juniper-Falcon-8362"
GITHUB = "ghp_R4nT8wQ2zL6xV9kM3pJ7cY1bH5dF0sG2aE4u"
DOOR = "5829-1047"
PIN_SAID = "Three one eight four"
SIGN_IN = "Marble!Tide73"
CLOUD = "AKIAQ3WZ7RX2PL9TNV4K"
CHAT_BOT = "xoxb-5183920475-2847561930-Qm7Rk2Lw9Zx4Tv8Np3Bc6Jd1"
DECISION = ("We'll go with the blue-green deploy instead of the rolling one because the rollback "
            "is instant.")
COMMITMENTS = ("I'll rotate the deploy bot token by Friday.",
               "And I'll send you the on-call schedule by Friday.")

MEETING = [
    ("Dana", "Thanks for taking over release duty while I'm away. Let me walk you through "
             "the access you'll need."),
    ("Dana", f"For the build server, log in as relmgr with {LOGIN}."),
    ("me", "Got it. What about the deploy bot?"),
    ("Dana", f"The token for the deploy bot is {GITHUB}."),
    ("me", "Okay. And the door code?"),
    ("Dana", f"It's {DOOR}, the keypad by the loading dock."),
    ("me", "What's the PIN for the alarm panel?"),
    ("Dana", f"{PIN_SAID}, then the green key."),
    ("Dana", f"For the monitoring dashboard, sign in as oncall@northwind.example, using {SIGN_IN}."),
    ("Dana", f"The backup bucket uses the cloud key {CLOUD}, and the chat bot posts with "
             f"{CHAT_BOT}."),
    ("Dana", DECISION),
    ("me", COMMITMENTS[0]),
    ("Dana", COMMITMENTS[1]),
]

# each value as it could be read back: letters and digits without separators, any case
# (canonical), and digit groups standing alone (a digit group inside a longer number, a
# timestamp say, is not the value)
WORDS = ["juniperfalcon", "falcon8362", GITHUB[4:].lower(), "threeoneeightfour",
         "marbletide", "tide73", CLOUD.lower(), "qm7rk2lw9zx4tv8np3bc6jd1", "5183920475"]
DIGITS = ["8362", "5829", "1047", "3184", "58291047"]


def leaks(text: str) -> list[str]:
    flat = re.sub(r"[^a-z0-9]", "", text.lower())
    found = [w for w in WORDS if w in flat]
    for spaced in (text, re.sub(r"[\s-]", "", text)):
        found += [d for d in DIGITS if d not in found
                  and re.search(rf"(?<![0-9]){d}(?![0-9])", spaced)]
    return found


def braincue(*args: str) -> Any:
    done = subprocess.run([str(BRAINCUE), *args], capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def stored_items(shown: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The assertions keep stored, by kind."""
    items: dict[str, list[dict[str, Any]]] = {}
    for a in shown.get("assertions", []):
        items.setdefault(a["kind"], []).append(a)
    return items


def mcp_text(result: Any) -> str:
    (content,) = result.content
    assert isinstance(content, TextContent) and not result.is_error, content
    return content.text


@pytest.fixture
def home(small_models_home: Path) -> Path:
    return small_models_home


async def test_no_credential_of_the_handover_is_readable_anywhere(
        home: Path, installed_model: Callable[[str], Path]) -> None:
    installed_model("qwen2.5-coder-0.5b")
    installed_model("all-minilm-l6-v2")
    # the check can fail: it reads every value in the meeting (the PIN's digits only if a model
    # wrote them as digits)
    assert sorted(leaks(json.dumps(MEETING))) == sorted([*WORDS, *DIGITS[:3], DIGITS[4]])
    path = home / "handover.json"
    path.write_text(json.dumps({
        "title": "Release duty handover", "started_at": "2026-11-30T10:00:00",
        "participants": ["me", "Dana"],
        "turns": [{"speaker": s, "text": t, "t": 8.0 * i} for i, (s, t) in enumerate(MEETING)]}))
    daemon = start_daemon(home, timeout=120)
    try:
        subprocess.run([str(BRAINCUE), "spaces", "add", SPACE, "--activity", "meeting"],
                       check=True, capture_output=True, timeout=120)
        imported = braincue("import-transcript", str(path), "--space", SPACE, "--json")
        session_id = imported["session"]["id"]
        kept = braincue("keep", str(session_id), "--json")
        shown = braincue("show", str(session_id), "--json")
        out: dict[str, Any] = {
            "searches": [braincue("search", "--json", "--space", SPACE, "-k", "10", *q.split())
                         for q in ("build server login", "deploy bot token", "door code keypad",
                                   "alarm panel PIN", "monitoring dashboard sign in",
                                   "backup bucket cloud key", "chat bot", "Juniper Falcon",
                                   CLOUD)],
            "answers": [braincue("ask", "--json", "--space", SPACE, q)
                        for q in ("What is the door code?", "How do I log in to the build "
                                  "server?", "What is the deploy bot's token?",
                                  "What is the PIN for the alarm panel?")],
            "open": braincue("open", "--json", "--space", SPACE),
            "memory": braincue("memory", "list", "--json"),
            "archive": shown.get("archive"),
            "assertions": shown.get("assertions"),
        }
        streamed: list[str] = []
        out["streamed answer"] = stream_answer("default", Ask(
            id=uuid.uuid4().hex, question="Which credentials did Dana hand over?",
            space=SPACE), streamed.append).answer
        out["streamed tokens"] = "".join(streamed)
        env = {"BRAINCUE_HOME": str(home), "BRAINCUE_MODELS": os.environ["BRAINCUE_MODELS"],
               "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
        async with McpClient(StdioServerParameters(command=str(BRAINCUE), args=["mcp"],
                                                   env=env)) as mcp:
            out["mcp"] = [
                mcp_text(await mcp.call_tool("search", {"query": q, "space": SPACE}))
                for q in ("deploy bot token", "door code", "cloud key")
            ] + [
                mcp_text(await mcp.call_tool("ask", {"question": "What is the door code?",
                                                    "space": SPACE})),
                mcp_text(await mcp.call_tool("get_transcript", {"session_id": session_id})),
                mcp_text(await mcp.call_tool("open_commitments", {"space": SPACE})),
                mcp_text(await mcp.call_tool("decisions", {"space": SPACE})),
            ]
    finally:
        assert daemon.stop(signal.SIGTERM) == 0, daemon.log()
    everything = json.dumps(out)
    print("kept:", kept)
    print("archive:", out["archive"])
    print("stored items:", stored_items(shown))
    for reply in out["answers"]:
        print("answer:", reply["answer"])
    print("streamed:", out["streamed tokens"])
    assert everything.count("[redacted") >= 7, everything[:3000]
    assert leaks(everything) == [], everything
    # a marker the model copied from a source is left whole, not masked again
    assert re.findall(r"\[redacted [a-z ]+\] [a-z]+\]", everything) == []
    # the decision and both commitments are stored beside the masked credentials
    items = stored_items(shown)
    (decision,) = items["decision"]
    assert "blue-green" in decision["chosen"], decision
    assert ["rolling" in alt for alt in decision["alternatives"]] == [True], decision
    assert "rollback is instant" in (decision["reasoning"] or ""), decision
    commitments = {(c["owner"], c["due"]): c["text"] for c in items["commitment"]}
    assert sorted(commitments) == [("Dana", "by Friday"), ("me", "by Friday")], commitments
    assert "token" in commitments[("me", "by Friday")], commitments
    assert "on-call schedule" in commitments[("Dana", "by Friday")], commitments
    # show keeps the words as said (behind the encryption) and marks them
    turns = shown["turns"]
    said = [t for t in turns if leaks(t["text"])]
    assert len(said) == 6  # seven credentials, two of them in one turn
    assert all(t["masked"] and not leaks(t["masked"]) for t in said)
    assert [t for t in turns if not leaks(t["text"]) and t.get("masked")] == []

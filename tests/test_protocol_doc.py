"""``docs/protocol.md`` is generated from the message types and must name exactly them.

Regenerate the page after changing a message type:

    PYTHONPATH=$PWD .venv/bin/python tests/test_protocol_doc.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import msgspec

from daemon.ipc import protocol

PAGE = Path(__file__).resolve().parent.parent / "docs" / "protocol.md"
REGENERATE = "PYTHONPATH=$PWD .venv/bin/python tests/test_protocol_doc.py"
COMMON_REQUEST_FIELDS = {"v", "id"}

INTRO = """\
# The protocol

Every message between the daemon and its clients, generated from the message types of
`daemon/ipc/protocol/` by `{regenerate}`
(`tests/test_protocol_doc.py` fails when this page and the code differ).

Each message is one msgpack map tagged by `type` (the snake-case class name). A request goes to
the daemon's ROUTER socket as the frames `[b"", payload]` and carries the protocol version `v`
(now {version}) and an id `id` that its reply echoes; a failed request gets an `error` reply
with a `code` ({codes}, or the code of the daemon's error class). Events come from the XPUB
socket as `[topic, payload]`; topics end with `/` so that none is a prefix of another:
{topics}. A frame is at most {max_frame:,} bytes.
"""


def type_name(t: Any) -> str:
    """A field type as the code spells it, without module prefixes."""
    text = t.__name__ if isinstance(t, type) and not getattr(t, "__args__", None) else repr(t)
    text = re.sub(r"\b(?:[a-z_][a-z0-9_]*\.)+([A-Za-z_][A-Za-z0-9_]*)", r"\1", text)
    text = " | ".join(part.strip() for part in text.replace("NoneType", "None").split("|"))
    return text.replace("|", "\\|")  # inside a table cell


def fields_of(cls: type[msgspec.Struct], skip: set[str]) -> str:
    parts = [
        f"`{f.name}: {type_name(f.type)}`"
        for f in msgspec.structs.fields(cls)
        if f.name not in skip
    ]
    return ", ".join(parts) or "—"


def summary(cls: type) -> str:
    doc = cls.__dict__.get("__doc__") or ""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    return first.replace("|", "\\|")


def the_protocols(family: Any) -> list[tuple[str, Any]]:
    """The family's message types that the protocol module defines, by tag: tests register
    probes of their own into the same families, and those are not the protocol."""
    return sorted((tag, cls) for tag, cls in family.types.items()
                  if cls.__module__.startswith(f"{protocol.__name__}."))


def render() -> str:
    topics = ", ".join(
        f"`{value}`" for name, value in vars(protocol.base).items() if name.startswith("TOPIC_")
    )
    codes = ", ".join(
        f"`{getattr(protocol, name)}`"
        for name in ("BAD_REQUEST", "UNKNOWN_TYPE", "VERSION", "TOO_LARGE", "INTERNAL",
                     "UNAVAILABLE")
    )
    lines = [
        INTRO.format(regenerate=REGENERATE, version=protocol.PROTOCOL_VERSION, codes=codes,
                     topics=topics, max_frame=protocol.MAX_FRAME_BYTES),
        "## Requests",
        "",
        "Besides `v` and `id`, which every request carries.",
        "",
        "| type | fields | reply | what it asks |",
        "| --- | --- | --- | --- |",
    ]
    for tag, cls in the_protocols(protocol.REQUESTS):
        reply = protocol.tag_of(cls.reply_type)
        lines.append(f"| `{tag}` | {fields_of(cls, COMMON_REQUEST_FIELDS)} | `{reply}` | "
                     f"{summary(cls)} |")
    for title, family in (("Replies", protocol.REPLIES), ("Events", protocol.EVENTS)):
        lines += ["", f"## {title}", "", "| type | fields | what it says |", "| --- | --- | --- |"]
        for tag, reply_cls in the_protocols(family):
            lines.append(f"| `{tag}` | {fields_of(reply_cls, set())} | {summary(reply_cls)} |")
    return "\n".join(lines) + "\n"


def every_type() -> set[str]:
    return {tag for family in (protocol.REQUESTS, protocol.REPLIES, protocol.EVENTS)
            for tag, _ in the_protocols(family)}


def named_on_page(text: str) -> set[str]:
    return set(re.findall(r"^\| `([a-z0-9_]+)` \|", text, flags=re.MULTILINE))


def test_the_page_names_every_message_type_and_no_other() -> None:
    named = named_on_page(PAGE.read_text(encoding="utf-8"))
    missing, unknown = every_type() - named, named - every_type()
    assert not missing, f"not on docs/protocol.md: {sorted(missing)}; run {REGENERATE}"
    assert not unknown, f"no such message type: {sorted(unknown)}; run {REGENERATE}"


def test_the_page_is_generated_from_the_code() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), f"docs/protocol.md is stale: {REGENERATE}"


def test_a_missing_or_invented_type_is_caught() -> None:
    page = render()
    assert named_on_page(page) == every_type()
    without_ping = page.replace("| `ping` |", "| ping |")
    assert "ping" in every_type() - named_on_page(without_ping)
    invented = page + "| `no_such_message` | — | — |\n"
    assert named_on_page(invented) - every_type() == {"no_such_message"}


if __name__ == "__main__":
    PAGE.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {PAGE} ({len(every_type())} message types)\n")

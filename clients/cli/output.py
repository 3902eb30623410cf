"""How the shell prints: aligned tables, JSON, local times, counts (pure but for ``echo``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import click
import msgspec

from daemon.errors import InvalidInput
from daemon.ipc.protocol import MAX_CONTENT_BYTES, Citation, EvidenceInfo

T = TypeVar("T")


def table(rows: Sequence[Sequence[str]]) -> None:
    """Print rows (the first is the heading) in columns as wide as their widest cell."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def as_json(value: object) -> str:
    return msgspec.json.format(msgspec.json.encode(value), indent=2).decode()


def echo_json(value: object) -> None:
    click.echo(as_json(value))


def echo_reply(reply: T, lines: Callable[[T], list[str]], as_json: bool) -> None:
    """Print a daemon's reply: as JSON, or as the lines ``lines`` makes of it."""
    if as_json:
        echo_json(reply)
    else:
        click.echo("\n".join(lines(reply)))


def echo_listing(found: Sequence[T], as_json: bool, empty: str, header: tuple[str, ...],
                 row: Callable[[T], tuple[str, ...]]) -> None:
    """Print a list the daemon gave: as JSON, ``empty`` when there is nothing, else a table of
    ``header`` and one ``row`` per item."""
    if as_json:
        echo_json(found)
    elif not found:
        click.echo(empty)
    else:
        table([header, *(row(item) for item in found)])


def local_time(timestamp: float) -> str:
    return f"{dt.datetime.fromtimestamp(timestamp):%Y-%m-%d %H:%M}"


def offset(seconds: float) -> str:
    """A time within a session: ``mm:ss`` under an hour, ``h:mm:ss`` from there on."""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def duration(seconds: float) -> str:
    """``42 s``, ``12 min``, ``1 h 05 min``."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def deleted(what: str, counts: dict[str, int]) -> str:
    """``deleted Space 'Work' (1 space, 3 sessions, ...)`` from counts by plural kind."""
    parts = [plural(n, kind.removesuffix("s")) for kind, n in counts.items() if n]
    return f"deleted {what}" + (f" ({', '.join(parts)})" if parts else "")


def read_for_daemon(file: Path, fix_if_too_big: str) -> bytes:
    """The bytes of ``file``, to send to the daemon in one request (which has a size limit)."""
    try:
        size = file.stat().st_size
        if size > MAX_CONTENT_BYTES:
            raise InvalidInput(
                f"{file} is {size / 2**20:.1f} MiB, over the {MAX_CONTENT_BYTES / 2**20:.1f} MiB "
                "a file sent to the daemon may have",
                fix=fix_if_too_big,
            )
        return file.read_bytes()
    except OSError as e:
        raise InvalidInput(f"cannot read {file}: {e.strerror or e}",
                           fix="check the path and its permissions") from e


def source_line(citation: Citation) -> str:
    """``[1] Weekly sync · 2026-07-28 · them: “we ship Friday”`` (unverified quotes marked)."""
    parts = [f"[{citation.n}] {citation.title or 'untitled'}"]
    if citation.date:
        parts.append(f"{dt.datetime.fromtimestamp(citation.date):%Y-%m-%d}")
    if citation.quote:
        speaker = f"{citation.speaker}: " if citation.speaker else ""
        mark = "" if citation.verified else " (not found verbatim)"
        parts.append(f"{speaker}“{citation.quote}”{mark}")
    elif citation.speaker:
        parts.append(citation.speaker)
    return " · ".join(parts)


EVIDENCE_HEADING = "What memory holds"


def evidence_line(evidence: EvidenceInfo) -> str:
    """``[1] Weekly sync · 2026-07-28 · them at 12:05: “we ship Friday”``; a structured item
    with what it holds (``[2] decision · Weekly sync · 2026-07-28: Ship Friday (chosen: …)``)."""
    kind = evidence.item_kind + (f" ({evidence.status})" if evidence.status else "")
    parts = [f"[{evidence.n}] " + " · ".join(p for p in (kind, evidence.title or "untitled") if p)]
    if evidence.date:
        parts.append(f"{dt.datetime.fromtimestamp(evidence.date):%Y-%m-%d}")
    if evidence.item_kind:
        facts = [f"chosen: {evidence.chosen}" if evidence.chosen else "",
                 "over: " + "; ".join(evidence.alternatives) if evidence.alternatives else "",
                 f"why: {evidence.reasoning}" if evidence.reasoning else "",
                 f"owner: {evidence.owner}" if evidence.owner else "",
                 f"due: {evidence.due}" if evidence.due else ""]
        held = "; ".join(f for f in facts if f)
        return " · ".join(parts) + f": {evidence.text}" + (f" ({held})" if held else "")
    who = evidence.speaker
    if evidence.start is not None:
        who = f"{who} at {offset(evidence.start)}".strip()
    return " · ".join([*parts, who] if who else parts) + f": “{evidence.text}”"


def evidence_block(evidence: Sequence[EvidenceInfo]) -> str:
    """What memory holds, as shown before the answer (one line each); none: it says so."""
    if not evidence:
        return f"{EVIDENCE_HEADING}: nothing that shares a word with the question.\n"
    return "\n".join([f"{EVIDENCE_HEADING}:", *(f"  {evidence_line(e)}" for e in evidence)]) \
        + "\n"

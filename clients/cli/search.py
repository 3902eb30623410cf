"""`braincue search QUERY`: fusion search over what the daemon holds (protocol only)."""

from __future__ import annotations

import datetime as dt
import textwrap

import click

from clients.cli.context import Context
from clients.cli.output import echo_json, local_time
from daemon.ipc.protocol import Search, SearchExplain, SearchHit

SEARCH_TIMEOUT_S = 60.0  # the first search may wait for the embedding model to load
DATE_FORMATS = ["%Y-%m-%d", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S"]
SHOWN_CHARS = 400


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option("--space", metavar="NAME", default=None,
              help="Search this Space (and profile-wide memory); default: profile-wide memory.")
@click.option("-k", "k", type=click.IntRange(1, 100), default=None,
              help="How many results (default: the search_k setting).")
@click.option("--as-of", "as_of", type=click.DateTime(DATE_FORMATS), default=None,
              help="What was believed then, local time; nothing said later is found.")
@click.option("--explain", is_flag=True,
              help="Show each result's fused score and every leg's rank and raw score.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def search(context: Context, query: tuple[str, ...], space: str | None, k: int | None,
           as_of: dt.datetime | None, explain: bool, as_json: bool) -> None:
    """Find what was said, decided or written about QUERY."""
    request = Search(query=" ".join(query), k=k, space=space, explain=explain,
                     as_of=None if as_of is None else as_of.timestamp())
    results = context.request(request, timeout=SEARCH_TIMEOUT_S).results
    if as_json:
        echo_json(results)
        return
    if not results:
        click.echo("nothing found")
        return
    for n, hit in enumerate(results, start=1):
        if n > 1:
            click.echo()
        for line in hit_lines(n, hit):
            click.echo(line)


def hit_lines(n: int, hit: SearchHit) -> list[str]:
    """How ``search`` shows one result."""
    where = [hit.title or "(untitled)", local_time(hit.date)]
    if hit.speakers:
        where.append(", ".join(hit.speakers))
    if hit.session_id is not None:
        where.append(f"session {hit.session_id}")
    if hit.document_id is not None:
        where.append(f"document {hit.document_id}")
    lines = [f"{n}. [{hit.kind}] " + " · ".join(where)]
    body = hit.text.split("\n", 1)[1] if hit.item == "chunk" and "\n" in hit.text else hit.text
    lines += _indented(body)
    if hit.anchor is not None:
        lines.append("   said:")
        lines += _indented(hit.anchor.text.split("\n", 1)[-1], "     ")
    lines += [f"   + {a.kind}: {a.text}" for a in hit.assertions]
    if hit.refs:
        lines.append("   refs: " + ", ".join(hit.refs))
    if hit.explain is not None:
        lines.append("   " + explanation(hit.explain))
    return lines


def explanation(why: SearchExplain) -> str:
    legs = ", ".join(f"{leg} #{h.rank} ({h.score:.3f})" for leg, h in why.legs.items())
    bonus = f" incl. recency {why.bonus:.4f}" if why.bonus else ""
    return f"score {why.score:.4f}{bonus}: {legs}"


def _indented(text: str, prefix: str = "   ") -> list[str]:
    text = " ".join(text.split())
    if len(text) > SHOWN_CHARS:
        text = text[: SHOWN_CHARS - 1] + "…"
    return textwrap.wrap(text, width=96, initial_indent=prefix, subsequent_indent=prefix)


COMMANDS = (search,)

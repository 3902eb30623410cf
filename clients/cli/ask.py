"""Asking from the shell: `braincue ask [QUESTION]`, and `braincue mcp` for other tools.

Both only speak the protocol: the daemon recalls, generates and checks the answer.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import threading
import uuid
from collections.abc import Callable
from typing import IO

import click
import msgspec

from clients.cli.context import Context
from clients.cli.output import evidence_block, source_line
from daemon.errors import NotFound
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    AnswerDone,
    AnswerEvidence,
    AnswerToken,
    Ask,
    AskCancel,
    AskReply,
    EvidenceInfo,
    answer_topic,
)

ASK_TIMEOUT_S = 300.0  # a long answer on a slow machine; its tokens show progress meanwhile
POLL_S = 0.2


def stream_answer(profile: str, request: Ask, on_token: Callable[[str], None],
                  on_evidence: Callable[[list[EvidenceInfo]], None] = lambda evidence: None
                  ) -> AskReply:
    """Send ``request`` from a thread and hand what memory holds to ``on_evidence`` (first,
    before the model writes), then its tokens to ``on_token`` as they come; the answer stops
    (AskCancel) when this is interrupted."""
    outcome: list[AskReply | BaseException] = []

    def send() -> None:
        try:
            with Client(profile) as client:
                outcome.append(client.request(request, timeout=ASK_TIMEOUT_S))
        except BaseException as e:  # handed to the main thread
            outcome.append(e)

    with Client(profile) as client, client.subscribe([answer_topic(request.id)]) as events:
        sender = threading.Thread(target=send, name="ask-request", daemon=True)
        sender.start()
        try:
            done = False
            while sender.is_alive() or not done:
                event = events.receive(POLL_S)
                if isinstance(event, AnswerEvidence) and not done:
                    on_evidence(event.evidence)
                elif isinstance(event, AnswerToken) and not done:
                    on_token(event.token)
                elif isinstance(event, AnswerDone):
                    done = True
                elif event is None and not sender.is_alive():
                    break  # an error reply: no AnswerDone will come
        except KeyboardInterrupt:
            _cancel(client, request.id)
            raise
        sender.join()
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


def _cancel(client: Client, request_id: str) -> None:
    with contextlib.suppress(NotFound):  # it had finished
        client.request(AskCancel(request_id=request_id))


class AnswerView:
    """What memory holds, shown at once (on a terminal and elsewhere), then the answer shown
    once. On a terminal the tokens show as they stream, and the checked answer replaces them in
    place when it differs (a sentence no source supports dropped, a quote marked, a citation
    dropped or added); elsewhere (a pipe, a file) only the checked answer is written."""

    ERASE_BELOW = "\x1b[J"

    def __init__(self, out: IO[str], *, terminal: bool | None = None,
                 width: int | None = None) -> None:
        self.out = out
        self.terminal = out.isatty() if terminal is None else terminal
        self.width = width
        self.streamed: list[str] = []

    def evidence(self, evidence: list[EvidenceInfo]) -> None:
        self.out.write(evidence_block(evidence) + "\n")
        self.out.flush()

    def token(self, token: str) -> None:
        self.streamed.append(token)
        if self.terminal:
            self.out.write(token)
            self.out.flush()

    def final(self, answer: str) -> None:
        shown = "".join(self.streamed)
        if self.terminal and shown.strip() == answer.strip():
            self.out.write("\n")
        elif self.terminal and shown:
            self.out.write(self._back_to_start(shown) + self.ERASE_BELOW + answer + "\n")
        else:
            self.out.write(answer + "\n")
        self.out.flush()

    def _back_to_start(self, shown: str) -> str:
        """The cursor movement from the end of ``shown`` back to where it began."""
        width = self.width or shutil.get_terminal_size().columns
        lines = shown.split("\n")
        rows = sum(max(1, -(-len(line) // width)) for line in lines[:-1])
        # the last line: the cursor is on its last row (a full row leaves it at the edge)
        rows += max(1, -(-len(lines[-1]) // width)) - 1
        return "\r" + (f"\x1b[{rows}A" if rows else "")


@click.command()
@click.argument("question", nargs=-1)
@click.option("--space", default=None,
              help="Recall within this Space (and profile-wide memory); default: the Space of "
                   "the live session.")
@click.option("--session", "session_id", type=int, default=None,
              help="Ground on this session's latest turns (default: the live session).")
@click.option("--json", "as_json", is_flag=True, help="Print the reply as JSON, no streaming.")
@click.pass_obj
def ask(context: Context, question: tuple[str, ...], space: str | None, session_id: int | None,
        as_json: bool) -> None:
    """Ask your memory a QUESTION: what memory holds for it at once, then the answer (streamed),
    then its sources.

    The evidence comes first: structured items (decisions, commitments) and verbatim passages,
    numbered as the answer cites them. On a terminal the answer shows as it comes and is
    replaced in place by the checked one when they differ; in a pipe or a file only the checked
    answer is written. An answer keeps only what a cited source supports; when nothing is left
    it says nothing in memory says it, and the evidence is what memory holds.

    Without a QUESTION, answers the last question heard from "them" in the live session.
    """
    text = " ".join(question).strip() or None
    request = Ask(id=uuid.uuid4().hex, question=text, space=space, session=session_id)
    if as_json:
        reply = context.request(request, timeout=ASK_TIMEOUT_S)
        click.echo(msgspec.json.format(msgspec.json.encode(reply), indent=2).decode())
        return
    view = AnswerView(sys.stdout)
    if text is None:
        click.echo("(answering what they just asked)", err=True)
    reply = stream_answer(context.profile, request, view.token, view.evidence)
    view.final(reply.answer)
    if text is None and reply.question:
        click.echo(f"Question heard: {reply.question}", err=True)
    if reply.cancelled:
        click.echo("(stopped)", err=True)
    if reply.sources:
        click.echo("\nSources")
        for citation in reply.sources:
            click.echo(f"  {source_line(citation)}")


@click.command()
@click.pass_obj
def mcp(context: Context) -> None:
    """Serve this profile's memory to other tools over MCP (stdio), read-only.

    Tools: search, ask, list sessions, a session's transcript, open commitments and tasks,
    decisions. Every call goes through the daemon, which must be running.
    """
    from clients.mcp import serve

    serve(context.profile)


COMMANDS = [ask, mcp]

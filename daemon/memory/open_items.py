"""Open items: the commitments and tasks not yet done or dropped.

A commitment or task is open while its current version has no closure. It is closed — done,
or dropped (no longer needed) — by a new version that supersedes it (the open one stays in its
history and in what ``--as-of`` searches before the closing see):

- by hand, ``braincue done ID`` / ``drop ID`` (source ``user``): :func:`close_by_hand`;
- by what a later kept session of the same Space says: reconciliation rules the new statement
  ``done`` or ``dropped`` against the open item (or rules that a statement which is no
  commitment or task supersedes it: done), and the statement, with the item's kind, owner and
  due date (:func:`closing_version`), becomes its closed version, with the turn that said it as
  evidence (:func:`evidence_turn`).

When a session starts in a Space (or is filed into one), what is still open there from earlier
sessions is carried forward (:func:`carried_forward`): "3 open from last time".

The pure parts (owner matching, the evidence turn, the closing version, the lines printed) are
plain functions; the rest reads and writes through the store (blocking: call on a thread).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from daemon.errors import InvalidInput, NotFound
from daemon.memory.evidence import item_of
from daemon.memory.extract import content_words
from daemon.memory.grounding import Passage, Source
from daemon.memory.item_questions import (
    ItemQuestion,
    asks_for,
    owner_matches,
    read_question,
    select,
)
from daemon.store.records import ITEM_KINDS, Assertion, ItemClosure, NewAssertion, Session, Turn
from daemon.store.scope import Scope
from daemon.store.store import Store

# A report that work was done shares fewer words with the promise than a restatement does, so
# an open item is shown to the ruling model a little further out than other assertions are.
CLOSING_SLACK = 0.15
CARRIED_MAX = 10  # items listed with "N open from last time"; the count is always the full one


class OpenItem(msgspec.Struct, frozen=True, kw_only=True):
    """An assertion listed as an item — an open commitment or task, or any assertion a
    question selects — and the session where it was said."""

    assertion: Assertion
    session_title: str = ""  # "" when said in no session (added by hand) or the session is gone
    session_started_at: float | None = None


@dataclass(frozen=True)
class CarriedForward:
    """What a session starting in a Space inherits: the open items of its earlier sessions."""

    session_id: int
    space_id: int
    items: list[OpenItem]
    message: str


# -- pure ----------------------------------------------------------------------------------------


def evidence_turn(statement: str, turns: Sequence[Turn]) -> Turn | None:
    """The turn that best supports ``statement``: the one sharing most of its content words
    (the first on a tie); None when none shares any."""
    words = content_words(statement)
    best: tuple[int, Turn] | None = None
    for turn in turns:
        shared = len(words & content_words(turn.text))
        if shared and (best is None or shared > best[0]):
            best = (shared, turn)
    return None if best is None else best[1]


def said_in(store: Store, assertions: Sequence[Assertion]) -> dict[int, list[int]]:
    """The turns each assertion was said in, by assertion id: the turn of its anchor chunk
    that best supports it (its text, choice and reason), else all the chunk's turns."""
    out: dict[int, list[int]] = {}
    chunks: dict[int, list[Turn]] = {}
    for a in assertions:
        if a.anchor_chunk_id is None:
            continue
        if a.anchor_chunk_id not in chunks:
            chunks[a.anchor_chunk_id] = store.turns_of_chunk(a.anchor_chunk_id)
        turns = chunks[a.anchor_chunk_id]
        best = evidence_turn(" ".join(filter(None, (a.text, a.chosen, a.reasoning))), turns)
        out[a.id] = [best.id] if best is not None else [t.id for t in turns]
    return out


def closing_version(statement: NewAssertion, item: Assertion) -> NewAssertion:
    """The closed version of ``item`` made from the statement that closes it: what was said,
    as the item's kind, with its owner (unless the statement names one) and due date."""
    return msgspec.structs.replace(
        statement, kind=item.kind, owner=statement.owner or item.owner, due=item.due,
        chosen=None, alternatives=(), reasoning=None,
    )


def open_message(count: int) -> str:
    return f"{count} open from last time" if count else ""


def item_line(item: OpenItem) -> str:
    """``Sarah: send the report (due Friday) · said in Weekly, 2026-11-24``."""
    a = item.assertion
    due = f" (due {a.due})" if a.due else ""
    said = f"{dt.datetime.fromtimestamp(a.occurred_at):%Y-%m-%d}"
    where = f"{item.session_title}, {said}" if item.session_title else said
    return f"{a.owner or 'nobody named'}: {a.text}{due} · said in {where}"


# -- through the store (blocking) ----------------------------------------------------------------


def list_open(store: Store, *, space_id: int | None = None, all_spaces: bool = False,
              owner: str | None = None, as_of: float | None = None) -> list[OpenItem]:
    """What is open, oldest first: in the Space ``space_id`` (with profile-wide items; None:
    profile-wide only) as it was at ``as_of`` (default now), or with ``all_spaces`` what is
    open now in every Space; of ``owner`` when given."""
    scope = None if all_spaces else Scope(space_id=space_id, person_memory=False, as_of=as_of)
    items = store.open_items(scope)
    if owner:
        items = [a for a in items if owner_matches(a.owner, owner)]
    return with_sessions(store, items)


def with_sessions(store: Store, assertions: Sequence[Assertion]) -> list[OpenItem]:
    """Each assertion with the session it was said in (when that still exists)."""
    sessions = sessions_of(store, assertions)
    items = []
    for a in assertions:
        session = sessions.get(a.session_id or 0)
        items.append(OpenItem(assertion=a, session_title=_title(session),
                              session_started_at=None if session is None
                              else session.started_at))
    return items


def sessions_of(store: Store, assertions: Sequence[Assertion]) -> dict[int, Session]:
    """The sessions these assertions were said in, by id (deleted ones left out)."""
    found = {}
    for session_id in {a.session_id for a in assertions if a.session_id is not None}:
        try:
            found[session_id] = store.get_session(session_id)
        except NotFound:
            continue
    return found


def _title(session: Session | None) -> str:
    if session is None:
        return ""
    return session.title or f"session {session.id}"


def carried_forward(store: Store, session: Session) -> CarriedForward | None:
    """The open items a session in a Space inherits from the Space's earlier sessions (None
    outside a Space, or when nothing is open)."""
    if session.space_id is None:
        return None
    items = [i for i in list_open(store, space_id=session.space_id)
             if i.assertion.session_id != session.id]
    if not items:
        return None
    return CarriedForward(session_id=session.id, space_id=session.space_id, items=items,
                          message=open_message(len(items)))


def close_by_hand(store: Store, item_id: int, status: str) -> Assertion:
    """``braincue done ID`` / ``drop ID``: close an open item now, source ``user``."""
    if status not in ("done", "dropped"):
        raise InvalidInput(f"status: unknown value {status!r}", fix="done or dropped")
    item = store.get_assertion(item_id)
    if item.kind not in ITEM_KINDS:
        raise InvalidInput(f"assertion {item_id} is a {item.kind}: only a commitment or a task "
                           "is open or done", fix="`braincue open` lists the open ones")
    if item.invalidated_at is not None:
        raise InvalidInput(
            f"assertion {item_id} is no longer current"
            + (f" (superseded by {item.superseded_by})" if item.superseded_by else ""),
            fix=f"see `braincue history {item_id}`; close its current version instead")
    return store.close_item(item_id, ItemClosure(status="done" if status == "done"
                                                 else "dropped"))


def open_ids(store: Store, assertions: Sequence[Assertion]) -> set[int]:
    """Which of these current assertions are open items."""
    items = [a.id for a in assertions if a.kind in ITEM_KINDS and a.invalidated_at is None]
    closed = store.item_closures(items)
    return {i for i in items if i not in closed}


class Selected(msgspec.Struct, frozen=True, kw_only=True):
    """The answer to a question over items: every match, oldest first, each with its status
    (``open``/``done``/``dropped`` for a commitment or task, "" otherwise) and, when closed,
    the version that closed it."""

    asked: ItemQuestion
    items: list[OpenItem]
    status: dict[int, str]
    closed_by: dict[int, Assertion]


def question_items(store: Store, question: str, scope: Scope,
                   now: dt.datetime) -> Selected | None:
    """All the assertions in ``scope`` a question over items asks for (see
    :mod:`daemon.memory.item_questions`), or None when it is not such a question.

    A closed item counts as what was committed when it was committed: it is selected by its
    open version (its owner, when it was said) and shown with its closing. "After the last
    meeting" reads the Space as it stood when its latest ended session ended."""
    if not asks_for(question):
        return None
    scope = msgspec.structs.replace(scope, person_memory=False)
    owners = sorted({a.owner for a in store.current_assertions(scope) if a.owner})
    asked = read_question(question, now, owners)
    return None if asked is None else select_items(store, asked, scope)


def select_items(store: Store, asked: ItemQuestion, scope: Scope) -> Selected:
    """Every assertion in ``scope`` that ``asked`` selects, oldest first (see
    :func:`question_items`)."""
    scope = msgspec.structs.replace(scope, person_memory=False)
    current = store.current_assertions(scope)
    if asked.after_last:
        ended = last_ended(store, scope.space_id)
        if ended is not None:
            scope = msgspec.structs.replace(scope, as_of=ended)
            current = store.assertions_as_of(ended, scope)
    still_open = {a.id for a in store.open_items(scope)}
    closures = store.item_closures([a.id for a in current if a.kind in ITEM_KINDS])
    status: dict[int, str] = {}
    closed_by: dict[int, Assertion] = {}
    candidates = []
    for a in current:
        if a.id in closures:
            opened = [p for p in store.chain(a.id) if p.superseded_by == a.id]
            item = opened[0] if opened else a
            status[item.id] = closures[a.id].status
            closed_by[item.id] = a
            candidates.append(item)
        else:
            status[a.id] = "open" if a.id in still_open else ""
            candidates.append(a)
    chosen = select(candidates, asked, still_open if asked.open_only else None)
    return Selected(asked=asked, items=with_sessions(store, chosen),
                    status={a.id: status[a.id] for a in chosen if status.get(a.id)},
                    closed_by={a.id: closed_by[a.id] for a in chosen if a.id in closed_by})


def question_sources(store: Store, question: str, scope: Scope,
                     now: dt.datetime) -> list[Source] | None:
    """The sources of an answer to a question over items — every match, oldest first,
    numbered from 1 — or None when it is not such a question (then search answers it)."""
    selected = question_items(store, question, scope, now)
    if selected is None:
        return None
    return [item_source(store, n, item, selected.status.get(item.assertion.id, ""),
                        selected.closed_by.get(item.assertion.id))
            for n, item in enumerate(selected.items, 1)]


def item_source(store: Store, n: int, item: OpenItem, status: str,
                closed_by: Assertion | None) -> Source:
    """One selected item as a source: what was said (who, due, status) and the turn that said
    it; a closed one also with its closing and the turn that closed it."""
    a = item.assertion
    facts = [f"owner: {a.owner}" if a.owner else "", f"due: {a.due}" if a.due else "",
             status]
    passages = [Passage(f"{a.text} ({'; '.join(f for f in facts if f)})"
                        if any(facts) else a.text)]
    passages += _said(store, a)
    if closed_by is not None:
        when = dt.datetime.fromtimestamp(closed_by.occurred_at)
        passages.append(Passage(f"{status} {when:%Y-%m-%d}: {closed_by.text}"))
        passages += _said(store, closed_by)
    return Source(n=n, kind="assertion", label=f"{a.kind} ({status})" if status else a.kind,
                  title=item.session_title or "noted", date=a.occurred_at,
                  session_id=a.session_id, chunk_id=a.anchor_chunk_id, passages=tuple(passages),
                  item=item_of(a, status))


def _said(store: Store, a: Assertion) -> list[Passage]:
    """The turn of an assertion's anchor chunk that says it (none without an anchor)."""
    if a.anchor_chunk_id is None:
        return []
    turn = evidence_turn(a.text, store.turns_of_chunk(a.anchor_chunk_id))
    return [] if turn is None else [Passage(turn.text, turn.speaker, turn.ref or "", turn.start)]


def last_ended(store: Store, space_id: int | None) -> float | None:
    """When the latest ended session of a Space ended (None: none has)."""
    ended = [s.ended_at for s in store.list_sessions(space_id=space_id)
             if s.ended_at is not None and s.status != "live"]
    return max(ended, default=None)


def report_lines(store: Store, space_id: int, session_id: int) -> list[str]:
    """What is open in a Space, and what ``session_id`` closed (the bench's printout)."""
    lines = []
    open_now = list_open(store, space_id=space_id)
    lines.append(f"open in the Space ({len(open_now)}), oldest first:")
    lines += [f"  {i.assertion.id}  {item_line(i)}" for i in open_now]
    made = store.list_assertions(session_id=session_id, include_invalidated=True)
    closures = store.item_closures([a.id for a in made])
    lines.append(f"closed by session {session_id} ({len(closures)}):")
    for a in made:
        if a.id in closures:
            before = [p for p in store.chain(a.id) if p.superseded_by == a.id]
            turn = closures[a.id].evidence_turn_id
            evidence = next((t for t in store.turns(session_id) if t.id == turn), None)
            lines.append(f"  {a.id} {closures[a.id].status}: {a.text}")
            lines += [f"     closes {p.id}: {p.text}" for p in before]
            if evidence is not None:
                lines.append(f"     evidence: {evidence.speaker}: {evidence.text}")
    return lines

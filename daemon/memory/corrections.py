"""The user's corrections of what a keep extracted: a decision, commitment or task edited,
deleted as wrong, or reopened after it was closed by mistake.

A correction never overwrites: it is a new version (source ``user``, said now) that supersedes
the current one, or — a deletion — the current one ends now with no successor. The earlier
version stays in the history, and what is read as of a time before the correction still finds
it. Memories about the person are reviewed in place instead (:mod:`daemon.memory.person`).

Every function here is synchronous over the :class:`~daemon.store.store.Store`: call it from a
thread.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from daemon.errors import InvalidInput
from daemon.store.records import ITEM_KINDS, Assertion, NewAssertion
from daemon.store.store import Store

CORRECTABLE = ("decision", *ITEM_KINDS)


def _current(store: Store, item_id: int) -> Assertion:
    item = store.get_assertion(item_id)
    if item.about_person or item.kind not in CORRECTABLE:
        raise InvalidInput(f"assertion {item_id} is a {item.kind}: only a decision, commitment "
                           "or task is corrected here",
                           fix="memories about you are edited in the memory review")
    if item.invalidated_at is not None:
        raise InvalidInput(
            f"assertion {item_id} is no longer current"
            + (f" (superseded by {item.superseded_by})" if item.superseded_by else ""),
            fix=f"see `braincue history {item_id}`; correct its current version instead")
    return item


def _clean(value: str | None, current: str | None) -> str | None:
    """A field as corrected: None keeps it, "" (or blanks) clears it."""
    if value is None:
        return current
    return " ".join(value.split()) or None


def _version(store: Store, item: Assertion, **fields: object) -> NewAssertion:
    """A new user version of ``item``: its fields, said in the session and turns its history
    was said in (a version closed by hand was said in none)."""
    said = next((a for a in reversed(store.chain(item.id)) if a.session_id is not None), item)
    same = NewAssertion(kind=item.kind, text=item.text, source="user", space_id=item.space_id,
                        session_id=said.session_id, anchor_chunk_id=said.anchor_chunk_id,
                        chosen=item.chosen, alternatives=item.alternatives,
                        reasoning=item.reasoning, owner=item.owner, due=item.due)
    return msgspec.structs.replace(same, **fields)


def correct(store: Store, item_id: int, *, text: str | None = None, chosen: str | None = None,
            alternatives: Sequence[str] | None = None, reasoning: str | None = None,
            owner: str | None = None, due: str | None = None) -> Assertion:
    """Supersede the current version of a decision, commitment or task with the user's."""
    item = _current(store, item_id)
    new_text = _clean(text, item.text)
    if not new_text:
        raise InvalidInput("text: a correction needs some text",
                           fix="to say it is wrong altogether, delete it")
    others = item.alternatives if alternatives is None else tuple(
        cleaned for a in alternatives if (cleaned := " ".join(a.split())))
    corrected = _version(store, item, text=new_text, chosen=_clean(chosen, item.chosen),
                         alternatives=others, reasoning=_clean(reasoning, item.reasoning),
                         owner=_clean(owner, item.owner), due=_clean(due, item.due))
    if corrected == _version(store, item):
        raise InvalidInput(f"assertion {item_id}: the correction changes nothing")
    return store.supersede(item_id, corrected)


def retract(store: Store, item_id: int) -> Assertion:
    """The user says a decision, commitment or task is wrong: it stops being current now."""
    _current(store, item_id)
    return store.retract(item_id)


def reopen(store: Store, item_id: int) -> Assertion:
    """Open a closed commitment or task again: a new open version supersedes the closed one."""
    item = _current(store, item_id)
    if item.kind not in ITEM_KINDS or item_id not in store.item_closures([item_id]):
        raise InvalidInput(f"assertion {item_id} is not a closed commitment or task",
                           fix="`braincue open` lists what is open")
    return store.supersede(item_id, _version(store, item), reopen=True)

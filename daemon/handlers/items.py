"""Open items and selections as the protocol shows them (translation only, no transport):
shared by the open-items handlers and by the live session, which carries them forward."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from daemon.ipc.protocol import CarriedForward, ClosureInfo, ItemInfo
from daemon.memory.open_items import CARRIED_MAX, OpenItem
from daemon.memory.open_items import CarriedForward as Carried
from daemon.store.records import Assertion
from daemon.store.store import Store


def item_infos(
    store: Store,
    items: Sequence[OpenItem],
    status: Mapping[int, str] | None = None,
    closed_by: Mapping[int, Assertion] | None = None,
) -> list[ItemInfo]:
    """Items with their Space's name; ``status`` by id (default: every one open), and the
    version that closed each closed one (a blocking read)."""
    names = {s.id: s.name for s in store.list_spaces()} if items else {}
    infos = []
    for item in items:
        a = item.assertion
        closing = (closed_by or {}).get(a.id)
        infos.append(ItemInfo(
            id=a.id, kind=a.kind, text=a.text, occurred_at=a.occurred_at,
            status="open" if status is None else status.get(a.id, ""),
            owner=a.owner, due=a.due, space=None if a.space_id is None else names.get(a.space_id),
            session_id=a.session_id, session_title=item.session_title, chosen=a.chosen,
            alternatives=list(a.alternatives), reasoning=a.reasoning,
            closed_by=None if closing is None else closing.id,
            closed_at=None if closing is None else closing.occurred_at,
        ))
    return infos


def carried_event(store: Store, carried: Carried, space: str) -> CarriedForward:
    return CarriedForward(session_id=carried.session_id, space=space, message=carried.message,
                          items=item_infos(store, carried.items[:CARRIED_MAX]))


def chain_closures(store: Store, ids: Sequence[int]) -> list[ClosureInfo]:
    """The closures among these versions, each with its evidence turn while it exists."""
    closures = store.item_closures(ids)
    evidence = [c.evidence_turn_id for c in closures.values() if c.evidence_turn_id is not None]
    turns = {t.id: t for t in store.get_turns(evidence)}
    infos = []
    for assertion_id, closure in closures.items():
        turn = None if closure.evidence_turn_id is None else turns.get(closure.evidence_turn_id)
        infos.append(ClosureInfo(
            assertion_id=assertion_id, status=closure.status,
            evidence_turn_id=closure.evidence_turn_id,
            speaker="" if turn is None else turn.speaker, text="" if turn is None else turn.text,
        ))
    return infos

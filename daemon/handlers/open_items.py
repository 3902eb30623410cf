"""Handlers for open items: OpenItems (what is still open), SelectItems (every assertion of a
kind, owner and period), CloseItem (done / dropped by hand); and the user's corrections of a
decision, commitment or task: CorrectItem, RetractItem, ReopenItem."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from daemon.errors import InvalidInput
from daemon.handlers.context import Context
from daemon.handlers.wire import history_reply, item_infos
from daemon.ipc.dispatch import Handlers
from daemon.ipc.protocol import (
    CloseItem,
    CorrectItem,
    HistoryReply,
    ItemsReply,
    OpenItems,
    ReopenItem,
    RetractItem,
    SelectItems,
)
from daemon.memory import corrections, open_items
from daemon.memory.item_questions import ITEM_KINDS, ItemQuestion, period
from daemon.store.scope import Scope
from daemon.store.store import Store


async def register(daemon: Context) -> None:
    register_open_items(daemon.handlers, daemon.store)


def register_open_items(handlers: Handlers, store: Store,
                        now: Callable[[], dt.datetime] = lambda: dt.datetime.now().astimezone(),
                        ) -> None:
    async def list_open(request: OpenItems) -> ItemsReply:
        if request.as_of is not None and request.space is None:
            raise InvalidInput("as_of: give a Space too", fix="--space NAME --as-of DATE")

        def read() -> ItemsReply:
            items = open_items.list_open(store, space_id=store.space_id(request.space),
                                         all_spaces=request.space is None,
                                         owner=request.owner or None, as_of=request.as_of)
            return ItemsReply(items=item_infos(store, items))

        return await store.run(read)

    async def select(request: SelectItems) -> ItemsReply:
        start, end = period(request.period, now()) if request.period.strip() else (None, None)
        if request.period.strip() and start is None:
            raise InvalidInput(f"period: {request.period!r} names no period I can read",
                               fix='e.g. "this month", "last week", "since March", "in 2026"')
        asked = ItemQuestion(kinds=tuple(request.kinds) or ITEM_KINDS,
                             owner=request.owner.strip() or None, open_only=request.open_only,
                             start=start, end=end)

        def read() -> ItemsReply:
            scope = Scope(space_id=store.space_id(request.space), person_memory=False)
            selected = open_items.select_items(store, asked, scope)
            return ItemsReply(items=item_infos(store, selected.items, selected.status,
                                               selected.closed_by),
                              period_start=start, period_end=end)

        return await store.run(read)

    async def close(request: CloseItem) -> HistoryReply:
        def write() -> HistoryReply:
            closed = open_items.close_by_hand(store, request.item_id, request.status)
            return history_reply(store, store.chain(closed.id))

        return await store.run(write)

    async def correct(request: CorrectItem) -> HistoryReply:
        def write() -> HistoryReply:
            corrected = corrections.correct(
                store, request.item_id, text=request.text, chosen=request.chosen,
                alternatives=request.alternatives, reasoning=request.reasoning,
                owner=request.owner, due=request.due)
            return history_reply(store, store.chain(corrected.id))

        return await store.run(write)

    async def retract(request: RetractItem) -> HistoryReply:
        def write() -> HistoryReply:
            return history_reply(store, store.chain(
                corrections.retract(store, request.item_id).id))

        return await store.run(write)

    async def reopen(request: ReopenItem) -> HistoryReply:
        def write() -> HistoryReply:
            return history_reply(store, store.chain(
                corrections.reopen(store, request.item_id).id))

        return await store.run(write)

    handlers.add(CorrectItem, correct)
    handlers.add(RetractItem, retract)
    handlers.add(ReopenItem, reopen)
    handlers.add(OpenItems, list_open)
    handlers.add(SelectItems, select)
    handlers.add(CloseItem, close)

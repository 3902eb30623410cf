"""Handlers for what is remembered: keep/discard/later, an assertion's history, memory review."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import trio

from daemon.config import Settings
from daemon.errors import InvalidInput
from daemon.handlers.context import Context
from daemon.handlers.wire import assertion_infos, history_reply, remember_reply
from daemon.ipc.dispatch import Handlers, Publish
from daemon.ipc.protocol import (
    AssertionInfo,
    History,
    HistoryReply,
    MemoryApprove,
    MemoryArchive,
    MemoryEdit,
    MemoryExpire,
    MemoryList,
    MemoryListReply,
    MemoryReject,
    MemoryReply,
    MemoryScope,
    Remember,
    RememberReply,
    StageProgress,
)
from daemon.memory import person
from daemon.memory.remember import Rememberer, Stage
from daemon.store.records import Assertion
from daemon.store.store import Store

RETRY_WAITING_S = 15.0  # how often a keep waiting for the language model looks for it


async def register(daemon: Context) -> None:
    """The daemon part: remembering runs on the daemon's store and its background language
    model, behind live capture; the keeps a stop or a crash interrupted are finished now."""
    live = daemon.live
    rememberer = Rememberer(
        daemon.store, generator=daemon.engines.background_generator,
        settings=lambda: daemon.settings,
        quiet=None if live is None else live.wait_until_no_session,
        is_live=(lambda: False) if live is None else live.is_live,
    )
    register_memory(daemon.handlers, daemon.store, rememberer, lambda: daemon.settings)
    daemon.nursery.start_soon(rememberer.finish_interrupted)
    daemon.nursery.start_soon(retry_waiting_keeps, rememberer,
                              daemon.engines.language_model_answers)


async def retry_waiting_keeps(rememberer: Rememberer, answers: Callable[[], Awaitable[bool]],
                              period: float = RETRY_WAITING_S) -> None:
    """Every ``period`` seconds, when a keep waits for the language model and the model
    answers (``answers()``), run the waiting keeps again; runs until cancelled."""
    while True:
        await trio.sleep(period)
        if await rememberer.waiting() and await answers():
            await rememberer.finish_waiting()


def register_memory(
    handlers: Handlers,
    store: Store,
    rememberer: Rememberer,
    settings: Callable[[], Settings],
) -> None:
    async def remember(request: Remember, publish: Publish) -> RememberReply:
        if request.space is not None and request.no_space:
            raise InvalidInput("space and no_space: choose one",
                               fix="file it into a Space, or into none")
        target: int | msgspec.UnsetType | None = msgspec.UNSET
        if request.no_space:
            target = None
        elif request.space is not None:
            target = await store.run(_space_id, store, request.space)

        def progress(stage: Stage, done: int, total: int) -> None:
            publish(StageProgress(request_id=request.id, stage=stage, done=done, total=total))

        outcome = await rememberer.remember(request.session_id, request.answer, target,
                                            progress=progress)
        return remember_reply(outcome)

    async def history(request: History) -> HistoryReply:
        return await store.run(lambda: history_reply(store, store.chain(request.assertion_id)))

    handlers.add_streaming(Remember, remember)
    handlers.add(History, history)
    _register_review(handlers, store, settings)


def _register_review(
    handlers: Handlers, store: Store, settings: Callable[[], Settings]
) -> None:
    """The review of memories about the person: list, approve, reject, archive, edit, scope,
    expire."""

    async def memory_list(request: MemoryList) -> MemoryListReply:
        if request.space is not None and request.profile_wide:
            raise InvalidInput("space and profile_wide: choose one")

        def read() -> list[AssertionInfo]:
            return assertion_infos(store, person.list_memories(
                store,
                space_id=None if request.space is None else _space_id(store, request.space),
                profile_wide=request.profile_wide,
                status=request.status or None,
            ))

        now = settings()
        return MemoryListReply(memories=await store.run(read), memory_enabled=now.memory_enabled,
                               session_archive_enabled=now.session_archive_enabled)

    async def reply(fn: Callable[..., Assertion], *args: Any) -> MemoryReply:
        def run() -> AssertionInfo:
            return assertion_infos(store, [fn(store, *args)])[0]

        return MemoryReply(memory=await store.run(run))

    async def approve(request: MemoryApprove) -> MemoryReply:
        return await reply(person.set_status, request.memory_id, "approved")

    async def reject(request: MemoryReject) -> MemoryReply:
        return await reply(person.set_status, request.memory_id, "rejected")

    async def archive(request: MemoryArchive) -> MemoryReply:
        return await reply(person.set_status, request.memory_id, "archived")

    async def edit(request: MemoryEdit) -> MemoryReply:
        return await reply(person.edit, request.memory_id, request.text)

    async def scope(request: MemoryScope) -> MemoryReply:
        if (request.space is None) == (not request.profile):
            raise InvalidInput("scope: give a Space or profile-wide, not both or neither",
                               fix="--space NAME or --profile")
        target = None if request.profile else await store.run(_space_id, store,
                                                              request.space or "")
        return await reply(person.rescope, request.memory_id, target)

    async def expire(request: MemoryExpire) -> MemoryReply:
        return await reply(person.set_expiry, request.memory_id, request.expires_at)

    handlers.add(MemoryList, memory_list)
    handlers.add(MemoryApprove, approve)
    handlers.add(MemoryReject, reject)
    handlers.add(MemoryArchive, archive)
    handlers.add(MemoryEdit, edit)
    handlers.add(MemoryScope, scope)
    handlers.add(MemoryExpire, expire)


def _space_id(store: Store, name: str) -> int:
    return store.get_space(name).id

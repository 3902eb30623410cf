"""A keep cannot be lost and never gets in the way of a call.

Against a real database file with scripted models: where a keep stands is recorded
(pending -> running -> done | failed, with the reason), a keep cut short is finished by the next
start, and a keep waits between its model calls while a session is live. The daemon-level
version (SIGKILL in the middle of a keep, then a restart) is in test_keep_crash.py.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import trio
from storekit import T0, Clock
from test_persistence_e2e import Script, World

from daemon.errors import EngineError
from daemon.llm.generate import ChatMessage, ScriptedGenerator
from daemon.memory.remember import Rememberer
from daemon.store.records import KeepState
from daemon.worker import WorkerThread


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path / "profile", Clock(T0))
    yield w
    w.store.close()


def state(world: World, session_id: int) -> KeepState | None:
    return world.store.keep_state(session_id)


async def test_a_keep_is_running_while_the_model_works_then_done(world: World) -> None:
    session_id = world.session(space_id=world.space("Atlas"))
    seen: list[str | None] = []
    script = Script()

    def respond(messages: Sequence[ChatMessage]) -> object:
        found = state(world, session_id)
        seen.append(None if found is None else found.status)
        return script(messages)

    world.generator = ScriptedGenerator(respond)
    outcome = await world.keep(session_id)

    assert set(seen) == {"running"}
    assert outcome.keep_status == "done"
    done = state(world, session_id)
    assert done is not None and done.status == "done" and done.reason is None
    # what it stored, summed up: the decision's text among them
    assert outcome.stored == {"decision": 1, "commitment": 1}
    assert outcome.decisions == ["Atlas launches on March 3rd."]


async def test_a_failed_pass_leaves_the_keep_failed_with_its_reason(world: World) -> None:
    world.script.assertions = EngineError("the model's answer was cut off after 1536 tokens")
    session_id = world.session(space_id=world.space("Atlas"))
    outcome = await world.keep(session_id)
    assert outcome.archived and outcome.keep_status == "failed"
    failed = state(world, session_id)
    assert failed is not None and failed.status == "failed"
    assert failed.reason == "extraction failed: the model's answer was cut off after 1536 tokens"


async def test_no_language_model_is_a_failed_keep(world: World) -> None:
    world.generator_missing = True
    session_id = world.session(space_id=world.space("Atlas"))
    await world.keep(session_id)
    failed = state(world, session_id)
    assert failed is not None and failed.status == "failed"
    assert failed.reason is not None and "no language model" in failed.reason


async def test_a_keep_that_needs_no_model_has_no_state(world: World) -> None:
    session_id = world.session(space_id=None)
    outcome = await world.keep(session_id)
    assert outcome.keep_status is None and state(world, session_id) is None


async def test_a_keep_cut_short_is_finished_by_the_next_start(world: World) -> None:
    session_id = world.session(space_id=world.space("Atlas"))
    first_call = trio.Event()

    async def hang(messages: Sequence[ChatMessage], output_type: object, **_: object) -> object:
        first_call.set()
        await trio.sleep_forever()

    stuck = ScriptedGenerator([])
    stuck.generate = hang  # type: ignore[method-assign, assignment]
    world.generator = stuck
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(world.keep, session_id)
            await first_call.wait()
            nursery.cancel_scope.cancel()  # the daemon stops in the middle of the keep
    interrupted = state(world, session_id)
    assert interrupted is not None and interrupted.status == "running"
    assert world.store.get_session(session_id).status == "kept"
    assert world.store.archive(session_id) == []

    # the next start: a new rememberer on the same store finishes it without being asked
    world.generator = ScriptedGenerator(Script())
    restarted = Rememberer(world.store, generator=lambda: world.generator,
                           settings=lambda: world.settings)
    await restarted.finish_interrupted()
    finished = state(world, session_id)
    assert finished is not None and finished.status == "done"
    assert world.store.archive(session_id) != []
    kinds = sorted(a.kind for a in world.store.list_assertions(session_id=session_id))
    assert kinds == ["commitment", "decision", "preference"]


async def test_a_keep_asked_for_but_not_yet_recorded_as_kept_is_finished(world: World) -> None:
    """A crash between recording the keep and recording the session kept."""
    session_id = world.session(space_id=world.space("Atlas"))
    world.store.set_keep_state(session_id, "pending")
    await world.rememberer.finish_interrupted()
    assert world.store.get_session(session_id).status == "kept"
    finished = state(world, session_id)
    assert finished is not None and finished.status == "done"
    assert world.store.archive(session_id) != []


async def test_a_keep_that_had_written_its_assertions_is_only_marked_done(
    world: World,
) -> None:
    session_id = world.session(space_id=world.space("Atlas"))
    await world.keep(session_id)
    calls = len(world.generator.calls)
    world.clock.t -= 60  # it was running before its assertions were written
    world.store.set_keep_state(session_id, "running")
    await world.rememberer.finish_interrupted()
    finished = state(world, session_id)
    assert finished is not None and finished.status == "done"
    assert len(world.generator.calls) == calls  # nothing was asked of the model again
    assert len(world.store.list_assertions(session_id=session_id)) == 3  # nothing twice


async def test_a_deleted_session_takes_its_keep_state(world: World) -> None:
    session_id = world.session(space_id=world.space("Atlas"))
    world.store.set_keep_state(session_id, "failed", "extraction failed: cut off")
    world.store.delete_session(session_id)
    assert world.store.keep_states() == []
    await world.rememberer.finish_interrupted()  # and nothing to finish


async def test_a_keep_waits_between_model_calls_while_a_session_is_live(world: World) -> None:
    session_id = world.session(space_id=world.space("Atlas"))
    live = True
    waiting, call_ended = trio.Event(), trio.Event()

    async def quiet() -> None:
        waiting.set()
        await call_ended.wait()

    rememberer = Rememberer(world.store, generator=lambda: world.generator,
                            settings=lambda: world.settings, quiet=quiet, is_live=lambda: live)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(rememberer.remember, session_id, "keep")
            await waiting.wait()
            assert world.generator.calls == []  # paused before its first model call
            paused = state(world, session_id)
            assert paused is not None and paused.status == "running"
            assert paused.reason == "paused while a session is live; it goes on when the " \
                "session ends"
            live = False
            call_ended.set()
    assert world.generator.calls != []
    done = state(world, session_id)
    assert done is not None and done.status == "done" and done.reason is None


async def test_with_pausing_off_a_keep_runs_beside_a_live_session(world: World) -> None:
    world.settings.keep_pauses_while_live = False
    session_id = world.session(space_id=world.space("Atlas"))

    async def quiet() -> None:
        raise AssertionError("a keep with pausing off never waits")

    rememberer = Rememberer(world.store, generator=lambda: world.generator,
                            settings=lambda: world.settings, quiet=quiet, is_live=lambda: True)
    outcome = await rememberer.remember(session_id, "keep")
    assert outcome.keep_status == "done"


@pytest.mark.skipif(sys.platform != "linux", reason="nice is per thread on Linux only")
def test_a_background_worker_and_the_threads_it_starts_run_at_a_lower_priority() -> None:
    def priority() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    def own_and_started() -> tuple[int, int]:
        started: list[int] = []
        thread = threading.Thread(target=lambda: started.append(priority()))
        thread.start()
        thread.join()
        return priority(), started[0]

    base = priority()
    worker = WorkerThread("background", nice=5)
    try:
        assert worker.call_sync(own_and_started) == (min(19, base + 5), min(19, base + 5))
    finally:
        worker.close()
    assert priority() == base  # the caller's own priority is untouched


async def test_a_keep_interrupted_again_and_again_is_given_up(world: World) -> None:
    """A keep that brings the daemon down each time must not do so at every start forever."""
    session_id = world.session(space_id=world.space("Atlas"))
    world.store.set_keep_state(session_id, "pending")
    for _ in range(3):  # three starts, each interrupted while running
        world.store.set_keep_state(session_id, "running")
    await world.rememberer.finish_interrupted()
    given_up = state(world, session_id)
    assert given_up is not None and given_up.status == "failed"
    assert given_up.reason == "interrupted 3 times (the daemon stopped or crashed each time)"
    assert world.generator.calls == []
    # asked again, it runs again, from a count of one
    await world.keep(session_id)
    done = state(world, session_id)
    assert done is not None and (done.status, done.attempts) == ("done", 0)

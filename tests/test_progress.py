"""Progress of the long requests: a keep's model calls, the embedding of an imported transcript
or a document. StageProgress events reach a subscriber over real sockets, in order, each stage
ending at done == total; the shell shows them on stderr, and not with --json."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import msgspec
import trio
from click.testing import Result
from storekit import T0, Clock
from test_cli_memory import braincue, recorded, scripted_daemon
from test_persistence_e2e import Script, World, long_session

from daemon.ipc import protocol
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    AddDocument,
    ImportTranscript,
    Remember,
    Request,
    StageProgress,
    progress_topic,
)
from daemon.llm.embed import EmbedProgress, ScriptedEmbedder

Step = tuple[str, int, int]


def steps(events: list[StageProgress]) -> list[Step]:
    return [(e.stage, e.done, e.total) for e in events]


def assert_counts_up(found: list[Step]) -> None:
    """Within each stage ``done`` never goes back and ends at ``total``."""
    stages = list(dict.fromkeys(stage for stage, _, _ in found))
    for stage in stages:
        mine = [(done, total) for s, done, total in found if s == stage]
        assert [d for d, _ in mine] == sorted(d for d, _ in mine), stage
        assert all(done <= total for done, total in mine), stage
        assert mine[-1][0] == mine[-1][1] > 0, stage
    # the stages do not interleave
    assert [s for i, (s, _, _) in enumerate(found) if i == 0 or found[i - 1][0] != s] == stages


def watched(request: Request[Any], *, last: Step) -> tuple[Any, list[StageProgress]]:
    """Send ``request`` while subscribed to its progress: its reply and the events up to
    ``last`` (they travel on another socket than the reply, so they are read until then)."""
    request = msgspec.structs.replace(request, id=uuid.uuid4().hex)
    client = Client(timeout=30)
    with client.subscribe([progress_topic(request.id)]) as events:
        reply = client.request(request)
        seen: list[StageProgress] = []
        while not seen or steps(seen[-1:])[0] != last:
            event = events.receive(10)
            assert isinstance(event, StageProgress), (event, steps(seen))
            assert event.request_id == request.id
            seen.append(event)
        assert events.receive(0) is None  # and nothing after
    return reply, seen


# -- the protocol --------------------------------------------------------------------------------


def test_stage_progress_round_trips_on_the_progress_topic_of_its_request() -> None:
    event = StageProgress(request_id="r7", stage="archive", done=1, total=3)
    assert protocol.decode_event(protocol.encode(event)) == event
    assert event.topic() == progress_topic("r7") == "progress/r7/"
    assert protocol.tag_of(StageProgress) == "stage_progress"


# -- a keep -------------------------------------------------------------------------------------


async def test_each_model_call_of_a_keep_is_a_step_of_its_stage(tmp_path: Path) -> None:
    world = World(tmp_path / "profile", Clock(T0))
    try:
        session_id = long_session(world)
        found: list[Step] = []
        outcome = await world.rememberer.remember(
            session_id, "keep", progress=lambda stage, done, total: found.append(
                (stage, done, total)))
        assert outcome.archived and outcome.assertions == 1
        calls = [c[-1].content for c in world.generator.calls]
        pieces = sum('"key_quotes"' in c for c in calls)
        assert pieces > 1 and len(calls) == pieces  # its decisions are said plainly
        assert found == (
            # the assertions first: they state a long meeting's Decided and Action items; here
            # no model call was needed for them
            [("extraction", 0, 0)]
            + [("archive", i, pieces) for i in range(pieces + 1)]
            + [("reconciliation", 0, 1), ("reconciliation", 1, 1)]  # the same fact, merged
        )
    finally:
        world.store.close()


async def test_a_keep_over_the_sockets_publishes_its_progress_in_order(short_home: Path) -> None:
    async with scripted_daemon(Script()) as daemon:
        await daemon.store.run(lambda: daemon.store.create_space("Atlas"))
        session_id = await recorded(daemon)

        def exchange() -> tuple[Any, list[StageProgress]]:
            return watched(Remember(session_id=session_id, answer="keep", space="Atlas"),
                           last=("reconciliation", 2, 2))

        reply, events = await trio.to_thread.run_sync(exchange)
    assert reply.archived and reply.assertions == 2
    assert steps(events) == [
        ("extraction", 0, 1), ("extraction", 1, 1),
        ("archive", 0, 1), ("archive", 1, 1),
        # the two statements about the conversation (the preference is a memory candidate)
        ("reconciliation", 0, 2), ("reconciliation", 1, 2), ("reconciliation", 2, 2),
    ]


# -- embedding counted in a context ----------------------------------------------------------------


def test_an_embedder_reports_each_batch_to_the_progress_it_is_given() -> None:
    embedder = ScriptedEmbedder()
    reports: list[tuple[int, int]] = []
    texts = [f"turn {i}" for i in range(20)]
    plain = embedder.embed_sync(texts)
    progress = EmbedProgress(lambda done, total: reports.append((done, total)))
    counted = embedder.embed_sync(texts, progress)
    embedder.embed_sync(texts[:3], progress)  # a second call adds to the total
    embedder.embed_sync(texts)  # nobody counts this one
    assert (counted == plain).all()  # counting changes nothing embedded
    assert reports == [(0, 20), (8, 20), (16, 20), (20, 20), (20, 23), (23, 23)]


async def test_each_progress_counts_only_the_calls_it_is_given_on_any_thread() -> None:
    embedder = ScriptedEmbedder()
    reports: dict[str, list[tuple[int, int]]] = {"a": [], "b": []}

    async def job(name: str, n: int) -> None:
        progress = EmbedProgress(lambda d, t: reports[name].append((d, t)))
        await trio.to_thread.run_sync(embedder.embed_sync, ["x"] * n, progress)
        await embedder.embed(["y"] * 2, progress)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(job, "a", 3)
        nursery.start_soon(job, "b", 9)
        await trio.to_thread.run_sync(embedder.embed_sync, ["z"] * 5)  # counted by neither
    assert reports["a"] == [(0, 3), (3, 3), (3, 5), (5, 5)]
    assert reports["b"] == [(0, 9), (8, 9), (9, 9), (9, 11), (11, 11)]


# -- imports that embed --------------------------------------------------------------------------


def long_transcript(turns: int) -> bytes:
    return json.dumps({
        "title": "Atlas planning", "started_at": "2026-07-28T14:05:00+02:00",
        "turns": [{"speaker": "me" if i % 2 else "Sarah", "t": 4.0 * i,
                   "text": f"Point {i}: the staging checklist for step {i} is reviewed."}
                  for i in range(turns)],
    }).encode()


async def test_an_import_and_a_document_publish_their_embedding(short_home: Path) -> None:
    async with scripted_daemon(Script()) as daemon:

        def exchange() -> None:
            # 60 turns in 3 chunks: each chunk and each turn has its vector
            imported, events = watched(ImportTranscript(content=long_transcript(60)),
                                       last=("embedding", 63, 63))
            assert (imported.session.turns, imported.chunks) == (60, 3)
            found = steps(events)
            assert_counts_up(found)
            assert found[0] == ("embedding", 0, 60)  # the turns are known to come from the start
            assert len(found) > 5  # in batches

            text = "\n\n".join(f"## Part {i}\n\n" + f"Paragraph {i} of the plan. " * 60
                               for i in range(12)).encode()
            added, events = watched(AddDocument(filename="plan.md", content=text),
                                    last=("embedding", 36, 36))
            assert added.document.chunks == 36
            assert steps(events)[0] == ("embedding", 0, 36)
            assert_counts_up(steps(events))

        await trio.to_thread.run_sync(exchange)
        assert (await daemon.store.run(daemon.store.counts))["vectors"] == 63 + 36


# -- the shell ---------------------------------------------------------------------------------


async def test_the_shell_shows_a_keeps_stages_on_stderr_but_not_with_json(short_home: Path) -> None:
    async with scripted_daemon(Script()) as daemon:
        await daemon.store.run(lambda: daemon.store.create_space("Atlas"))
        first, second = await recorded(daemon), await recorded(daemon)

        shown = await braincue("keep", str(first), "--space", "Atlas")
        assert shown.exit_code == 0, (shown.output, shown.exception)
        assert shown.stdout.splitlines()[0] == f"session {first} kept in Space 'Atlas'"
        for bar in ("summarising: ", "extracting: ", "reconciling: "):
            assert bar in shown.stderr, shown.stderr
        assert "1/1 [" in shown.stderr and "2/2 [" in shown.stderr

        quiet = await braincue("keep", str(second), "--space", "Atlas", "--json")
        assert quiet.exit_code == 0, (quiet.output, quiet.exception)
        assert json.loads(quiet.stdout)["archived"] is True
        assert not any(bar in quiet.stderr
                       for bar in ("summarising: ", "extracting: ", "reconciling: "))


async def test_the_shell_shows_an_imports_embedding(short_home: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "planning.json"
    transcript.write_bytes(long_transcript(60))
    async with scripted_daemon(Script()):
        shown: Result = await braincue("import-transcript", str(transcript))
        assert shown.exit_code == 0, (shown.output, shown.exception)
        assert "imported session 1" in shown.stdout
        assert "embedding: " in shown.stderr and "63/63 [" in shown.stderr

        quiet = await braincue("import-transcript", str(transcript), "--json")
        assert quiet.exit_code == 0 and json.loads(quiet.stdout)["session"]["id"] == 2
        assert "embedding: " not in quiet.stderr

        notes = tmp_path / "notes.md"
        notes.write_text("Ship checklist: run the database migration first.\n")
        added = await braincue("docs", "add", str(notes))
        assert added.exit_code == 0 and "embedding: " in added.stderr

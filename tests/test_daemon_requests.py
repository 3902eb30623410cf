"""Every request the daemon serves, through serve() and real sockets; its engines; its stop."""

from __future__ import annotations

import json
import logging
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import msgspec
import pytest
import trio
import trio.testing
from daemonkit import run_clients, running_daemon
from storekit import TRANSCRIPT
from test_documents import make_pdf

from daemon.config import Paths, Settings
from daemon.engines import Engines, unload_idle_engines
from daemon.errors import BrainCueError, InvalidInput, ModelNotInstalled, NotFound
from daemon.handlers.wire import deleted_counts, search_hit, session_info
from daemon.ipc import protocol
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    TOPIC_SESSIONS,
    AddDocument,
    AddSpace,
    ExportSession,
    ImportTranscript,
    ListDocuments,
    ListSessions,
    ListSpaces,
    RemoveDocument,
    RemoveSpace,
    Request,
    SessionEnded,
    SetSpace,
    ShowSession,
    Status,
)
from daemon.ipc.runtime import RuntimeFiles
from daemon.ipc.testing import start_daemon
from daemon.llm.embed import ScriptedEmbedder
from daemon.llm.generate import ScriptedGenerator
from daemon.process.supervisor import unload_check_interval
from daemon.store import export, records
from daemon.store.db import connect
from daemon.store.fusion import LegHit
from daemon.store.keys import KeyStore
from daemon.store.records import Deleted, Session
from daemon.store.search import Anchor, Explanation, LinkedAssertion, SearchResult


def transcript(**changes: Any) -> bytes:
    return json.dumps({**TRANSCRIPT, **changes}).encode()


def scripted_engines() -> Engines:
    return Engines(Settings, Path("/nonexistent"), embedder=ScriptedEmbedder(),
                   generator=ScriptedGenerator(lambda messages: "I do not know."))


async def in_thread(fn: Callable[[], None]) -> None:
    await trio.to_thread.run_sync(fn)


# ---------------------------------------------------------------------------------------------
# the protocol's view of the store (pure)


def test_the_protocols_vocabulary_is_the_stores() -> None:
    assert protocol.ACTIVITIES == records.ACTIVITIES
    assert protocol.EXPORT_FORMATS == export.FORMATS


@pytest.mark.parametrize("request_", [
    ListSessions(space="Work", limit=3), ShowSession(session_id=4),
    ExportSession(session_id=4, format="vtt"),
    ImportTranscript(content=b"{\xff}", filename="a.json", space=None),
    ListSpaces(), AddSpace(name="Work", activity="job", memory_enabled=False),
    SetSpace(name="Work", rename="Atlas", memory_enabled=True), RemoveSpace(name="Work"),
    ListDocuments(space=None), AddDocument(filename="cv.pdf", content=b"%PDF", modified_at=1.5),
    RemoveDocument(document_id=2),
])
def test_store_requests_round_trip(request_: Request[Any]) -> None:
    assert protocol.decode_request(protocol.encode(request_)) == request_


def test_rows_become_wire_structs() -> None:
    session = Session(id=3, space_id=7, activity="job", title="Interview", started_at=10.0,
                      ended_at=70.0, status="kept", practice=True,
                      participants=("me", "Ann"), turn_count=12)
    info = session_info(session, {7: "Job hunt"})
    assert (info.space, info.turns, info.participants, info.practice) == (
        "Job hunt", 12, ["me", "Ann"], True)
    assert session_info(msgspec.structs.replace(session, space_id=None), {}).space is None
    assert deleted_counts(Deleted(spaces=1, chunks=4)) == {"spaces": 1, "chunks": 4}


# ---------------------------------------------------------------------------------------------
# the store's requests, in-process


async def test_sessions_transcripts_and_exports(bare_home: Path) -> None:
    async with running_daemon(scripted_engines()):

        def exchange() -> None:
            client = Client(timeout=30)
            with client.subscribe([TOPIC_SESSIONS]) as events:
                client.request(AddSpace(name="Work", activity="project"))
                imported = client.request(ImportTranscript(
                    content=transcript(), filename="atlas.json", space="work"))
                prompt = events.receive(10)
            session = imported.session
            assert (session.id, session.space, session.turns, session.status) == (
                1, "Work", 3, "ended")
            assert (session.started_at, session.ended_at) == (1785240300.0, 1785240307.25)
            assert session.participants == ["me", "Sarah"]
            assert (imported.chunks, imported.note) == (1, "")  # the embedder made vectors
            assert isinstance(prompt, SessionEnded)
            assert (prompt.session_id, prompt.space, prompt.duration_s) == (1, "Work", 7.25)
            assert prompt.gist == "Friday works, the database migration is done."

            shown = client.request(ShowSession(session_id=1))
            assert [(t.speaker, t.start, t.end, t.ref) for t in shown.turns] == [
                ("me", 0.0, 0.0, "u1"), ("Sarah", 3.5, 6.0, None), ("me", 7.25, 7.25, None)]

            for fmt, start in [("md", "# Atlas sync\n"), ("srt", "1\n00:00:00,000 --> "),
                               ("vtt", "WEBVTT\n")]:
                assert client.request(ExportSession(session_id=1, format=fmt)).text.startswith(
                    start)
            exported = client.request(ExportSession(session_id=1, format="json")).text
            again = client.request(ImportTranscript(content=exported.encode())).session
            assert (again.id, again.space, again.started_at) == (2, None, session.started_at)
            assert [(t.speaker, t.text, t.start, t.end, t.ref)
                    for t in client.request(ShowSession(session_id=2)).turns] == [
                (t.speaker, t.text, t.start, t.end, t.ref) for t in shown.turns]

            assert [s.id for s in client.request(ListSessions()).sessions] == [2, 1]
            assert [s.id for s in client.request(ListSessions(space="WORK")).sessions] == [1]
            assert [s.id for s in client.request(ListSessions(limit=1)).sessions] == [2]

            with pytest.raises(InvalidInput, match=r"^bad\.json: invalid transcript: .*"
                                                   r"`\$\.turns\[0\]\.t`"):
                client.request(ImportTranscript(
                    content=transcript(turns=[{"speaker": "me", "text": "x", "t": -1}]),
                    filename="bad.json"))
            with pytest.raises(InvalidInput, match="not valid JSON"):
                client.request(ImportTranscript(content=b"\x00\xff"))
            with pytest.raises(NotFound, match="no Space 'Nowhere' — see `braincue spaces list`"):
                client.request(ImportTranscript(content=transcript(), space="Nowhere"))
            with pytest.raises(NotFound, match="no session 9"):
                client.request(ShowSession(session_id=9))
            with pytest.raises(NotFound):
                client.request(ExportSession(session_id=9, format="md"))
            with pytest.raises(InvalidInput, match="unknown export format 'docx'"):
                client.request(ExportSession(session_id=1, format="docx"))
            with pytest.raises(NotFound):
                client.request(ListSessions(space="Nowhere"))
            with pytest.raises(InvalidInput, match="limit"):
                client.request(ListSessions(limit=0))
            # failed imports left nothing behind
            assert len(client.request(ListSessions()).sessions) == 2

        await in_thread(exchange)


async def test_spaces_and_documents(bare_home: Path) -> None:
    async with running_daemon(scripted_engines()) as daemon:

        def exchange() -> None:
            client = Client(timeout=30)
            job = client.request(AddSpace(name="Job hunt", activity="job")).space
            assert (job.id, job.name, job.activity, job.memory_enabled) == (1, "Job hunt", "job",
                                                                           True)
            with pytest.raises(InvalidInput, match="already"):
                client.request(AddSpace(name="job HUNT"))
            with pytest.raises(InvalidInput):
                client.request(AddSpace(name="Party", activity="party"))

            cv = client.request(AddDocument(
                filename="/somewhere/cv.md", content=b"# Jane Doe\n\n## Experience\n\nBuilt "
                b"the billing system at Acme.\n", space="job hunt", title="My CV",
                modified_at=1785240300.0)).document
            assert (cv.id, cv.title, cv.filename, cv.space, cv.chunks) == (
                1, "My CV", "cv.md", "Job hunt", 1)
            plan = client.request(AddDocument(
                filename="plan.pdf", content=make_pdf(["Quarterly plan for Atlas"]))).document
            assert (plan.space, plan.media_type, plan.title) == (None, "application/pdf", "plan")
            with pytest.raises(InvalidInput, match="already added"):
                client.request(AddDocument(filename="cv.md", content=b"# Jane Doe\n\n## Experience"
                                           b"\n\nBuilt the billing system at Acme.\n",
                                           space="Job hunt"))
            with pytest.raises(InvalidInput, match=r"unsupported document type '\.docx'"):
                client.request(AddDocument(filename="cv.docx", content=b"PK"))
            with pytest.raises(InvalidInput, match="filename"):
                client.request(AddDocument(filename="", content=b"text"))
            assert [d.id for d in client.request(ListDocuments()).documents] == [2, 1]
            assert [d.id for d in client.request(ListDocuments(space="Job hunt")).documents] == [1]

            client.request(ImportTranscript(content=transcript(), space="Job hunt"))
            listed = client.request(ListSpaces()).spaces
            assert [(s.name, s.sessions, s.documents) for s in listed] == [("Job hunt", 1, 1)]

            changed = client.request(SetSpace(name="job hunt", rename="Interviews",
                                              memory_enabled=False)).space
            assert (changed.name, changed.activity, changed.memory_enabled, changed.sessions) == (
                "Interviews", "job", False, 1)
            with pytest.raises(InvalidInput, match="nothing to change"):
                client.request(SetSpace(name="Interviews"))
            with pytest.raises(NotFound):
                client.request(SetSpace(name="Job hunt", activity="meeting"))

            removed = client.request(RemoveDocument(document_id=2))
            assert (removed.name, removed.deleted) == ("plan", {"chunks": 1, "documents": 1,
                                                                "vectors": 1})
            with pytest.raises(NotFound, match="no document 2"):
                client.request(RemoveDocument(document_id=2))

            gone = client.request(RemoveSpace(name="INTERVIEWS"))
            assert gone.name == "Interviews"
            assert gone.deleted == {"spaces": 1, "sessions": 1, "turns": 3, "chunks": 2,
                                    "documents": 1, "vectors": 2 + 3}  # + one per turn
            with pytest.raises(NotFound):
                client.request(RemoveSpace(name="Interviews"))
            status = client.request(Status())
            assert status.counts == {"spaces": 0, "sessions": 0, "turns": 0, "chunks": 0,
                                     "documents": 0, "assertions": 0, "vectors": 0}
            assert status.models_loaded == ["embed:scripted-bow-64"]

        await in_thread(exchange)
        assert daemon.store.list_spaces() == []


async def test_twenty_concurrent_clients_read_and_write_the_store(bare_home: Path) -> None:
    def session(n: int) -> None:
        with Client(timeout=60) as client:
            imported = client.request(ImportTranscript(content=transcript(title=f"call {n}")))
            for _ in range(5):
                shown = client.request(ShowSession(session_id=imported.session.id))
                assert shown.session.title == f"call {n}"
                assert len(client.request(ListSessions()).sessions) >= 1

    async with running_daemon(scripted_engines()) as daemon:
        failures = await run_clients(20, session)
        sessions = daemon.store.list_sessions()
    assert failures == []
    assert sorted(s.title for s in sessions) == sorted(f"call {n}" for n in range(20))
    assert {s.turn_count for s in sessions} == {3}


# ---------------------------------------------------------------------------------------------
# search


def test_search_results_keep_every_field_on_the_wire() -> None:
    assert set(SearchResult.__struct_fields__) == set(protocol.SearchHit.__struct_fields__)
    result = SearchResult(
        item="assertion", id=4, kind="decision", text="ship Friday", title="Atlas sync",
        date=5.0, speakers=("me",), session_id=1, turn_ids=(1, 2), refs=("u1",),
        anchor=Anchor(chunk_id=3, text="[h]\nbody", turn_ids=(1, 2), refs=("u1",)),
        assertions=(LinkedAssertion(id=5, kind="task", text="migrate"),),
        explain=Explanation(score=0.03, bonus=0.0, legs={"fts_chunks": LegHit(rank=1,
                                                                              score=2.5)}))
    hit = search_hit(result)
    assert msgspec.json.encode(hit) == msgspec.json.encode(result)
    assert hit.explain is not None and hit.explain.legs["fts_chunks"].rank == 1


async def test_search_over_ipc_in_a_scope(bare_home: Path) -> None:
    async with running_daemon(scripted_engines()):

        def exchange() -> None:
            client = Client(timeout=30)
            client.request(AddSpace(name="Atlas", activity="project"))
            client.request(AddSpace(name="Home", activity="personal"))
            client.request(ImportTranscript(content=transcript(), space="Atlas"))
            client.request(ImportTranscript(content=transcript(
                title="Garden", started_at="2026-08-02T10:00:00+02:00",
                turns=[{"speaker": "Ann", "text": "The database of seeds is in the shed.",
                        "t": 0}]), space="Home"))
            client.request(AddDocument(filename="notes.md", content=b"Ship checklist: run "
                                       b"the database migration first.\n"))

            found = client.request(protocol.Search(query="database migration", space="atlas",
                                                   explain=True)).results
            assert sorted((h.item, h.kind, h.title) for h in found) == [
                ("chunk", "document", "notes"), ("chunk", "transcript", "Atlas sync")]
            top = next(h for h in found if h.kind == "transcript")
            assert (top.session_id, top.speakers, top.turn_ids, top.refs) == (
                1, ["me", "Sarah"], [1, 2, 3], ["u1"])
            assert top.date == 1785240300.0
            assert top.explain is not None and set(top.explain.legs) == {"fts_chunks",
                                                                         "vector_turns"}
            assert top.explain.legs["fts_chunks"].score > 0  # BM25, negated: higher is better

            # another Space is never searched; profile-wide memory always is
            home_only = client.request(protocol.Search(query="database", space="Home")).results
            assert sorted(h.title for h in home_only) == ["Garden", "notes"]
            profile_wide = client.request(protocol.Search(query="database migration")).results
            assert [h.title for h in profile_wide] == ["notes"]
            assert len(client.request(protocol.Search(query="migration", space="Atlas",
                                                      k=1)).results) == 1
            before = client.request(protocol.Search(query="database", space="Home",
                                                    as_of=1785240300.0 + 86400)).results
            assert "Garden" not in [h.title for h in before]
            assert client.request(protocol.Search(query="   ")).results == []
            assert found[0].explain is not None
            assert client.request(protocol.Search(query="database")).results[0].explain is None
            with pytest.raises(NotFound, match="no Space 'Nowhere'"):
                client.request(protocol.Search(query="database", space="Nowhere"))
            with pytest.raises(InvalidInput, match="k: 0 results"):
                client.request(protocol.Search(query="database", k=0))

        await in_thread(exchange)


# ---------------------------------------------------------------------------------------------
# every request type


def samples(session_id: int) -> list[Request[Any]]:
    """One harmless request of each type, in an order that makes sense on a fresh profile."""
    p = protocol
    return [
        p.Ping(), p.Status(), p.SettingsGet(), p.SettingsSet(key="search_k", value="6"),
        p.ListSpaces(), p.AddSpace(name="Work"), p.SetSpace(name="Work", activity="project"),
        p.ListSessions(), p.ShowSession(session_id=session_id),
        p.ExportSession(session_id=session_id, format="md"),
        p.ImportTranscript(content=transcript()),
        p.ListDocuments(), p.AddDocument(filename="notes.txt", content=b"Offsite in Lisbon."),
        p.RemoveDocument(document_id=99),
        p.Start(title="chat"), p.Stop(), p.Pause(paused=True), p.Pause(paused=False),
        p.ImportAudio(path="/nonexistent/call.wav"),
        p.Remember(session_id=session_id, answer="later"), p.History(assertion_id=99),
        p.Forget(before=0.0),
        p.MemoryList(), p.MemoryApprove(memory_id=99), p.MemoryReject(memory_id=99),
        p.MemoryArchive(memory_id=99), p.MemoryEdit(memory_id=99, text="x"),
        p.MemoryScope(memory_id=99, profile=True), p.MemoryExpire(memory_id=99, expires_at=None),
        p.Ask(question="When do we ship Atlas?"), p.AskCancel(request_id="no-such-ask"),
        p.ListAssertions(kinds=["decision"]),
        p.OpenItems(), p.SelectItems(owner="Sarah", period="this month"),
        p.CloseItem(item_id=99, status="done"), p.CorrectItem(item_id=99, owner="Sarah"),
        p.RetractItem(item_id=99), p.ReopenItem(item_id=99),
        p.Search(query="when do we ship Atlas", explain=True),
        p.VoicesList(), p.VoiceName(voice="Them 9", name="Sarah"), p.VoiceShow(voice="99"),
        p.VoiceMerge(keep="98", other="99"), p.VoiceForget(voice="99"),
        p.RenameSpeaker(session_id=session_id, speaker="Nobody", name="Sarah"),
        p.RemoveSpace(name="Work"),
    ]


# The protocol's request types (other tests register types of their own)
PROTOCOL_TYPES = {tag: cls for tag, cls in protocol.REQUESTS.types.items()
                  if cls.__module__.startswith(f"{protocol.__name__}.")}

# Types whose part is not wired into the daemon yet: none (a new type's part lists it here
# until its handlers are registered).
NOT_SERVED_YET: set[str] = set()


async def test_every_request_type_gets_its_reply_or_a_typed_error(bare_home: Path) -> None:
    async with running_daemon(scripted_engines()) as daemon:
        session = await trio.to_thread.run_sync(
            lambda: Client(timeout=30).request(ImportTranscript(content=transcript())).session.id)
        requests = samples(session)
        sampled = {protocol.tag_of(type(r)) for r in requests}
        assert set(PROTOCOL_TYPES) - sampled == set(), "add a sample of each new request type"
        outcomes: dict[str, str] = {}

        def exchange() -> None:
            client = Client(timeout=60)
            for request in requests:
                tag = protocol.tag_of(type(request))
                try:
                    reply = client.request(request)
                except BrainCueError as e:
                    outcomes[tag] = e.code
                else:
                    assert isinstance(reply, request.reply_type)
                    outcomes.setdefault(tag, "ok")

        await in_thread(exchange)
        served = {tag for tag, cls in PROTOCOL_TYPES.items() if cls in daemon.handlers}
    unserved = {tag for tag, code in outcomes.items() if code == protocol.UNAVAILABLE}
    assert unserved == set(PROTOCOL_TYPES) - served
    assert unserved <= NOT_SERVED_YET
    assert not {tag: code for tag, code in outcomes.items()
                if code in (protocol.INTERNAL, protocol.BAD_REQUEST, protocol.UNKNOWN_TYPE)}
    assert outcomes["ping"] == outcomes["list_sessions"] == outcomes["add_document"] == "ok"
    assert outcomes["show_session"] == outcomes["export_session"] == "ok"
    assert outcomes["remove_document"] == "not_found"


# ---------------------------------------------------------------------------------------------
# engines


def test_without_models_the_daemon_runs_on_text(bare_home: Path, caplog: pytest.LogCaptureFixture
                                                ) -> None:
    engines = Engines(Settings, Path(bare_home / "no-models"))
    with caplog.at_level(logging.WARNING):
        assert engines.open_embedder() is None
    assert "no vectors: no embed model is installed" in caplog.text
    with pytest.raises(ModelNotInstalled, match="braincue models install"):
        engines.generator()
    assert engines.loaded() == []


async def test_the_daemon_answers_without_an_embedding_model(bare_home: Path) -> None:
    async with running_daemon():

        def exchange() -> None:
            client = Client(timeout=30)
            imported = client.request(ImportTranscript(content=transcript()))
            assert imported.note.startswith("stored for full-text search; vectors are added")
            status = client.request(Status())
            assert status.models_loaded == []
            assert (status.counts["turns"], status.counts["vectors"]) == (3, 0)

        await in_thread(exchange)


def test_idle_checks_follow_the_timeout() -> None:
    assert unload_check_interval(300) == 30
    assert unload_check_interval(50) == 5
    assert unload_check_interval(0) == 1


async def test_the_generator_is_unloaded_when_idle(autojump_clock: trio.testing.MockClock
                                                   ) -> None:
    class Idle(ScriptedGenerator):
        def __init__(self) -> None:
            super().__init__([])
            self.checks: list[float] = []

        async def unload_if_idle(self) -> bool:
            self.checks.append(trio.current_time())
            return True

    generator = Idle()
    engines = Engines(lambda: Settings(idle_unload_min=40 / 60), Path("/none"), generator=generator)
    with trio.move_on_after(13):
        await unload_idle_engines(engines, lambda: Settings(idle_unload_min=40 / 60))
    assert generator.checks == [4, 8, 12]


@pytest.mark.slow
async def test_the_language_model_loads_on_first_use_and_unloads_when_idle(
    installed_model: Callable[[str], Path], models_dir: Path
) -> None:
    installed_model("qwen2.5-coder-0.5b")  # fails, never skips, when it is missing
    engines = Engines(lambda: Settings(llm_model="qwen2.5-coder-0.5b", idle_unload_min=0,
                                       llm_threads=2), models_dir)
    try:
        generator = engines.generator()
        assert engines.generator() is generator
        assert engines.loaded() == []  # created, not loaded
        tokens = [t async for t in generator.stream(
            [protocol_message("Say hello in one word.")], max_tokens=4)]
        assert tokens and engines.loaded() == [f"llm:{generator.model_id}"]
        await engines.unload_idle()
        assert not generator.loaded and engines.loaded() == []
    finally:
        engines.close()


def protocol_message(text: str) -> Any:
    from daemon.llm.generate import ChatMessage

    return ChatMessage("user", text)


# ---------------------------------------------------------------------------------------------
# stopping


def test_sigterm_leaves_a_consistent_database_and_no_socket(bare_home: Path) -> None:
    daemon = start_daemon(bare_home)
    files = RuntimeFiles.of(Paths.resolve("default"))
    try:
        with Client(timeout=30) as client:
            for n in range(5):
                client.request(ImportTranscript(content=transcript(title=f"call {n}")))
    finally:
        code = daemon.stop(signal.SIGTERM)
    assert code == 0, daemon.log()
    assert not files.requests.exists() and not files.events.exists() and not files.lock.exists()
    assert "Traceback" not in daemon.log()
    db = Paths.resolve("default").data_dir / "braincue.db"
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0
    conn = connect(db, KeyStore(Paths.resolve("default")).find(),
                   flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert conn.execute("PRAGMA integrity_check").get == "ok"
        assert conn.execute("SELECT count(*) FROM turns").get == 15
        assert conn.execute("SELECT count(*) FROM sessions WHERE status = 'ended'").get == 5
    finally:
        conn.close()


@pytest.mark.slow
def test_sigterm_saves_the_vector_index(bare_home: Path, monkeypatch: pytest.MonkeyPatch,
                                        installed_model: Callable[[str], Path],
                                        models_dir: Path) -> None:
    installed_model("all-minilm-l6-v2")  # fails, never skips, when it is missing
    monkeypatch.setenv("BRAINCUE_MODELS", str(models_dir))
    daemon = start_daemon(bare_home)
    try:
        with Client(timeout=60) as client:
            client.request(ImportTranscript(content=transcript()))
            status = client.request(Status())
            assert status.counts["vectors"] == 1 + 3  # the chunk and its three turns
            assert status.models_loaded[0].startswith("embed:all-minilm-l6-v2")
    finally:
        assert daemon.stop(signal.SIGTERM) == 0, daemon.log()
    data_dir = Paths.resolve("default").data_dir
    sidecar = json.loads((data_dir / "vectors-chunk.json").read_text())
    assert sidecar["count"] == 1
    restarted = start_daemon(bare_home)
    try:
        assert "vector index" not in restarted.log()  # the saved index was taken as is
    finally:
        assert restarted.stop(signal.SIGTERM) == 0


def test_a_store_that_cannot_open_stops_the_daemon_with_one_line(bare_home: Path) -> None:
    paths = Paths.resolve("default")
    paths.data_dir.mkdir(parents=True)
    (paths.data_dir / "braincue.db").write_bytes(b"not a database at all" * 100)
    with pytest.raises(RuntimeError, match="exited with 1") as failed:
        start_daemon(bare_home)
    assert "braincued: error: the database" in str(failed.value)
    assert "is encrypted (or damaged) and no key for it was found" in str(failed.value)
    assert "Traceback" not in str(failed.value)
    assert not RuntimeFiles.of(paths).lock.exists()

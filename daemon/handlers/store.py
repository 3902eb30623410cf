"""Handlers for what clients read and change in the store: sessions, transcripts, exports,
Spaces and documents.

Each handler runs its store calls on a worker thread (``Store.run``) and answers with the
protocol's own structs, converted here from the store's rows by pure functions. Failures are
daemon.errors exceptions (NotFound, InvalidInput...), which the server turns into typed Error
replies.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from daemon.errors import InvalidInput
from daemon.handlers.context import Context
from daemon.handlers.progress import embedding_progress
from daemon.handlers.wire import (
    assertion_infos,
    deleted_counts,
    document_info,
    session_info,
    space_info,
    space_names,
    turn_infos,
)
from daemon.ipc.dispatch import Publish
from daemon.ipc.protocol import (
    AddDocument,
    AddSpace,
    DeletedReply,
    DocumentReply,
    DocumentsReply,
    ExportReply,
    ExportSession,
    ImportTranscript,
    ImportTranscriptReply,
    ListDocuments,
    ListSessions,
    ListSpaces,
    RemoveDocument,
    RemoveSpace,
    RenameSpeaker,
    SessionEnded,
    SessionInfo,
    SessionReply,
    SessionsReply,
    SetSpace,
    ShowSession,
    SpaceInfo,
    SpaceReply,
    SpacesReply,
)
from daemon.live.rules import gist
from daemon.llm.embed import EmbedProgress
from daemon.memory import open_items
from daemon.store import receipts, voices
from daemon.store.chunking import format_offset
from daemon.store.documents import extract_text
from daemon.store.export import render
from daemon.store.records import Space, Turn
from daemon.store.store import Store
from daemon.store.transcript import import_transcript, parse_named_transcript

NO_VECTORS_NOTE = (
    "stored for full-text search; vectors are added once an embedding model is installed "
    "(`braincue models install`) and the daemon restarts"
)


# -- handlers ----------------------------------------------------------------------------------


async def register(daemon: Context) -> None:
    """The store's requests: sessions, transcripts, Spaces and documents."""
    store = daemon.store

    async def counts() -> dict[str, int]:
        return await store.run(store.counts)

    daemon.counters.append(counts)
    _register_sessions(daemon)
    _register_transcripts(daemon)
    _register_spaces(daemon)
    _register_documents(daemon)


def _register_sessions(daemon: Context) -> None:
    store = daemon.store
    db = store.run

    async def list_sessions(request: ListSessions) -> SessionsReply:
        if request.limit is not None and request.limit < 1:
            raise InvalidInput(f"limit: {request.limit} is not a positive number")

        def work() -> SessionsReply:
            found = store.list_sessions(space_id=store.space_id(request.space),
                                        limit=request.limit)
            names = space_names(store)
            keeps = {k.session_id: k for k in store.keep_states([s.id for s in found])}
            heard = receipts.receipts(store, [s.id for s in found])
            return SessionsReply(sessions=[session_info(s, names, keeps.get(s.id),
                                                        heard.get(s.id)) for s in found])

        return await db(work)

    def session_reply(session_id: int) -> SessionReply:
        session = store.get_session(session_id)
        turns = store.turns(session.id)
        archive = "\n".join(c.body for c in store.archive(session.id))
        said = store.list_assertions(session_id=session.id, include_invalidated=True)
        return SessionReply(
            session=session_info(session, space_names(store), store.keep_state(session.id),
                                 receipts.receipt(store, session.id)),
            turns=turn_infos(turns),
            archive=archive or None,
            assertions=assertion_infos(store, sorted(said, key=lambda a: (a.occurred_at,
                                                                           a.id))),
            evidence=open_items.said_in(store, said),
        )

    async def show_session(request: ShowSession) -> SessionReply:
        return await db(session_reply, request.session_id)

    async def rename_speaker(request: RenameSpeaker) -> SessionReply:
        def work() -> SessionReply:
            voices.rename_speaker(store, request.session_id, request.speaker, request.name)
            return session_reply(request.session_id)

        return await db(work)

    async def export_session(request: ExportSession) -> ExportReply:
        def work() -> ExportReply:
            session = store.get_session(request.session_id)
            turns = store.turns(session.id)
            text = render(request.format, session, turns)
            masked = [format_offset(t.start) for t in turn_infos(turns) if t.masked]
            if masked and request.format == "md":  # the words as said; where search masks
                text += (f"\n\n_A secret said at {', '.join(masked)} is kept here as said and "
                         "masked in search, ask and MCP._\n")
            return ExportReply(text=text, format=request.format)

        return await db(work)

    handlers = daemon.handlers
    handlers.add(ListSessions, list_sessions)
    handlers.add(ShowSession, show_session)
    handlers.add(RenameSpeaker, rename_speaker)
    handlers.add(ExportSession, export_session)


def _register_transcripts(daemon: Context) -> None:
    store = daemon.store
    db = store.run

    async def import_transcript_(request: ImportTranscript,
                                 publish: Publish) -> ImportTranscriptReply:
        def work(progress: EmbedProgress) -> tuple[SessionInfo, list[Turn], int]:
            transcript = parse_named_transcript(request.content, request.filename)
            progress.expect_at_least(len(transcript.turns))  # each turn is embedded
            session, turns, chunks = import_transcript(store, transcript, request.space,
                                                       progress)
            return session_info(session, space_names(store)), turns, chunks

        progress = embedding_progress(request.id, publish)
        session, turns, chunks = await db(work, progress)
        daemon.publish(SessionEnded(
            session_id=session.id,
            duration_s=(session.ended_at or session.started_at) - session.started_at,
            gist=gist([t.text for t in turns]),
            space=session.space,
            speakers=list(dict.fromkeys(t.speaker for t in turns)),
        ))
        return ImportTranscriptReply(session=session, chunks=chunks, note=_vectors_note(store))

    handlers = daemon.handlers
    handlers.add_streaming(ImportTranscript, import_transcript_)


def _register_spaces(daemon: Context) -> None:
    store = daemon.store
    db = store.run

    async def list_spaces(request: ListSpaces) -> SpacesReply:
        def work() -> SpacesReply:
            return SpacesReply(spaces=[_counted(store, s) for s in store.list_spaces()])

        return await db(work)

    async def add_space(request: AddSpace) -> SpaceReply:
        space = await db(lambda: store.create_space(
            request.name, activity=request.activity, memory_enabled=request.memory_enabled))
        return SpaceReply(space=space_info(space))

    async def set_space(request: SetSpace) -> SpaceReply:
        if request.rename is None and request.activity is None and request.memory_enabled is None:
            raise InvalidInput(f"nothing to change in Space {request.name!r}",
                               fix="give a new name, activity or memory setting")

        def work() -> SpaceReply:
            space = store.update_space(
                store.get_space(request.name).id,
                name=request.rename,
                activity=request.activity,
                memory_enabled=request.memory_enabled,
            )
            return SpaceReply(space=_counted(store, space))

        return await db(work)

    async def remove_space(request: RemoveSpace) -> DeletedReply:
        def work() -> DeletedReply:
            space = store.get_space(request.name)
            return DeletedReply(name=space.name, deleted=deleted_counts(
                store.delete_space(space.id)))

        return await db(work)

    handlers = daemon.handlers
    handlers.add(ListSpaces, list_spaces)
    handlers.add(AddSpace, add_space)
    handlers.add(SetSpace, set_space)
    handlers.add(RemoveSpace, remove_space)


def _register_documents(daemon: Context) -> None:
    store = daemon.store
    db = store.run

    async def list_documents(request: ListDocuments) -> DocumentsReply:
        def work() -> DocumentsReply:
            found = store.list_documents(space_id=store.space_id(request.space))
            names = space_names(store)
            return DocumentsReply(documents=[document_info(d, names) for d in found])

        return await db(work)

    async def add_document(request: AddDocument, publish: Publish) -> DocumentReply:
        filename = Path(request.filename).name
        if not filename:
            raise InvalidInput("filename: a document needs its file's name",
                               fix="its extension (.txt, .md, .pdf) says how to read it")

        def work(progress: EmbedProgress) -> DocumentReply:
            text = msgspec.structs.replace(extract_text(filename, request.content),
                                           modified_at=request.modified_at)
            document = store.add_document(text, space_id=store.space_id(request.space),
                                          title=request.title, progress=progress)
            return DocumentReply(document=document_info(document, space_names(store)),
                                 note=_vectors_note(store))

        return await db(work, embedding_progress(request.id, publish))

    async def remove_document(request: RemoveDocument) -> DeletedReply:
        def work() -> DeletedReply:
            title = store.get_document(request.document_id).title
            return DeletedReply(name=title, deleted=deleted_counts(
                store.delete_document(request.document_id)))

        return await db(work)

    handlers = daemon.handlers
    handlers.add(ListDocuments, list_documents)
    handlers.add_streaming(AddDocument, add_document)
    handlers.add(RemoveDocument, remove_document)


def _counted(store: Store, space: Space) -> SpaceInfo:
    """A Space with how many sessions and documents it holds."""
    return space_info(space, sessions=len(store.list_sessions(space_id=space.id)),
                      documents=len(store.list_documents(space_id=space.id)))


def _vectors_note(store: Store) -> str:
    return NO_VECTORS_NOTE if store.embedder is None else ""

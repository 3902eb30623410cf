"""The domain's records as the protocol shows them: every conversion to a wire type is here
(pure, or a blocking read where a Space's name or a closure's evidence is looked up)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from daemon.ipc.protocol import (
    AskReply,
    AssertionInfo,
    CarriedForward,
    Citation,
    ClosureInfo,
    DocumentInfo,
    Event,
    EvidenceInfo,
    GapInfo,
    HistoryReply,
    ImportAudio,
    ImportAudioReply,
    ImportProgress,
    ItemInfo,
    LiveStatus,
    ReceiptInfo,
    RememberReply,
    RestatementInfo,
    SearchHit,
    SessionEnded,
    SessionInfo,
    SessionStarted,
    SpaceInfo,
    Start,
    StartReply,
    StatusEvent,
    StopReply,
    TurnEvent,
    TurnInfo,
    VoiceInfo,
)
from daemon.live import records as live
from daemon.live.gaps import receipt_text
from daemon.memory.ask import Answer
from daemon.memory.evidence import Evidence
from daemon.memory.grounding import Cited
from daemon.memory.open_items import CARRIED_MAX, OpenItem
from daemon.memory.remember import Remembered
from daemon.store.receipts import Receipt
from daemon.store.records import (
    Assertion,
    Deleted,
    Document,
    KeepState,
    Restatement,
    Session,
    Space,
    Turn,
)
from daemon.store.search import SearchResult
from daemon.store.store import Store
from daemon.store.turns import masked_forms
from daemon.store.voices import StoredVoice


def item_infos(
    store: Store,
    items: Sequence[OpenItem],
    status: Mapping[int, str] | None = None,
    closed_by: Mapping[int, Assertion] | None = None,
) -> list[ItemInfo]:
    """Items with their Space's name; ``status`` by id (default: every one open), and the
    version that closed each closed one (a blocking read)."""
    return named_item_infos(items, space_names(store) if items else {}, status, closed_by)


def named_item_infos(
    items: Sequence[OpenItem],
    names: Mapping[int, str],
    status: Mapping[int, str] | None = None,
    closed_by: Mapping[int, Assertion] | None = None,
) -> list[ItemInfo]:
    """As :func:`item_infos`, with the Spaces' names given."""
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


def carried_items(carried: live.Carried) -> list[ItemInfo]:
    """The open items a session inherits (each of its Space or profile-wide), cut to
    CARRIED_MAX."""
    forward = carried.forward
    return named_item_infos(forward.items[:CARRIED_MAX], {forward.space_id: carried.space})


# -- live capture ------------------------------------------------------------------------------


def start_options(request: Start) -> live.StartOptions:
    return live.StartOptions(space=request.space, activity=request.activity, title=request.title)


def start_reply(started: live.Started) -> StartReply:
    carried = started.carried
    return StartReply(
        session_id=started.session_id, started_at=started.started_at, message=started.message,
        space=started.space, activity=started.activity, title=started.title,
        carried_message="" if carried is None else carried.forward.message,
        carried=[] if carried is None else carried_items(carried),
    )


def stop_reply(ended: live.Ended) -> StopReply:
    return StopReply(session_id=ended.session_id, duration_s=ended.duration_s, gist=ended.gist,
                     turns=ended.turns, space=ended.space, receipt=receipt_info(ended.receipt))


def receipt_info(receipt: Receipt | None) -> ReceiptInfo | None:
    if receipt is None:
        return None
    return ReceiptInfo(text=receipt_text(receipt), length_s=receipt.length_s,
                       heard_s=dict(receipt.heard_s),
                       gaps=[msgspec.convert(g, GapInfo, from_attributes=True)
                             for g in receipt.gaps])


def import_options(request: ImportAudio) -> live.ImportOptions:
    return live.ImportOptions(
        path=Path(request.path), stereo=request.stereo, speaker=request.speaker,
        voices=request.voices, space=request.space, activity=request.activity,
        title=request.title, started_at=request.started_at,
    )


def import_reply(imported: live.Imported) -> ImportAudioReply:
    return msgspec.convert(imported, ImportAudioReply, from_attributes=True)


def import_progress(request_id: str, so_far: live.ImportedSoFar) -> ImportProgress:
    return ImportProgress(request_id=request_id, done_s=so_far.done_s, total_s=so_far.total_s,
                          turns=so_far.turns)


def live_status(state: live.LiveState) -> LiveStatus:
    return msgspec.convert(state, LiveStatus, from_attributes=True)


def live_event(event: live.LiveEvent) -> Event:
    """What live capture tells, as the subscribers see it."""
    match event:
        case Turn():
            return TurnEvent(session_id=event.session_id, turn_id=event.id,
                             speaker=event.speaker, source=event.source, start=event.start,
                             end=event.end, text=event.text)
        case live.Began():
            return msgspec.convert(event, SessionStarted, from_attributes=True)
        case live.Ended():
            return SessionEnded(session_id=event.session_id, duration_s=event.duration_s,
                                gist=event.gist, space=event.space,
                                speakers=list(event.speakers),
                                receipt=receipt_info(event.receipt))
        case live.Carried():
            return CarriedForward(session_id=event.session_id, space=event.space,
                                  message=event.forward.message, items=carried_items(event))
        case live.CaptureChanged():
            return StatusEvent(capture=event.capture, message=event.message,
                               alert=event.alert)


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


def space_info(space: Space, *, sessions: int = 0, documents: int = 0) -> SpaceInfo:
    return msgspec.structs.replace(msgspec.convert(space, SpaceInfo, from_attributes=True),
                                   sessions=sessions, documents=documents)


def session_info(session: Session, space_names: Mapping[int, str],
                 keep: KeepState | None = None, receipt: Receipt | None = None) -> SessionInfo:
    return SessionInfo(
        id=session.id,
        title=session.title,
        activity=session.activity,
        status=session.status,
        started_at=session.started_at,
        ended_at=session.ended_at,
        space=_name(session.space_id, space_names),
        participants=list(session.participants),
        turns=session.turn_count,
        practice=session.practice,
        keep_status=None if keep is None else keep.status,
        keep_reason=None if keep is None else keep.reason,
        receipt=receipt_info(receipt),
    )


def turn_infos(turns: Sequence[Turn]) -> list[TurnInfo]:
    """A session's turns as said, each with its masked form where a secret is masked."""
    return [turn_info(t, masked) for t, masked in zip(turns, masked_forms(turns), strict=True)]


def turn_info(turn: Turn, masked: str | None = None) -> TurnInfo:
    return msgspec.structs.replace(msgspec.convert(turn, TurnInfo, from_attributes=True),
                                   masked=masked)


def document_info(document: Document, space_names: Mapping[int, str]) -> DocumentInfo:
    return DocumentInfo(
        id=document.id,
        title=document.title,
        filename=document.filename,
        media_type=document.media_type,
        chars=document.chars,
        chunks=document.chunk_count,
        added_at=document.added_at,
        space=_name(document.space_id, space_names),
    )


def deleted_counts(deleted: Deleted) -> dict[str, int]:
    """What a deletion removed, by kind, leaving out the kinds it removed none of."""
    return {kind: n for kind, n in msgspec.structs.asdict(deleted).items() if n}


def _name(space_id: int | None, space_names: Mapping[int, str]) -> str | None:
    return None if space_id is None else space_names.get(space_id)


def space_names(store: Store) -> dict[int, str]:
    return {space.id: space.name for space in store.list_spaces()}


def assertion_infos(store: Store, assertions: Sequence[Assertion]) -> list[AssertionInfo]:
    """Assertions as the protocol shows them, each with its Space's name (a blocking read)."""
    names = {s.id: s.name for s in store.list_spaces()} if assertions else {}
    return [
        AssertionInfo(
            id=a.id, kind=a.kind, text=a.text, about_person=a.about_person,
            review_status=a.review_status, source=a.source, space_id=a.space_id,
            space=None if a.space_id is None else names.get(a.space_id),
            occurred_at=a.occurred_at, recorded_at=a.recorded_at, chosen=a.chosen,
            alternatives=list(a.alternatives), reasoning=a.reasoning, owner=a.owner, due=a.due,
            session_id=a.session_id, anchor_chunk_id=a.anchor_chunk_id,
            invalidated_at=a.invalidated_at, superseded_by=a.superseded_by,
            expires_at=a.expires_at,
        )
        for a in assertions
    ]


def restatement_infos(restatements: Sequence[Restatement]) -> list[RestatementInfo]:
    return [
        RestatementInfo(assertion_id=r.assertion_id, session_id=r.session_id,
                        session_title=r.session_title, occurred_at=r.occurred_at,
                        anchor_chunk_id=r.anchor_chunk_id)
        for r in restatements
    ]


def history_reply(store: Store, chain: Sequence[Assertion]) -> HistoryReply:
    """An assertion's history as the protocol shows it: its versions, where they were said
    again, and the versions that closed it as an open item (a blocking read)."""
    ids = [a.id for a in chain]
    return HistoryReply(chain=assertion_infos(store, chain),
                        restatements=restatement_infos(store.restatements(ids)),
                        closures=chain_closures(store, ids))


def remember_reply(outcome: Remembered) -> RememberReply:
    return msgspec.convert(outcome, RememberReply, from_attributes=True)


def search_hit(result: SearchResult) -> SearchHit:
    """A result as the protocol shows it (the same fields, as plain lists and structs)."""
    return msgspec.convert(msgspec.to_builtins(result), SearchHit)


def voice_info(v: StoredVoice) -> VoiceInfo:
    return VoiceInfo(id=v.id, name=v.name, sessions=v.sessions, turns=v.turns,
                     seconds=round(v.seconds, 1), created_at=v.created_at, model_id=v.model_id,
                     last_heard=v.last_heard)


def voice_summary(v: StoredVoice) -> str:
    """What `voices show` says of a named voice: what its print rests on, when it was heard."""
    heard = ("not heard since it was named" if v.last_heard is None else
             f"last heard {time.strftime('%Y-%m-%d %H:%M', time.localtime(v.last_heard))}")
    return (f"{v.name} (voice {v.id}): its print rests on {v.seconds:.0f} s of speech "
            f"confirmed as theirs (named under {v.model_id}); {v.turns} turns in "
            f"{v.sessions} session(s) show the name; {heard}")


def citation(cited: Cited) -> Citation:
    source = cited.source
    return Citation(n=source.n, title=source.title, session_id=source.session_id,
                    date=source.date, speaker=cited.speaker, quote=cited.quote,
                    verified=cited.verified, kind=source.kind, chunk_id=source.chunk_id,
                    document_id=source.document_id)


def ask_reply(answer: Answer) -> AskReply:
    return AskReply(answer=answer.text, sources=[citation(c) for c in answer.citations],
                    question=answer.question, evidence=evidence_infos(answer.evidence),
                    nothing_found=answer.nothing_found, declined=answer.declined,
                    cancelled=answer.cancelled)


def evidence_infos(evidence: Sequence[Evidence]) -> list[EvidenceInfo]:
    infos = []
    for e in evidence:
        item = e.item
        infos.append(EvidenceInfo(
            n=e.n, kind=e.kind, title=e.title, text=e.text, date=e.date, speaker=e.speaker,
            start=e.start, ref=e.ref, session_id=e.session_id, chunk_id=e.chunk_id,
            document_id=e.document_id, item_kind="" if item is None else item.kind,
            chosen=None if item is None else item.chosen,
            alternatives=[] if item is None else list(item.alternatives),
            reasoning=None if item is None else item.reasoning,
            owner=None if item is None else item.owner, due=None if item is None else item.due,
            status="" if item is None else item.status))
    return infos

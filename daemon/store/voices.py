"""Named voices in the database, and relabelling the turns a voice spoke.

A voice's voiceprint (float32, L2-normed) is stored only once the user names it. Turns keep the
session voice they were heard as (``voice_label``, "Them 2") beside their ``speaker``, so a
name can be given later and taken back (forget restores "Them 2"). A relabel rewrites what
shows the speaker: the turns, the context headers and bodies of their transcript chunks (FTS
entries follow, vectors are re-embedded), the session's archive text, its assertions' owners
and its participants.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw
import numpy as np

from daemon.errors import InvalidInput, NotFound
from daemon.store import chunking, sql, writes
from daemon.store.store import Store
from daemon.store.vectors import Vectors, from_blob, to_blob

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoredVoice:
    id: int
    name: str
    model_id: str
    voiceprint: Vectors
    seconds: float
    created_at: float
    sessions: int = 0
    turns: int = 0
    last_heard: float | None = None  # when a turn shown with its name last ended (unix time)


@dataclass(frozen=True)
class Relabel:
    """In ``session_id``, the turns ``where`` says (heard as ``old``) become ``new``."""

    session_id: int
    old: str
    new: str
    where: str  # a condition on turns ...
    params: tuple[object, ...]  # ... and its parameters


def by_label(session_id: int, label: str, new: str) -> Relabel:
    return Relabel(session_id, label, new, "voice_label = ?", (label,))


def by_speaker(session_id: int, old: str, new: str) -> Relabel:
    return Relabel(session_id, old, new, "speaker = ?", (old,))


@dataclass
class _ToEmbed:
    """What a relabel changed, to embed afresh once it has committed."""

    chunks: list[int] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    assertions: list[int] = field(default_factory=list)

_VOICE_COLUMNS = (
    "v.id, v.name, v.model_id, v.voiceprint, v.seconds, v.created_at,"
    " (SELECT count(DISTINCT session_id) FROM turns t WHERE t.voice_id = v.id),"
    " (SELECT count(*) FROM turns t WHERE t.voice_id = v.id),"
    " (SELECT max(s.started_at + t.end_s) FROM turns t JOIN sessions s ON s.id = t.session_id"
    "  WHERE t.voice_id = v.id)"
)


def _voice(row: Any) -> StoredVoice:
    vid, name, model_id, blob, seconds, created, sessions, turns, last_heard = row
    return StoredVoice(vid, name, model_id, from_blob(blob, len(blob) // 4), seconds, created,
                       sessions, turns, last_heard)


def _clean_name(name: str) -> str:
    cleaned = " ".join(name.split())
    if not cleaned:
        raise InvalidInput("name: a voice needs a name")
    if cleaned.casefold() in {"me", "them"} or re.fullmatch(r"(?i)them \d+", cleaned):
        raise InvalidInput(f"name: {cleaned!r} is what BrainCue calls unnamed speakers",
                           fix="give the voice a person's name")
    return cleaned


def list_voices(store: Store) -> list[StoredVoice]:
    rows = store.db.read(
        lambda conn: sql.rows(conn, f"SELECT {_VOICE_COLUMNS} FROM voices v ORDER BY v.name")
    )
    return [_voice(r) for r in rows]


def get_voice(store: Store, ref: int | str) -> StoredVoice:
    """A voice by id or by name (case-insensitive)."""
    where, param = ("v.id = ?", ref) if isinstance(ref, int) else ("v.name = ? COLLATE NOCASE", ref)
    row = store.db.read(
        lambda conn: sql.row(conn, f"SELECT {_VOICE_COLUMNS} FROM voices v WHERE {where}", (param,))
    )
    if row is None:
        raise NotFound(f"no voice {ref}", fix="`braincue voices list` shows them")
    return _voice(row)


def _relabel(conn: apsw.Connection, changes: writes.IndexChanges, relabels: Sequence[Relabel],
             voice_id: int | None) -> _ToEmbed:
    """Rewrite turns and what shows them; returns what to re-embed."""
    out = _ToEmbed()
    for r in relabels:
        ids = sql.column(
            conn,
            f"SELECT id FROM turns WHERE session_id = ? AND {r.where} AND source != 'mic'",
            (r.session_id, *r.params),
        )
        if not ids:
            continue
        conn.execute(
            "UPDATE turns SET speaker = ?, voice_id = ?"
            " WHERE id IN (SELECT value FROM json_each(?))",
            (r.new, voice_id, sql.json_ids(ids)),
        )
        out.turns += ids
        writes.drop_vectors(conn, changes, "turn", ids)
        _rewrite_session(conn, changes, r, out)
    return out


def _rewrite_session(conn: apsw.Connection, changes: writes.IndexChanges, r: Relabel,
                     out: _ToEmbed) -> None:
    started_at, title, participants = sql.row(
        conn, "SELECT started_at, title, participants FROM sessions WHERE id = ?", (r.session_id,)
    )
    names = [r.new if p == r.old else p for p in json.loads(participants)]
    names = list(dict.fromkeys(names))
    conn.execute("UPDATE sessions SET participants = ? WHERE id = ?",
                 (json.dumps(names), r.session_id))
    ctx = chunking.ChunkContext(date=writes.local_date(started_at), kind="transcript",
                                title=title, participants=tuple(names))
    touched = []
    for chunk_id, first, last, body, occurred_at, closed in sql.rows(
        conn,
        "SELECT id, first_turn, last_turn, body, occurred_at, closed FROM chunks"
        " WHERE session_id = ? AND kind = 'transcript'",
        (r.session_id,),
    ):
        covered = writes.chunk_turns_between(conn, r.session_id, first, last)
        if not covered:
            continue
        if len(covered) == 1:  # maybe one piece of a long turn: keep the piece, new speaker
            rest = body.split(": ", 1)[1] if ": " in body else body
            new_body = f"{chunking.turn_line(covered[0]).split(': ', 1)[0]}: {rest}"
        else:
            new_body = "\n".join(chunking.turn_line(t) for t in covered)
        new_header = chunking.header(ctx, covered[0].speaker, covered[0].start)
        writes.update_chunk(conn, chunk_id, header=new_header, body=new_body,
                            occurred_at=occurred_at, first_turn=first, last_turn=last,
                            closed=bool(closed))
        touched.append(chunk_id)
    # the archive and the assertions of the session name speakers too
    word = re.compile(rf"(?<!\w){re.escape(r.old)}(?!\w)")
    for chunk_id, header, body, occurred_at in sql.rows(
        conn, "SELECT id, header, body, occurred_at FROM chunks WHERE session_id = ?"
        " AND kind = 'session'", (r.session_id,),
    ):
        new_header, new_body = word.sub(r.new, header), word.sub(r.new, body)
        if (new_header, new_body) != (header, body):
            writes.update_chunk(conn, chunk_id, header=new_header, body=new_body,
                                occurred_at=occurred_at, first_turn=None,  # type: ignore[arg-type]
                                last_turn=None, closed=True)  # type: ignore[arg-type]
            touched.append(chunk_id)
    for assertion_id, owner, text, chosen, reasoning in sql.rows(
        conn, "SELECT id, owner, text, chosen, reasoning FROM assertions WHERE session_id = ?",
        (r.session_id,),
    ):
        fields = {"owner": owner, "text": text, "chosen": chosen, "reasoning": reasoning}
        new = {k: v if v is None else word.sub(r.new, v) for k, v in fields.items()}
        if new != fields:
            conn.execute(
                "UPDATE assertions SET owner = ?, text = ?, chosen = ?, reasoning = ? WHERE id = ?",
                (new["owner"], new["text"], new["chosen"], new["reasoning"], assertion_id),
            )
            writes.reindex_assertion(conn, assertion_id)
            out.assertions.append(assertion_id)
    writes.drop_vectors(conn, changes, "chunk", touched)
    writes.drop_vectors(conn, changes, "assertion", out.assertions)
    out.chunks += touched


def _reembed(store: Store, found: _ToEmbed) -> None:
    store.index.refresh_chunks(found.chunks, swallow=True)
    store.index.embed_turns(found.turns, swallow=True)
    try:
        store.index.embed_assertions(found.assertions)
    except Exception as e:  # kept without vectors until the next catch-up pass
        log.warning("could not embed %d renamed assertion(s): %s", len(found.assertions), e)


def add_voice(store: Store, name: str, voiceprint: Vectors, seconds: float, model_id: str,
              session_labels: Sequence[tuple[int, str]]) -> StoredVoice:
    """Name a new voice and give its name to the turns of the session voices it was heard as."""
    name = _clean_name(name)

    def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> tuple[int, _ToEmbed]:
        if sql.row(conn, "SELECT 1 FROM voices WHERE name = ? COLLATE NOCASE", (name,)):
            raise InvalidInput(f"name: a voice is already called {name}")
        conn.execute(
            "INSERT INTO voices (name, model_id, voiceprint, seconds, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (name, model_id, to_blob(np.asarray(voiceprint, np.float32)), seconds,
             store._clock()),
        )
        voice_id = int(conn.last_insert_rowid())
        relabels = [by_label(s, label, name) for s, label in session_labels]
        return voice_id, _relabel(conn, changes, relabels, voice_id)

    voice_id, found = store._write(txn)
    _reembed(store, found)
    return get_voice(store, voice_id)


_Print = tuple[Vectors, float, str]  # a voiceprint, the seconds it was learnt from, its encoder


def _combined(a: _Print, b: _Print, model_id: str) -> _Print:
    """Two voiceprints of one voice as one: time-weighted when one encoder made both, else
    the one made by ``model_id`` (the encoder in use; ``a`` when neither is)."""
    if a[2] != b[2]:
        print_, seconds, encoder = b if b[2] == model_id else a
        return print_.astype(np.float32), seconds, encoder
    merged = a[0] * a[1] + b[0] * b[1]
    merged = merged / max(float(np.linalg.norm(merged)), 1e-12)
    return merged.astype(np.float32), a[1] + b[1], a[2]


def learnt(old: _Print, heard: _Print, at_most: float) -> _Print:
    """``old`` moved towards ``heard`` (speech the user confirmed is this voice's): by its
    share of the speech heard in all, but by at most ``at_most`` — a long call whose voice was
    mixed with another's cannot take the print far. A print made by another encoder than
    ``heard``'s is replaced (the two cannot be compared)."""
    if old[2] != heard[2]:
        return heard[0].astype(np.float32), heard[1], heard[2]
    step = min(heard[1] / max(old[1] + heard[1], 1e-9), at_most)
    moved = (1 - step) * old[0] + step * heard[0]
    moved = moved / max(float(np.linalg.norm(moved)), 1e-12)
    return moved.astype(np.float32), old[1] + heard[1], old[2]


def extend_voice(store: Store, voice_id: int, voiceprint: Vectors, seconds: float,
                 session_labels: Sequence[tuple[int, str]], model_id: str,
                 at_most: float = 1.0) -> StoredVoice:
    """A session voice is this named voice too: its turns take the name, and the voiceprint
    learns from it (:func:`learnt`, moved by at most ``at_most``) — or, when the voice was
    named under another encoder than ``model_id`` (whose prints cannot be compared with this
    one's), becomes this one."""
    voice = get_voice(store, voice_id)
    print_, total, _ = learnt((voice.voiceprint, voice.seconds, voice.model_id),
                              (np.asarray(voiceprint, np.float32), seconds, model_id), at_most)

    def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> _ToEmbed:
        conn.execute("UPDATE voices SET voiceprint = ?, seconds = ?, model_id = ? WHERE id = ?",
                     (to_blob(print_), total, model_id, voice_id))
        relabels = [by_label(s, label, voice.name) for s, label in session_labels]
        return _relabel(conn, changes, relabels, voice_id)

    _reembed(store, store._write(txn))
    return get_voice(store, voice_id)


def join_session_voice(store: Store, session_id: int, old: str, label: str, speaker: str,
                       voice_id: int | None) -> None:
    """The session voice ``old`` ("Them 3") turned out to be ``label`` ("Them 1", shown as
    ``speaker``): its turns, and what shows them, become that voice's."""

    def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> _ToEmbed:
        shown = sql.row(conn, "SELECT speaker FROM turns WHERE session_id = ? AND voice_label = ?"
                        " AND source != 'mic' LIMIT 1", (session_id, old))
        if shown is None:
            return _ToEmbed()
        relabel = Relabel(session_id, str(shown[0]), speaker, "voice_label = ?", (old,))
        found = _relabel(conn, changes, [relabel], voice_id)
        conn.execute("UPDATE turns SET voice_label = ? WHERE id IN (SELECT value FROM"
                     " json_each(?))", (label, sql.json_ids(found.turns)))
        return found

    _reembed(store, store._write(txn))


def rename_speaker(store: Store, session_id: int, speaker: str, name: str) -> int:
    """Call ``speaker`` of one session ``name`` (an imported transcript's "Marketing", or a
    voice heard only there); returns how many turns now show the name."""
    name = _clean_name(name)
    speaker = " ".join(speaker.split())

    def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> _ToEmbed:
        sql.require(conn, "sessions", session_id, "session")
        if not sql.row(conn, "SELECT 1 FROM turns WHERE session_id = ? AND speaker = ?"
                       " AND source != 'mic'", (session_id, speaker)):
            raise NotFound(f"no speaker {speaker!r} in session {session_id}",
                           fix="`braincue show` lists who spoke (\"me\" is you: not renamed)")
        return _relabel(conn, changes, [by_speaker(session_id, speaker, name)], None)

    found = store._write(txn)
    _reembed(store, found)
    return len(found.turns)


def _sessions_of(conn: apsw.Connection, voice_id: int) -> list[int]:
    return sql.column(conn, "SELECT DISTINCT session_id FROM turns WHERE voice_id = ?",
                      (voice_id,))


def rename_voice(store: Store, voice_id: int, name: str) -> StoredVoice:
    """A new name for a voice, in every past turn it spoke as well."""
    name = _clean_name(name)
    old = get_voice(store, voice_id)

    def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> _ToEmbed:
        other = sql.row(conn, "SELECT id FROM voices WHERE name = ? COLLATE NOCASE AND id != ?",
                        (name, voice_id))
        if other:
            raise InvalidInput(f"name: a voice is already called {name}",
                               fix=f"`braincue voices merge {other[0]} {voice_id}` makes them one")
        conn.execute("UPDATE voices SET name = ? WHERE id = ?", (name, voice_id))
        relabels = [by_speaker(s, old.name, name) for s in _sessions_of(conn, voice_id)]
        return _relabel(conn, changes, relabels, voice_id)

    _reembed(store, store._write(txn))
    return get_voice(store, voice_id)


def merge_voices(store: Store, keep_id: int, other_id: int, model_id: str) -> StoredVoice:
    """Two named voices are one person: ``other``'s turns take ``keep``'s name and voice, the
    voiceprints are averaged (time-weighted; of two encoders, the one ``model_id`` made is
    kept), and ``other`` is deleted."""
    if keep_id == other_id:
        raise InvalidInput("merge: choose two different voices")
    keep, other = get_voice(store, keep_id), get_voice(store, other_id)
    merged, seconds, encoder = _combined((keep.voiceprint, keep.seconds, keep.model_id),
                                         (other.voiceprint, other.seconds, other.model_id),
                                         model_id)

    def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> _ToEmbed:
        relabels = [by_speaker(s, other.name, keep.name) for s in _sessions_of(conn, other_id)]
        conn.execute("UPDATE turns SET voice_id = ? WHERE voice_id = ?", (keep_id, other_id))
        found = _relabel(conn, changes, relabels, keep_id)
        conn.execute("UPDATE voices SET voiceprint = ?, seconds = ?, model_id = ? WHERE id = ?",
                     (to_blob(merged), seconds, encoder, keep_id))
        conn.execute("DELETE FROM voices WHERE id = ?", (other_id,))
        return found

    _reembed(store, store._write(txn))
    return get_voice(store, keep_id)


def forget_voice(store: Store, voice_id: int) -> StoredVoice:
    """Delete a voice's voiceprint and its name everywhere: its turns speak as the session
    voice they were heard as again ("Them 2"), and so do headers, archives and owners."""
    voice = get_voice(store, voice_id)

    def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> _ToEmbed:
        labels = sql.rows(conn, "SELECT DISTINCT session_id, voice_label FROM turns"
                                " WHERE voice_id = ?", (voice_id,))
        relabels = [
            Relabel(session_id, voice.name, label or "them",
                    "voice_id = ? AND voice_label IS ?", (voice_id, label))
            for session_id, label in labels
        ]
        found = _relabel(conn, changes, relabels, None)
        conn.execute("UPDATE turns SET voice_id = NULL WHERE voice_id = ?", (voice_id,))
        conn.execute("DELETE FROM voices WHERE id = ?", (voice_id,))
        return found

    _reembed(store, store._write(txn))
    return voice

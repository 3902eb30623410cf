"""The database schema, as forward-only migrations (see :func:`daemon.store.db.migrate`).

Append new steps to :data:`MIGRATIONS`; never edit or reorder one that has shipped.

Conventions: times are seconds since the epoch (UTC, REAL); a turn's ``start_s``/``end_s`` are
seconds from its session's start. Ids use AUTOINCREMENT so a deleted row's id is never reused:
a surviving memory may still name the session or chunk it came from, and that name must never
come to mean another row. Chunk sources (``chunks.session_id``, ``document_id``, ``space_id``),
assertion provenance (``session_id``, ``anchor_chunk_id``) and embedding owners are plain
columns, not foreign keys: deletions cascade explicitly in :mod:`daemon.store.store`. Where a
foreign key does exist it has no ON DELETE action, so forgetting a step fails loudly.

Restatements: when reconciliation finds that a kept session said again what an assertion of the
same Space already says (a duplicate), ``restatements`` links that assertion to the session (and
the chunk where it was said, and when), once per pair. A restatement lives and dies with both:
its ``assertion_id`` and ``session_id`` are foreign keys (deleted explicitly, like the rest), its
``anchor_chunk_id`` is provenance like an assertion's.

Full-text search: ``chunks_fts`` is an external-content FTS5 table over ``chunks`` (a transcript's
words are already stored twice, in turns and chunks; a third copy would only cost disk), and
``assertions_fts`` holds its own header/body text. The store keeps both in step inside the same
transaction as the rows they index.
"""

from __future__ import annotations

import apsw

from daemon.store.db import Migration
from daemon.store.remask import remask


def m001_spaces_sessions_turns(conn: apsw.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE spaces (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL UNIQUE COLLATE NOCASE CHECK (length(trim(name)) > 0),
            activity TEXT NOT NULL,
            memory_enabled INTEGER NOT NULL DEFAULT 1 CHECK (memory_enabled IN (0, 1)),
            created_at REAL NOT NULL
        );
        CREATE TABLE sessions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            space_id INTEGER REFERENCES spaces (id),
            activity TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            started_at REAL NOT NULL,
            ended_at REAL,
            status TEXT NOT NULL DEFAULT 'live'
                CHECK (status IN ('live', 'ended', 'kept', 'later', 'discarded')),
            practice INTEGER NOT NULL DEFAULT 0 CHECK (practice IN (0, 1)),
            participants TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(participants))
        );
        CREATE INDEX sessions_space ON sessions (space_id);
        CREATE INDEX sessions_started ON sessions (started_at);
        CREATE TABLE turns (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id INTEGER NOT NULL REFERENCES sessions (id),
            seq INTEGER NOT NULL,
            speaker TEXT NOT NULL,
            source TEXT NOT NULL CHECK (source IN ('mic', 'loopback', 'import')),
            start_s REAL NOT NULL,
            end_s REAL NOT NULL,
            text TEXT NOT NULL,
            ref TEXT,
            UNIQUE (session_id, seq)
        );
        """
    )


def m002_documents_chunks(conn: apsw.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE documents (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            space_id INTEGER REFERENCES spaces (id),
            title TEXT NOT NULL,
            filename TEXT NOT NULL DEFAULT '',
            media_type TEXT NOT NULL DEFAULT 'text/plain',
            sha256 TEXT NOT NULL,
            chars INTEGER NOT NULL,
            added_at REAL NOT NULL
        );
        CREATE INDEX documents_space ON documents (space_id);
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL CHECK (kind IN ('transcript', 'session', 'document')),
            session_id INTEGER,
            document_id INTEGER,
            space_id INTEGER,
            header TEXT NOT NULL,
            body TEXT NOT NULL,
            occurred_at REAL NOT NULL,
            first_turn INTEGER,
            last_turn INTEGER,
            closed INTEGER NOT NULL DEFAULT 1 CHECK (closed IN (0, 1)),
            CHECK ((kind = 'document') = (document_id IS NOT NULL)),
            CHECK (kind = 'document' OR session_id IS NOT NULL)
        );
        CREATE INDEX chunks_session ON chunks (session_id);
        CREATE INDEX chunks_document ON chunks (document_id);
        CREATE INDEX chunks_space ON chunks (space_id);
        CREATE VIRTUAL TABLE chunks_fts USING fts5 (
            header, body, content='chunks', content_rowid='id', tokenize='porter unicode61'
        );
        """
    )


def m003_assertions(conn: apsw.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE assertions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL
                CHECK (kind IN ('decision', 'fact', 'commitment', 'preference', 'task')),
            text TEXT NOT NULL CHECK (length(trim(text)) > 0),
            chosen TEXT,
            alternatives TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(alternatives)),
            reasoning TEXT,
            owner TEXT,
            due TEXT,
            about_person INTEGER NOT NULL DEFAULT 0 CHECK (about_person IN (0, 1)),
            review_status TEXT NOT NULL DEFAULT 'approved'
                CHECK (review_status IN ('pending', 'approved', 'rejected', 'archived')),
            space_id INTEGER REFERENCES spaces (id),
            source TEXT NOT NULL CHECK (source IN ('extracted', 'user', 'agent')),
            anchor_chunk_id INTEGER,
            session_id INTEGER,
            occurred_at REAL NOT NULL,
            recorded_at REAL NOT NULL,
            invalidated_at REAL,
            superseded_by INTEGER REFERENCES assertions (id) DEFERRABLE INITIALLY DEFERRED,
            expires_at REAL,
            CHECK (source <> 'extracted' OR anchor_chunk_id IS NOT NULL),
            CHECK (superseded_by IS NULL OR invalidated_at IS NOT NULL)
        );
        CREATE INDEX assertions_space ON assertions (space_id);
        CREATE INDEX assertions_session ON assertions (session_id);
        CREATE INDEX assertions_anchor ON assertions (anchor_chunk_id);
        CREATE INDEX assertions_superseded_by ON assertions (superseded_by);
        CREATE VIRTUAL TABLE assertions_fts USING fts5 (
            header, body, tokenize='porter unicode61'
        );
        """
    )


def m004_embeddings(conn: apsw.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE embeddings (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            owner_kind TEXT NOT NULL,
            owner_id INTEGER NOT NULL,
            model_id TEXT NOT NULL,
            dims INTEGER NOT NULL CHECK (dims > 0),
            chars INTEGER NOT NULL,
            vector BLOB NOT NULL CHECK (length(vector) = 4 * dims),
            created_at REAL NOT NULL,
            UNIQUE (owner_kind, owner_id, model_id)
        );
        CREATE INDEX embeddings_model ON embeddings (model_id, owner_kind);
        """
    )


def m005_search_indexes(conn: apsw.Connection) -> None:
    conn.execute(
        """
        -- the chunk holding a turn: session_id = ? AND last_turn >= turn, first row (vector
        -- search ranks transcript chunks by their turns, and looks this up for every turn hit)
        CREATE INDEX chunks_session_last_turn ON chunks (session_id, last_turn);
        -- archives and documents, a small part of all chunks, are vector-searched on their own
        CREATE INDEX chunks_kind ON chunks (kind);
        """
    )


def m006_restatements(conn: apsw.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE restatements (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            assertion_id INTEGER NOT NULL REFERENCES assertions (id),
            session_id INTEGER NOT NULL REFERENCES sessions (id),
            anchor_chunk_id INTEGER,
            occurred_at REAL NOT NULL,
            recorded_at REAL NOT NULL,
            UNIQUE (assertion_id, session_id)
        );
        CREATE INDEX restatements_session ON restatements (session_id);
        """
    )


def m007_keep_state(conn: apsw.Connection) -> None:
    """Where the keep of a session stands (see :class:`daemon.store.records.KeepState`): a
    keep interrupted by a stop or a crash is found ``pending``/``running`` at the next start
    and finished then; ``failed`` keeps the reason shown by ``sessions`` and ``show``. NULL: no
    keep ran (or needed) a model. ``keep_attempts``: how many times it started running since it
    was asked for (a keep that crashes the daemon each time is given up). Columns of
    ``sessions``, so they go with it when deleted."""
    conn.execute(
        """
        ALTER TABLE sessions ADD COLUMN keep_status TEXT
            CHECK (keep_status IN ('pending', 'running', 'done', 'failed'));
        ALTER TABLE sessions ADD COLUMN keep_reason TEXT;
        ALTER TABLE sessions ADD COLUMN keep_since REAL;
        ALTER TABLE sessions ADD COLUMN keep_attempts INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX sessions_keep_status ON sessions (keep_status)
            WHERE keep_status IN ('pending', 'running');
        """
    )


def m008_item_closures(conn: apsw.Connection) -> None:
    """Open items: a commitment or task is open while its current version has no closure row.
    Closing one (done, or dropped: no longer needed) supersedes it with a new version that has
    a closure row, naming the turn that said so (``evidence_turn_id``, provenance like an
    anchor: None when closed by hand). The row lives and dies with that version."""
    conn.execute(
        """
        CREATE TABLE item_closures (
            assertion_id INTEGER PRIMARY KEY REFERENCES assertions (id),
            status TEXT NOT NULL CHECK (status IN ('done', 'dropped')),
            evidence_turn_id INTEGER
        );
        CREATE INDEX assertions_kind ON assertions (kind);
        """
    )


def m009_voices(conn: apsw.Connection) -> None:
    conn.execute(
        """
        -- voices the user named: the only voiceprints kept across sessions (biometric data;
        -- `braincue voices forget` deletes the row, secure_delete zeroes its pages)
        CREATE TABLE voices (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL UNIQUE,
            model_id TEXT NOT NULL,
            voiceprint BLOB NOT NULL,
            seconds REAL NOT NULL,
            created_at REAL NOT NULL
        );
        -- a diarised turn: its session voice ("Them 2") and, once named, the voice
        ALTER TABLE turns ADD COLUMN voice_label TEXT;
        ALTER TABLE turns ADD COLUMN voice_id INTEGER REFERENCES voices (id);
        CREATE INDEX turns_voice ON turns (voice_id) WHERE voice_id IS NOT NULL;
        """
    )


def m010_remask_secrets(conn: apsw.Connection) -> None:
    """What was stored before the gate knew a scanner's token formats and the spoken forms
    (logins, answers to a question, digits said in words) is masked as it would be now."""
    remask(conn)


def m011_remask_judged_secrets(conn: apsw.Connection) -> None:
    """What was stored before the gate judged every value by the words around it ("I set the
    hotel safe to 1 5 0 9") is masked as it would be now."""
    remask(conn)


def m012_capture_receipts(conn: apsw.Connection) -> None:
    """Capture receipts (:mod:`daemon.store.receipts`): per session and source, the seconds
    heard of the session's length, and each gap with its cause (``start_s``/``end_s`` from the
    session's start). Times and causes only; a trigger deletes them with their session, so no
    deletion path has to know of them."""
    conn.execute(
        """
        CREATE TABLE capture_receipts (
            session_id INTEGER NOT NULL,
            source TEXT NOT NULL CHECK (source IN ('mic', 'loopback')),
            heard_s REAL NOT NULL,
            length_s REAL NOT NULL,
            PRIMARY KEY (session_id, source)
        );
        CREATE TABLE capture_gaps (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id INTEGER NOT NULL,
            source TEXT NOT NULL CHECK (source IN ('mic', 'loopback')),
            cause TEXT NOT NULL,
            start_s REAL NOT NULL,
            end_s REAL NOT NULL,
            detail TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX capture_gaps_session ON capture_gaps (session_id);
        CREATE TRIGGER sessions_delete_receipts AFTER DELETE ON sessions BEGIN
            DELETE FROM capture_receipts WHERE session_id = old.id;
            DELETE FROM capture_gaps WHERE session_id = old.id;
        END;
        """
    )


def m013_remask_spoken_passphrases(conn: apsw.Connection) -> None:
    """What was stored before the gate heard passphrases said as plain words ("maple river forty
    two, each word with a capital") and placed words it had no list for ("the new mastercode")
    is masked as it would be now."""
    remask(conn)


def m014_remask_dictated_and_grouped(conn: apsw.Connection) -> None:
    """What was stored before the gate heard values dictated piece by piece ("Kestrel, then 4,
    then 0, then 9"), keys read in groups ("7azg xna3 ej44 eocz"), passphrases with a digit in
    them or before their cue, and codes listed after a found one ("3381-9042, 7716-2250 and
    5094-1187") is masked as it would be now."""
    remask(conn)


def m015_remask_access_logins(conn: apsw.Connection) -> None:
    """What was stored before the gate heard a value given to a verb of access ("ssh in as pi
    with bramble-Yard-12", "identifies to NickServ with lumen-Farrow-733") or a passphrase typed
    as its cue says ("type glacier Ferry Thistle 40 as the password") is masked as it would be
    now."""
    remask(conn)


def m016_remask_password_shapes_and_dials(conn: apsw.Connection) -> None:
    """What was stored before the gate heard a password of its own shape given where getting in
    is talked of ("Use Bramble74Kite" after "I can't get into the admin page"), a passphrase with
    symbols in it ("type Mv!7rooftop#Quay") or a dial combination said as turns ("left to
    twenty-four, right to nine, left to sixty-one") is masked as it would be now."""
    remask(conn)


MIGRATIONS: tuple[Migration, ...] = (
    m001_spaces_sessions_turns,
    m002_documents_chunks,
    m003_assertions,
    m004_embeddings,
    m005_search_indexes,
    m006_restatements,
    m007_keep_state,
    m008_item_closures,
    m009_voices,
    m010_remask_secrets,
    m011_remask_judged_secrets,
    m012_capture_receipts,
    m013_remask_spoken_passphrases,
    m014_remask_dictated_and_grouped,
    m015_remask_access_logins,
    m016_remask_password_shapes_and_dials,
)

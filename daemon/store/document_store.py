"""The documents filed in Spaces: added whole (text, chunks, vectors in one transaction), listed
and removed. The text extraction is :mod:`daemon.store.documents`'."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from daemon.errors import InvalidInput, NotFound
from daemon.store import documents, sql, writes
from daemon.store.base import StoreBase
from daemon.store.documents import DocumentText
from daemon.store.records import (
    Deleted,
    Document,
)

if TYPE_CHECKING:
    from daemon.llm.embed import EmbedProgress


class DocumentStore(StoreBase):
    """The documents of a profile."""

    def add_document(
        self,
        source: DocumentText | Path,
        *,
        space_id: int | None = None,
        title: str | None = None,
        progress: EmbedProgress | None = None,
    ) -> Document:
        """Add a document (a file path, or text already read with
        :func:`daemon.store.documents.read_document`) to a Space, or profile-wide without one
        (``progress`` counts what is embedded).
        It is chunked at paragraph and heading boundaries, embedded first, then written with
        its chunks, FTS entries and vectors in one transaction. The same file cannot be added
        twice to one Space."""
        doc = documents.read_document(source) if isinstance(source, Path) else source
        title = " ".join((title or doc.title).split()) or doc.filename
        added_at = self._clock()
        dated = doc.modified_at if doc.modified_at is not None else added_at
        parts = documents.chunk_document(
            doc.text,
            title=title,
            date=writes.local_date(dated),
            markdown=doc.media_type == "text/markdown",
            limit=self.chunk_limit,
        )
        vectors = self.index.embed([p.text for p in parts], progress)

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> int:
            if space_id is not None:
                sql.require(conn, "spaces", space_id, "Space")
            same = sql.row(
                conn,
                "SELECT id FROM documents WHERE sha256 = ? AND space_id IS ?",
                (doc.sha256, space_id),
            )
            if same is not None:
                raise InvalidInput(
                    f"{doc.filename} was already added (document {same[0]})",
                    fix=f"remove it first with `braincue docs rm {same[0]}`",
                )
            conn.execute(
                "INSERT INTO documents (space_id, title, filename, media_type, sha256, chars,"
                " added_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    space_id,
                    title,
                    doc.filename,
                    doc.media_type,
                    doc.sha256,
                    len(doc.text),
                    added_at,
                ),
            )
            document_id = int(conn.last_insert_rowid())
            for i, part in enumerate(parts):
                chunk_id = writes.insert_chunk(
                    conn,
                    kind="document",
                    document_id=document_id,
                    space_id=space_id,
                    header=part.header,
                    body=part.body,
                    occurred_at=dated,
                )
                if vectors is not None:
                    self.index.put_vector(conn, changes, "chunk", chunk_id, vectors[i],
                                          len(part.text))
            return document_id

        return self.get_document(self._write(txn))

    def get_document(self, document_id: int) -> Document:
        return self._read_one(
            f"SELECT {sql.DOCUMENT_COLUMNS} FROM documents d WHERE d.id = ?", (document_id,),
            sql.document_from,
            NotFound(f"no document {document_id}", fix="see `braincue docs list`"))

    def list_documents(
        self, *, space_id: int | None = None, profile_wide: bool = False
    ) -> list[Document]:
        """Documents, newest first: all, those of ``space_id``, or (``profile_wide``) those in
        no Space."""
        if profile_wide:
            return self._documents("d.space_id IS NULL", [])
        if space_id is not None:
            return self._documents("d.space_id = ?", [space_id])
        return self._documents("1", [])

    def delete_document(self, document_id: int) -> Deleted:
        """Remove a document with its chunks, their FTS entries and vectors."""

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> Deleted:
            deleted = Deleted()
            writes.delete_document(conn, changes, document_id, deleted)
            return deleted

        return self._write(txn)

    def _documents(self, where: str, params: list[Any]) -> list[Document]:
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {sql.DOCUMENT_COLUMNS} FROM documents d WHERE {where}"
                " ORDER BY d.added_at DESC, d.id DESC",
                params,
            )
        )
        return [sql.document_from(r) for r in rows]

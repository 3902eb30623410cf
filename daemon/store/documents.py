"""Documents a Space starts from: text extraction and chunking.

Plain text and Markdown are read as UTF-8; PDF text comes from ``pypdf`` (pure Python, well
kept). A file that cannot be read as text fails with one line naming the file and the fix.

Chunks follow the document's own structure: paragraphs (blank-line separated blocks) are packed
into chunks of up to ``limit`` characters, a Markdown heading always starts a new chunk, and only
a paragraph longer than the limit is cut (at a line, sentence or word boundary). Each chunk
carries a header in the transcript style, ``[date | document | title | section]``, where the
section is the heading the chunk falls under (left out when there is none).

Everything here but :func:`read_document` is pure.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import re
from pathlib import Path

import msgspec

from daemon.errors import InvalidInput
from daemon.store.chunking import DEFAULT_LIMIT, split_text

MEDIA_TYPES = {
    ".txt": "text/plain",
    ".text": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".pdf": "application/pdf",
}

_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s+(.*?))?(?:\s+#+)?\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_WHITESPACE = re.compile(r"\s+")


class DocumentText(msgspec.Struct, frozen=True):
    """A document's text as extracted, with what the store records about its file."""

    filename: str
    media_type: str
    text: str
    sha256: str  # of the file's bytes
    modified_at: float | None = None  # the file's mtime, when read from disk

    @property
    def title(self) -> str:
        """The title when the user gives none: the file name without its extension."""
        return Path(self.filename).stem or self.filename


class DocumentChunk(msgspec.Struct, frozen=True):
    header: str
    body: str
    section: str  # the heading the chunk falls under, or ""

    @property
    def text(self) -> str:
        return f"{self.header}\n{self.body}"


def read_document(path: Path) -> DocumentText:
    """Read and extract a document file (.txt, .md or .pdf)."""
    try:
        data = path.read_bytes()
        modified_at = path.stat().st_mtime
    except OSError as e:
        raise InvalidInput(
            f"cannot read {path}: {e.strerror or e}", fix="check the path and its permissions"
        ) from e
    return msgspec.structs.replace(extract_text(path.name, data), modified_at=modified_at)


def extract_text(filename: str, data: bytes) -> DocumentText:
    """The text of a document file's bytes; the file name's extension says how to read it."""
    suffix = Path(filename).suffix.lower()
    media_type = MEDIA_TYPES.get(suffix)
    if media_type is None:
        raise InvalidInput(
            f"{filename}: unsupported document type {suffix or '(no extension)'!r}",
            fix="add a .txt, .md or .pdf file (export other formats to PDF or text first)",
        )
    text = _pdf_text(filename, data) if media_type == "application/pdf" else _utf8(filename, data)
    text = _normalise(text)
    if not text:
        fix = "a scanned PDF needs OCR first (e.g. ocrmypdf)" if suffix == ".pdf" else None
        raise InvalidInput(f"{filename} has no text", fix=fix)
    return DocumentText(
        filename=filename,
        media_type=media_type,
        text=text,
        sha256=hashlib.sha256(data).hexdigest(),
    )


def chunk_document(
    text: str,
    *,
    title: str,
    date: dt.date,
    markdown: bool = False,
    limit: int = DEFAULT_LIMIT,
) -> list[DocumentChunk]:
    """Chunks of a document's text at paragraph (and with ``markdown``, heading) boundaries."""
    chunks: list[DocumentChunk] = []
    group: list[str] = []
    section = group_section = ""
    only_headings = True  # the group holds nothing but headings so far

    def close() -> None:
        if group:
            chunks.append(DocumentChunk(
                header=document_header(date, title, group_section),
                body="\n\n".join(group),
                section=group_section,
            ))

    for block, heading in _blocks(text, markdown):
        if heading is not None:
            section = heading
        fits = len("\n\n".join([*group, block])) <= limit
        if group and fits and (heading is None or only_headings):
            group.append(block)
            only_headings = only_headings and heading is not None
            if heading is not None:
                group_section = section
            continue
        close()
        pieces = split_text(block, limit)
        for piece in pieces[:-1]:
            chunks.append(DocumentChunk(
                header=document_header(date, title, section), body=piece, section=section
            ))
        group, group_section = pieces[-1:], section
        only_headings = heading is not None
    close()
    return chunks


def document_header(date: dt.date, title: str, section: str = "") -> str:
    fields = [f"{date:%Y-%m-%d}", "document", _one_line(title)]
    if section:
        fields.append(_one_line(section))
    return "[" + " | ".join(fields) + "]"


def _blocks(text: str, markdown: bool) -> list[tuple[str, str | None]]:
    """Paragraphs in order, each with its heading text if it is a Markdown heading."""
    blocks: list[tuple[str, str | None]] = []
    lines: list[str] = []
    in_fence = False

    def flush() -> None:
        if lines:
            blocks.append(("\n".join(lines), None))
            lines.clear()

    for line in text.split("\n"):
        if markdown and _FENCE.match(line):
            in_fence = not in_fence
        heading = _HEADING.match(line) if markdown and not in_fence else None
        if heading:
            flush()
            blocks.append((line.strip(), heading.group(1) or ""))
        elif line.strip():
            lines.append(line)
        elif not in_fence:
            flush()
        else:
            lines.append(line)
    flush()
    return blocks


def _utf8(filename: str, data: bytes) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InvalidInput(f"{filename} is UTF-16 text",
                           fix="save it as UTF-8 (e.g. `iconv -f utf-16 -t utf-8`)")
    if b"\x00" in data:
        raise InvalidInput(f"{filename} is a binary file, not text",
                           fix="add a .txt, .md or .pdf file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InvalidInput(
            f"{filename} is not UTF-8 text (byte {e.start} is {data[e.start]:#04x})",
            fix="convert it to UTF-8 (e.g. `iconv -f latin1 -t utf-8`)",
        ) from e


def _pdf_text(filename: str, data: bytes) -> str:
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise InvalidInput(f"{filename} is a password-protected PDF",
                               fix="save an unprotected copy and add that")
        return "\n\n".join(page.extract_text() or "" for page in reader.pages)
    except InvalidInput:
        raise
    except Exception as e:  # pypdf meets malformed files with many exception types
        raise InvalidInput(
            f"{filename} is not a readable PDF: {e}", fix="check the file opens in a PDF viewer"
        ) from e


def _normalise(text: str) -> str:
    """Unix line ends, no trailing spaces, at most one blank line in a row."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _one_line(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()

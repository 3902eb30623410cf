"""Document text extraction (.txt, .md, PDF) and chunking at paragraph and heading boundaries."""

from __future__ import annotations

import datetime as dt
import io
import os
from pathlib import Path

import pytest
from pypdf import PdfWriter

from daemon.errors import InvalidInput
from daemon.store.documents import chunk_document, extract_text, read_document

DATE = dt.date(2026, 7, 28)


def make_pdf(*pages: list[str]) -> bytes:
    """A minimal valid PDF, written by hand: one Helvetica text line per string, per page."""
    objects: list[bytes] = []
    page_ids = [3 + 2 * i for i in range(len(pages))]
    font_id = 3 + 2 * len(pages)
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{p} 0 R" for p in page_ids).encode()
    objects.append(b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % len(pages))
    for page_id, lines in zip(page_ids, pages, strict=True):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R"
            b" /Resources << /Font << /F1 %d 0 R >> >> >>" % (page_id + 1, font_id)
        )
        shown = b" 0 -16 Td ".join(b"(" + line.encode("latin-1") + b") Tj" for line in lines)
        stream = b"BT /F1 12 Tf 72 720 Td " + shown + b" ET"
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")

    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)


def test_pdf_text() -> None:
    data = make_pdf(["Quarterly plan for Atlas", "Ship on Friday"], ["Second page here"])
    doc = extract_text("plan.PDF", data)
    assert doc.media_type == "application/pdf"
    assert doc.title == "plan"
    assert doc.text.replace("\n", " ").replace("  ", " ") == (
        "Quarterly plan for Atlas Ship on Friday Second page here")
    assert "Friday\n\nSecond" in doc.text  # pages are paragraphs


def test_pdf_from_disk_records_mtime_and_hash(tmp_path: Path) -> None:
    path = tmp_path / "plan.pdf"
    path.write_bytes(make_pdf(["hello"]))
    os.utime(path, (1_700_000_000, 1_700_000_000))
    doc = read_document(path)
    assert doc.modified_at == 1_700_000_000
    assert doc.filename == "plan.pdf"
    assert len(doc.sha256) == 64


@pytest.mark.parametrize(("data", "problem"), [
    (b"%PDF-1.4\nthis is not really a pdf", "not a readable PDF"),
    (b"", "not a readable PDF"),
    (make_pdf([]), "has no text"),
])
def test_unreadable_pdf(data: bytes, problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem) as err:
        extract_text("broken.pdf", data)
    assert "broken.pdf" in err.value.message


def test_password_protected_pdf() -> None:
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    writer.encrypt("secret", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    with pytest.raises(InvalidInput, match="password-protected") as err:
        extract_text("locked.pdf", buffer.getvalue())
    assert err.value.fix


@pytest.mark.parametrize(("name", "data", "problem", "fix"), [
    ("notes.txt", "café".encode("latin-1"), "not UTF-8 text", "iconv"),
    ("notes.md", "hi".encode("utf-16"), "UTF-16", "UTF-8"),
    ("notes.txt", b"\x7fELF\x02\x01\x01\x00\x00\x00", "binary", ".txt"),
    ("notes.docx", b"PK\x03\x04", r"unsupported document type '\.docx'", "PDF"),
    ("README", b"hello", "no extension", ".md"),
    ("empty.md", b"  \n\n \n", "has no text", None),
])
def test_unreadable_text(name: str, data: bytes, problem: str, fix: str | None) -> None:
    with pytest.raises(InvalidInput, match=problem) as err:
        extract_text(name, data)
    assert name in err.value.message
    assert (err.value.fix is None) if fix is None else (fix in (err.value.fix or ""))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"cannot read .*nope\.md"):
        read_document(tmp_path / "nope.md")


def test_text_is_normalised() -> None:
    doc = extract_text("n.txt", "\ufeffone  \r\ntwo\r\n\r\n\r\n\r\nthree\n".encode())
    assert doc.text == "one\ntwo\n\nthree"
    assert doc.media_type == "text/plain"


MARKDOWN = """# Résumé

Jane Doe, engineer.

## Experience

Acme (2020-2024): built the billing system.

Globex (2018-2020): ran the data team.

### Details

```python
# not a heading
x = 1

y = 2
```

## Education

MIT, computer science.
"""


def test_markdown_chunks_at_headings() -> None:
    doc = extract_text("cv.md", MARKDOWN.encode())
    chunks = chunk_document(doc.text, title="Jane's CV", date=DATE, markdown=True)
    assert [c.section for c in chunks] == ["Résumé", "Experience", "Details", "Education"]
    assert [c.header for c in chunks] == [
        "[2026-07-28 | document | Jane's CV | Résumé]",
        "[2026-07-28 | document | Jane's CV | Experience]",
        "[2026-07-28 | document | Jane's CV | Details]",
        "[2026-07-28 | document | Jane's CV | Education]",
    ]
    assert chunks[0].body == "# Résumé\n\nJane Doe, engineer."
    assert chunks[1].body == (
        "## Experience\n\nAcme (2020-2024): built the billing system.\n\n"
        "Globex (2018-2020): ran the data team."
    )
    assert chunks[2].body == "### Details\n\n```python\n# not a heading\nx = 1\n\ny = 2\n```"
    assert chunks[3].text == (
        "[2026-07-28 | document | Jane's CV | Education]\n## Education\n\nMIT, computer science."
    )


def test_headings_stay_with_their_section() -> None:
    chunks = chunk_document("# Title\n\n## Part\n\nBody text.", title="T", date=DATE,
                            markdown=True)
    assert [(c.section, c.body) for c in chunks] == [("Part", "# Title\n\n## Part\n\nBody text.")]


def test_paragraphs_pack_to_the_limit_and_long_ones_split() -> None:
    paragraphs = [f"Paragraph {i}." + " word" * 40 for i in range(30)]
    long_one = " ".join(f"Sentence {i} is about Atlas." for i in range(120))
    text = "\n\n".join([*paragraphs[:15], long_one, *paragraphs[15:]])
    chunks = chunk_document(text, title="Notes", date=DATE)
    assert all(len(c.body) <= 1400 for c in chunks)
    assert all(c.header == "[2026-07-28 | document | Notes]" for c in chunks)
    # nothing lost, order kept; whitespace only changes at cuts
    assert " ".join(c.body for c in chunks).split() == text.split()
    # whole paragraphs stay whole
    bodies = "\n\n".join(c.body for c in chunks).split("\n\n")
    for p in paragraphs:
        assert p in bodies
    # packed: most chunks hold several paragraphs
    assert len(chunks) < len(paragraphs)


def test_plain_text_has_no_headings() -> None:
    chunks = chunk_document("# not a heading in .txt\n\nbody", title="T", date=DATE)
    assert len(chunks) == 1
    assert chunks[0].section == ""

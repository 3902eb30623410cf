"""Write an upgrade fixture: the profile of ``contents.json`` as an earlier release wrote it.

Run with that release's code first on the path (the export of one of its commits), from a
directory outside this repository so that its ``daemon`` package is the one imported:

    PYTHONPATH=OLD_TREE python write_profile.py OUT_DIR MODELS_DIR [KEY_HEX]

OUT_DIR gets ``braincue.db`` (encrypted with KEY_HEX when given: the release must know keys),
``config.toml`` (the settings that release knows, written by it) and ``written.json`` (which
migrations the database records and what was written, for the test that reads it back). Only
this file's own code and the release's public store API are used; what the release lacks
(documents, keep state, open items, restatements) is left out and listed as such.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from daemon.config import Paths, Settings, save_settings
from daemon.llm.embed import LlamaEmbedder
from daemon.store import records
from daemon.store.store import Store

HERE = Path(__file__).resolve().parent
CONTENTS: dict[str, Any] = json.loads((HERE / "contents.json").read_text(encoding="utf-8"))


class Clock:
    """Recorded times advance one second per reading from the first session's start."""

    def __init__(self) -> None:
        self.now = float(CONTENTS["sessions"][0]["started_at"])

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def open_store(out: Path, embedder: LlamaEmbedder, key_hex: str | None, clock: Clock) -> Store:
    if key_hex is None:
        return Store(out, embedder, clock=clock)
    from daemon.store.keys import DatabaseKey

    return Store(out, embedder, clock=clock, key=DatabaseKey(key_hex, "the fixture's key file"))


def write(store: Store) -> list[str]:
    """Write CONTENTS; return what this release could not hold."""
    left_out: list[str] = []
    spaces = {s["name"]: store.create_space(s["name"], activity=s["activity"],
                                            memory_enabled=s["memory_enabled"]).id
              for s in CONTENTS["spaces"]}
    sessions: dict[str, int] = {}
    turns: dict[str, list[records.Turn]] = {}
    for s in CONTENTS["sessions"]:
        session = store.create_session(
            space_id=spaces[s["space"]] if s["space"] else None, title=s["title"],
            started_at=s["started_at"], participants=s["participants"], practice=s["practice"])
        sessions[s["title"]] = session.id
        turns[s["title"]] = store.append_turns(session.id, [
            records.NewTurn(speaker=t["speaker"], text=t["text"], start=t["start"], end=t["end"],
                            source=t["source"]) for t in s["turns"]])
        store.end_session(session.id, ended_at=s["ended_at"])
        if s["archive"]:
            store.put_archive(session.id, s["archive"])
        store.update_session(session.id, status=s["status"])
        if s["keep"]:
            if hasattr(store, "set_keep_state"):
                store.set_keep_state(session.id, s["keep"], s.get("keep_reason"))
            elif "keep state" not in left_out:
                left_out.append("keep state")

    def chunk_of(title: str, turn: int) -> int:
        turn_id = turns[title][turn].id
        return next(c.id for c in store.chunks(session_id=sessions[title])
                    if c.kind == "transcript" and c.first_turn is not None
                    and c.last_turn is not None and c.first_turn <= turn_id <= c.last_turn)

    added: dict[str, records.Assertion] = {}
    for a in CONTENTS["assertions"]:
        fields = {k: v for k, v in a.items()
                  if k in ("kind", "text", "chosen", "reasoning", "owner", "due")}
        if "alternatives" in a:
            fields["alternatives"] = tuple(a["alternatives"])
        if "session" in a:
            title = a["session"]
            session = store.get_session(sessions[title])
            new = records.NewAssertion(
                source="extracted", space_id=session.space_id, session_id=session.id,
                anchor_chunk_id=chunk_of(title, a["turn"]),
                occurred_at=session.started_at + turns[title][a["turn"]].start, **fields)
        else:
            new = records.NewAssertion(source=a["source"], space_id=spaces[a["space"]], **fields)
        added[a["text"]] = store.add_assertion(new)
    old = added[CONTENTS["supersede"]["old"]]
    store.supersede(old.id, records.NewAssertion(
        kind=old.kind, text=CONTENTS["supersede"]["new"], source="extracted",
        space_id=old.space_id, session_id=old.session_id, anchor_chunk_id=old.anchor_chunk_id,
        occurred_at=old.occurred_at))

    first = CONTENTS["sessions"][0]["title"]
    preference = added[CONTENTS["assertions"][3]["text"]]  # said again in the meeting
    if hasattr(records, "NewRestatement"):
        store.add_restatements(sessions[first], [records.NewRestatement(
            assertion_id=preference.id, anchor_chunk_id=chunk_of(first, 4))])
    else:
        left_out.append("restatements")
    commitment = added[CONTENTS["assertions"][1]["text"]]
    if hasattr(store, "close_item"):
        store.close_item(commitment.id, records.ItemClosure(status="done"))
    else:
        left_out.append("open item closures")
    if hasattr(store, "add_document"):
        from daemon.store.documents import DocumentText

        doc = CONTENTS["document"]
        store.add_document(DocumentText(filename=doc["filename"], media_type="text/markdown",
                                        text=doc["text"], sha256="0" * 64),
                           space_id=spaces[doc["space"]])
    else:
        left_out.append("documents")
    return left_out


def write_settings(out: Path) -> dict[str, object]:
    """config.toml with the settings of CONTENTS this release knows, written by its code."""
    known = {f.name for f in msgspec.structs.fields(Settings)}
    chosen = {k: v for k, v in CONTENTS["settings"].items() if k in known}
    with tempfile.TemporaryDirectory() as home:
        os.environ["BRAINCUE_HOME"] = home
        paths = Paths.resolve("default")
        save_settings(paths, msgspec.structs.replace(Settings(), **chosen))
        shutil.copyfile(paths.config_file, out / "config.toml")
    return chosen


def main() -> None:
    out, models = Path(sys.argv[1]), Path(sys.argv[2])
    key_hex = sys.argv[3] if len(sys.argv) > 3 else None
    out.mkdir(parents=True, exist_ok=False)
    embedder = LlamaEmbedder(models / "all-minilm-l6-v2-f16.gguf", threads=1, batch=8)
    store = open_store(out, embedder, key_hex, Clock())
    try:
        left_out = write(store)
        migrations = store.db.read(
            lambda c: [r[0] for r in c.execute("SELECT name FROM migrations ORDER BY name")])
    finally:
        store.close()
        embedder.close()
    for index in out.glob("vectors-*"):  # a cache the current code rebuilds from the rows
        index.unlink()
    settings = write_settings(out)
    (out / "written.json").write_text(json.dumps({
        "migrations": migrations, "encrypted": key_hex is not None, "settings": settings,
        "left_out": left_out}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

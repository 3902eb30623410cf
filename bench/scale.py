"""Search, start, backup, size and memory of a profile grown to a lifetime's size.

    .venv/bin/python -m bench.scale --qmsum QMSUM_DIR --locomo LOCOMO.json --cache DIR
                                    [--sizes 100000 1000000] [--queries 100]

A profile of N turn-level items is built once under ``--cache`` (kept between runs): kept
sessions of 120 turns, each with its transcript chunks (about 1,400 characters, chunked by
the store's own chunker), one session archive and six extracted assertions anchored in its
chunks — about 87% turns, 8% chunks, 5% assertions, every one with its vector. Turn text is
taken in runs from the dev transcripts (QMSum meetings, LoCoMo conversations), with the
speakers renamed from a list of 60 names, every number redrawn and a date added to one turn in
ten, so the full-text legs meet many postings of the same words with varied names, numbers
and dates. Vectors: every distinct source turn is embedded once by the real model (cached);
an item's vector is its source turn's (a chunk's or archive's: the mean of its turns') plus
Gaussian noise of norm 0.35, normalised — cosine about 0.94 to the real one, so neighbours
are neighbours in meaning. Rows are written in bulk with the schema's own statements
(``executemany`` in large transactions), then the store builds its vector indexes as at any
start after a crash.

It prints, per size: the database and index files on disk; opening the store (index load);
search p50/p95 over LoCoMo dev questions with the query embedded, with its vector known, and
re-ranked (vector known, when a re-ranking model is installed), each series after 20 other
questions; an online backup; a real
daemon's start to READY and to its first answered search, and its RSS idle after that — each
with the load average, since latency on a shared host is not the machine's.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import apsw
import numpy as np
import numpy.typing as npt

from bench.common import default_models_dir, machine, percentile
from bench.memo import MemoEmbedder
from bench.search import latencies
from daemon.llm import LlamaEmbedder
from daemon.llm.rerank import CrossEncoder
from daemon.models.registry import model_path, pick_installed
from daemon.store import chunking
from daemon.store.chunking import ChunkContext, ChunkTurn
from daemon.store.db import Database
from daemon.store.records import NewAssertion
from daemon.store.schema import MIGRATIONS
from daemon.store.scope import Scope
from daemon.store.store import DB_FILE, Store
from daemon.store.vectors import normalise, to_blob
from daemon.store.writes import assertion_body, assertion_header

TURNS_PER_SESSION = 120
ASSERTIONS_PER_SESSION = 6
SESSIONS_PER_TRANSACTION = 200
NOISE = 0.35
SPACE = "Work"
PROFILE = "default"
NAMES = [
    "Caroline", "Melanie", "Jon", "Gina", "John", "Maria", "Joanna", "Nate", "Tim", "Audrey",
    "Andrew", "Evan", "Sam", "Deborah", "Jolene", "Priya", "Bob", "Alice", "Omar", "Chen",
    "Fatima", "Lars", "Ines", "Tomasz", "Keiko", "Ravi", "Sofia", "Mateo", "Amara", "Yusuf",
    "Elena", "Noah", "Ava", "Liam", "Zoe", "Hiro", "Anya", "Felix", "Nadia", "Oscar", "Leila",
    "Diego", "Hanna", "Kofi", "Mei", "Pavel", "Rosa", "Tariq", "Vera", "Wen", "Ximena", "Yara",
    "Zane", "Bianca", "Carlos", "Dara", "Emil", "Freya", "Goran", "Ilse"
]
KINDS = ("decision", "fact", "commitment", "task", "fact", "preference")
MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December"
]
_NUMBER = re.compile(r"\d+")

Matrix = npt.NDArray[np.float32]


# -- the source text -------------------------------------------------------------------------


def conversations(qmsum: Path, locomo: Path) -> list[list[tuple[str, str]]]:
    """Every dev conversation as its (speaker, text) turns."""
    found: list[list[tuple[str, str]]] = []
    for path in sorted(qmsum.glob("*/*.json")):
        meeting = json.loads(path.read_text())
        if isinstance(meeting, dict) and "turns" in meeting:
            found.append([(t["speaker"], t["text"]) for t in meeting["turns"] if t["text"]])
    for sample in json.loads(locomo.read_text()):
        conv = sample["conversation"]
        turns: list[tuple[str, str]] = []
        for n in range(1, 100):
            turns += [(t["speaker"], t["text"]) for t in conv.get(f"session_{n}", [])]
        found.append(turns)
    return [c for c in found if len(c) >= TURNS_PER_SESSION]


def source_vectors(texts: Sequence[str], model: Path, cache: Path) -> Matrix:
    """The real model's vector of every source text, cached under ``cache``."""
    stored = cache / f"sources-{model.stem}-{len(texts)}.npy"
    if stored.exists():
        return np.load(stored)  # type: ignore[no-any-return]
    print(f"embedding {len(texts):,} source turns once (cached in {stored})", flush=True)
    embedder = LlamaEmbedder(model, threads=2, batch=64)
    try:
        vectors = embedder.embed_sync(list(texts))
    finally:
        embedder.close()
    np.save(stored, vectors)
    return vectors


class Synth:
    """Sessions of varied text with vectors around the real ones."""

    def __init__(self, convs: list[list[tuple[str, str]]], vectors: Matrix, seed: int) -> None:
        self.convs = convs
        self.offsets = np.cumsum([0] + [len(c) for c in convs])
        self.vectors = vectors
        self.rng = random.Random(seed)
        self.noise = np.random.default_rng(seed)

    def near(self, rows: Matrix) -> Matrix:
        """Each row plus Gaussian noise of norm NOISE, normalised."""
        noise = self.noise.standard_normal(rows.shape).astype(np.float32)
        noise *= NOISE / np.linalg.norm(noise, axis=1, keepdims=True)
        return normalise(normalise(rows) + noise)

    def session(self) -> tuple[list[tuple[str, str]], Matrix, tuple[str, ...]]:
        """(speaker, text) turns, their source vectors, participants."""
        c = self.rng.randrange(len(self.convs))
        conv = self.convs[c]
        start = self.rng.randrange(len(conv) - TURNS_PER_SESSION + 1)
        speakers = sorted({s for s, _ in conv})
        names = dict(zip(speakers, self.rng.sample(NAMES, len(speakers)), strict=True))
        turns = []
        for speaker, text in conv[start : start + TURNS_PER_SESSION]:
            for old, new in names.items():
                text = text.replace(old, new)
            text = _NUMBER.sub(lambda m: str(self.rng.randrange(10 ** len(m.group()))), text)
            if self.rng.random() < 0.1:
                text += f" That was on {self.rng.randint(1, 28)} {self.rng.choice(MONTHS)}."
            turns.append((names[speaker], text))
        first = int(self.offsets[c]) + start
        return turns, self.vectors[first : first + TURNS_PER_SESSION], tuple(names.values())


# -- building a profile ----------------------------------------------------------------------


def profile_dir(cache: Path, size: int) -> Path:
    return cache / str(size) / "data" / "profiles" / PROFILE


def build(cache: Path, size: int, synth: Synth, model_id: str, dims: int) -> None:
    """Write a profile of about ``size`` items under ``cache`` (nothing when it is there)."""
    data_dir = profile_dir(cache, size)
    done = data_dir / "built.json"
    if done.exists():
        return
    if data_dir.exists():
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    began = time.perf_counter()
    db = Database(data_dir / DB_FILE, MIGRATIONS)
    try:
        space_id = db.write(_add_space)
        items = session_no = 0
        while items < size:
            batch = [synth.session() for _ in range(SESSIONS_PER_TRANSACTION)]
            items += db.write(functools.partial(
                _write_sessions, batch=batch, first_no=session_no, space_id=space_id,
                synth=synth, model_id=model_id, dims=dims))
            session_no += len(batch)
            print(f"  {items:,} items, {time.perf_counter() - began:.0f} s", flush=True)
    finally:
        db.close()
    done.write_text(json.dumps({"items": items, "sessions": session_no,
                                "seconds": round(time.perf_counter() - began)}))


def _add_space(conn: apsw.Connection) -> int:
    conn.execute("INSERT INTO spaces (name, activity, created_at) VALUES (?, 'meeting', ?)",
                 (SPACE, time.time()))
    return int(conn.last_insert_rowid())


def _write_sessions(conn: apsw.Connection, batch: list[tuple[list[tuple[str, str]], Matrix,
                    tuple[str, ...]]], first_no: int, space_id: int, synth: Synth,
                    model_id: str, dims: int) -> int:
    turn_id = _next_id(conn, "turns")
    chunk_id = _next_id(conn, "chunks")
    assertion_id = _next_id(conn, "assertions")
    sessions: list[tuple[object, ...]] = []
    turns: list[tuple[object, ...]] = []
    chunks: list[tuple[object, ...]] = []
    assertions: list[tuple[object, ...]] = []
    fts_a: list[tuple[object, ...]] = []
    vectors: list[tuple[str, int, int, bytes]] = []
    session_id = _next_id(conn, "sessions")
    for n, (said, sources, participants) in enumerate(batch, start=first_no):
        started = 1.6e9 + n * 86_400 * 0.37
        title = f"Call {n}: {said[0][1][:40]}"
        sessions.append((session_id, space_id, "meeting", title, started, started + 3600,
                         "kept", json.dumps(participants), "done"))
        ctx = ChunkContext(date=_date(started), kind="transcript", title=title,
                           participants=participants)
        drafts_in: list[ChunkTurn] = []
        for seq, (speaker, text) in enumerate(said):
            turns.append((turn_id + seq, session_id, seq, speaker, "import", 8.0 * seq,
                          8.0 * seq + 7, text))
            drafts_in.append(ChunkTurn(id=turn_id + seq, speaker=speaker, start=8.0 * seq,
                                       text=text))
        turn_vectors = synth.near(sources)
        vectors += [("turn", turn_id + i, len(t), to_blob(v))
                    for i, (t, v) in enumerate(zip(said, turn_vectors, strict=True))]
        drafts = chunking.chunk_turns(drafts_in, ctx)
        anchors = []
        for draft in drafts:
            first, last = draft.first_turn_id - turn_id, draft.last_turn_id - turn_id
            chunks.append((chunk_id, "transcript", session_id, space_id, draft.header,
                           draft.body, started + draft.start, draft.first_turn_id,
                           draft.last_turn_id))
            mean = sources[first : last + 1].mean(axis=0, keepdims=True)
            vectors.append(("chunk", chunk_id, len(draft.header) + 1 + len(draft.body),
                            to_blob(synth.near(mean)[0])))
            anchors.append((chunk_id, first, last))
            chunk_id += 1
        archive = " ".join(t for _, t in said[:12])[:900]
        chunks.append((chunk_id, "session", session_id, space_id, f"[{title}]", archive,
                       started, None, None))
        vectors.append(("chunk", chunk_id, len(title) + 3 + len(archive),
                        to_blob(synth.near(sources[:12].mean(axis=0, keepdims=True))[0])))
        chunk_id += 1
        for a in range(ASSERTIONS_PER_SESSION):
            anchor, first, last = anchors[(a * len(anchors)) // ASSERTIONS_PER_SESSION]
            pick = synth.rng.randint(first, last)
            speaker, text = said[pick]
            new = NewAssertion(kind=KINDS[a], text=f"{speaker}: {text[:200]}",  # type: ignore[arg-type]
                               source="extracted", space_id=space_id, session_id=session_id,
                               anchor_chunk_id=anchor, occurred_at=started + 8.0 * pick)
            assertions.append((assertion_id, new.kind, new.text, space_id, anchor, session_id,
                               started + 8.0 * pick, started + 3600))
            fts_a.append((assertion_id, assertion_header(new, started + 8.0 * pick),
                          assertion_body(new)))
            vectors.append(("assertion", assertion_id, len(new.text),
                            to_blob(synth.near(sources[pick : pick + 1])[0])))
            assertion_id += 1
        turn_id += len(said)
        session_id += 1
    conn.executemany(
        "INSERT INTO sessions (id, space_id, activity, title, started_at, ended_at, status,"
        " participants, keep_status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", sessions)
    conn.executemany(
        "INSERT INTO turns (id, session_id, seq, speaker, source, start_s, end_s, text)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)", turns)
    conn.executemany(
        "INSERT INTO chunks (id, kind, session_id, space_id, header, body, occurred_at,"
        " first_turn, last_turn) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", chunks)
    conn.executemany("INSERT INTO chunks_fts (rowid, header, body) VALUES (?, ?, ?)",
                     [(c[0], c[4], c[5]) for c in chunks])
    conn.executemany(
        "INSERT INTO assertions (id, kind, text, space_id, source, anchor_chunk_id, session_id,"
        " occurred_at, recorded_at) VALUES (?, ?, ?, ?, 'extracted', ?, ?, ?, ?)", assertions)
    conn.executemany("INSERT INTO assertions_fts (rowid, header, body) VALUES (?, ?, ?)", fts_a)
    now = time.time()
    conn.executemany(
        "INSERT INTO embeddings (owner_kind, owner_id, model_id, dims, chars, vector,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(kind, owner, model_id, dims, chars, blob, now) for kind, owner, chars, blob in vectors])
    return len(turns) + len(chunks) + len(assertions)


def _next_id(conn: apsw.Connection, table: str) -> int:
    found = conn.execute(f"SELECT coalesce(max(id), 0) + 1 FROM {table}").get
    assert isinstance(found, int)
    return found


def _date(when: float) -> dt.date:
    return dt.datetime.fromtimestamp(when, dt.UTC).date()


# -- measuring -------------------------------------------------------------------------------


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


# questions asked before each measured series, none of them measured
WARM_UP = 20


def questions(locomo: Path, count: int) -> list[str]:
    found = [qa["question"] for sample in json.loads(locomo.read_text())
             for qa in sample["qa"] if qa.get("category") in (1, 2, 3, 4)]
    return random.Random(7).sample(found, min(count, len(found)))


def latency(store: Store, scope: Scope, queries: Sequence[str],
            reranker: CrossEncoder | None = None) -> str:
    """Search p50/p95 over ``queries`` after as many other questions have warmed the store's
    connections (the first searches of a process read their pages: a running daemon has)."""
    warm, measured = queries[:WARM_UP], queries[WARM_UP:]
    latencies(store, scope, warm, warmup=0, reranker=reranker)
    cpu: list[float] = []
    wall = latencies(store, scope, measured, warmup=0, reranker=reranker, cpu=cpu)
    return (f"p50 {statistics.median(wall) * 1e3:.0f} ms p95 {percentile(wall, 0.95) * 1e3:.0f}"
            f" ms (CPU p50 {statistics.median(cpu) * 1e3:.0f} ms p95 "
            f"{percentile(cpu, 0.95) * 1e3:.0f} ms; {load()})")


def disk(data_dir: Path) -> str:
    db = sum(p.stat().st_size for p in data_dir.glob(DB_FILE + "*"))
    index = sum(p.stat().st_size for p in data_dir.glob("vectors-*"))
    return f"database {db / 2**20:,.0f} MB, vector indexes {index / 2**20:,.0f} MB"


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) process ``pid`` has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def daemon_figures(cache: Path, size: int, models: Path, query: str) -> list[str]:
    """A real daemon on the profile: start to READY, to its first answered search; idle RSS."""
    from daemon.ipc.client import Client
    from daemon.ipc.protocol import Search
    from daemon.ipc.testing import short_home, start_daemon

    home = short_home()
    try:
        (home / "data" / "profiles").mkdir(parents=True)
        (home / "data" / "profiles" / PROFILE).symlink_to(profile_dir(cache, size))
        env = {"BRAINCUE_MODELS": str(models)}
        began = time.perf_counter()
        daemon = start_daemon(home, timeout=600, env=env)
        ready = time.perf_counter() - began
        ready_cpu = cpu_seconds(daemon.pid)
        try:
            os.environ["BRAINCUE_HOME"] = str(home)
            with Client(timeout=600) as client:
                client.request(Search(query=query, k=5, space=SPACE), timeout=600)
            answered = time.perf_counter() - began
            answered_cpu = cpu_seconds(daemon.pid)
            rss = daemon.rss_bytes()
        finally:
            stopping = time.perf_counter()
            daemon.stop(timeout=600)
        return [f"daemon start to READY {ready:.2f} s, to its first answered search "
                f"{answered:.2f} s (its CPU time {ready_cpu:.2f} s, {answered_cpu:.2f} s; "
                f"{load()})", f"daemon RSS idle after it {rss / 2**20:,.0f} MB",
                f"daemon stop {time.perf_counter() - stopping:.1f} s"]
    finally:
        os.environ.pop("BRAINCUE_HOME", None)
        shutil.rmtree(home, ignore_errors=True)


def measure(cache: Path, size: int, model: Path, models: Path, queries: Sequence[str],
            reranker: CrossEncoder | None) -> Iterator[str]:
    data_dir = profile_dir(cache, size)
    built = json.loads((data_dir / "built.json").read_text())
    yield (f"{built['items']:,} items ({built['sessions']:,} sessions), built in "
           f"{built['seconds']:,} s")
    real = LlamaEmbedder(model, threads=2, batch=32)
    try:
        began = time.perf_counter()
        with Store(data_dir, real) as store:  # the first open builds the indexes
            yield (f"store open {time.perf_counter() - began:.2f} s ({load()})")
            scope = Scope(space_id=store.space_id(SPACE))
            yield (f"search with the query embedded  {latency(store, scope, queries)}")
        known = MemoEmbedder(real)
        known.embed_sync(list(queries))
        with Store(data_dir, known) as store:
            yield (f"search, vector known            {latency(store, scope, queries)}")
            if reranker is not None:
                yield ("re-ranked, vector known         "
                           f"{latency(store, scope, queries, reranker)}")
            began = time.perf_counter()
            taken = store.make_backup(reason="bench", keep=1)
            yield (f"backup {time.perf_counter() - began:.1f} s, "
                       f"{taken.size / 2**20:,.0f} MB ({load()})")
            taken.path.unlink()
    finally:
        real.close()
    yield disk(data_dir)
    yield from daemon_figures(cache, size, models, queries[0])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qmsum", type=Path, required=True, help="the QMSum dev directory")
    parser.add_argument("--locomo", type=Path, required=True, help="LoCoMo dev JSON")
    parser.add_argument("--cache", type=Path, required=True,
                        help="where the profiles are built and kept between runs")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--models-dir", type=Path, default=default_models_dir())
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--no-rerank", action="store_true", help="skip the re-ranked figures")
    args = parser.parse_args(argv)

    args.cache.mkdir(parents=True, exist_ok=True)
    model = model_path(args.model, args.models_dir)
    convs = conversations(args.qmsum, args.locomo)
    texts = [text for conv in convs for _, text in conv]
    vectors = source_vectors(texts, model, args.cache)
    probe = LlamaEmbedder(model, threads=1, batch=1)
    model_id, dims = probe.model_id, probe.dimensions
    probe.close()
    reranker = None
    if not args.no_rerank:
        entry = pick_installed("rerank", args.models_dir, "")
        reranker = CrossEncoder(args.models_dir / entry.filename, threads=2)
    queries = questions(args.locomo, WARM_UP + args.queries)
    print(f"{machine()}; {_cpu()}; {len(convs)} source conversations, {len(texts):,} turns")
    for size in args.sizes:
        build(args.cache, size, Synth(convs, vectors, seed=size), model_id, dims)
        print(f"\n== {size:,} items ==", flush=True)
        for line in measure(args.cache, size, model, args.models_dir, queries, reranker):
            print(line, flush=True)
    if reranker is not None:
        reranker.close()


def _cpu() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "cpu unknown"
    name = next((line.split(":", 1)[1].strip() for line in out.splitlines()
                 if line.startswith("Model name")), "cpu unknown")
    mhz = next((line.split(":", 1)[1].strip() for line in out.splitlines()
                if "MHz" in line), "")
    return f"{name}{f', {mhz} MHz' if mhz else ''}"


if __name__ == "__main__":
    main()

"""IPC figures against a real daemon subprocess (`python -m daemon`, fresh BRAINCUE_HOME).

    .venv/bin/python -m bench.ipc [--seconds 3] [--chunks 3000] [--repeat 200]

Prints ping round trips per second with one client and with 8 concurrent clients (threads,
one Client each), and the median ping latency. Then it fills the store through the protocol
with synthetic transcripts until it holds ``--chunks`` chunks (embedded when an embedding model
is installed: BRAINCUE_MODELS), and prints the median latency of the same searches over IPC
(`Search`) and called in-process (`daemon.store.search.search` on the same store, opened in this
process once the daemon has stopped).
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import shutil
import signal
import statistics
import threading
import time
from collections.abc import Callable

from bench.embed import sentences
from daemon.config import Config
from daemon.engines import Engines
from daemon.ipc.client import Client
from daemon.ipc.protocol import ImportTranscript, Ping, Search, Status
from daemon.ipc.testing import short_home, start_daemon
from daemon.store.scope import Scope
from daemon.store.search import search
from daemon.store.store import Store

QUERIES = [
    "when is the quarterly budget due", "who approved the launch plan", "contract draft",
    "what happened with the server migration", "Priya asked about the hiring process",
    "release notes before the workshop", "the vendor postponed", "price list in March",
    "meeting room booked", "what did Bob review last week",
]


def round_trips_per_second(clients: int, seconds: float) -> float:
    """Pings answered per second, ``clients`` threads each with its own Client."""
    start = threading.Barrier(clients + 1)
    counts = [0] * clients
    stop_at = 0.0

    def run(n: int) -> None:
        with Client(timeout=30) as client:
            client.request(Ping())  # connected before the clock starts
            start.wait()
            while time.perf_counter() < stop_at:
                client.request(Ping())
                counts[n] += 1

    threads = [threading.Thread(target=run, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    stop_at = began + seconds
    start.wait()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.perf_counter() - began)


def median_latency(call: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``call`` in seconds, after one warm-up call."""
    call()
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def fill(client: Client, chunks: int) -> tuple[int, float]:
    """Import synthetic calls until the store holds ``chunks`` chunks; (chunks, seconds)."""
    began = time.perf_counter()
    pool = itertools.cycle(sentences(20_000, seed=5))
    held = 0
    for call in itertools.count():
        turns = [{"speaker": ("me", "them")[i % 2], "t": 6.0 * i,
                  "text": " ".join(itertools.islice(pool, 1 + i % 3))} for i in range(120)]
        transcript = {"title": f"Call {call}", "turns": turns,
                      "started_at": f"2026-{1 + call % 12:02d}-{1 + call % 28:02d}T10:00:00"}
        client.request(ImportTranscript(content=json.dumps(transcript).encode()), timeout=900)
        held = client.request(Status()).counts["chunks"]
        if held >= chunks:
            return held, time.perf_counter() - began
    raise AssertionError("unreachable")


def search_in_process(repeat: int, queries: itertools.cycle[str]) -> float:
    """The median latency of the same searches on the same store, in this process."""
    config = Config.load()
    engines = Engines(lambda: config.settings, config.paths.models_dir)
    store = Store.open(config.paths, engines.open_embedder())
    scope = Scope(person_memory=config.settings.memory_enabled)
    try:
        return median_latency(
            lambda: search(store, next(queries), scope=scope, k=config.settings.search_k),
            repeat)
    finally:
        store.close()
        engines.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each run")
    parser.add_argument("--chunks", type=int, default=3000,
                        help="chunks in the store searched (0: no search figures)")
    parser.add_argument("--repeat", type=int, default=200, help="searches per median")
    args = parser.parse_args()
    logging.basicConfig(format="note: %(message)s", level=logging.WARNING)

    home = short_home()
    os.environ["BRAINCUE_HOME"] = str(home)
    os.environ["BRAINCUE_CAPTURE"] = "off"  # no audio: the figures are the protocol's
    daemon = start_daemon(home)
    try:
        print(f"BrainCue IPC (daemon pid {daemon.pid}, {os.cpu_count()} CPUs)")
        for clients in (1, 8):
            rate = round_trips_per_second(clients, args.seconds)
            print(f"ping round trips/s, {clients} client{'s' if clients > 1 else ' '}   "
                  f"{rate:10,.0f}")
        with Client() as client:
            latency = median_latency(lambda: client.request(Ping()), 2000)
            print(f"ping median latency          {latency * 1e6:10,.0f} µs")
            if args.chunks:
                held, took = fill(client, args.chunks)
                status = client.request(Status())
                models = ", ".join(status.models_loaded) or "none (full-text legs only)"
                print(f"store: {held:,} chunks, {status.counts['vectors']:,} vectors "
                      f"(filled over IPC in {took:.0f} s); models: {models}")
                queries = itertools.cycle(QUERIES)
                remote = median_latency(
                    lambda: client.request(Search(query=next(queries)), timeout=60), args.repeat)
        code = daemon.stop(signal.SIGTERM)
        if code != 0:
            raise SystemExit(f"the daemon exited with {code}:\n{daemon.log()}")
        if args.chunks:
            local = search_in_process(args.repeat, itertools.cycle(QUERIES))
            print(f"search median latency        over IPC {remote * 1e3:8.2f} ms   in-process "
                  f"{local * 1e3:8.2f} ms   (IPC adds {(remote - local) * 1e3:.2f} ms)")
    finally:
        daemon.stop(signal.SIGKILL)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()

"""IPC figures against a real daemon subprocess (`python -m daemon`, fresh BRAINCUE_HOME).

    .venv/bin/python bench/ipc.py [--seconds 3]

Prints ping round trips per second with one client and with 8 concurrent clients (threads,
one Client each), and the median ping latency. Whoever adds a request type whose in-process cost
matters (Search) compares it with `compare_latency(label, over_ipc, in_process)`, called from
`main` where marked.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import threading
import time
from collections.abc import Callable

from daemon.ipc.client import Client
from daemon.ipc.protocol import Ping
from daemon.ipc.testing import short_home, start_daemon


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


def compare_latency(label: str, over_ipc: Callable[[], object],
                    in_process: Callable[[], object], repeat: int = 200) -> None:
    """Print the median latency of the same operation over IPC and called in-process."""
    remote = median_latency(over_ipc, repeat)
    local = median_latency(in_process, repeat)
    print(f"{label:<28} over IPC {remote * 1e3:8.3f} ms   in-process {local * 1e3:8.3f} ms   "
          f"(IPC adds {(remote - local) * 1e3:.3f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each run")
    args = parser.parse_args()

    home = short_home()
    os.environ["BRAINCUE_HOME"] = str(home)
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
            # Search over IPC next to the same search in-process goes here, e.g.:
            # compare_latency("search", lambda: client.request(Search(query=q)),
            #                 lambda: store.search(q))
    finally:
        daemon.stop(signal.SIGTERM)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()

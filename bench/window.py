"""How fast the memory window opens on a large profile, and whether it stays responsive while
a keep runs, against the real daemon with the installed models.

    .venv/bin/python -m bench.window MEETING.json [--sessions 1000] [--opens 5]

Fills a fresh profile with ``--sessions`` short sessions in ten Spaces (written and embedded
through the store with the daemon's own embedder, before the daemon starts), starts the daemon
(``python -m daemon``), then:

- *open*: the time from creating the window to its session list filled (every Space, every
  session), ``--opens`` times, each a new window;
- *during a keep*: imports MEETING.json (BrainCue's transcript format, e.g. a QMSum meeting) and
  keeps it with the installed language model; meanwhile the window's event loop is timed by a
  20 ms timer (the longest gap is how long the window froze) and the window reloads every half
  second (the time from asking to the list filled again).

Runs on Qt's offscreen platform (no display needed). Timings depend on the machine's load:
the load average is printed with them.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path

from bench.common import machine, percentile
from daemon.config import Config, Paths, Settings, save_settings
from daemon.engines import Engines
from daemon.ipc.client import Client
from daemon.ipc.protocol import ImportTranscript, Remember, RememberReply
from daemon.ipc.testing import short_home, start_daemon
from daemon.store.records import NewTurn
from daemon.store.store import Store

SPACES = 10
TIMER_MS = 20
RELOAD_EVERY_S = 0.5


def fill(paths: Paths, sessions: int) -> None:
    """``sessions`` ended sessions of three turns, spread over the Spaces, a day apart."""
    config = Config.load()
    engines = Engines(lambda: config.settings, paths.models_dir)
    store = Store.open(paths, engines.open_embedder())
    try:
        spaces = [store.create_space(f"Project {n}").id for n in range(SPACES)]
        start = time.time() - sessions * 86400
        for n in range(sessions):
            session = store.create_session(space_id=spaces[n % SPACES], title=f"Weekly sync {n}",
                                           started_at=start + n * 86400)
            store.append_turns(session.id, [
                NewTurn(speaker="me", text=f"Where are we with item {n}?", start=0.0),
                NewTurn(speaker="Them 1", text=f"Item {n} ships next week.", start=5.0),
                NewTurn(speaker="me", text="Good, thanks.", start=9.0),
            ])
            store.end_session(session.id, ended_at=start + n * 86400 + 1800)
    finally:
        store.close()
        engines.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("meeting", type=Path)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--opens", type=int, default=5)
    args = parser.parse_args()

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    home = short_home()
    os.environ["BRAINCUE_HOME"] = str(home)
    paths = Paths.resolve()
    save_settings(paths, Settings(memory_enabled=True, llm_threads=1))
    began = time.perf_counter()
    fill(paths, args.sessions)
    print(f"profile: {args.sessions} sessions in {SPACES} Spaces, written in "
          f"{time.perf_counter() - began:.0f} s")
    daemon = start_daemon(home, timeout=120)
    try:
        measure(paths, args)
    finally:
        daemon.stop()


def measure(paths: Paths, args: argparse.Namespace) -> None:
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from clients.window import MemoryWindow

    app = QApplication(["braincue-bench"])

    def wait_for(condition: object, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():  # type: ignore[operator]
            if time.monotonic() > deadline:
                raise RuntimeError("timed out")
            app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 10)

    opens = []
    for _ in range(args.opens):
        started = time.perf_counter()
        window = MemoryWindow(paths)
        window.show()
        wait_for(lambda w=window: w.loads >= 1)
        QApplication.processEvents()  # the first paint
        opens.append(time.perf_counter() - started)
        shown = sum(len(rows) for _, rows in window.session_rows())
        assert shown == args.sessions, f"{shown} sessions listed"
        window.close_link()
        window.close()
    print(f"open with {args.sessions} sessions: median {percentile(opens, 0.5):.2f} s, "
          f"slowest {max(opens):.2f} s ({args.opens} opens; {machine()})")

    window = MemoryWindow(paths)
    window.show()
    wait_for(lambda: window.loads >= 1)
    with Client(paths) as client:
        imported = client.request(ImportTranscript(content=args.meeting.read_bytes(),
                                                   filename=args.meeting.name,
                                                   space="Project 0"), timeout=600)
    kept: list[RememberReply] = []

    def keep() -> None:
        with Client(paths) as keeper:
            kept.append(keeper.request(Remember(session_id=imported.session.id, answer="keep"),
                                       timeout=3600))

    gaps: list[float] = []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(TIMER_MS)
    reloads: list[float] = []
    keeper = threading.Thread(target=keep)
    keep_started = time.perf_counter()
    keeper.start()
    while keeper.is_alive():
        asked, before = time.perf_counter(), window.loads
        window.reload()
        wait_for(lambda before=before: window.loads > before, timeout=120)
        reloads.append(time.perf_counter() - asked)
        until = time.perf_counter() + RELOAD_EVERY_S
        wait_for(lambda until=until: time.perf_counter() >= until)
    keeper.join()
    keep_s = time.perf_counter() - keep_started
    timer.stop()
    window.close_link()
    window.close()
    reply = kept[0]
    print(f"keep of {args.meeting.name}: {keep_s:.0f} s, {reply.keep_status}, "
          f"{reply.assertions} assertions, archive {'written' if reply.archived else 'not'}")
    print(f"during it: event loop gap (20 ms timer) median {percentile(gaps, 0.5) * 1000:.0f} ms,"
          f" p99 {percentile(gaps, 0.99) * 1000:.0f} ms, longest {max(gaps) * 1000:.0f} ms; "
          f"reload of the session list median {percentile(reloads, 0.5):.2f} s, "
          f"p95 {percentile(reloads, 0.95):.2f} s, slowest {max(reloads):.2f} s "
          f"({len(reloads)} reloads; {machine()})")


if __name__ == "__main__":
    main()

"""Qt pieces the tray and the hotkey share."""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable

from PySide6.QtCore import QRectF, QSocketNotifier, Qt, QTimer
from PySide6.QtGui import QColor, QIcon, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QApplication

from daemon.errors import ConfigError

log = logging.getLogger("braincue.desktop")


class MainThread:
    """Runs callables on the Qt thread; :meth:`post` may be called from any thread.

    The other threads never touch a Qt object: they queue the callable and write a byte to a
    pipe that a QSocketNotifier watches from the Qt thread.
    """

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        self._notifier = QSocketNotifier(self._wake_read, QSocketNotifier.Type.Read)
        self._notifier.activated.connect(self._run_posted)

    def post(self, fn: Callable[[], None]) -> None:
        with self._lock:  # never write to a closed descriptor (its number may be reused)
            if self._closed:
                return
            self._calls.put(fn)
            with contextlib.suppress(BlockingIOError):  # the pipe is full: a wake-up is pending
                os.write(self._wake_write, b"\0")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._notifier.setEnabled(False)
            os.close(self._wake_read)
            os.close(self._wake_write)

    def _run_posted(self) -> None:
        # Empty the pipe first: a callable queued after this still writes a byte of its own.
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_read, 4096):
                pass
        while True:
            try:
                fn = self._calls.get_nowait()
            except queue.Empty:
                return
            try:
                fn()
            except Exception:
                log.exception("a callback on the UI thread failed")


def application(name: str) -> QApplication:
    """The process's QApplication (created on first use); a clear error without a display."""
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    if sys.platform.startswith("linux") and not _has_display():
        raise ConfigError("no graphical session here (DISPLAY and WAYLAND_DISPLAY are unset)",
                          fix="run it from your desktop session; it starts there at login "
                              "after `braincue service install`")
    app = QApplication([name])
    app.setApplicationName(name)
    app.setQuitOnLastWindowClosed(False)  # closing a dialog must not end a tray or hotkey
    return app


def _has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def dot_icon(colour: str, *, ring: str = "#1b1b1b", size: int = 64) -> QIcon:
    """A filled circle: the tray icon, one colour per state."""
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(QPen(QColor(ring), size / 16))
    painter.setBrush(QColor(colour))
    margin = size / 8
    painter.drawEllipse(QRectF(margin, margin, size - 2 * margin, size - 2 * margin))
    painter.end()
    icon = QIcon()
    for mode in (QIcon.Mode.Normal, QIcon.Mode.Disabled):  # the same in the menu's header
        icon.addPixmap(pixmap, mode)
    return icon


def exec_until_interrupted(app: QApplication) -> int:
    """``app.exec()``, ended by SIGINT/SIGTERM (Qt's loop would otherwise hold them back)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: app.quit())
    wake = QTimer()
    wake.timeout.connect(lambda: None)  # lets the interpreter run its signal handlers
    wake.start(250)
    return app.exec()

"""`braincue hotkey`: ask your conversation memory from any application.

A global hotkey (setting ``hotkey_ask``, Ctrl+Alt+Space) opens a small ask box: type a
question, Enter, and the answer streams in, then its sources. A second hotkey
(``hotkey_answer_them``, Ctrl+Alt+Shift+Space) asks with no question: the daemon answers what
"they" just asked in the live call. Everything goes through the daemon's ``Ask`` request; this
client only shows what comes back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal, TypeVar

from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent, QKeyEvent, QTextCursor
from PySide6.QtWidgets import (
    QLabel,
    QLineEdit,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from clients.cli.output import evidence_block, source_line
from clients.desktop.link import DaemonLink
from clients.desktop.qt import MainThread, application, exec_until_interrupted
from clients.desktop.xkeys import X11Hotkeys, parse_hotkey
from daemon.config import Paths, Settings
from daemon.errors import BrainCueError
from daemon.ipc.protocol import Ask, AskReply, EvidenceInfo

log = logging.getLogger("braincue.desktop")
T = TypeVar("T")

PLACEHOLDER = "Ask your memory…   Enter: ask · Esc: close"
THEM_PROMPT = "What they just asked…"


class AskBox(QWidget):
    """A small window: a question line, what memory holds for it (at once), the streamed
    answer, its sources."""

    def __init__(self, link: DaemonLink, space: str | None = None) -> None:
        super().__init__()
        self._link = link
        self._space = space
        self._generation = 0  # which question the callbacks in flight belong to
        self.setWindowTitle("Ask BrainCue")
        self.setWindowFlag(Qt.WindowType.WindowStaysOnTopHint)
        self.resize(560, 340)
        self.question = QLineEdit()
        self.question.setPlaceholderText(PLACEHOLDER)
        self.question.returnPressed.connect(self.submit)
        self.evidence = QTextBrowser()  # what memory holds: shown before the answer
        self.evidence.setOpenLinks(False)
        self.answer = QTextBrowser()
        self.answer.setOpenLinks(False)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self.question)
        layout.addWidget(self.evidence, 1)
        layout.addWidget(self.answer, 1)
        layout.addWidget(self.status)

    # -- what the hotkeys do -------------------------------------------------------------------

    def open_for_question(self) -> None:
        self._present()
        self.question.selectAll()
        self.question.setFocus()

    def answer_them(self) -> None:
        """Ask with no question: the daemon answers the last question heard from "them"."""
        self._present()
        self.question.clear()
        self.question.setPlaceholderText(THEM_PROMPT)
        self._ask(None)

    def submit(self) -> None:
        text = self.question.text().strip()
        if text:
            self._ask(text)

    # -- streaming -----------------------------------------------------------------------------

    def _ask(self, question: str | None) -> None:
        self._generation += 1
        self.evidence.clear()
        self.answer.clear()
        self.status.setText("Thinking…")
        self._link.ask(
            Ask(question=question, space=self._space),
            on_token=self._if_current(self._on_token),
            on_reply=self._if_current(self._on_reply),
            on_error=self._if_current(self._on_error),
            on_evidence=self._if_current(self._on_evidence),
        )

    def _if_current(self, callback: Callable[[T], None]) -> Callable[[T], None]:
        """Drop what still arrives for a question once another was asked or the box closed."""
        generation = self._generation

        def guarded(value: T) -> None:
            if generation == self._generation:
                callback(value)

        return guarded

    def _on_evidence(self, evidence: list[EvidenceInfo]) -> None:
        self.evidence.setPlainText(evidence_block(evidence).rstrip())

    def _on_token(self, token: str) -> None:
        cursor = self.answer.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(token)
        self.answer.setTextCursor(cursor)
        self.status.setText("Answering…")

    def _on_reply(self, reply: AskReply) -> None:
        if reply.question and not self.question.text():
            self.question.setText(reply.question)  # the question heard from "them"
        self.answer.setPlainText(reply.answer)  # the final text: quotes checked by the daemon
        if reply.sources:
            cursor = self.answer.textCursor()
            cursor.movePosition(QTextCursor.MoveOperation.End)
            cursor.insertText("\n\nSources\n" + "\n".join(source_line(c) for c in reply.sources))
        self.status.setText("")

    def _on_error(self, error: BrainCueError) -> None:
        self.status.setText(f"⚠ {error}")

    # -- the window ----------------------------------------------------------------------------

    def _present(self) -> None:
        self.question.setPlaceholderText(PLACEHOLDER)
        if not self.isVisible():  # where a launcher opens: centred, in the upper third
            screen = self.screen().availableGeometry()
            self.move(screen.center().x() - self.width() // 2,
                      screen.top() + screen.height() // 4)
        self.show()
        self.raise_()
        self.activateWindow()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.close()
        else:
            super().keyPressEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:
        self._generation += 1
        super().closeEvent(event)


class HotkeyClient:
    """The ask box and, with ``grab``, the global hotkeys that open it."""

    def __init__(self, paths: Paths, settings: Settings, *, space: str | None = None,
                 grab: bool = True, display_name: str | None = None) -> None:
        self.main = MainThread()
        self.link = DaemonLink(paths, self.main.post)
        self.box = AskBox(self.link, space)
        self.hotkeys: X11Hotkeys | None = None
        if grab:
            bindings = {
                parse_hotkey(settings.hotkey_ask): self.box.open_for_question,
                parse_hotkey(settings.hotkey_answer_them): self.box.answer_them,
            }
            try:
                self.hotkeys = X11Hotkeys(bindings, self.main.post, display_name)
            except BaseException:
                self.link.stop()
                raise

    def close(self) -> None:
        if self.hotkeys is not None:
            self.hotkeys.stop()
        self.link.stop()
        self.box.close()
        self.main.close()


Mode = Literal["grab", "open", "them"]


def run(paths: Paths, settings: Settings, mode: Mode = "grab", space: str | None = None) -> int:
    """Run until Ctrl+C (``grab``), or until the box is closed (``open``: ask; ``them``: answer
    what they just asked — for a desktop shortcut where no global grab is possible)."""
    app = application("braincue-hotkey")
    client = HotkeyClient(paths, settings, space=space, grab=mode == "grab")
    try:
        if mode == "grab":
            log.info("hotkeys: %s asks, %s answers what they just asked",
                     parse_hotkey(settings.hotkey_ask), parse_hotkey(settings.hotkey_answer_them))
        else:
            app.lastWindowClosed.connect(app.quit)
            if mode == "open":
                client.box.open_for_question()
            else:
                client.box.answer_them()
        return exec_until_interrupted(app)
    finally:
        client.close()


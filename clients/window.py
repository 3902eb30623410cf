"""The memory window: see, correct and review what BrainCue remembers, without a terminal.

A thin client of the daemon like the tray (it speaks the protocol only; session events keep it
current). Three tabs:

- **Sessions**: the sessions of each Space (and of no Space) with date, length and status, a
  filter and the daemon's full-text search; a session shows its archive, its decisions (chosen,
  alternatives, why, who, when), its commitments and tasks (owner, due, open or closed), its
  key quotes and its transcript, and selecting an item selects the turns it was said in. The
  corrections sent from here are the daemon's own: a correction supersedes the extracted
  version (the old one stays in the history), a speaker renamed follows into the transcript,
  archive and owners, and keep / discard / decide later re-files the session. A voice the
  daemon was not sure enough to name is offered above the transcript ("Them 2 — Sarah?"): a
  click confirms it as `braincue voices name` does, and its turns then show the name.
- **Memory**: the review queue of memories about you, by Space, and the two switches.
- **Open items**: what is still open across a Space's sessions.

Every request goes through :class:`~clients.desktop.link.DaemonLink`, so the window never
waits on the daemon; dialogs are non-modal.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from clients.cli.output import local_time, offset
from clients.cli.status import off_machine
from clients.desktop.link import DaemonLink, Down
from clients.desktop.qt import MainThread, application, exec_until_interrupted
from clients.desktop.voices import Offer, confirm, load_offers
from daemon.config import Paths
from daemon.errors import BrainCueError
from daemon.ipc.protocol import (
    TOPIC_SESSIONS,
    AssertionInfo,
    CloseItem,
    CorrectItem,
    Event,
    HistoryReply,
    ItemInfo,
    ItemsReply,
    ListSessions,
    ListSpaces,
    MemoryApprove,
    MemoryEdit,
    MemoryExpire,
    MemoryList,
    MemoryListReply,
    MemoryReject,
    MemoryReply,
    MemoryScope,
    OpenItems,
    Remember,
    RememberReply,
    RenameSpeaker,
    ReopenItem,
    Request,
    RetractItem,
    Search,
    SearchReply,
    SelectItems,
    SessionInfo,
    SessionReply,
    SessionsReply,
    SettingsReply,
    SettingsSet,
    ShowSession,
    SpacesReply,
    StatusReply,
    VoiceReply,
)

log = logging.getLogger("braincue.desktop")

NO_SPACE = "No Space"
EVERY_SPACE = "Every Space"
PROFILE_WIDE = "Profile-wide (every Space)"
QUOTES_HEADING = "In their own words:"
ID_ROLE = Qt.ItemDataRole.UserRole
SAID_ROLE = Qt.ItemDataRole.UserRole + 1  # the version of an item that was said (its evidence)
SWITCHES = {
    "session_archive_enabled": "Archives: keep a summary, decisions and open items of each "
                               "session you keep",
    "memory_enabled": "Memory: propose things about you to remember (each one waits for your "
                      "approval below)",
}

# -- pure: what is shown -------------------------------------------------------------------------


def session_status(info: SessionInfo) -> str:
    """live | kept | later | undecided | archive pending | failed: why."""
    if info.status == "kept" and info.keep_status in ("pending", "running"):
        return "archive pending"
    if info.status == "kept" and info.keep_status == "failed":
        return f"failed: {info.keep_reason or 'unknown'}"
    return {"ended": "undecided", "later": "decide later"}.get(info.status, info.status)


def length(info: SessionInfo) -> str:
    if info.ended_at is None:
        return "live"
    return f"{max(1, round((info.ended_at - info.started_at) / 60))} min"


def session_row(info: SessionInfo) -> list[str]:
    return [info.title or f"Session {info.id}", local_time(info.started_at), length(info),
            session_status(info)]


def key_quotes(archive: str | None) -> list[str]:
    """The archive's key quotes (``Speaker: "words"``), as written."""
    lines = (archive or "").splitlines()
    if QUOTES_HEADING not in lines:
        return []
    quotes = []
    for line in lines[lines.index(QUOTES_HEADING) + 1:]:
        if not line.startswith("- "):
            break
        quotes.append(line[2:])
    return quotes


def decision_row(decision: AssertionInfo, who: str) -> list[str]:
    corrected = " (corrected)" if decision.source == "user" else ""
    return [decision.text + corrected, decision.chosen or "", "; ".join(decision.alternatives),
            decision.reasoning or "", who, local_time(decision.occurred_at)]


def item_row(item: ItemInfo) -> list[str]:
    return [item.text, item.owner or "", item.due or "", item.status or "open", item.kind]


def open_item_row(item: ItemInfo) -> list[str]:
    return [item.text, item.owner or "", item.due or "", item.session_title,
            local_time(item.occurred_at)]


def turn_line(speaker: str, start: float, text: str) -> str:
    return f"[{offset(start)}] {speaker}: {text}"


def expiry_time(text: str, now: dt.datetime) -> float | None:
    """"30" (days from now) or "never"."""
    text = text.strip().lower()
    if text in ("", "never"):
        return None
    days = float(text.removesuffix("d"))
    if days <= 0:
        raise ValueError("a number of days above 0, or never")
    return (now + dt.timedelta(days=days)).timestamp()


# -- dialogs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    key: str
    label: str
    value: str = ""
    choices: tuple[str, ...] = ()  # a choice instead of free text


class FormDialog(QDialog):
    """A few labelled fields and OK / Cancel; ``on_ok`` gets the values by key."""

    def __init__(self, title: str, fields: Sequence[Field],
                 on_ok: Callable[[dict[str, str]], None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self._on_ok = on_ok
        self.inputs: dict[str, QLineEdit | QComboBox] = {}
        form = QFormLayout()
        for field in fields:
            widget: QLineEdit | QComboBox
            if field.choices:
                widget = QComboBox()
                widget.addItems(list(field.choices))
                widget.setCurrentText(field.value)
            else:
                widget = QLineEdit(field.value)
            self.inputs[field.key] = widget
            form.addRow(field.label, widget)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._ok)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(buttons)

    def set(self, key: str, value: str) -> None:
        widget = self.inputs[key]
        if isinstance(widget, QComboBox):
            widget.setCurrentText(value)
        else:
            widget.setText(value)

    def _ok(self) -> None:
        self._on_ok({key: w.currentText() if isinstance(w, QComboBox) else w.text()
                     for key, w in self.inputs.items()})
        self.accept()


def tree(headings: Sequence[str]) -> QTreeWidget:
    widget = QTreeWidget()
    widget.setHeaderLabels(list(headings))
    widget.setRootIsDecorated(False)
    widget.setWordWrap(True)
    widget.setAlternatingRowColors(True)
    header = widget.header()
    header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    header.resizeSection(0, header.fontMetrics().horizontalAdvance("x") * 40)
    return widget


def row_texts(item: QTreeWidgetItem) -> list[str]:
    return [item.text(i) for i in range(item.columnCount())]


def groups(widget: QTreeWidget) -> list[tuple[QTreeWidgetItem, list[QTreeWidgetItem]]]:
    """A grouped tree's top-level rows, each with its children."""
    out = []
    for i in range(widget.topLevelItemCount()):
        group = widget.topLevelItem(i)
        if group is not None:
            children = [group.child(j) for j in range(group.childCount())]
            out.append((group, [c for c in children if c is not None]))
    return out


def buttons(*pairs: tuple[str, Callable[[], None]]) -> tuple[QHBoxLayout, list[QPushButton]]:
    row = QHBoxLayout()
    made = []
    for label, action in pairs:
        button = QPushButton(label)
        button.clicked.connect(action)
        row.addWidget(button)
        made.append(button)
    row.addStretch(1)
    return row, made


# -- the window ----------------------------------------------------------------------------------


class MemoryWindow(QMainWindow):
    """The window for one profile's daemon."""

    def __init__(self, paths: Paths) -> None:
        super().__init__()
        self.main = MainThread()
        self.link = DaemonLink(paths, self.main.post)
        self.setWindowTitle(f"BrainCue — {paths.profile}")
        self.spaces: list[str] = []
        self.sessions: list[SessionInfo] = []
        self._listed: tuple[list[str], list[SessionInfo]] | None = None  # what the list shows
        self.session: SessionReply | None = None
        self.items: list[ItemInfo] = []
        self.memories: list[AssertionInfo] = []
        self.open_items: list[ItemInfo] = []
        self.dialog: FormDialog | None = None
        self.selected: int | None = None  # the assertion chosen in the session shown
        self.offers: list[Offer] = []  # names offered for the voices of the session shown
        self.offered_in: int | None = None  # the session they were looked up for
        self.last_message = ""
        self.loads = 0  # replies that filled the session list (tests wait on it)
        self.tabs = QTabWidget()
        self.tabs.addTab(self._sessions_tab(), "&Sessions")
        self.tabs.addTab(self._memory_tab(), "&Memory")
        self.tabs.addTab(self._open_tab(), "&Open items")
        self.setCentralWidget(self.tabs)
        self._shortcuts()
        self.resize(1200, 760)
        self.reload()
        self.link.follow(on_status=self._on_status, on_event=self._on_event,
                         on_down=self._on_down, topics=[TOPIC_SESSIONS])

    def close_link(self) -> None:
        self.link.stop()
        self.main.close()

    # -- building ------------------------------------------------------------------------------

    def _sessions_tab(self) -> QWidget:
        left = self._session_list_pane()
        self.heading = QLabel("Choose a session")
        self.heading.setWordWrap(True)
        self.keep_space = QComboBox()
        self.keep_space.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        keep_row, _ = buttons(("&Keep", lambda: self.remember("keep")),
                              ("Disc&ard", lambda: self.remember("discard")),
                              ("Decide &later", lambda: self.remember("later")))
        keep_row.insertWidget(0, QLabel("File into:"))
        keep_row.insertWidget(1, self.keep_space)
        self.archive = QPlainTextEdit()
        self.archive.setReadOnly(True)
        said = self._said_pane()
        self.quotes = QListWidget()
        self.quotes.setWordWrap(True)
        self.transcript = QListWidget()
        self.transcript.setWordWrap(True)
        self.transcript.setSelectionMode(QListWidget.SelectionMode.ExtendedSelection)
        speaker_row, _ = buttons(("Rename &speaker…", self.rename_speaker))
        self.offer_row = QHBoxLayout()
        self.offer_label = QLabel("Who spoke:")
        self.offer_label.hide()
        self.offer_row.addWidget(self.offer_label)
        self.offer_row.addStretch(1)
        self.offer_buttons: list[QPushButton] = []

        archive = QWidget()
        archive_layout = QVBoxLayout(archive)
        archive_layout.addWidget(QLabel("<b>Archive</b>"))
        archive_layout.addWidget(self.archive, 3)
        archive_layout.addWidget(QLabel("<b>Key quotes</b>"))
        archive_layout.addWidget(self.quotes, 1)
        transcript = QWidget()
        transcript_layout = QVBoxLayout(transcript)
        transcript_layout.addWidget(QLabel("<b>Transcript</b>"))
        transcript_layout.addLayout(self.offer_row)
        transcript_layout.addWidget(self.transcript)
        transcript_layout.addLayout(speaker_row)
        parts = QSplitter(Qt.Orientation.Vertical)
        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(archive)
        top.addWidget(said)
        parts.addWidget(top)
        parts.addWidget(transcript)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.addWidget(self.heading)
        right_layout.addLayout(keep_row)
        right_layout.addWidget(parts, 1)
        whole = QSplitter(Qt.Orientation.Horizontal)
        whole.addWidget(left)
        whole.addWidget(right)
        whole.setStretchFactor(1, 3)
        whole.setSizes([420, 1080])
        top.setSizes([400, 680])
        return whole

    def _session_list_pane(self) -> QWidget:
        """The sessions, the filter over them and the results of a search."""
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter by title; Enter searches everything said")
        self.filter.textChanged.connect(self._apply_filter)
        self.filter.returnPressed.connect(self.search)
        self.session_list = tree(["Session", "Date", "Length", "Status"])
        self.session_list.setRootIsDecorated(True)
        self.session_list.currentItemChanged.connect(self._session_chosen)
        self.results = QListWidget()
        self.results.setWordWrap(True)
        self.results.itemActivated.connect(self._result_chosen)
        self.results.hide()
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.addWidget(self.filter)
        left_layout.addWidget(self.session_list, 3)
        left_layout.addWidget(self.results, 2)
        return left

    def _said_pane(self) -> QWidget:
        """What a session said: its decisions, its commitments and tasks, and their buttons."""
        self.decisions = tree(["Decision", "Chosen", "Alternatives", "Why", "Who", "When"])
        self.decisions.currentItemChanged.connect(lambda item, _: self._show_evidence(item))
        self.item_list = tree(["Commitment or task", "Owner", "Due", "Status", "Kind"])
        self.item_list.currentItemChanged.connect(lambda item, _: self._show_evidence(item))
        item_row_, _ = buttons(("&Edit…", self.edit_selected), ("De&lete", self.retract_selected),
                               ("Do&ne", lambda: self.close_selected("done")),
                               ("D&rop", lambda: self.close_selected("dropped")),
                               ("Re&open", self.reopen_selected))
        self.detail = QLabel("")
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        said = QWidget()
        said_layout = QVBoxLayout(said)
        for label, widget in (("Decisions", self.decisions),
                              ("Commitments and tasks", self.item_list)):
            said_layout.addWidget(QLabel(f"<b>{label}</b>"))
            said_layout.addWidget(widget)
        said_layout.addWidget(self.detail)
        said_layout.addLayout(item_row_)
        return said

    def _memory_tab(self) -> QWidget:
        self.switches: dict[str, QCheckBox] = {}
        page = QWidget()
        layout = QVBoxLayout(page)
        switch_row = QHBoxLayout()
        for key, label in SWITCHES.items():
            box = QCheckBox(label)
            box.clicked.connect(lambda on, key=key: self.switch(key, on))
            self.switches[key] = box
            switch_row.addWidget(box)
        layout.addLayout(switch_row)
        layout.addWidget(QLabel("<b>Memories to review</b> — nothing here is recalled until "
                                "you approve it"))
        self.memory_tree = tree(["Memory", "Kind", "Status", "Expires"])
        self.memory_tree.setRootIsDecorated(True)
        layout.addWidget(self.memory_tree)
        row, _ = buttons(("&Approve", lambda: self._review(MemoryApprove)),
                         ("Re&ject", lambda: self._review(MemoryReject)),
                         ("&Edit…", self.edit_memory), ("Re-&scope…", self.scope_memory),
                         ("E&xpire…", self.expire_memory))
        layout.addLayout(row)
        return page

    def _open_tab(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        top = QHBoxLayout()
        self.open_space = QComboBox()
        self.open_space.currentTextChanged.connect(lambda _: self.load_open_items())
        self.open_count = QLabel("")
        top.addWidget(QLabel("Space:"))
        top.addWidget(self.open_space)
        top.addWidget(self.open_count, 1)
        layout.addLayout(top)
        self.open_tree = tree(["Open item", "Owner", "Due", "Said in", "When"])
        self.open_tree.itemActivated.connect(self._open_item_chosen)
        layout.addWidget(self.open_tree)
        return page

    def _shortcuts(self) -> None:
        for keys, action in (("Ctrl+F", self.filter.setFocus), ("F5", self.reload),
                             ("Ctrl+L", self.session_list.setFocus),
                             ("Ctrl+T", self.transcript.setFocus)):
            QShortcut(QKeySequence(keys), self).activated.connect(action)

    # -- talking to the daemon -----------------------------------------------------------------

    def send(self, request: Request[Any], done: Callable[[Any], None]) -> None:
        self.link.submit(request, done, self._failed)

    def _failed(self, error: BrainCueError) -> None:
        self.say(f"{error.message}" + (f" — {error.fix}" if error.fix else ""))

    def say(self, text: str) -> None:
        self.last_message = text
        self.statusBar().showMessage(text)

    def _on_status(self, status: StatusReply) -> None:
        # the connection is up; the events say what changed, and this where text goes
        note = off_machine(status.language_model)
        if note and note != self.last_message:
            self.say(note)

    def _on_down(self, down: Down) -> None:
        self.say(f"the daemon is not reachable: {down.error.message}")

    def _on_event(self, event: Event) -> None:
        self.reload()

    def reload(self) -> None:
        """Spaces, sessions, the session shown, the review queue and the open items, anew."""
        self.send(ListSpaces(), self._spaces_loaded)

    def _spaces_loaded(self, reply: SpacesReply) -> None:
        self.spaces = [s.name for s in reply.spaces]
        for combo, first in ((self.keep_space, None), (self.open_space, EVERY_SPACE)):
            current = combo.currentText()
            combo.blockSignals(True)
            combo.clear()
            combo.addItems(([first] if first else []) + self.spaces
                           + ([] if first else [NO_SPACE]))
            combo.setCurrentText(current)
            combo.blockSignals(False)
        self.send(ListSessions(), self._sessions_loaded)
        self.load_memories()
        self.load_open_items()
        if self.session is not None:
            self.show_session(self.session.session.id)

    def _sessions_loaded(self, reply: SessionsReply) -> None:
        listed = (self.spaces, reply.sessions)
        if listed == self._listed:  # nothing changed: keep the rows (and the UI thread free)
            self.loads += 1
            return
        self._listed = (list(self.spaces), reply.sessions)
        self.sessions = reply.sessions
        chosen = self.session.session.id if self.session is not None else None
        self.session_list.blockSignals(True)
        self.session_list.clear()
        groups: dict[str | None, QTreeWidgetItem] = {}
        for name in [*self.spaces, None]:
            group = QTreeWidgetItem([name or NO_SPACE, "", "", ""])
            group.setFirstColumnSpanned(True)
            groups[name] = group
        for info in reply.sessions:
            group = groups.get(info.space) or groups[None]
            row = QTreeWidgetItem(session_row(info))
            row.setData(0, ID_ROLE, info.id)
            group.addChild(row)
            if info.id == chosen:
                self.session_list.setCurrentItem(row)
        for name, group in groups.items():
            group.setText(0, f"{name or NO_SPACE} ({group.childCount()})")
            self.session_list.addTopLevelItem(group)
            group.setExpanded(True)
        for column in range(1, 4):
            self.session_list.resizeColumnToContents(column)
        header = self.session_list.header()
        header.resizeSection(0, header.fontMetrics().horizontalAdvance("x") * 28)
        self.session_list.blockSignals(False)
        self._apply_filter(self.filter.text())
        self.loads += 1

    def _apply_filter(self, text: str) -> None:
        words = text.casefold().split()
        for _, rows in groups(self.session_list):
            for row in rows:
                row.setHidden(not all(w in row.text(0).casefold() for w in words))

    def session_rows(self) -> list[tuple[str, list[list[str]]]]:
        """What the session list shows: each group's label and its visible rows."""
        return [(group.text(0), [row_texts(r) for r in rows if not r.isHidden()])
                for group, rows in groups(self.session_list)]

    # -- search --------------------------------------------------------------------------------

    def search(self) -> None:
        query = self.filter.text().strip()
        self.results.clear()
        if not query:
            self.results.hide()
            return
        self.results.show()
        for space in [*self.spaces, None]:
            self.send(Search(query=query, space=space, k=5), self._found)

    def _found(self, reply: SearchReply) -> None:
        for hit in reply.results:
            if hit.session_id is None:
                continue
            text = " ".join(hit.text.split())
            item = QListWidgetItem(f"{hit.title} · {local_time(hit.date)}\n{text[:300]}")
            item.setData(ID_ROLE, (hit.session_id, hit.turn_ids))
            self.results.addItem(item)

    def _result_chosen(self, item: QListWidgetItem) -> None:
        session_id, turn_ids = item.data(ID_ROLE)
        self.show_session(session_id, then=lambda: self.select_turns(turn_ids))

    # -- a session -----------------------------------------------------------------------------

    def _session_chosen(self, item: QTreeWidgetItem | None, _: object = None) -> None:
        if item is not None and item.data(0, ID_ROLE) is not None:
            self.show_session(int(item.data(0, ID_ROLE)))

    def show_session(self, session_id: int, then: Callable[[], None] | None = None) -> None:
        def shown(reply: SessionReply) -> None:
            self._fill_session(reply)
            if then is not None:
                then()

        self.send(ShowSession(session_id=session_id), shown)

    def _fill_session(self, reply: SessionReply) -> None:
        self.session = reply
        info = reply.session
        self.heading.setText(f"<b>{info.title or f'Session {info.id}'}</b> · "
                             f"{local_time(info.started_at)} · {length(info)} · "
                             f"{info.space or NO_SPACE} · {session_status(info)}")
        self.keep_space.setCurrentText(info.space or NO_SPACE)
        self.archive.setPlainText(reply.archive or "No archive: the session was not kept "
                                  "in a Space, or its archive is still being written.")
        self.quotes.clear()
        self.quotes.addItems(key_quotes(reply.archive))
        speakers = {t.id: t.speaker for t in reply.turns}
        self.decisions.clear()
        for a in reply.assertions:
            if a.kind == "decision" and a.invalidated_at is None:
                who = a.owner or ", ".join(dict.fromkeys(
                    speakers[t] for t in self.evidence(a.id) if t in speakers))
                row = QTreeWidgetItem(decision_row(a, who))
                row.setData(0, ID_ROLE, a.id)
                row.setData(0, SAID_ROLE, a.id)
                self.decisions.addTopLevelItem(row)
        self.transcript.clear()
        for turn in reply.turns:
            line = QListWidgetItem(turn_line(turn.speaker, turn.start, turn.text))
            line.setData(ID_ROLE, turn.id)
            self.transcript.addItem(line)
        self.item_list.clear()
        self.items = []
        self.selected = None
        self.detail.setText("Choose a decision or an item: its turns are selected below.")
        load_offers(self.link, info.id, lambda offered: self._offers_loaded(info.id, offered))
        if info.space is not None:
            self.send(SelectItems(space=info.space, kinds=["commitment", "task"]),
                      lambda r: self._items_loaded(info.id, r))

    def _items_loaded(self, session_id: int, reply: ItemsReply) -> None:
        if self.session is None or self.session.session.id != session_id:
            return
        self.items = [i for i in reply.items if i.session_id == session_id]
        self.item_list.clear()
        for item in self.items:
            row = QTreeWidgetItem(item_row(item))
            row.setData(0, ID_ROLE, item.closed_by or item.id)  # its current version
            row.setData(0, SAID_ROLE, item.id)
            self.item_list.addTopLevelItem(row)

    def _offers_loaded(self, session_id: int, offered: list[Offer]) -> None:
        """A button for each name offered for a voice the transcript shows."""
        if self.session is None or self.session.session.id != session_id:
            return
        shown = {t.speaker for t in self.session.turns}
        self.offers = [o for o in offered if o.label in shown]
        self.offered_in = session_id
        for button in self.offer_buttons:
            self.offer_row.removeWidget(button)
            button.deleteLater()
        self.offer_buttons = []
        for offer in self.offers:
            button = QPushButton(offer.text)
            button.setToolTip(f"Yes, {offer.label} is {offer.name}: the turns show the name, "
                              f"and {offer.name}'s voice is learnt from this session")
            button.clicked.connect(lambda _=False, offer=offer: self.confirm_offer(offer))
            self.offer_row.insertWidget(self.offer_row.count() - 1, button)
            self.offer_buttons.append(button)
        self.offer_label.setVisible(bool(self.offers))

    def confirm_offer(self, offer: Offer) -> None:
        """The offered name is right: the daemon names the voice, and its turns follow."""

        def named(reply: VoiceReply) -> None:
            self.say(reply.message)
            self.reload()

        confirm(self.link, offer, named, self._failed)

    def evidence(self, assertion_id: int) -> list[int]:
        """The turns an assertion of the session shown was said in."""
        if self.session is None:
            return []
        return self.session.evidence.get(assertion_id, [])

    def _show_evidence(self, row: QTreeWidgetItem | None) -> None:
        if row is not None:
            tree_ = row.treeWidget()
            headings = [tree_.headerItem().text(i) for i in range(tree_.columnCount())]
            self.detail.setText("\n".join(f"{h}: {v}" for h, v in zip(headings, row_texts(row),
                                                                     strict=True) if v))
            self.selected = int(row.data(0, ID_ROLE))
            self.select_turns(self.evidence(self.selected)
                              or self.evidence(int(row.data(0, SAID_ROLE))))

    def select_turns(self, turn_ids: Sequence[int]) -> None:
        """Select these turns of the transcript and scroll to the first."""
        wanted = set(turn_ids)
        self.transcript.clearSelection()
        first = None
        for i in range(self.transcript.count()):
            line = self.transcript.item(i)
            if line.data(ID_ROLE) in wanted:
                line.setSelected(True)
                first = first or line
        if first is not None:
            self.transcript.scrollToItem(first, QListWidget.ScrollHint.PositionAtTop)

    def selected_turns(self) -> list[str]:
        return [line.text() for line in self.transcript.selectedItems()]

    def remember(self, answer: Literal["keep", "discard", "later"]) -> None:
        if self.session is None:
            return
        where = self.keep_space.currentText()
        request = Remember(session_id=self.session.session.id, answer=answer,
                           space=where if answer == "keep" and where != NO_SPACE else None,
                           no_space=answer == "keep" and where == NO_SPACE)
        if answer == "discard":
            self.session = None

        def done(reply: RememberReply) -> None:
            self.say(f"session {reply.session_id}: {reply.status}"
                     + (f" in {reply.space}" if reply.space else "")
                     + "".join(f"; {note}" for note in reply.notes))
            self.reload()

        self.say("working on it…")
        self.send(request, done)

    # -- corrections ---------------------------------------------------------------------------

    def _selected_assertion(self) -> AssertionInfo | ItemInfo | None:
        """The decision, commitment or task last chosen in the session shown; its current
        version is ``self.selected`` (a version closed by hand was said in no session: then
        the item as listed)."""
        if self.session is None or self.selected is None:
            return None
        said = [a for a in self.session.assertions if a.id == self.selected]
        listed = [i for i in self.items if (i.closed_by or i.id) == self.selected]
        return said[0] if said else listed[0] if listed else None

    def _corrected(self, reply: HistoryReply) -> None:
        current = reply.chain[-1]
        self.say(f"saved: {current.text}")
        self.reload()

    def edit_selected(self) -> None:
        chosen = self._selected_assertion()
        if chosen is None:
            self.say("choose a decision, commitment or task first")
            return
        fields = [Field("text", "What:", chosen.text)]
        if chosen.kind == "decision":
            fields += [Field("chosen", "Chosen:", chosen.chosen or ""),
                       Field("alternatives", "Alternatives (; between):",
                             "; ".join(chosen.alternatives)),
                       Field("reasoning", "Why:", chosen.reasoning or "")]
        else:
            fields += [Field("owner", "Owner:", chosen.owner or ""),
                       Field("due", "Due:", chosen.due or "")]

        def save(values: dict[str, str]) -> None:
            alternatives = values.get("alternatives")
            self.send(CorrectItem(
                item_id=self.selected or chosen.id, text=values["text"],
                chosen=values.get("chosen"),
                alternatives=None if alternatives is None else
                [a for a in alternatives.split(";") if a.strip()],
                reasoning=values.get("reasoning"), owner=values.get("owner"),
                due=values.get("due")), self._corrected)

        self._open_dialog(FormDialog(f"Correct this {chosen.kind}", fields, save, self))

    def retract_selected(self) -> None:
        chosen = self._selected_assertion()
        if chosen is not None:
            self.send(RetractItem(item_id=self.selected or chosen.id), self._corrected)

    def close_selected(self, status: Literal["done", "dropped"]) -> None:
        chosen = self._selected_assertion()
        if chosen is not None:
            self.send(CloseItem(item_id=self.selected or chosen.id, status=status), self._corrected)

    def reopen_selected(self) -> None:
        chosen = self._selected_assertion()
        if chosen is not None:
            self.send(ReopenItem(item_id=self.selected or chosen.id), self._corrected)

    def rename_speaker(self) -> None:
        if self.session is None:
            return
        selected = self.transcript.selectedItems()
        turn_id = selected[0].data(ID_ROLE) if selected else None
        speaker = next((t.speaker for t in self.session.turns if t.id == turn_id), "")
        session_id = self.session.session.id
        names = list(dict.fromkeys(t.speaker for t in self.session.turns))

        def save(values: dict[str, str]) -> None:
            def renamed(reply: SessionReply) -> None:
                self.say(f"{values['speaker']} is {values['name']} in this session")
                self.reload()

            self.send(RenameSpeaker(session_id=session_id, speaker=values["speaker"],
                                    name=values["name"]), renamed)

        self._open_dialog(FormDialog("Rename a speaker", [
            Field("speaker", "Speaker:", speaker or (names[0] if names else ""), tuple(names)),
            Field("name", "Is called:")], save, self))

    def _open_dialog(self, dialog: FormDialog) -> None:
        if self.dialog is not None:
            self.dialog.close()
        self.dialog = dialog
        dialog.open()

    # -- memory --------------------------------------------------------------------------------

    def load_memories(self) -> None:
        self.send(MemoryList(status="pending"), self._memories_loaded)

    def _memories_loaded(self, reply: MemoryListReply) -> None:
        self.memories = reply.memories
        self.switches["memory_enabled"].setChecked(reply.memory_enabled)
        self.switches["session_archive_enabled"].setChecked(reply.session_archive_enabled)
        self.memory_tree.clear()
        groups: dict[str, QTreeWidgetItem] = {}
        for memory in reply.memories:
            name = memory.space or PROFILE_WIDE
            if name not in groups:
                groups[name] = QTreeWidgetItem([name, "", "", ""])
                self.memory_tree.addTopLevelItem(groups[name])
            expires = "never" if memory.expires_at is None else local_time(memory.expires_at)
            row = QTreeWidgetItem([memory.text, memory.kind, memory.review_status, expires])
            row.setData(0, ID_ROLE, memory.id)
            groups[name].addChild(row)
            groups[name].setExpanded(True)

    def memory_rows(self) -> list[tuple[str, list[list[str]]]]:
        return [(group.text(0), [row_texts(r) for r in rows])
                for group, rows in groups(self.memory_tree)]

    def _memory(self) -> AssertionInfo | None:
        row = self.memory_tree.currentItem()
        chosen = None if row is None else row.data(0, ID_ROLE)
        return next((m for m in self.memories if m.id == chosen), None)

    def _reviewed(self, reply: MemoryReply) -> None:
        self.say(f"memory {reply.memory.id}: {reply.memory.review_status}")
        self.load_memories()

    def _review(self, kind: type[MemoryApprove] | type[MemoryReject]) -> None:
        memory = self._memory()
        if memory is not None:
            self.send(kind(memory_id=memory.id), self._reviewed)

    def edit_memory(self) -> None:
        memory = self._memory()
        if memory is not None:
            self._open_dialog(FormDialog("Edit the memory", [Field("text", "Memory:",
                                                                   memory.text)],
                                         lambda v: self.send(MemoryEdit(
                                             memory_id=memory.id, text=v["text"]),
                                             self._reviewed), self))

    def scope_memory(self) -> None:
        memory = self._memory()
        if memory is None:
            return

        def save(values: dict[str, str]) -> None:
            where = values["space"]
            self.send(MemoryScope(memory_id=memory.id,
                                  space=None if where == PROFILE_WIDE else where,
                                  profile=where == PROFILE_WIDE), self._reviewed)

        self._open_dialog(FormDialog("Recall it where?", [
            Field("space", "Recalled in:", memory.space or PROFILE_WIDE,
                  (*self.spaces, PROFILE_WIDE))], save, self))

    def expire_memory(self) -> None:
        memory = self._memory()
        if memory is None:
            return

        def save(values: dict[str, str]) -> None:
            try:
                when = expiry_time(values["days"], dt.datetime.now().astimezone())
            except ValueError:
                self.say(f"expire after: {values['days']!r} is not a number of days or never")
                return
            self.send(MemoryExpire(memory_id=memory.id, expires_at=when), self._reviewed)

        self._open_dialog(FormDialog("Stop recalling it after", [
            Field("days", "Days (or never):", "30")], save, self))

    def switch(self, key: str, on: bool) -> None:
        def saved(reply: SettingsReply) -> None:
            self.say(f"{key} {'on' if reply.settings.get(key) else 'off'}")
            self.load_memories()

        self.send(SettingsSet(key=key, value="true" if on else "false"), saved)

    # -- open items ----------------------------------------------------------------------------

    def load_open_items(self) -> None:
        where = self.open_space.currentText()
        self.send(OpenItems(space=None if where in ("", EVERY_SPACE) else where),
                  self._open_loaded)

    def _open_loaded(self, reply: ItemsReply) -> None:
        self.open_items = reply.items
        self.open_tree.clear()
        for item in reply.items:
            row = QTreeWidgetItem(open_item_row(item))
            row.setData(0, ID_ROLE, item.session_id)
            self.open_tree.addTopLevelItem(row)
        count = len(reply.items)
        self.open_count.setText(f"{count} open item{'s' if count != 1 else ''}")

    def _open_item_chosen(self, row: QTreeWidgetItem) -> None:
        session_id = row.data(0, ID_ROLE)
        if session_id is not None:
            self.tabs.setCurrentIndex(0)
            self.show_session(int(session_id))


def run(paths: Paths) -> int:
    """Show the window until it is closed."""
    app = application("braincue-window")
    window = MemoryWindow(paths)
    app.lastWindowClosed.connect(app.quit)
    window.show()
    try:
        return exec_until_interrupted(app)
    finally:
        window.close_link()

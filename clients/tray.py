"""`braincue tray`: BrainCue in the system tray.

The icon says what the daemon is doing — listening (green), in a call (red), paused (grey),
or an error such as no audio or no daemon (amber) — and its menu starts or stops a session,
pauses listening, lists recent sessions (choosing one asks again whether to keep it) and edits
the settings. When a session ends it asks "Keep this conversation?" (clients.desktop.keep).

The tray holds no logic of its own: it shows what the daemon reports and sends what the user
chooses. It survives the daemon: while the daemon is gone (restarted by systemd, say) the icon
turns amber with the reason, and everything resumes when it is back.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Literal

import msgspec
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QMenu,
    QSystemTrayIcon,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from clients.cli.status import off_machine
from clients.desktop.keep import KeepPrompter
from clients.desktop.link import DaemonLink, Down
from clients.desktop.notify import Notifications
from clients.desktop.qt import MainThread, application, dot_icon, exec_until_interrupted
from clients.window import MemoryWindow
from daemon.config import Paths
from daemon.errors import BrainCueError
from daemon.ipc.protocol import (
    TOPIC_SESSIONS,
    TOPIC_STATUS,
    CarriedForward,
    Event,
    ItemInfo,
    ListSessions,
    ListSpaces,
    Pause,
    SessionEnded,
    SessionInfo,
    SessionsReply,
    SessionStarted,
    SettingsGet,
    SettingsReply,
    SettingsSet,
    SettingValue,
    SpacesReply,
    Start,
    StartReply,
    Status,
    StatusEvent,
    StatusReply,
    Stop,
    StopReply,
)

log = logging.getLogger("braincue.desktop")

TrayState = Literal["listening", "in a call", "paused", "error"]
COLOURS: dict[TrayState, str] = {
    "listening": "#2e9d4f",
    "in a call": "#d63b2f",
    "paused": "#9a9a9a",
    "error": "#e3a21a",
}
RECENT_SESSIONS = 8
UNDECIDED = ("ended", "later")


@dataclass(frozen=True)
class TrayView:
    state: TrayState
    tooltip: str
    live_session: int | None = None
    paused: bool = False


def tray_view(status: StatusReply | None, down: str | None = None) -> TrayView:
    """What the icon shows for the daemon's last status (None: not reached yet or gone); its
    tooltip says so when conversation text goes to a language model off this machine."""
    view = _tray_view(status, down)
    note = off_machine(status.language_model if status is not None else None)
    return view if not note else dataclasses.replace(view, tooltip=f"{view.tooltip}\n{note}")


def _tray_view(status: StatusReply | None, down: str | None) -> TrayView:
    if status is None:
        return TrayView("error", f"BrainCue: {down or 'connecting to the daemon…'}")
    live = status.live
    if status.capture == "paused":
        return TrayView("paused", "BrainCue — paused: not listening", paused=True)
    if live is None or status.capture in ("off", "stopped"):
        return TrayView("paused", "BrainCue — not listening (capture is off)")
    silent = [f"{name}: {source.detail or 'no audio'}" for name, source in live.sources.items()
              if source.state == "no audio"]
    if silent:
        return TrayView("error", "BrainCue — no audio (" + "; ".join(silent) + ")",
                        live.session_id)
    if live.session_id is not None:
        return TrayView("in a call", f"BrainCue — in a call (session {live.session_id})",
                        live.session_id)
    return TrayView("listening", "BrainCue — listening")


def carried_body(event: CarriedForward) -> str:
    """``3 open from last time in Atlas:`` and a line per item: who, what, by when."""
    lines = [f"{event.message} in {event.space}:"]
    for item in event.items:
        due = f" (due {item.due})" if item.due else ""
        lines.append(f"• {item.owner or 'nobody named'}: {item.text}{due}")
    return "\n".join(lines)


def carried_label(item: ItemInfo) -> str:
    due = f" · due {item.due}" if item.due else ""
    return f"{item.owner or '-'}: {item.text}{due}"


def session_label(info: SessionInfo) -> str:
    when = f"{dt.datetime.fromtimestamp(info.started_at):%a %d %b %H:%M}"
    parts = [info.title or f"Session {info.id}", when, info.space or "no Space"]
    if info.status in UNDECIDED:
        parts.append("undecided")
    return " · ".join(parts)


def keep_prompt_for(info: SessionInfo) -> SessionEnded:
    """The keep prompt of a listed session, to ask again."""
    duration = (info.ended_at or info.started_at) - info.started_at
    return SessionEnded(session_id=info.id, duration_s=duration, gist=info.title,
                        space=info.space, receipt=info.receipt)


class Tray:
    """The tray icon, its menu and the keep prompts, for one profile's daemon."""

    def __init__(self, paths: Paths, *, notifications: bool = True,
                 bus: str = "SESSION") -> None:
        self.main = MainThread()
        self.link = DaemonLink(paths, self.main.post)
        # None where the desktop has no notification server: the keep prompt is a window then
        self.notifications = Notifications.open(self.main.post, bus) if notifications else None
        self.prompter = KeepPrompter(self.link, self.notifications, self.inform)
        self.icon = QSystemTrayIcon()
        self.menu = QMenu()
        self.settings_dialog: SettingsDialog | None = None
        self.window: MemoryWindow | None = None
        self._build_menu()
        self.icon.setContextMenu(self.menu)
        self.view = tray_view(None)
        self._show(self.view)
        self.icon.show()
        self.link.follow(on_status=self._on_status, on_event=self._on_event,
                         on_down=self._on_down, topics=[TOPIC_SESSIONS, TOPIC_STATUS])

    def close(self) -> None:
        if self.window is not None:
            self.window.close_link()
            self.window.close()
        self.link.stop()
        self.icon.hide()
        if self.notifications is not None:
            self.notifications.close()
        self.main.close()

    # -- what the daemon says ------------------------------------------------------------------

    def _on_status(self, status: StatusReply) -> None:
        self._show(tray_view(status))

    def _on_down(self, down: Down) -> None:
        self._show(tray_view(None, down.error.message))

    def _on_event(self, event: Event) -> None:
        if isinstance(event, SessionEnded):
            self.prompter.prompt(event)
        if isinstance(event, CarriedForward):
            self.show_carried(event)
        if isinstance(event, StatusEvent) and event.alert:
            self.inform(event.message)  # audio the live session is missing: said at once
        if isinstance(event, SessionStarted | SessionEnded | StatusEvent):
            self.refresh()

    def show_carried(self, event: CarriedForward) -> None:
        """What the Space's earlier sessions left open: a notification, and the menu's
        "N open from last time" list until the session ends."""
        self.carried_menu.clear()
        self.carried_menu.setTitle(event.message)
        for item in event.items:
            self.carried_menu.addAction(carried_label(item)).setEnabled(False)
        self.carried_menu.menuAction().setVisible(True)
        self.inform(carried_body(event))

    def refresh(self) -> None:
        """Ask for the status now rather than at the next poll."""
        self.link.submit(Status(), self._on_status, self._failed)

    def _show(self, view: TrayView) -> None:
        self.view = view
        icon = dot_icon(COLOURS[view.state])
        self.icon.setIcon(icon)
        self.icon.setToolTip(view.tooltip)
        self.header.setIcon(icon)
        self.header.setText(view.tooltip)
        self.start_menu.menuAction().setVisible(view.live_session is None)
        self.stop_action.setVisible(view.live_session is not None)
        if view.live_session is None:
            self.carried_menu.menuAction().setVisible(False)
        self.pause_action.setChecked(view.paused)

    # -- the menu ------------------------------------------------------------------------------

    def _build_menu(self) -> None:
        self.header = self.menu.addAction("BrainCue")
        self.header.setEnabled(False)
        self.menu.addSeparator()
        self.start_menu = self.menu.addMenu("Start a session in")
        self.start_menu.aboutToShow.connect(self._fill_start_menu)
        self.stop_action = self.menu.addAction("Stop the session")
        self.stop_action.triggered.connect(self.stop_session)
        self.pause_action = self.menu.addAction("Pause listening")
        self.pause_action.setCheckable(True)
        self.pause_action.triggered.connect(self.pause)
        self.carried_menu = self.menu.addMenu("Open from last time")
        self.carried_menu.menuAction().setVisible(False)
        self.recent_menu = self.menu.addMenu("Recent sessions")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self.menu.addSeparator()
        self.menu.addAction("Open BrainCue…").triggered.connect(self.open_window)
        self.menu.addAction("Settings…").triggered.connect(self.open_settings)
        self.menu.addAction("Quit").triggered.connect(self._quit)

    def _fill_start_menu(self) -> None:
        def listed(reply: SpacesReply) -> None:
            self.start_menu.clear()
            for space in reply.spaces:
                self._add(self.start_menu, space.name, partial(self.start, space.name))
            self.start_menu.addSeparator()
            self._add(self.start_menu, "No Space (nothing remembered)", partial(self.start, None))

        self._loading(self.start_menu)
        self.link.submit(ListSpaces(), listed, self._failed)

    def _fill_recent_menu(self) -> None:
        def listed(reply: SessionsReply) -> None:
            self.recent_menu.clear()
            for info in reply.sessions:
                action = self._add(self.recent_menu, session_label(info),
                                   partial(self.ask_again, info))
                action.setEnabled(info.status != "live")
            if not reply.sessions:
                self.recent_menu.addAction("No sessions yet").setEnabled(False)

        self._loading(self.recent_menu)
        self.link.submit(ListSessions(limit=RECENT_SESSIONS), listed, self._failed)

    @staticmethod
    def _add(menu: QMenu, label: str, triggered: Callable[[], None]) -> QAction:
        action = menu.addAction(label)
        action.triggered.connect(triggered)
        return action

    @staticmethod
    def _loading(menu: QMenu) -> None:
        if menu.isEmpty():
            menu.addAction("Loading…").setEnabled(False)

    # -- what the user does --------------------------------------------------------------------

    def start(self, space: str | None) -> None:
        def started(reply: StartReply) -> None:
            self.inform(reply.message)
            self.refresh()

        self.link.submit(Start(space=space), started, self._failed)

    def ask_again(self, info: SessionInfo) -> None:
        self.prompter.open_dialog(keep_prompt_for(info), full=True)

    def stop_session(self) -> None:
        def stopped(reply: StopReply) -> None:
            self.refresh()  # the keep prompt follows as a SessionEnded event

        self.link.submit(Stop(), stopped, self._failed)

    def pause(self, paused: bool) -> None:
        self.link.submit(Pause(paused=paused), lambda _: self.refresh(), self._failed)

    def open_window(self) -> None:
        """The memory window (one per tray; raised when it is open already)."""
        if self.window is None:
            self.window = MemoryWindow(self.link.paths)
        self.window.show()
        self.window.raise_()
        self.window.activateWindow()

    def open_settings(self) -> None:
        def loaded(reply: SettingsReply) -> None:
            self.settings_dialog = SettingsDialog(reply.settings, self._save_setting)
            self.settings_dialog.show()

        self.link.submit(SettingsGet(), loaded, self._failed)

    def _save_setting(self, key: str, value: str) -> None:
        self.link.submit(SettingsSet(key=key, value=value), lambda _: None, self._failed)

    def inform(self, text: str) -> None:
        """Tell the user something that needs no answer."""
        if self.notifications is not None:
            try:
                self.notifications.notify("BrainCue", text, [], lambda _: None,
                                          timeout_ms=8000, urgency=0)
                return
            except (OSError, TimeoutError):
                pass
        self.icon.showMessage("BrainCue", text)

    def _failed(self, error: BrainCueError) -> None:
        self.inform(str(error))

    def _quit(self) -> None:
        QApplication.quit()


class SettingsDialog(QDialog):
    """Every setting, editable; a changed value is sent as SettingsSet."""

    def __init__(self, settings: dict[str, SettingValue],
                 save: Callable[[str, str], None]) -> None:
        super().__init__()
        self.setWindowTitle("BrainCue settings")
        self.resize(520, 560)
        self._save = save
        self._original = {key: _as_text(value) for key, value in settings.items()}
        self.table = QTableWidget(len(settings), 2)
        self.table.setHorizontalHeaderLabels(["Setting", "Value"])
        for row, (key, value) in enumerate(sorted(self._original.items())):
            name = QTableWidgetItem(key)
            name.setFlags(name.flags() & ~Qt.ItemFlag.ItemIsEditable)
            self.table.setItem(row, 0, name)
            self.table.setItem(row, 1, QTableWidgetItem(value))
        self.table.resizeColumnToContents(0)
        self.table.horizontalHeader().setStretchLastSection(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._save_changes)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(buttons)

    def _save_changes(self) -> None:
        for row in range(self.table.rowCount()):
            key_item, value_item = self.table.item(row, 0), self.table.item(row, 1)
            if key_item is None or value_item is None:
                continue
            if value_item.text() != self._original[key_item.text()]:
                self._save(key_item.text(), value_item.text())
        self.accept()


def _as_text(value: SettingValue) -> str:
    """A setting as SettingsSet parses it (TOML: true/false, numbers, bare strings)."""
    return msgspec.json.encode(value).decode() if isinstance(value, bool) else str(value)


def run(paths: Paths) -> int:
    """Run the tray until Quit or Ctrl+C."""
    app = application("braincue-tray")
    if not QSystemTrayIcon.isSystemTrayAvailable():
        log.warning("this desktop shows no tray icons; the keep prompts still appear")
    tray = Tray(paths)
    try:
        return exec_until_interrupted(app)
    finally:
        tray.close()

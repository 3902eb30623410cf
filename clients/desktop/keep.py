""""Keep this conversation?" on the desktop.

When a session ends the daemon publishes SessionEnded; the tray asks with a desktop
notification whose buttons are *Keep it*, *Discard* and *Decide later*. Where to keep it is the
other half of the question, and notification servers cannot show a list to choose from, so
*Keep it* opens a small chooser: the profile's Spaces, the one the session ran in selected,
and "No Space — remember nothing"; Enter keeps it there. Clicking the notification itself
opens the whole question in one window, which is also what appears when the desktop has no
notification server. Every answer is one ``Remember`` request; the daemon does the rest.

A voice of the call that may be a named one is offered for one click (clients.desktop.voices):
the notification says "Them 2 — Sarah?" and has a button "Them 2 is Sarah?" after the answers
(a server that shows few buttons keeps the answers; the window has them all), and the window
has a button "Them 2 — Sarah?". A click confirms the name; the notification is gone then, so
the question is asked again in the window, with the name. The question never waits for the
names: it is asked at once, and updated in place when the daemon has offered some.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import msgspec
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from clients.desktop import voices
from clients.desktop.link import DaemonLink
from clients.desktop.notify import Notifications
from clients.desktop.voices import Offer, load_offers, with_name
from daemon.errors import BrainCueError
from daemon.ipc.client import KEEP_TIMEOUT_S
from daemon.ipc.protocol import (
    ListSpaces,
    Remember,
    RememberReply,
    SessionEnded,
    SpacesReply,
    VoiceReply,
)

Answer = Literal["keep", "discard", "later"]
NO_SPACE_LABEL = "No Space — remember nothing"
QUESTION = "Keep this conversation?"
ACTIONS: list[tuple[str, str]] = [
    ("default", "Choose…"),  # clicking the notification's body (most servers show no button)
    ("keep", "Keep it"),
    ("discard", "Discard"),
    ("later", "Decide later"),
]
CONFIRM = "voice:"  # the key of a button that confirms an offered name: "voice:Them 2"


@dataclass(frozen=True)
class SpaceOption:
    label: str
    space: str | None  # None: no Space


def space_options(spaces: Sequence[str], ran_in: str | None) -> tuple[list[SpaceOption], int]:
    """The choices for where to keep a session, and the index of the default: the Space it
    ran in (listed even if the Space list does not have it), else "No Space"."""
    names = list(spaces)
    if ran_in is not None and ran_in not in names:
        names.insert(0, ran_in)
    options = [SpaceOption(name, name) for name in names]
    options.append(SpaceOption(NO_SPACE_LABEL, None))
    default = names.index(ran_in) if ran_in is not None else len(options) - 1
    return options, default


def remember_request(session_id: int, answer: Answer, where: SpaceOption | None) -> Remember:
    """The Remember for an answer: *Keep it* files the session into the chosen Space (or out
    of every Space); the other answers leave it where it ran."""
    if answer != "keep" or where is None:
        return Remember(session_id=session_id, answer=answer)
    if where.space is None:
        return Remember(session_id=session_id, answer="keep", no_space=True)
    return Remember(session_id=session_id, answer="keep", space=where.space)


def prompt_body(ended: SessionEnded, offered: Sequence[Offer] = ()) -> str:
    minutes = max(1, round(ended.duration_s / 60))
    where = (f"in {ended.space}" if ended.space is not None
             else "in no Space: nothing is remembered unless you pick one")
    gist = f"“{ended.gist}”\n" if ended.gist else ""
    who = f"{', '.join(ended.speakers)}\n" if ended.speakers else ""
    heard = f"\n{ended.receipt.text}" if ended.receipt is not None else ""
    maybe = "".join(f"\n{offer.text}" for offer in offered)
    return f"{gist}{who}{minutes} min, {where}{heard}{maybe}"


def prompt_actions(offered: Sequence[Offer]) -> list[tuple[str, str]]:
    """The notification's buttons: the answers, then one per offered name."""
    return ACTIONS + [(f"{CONFIRM}{o.label}", f"{o.label} is {o.name}?") for o in offered]


def once_named(ended: SessionEnded, offer: Offer) -> SessionEnded:
    """The ended session as the prompt shows it once ``offer`` is confirmed."""
    return msgspec.structs.replace(ended, speakers=with_name(ended.speakers, offer))


def remember_summary(reply: RememberReply) -> str:
    """What the answer did: one line, then the daemon's notes (why a count is 0...)."""
    if reply.answer == "discard":
        return "Discarded: the conversation and its transcript are deleted."
    if reply.answer == "later":
        return "Kept for later: nothing is remembered until you decide."
    where = f"in {reply.space}" if reply.space else "in no Space"
    done = []
    if reply.archived:
        done.append("summary written")
    if reply.assertions:
        done.append(f"{reply.assertions} decisions, facts or tasks")
    if reply.candidates:
        done.append(f"{reply.candidates} memories to review")
    line = f"Kept {where}" + (f": {', '.join(done)}." if done else ".")
    return "\n".join([line, *reply.notes])


class KeepDialog(QDialog):
    """Where to keep a session (``full``: the whole question, with Discard and Decide later)."""

    def __init__(self, ended: SessionEnded, spaces: Sequence[str],
                 on_answer: Callable[[Remember], None], *, full: bool,
                 offered: Sequence[Offer] = (),
                 on_confirm: Callable[[Offer], None] = lambda offer: None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ended = ended
        self._on_answer = on_answer
        self.setWindowTitle(QUESTION if full else "Keep it in which Space?")
        self.options, default = space_options(spaces, ended.space)
        self.space = QComboBox()
        self.space.addItems([option.label for option in self.options])
        self.space.setCurrentIndex(default)
        self.summary = QLabel(prompt_body(ended))
        self.summary.setWordWrap(True)
        self.form = form = QFormLayout()
        form.addRow("Remember it in:", self.space)
        # one click confirms a name the daemon was not sure enough to give
        self.offer_buttons: dict[str, QPushButton] = {}
        self.offer_row = QWidget()
        if offered:
            row = QHBoxLayout(self.offer_row)
            row.setContentsMargins(0, 0, 0, 0)
            for offer in offered:
                button = QPushButton(offer.text)
                button.setAutoDefault(False)
                button.setToolTip(f"Yes, {offer.label} is {offer.name}: the turns show the "
                                  f"name, and {offer.name}'s voice is learnt from this call")
                button.clicked.connect(lambda _=False, offer=offer: on_confirm(offer))
                self.offer_buttons[offer.label] = button
                row.addWidget(button)
            row.addStretch(1)
            form.addRow("Who spoke:", self.offer_row)
        self.buttons = QDialogButtonBox()
        self.keep_button = self._button("Keep it" if full else "Keep", "keep", default=True)
        if full:
            self._button("Discard", "discard")
            self._button("Decide later", "later")
        else:
            cancel = self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
            cancel.clicked.connect(self.reject)
        layout = QVBoxLayout(self)
        if full:
            title = QLabel(f"<b>{QUESTION}</b>")
            layout.addWidget(title)
        layout.addWidget(self.summary)
        layout.addLayout(form)
        layout.addWidget(self.buttons)

    def _button(self, label: str, answer: Answer, default: bool = False) -> QPushButton:
        button = QPushButton(label)
        button.setDefault(default)
        button.setAutoDefault(default)
        self.buttons.addButton(button, QDialogButtonBox.ButtonRole.ActionRole)
        button.clicked.connect(lambda: self._answer(answer))
        return button

    def confirmed(self, offer: Offer) -> None:
        """The daemon named the voice: the speakers show the name, its button goes."""
        self.ended = once_named(self.ended, offer)
        self.summary.setText(prompt_body(self.ended))
        button = self.offer_buttons.pop(offer.label, None)
        if button is not None:
            button.hide()
        if not self.offer_buttons:
            self.form.setRowVisible(self.offer_row, False)

    def chosen_space(self) -> SpaceOption:
        return self.options[self.space.currentIndex()]

    def _answer(self, answer: Answer) -> None:
        self._on_answer(remember_request(self.ended.session_id, answer, self.chosen_space()))
        self.accept()


class KeepPrompter:
    """Asks "Keep this conversation?" for each ended session and sends the answers."""

    def __init__(self, link: DaemonLink, notifications: Notifications | None,
                 inform: Callable[[str], None]) -> None:
        self._link = link
        self._notifications = notifications
        self._inform = inform
        self.dialogs: dict[int, KeepDialog] = {}
        self._notified: dict[int, int] = {}  # session id -> notification id

    def prompt(self, ended: SessionEnded) -> None:
        if self._notifications is None:
            self.open_dialog(ended, full=True)
            return
        if self._notify(ended, []):  # the names offered follow (the link may be busy)
            load_offers(self._link, ended.session_id,
                        lambda offered: self._offer(ended, offered))

    def _offer(self, ended: SessionEnded, offered: list[Offer]) -> None:
        shown = self._notified.get(ended.session_id)
        if offered and shown is not None:  # still unanswered: updated in its place
            self._notify(ended, offered, replaces=shown)

    def _notify(self, ended: SessionEnded, offered: list[Offer], replaces: int = 0) -> bool:
        if self._notifications is None:
            return False
        try:
            notification = self._notifications.notify(
                QUESTION, prompt_body(ended, offered), prompt_actions(offered),
                on_action=lambda key: self._on_action(ended, key, offered),
                on_closed=lambda: self._dismissed(ended.session_id),
                replaces=replaces,
            )
        except (OSError, TimeoutError) as e:  # the notification server went away
            if not replaces:  # else the question stays as it was shown
                self._inform(f"notifications failed ({e}); asking in a window")
                self.open_dialog(ended, full=True)
            return False
        self._notified[ended.session_id] = notification
        return True

    def _dismissed(self, session_id: int) -> None:
        # Closed unanswered: the session stays undecided (the tray's recent sessions ask again).
        self._notified.pop(session_id, None)

    def _on_action(self, ended: SessionEnded, key: str, offered: Sequence[Offer] = ()) -> None:
        self._notified.pop(ended.session_id, None)
        offer = next((o for o in offered if key == f"{CONFIRM}{o.label}"), None)
        if offer is not None:  # the question is asked again in the window, with the name
            self.confirm(offer, lambda named: self.open_dialog(once_named(ended, named),
                                                               full=True))
        elif key == "keep":
            self.open_dialog(ended, full=False)
        elif key in ("discard", "later"):
            self.send(Remember(session_id=ended.session_id,
                               answer="discard" if key == "discard" else "later"))
        else:
            self.open_dialog(ended, full=True)

    def open_dialog(self, ended: SessionEnded, *, full: bool) -> None:
        """Ask in a window, once the Space list is here (without it: the Space it ran in)."""

        def show(spaces: Sequence[str], offered: Sequence[Offer]) -> None:
            previous = self.dialogs.pop(ended.session_id, None)
            if previous is not None:
                previous.close()
            dialog = KeepDialog(ended, spaces, self.send, full=full, offered=offered,
                                on_confirm=lambda offer: self.confirm(offer, dialog.confirmed))
            dialog.finished.connect(lambda _: self._forget(ended.session_id, dialog))
            self.dialogs[ended.session_id] = dialog
            dialog.show()
            dialog.raise_()
            dialog.activateWindow()

        def with_offers(spaces: Sequence[str]) -> None:
            load_offers(self._link, ended.session_id, lambda offered: show(spaces, offered))

        def listed(reply: SpacesReply) -> None:
            with_offers([space.name for space in reply.spaces])

        def unlisted(error: BrainCueError) -> None:
            with_offers([])

        self._link.submit(ListSpaces(), listed, unlisted)

    def confirm(self, offer: Offer, then: Callable[[Offer], None]) -> None:
        """Send the confirming request; ``then`` gets the offer with the name as the daemon
        keeps it."""

        def named(reply: VoiceReply) -> None:
            self._inform(reply.message)
            then(Offer(offer.session_id, offer.label, reply.voice.name))

        voices.confirm(self._link, offer, named,
                       lambda error: self._inform(f"Could not name {offer.label}: {error}"))

    def _forget(self, session_id: int, dialog: KeepDialog) -> None:
        if self.dialogs.get(session_id) is dialog:
            del self.dialogs[session_id]

    def send(self, request: Remember) -> None:
        notification = self._notified.pop(request.session_id, None)
        if notification is not None and self._notifications is not None:
            with contextlib.suppress(OSError, TimeoutError):  # answered in a window instead
                self._notifications.withdraw(notification)
        keep = request.answer == "keep"  # a keep runs the language model: minutes, at times
        self._link.submit(request, lambda reply: self._inform(remember_summary(reply)),
                          lambda error: self._inform(f"Could not remember: {error}"),
                          timeout=KEEP_TIMEOUT_S if keep else None, apart=keep)

"""The names a desktop client offers for one click: "Them 2 — Sarah?".

The daemon names a voice of a later call only when it is sure; when it only may be a named
voice, `voices list` carries that name as a suggestion. The window and the keep prompt offer
it, and a click confirms it with the request `braincue voices name LABEL NAME --session ID`
sends: the turns of that voice then show the name, and its print learns from this call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from clients.cli.voices import RELABEL_TIMEOUT_S
from clients.desktop.link import DaemonLink
from daemon.errors import BrainCueError
from daemon.ipc.protocol import VoiceName, VoiceReply, VoicesList, VoicesReply

log = logging.getLogger("braincue.desktop")


@dataclass(frozen=True)
class Offer:
    """A voice of a session that may be a named voice."""

    session_id: int
    label: str  # "Them 2"
    name: str  # "Sarah"

    @property
    def text(self) -> str:
        return f"{self.label} — {self.name}?"

    def confirm(self) -> VoiceName:
        return VoiceName(voice=self.label, name=self.name, session_id=self.session_id)


def offers(reply: VoicesReply, session_id: int) -> list[Offer]:
    """The names offered for the unnamed voices of ``session_id``."""
    return [Offer(session_id, h.label, h.suggestion) for h in reply.heard
            if h.session_id == session_id and h.name is None and h.suggestion]


def with_name(speakers: Sequence[str], offer: Offer) -> list[str]:
    """The speakers of a session once ``offer`` is confirmed."""
    return list(dict.fromkeys(offer.name if s == offer.label else s for s in speakers))


def load_offers(link: DaemonLink, session_id: int,
                then: Callable[[list[Offer]], None]) -> None:
    """Ask the daemon for the names offered in ``session_id``; ``then`` gets them (none where
    the daemon tells no voices apart or cannot say)."""

    def failed(error: BrainCueError) -> None:
        log.info("no names offered for session %s: %s", session_id, error)
        then([])

    link.submit(VoicesList(), lambda reply: then(offers(reply, session_id)), failed)


def confirm(link: DaemonLink, offer: Offer, on_reply: Callable[[VoiceReply], None],
            on_error: Callable[[BrainCueError], None]) -> None:
    """Send the request that confirms ``offer``: it renames the voice's turns and teaches its
    print, which may take longer than a lookup."""
    link.submit(offer.confirm(), on_reply, on_error, timeout=RELABEL_TIMEOUT_S)

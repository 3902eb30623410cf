"""Desktop notifications with action buttons: org.freedesktop.Notifications over D-Bus.

jeepney speaks D-Bus in pure Python, with no GLib loop to fit beside Qt's: a router thread of
its own receives the server's ActionInvoked / NotificationClosed signals, which reach the
caller's callbacks through ``post`` (the UI's "run this on your thread").
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jeepney import DBusAddress, MatchRule, message_bus, new_method_call
from jeepney.io.threading import DBusRouter, Proxy, open_dbus_connection
from jeepney.low_level import HeaderFields, MessageType

log = logging.getLogger("braincue.desktop")

BUS_NAME = "org.freedesktop.Notifications"
OBJECT_PATH = "/org/freedesktop/Notifications"
INTERFACE = "org.freedesktop.Notifications"
NOTIFICATIONS = DBusAddress(OBJECT_PATH, bus_name=BUS_NAME, interface=INTERFACE)

CALL_TIMEOUT_S = 5.0
Post = Callable[[Callable[[], None]], None]


@dataclass
class _Pending:
    on_action: Callable[[str], None]
    on_closed: Callable[[], None] | None


class Notifications:
    """A connection to the desktop's notification server. :meth:`open` returns None where
    there is none (no session bus, no server, or one that cannot show action buttons)."""

    def __init__(self, router: DBusRouter, post: Post) -> None:
        self._router = router
        self._post = post
        self._pending: dict[int, _Pending] = {}
        self._lock = threading.Lock()
        self._signals: queue.Queue[Any] = queue.Queue()
        self._stopping = threading.Event()
        self._filter = router.filter(MatchRule(type="signal", interface=INTERFACE,
                                               path=OBJECT_PATH), queue=self._signals)
        self._dispatcher = threading.Thread(target=self._dispatch, name="braincue-notify",
                                            daemon=True)
        self._dispatcher.start()

    @classmethod
    def open(cls, post: Post, bus: str = "SESSION") -> Notifications | None:
        try:
            connection = open_dbus_connection(bus)
        except (OSError, KeyError, ValueError) as e:  # no session bus address, or unreachable
            log.info("no D-Bus session bus: %s", e)
            return None
        router = DBusRouter(connection)
        try:
            bus_proxy = Proxy(message_bus, router, timeout=CALL_TIMEOUT_S)
            (has_owner,) = bus_proxy.NameHasOwner(BUS_NAME)
            (activatable,) = bus_proxy.ListActivatableNames()
            if not has_owner and BUS_NAME not in activatable:
                log.info("no notification server on the session bus")
                raise LookupError
            rule = MatchRule(type="signal", interface=INTERFACE, path=OBJECT_PATH)
            bus_proxy.AddMatch(rule)
            notifications = cls(router, post)
            if "actions" not in notifications.capabilities():
                log.info("the notification server shows no action buttons")
                notifications.close()
                return None
            return notifications
        except Exception as e:
            if not isinstance(e, LookupError):
                log.warning("notifications unavailable: %s", e)
            router.close()
            connection.close()
            return None

    def capabilities(self) -> list[str]:
        (caps,) = self._call("GetCapabilities", "", ())
        return list(caps)

    def notify(
        self,
        summary: str,
        body: str,
        actions: Sequence[tuple[str, str]],
        on_action: Callable[[str], None],
        on_closed: Callable[[], None] | None = None,
        *,
        app_name: str = "BrainCue",
        icon: str = "",
        timeout_ms: int = 0,
        urgency: int = 1,
        replaces: int = 0,
    ) -> int:
        """Show a notification; ``actions`` are (key, label) pairs and ``on_action`` gets the
        key chosen. ``timeout_ms`` 0: it stays until answered. ``replaces``: the id of one
        shown before, updated in its place. Returns the notification id."""
        flat = [part for action in actions for part in action]
        hints = {"urgency": ("y", urgency)}
        with self._lock:  # an action may arrive before the reply: register under the lock
            (notification_id,) = self._call(
                "Notify", "susssasa{sv}i",
                (app_name, replaces, icon, summary, body, flat, hints, timeout_ms),
            )
            self._pending[notification_id] = _Pending(on_action, on_closed)
        if replaces and notification_id != replaces:  # a server that shows it anew instead
            self.withdraw(replaces)
        return int(notification_id)

    def withdraw(self, notification_id: int) -> None:
        """Take a notification off the screen (e.g. answered elsewhere)."""
        with self._lock:
            self._pending.pop(notification_id, None)
        self._call("CloseNotification", "u", (notification_id,))

    def close(self) -> None:
        self._stopping.set()
        self._signals.put(None)
        self._dispatcher.join(timeout=5)
        self._filter.close()
        self._router.close()
        self._router.conn.close()

    def _call(self, method: str, signature: str, body: tuple[Any, ...]) -> tuple[Any, ...]:
        message = new_method_call(NOTIFICATIONS, method, signature or None, body)
        reply = self._router.send_and_get_reply(message, timeout=CALL_TIMEOUT_S)
        if reply.header.message_type == MessageType.error:
            raise OSError(f"{method} failed: {reply.body}")
        return tuple(reply.body)

    def _dispatch(self) -> None:
        while True:
            message = self._signals.get()
            if message is None or self._stopping.is_set():
                return
            member = message.header.fields.get(HeaderFields.member)
            with self._lock:
                if member == "ActionInvoked":
                    notification_id, key = message.body
                    pending = self._pending.pop(notification_id, None)
                    if pending is not None:
                        self._post(_bind(pending.on_action, key))
                elif member == "NotificationClosed":
                    notification_id = message.body[0]
                    pending = self._pending.pop(notification_id, None)
                    if pending is not None and pending.on_closed is not None:
                        self._post(pending.on_closed)


def _bind(callback: Callable[[str], None], key: str) -> Callable[[], None]:
    return lambda: callback(key)

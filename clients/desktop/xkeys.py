"""Global hotkeys on X11: a passive grab of exactly the configured key combinations.

``XGrabKey`` on the root window makes the X server send us those combinations and nothing else,
whatever window has the focus. (The usual alternative, a keyboard listener such as pynput's,
receives every key the user types in every application — not what a privacy-minded memory
should do for the sake of one shortcut.) Wayland has no global grab for applications: there,
bind the desktop's own shortcut to ``braincue hotkey --open``.
"""

from __future__ import annotations

import logging
import select
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from Xlib import XK, X, display, error

from daemon.errors import ConfigError

log = logging.getLogger("braincue.desktop")

Post = Callable[[Callable[[], None]], None]

# name in a setting -> canonical name
_MODIFIER_NAMES = {
    "ctrl": "ctrl", "control": "ctrl",
    "alt": "alt", "mod1": "alt",
    "shift": "shift",
    "super": "super", "win": "super", "meta": "super", "mod4": "super",
}
_KEY_ALIASES = {"space": "space", "enter": "Return", "return": "Return", "esc": "Escape",
                "escape": "Escape", "tab": "Tab"}
HOTKEY_HELP = "write it like Ctrl+Alt+Space (modifiers Ctrl, Alt, Shift, Super; then one key)"


@dataclass(frozen=True)
class Hotkey:
    """A key combination: canonical modifier names and an X keysym name."""

    modifiers: frozenset[str]
    key: str

    def __str__(self) -> str:
        order = ["ctrl", "alt", "shift", "super"]
        names = [m.capitalize() for m in order if m in self.modifiers]
        return "+".join([*names, self.key.capitalize() if len(self.key) > 1 else self.key.upper()])


def parse_hotkey(text: str) -> Hotkey:
    """``"Ctrl+Alt+Space"`` -> Hotkey; ConfigError naming the problem otherwise."""
    parts = [p.strip() for p in text.split("+")]
    if len(parts) < 2 or not all(parts):
        raise ConfigError(f"invalid hotkey {text!r}: a global hotkey needs a modifier and a key",
                          fix=HOTKEY_HELP)
    *modifier_parts, key_part = parts
    modifiers = set()
    for part in modifier_parts:
        name = _MODIFIER_NAMES.get(part.lower())
        if name is None:
            raise ConfigError(f"invalid hotkey {text!r}: {part!r} is not a modifier",
                              fix=HOTKEY_HELP)
        modifiers.add(name)
    key = _KEY_ALIASES.get(key_part.lower(), key_part)
    if len(key) == 1:
        key = key.lower()  # the keysym of the unshifted key
    if XK.string_to_keysym(key) == 0:
        raise ConfigError(f"invalid hotkey {text!r}: unknown key {key_part!r}", fix=HOTKEY_HELP)
    return Hotkey(frozenset(modifiers), key)


class X11Hotkeys:
    """Grabs hotkeys on an X display and posts their callbacks when they are pressed."""

    def __init__(self, bindings: Mapping[Hotkey, Callable[[], None]], post: Post,
                 display_name: str | None = None) -> None:
        self._post = post
        self._stopping = threading.Event()
        try:
            self._display = display.Display(display_name)
        except (error.DisplayError, error.DisplayConnectionError) as e:
            raise ConfigError(f"cannot open the X display: {e}",
                              fix="run it from an X11 session; on Wayland bind a desktop "
                                  "shortcut to `braincue hotkey --open`") from None
        masks = {"ctrl": X.ControlMask, "alt": X.Mod1Mask, "shift": X.ShiftMask,
                 "super": X.Mod4Mask}
        # Caps Lock and Num Lock change the modifier state: grab every combination of them.
        self._ignored = X.LockMask | X.Mod2Mask
        ignored_variants = [0, X.LockMask, X.Mod2Mask, X.LockMask | X.Mod2Mask]
        root = self._display.screen().root
        self._callbacks: dict[tuple[int, int], Callable[[], None]] = {}
        for hotkey, callback in bindings.items():
            keycode = self._display.keysym_to_keycode(XK.string_to_keysym(hotkey.key))
            if keycode == 0:
                raise ConfigError(f"the key of the hotkey {hotkey} is not on this keyboard",
                                  fix=HOTKEY_HELP)
            mask = 0
            for modifier in hotkey.modifiers:
                mask |= masks[modifier]
            catch = error.CatchError(error.BadAccess)
            for extra in ignored_variants:
                root.grab_key(keycode, mask | extra, True, X.GrabModeAsync, X.GrabModeAsync,
                              onerror=catch)
            self._display.sync()
            if catch.get_error() is not None:
                self._display.close()
                raise ConfigError(f"the hotkey {hotkey} is taken by another program",
                                  fix="choose another one: braincue settings set hotkey_ask "
                                      "'Ctrl+Alt+K' (or hotkey_answer_them)")
            self._callbacks[(keycode, mask)] = callback
        self._thread = threading.Thread(target=self._listen, name="braincue-hotkeys",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)
        self._display.close()

    def _listen(self) -> None:
        relevant = ~self._ignored & 0xFF
        while not self._stopping.is_set():
            readable, _, _ = select.select([self._display.fileno()], [], [], 0.25)
            if not readable:
                continue
            for _ in range(self._display.pending_events()):
                event = self._display.next_event()
                if event.type != X.KeyPress:
                    continue
                callback = self._callbacks.get((event.detail, event.state & relevant))
                if callback is not None:
                    self._post(callback)


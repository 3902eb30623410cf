"""Parts the desktop clients share: the daemon link, notifications, Qt helpers, hotkeys."""

"""The API key of a language-model server (``llm_engine = "openai"``), for servers that ask for
one: ``BRAINCUE_LLM_API_KEY`` when set, else the profile's entry in the OS key store (never a
file, never the settings)."""

from __future__ import annotations

import logging
import os

from daemon.errors import ConfigError
from daemon.store.keys import KEYRING_SERVICE, _keyring

API_KEY_ENV = "BRAINCUE_LLM_API_KEY"
log = logging.getLogger(__name__)


def _account(profile: str) -> str:
    return f"language model API key ({profile})"


def api_key(profile: str) -> str | None:
    """The key to send, or None (most local servers need none)."""
    if key := os.environ.get(API_KEY_ENV):
        return key
    backend = _keyring()
    if backend is None:
        return None
    try:
        stored = backend.get_password(KEYRING_SERVICE, _account(profile))
    except Exception as e:  # locked, or its D-Bus service is gone
        log.warning("could not read the language model's API key from the OS key store: %s", e)
        return None
    return str(stored) if stored else None


def set_api_key(profile: str, key: str | None) -> None:
    """Keep ``key`` in the OS key store (None: forget it); ConfigError without a key store."""
    backend = _keyring()
    if backend is None:
        raise ConfigError("no OS key store to keep the API key in",
                          fix=f"set {API_KEY_ENV} in the daemon's environment instead")
    try:
        if key is None:
            if backend.get_password(KEYRING_SERVICE, _account(profile)) is not None:
                backend.delete_password(KEYRING_SERVICE, _account(profile))
        else:
            backend.set_password(KEYRING_SERVICE, _account(profile), key)
    except Exception as e:
        raise ConfigError(f"could not write to the OS key store: {e}",
                          fix=f"unlock it, or set {API_KEY_ENV} in the daemon's environment") \
            from e

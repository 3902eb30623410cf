"""What every `braincue` command gets: the profile's config (loaded when first asked for) and
one request at a time to its daemon."""

from __future__ import annotations

from typing import TypeVar

from daemon.config import Config
from daemon.ipc.client import Client
from daemon.ipc.protocol import Reply, Request

R = TypeVar("R", bound=Reply)


class Context:
    """The `click` context object of the shell: the profile and its config."""

    def __init__(self, profile: str) -> None:
        self.profile = profile
        self._config: Config | None = None

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = Config.load(self.profile)
        return self._config

    def request(self, request: Request[R], *, timeout: float | None = None) -> R:
        """Send ``request`` to the profile's daemon and return its reply (see
        :meth:`daemon.ipc.client.Client.request`)."""
        with Client(self.profile) as client:
            return client.request(request, timeout=timeout)

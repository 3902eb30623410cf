"""What every `braincue` command gets: the profile's config (loaded when first asked for)."""

from __future__ import annotations

from daemon.config import Config


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

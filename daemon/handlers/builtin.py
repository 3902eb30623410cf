"""Handlers for the requests every daemon serves, store or not: ping, status, settings."""

from __future__ import annotations

import dataclasses
import os
import time
from importlib.metadata import PackageNotFoundError, version

import msgspec
import trio

from daemon.config import Settings, save_settings, set_setting
from daemon.errors import ConfigError
from daemon.handlers import wire
from daemon.handlers.context import Context
from daemon.ipc import protocol
from daemon.ipc.protocol import (
    LanguageModelInfo,
    ModelProcessInfo,
    Ping,
    Pong,
    SettingsGet,
    SettingsReply,
    SettingsSet,
    SettingValue,
    Status,
    StatusReply,
)
from daemon.resident import resident


def package_version() -> str:
    try:
        return version("braincue")
    except PackageNotFoundError:
        return "unknown"


def register(state: Context) -> None:
    """Ping, Status, SettingsGet, SettingsSet: registered before the store is open."""
    handlers = state.handlers
    settings_lock = trio.Lock()

    async def ping(request: Ping) -> Pong:
        return Pong()

    async def status(request: Status) -> StatusReply:
        return StatusReply(
            profile=state.paths.profile,
            version=package_version(),
            protocol=protocol.PROTOCOL_VERSION,
            pid=os.getpid(),
            uptime_s=time.time() - state.started_at,
            models_loaded=state.models_loaded(),
            capture=state.capture_state(),
            counts=await state.counts(),
            ipc=state.ipc_stats(),
            live=None if (live := state.live_status()) is None else wire.live_status(live),
            model_processes=[
                ModelProcessInfo(role=p.role, priority=p.priority, model_id=p.model_id,
                                 pid=p.pid, deaths=p.deaths, last_death=p.last_death,
                                 rss_bytes=None if p.memory is None else p.memory.rss,
                                 loaded_at=p.loaded_at, unloaded_at=p.unloaded_at)
                for p in state.model_processes()],
            rss_bytes=None if (own := resident(os.getpid())) is None else own.rss,
            language_model=msgspec.convert(
                dataclasses.asdict(await state.engines.language_model()), LanguageModelInfo),
        )

    async def settings_get(request: SettingsGet) -> SettingsReply:
        values = settings_dict(state.settings)
        if not request.key:
            return SettingsReply(settings=values)
        if request.key not in values:
            raise ConfigError(f"unknown setting {request.key!r}",
                              fix=f"one of: {', '.join(sorted(values))}")
        return SettingsReply(settings={request.key: values[request.key]})

    async def settings_set(request: SettingsSet) -> SettingsReply:
        async with settings_lock:  # each change starts from the one before
            updated = set_setting(state.settings, request.key, request.value)
            await trio.to_thread.run_sync(save_settings, state.paths, updated)
            state.settings = updated
            await state.settings_changed(updated)
        return SettingsReply(settings={request.key: settings_dict(updated)[request.key]})

    handlers.add(Ping, ping)
    handlers.add(Status, status)
    handlers.add(SettingsGet, settings_get)
    handlers.add(SettingsSet, settings_set)


def settings_dict(settings: Settings) -> dict[str, SettingValue]:
    values: dict[str, SettingValue] = msgspec.to_builtins(settings)
    return values

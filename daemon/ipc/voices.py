"""Handlers for named voices: `braincue voices list | name | merge | forget`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from daemon.ipc.protocol import (
    HeardVoiceInfo,
    VoiceForget,
    VoiceInfo,
    VoiceMerge,
    VoiceName,
    VoiceReply,
    VoicesList,
    VoicesReply,
)
from daemon.ipc.server import Handlers
from daemon.store.voices import StoredVoice, list_voices
from daemon.voices.service import Voices

if TYPE_CHECKING:
    from daemon.app import Daemon

T = TypeVar("T")


async def register(daemon: Daemon) -> None:
    """The daemon part: the voices the live pipeline and imports use."""
    assert daemon.live is not None and daemon.live.voices is not None
    register_voices(daemon.handlers, daemon.live.voices)


def voice_info(v: StoredVoice) -> VoiceInfo:
    return VoiceInfo(id=v.id, name=v.name, sessions=v.sessions, turns=v.turns,
                     seconds=round(v.seconds, 1), created_at=v.created_at)


def register_voices(handlers: Handlers, voices: Voices) -> None:
    async def db(fn: Callable[..., T], *args: Any) -> T:
        return await trio.to_thread.run_sync(functools.partial(fn, *args))

    async def voices_list(request: VoicesList) -> VoicesReply:
        def read() -> VoicesReply:
            return VoicesReply(
                voices=[voice_info(v) for v in list_voices(voices.store)],
                heard=[HeardVoiceInfo(session_id=h.session_id, label=h.label, name=h.name,
                                      seconds=h.seconds) for h in voices.heard()],
                voices_enabled=voices.switched_on,
                state=voices.status(),
            )

        return await db(read)

    async def voice_name(request: VoiceName) -> VoiceReply:
        named = await db(voices.name, request.voice, request.name, request.session_id)
        return VoiceReply(voice=voice_info(named),
                          message=f"{request.voice} is {named.name}: {named.turns} turns in "
                                  f"{named.sessions} session(s) show the name")

    async def voice_merge(request: VoiceMerge) -> VoiceReply:
        merged = await db(voices.merge, request.keep, request.other)
        return VoiceReply(voice=voice_info(merged),
                          message=f"{request.other} is now {merged.name} ({merged.turns} turns)")

    async def voice_forget(request: VoiceForget) -> VoiceReply:
        gone = await db(voices.forget, request.voice)
        return VoiceReply(voice=voice_info(gone),
                          message=f"forgot {gone.name}: its voiceprint is deleted and its "
                                  f"{gone.turns} turns show the session voice again")

    handlers.add(VoicesList, voices_list)
    handlers.add(VoiceName, voice_name)
    handlers.add(VoiceMerge, voice_merge)
    handlers.add(VoiceForget, voice_forget)

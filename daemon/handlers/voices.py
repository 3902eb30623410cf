"""Handlers for named voices: `braincue voices list | show | name | merge | forget`."""

from __future__ import annotations

from daemon.handlers.context import Context
from daemon.handlers.wire import voice_info, voice_summary
from daemon.ipc.dispatch import Handlers
from daemon.ipc.protocol import (
    HeardVoiceInfo,
    VoiceForget,
    VoiceMerge,
    VoiceName,
    VoiceReply,
    VoiceShow,
    VoicesList,
    VoicesReply,
)
from daemon.store.voices import list_voices
from daemon.voices.service import Voices, unrecognised_note


async def register(daemon: Context) -> None:
    """The daemon part: the voices the live pipeline and imports use."""
    assert daemon.live is not None and daemon.live.voices is not None
    register_voices(daemon.handlers, daemon.live.voices)


def register_voices(handlers: Handlers, voices: Voices) -> None:
    async def voices_list(request: VoicesList) -> VoicesReply:
        def read() -> VoicesReply:
            state = voices.status()
            named = list_voices(voices.store)
            model_id = voices.model_id if voices.switched_on else ""
            other = [v for v in named if model_id and v.model_id != model_id]
            return VoicesReply(
                voices=[voice_info(v) for v in named],
                heard=[HeardVoiceInfo(session_id=h.session_id, label=h.label, name=h.name,
                                      seconds=h.seconds, suggestion=h.suggestion)
                       for h in voices.heard()],
                voices_enabled=voices.switched_on,
                state=state,
                model_id=model_id,
                note=unrecognised_note(other, model_id) if other else "",
            )

        return await voices.store.run(read)

    async def voice_name(request: VoiceName) -> VoiceReply:
        named = await voices.store.run(voices.name, request.voice, request.name, request.session_id)
        return VoiceReply(voice=voice_info(named),
                          message=f"{request.voice} is {named.name}: {named.turns} turns in "
                                  f"{named.sessions} session(s) show the name")

    async def voice_show(request: VoiceShow) -> VoiceReply:
        shown = await voices.store.run(voices.show, request.voice)
        return VoiceReply(voice=voice_info(shown), message=voice_summary(shown))

    async def voice_merge(request: VoiceMerge) -> VoiceReply:
        merged = await voices.store.run(voices.merge, request.keep, request.other)
        return VoiceReply(voice=voice_info(merged),
                          message=f"{request.other} is now {merged.name} ({merged.turns} turns)")

    async def voice_forget(request: VoiceForget) -> VoiceReply:
        gone = await voices.store.run(voices.forget, request.voice)
        return VoiceReply(voice=voice_info(gone),
                          message=f"forgot {gone.name}: its voiceprint is deleted and its "
                                  f"{gone.turns} turns show the session voice again")

    handlers.add(VoicesList, voices_list)
    handlers.add(VoiceName, voice_name)
    handlers.add(VoiceShow, voice_show)
    handlers.add(VoiceMerge, voice_merge)
    handlers.add(VoiceForget, voice_forget)

"""Handlers for live capture: start and stop sessions, pause listening, import audio files."""

from __future__ import annotations

import os

from daemon.audio.silero import installed_speech_model
from daemon.audio.vad import VadConfig
from daemon.handlers.context import Context
from daemon.ipc.dispatch import Handlers, Publish
from daemon.ipc.protocol import (
    ImportAudio,
    ImportAudioReply,
    Ok,
    Pause,
    Start,
    StartReply,
    Stop,
    StopReply,
)
from daemon.live.actor import Live
from daemon.voices.service import Voices


async def register(daemon: Context) -> None:
    """The daemon part: capture and transcription, sessions, audio import (Start, Stop,
    Pause, ImportAudio)."""
    voices = Voices(daemon.store, lambda: daemon.settings, daemon.paths.models_dir)
    vad = VadConfig(speech_model=installed_speech_model(daemon.paths.models_dir))
    daemon.live = Live(daemon.store, lambda: daemon.settings, daemon.paths.models_dir,
                       daemon.publish, capture=capture_enabled(), voices=voices, vad=vad)
    await daemon.nursery.start(daemon.live.run)
    daemon.settings_listeners.append(daemon.live.use_devices)
    register_live(daemon.handlers, daemon.live)


def capture_enabled() -> bool:
    """Capture runs unless ``BRAINCUE_CAPTURE`` is 0/off/false (the tests' default)."""
    return os.environ.get("BRAINCUE_CAPTURE", "on").strip().lower() not in {"0", "off", "false"}


def register_live(handlers: Handlers, live: Live) -> None:
    async def start(request: Start) -> StartReply:
        return await live.start(request)

    async def stop(request: Stop) -> StopReply:
        return await live.stop()

    async def import_audio(request: ImportAudio, publish: Publish) -> ImportAudioReply:
        return await live.import_audio(request, publish)

    async def pause(request: Pause) -> Ok:
        await live.pause(request.paused)
        return Ok()

    handlers.add(Start, start)
    handlers.add(Pause, pause)
    handlers.add(Stop, stop)
    handlers.add_streaming(ImportAudio, import_audio)

"""Handlers for live capture: start and stop sessions, pause listening, import audio files."""

from __future__ import annotations

import os

from daemon.audio.silero import installed_speech_model
from daemon.audio.vad import VadConfig
from daemon.handlers import wire
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
from daemon.live.records import ImportedSoFar, LiveEvent
from daemon.voices.service import Voices


async def register(daemon: Context) -> None:
    """The daemon part: capture and transcription, sessions, audio import (Start, Stop,
    Pause, ImportAudio)."""

    def publish(event: LiveEvent) -> None:
        daemon.publish(wire.live_event(event))

    voices = Voices(daemon.store, lambda: daemon.settings, daemon.paths.models_dir)
    vad = VadConfig(speech_model=installed_speech_model(daemon.paths.models_dir))
    daemon.live = Live(daemon.store, lambda: daemon.settings, daemon.paths.models_dir,
                       publish, capture=capture_enabled(), voices=voices, vad=vad)
    await daemon.nursery.start(daemon.live.run)
    daemon.settings_listeners.append(daemon.live.use_devices)
    register_live(daemon.handlers, daemon.live)


def capture_enabled() -> bool:
    """Capture runs unless ``BRAINCUE_CAPTURE`` is 0/off/false (the tests' default)."""
    return os.environ.get("BRAINCUE_CAPTURE", "on").strip().lower() not in {"0", "off", "false"}


def register_live(handlers: Handlers, live: Live) -> None:
    async def start(request: Start) -> StartReply:
        return wire.start_reply(await live.start(wire.start_options(request)))

    async def stop(request: Stop) -> StopReply:
        return wire.stop_reply(await live.stop())

    async def import_audio(request: ImportAudio, publish: Publish) -> ImportAudioReply:
        def progress(so_far: ImportedSoFar) -> None:
            publish(wire.import_progress(request.id, so_far))

        return wire.import_reply(await live.import_audio(wire.import_options(request), progress))

    async def pause(request: Pause) -> Ok:
        await live.pause(request.paused)
        return Ok()

    handlers.add(Start, start)
    handlers.add(Pause, pause)
    handlers.add(Stop, stop)
    handlers.add_streaming(ImportAudio, import_audio)

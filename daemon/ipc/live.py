"""Handlers for live capture: start and stop sessions, pause listening, import audio files."""

from __future__ import annotations

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
from daemon.ipc.server import Handlers, Publish
from daemon.live import Live


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

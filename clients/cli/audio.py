"""`braincue transcribe FILE`: transcribe an audio file locally, without the daemon."""

from __future__ import annotations

from pathlib import Path

import click
import msgspec

from clients.cli.context import Context
from daemon.asr import Segment, WhisperTranscriber
from daemon.asr.level import level_warning
from daemon.audio import load_audio
from daemon.models.registry import speech_model


def format_timestamp(seconds: float) -> str:
    """``mm:ss.cc``, with hours in front once there are any (``h:mm:ss.cc``)."""
    centiseconds = round(seconds * 100)
    minutes, cs = divmod(centiseconds, 6000)
    hours, minutes = divmod(minutes, 60)
    clock = f"{minutes:02d}:{cs // 100:02d}.{cs % 100:02d}"
    return f"{hours}:{clock}" if hours else clock


def format_segment(segment: Segment) -> str:
    return f"[{format_timestamp(segment.start)} -> {format_timestamp(segment.end)}] {segment.text}"


@click.command()
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--model", default="",
              help="Speech model name (`braincue models list`); default: the asr_model setting, "
                   "else the best installed.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="CPU threads for whisper; default: the asr_threads setting (0: the "
                   "cores free).")
@click.option("--language", default="",
              help='Language spoken: a code ("en", "de", ...) or "auto"; default: the '
                   "asr_language setting. English-only models always hear English.")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON array of {start, end, text} (seconds) instead of lines.")
@click.pass_obj
def transcribe(context: Context, file: Path, model: str, threads: int | None, language: str,
               as_json: bool) -> None:
    """Transcribe an audio FILE (WAV, FLAC, OGG, MP3) and print timed segments."""
    settings = context.config.settings
    language = language or settings.asr_language
    model_file = speech_model(model or settings.asr_model, language,
                              context.config.paths.models_dir)
    audio = load_audio(file)
    warning = level_warning(audio, file.name)
    if warning is not None:
        click.echo(f"warning: {warning}", err=True)
    transcriber = WhisperTranscriber(model_file, threads=threads or settings.asr_threads,
                                     language=language,
                                     fit_context=settings.asr_fit_context)
    try:
        segments = transcriber.transcribe_sync(audio)
    finally:
        transcriber.close()
    if as_json:
        click.echo(msgspec.json.encode(segments).decode())
        return
    for segment in segments:
        click.echo(format_segment(segment))

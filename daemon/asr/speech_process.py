"""The speech model's own process: a :class:`WhisperTranscriber` serving the daemon over a pipe.

    python -m daemon.asr.speech_process MODEL_PATH --threads N --language CODE [--full-window]

Requests arrive on stdin and replies leave on stdout as frames (:mod:`daemon.asr.frames`,
served by :func:`daemon.process.frames.run_child`), one utterance at a time. The model loads on
the first one (or when asked to) and stays loaded. The process ends when stdin closes. A native
crash or an out-of-memory kill ends only this process: the daemon sees its pipe close.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import trio

from daemon.asr import frames
from daemon.asr.engine import WhisperTranscriber
from daemon.errors import BrainCueError
from daemon.process.frames import Failed, FrameReader, Serve, encode, run_child


def serve(args: argparse.Namespace) -> Serve:
    made: list[WhisperTranscriber] = []  # made on the first request: its error is a reply

    async def answer(request: frames.ToSpeech) -> frames.FromSpeech:
        try:
            if not made:
                made.append(WhisperTranscriber(Path(args.model), threads=args.threads,
                                               language=args.language,
                                               fit_context=not args.full_window))
            if isinstance(request, frames.Load):
                await made[0].load()
                return frames.Loaded()
            return frames.Transcribed(await made[0].transcribe(request.samples(),
                                                               request.threads))
        except BrainCueError as e:
            return Failed(e.message, e.fix)
        except ValueError as e:  # audio it cannot take
            return Failed(f"the speech model's process could not transcribe: {e}")

    async def run(requests: FrameReader, out: trio.abc.SendStream) -> None:
        while (request := await requests.next()) is not None:
            assert isinstance(request, frames.Transcribe | frames.Load)
            await out.send_all(encode(await answer(request)))

    return run


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m daemon.asr.speech_process")
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--language", required=True)
    parser.add_argument("--full-window", action="store_true")
    return parser.parse_args(argv)


if __name__ == "__main__":
    run_child("speech process", serve, frames.ToSpeech, parse(sys.argv[1:]))

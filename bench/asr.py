"""Real-time factor of the whisper models: seconds of compute per second of audio.

    .venv/bin/python -m bench.asr [--models-dir DIR] [--models a,b] [--threads 1,2]

Audio: jfk.wav (11 s, one speaker) and a 60 s two-voice dialogue synthesised with espeak-ng
(en-us and en-gb+f3, converted by sox to 16 kHz mono, 0.6 s pauses between turns). Model load
time is excluded (one warm-up call per model and thread count). WER is against the known text.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import default_models_dir, machine
from daemon.asr import SAMPLE_RATE, WhisperTranscriber
from daemon.audio import load_audio
from daemon.models.registry import model_path
from tests.wer import word_error_rate

SHARED_AUDIO = Path(__file__).resolve().parents[2] / "shared" / "audio"
if not SHARED_AUDIO.is_dir():  # a CI clone sits beside shared/ too; else the workspace copy
    SHARED_AUDIO = Path("/work/shared/audio")

DIALOGUE = [
    ("en-us", "Good morning. Shall we start with the launch plan for next month?"),
    ("en-gb+f3", "Yes. The design review is finished and the budget was approved on Tuesday."),
    ("en-us", "Great. Alice will send the revised report to the client by Friday."),
    ("en-gb+f3", "And I will book the meeting room for the workshop on Monday morning."),
    ("en-us", "What about the server migration? Is it still blocked by the database upgrade?"),
    ("en-gb+f3", "The upgrade is done. We can move the servers next week without downtime."),
    ("en-us", "Then let us decide to ship the beta to twenty customers in March."),
    ("en-gb+f3", "Agreed. I will write the release notes and share them with support."),
    ("en-us", "Remind me to call the lawyer about the contract before Thursday."),
    ("en-gb+f3", "Noted. The marketing team wants the final price list by the end of the week."),
]
PAUSE_S = 0.6


def synthesise_dialogue(seconds: float, workdir: Path) -> tuple[np.ndarray, str]:
    """Alternate the two voices through ``DIALOGUE`` until ``seconds`` of audio; return its text."""
    pause = np.zeros(int(PAUSE_S * SAMPLE_RATE), dtype=np.float32)
    parts: list[np.ndarray] = []
    spoken: list[str] = []
    total = 0
    turn = 0
    while total < seconds * SAMPLE_RATE:
        voice, text = DIALOGUE[turn % len(DIALOGUE)]
        raw, converted = workdir / f"{turn}.raw.wav", workdir / f"{turn}.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", "165", "-w", str(raw), text], check=True)
        subprocess.run(["sox", str(raw), "-r", str(SAMPLE_RATE), "-c", "1", str(converted)],
                       check=True)
        speech = load_audio(converted)
        parts += [speech, pause]
        spoken.append(text)
        total += len(speech) + len(pause)
        turn += 1
    return np.concatenate(parts), " ".join(spoken)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", type=Path, default=default_models_dir(),
                        help="models directory (default: BRAINCUE_MODELS or the user's)")
    parser.add_argument("--models", default="whisper-tiny.en,whisper-base")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--dialogue-seconds", type=float, default=60.0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        dialogue, dialogue_text = synthesise_dialogue(args.dialogue_seconds, Path(tmp))
    clips = {
        "jfk.wav": (load_audio(SHARED_AUDIO / "jfk.wav"), (SHARED_AUDIO / "jfk.txt").read_text()),
        "dialogue": (dialogue, dialogue_text),
    }
    print(f"{machine()} at start")
    header = f"{'model':<16} {'audio':<10} {'seconds':>7} {'threads':>7} {'RTF':>6} {'WER':>6}"
    print(header)
    print("-" * len(header))
    for name in args.models.split(","):
        path = model_path(name, args.models_dir)
        for threads in (int(t) for t in args.threads.split(",")):
            transcriber = WhisperTranscriber(path, threads=threads)
            transcriber.transcribe_sync(clips["jfk.wav"][0][:SAMPLE_RATE])  # load the model
            for clip, (audio, reference) in clips.items():
                started = time.perf_counter()
                segments = transcriber.transcribe_sync(audio)
                elapsed = time.perf_counter() - started
                duration = len(audio) / SAMPLE_RATE
                wer = word_error_rate(reference, " ".join(s.text for s in segments))
                print(f"{name:<16} {clip:<10} {duration:>7.1f} {threads:>7} "
                      f"{elapsed / duration:>6.3f} {wer:>6.1%}", flush=True)
            transcriber.close()
    print(f"{machine()} at end")


if __name__ == "__main__":
    main()

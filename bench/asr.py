"""Speech recognition: real-time factor and word error rate, today's decoding beside the new.

    .venv/bin/python -m bench.asr --audio DIR [--models-dir DIR] [--models a,b] [--threads 1,2]
                                  [--part speed,fleurs] [--languages en,de,fr,es]
                                  [--decodings window,leveled,fit,auto]

Two ways of decoding, side by side on the same audio in the same run:

- ``window``: today's: whisper's full 30 s encoder window for every call, no leveling, and
  audio under -60 dBFS RMS taken for silence (the gate the engine had);
- ``leveled`` (FLEURS only): the full window, the audio leveled first and silence judged
  against the audio's own floor (``daemon.asr.level``);
- ``fit``: leveled, and the encoder context sized to the audio (``audio_ctx``, at least 10 s):
  the default.

``speed``: jfk.wav (11 s, one speaker), a 60 s two-voice espeak-ng dialogue transcribed whole,
and the same dialogue cut into its utterances (as live capture does), each with its real-time
factor and WER. Model load time is excluded (one warm-up call per model and thread count).

``fleurs``: FLEURS excerpts in ``DIR/fleurs`` (real read speech, 4-20 s, -2 to -49 dBFS peak):
WER per file and the mean per language, with the file's speech level. English-only models
are run on English only; the multilingual model with the file's language given, and with
language detection (``auto``, fit decoding).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.common import default_models_dir, machine
from bench.wer import word_error_rate
from daemon.asr import WhisperTranscriber
from daemon.asr.level import speech_level_db
from daemon.audio import load_audio
from daemon.audio.format import SAMPLE_RATE
from daemon.models.registry import model_path

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


def synthesise_dialogue(
    seconds: float, workdir: Path
) -> tuple[np.ndarray, str, list[tuple[np.ndarray, str]]]:
    """Alternate the two voices through ``DIALOGUE`` until ``seconds`` of audio; return it, its
    text, and each turn's audio with its text."""
    pause = np.zeros(int(PAUSE_S * SAMPLE_RATE), dtype=np.float32)
    parts: list[np.ndarray] = []
    spoken: list[str] = []
    turns: list[tuple[np.ndarray, str]] = []
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
        turns.append((speech, text))
        total += len(speech) + len(pause)
        turn += 1
    return np.concatenate(parts), " ".join(spoken), turns


OLD_SILENCE_RMS = 1e-3  # the engine's gate before leveling: -60 dBFS RMS was "silence"


@dataclass(frozen=True)
class Decoding:
    name: str
    fit_context: bool
    leveled: bool

    def transcribe(self, transcriber: WhisperTranscriber, audio: np.ndarray) -> str:
        if not self.leveled and float(np.sqrt(np.mean(np.square(audio)))) < OLD_SILENCE_RMS:
            return ""
        return " ".join(s.text for s in transcriber.transcribe_sync(audio))


WINDOW = Decoding("window", fit_context=False, leveled=False)  # the old full-window decoding
LEVELED = Decoding("leveled", fit_context=False, leveled=True)  # the window, audio leveled
FIT = Decoding("fit", fit_context=True, leveled=True)  # the default now


def transcriber_for(path: Path, decoding: Decoding, threads: int, warm_up: Path,
                    language: str = "en") -> WhisperTranscriber:
    transcriber = WhisperTranscriber(path, threads=threads, language=language,
                                     fit_context=decoding.fit_context,
                                     leveled=decoding.leveled)
    transcriber.transcribe_sync(load_audio(warm_up)[:SAMPLE_RATE])  # load it
    return transcriber


def speed(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        dialogue, dialogue_text, turns = synthesise_dialogue(args.dialogue_seconds, Path(tmp))
    clips: dict[str, list[tuple[np.ndarray, str]]] = {
        "jfk.wav": [(load_audio(args.audio / "jfk.wav"), (args.audio / "jfk.txt").read_text())],
        "dialogue": [(dialogue, dialogue_text)],
        "turns": turns,
    }
    header = (f"{'model':<16} {'audio':<9} {'seconds':>7} {'threads':>7} {'decoding':<8} "
              f"{'RTF':>6} {'WER':>6}")
    print(header)
    print("-" * len(header))
    for name in args.models.split(","):
        path = model_path(name, args.models_dir)
        for threads in (int(t) for t in args.threads.split(",")):
            for decoding in (WINDOW, FIT):
                transcriber = transcriber_for(path, decoding, threads, args.audio / "jfk.wav")
                for clip, pieces in clips.items():
                    started = time.perf_counter()
                    heard = [decoding.transcribe(transcriber, audio) for audio, _ in pieces]
                    elapsed = time.perf_counter() - started
                    duration = sum(len(audio) for audio, _ in pieces) / SAMPLE_RATE
                    wer = word_error_rate(" ".join(text for _, text in pieces), " ".join(heard))
                    print(f"{name:<16} {clip:<9} {duration:>7.1f} {threads:>7} "
                          f"{decoding.name:<8} {elapsed / duration:>6.3f} {wer:>6.1%}",
                          flush=True)
                transcriber.close()


def fleurs(args: argparse.Namespace) -> None:
    files = sorted(p for p in (args.audio / "fleurs").glob("fleurs-*.ogg")
                   if p.stem.split("-")[1] in args.languages.split(","))
    threads = int(args.threads.split(",")[-1])
    for name in args.models.split(","):
        path = model_path(name, args.models_dir)
        english_only = name.endswith(".en")
        settings = [("given", WINDOW), ("given", LEVELED), ("given", FIT)]
        if not english_only:
            settings.append(("auto", FIT))
        settings = [(lang, d) for lang, d in settings
                    if d.name in args.decodings.split(",")
                    and (lang == "given" or "auto" in args.decodings.split(","))]
        print(f"\n{name}: WER per FLEURS file ({threads} threads; language given to whisper, "
              f"or auto-detected)")
        header = (f"{'file':<14} {'s':>5} {'dBFS':>5} "
                  + " ".join(f"{lang + ' ' + d.name:>13}" for lang, d in settings))
        print(header)
        print("-" * len(header))
        results: dict[str, list[list[float]]] = {}
        empty: dict[str, list[int]] = {}
        for lang in args.languages.split(","):
            if english_only and lang != "en":
                continue
            rows = [p for p in files if p.stem.split("-")[1] == lang]
            for p in rows:
                audio = load_audio(p)
                reference = p.with_suffix(".txt").read_text()
                cells = []
                for i, (language, decoding) in enumerate(settings):
                    transcriber = transcribers(path, decoding, threads,
                                               lang if language == "given" else "auto",
                                               args.audio / "jfk.wav")
                    text = decoding.transcribe(transcriber, audio)
                    wer = word_error_rate(reference, text)
                    results.setdefault(lang, [[] for _ in settings])[i].append(wer)
                    empty.setdefault(lang, [0] * len(settings))[i] += not text.strip()
                    cells.append(f"{wer:>12.1%}" + ("!" if not text.strip() else " "))
                print(f"{p.stem:<14} {len(audio) / SAMPLE_RATE:>5.1f} "
                      f"{speech_level_db(audio):>5.0f} " + " ".join(cells), flush=True)
        print("-" * len(header))
        for lang, columns in results.items():
            print(f"{'mean ' + lang:<26} " + " ".join(
                f"{statistics.mean(c):>12.1%} " for c in columns)
                + "  empty: " + "/".join(str(n) for n in empty[lang]))
        print("(! = empty transcript)")
        close_transcribers()


_open: dict[tuple[Path, Decoding, int, str], WhisperTranscriber] = {}


def transcribers(path: Path, decoding: Decoding, threads: int, language: str, warm_up: Path
                 ) -> WhisperTranscriber:
    key = (path, decoding, threads, language)
    if key not in _open:
        _open[key] = transcriber_for(path, decoding, threads, warm_up, language)
    return _open[key]


def close_transcribers() -> None:
    for transcriber in _open.values():
        transcriber.close()
    _open.clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audio", type=Path, required=True,
                        help="the folder holding jfk.wav, jfk.txt and fleurs/")
    parser.add_argument("--models-dir", type=Path, default=default_models_dir(),
                        help="models directory (default: BRAINCUE_MODELS or the user's)")
    parser.add_argument("--models", default="whisper-tiny.en,whisper-base")
    parser.add_argument("--threads", default="1,2",
                        help="thread counts for the speed part; FLEURS uses the last")
    parser.add_argument("--dialogue-seconds", type=float, default=60.0)
    parser.add_argument("--part", default="speed,fleurs")
    parser.add_argument("--languages", default="en,de,fr,es")
    parser.add_argument("--decodings", default="window,leveled,fit,auto",
                        help="FLEURS columns to run (auto: the multilingual model detecting "
                             "the language, fit decoding)")
    args = parser.parse_args()
    print(f"{machine()} at start")
    if "speed" in args.part:
        speed(args)
    if "fleurs" in args.part:
        fleurs(args)
    print(f"{machine()} at end")


if __name__ == "__main__":
    main()

"""Writes the clips of this folder from a LibriSpeech-layout folder of test-other speakers (one
folder a speaker), as carried in resemble-ai/Resemblyzer's ``audio_data/librispeech_test-other``:

    python tests/data/people/make_clips.py LIBRISPEECH_TEST_OTHER_DIR

Each clip is one utterance, 16 kHz mono, written as Ogg Vorbis to keep the folder small.
"""

from __future__ import annotations

import sys
from pathlib import Path

import soundfile as sf

HERE = Path(__file__).resolve().parent
CLIPS = {  # speaker: utterances (LibriSpeech ids)
    "3080": ["3080-5032-0000", "3080-5032-0003", "3080-5032-0004", "3080-5032-0001",
             "3080-5032-0005"],
    "2414": ["2414-128291-0007", "2414-128291-0001"],
    "1998": ["1998-15444-0001", "1998-15444-0006", "1998-15444-0003"],
}


def main(source: Path) -> None:
    for speaker, ids in CLIPS.items():
        for utterance in ids:
            audio, rate = sf.read(source / speaker / f"{utterance}.flac", dtype="float32")
            assert rate == 16_000, rate
            sf.write(HERE / f"{utterance}.ogg", audio, rate, format="OGG", subtype="VORBIS")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

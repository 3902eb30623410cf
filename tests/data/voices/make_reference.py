"""Make reference.json: voice embeddings from resemblyzer 0.1.4's own code, on torch.

Run once, in a throwaway venv (never the project's): ``pip install torch==2.13.0
librosa==0.10.2.post1 webrtcvad-wheels 'scipy<1.15' soundfile``, unzip the resemblyzer==0.1.4
wheel into SRC, then ``python make_reference.py SRC tests/data OUT.json``.
"""

import json
import sys
from pathlib import Path

import numpy as np
import soundfile as sf

sys.path.insert(0, sys.argv[1])
from resemblyzer import VoiceEncoder
from resemblyzer.audio import normalize_volume

DATA = Path(sys.argv[2])
CLIPS = {
    "jfk": ("audio/jfk.wav", 0.0, None),
    "jfk-short": ("audio/jfk.wav", 1.0, 2.2),
    "dev00-mid": ("audio/ami-dev00.wav", 5.0, 12.0),
}

encoder = VoiceEncoder(device="cpu")
clips = {}
for name, (path, start, end) in CLIPS.items():
    wav, rate = sf.read(DATA / path, dtype="float32")
    wav = wav[int(start * rate) : None if end is None else int(end * rate)]
    louder = normalize_volume(wav, -30, increase_only=True)
    embedding, partials, _ = encoder.embed_utterance(louder, return_partials=True)
    clips[name] = {
        "path": path,
        "start_s": start,
        "end_s": end,
        "embedding": [round(float(x), 8) for x in embedding],
        "partials": [[round(float(x), 8) for x in p] for p in np.asarray(partials)],
    }
made_with = "resemblyzer 0.1.4 embed_utterance(normalize_volume(wav, -30, increase_only=True))"
made_with += ", torch 2.13.0+cpu, librosa 0.10.2.post1: tests/data/voices/make_reference.py"
Path(sys.argv[3]).write_text(json.dumps({"made_with": made_with, "clips": clips}, indent=0))

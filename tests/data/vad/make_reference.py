"""Make reference.json: Silero VAD speech probabilities from silero-vad 6.2.3's own ONNX model.

Run once, in a throwaway venv (never the project's): ``pip install onnxruntime==1.32.0
soundfile numpy``, unzip the silero-vad==6.2.3 wheel into SRC, then ``python make_reference.py
SRC tests/data OUT.json``. The stream is fed as silero-vad's ``OnnxWrapper`` feeds it: 512
samples a call, the 64 samples before them as context, the state carried over.
"""

import json
import sys
from pathlib import Path

import numpy as np
import onnxruntime
import soundfile as sf

MODEL = Path(sys.argv[1]) / "silero_vad/data/silero_vad_16k_op15.onnx"
DATA = Path(sys.argv[2])
CLIPS = {"jfk": "audio/jfk.wav", "ami-dev00": "audio/ami-dev00.wav",
         "fleurs-en-003": "audio/fleurs-en-003.ogg"}

options = onnxruntime.SessionOptions()
options.inter_op_num_threads = options.intra_op_num_threads = 1
session = onnxruntime.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"],
                                       sess_options=options)
clips = {}
for name, path in CLIPS.items():
    audio, rate = sf.read(DATA / path, dtype="float32")
    assert rate == 16000 and audio.ndim == 1
    state = np.zeros((2, 1, 128), np.float32)
    context = np.zeros((1, 64), np.float32)
    probabilities = []
    for at in range(0, len(audio) - 511, 512):
        x = np.concatenate([context, audio[None, at : at + 512]], axis=1)
        p, state = session.run(None, {"input": x, "state": state,
                                      "sr": np.array(16000, dtype=np.int64)})
        context = x[:, -64:]
        probabilities.append(round(float(p[0, 0]), 7))
    clips[name] = {"path": path, "probabilities": probabilities}
Path(sys.argv[3]).write_text(json.dumps({"model": MODEL.name, "onnxruntime":
                                         onnxruntime.__version__, "clips": clips}) + "\n")

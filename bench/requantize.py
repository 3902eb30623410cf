"""A GGUF language model requantized for llama.cpp's faster CPU kernels, to be measured beside
the original (``bench.qmsum_span --models DIR``, ``bench.common.model_speed``).

    .venv/bin/python -m bench.requantize SOURCE.gguf OUT.gguf [--tensors REGEX] [--keep-embedding]

Without ``--tensors``, llama.cpp's own quantizer turns every weight into Q4_0 (``--keep-embedding``:
the token embedding and the output matrix as Q8_0). With ``--tensors``, only the tensors whose
names match are turned into Q4_0 (gguf's numpy quantizer) and the rest are copied as they are.
llama.cpp's CPU backend repacks Q4_0 weights into interleaved rows for its fastest matrix
kernels; the Qwen2.5-Coder 0.5B file the registry carries is mostly Q5_0, which it does not
repack. A file made here goes into a models directory of its own, never the daemon's
(docs/benchmarks/ask.md: what Q4_0 gains in speed and loses in answers).
"""

from __future__ import annotations

import argparse
import ctypes
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def with_llama_cpp(source: Path, out: Path, keep_embedding: bool) -> None:
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0
    params.allow_requantize = True
    if keep_embedding:
        params.token_embedding_type = llama_cpp.GGML_TYPE_Q8_0
        params.output_tensor_type = llama_cpp.GGML_TYPE_Q8_0
    if llama_cpp.llama_model_quantize(str(source).encode(), str(out).encode(),
                                      ctypes.byref(params)) != 0:
        raise SystemExit(f"llama.cpp could not requantize {source}")


def with_numpy(source: Path, out: Path, tensors: re.Pattern[str]) -> None:
    import gguf
    from gguf.quants import dequantize, quantize

    kind = gguf.GGMLQuantizationType
    reader = gguf.GGUFReader(source)
    writer = gguf.GGUFWriter(out, arch=reader.fields["general.architecture"].contents())
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # written by the writer itself
        value_type = field.types[0]
        writer.add_key_value(field.name, field.contents(), value_type,
                             sub_type=field.types[-1] if value_type == gguf.GGUFValueType.ARRAY
                             else None)
    data: list[Any] = []
    for tensor in reader.tensors:
        values, qtype = tensor.data, tensor.tensor_type
        if tensors.search(tensor.name) and qtype not in (kind.F32, kind.F16, kind.Q4_0):
            values, qtype = quantize(dequantize(values, qtype), kind.Q4_0), kind.Q4_0
        data.append(values)
        writer.add_tensor_info(tensor.name, values.shape, values.dtype, values.nbytes, qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for values in data:
        writer.write_tensor_data(values)
    writer.close()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--tensors", type=re.compile, default=None,
                        help="only these tensors to Q4_0, e.g. 'ffn_(gate|up)'")
    parser.add_argument("--keep-embedding", action="store_true",
                        help="llama.cpp's quantizer: the embedding and output matrix as Q8_0")
    args = parser.parse_args(argv)
    if args.tensors is None:
        with_llama_cpp(args.source, args.out, args.keep_embedding)
    else:
        with_numpy(args.source, args.out, args.tensors)
    print(f"{args.out}: {args.out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()

"""Bundle an ONNX cross-encoder and its tokenizer into the one file the registry installs.

Every model is one file in the models directory; a cross-encoder needs two (``model.onnx`` and
``tokenizer.json``), which :mod:`daemon.llm.rerank` reads from a zip. The members are stored
uncompressed under fixed timestamps, so the same input always gives the same bytes (and the
sha256 pin holds).
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

from daemon.errors import ModelError
from daemon.llm.onnx import MODEL_MEMBER, TOKENIZER_MEMBER

_EPOCH = (1980, 1, 1, 0, 0, 0)


def convert_cross_encoder(
    model_dir: Path,
    out_path: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Write ``out_path``: ``model_dir``'s model.onnx and tokenizer.json as a stored zip."""
    members = (MODEL_MEMBER, TOKENIZER_MEMBER)
    try:
        with zipfile.ZipFile(out_path, "w", zipfile.ZIP_STORED) as bundle:
            for done, name in enumerate(members, start=1):
                bundle.writestr(zipfile.ZipInfo(name, _EPOCH), (model_dir / name).read_bytes())
                if progress is not None:
                    progress(done, len(members))
    except OSError as exc:
        raise ModelError(
            f"cannot bundle {out_path.name}: {exc.strerror or exc}", fix="check free disk space"
        ) from exc

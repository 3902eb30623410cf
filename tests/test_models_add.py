"""`braincue models add` and `braincue models use`: a user's own GGUF file checked (header,
architecture, chat template, context), pinned by its sha256 and registered beside the built-in
models; a file that cannot serve gets a clear error and the model in use stays in use.

The user's file here is a real GGUF instruct model: the registry's Qwen2.5-Coder 0.5B, copied
out of the models directory as a user would have it."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from clients.shell import cli
from daemon.config import Config, Settings, load_settings
from daemon.engines import Engines
from daemon.errors import ModelError
from daemon.llm.generate import ChatMessage
from daemon.models.gguf_check import read_header
from daemon.models.own import own_entries
from daemon.models.registry import lookup

LLM = "qwen2.5-coder-0.5b"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def own_file(installed_model: Callable[[str], Path], tmp_path: Path) -> Path:
    copy = tmp_path / "downloads" / "Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf"
    copy.parent.mkdir()
    shutil.copyfile(installed_model(LLM), copy)
    return copy


def test_an_own_gguf_is_checked_pinned_and_used_like_a_built_in_model(own_file: Path) -> None:
    added = run("models", "add", str(own_file), "--role", "llm", "--name", "my-qwen")

    assert added.exit_code == 0, added.output
    recipe = lookup(LLM).wheels
    assert recipe is not None and recipe.sha256 is not None
    assert f"my-qwen: Qwen2.5 Coder 0.5B Instruct AWQ (qwen2, 24 layers, context 32768), " \
           f"sha256 {recipe.sha256}" in added.output
    listed = run("models", "list").output
    assert any(line.split()[:2] == ["my-qwen", "llm"] for line in listed.splitlines()), listed

    used = run("models", "use", "my-qwen")  # no daemon runs: the setting is saved

    assert used.exit_code == 0, used.output
    config = Config.load()
    assert load_settings(config.paths).llm_model == "my-qwen"
    (entry,) = own_entries(config.paths.config_dir)
    assert Path(entry.filename) == own_file and entry.own_sha256 == recipe.sha256


@pytest.mark.slow
async def test_a_damaged_file_is_refused_and_the_model_in_use_still_answers(
    own_file: Path, installed_model: Callable[[str], Path], tmp_path: Path,
) -> None:
    assert run("models", "add", str(own_file), "--role", "llm", "--name", "mine").exit_code == 0
    assert run("models", "use", "mine").exit_code == 0
    cut = tmp_path / "cut-short.gguf"
    cut.write_bytes(own_file.read_bytes()[: 40 << 20])  # a download cut short
    noise = tmp_path / "noise.gguf"
    noise.write_bytes(b"\x00not a model" * 1000)
    no_template = installed_model("all-minilm-l6-v2")  # a GGUF, but no chat model

    for path, said in ((cut, "is incomplete"), (noise, "is not a GGUF model file"),
                       (no_template, "has no chat template")):
        refused = run("models", "add", str(path), "--role", "llm", "--name", "broken")
        assert refused.exit_code != 0, refused.output
        assert said in str(refused.exception), refused.exception
        assert isinstance(refused.exception, ModelError)
    config = Config.load()
    assert [e.name for e in own_entries(config.paths.config_dir)] == ["mine"]

    # the registered file damaged afterwards: `use` refuses it and the setting stays
    own_file.write_bytes(own_file.read_bytes()[: 40 << 20])
    with pytest.raises(ModelError, match="is incomplete"):
        read_header(own_file)
    assert run("models", "use", LLM).exit_code == 0  # back to the built-in model
    refused = run("models", "use", "mine")
    assert refused.exit_code != 0 and "is incomplete" in str(refused.exception)
    settings = load_settings(config.paths)
    assert settings.llm_model == LLM

    # and the model in use answers
    engines = Engines(lambda: Settings(llm_model=settings.llm_model, llm_threads=2,
                                       llm_context=2048, llm_process=False),
                      config.paths.models_dir, config_dir=config.paths.config_dir)
    try:
        generator = engines.generator()
        words = [t async for t in generator.stream([ChatMessage("user", "Say hello.")],
                                                   max_tokens=8, temperature=0)]
        assert words and generator.model_id == installed_model(LLM).stem
    finally:
        engines.close()

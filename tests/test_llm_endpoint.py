"""Nothing leaves the machine unless the user says so: a language-model server off this machine
is refused with a typed error naming the fix, and once allowed, `status` says where
conversation text goes. (The URL rule is pure; the engines and the status lines are real.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from clients.cli.status import language_model_lines
from daemon.config import Settings, set_setting
from daemon.engines import Engines
from daemon.errors import ConfigError, NetworkRefused
from daemon.ipc.protocol import LanguageModelInfo
from daemon.llm.endpoint import is_loopback, parse
from daemon.llm.remote import OpenAIGenerator


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:11434/v1", "http://127.8.9.10:8080/v1", "http://localhost:1234/v1",
    "http://[::1]:8080/v1", "http://[::ffff:127.0.0.1]:8080/v1", "https://LOCALHOST/v1",
])
def test_a_server_on_this_machine_is_used_without_asking(url: str) -> None:
    endpoint = parse(url, allow_network=False)
    assert not endpoint.off_machine
    assert endpoint.base.endswith("/v1")


@pytest.mark.parametrize("url", [
    "http://192.168.1.20:11434/v1", "http://10.0.0.5/v1", "https://api.example.com/v1",
    "http://[2001:db8::1]:8080/v1", "http://127.0.0.1.example.com/v1", "http://0.0.0.0:8080/v1",
])
def test_a_server_off_this_machine_is_refused_with_the_fix(url: str) -> None:
    with pytest.raises(NetworkRefused) as refused:
        parse(url, allow_network=False)
    assert refused.value.code == "network_refused"
    assert "conversation text would go to" in refused.value.message
    assert "llm_allow_network true" in (refused.value.fix or "")
    allowed = parse(url, allow_network=True)
    assert allowed.off_machine and allowed.host in refused.value.message


def test_a_unix_socket_is_on_this_machine_and_a_bare_url_gets_the_api_path() -> None:
    socket = parse("unix:/run/user/1000/llm.sock", allow_network=False)
    assert socket.socket == "/run/user/1000/llm.sock" and not socket.off_machine
    assert parse("http://127.0.0.1:8080", allow_network=False).base == "http://127.0.0.1:8080/v1"
    assert parse("http://127.0.0.1:8080/api/v1/", allow_network=False).base == \
        "http://127.0.0.1:8080/api/v1"
    assert is_loopback("127.255.0.1") and not is_loopback("128.0.0.1")


@pytest.mark.parametrize("url", ["", "ftp://127.0.0.1/v1", "127.0.0.1:8080", "unix:relative.sock",
                                 "http://127.0.0.1:port/v1"])
def test_what_is_no_server_address_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError) as bad:
        parse(url, allow_network=False)
    assert not isinstance(bad.value, NetworkRefused) and bad.value.fix


def remote(**settings: object) -> Settings:
    values = Settings()
    for key, value in {"llm_engine": "openai", **settings}.items():
        values = set_setting(values, key, str(value).lower() if isinstance(value, bool)
                             else str(value))
    return values


async def test_the_engines_refuse_an_off_machine_server_until_it_is_allowed(tmp_path: Path) -> None:
    settings = remote(llm_url="http://192.0.2.10:8080/v1", llm_remote_model="qwen")
    engines = Engines(lambda: settings, tmp_path)
    with pytest.raises(NetworkRefused):
        engines.generator()
    refused = await engines.language_model()
    assert (refused.engine, refused.state) == ("openai", "refused")
    assert "192.0.2.10:8080" in refused.detail and not refused.sends_to

    settings = set_setting(settings, "llm_allow_network", "true")
    await engines.settings_changed(settings)
    made = engines.generator()
    assert isinstance(made, OpenAIGenerator) and made.endpoint.off_machine
    assert engines.background_generator() is made  # one client for asks and keeps
    shown = await engines.language_model()
    assert shown.sends_to == "192.0.2.10:8080"
    info = LanguageModelInfo(engine=shown.engine, model=shown.model, state=shown.state,
                             detail=shown.detail, url=shown.url, sends_to=shown.sends_to)
    lines = language_model_lines(info)
    assert any("conversation text goes to 192.0.2.10:8080, off this machine" in line
               for line in lines), lines


def test_status_says_plainly_that_the_server_is_unreachable() -> None:
    info = LanguageModelInfo(engine="openai", model="qwen", state="unreachable",
                             detail="no language model server answers at 127.0.0.1:9 — start it",
                             url="http://127.0.0.1:9/v1")
    lines = language_model_lines(info)
    assert lines[0] == "language model: unreachable (http://127.0.0.1:9/v1)"
    assert "start it" in lines[1]
    embedded = LanguageModelInfo(engine="embedded", model="qwen2.5-coder-0.5b",
                                 state="loads on first use", backend="CUDA", gpu_layers=24,
                                 layers=24)
    assert language_model_lines(embedded) == [
        "language model: qwen2.5-coder-0.5b (loads on first use; embedded llama.cpp on CUDA, "
        "24 of 24 layers on the GPU)"]

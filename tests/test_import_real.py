"""`braincue import` against an in-process daemon with the real tiny.en model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import trio
from click.testing import CliRunner

from bench.wer import word_error_rate
from clients.shell import cli
from daemon.app import Daemon, serve
from daemon.config import Config

pytestmark = pytest.mark.slow


@pytest.fixture
def home(short_home: Path) -> Path:
    (short_home / "config").mkdir()
    (short_home / "config" / "config.toml").write_text('asr_model = "whisper-tiny.en"\n')
    return short_home


async def test_an_imported_recording_becomes_a_searchable_session(
    home: Path, test_data: Path, installed_model: Callable[[str], Path]
) -> None:
    installed_model("whisper-tiny.en")
    installed_model("campplus-zh-en")  # the voices' encoder: one voice is one speaker with it
    jfk = test_data / "audio" / "jfk.wav"
    async with trio.open_nursery() as nursery:
        daemon: Daemon = await nursery.start(serve, Config.load())
        result = await trio.to_thread.run_sync(
            lambda: CliRunner().invoke(cli, ["import", str(jfk), "--title", "Inaugural",
                                             "--date", "1961-01-20 12:00"]))
        assert result.exit_code == 0, result.output
        [session] = daemon.store.list_sessions()
        turns = daemon.store.turns(session.id)
        nursery.cancel_scope.cancel()
    assert result.output.strip().endswith(
        "into session 1: nothing is summarised or remembered — pick a Space for that")
    assert (session.title, session.status) == ("Inaugural", "ended")
    # a mono file's voices are told apart: one voice is one speaker
    assert [t.speaker for t in turns] and {t.speaker for t in turns} == {"Them 1"}
    heard = " ".join(t.text for t in turns)
    assert word_error_rate((jfk.with_suffix(".txt")).read_text(), heard) <= 0.1, heard


async def test_a_quiet_recording_is_imported_with_a_warning(
    home: Path, test_data: Path, installed_model: Callable[[str], Path]
) -> None:
    installed_model("whisper-tiny.en")
    quiet = test_data / "audio" / "fleurs-en-009.ogg"  # speech at -56 dBFS
    async with trio.open_nursery() as nursery:
        daemon: Daemon = await nursery.start(serve, Config.load())
        result = await trio.to_thread.run_sync(
            lambda: CliRunner().invoke(cli, ["import", str(quiet)]))
        assert result.exit_code == 0, result.output
        [session] = daemon.store.list_sessions()
        turns = daemon.store.turns(session.id)
        nursery.cancel_scope.cancel()
    assert "warning: fleurs-en-009.ogg is very quiet" in result.stderr
    heard = " ".join(t.text for t in turns)
    assert word_error_rate(quiet.with_suffix(".txt").read_text(), heard) <= 0.2, heard

"""Voices on real audio and the real voice models: `braincue import` of a two-voice mono file
yields two speakers; naming one shows the name everywhere; forgetting it leaves no trace. With
CAM++ (the daemon's encoder when installed) and with GE2E (``voice_model = "resemblyzer"``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import trio
from click.testing import CliRunner

from clients.shell import cli
from daemon.app import Daemon, serve
from daemon.audio.testing import speak
from daemon.config import Config

pytestmark = pytest.mark.slow
ENCODER_IDS = {"campplus-zh-en": "campplus-zh-en", "resemblyzer": "resemblyzer-ge2e"}

# two espeak-ng voices both encoders tell apart (whole utterances: cosine 0.33-0.37 between them
# and 0.90+ within each with CAM++, 0.54-0.59 and 0.94+ with GE2E)
ANN, BOB = "en-us+f4", "en+m7"
SCRIPT = [
    (ANN, "Good morning. We need to decide on the launch date for the new website."),
    (BOB, "I think we should launch on Friday, because the payment page is ready now."),
    (ANN, "Friday works for me. I will tell the support team about it today."),
    (BOB, "Great. I will send the release notes to everyone tomorrow morning."),
]


# the voice_model setting, and the encoder it runs: CAM++ when installed (the default), GE2E
# when set (or when CAM++ is not installed)
ENCODERS = [("", "campplus-zh-en"), ("resemblyzer", "resemblyzer")]


@pytest.fixture(params=ENCODERS, ids=[model for _, model in ENCODERS])
def encoder(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(the voice_model setting, the registry model it runs)"""
    chosen: tuple[str, str] = request.param
    return chosen


@pytest.fixture
def home(short_home: Path, encoder: tuple[str, str]) -> Path:
    setting, _ = encoder
    (short_home / "config").mkdir()
    (short_home / "config" / "config.toml").write_text(
        f'asr_model = "whisper-tiny.en"\nvoice_model = "{setting}"\n')
    return short_home


@pytest.fixture
def dialogue(tmp_path: Path) -> Path:
    pause = np.zeros(int(0.8 * 16_000), np.float32)
    parts = []
    for i, (voice, text) in enumerate(SCRIPT):
        audio, _ = sf.read(speak(text, voice, tmp_path / f"{i}.wav"), dtype="float32")
        parts += [audio, pause]
    out = tmp_path / "mono.wav"
    sf.write(out, np.concatenate(parts), 16_000)
    return out


def cli_run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


async def test_a_two_voice_mono_import_yields_two_speakers_and_names_stick(
    home: Path, dialogue: Path, installed_model: Callable[[str], Path],
    encoder: tuple[str, str],
) -> None:
    _, model = encoder
    installed_model("whisper-tiny.en")
    installed_model(model)
    async with trio.open_nursery() as nursery:
        daemon: Daemon = await nursery.start(serve, Config.load())
        await trio.to_thread.run_sync(cli_run, "import", str(dialogue), "--title", "Launch")
        [session] = daemon.store.list_sessions()
        turns = daemon.store.turns(session.id)
        speakers = [t.speaker for t in turns]
        print("\n" + "\n".join(f"  {t.speaker}: {t.text}" for t in turns))
        assert speakers == ["Them 1", "Them 2", "Them 1", "Them 2"]

        listed = await trio.to_thread.run_sync(cli_run, "voices", "list")
        assert "Them 2" in listed and "no named voices" in listed
        assert listed.startswith(f"voices: on ({ENCODER_IDS[model]})\n"), listed
        await trio.to_thread.run_sync(cli_run, "voices", "name", "Them 2", "Bob")
        turns = daemon.store.turns(session.id)
        assert [t.speaker for t in turns] == ["Them 1", "Bob", "Them 1", "Bob"]
        found = await trio.to_thread.run_sync(cli_run, "search", "release notes", "--json")
        assert '"Bob"' in found

        # a second recording of the same voices: Bob is recognised, Ann is new
        await trio.to_thread.run_sync(cli_run, "import", str(dialogue), "--title", "Again")
        again = daemon.store.list_sessions()[0]
        assert again.id != session.id
        assert [t.speaker for t in daemon.store.turns(again.id)] == [
            "Them 1", "Bob", "Them 1", "Bob"]

        await trio.to_thread.run_sync(cli_run, "voices", "forget", "Bob")
        rows = daemon.store.db.read(lambda conn: conn.execute(
            "SELECT (SELECT count(*) FROM voices),"
            " (SELECT count(*) FROM turns WHERE speaker = 'Bob' OR voice_id IS NOT NULL),"
            " (SELECT count(*) FROM chunks WHERE header LIKE '%Bob%' OR body LIKE '%Bob%')"
        ).fetchone())
        nursery.cancel_scope.cancel()
    assert rows == (0, 0, 0)

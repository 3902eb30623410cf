"""Voices of real people (LibriSpeech readers, ``tests/data/people``) through a real daemon, the
real CAM++ model and whisper tiny.en: a mono telephone recording of two people is told apart;
a voice named once is known in a later call while a stranger there is left unnamed; naming a
voice again (confirming it) teaches its print, and a wrong confirmation cannot move it far;
`voices show` says what the print rests on; a rename reaches an action item's owner."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import trio
from click.testing import CliRunner

from clients.shell import cli
from daemon.app import Daemon, serve
from daemon.config import Config
from daemon.store.records import NewAssertion, Turn
from daemon.store.voices import get_voice

pytestmark = pytest.mark.slow

RATE = 16_000
ANN, BEN, CARA = "3080", "2414", "1998"  # the LibriSpeech speakers of the clips
FIRST_CALL = [f"{ANN}-5032-0000", f"{BEN}-128291-0007", f"{ANN}-5032-0003",
              f"{BEN}-128291-0001"]
LATER_CALL = [f"{ANN}-5032-0004", f"{CARA}-15444-0001", f"{ANN}-5032-0001",
              f"{CARA}-15444-0006", f"{ANN}-5032-0005", f"{CARA}-15444-0003"]

Reference = list[tuple[float, float, str]]  # start, end, speaker


@pytest.fixture
def home(short_home: Path) -> Path:
    (short_home / "config").mkdir()
    (short_home / "config" / "config.toml").write_text('asr_model = "whisper-tiny.en"\n')
    return short_home


def telephone(audio: np.ndarray) -> np.ndarray:
    """The 300-3400 Hz band a telephone line carries."""
    spectrum = np.fft.rfft(audio)
    hz = np.fft.rfftfreq(len(audio), 1 / RATE)
    spectrum[(hz < 300) | (hz > 3400)] = 0
    return np.fft.irfft(spectrum, len(audio)).astype(np.float32)


def conversation(clips: Path, utterances: Sequence[str], out: Path, *, gap_s: float = 0.3,
                 line: Callable[[np.ndarray], np.ndarray] = lambda a: a) -> Reference:
    """The utterances one after another in a mono file, ``gap_s`` apart (shorter than a pause
    that ends an utterance); who spoke when."""
    parts, reference, t = [], [], 0.0
    for name in utterances:
        audio, rate = sf.read(clips / f"{name}.ogg", dtype="float32")
        assert rate == RATE
        parts += [audio, np.zeros(int(gap_s * RATE), np.float32)]
        reference.append((t, t + len(audio) / RATE, name.split("-")[0]))
        t += len(audio) / RATE + gap_s
    sf.write(out, line(np.concatenate(parts)), RATE)
    return reference


def agreement(reference: Reference, turns: Sequence[Turn]) -> tuple[float, dict[str, str]]:
    """Of the reference's speech under the turns, the share whose turn shows its speaker's
    voice, each voice taken as the speaker it holds most of; and that mapping. (The clips'
    silent starts and ends, and the pauses, are in the reference but under no turn.)"""
    held: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for t in turns:
        for start, end, who in reference:
            held[t.speaker][who] += max(0.0, min(end, t.end) - max(start, t.start))
    mapping = {voice: max(by, key=lambda w: by[w]) for voice, by in held.items()}
    right = sum(held[voice][who] for voice, who in mapping.items())
    return right / sum(sum(by.values()) for by in held.values()), mapping


def cli_run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


async def test_a_mono_telephone_call_of_two_people_shows_two_voices(
    home: Path, test_data: Path, tmp_path: Path, installed_model: Callable[[str], Path],
) -> None:
    installed_model("whisper-tiny.en")
    installed_model("campplus-zh-en")
    reference = conversation(test_data / "people", FIRST_CALL, tmp_path / "call.wav",
                             line=telephone)
    async with trio.open_nursery() as nursery:
        daemon: Daemon = await nursery.start(serve, Config.load())
        await trio.to_thread.run_sync(cli_run, "import", str(tmp_path / "call.wav"))
        [session] = daemon.store.list_sessions()
        turns = daemon.store.turns(session.id)
        nursery.cancel_scope.cancel()
    print("\n" + "\n".join(f"  {t.start:5.1f}-{t.end:5.1f} {t.speaker}: {t.text}" for t in turns))
    share, mapping = agreement(reference, turns)
    assert sorted(mapping.values()) == sorted({ANN, BEN}), mapping
    assert share >= 0.9, (share, mapping)


async def test_a_named_voice_is_known_later_a_stranger_is_not_and_names_reach_owners(
    home: Path, test_data: Path, tmp_path: Path, installed_model: Callable[[str], Path],
) -> None:
    installed_model("whisper-tiny.en")
    installed_model("campplus-zh-en")
    clips = test_data / "people"
    first = conversation(clips, FIRST_CALL, tmp_path / "first.wav")
    later = conversation(clips, LATER_CALL, tmp_path / "later.wav")
    async with trio.open_nursery() as nursery:
        daemon: Daemon = await nursery.start(serve, Config.load())
        store = daemon.store

        # the first call: Ann's voice named
        await trio.to_thread.run_sync(cli_run, "import", str(tmp_path / "first.wav"))
        [one] = store.list_sessions()
        _, mapping = agreement(first, store.turns(one.id))
        [ann_voice] = [voice for voice, who in mapping.items() if who == ANN]
        await trio.to_thread.run_sync(cli_run, "voices", "name", ann_voice, "Ann", "--session",
                                      str(one.id))
        named = get_voice(store, "Ann")
        assert {t.speaker for t in store.turns(one.id)} == {"Ann", *(set(mapping) - {ann_voice})}

        # a later call: Ann is known by her voice alone; Cara, a stranger, is never named
        await trio.to_thread.run_sync(cli_run, "import", str(tmp_path / "later.wav"))
        [two] = [s for s in store.list_sessions() if s.id != one.id]
        turns = store.turns(two.id)
        print("\n" + "\n".join(f"  {t.start:5.1f}-{t.end:5.1f} {t.speaker}: {t.text}"
                               for t in turns))
        share, mapping = agreement(later, turns)
        assert mapping.get("Ann") == ANN and len(mapping) == 2, mapping
        assert share >= 0.9, (share, mapping)
        cara_voices = {voice for voice, who in mapping.items() if who == CARA}
        assert cara_voices and all(v.startswith("Them ") for v in cara_voices), mapping

        # confirming Ann there teaches her print from the speech confirmed, bounded
        await trio.to_thread.run_sync(cli_run, "voices", "name", "Ann", "Ann", "--session",
                                      str(two.id))
        confirmed = get_voice(store, "Ann")
        assert confirmed.seconds > named.seconds
        moved = float(confirmed.voiceprint @ named.voiceprint)
        assert 0.9 < moved < 0.99999, moved

        # a wrong confirmation (Cara named Ann) moves the print by at most a quarter of the way
        [cara] = cara_voices
        await trio.to_thread.run_sync(cli_run, "voices", "name", cara, "Ann", "--session",
                                      str(two.id))
        misled = get_voice(store, "Ann")
        cara_print = daemon.live.voices.session(two.id).find(cara)  # type: ignore[union-attr]
        assert cara_print is not None
        assert (float(misled.voiceprint @ confirmed.voiceprint)
                > float(misled.voiceprint @ cara_print.centroid))
        shown = await trio.to_thread.run_sync(cli_run, "voices", "show", "Ann")
        assert f"rests on {misled.seconds:.0f} s of speech" in shown, shown
        assert "last heard" in shown, shown

        # an action item of the later call owned by Ann follows her rename
        store.add_assertion(NewAssertion(kind="commitment", text="Ann will send the draft.",
                                         source="user", session_id=two.id, owner="Ann"))
        await trio.to_thread.run_sync(cli_run, "voices", "name", str(misled.id), "Annie")
        [item] = [a for a in store.list_assertions(session_id=two.id)
                  if a.kind == "commitment"]
        speakers = {t.speaker for t in store.turns(two.id)}
        nursery.cancel_scope.cancel()
    assert (item.owner, item.text) == ("Annie", "Annie will send the draft.")
    assert "Annie" in speakers and "Ann" not in speakers

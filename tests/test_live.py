"""Live capture to turns, fast: synthetic blocks, a scripted transcriber, a real store, trio's
mock clock (virtual time jumps whenever every task waits, so minutes of audio take milliseconds).

The scripted transcriber "recognises" a tone by its pitch, so what each utterance says is known.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile
import trio
import trio.testing
from storekit import CountingEmbedder

from daemon.asr.engine import ScriptedTranscriber, Segment
from daemon.asr.threads import ThreadChooser
from daemon.audio.capture import BLOCK, IDLE_BLOCK, QUIET_BLOCK, Block, Source
from daemon.audio.format import SAMPLE_RATE
from daemon.config import Settings
from daemon.errors import AudioError, InvalidInput, NotFound
from daemon.live.actor import Live
from daemon.live.pipeline import Heard, UtteranceQueue
from daemon.live.records import (
    Began,
    CaptureChanged,
    Ended,
    ImportedSoFar,
    ImportOptions,
    LiveEvent,
    StartOptions,
)
from daemon.llm.embed import EmbedProgress
from daemon.sensitive import judge
from daemon.store.records import Turn
from daemon.store.store import Store

T0 = 1_785_000_000.0
BLOCK_S = BLOCK / SAMPLE_RATE
WORDS = {
    220: "alpha budget review for the quarter",
    330: "bravo pricing question from the vendor",
    440: "charlie deadline moves to friday",
    550: "delta hiring plan for the platform team",
}


def tone(seconds: float, freq: int, amplitude: float = 0.1) -> np.ndarray:
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    envelope = 0.6 + 0.4 * np.sin(2 * np.pi * 4 * t)
    return (amplitude * envelope * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * SAMPLE_RATE), dtype=np.float32)


def noise(seconds: float, rms: float) -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.normal(0, rms, int(seconds * SAMPLE_RATE)).astype(np.float32)


def recognise(audio: np.ndarray) -> list[Segment]:
    """What the scripted whisper hears: the words of the loudest known pitch, or a phantom."""
    spectrum = np.abs(np.fft.rfft(audio))
    freqs = np.fft.rfftfreq(len(audio), 1 / SAMPLE_RATE)
    pitch = freqs[int(np.argmax(spectrum))]
    for freq, words in WORDS.items():
        if abs(pitch - freq) < 5:
            return [Segment(0.0, len(audio) / SAMPLE_RATE, " " + words)]
    return [Segment(0.0, 1.0, " Thank you.")]


class SlowTranscriber(ScriptedTranscriber):
    """Takes ``seconds`` of (virtual) time per utterance."""

    def __init__(self, seconds: float) -> None:
        super().__init__(recognise)
        self.seconds = seconds

    async def transcribe(self, audio: np.ndarray, threads: int = 0) -> list[Segment]:
        await trio.sleep(self.seconds)
        return self.transcribe_sync(audio)


def clock() -> float:
    return T0 + trio.current_time()


async def inline(fn: Callable[[], Any]) -> Any:
    """Store calls on the trio thread: no thread for the mock clock to jump past."""
    return fn()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "data")
    yield s
    s.close()


class Rig:
    def __init__(self, live: Live, events: list[LiveEvent], transcriber: ScriptedTranscriber) -> None:
        self.live = live
        self.events = events
        self.transcriber = transcriber

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    async def play(self, mic: np.ndarray | None = None, loopback: np.ndarray | None = None,
                   epoch: int = 1) -> None:
        """Deliver both sources block by block in (virtual) real time; a missing source is
        silent."""
        given: dict[Source, np.ndarray] = {"mic": silence(0) if mic is None else mic,
                 "loopback": silence(0) if loopback is None else loopback}
        n = max(len(a) for a in given.values())
        tracks = {source: np.pad(a, (0, n - len(a))) for source, a in given.items()}
        assert self.live.pipeline is not None
        for i in range(0, n, BLOCK):
            await trio.sleep(BLOCK_S)
            for source, audio in tracks.items():
                self.live.pipeline.channel.put(
                    Block(source, clock() - BLOCK_S, epoch, audio[i : i + BLOCK])
                )
        await trio.sleep(BLOCK_S)


@asynccontextmanager
async def running(store: Store, *, settings: Settings | None = None,
                  transcriber: ScriptedTranscriber | None = None, **kwargs: Any,
                  ) -> AsyncIterator[Rig]:
    events: list[LiveEvent] = []
    transcriber = transcriber or ScriptedTranscriber(recognise)
    current = settings or Settings(auto_start=False)
    live = Live(store, lambda: current, Path("/nonexistent-models"), events.append,
                capture=False, clock=clock, call=inline, transcriber=transcriber, **kwargs)
    async with trio.open_nursery() as nursery:
        await nursery.start(live.run)
        yield Rig(live, events, transcriber)
        nursery.cancel_scope.cancel()


def dialogue(*turns: tuple[str, int], talk: float = 1.5, pause: float = 1.0,
             tail: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    """Alternating speech on the two sources: (source, pitch) per turn."""
    mic: list[np.ndarray] = []
    loop: list[np.ndarray] = []
    for source, freq in turns:
        speech, quiet = tone(talk, freq), silence(talk)
        mic += [speech if source == "mic" else quiet, silence(pause)]
        loop += [speech if source == "loopback" else quiet, silence(pause)]
    mic.append(silence(tail))
    loop.append(silence(tail))
    return np.concatenate(mic), np.concatenate(loop)


# ---------------------------------------------------------------------------------------------


async def test_a_dialogue_becomes_turns_labelled_me_and_them_in_session_time(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    async with running(store) as rig:
        started = await rig.live.start(StartOptions(title="weekly"))
        mic, loop = dialogue(("mic", 220), ("loopback", 330), ("mic", 440), ("loopback", 550))
        await rig.play(mic, loop)
        stopped = await rig.live.stop()

    turns = store.turns(started.session_id)
    assert [(t.speaker, t.source, t.text) for t in turns] == [
        ("me", "mic", WORDS[220]),
        ("them", "loopback", WORDS[330]),
        ("me", "mic", WORDS[440]),
        ("them", "loopback", WORDS[550]),
    ]
    # each turn 1.5 s long, 2.5 s apart from the start (give or take the VAD's pre-roll)
    for i, turn in enumerate(turns):
        assert turn.start == pytest.approx(2.5 * i, abs=0.3)
        assert turn.end == pytest.approx(turn.start + 1.5, abs=0.4)
    assert [t.start for t in turns] == sorted(t.start for t in turns)

    assert [e.text for e in rig.of(Turn)] == [t.text for t in turns]
    assert [e.session_id for e in rig.of(Began)] == [started.session_id]
    [ended] = rig.of(Ended)
    assert ended.session_id == stopped.session_id == started.session_id
    assert ended.gist == WORDS[550]  # the turn with the most content words
    assert ended.space is None
    assert stopped.turns == 4
    assert ended.duration_s == pytest.approx(4 * 2.5 + 2.0 + 2 * BLOCK_S, abs=0.5)
    assert store.get_session(started.session_id).status == "ended"


async def test_the_speech_model_is_unloaded_when_unused_and_loaded_again_for_the_first_word(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    settings = Settings(auto_start=False, idle_unload_min=0.5)  # 30 s
    async with running(store, settings=settings) as rig:
        started = await rig.live.start(StartOptions())
        await rig.play(mic=np.concatenate([tone(1.5, 220), silence(1.0)]))
        assert rig.live.speech_model_loaded() == "scripted"
        await rig.play(silence(25.0))  # nobody speaks, not yet long enough
        assert rig.transcriber.unloads == 0
        await rig.play(silence(10.0))
        assert rig.transcriber.unloads == 1 and rig.live.speech_model_loaded() is None
        unloaded_at = rig.live.speech_unloaded_at
        # 30 s after the model's last use (the utterance's transcription, after its tone ended at
        # 1.5 s), at the first of the looks 3 s apart that comes after
        used = rig.live._speech_used_at
        assert 1.5 < used < 5.0
        assert unloaded_at is not None and used + 30.0 <= unloaded_at - T0 <= used + 33.0
        await rig.play(silence(60.0))  # unloaded once
        assert rig.transcriber.unloads == 1
        # the next words load it again, and are transcribed whole
        await rig.play(loopback=np.concatenate([tone(1.5, 440), silence(1.0)]))
        assert rig.live.speech_model_loaded() == "scripted"
        await rig.live.stop()
    assert [t.text for t in store.turns(started.session_id)] == [WORDS[220], WORDS[440]]


async def test_each_call_that_begins_loads_the_speech_model_before_anyone_speaks(
    autojump_clock: trio.testing.MockClock, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(auto_start=False, idle_unload_min=0.5)
    gate_prepared: list[bool] = []
    monkeypatch.setattr(judge, "prepare", lambda: gate_prepared.append(True))
    async with running(store, settings=settings, preload=True) as rig:
        await rig.play(silence(5.0))
        assert rig.live.speech_model_loaded() is None and not gate_prepared  # no call yet
        await rig.live.start(StartOptions())
        await rig.play(silence(5.0))
        assert rig.live.speech_model_loaded() == "scripted" and rig.transcriber.calls == []
        assert gate_prepared  # the secret gate's word vectors read too
        await rig.play(silence(40.0))  # a quiet call: unloaded when unused, as any time
        assert rig.transcriber.unloads == 1 and rig.live.speech_model_loaded() is None
        await rig.live.stop()
        second = await rig.live.start(StartOptions())
        await rig.play(silence(2.0))
        assert rig.live.speech_model_loaded() == "scripted"  # loaded again for the next call
        await rig.play(mic=np.concatenate([tone(1.5, 220), silence(1.0)]))
        await rig.live.stop()
    assert [t.text for t in store.turns(second.session_id)] == [WORDS[220]]
    assert rig.transcriber.unloads == 1


async def test_a_turn_is_shown_once_stored_and_made_searchable_by_meaning_after(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    shown: list[Any] = []  # the rig's events, once it runs
    embedded: list[tuple[str, set[str]]] = []  # each text embedded, and the turns shown then

    class Noting(CountingEmbedder):
        def embed_sync(self, texts: Sequence[str], progress: EmbedProgress | None = None
                       ) -> np.ndarray:
            said = {e.text for e in shown if isinstance(e, Turn)}
            embedded.extend((text, said) for text in texts)
            return super().embed_sync(texts, progress)

    store = Store(tmp_path / "data", Noting())
    async with running(store) as rig:
        shown = rig.events
        started = await rig.live.start(StartOptions())
        mic, loop = dialogue(("mic", 220), ("loopback", 440), ("mic", 330))
        await rig.play(mic, loop)
        await rig.live.stop()
    turns = store.turns(started.session_id)
    assert [t.text for t in turns] == [WORDS[220], WORDS[440], WORDS[330]]
    for turn in turns:  # embedded (its view, its chunk), never before it was shown
        views = [said for text, said in embedded if turn.text in text]
        assert views and all(turn.text in said for said in views), turn.text
    # and every one searchable by meaning once the call ended
    assert store.db.read(lambda conn: conn.execute(
        "SELECT count(*) FROM embeddings WHERE owner_kind = 'turn'").get) == 3
    store.close()


async def test_whisper_gets_the_cores_that_the_load_since_speech_began_leaves_free(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    busy_until = 0.0  # both cores busy until then (the clock's seconds), idle after

    def ticks() -> tuple[int, int]:  # /proc/stat's (busy, total) of two cores at 100 Hz
        now = trio.current_time()
        return round(200 * min(now, busy_until)), round(200 * now)

    chooser = ThreadChooser(cores=2, ticks=ticks, clock=trio.current_time)
    async with running(store, chooser=chooser) as rig:
        await rig.live.start(StartOptions())
        # work that waits for a pause (reading ahead) fills both cores until someone speaks
        busy_until = trio.current_time() + 5.0
        await rig.play(mic=np.concatenate([silence(5.0), tone(2.0, 220), silence(1.0)]))
        busy_until = trio.current_time() + 60.0  # other work that goes on while they speak
        await rig.play(mic=np.concatenate([tone(2.0, 330), silence(1.0)]))
        await rig.live.stop()
    assert rig.transcriber.threads == [2, 1]


async def test_the_speech_model_stays_while_someone_speaks_or_waits_for_it(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    # unused for 1.2 s unloads it; a monologue of 9 s that follows a turn at once, and an
    # utterance whose transcription takes longer than that, never see it go
    settings = Settings(auto_start=False, idle_unload_min=0.02)
    slow = SlowTranscriber(seconds=3.0)
    async with running(store, settings=settings, transcriber=slow) as rig:
        started = await rig.live.start(StartOptions())
        await rig.play(mic=np.concatenate([tone(1.5, 220), silence(0.6), tone(9.0, 330),
                                           silence(8.0)]))
        await rig.live.stop()
    assert [t.text for t in store.turns(started.session_id)] == [WORDS[220], WORDS[330]]
    assert slow.unloads == 1  # once both were transcribed and nothing was said: not between


async def test_stop_keeps_the_words_being_said_at_that_moment(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    async with running(store) as rig:
        started = await rig.live.start(StartOptions())
        await rig.play(mic=tone(1.0, 440))  # no pause after it: still talking at the stop
        await rig.live.stop()
    assert [t.text for t in store.turns(started.session_id)] == [WORDS[440]]


async def test_a_stop_after_the_daemon_stalled_keeps_what_was_heard_before_it(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    # a machine so busy that the daemon did not run for a while: when it runs again, the stop
    # that came meanwhile may be handled before the capture threads hand over the audio heard
    # until then, and every source's last block looks older than settle's flowing_s. Taken
    # for stopped sources, they were cut without their last utterance, which was lost
    async with running(store) as rig:
        started = await rig.live.start(StartOptions())
        await rig.play(loopback=silence(1.0))
        pipeline = rig.live.pipeline
        assert pipeline is not None
        heard = {"loopback": np.concatenate([tone(1.5, 330), silence(1.0)]),
                 "mic": silence(2.5)}
        began = clock()
        autojump_clock.jump(2.5 + 1.5)  # the stall: the audio was heard, nothing ran
        async with trio.open_nursery() as nursery:
            nursery.start_soon(rig.live.stop)
            await trio.sleep(BLOCK_S)  # then the backlog comes in
            for k, i in enumerate(range(0, len(heard["mic"]), BLOCK)):
                for source, audio in heard.items():
                    pipeline.channel.put(Block(source, began + k * BLOCK_S, 1,  # type: ignore[arg-type]
                                               audio[i : i + BLOCK]))
    assert [t.text for t in store.turns(started.session_id)] == [WORDS[330]]


async def test_a_stop_that_cannot_wait_for_transcription_says_what_it_leaves_out(
    autojump_clock: trio.testing.MockClock, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(store, transcriber=SlowTranscriber(seconds=100.0)) as rig:
        started = await rig.live.start(StartOptions())
        await rig.play(loopback=np.concatenate([tone(1.5, 330), silence(1.0)]))
        with caplog.at_level(logging.WARNING, logger="daemon.live.actor"):
            await rig.live.stop()
    assert store.turns(started.session_id) == []
    assert f"session {started.session_id} ends with 1 utterance(s) not yet transcribed" in (
        caplog.text)


async def test_silence_and_noise_give_no_turn_and_phantoms_are_dropped(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    async with running(store) as rig:
        started = await rig.live.start(StartOptions())
        await rig.play(mic=silence(60), loopback=silence(60))
        await rig.play(mic=noise(60, rms=0.003), loopback=noise(60, rms=0.003))
        # a loud click train the VAD takes for speech: whisper's "Thank you." is dropped
        await rig.play(mic=np.concatenate([noise(1.0, rms=0.2), silence(2)]))
        await rig.live.stop()
    assert store.turns(started.session_id) == []
    assert rig.live.phantoms == 1
    assert rig.of(Turn) == []


async def test_a_monologue_is_stored_piece_by_piece_while_it_goes_on(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    # 30 s of speech whose pauses (0.25 s) are too short to end an utterance
    talk = np.concatenate([np.concatenate([tone(2.25, 220), tone(0.25, 220, amplitude=0.001)])
                           for _ in range(12)])
    async with running(store) as rig:
        started = await rig.live.start(StartOptions())
        await rig.play(mic=talk[: 12 * SAMPLE_RATE])
        first = store.turns(started.session_id)  # 12 s in, still talking
        await rig.play(mic=np.concatenate([talk[12 * SAMPLE_RATE :], silence(2)]))
        await rig.live.stop()
    turns = store.turns(started.session_id)
    assert len(first) == 1 and first[0].end <= 10.5
    assert len(turns) >= 3 and all(t.end - t.start <= 10.0 + 1e-6 for t in turns)
    assert turns[-1].end == pytest.approx(30.0, abs=0.5)


async def test_a_quiet_source_is_still_heard_and_the_user_told_once(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    async with running(store) as rig:
        started = await rig.live.start(StartOptions())
        soft = np.concatenate([tone(1.5, 220, amplitude=0.002), silence(2)])  # -54 dBFS peaks
        await rig.play(mic=np.concatenate([soft, soft]), loopback=np.concatenate(
            [tone(1.5, 330), silence(2)]))
        await rig.live.stop()
    assert [t.text for t in store.turns(started.session_id)] == [WORDS[220], WORDS[330],
                                                                 WORDS[220]]
    notes = [e.message for e in rig.of(CaptureChanged) if "quiet" in e.message]
    assert len(notes) == 1 and notes[0].startswith("mic input is very quiet")


async def test_nothing_is_transcribed_or_stored_outside_a_session_without_auto_start(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    async with running(store, settings=Settings(auto_start=False)) as rig:
        mic, loop = dialogue(("mic", 220), ("loopback", 330))
        await rig.play(mic, loop)
        assert rig.live.pipeline is not None and rig.live.pipeline.utterances == 2
    assert rig.transcriber.calls == []
    assert store.list_sessions() == []


async def test_speech_on_both_sources_starts_a_session_that_holds_its_first_words(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    settings = Settings(auto_start=True, auto_end_silence_min=1.0)
    async with running(store, settings=settings) as rig:
        await rig.play(mic=np.concatenate([tone(1.5, 220), silence(2)]))
        assert store.list_sessions() == []  # one source alone: not a call
        t_first = clock() - 3.5
        await rig.play(loopback=np.concatenate([tone(1.5, 330), silence(2)]))
        [session] = store.list_sessions()
        assert session.status == "live"
        assert session.started_at == pytest.approx(t_first, abs=0.3)
        assert [t.text for t in store.turns(session.id)] == [WORDS[220], WORDS[330]]
        assert [e.session_id for e in rig.of(Began)] == [session.id]

        last_speech = session.started_at + store.turns(session.id)[-1].end
        await trio.sleep(61)  # a minute of silence (no audio at all)
        ended = store.get_session(session.id)
        assert ended.status == "ended"
        assert ended.ended_at == pytest.approx(last_speech)
        [prompt] = rig.of(Ended)
        assert prompt.session_id == session.id
        assert prompt.gist == WORDS[220]  # as content-rich as the other: the earlier wins


async def test_a_quiet_source_is_read_in_larger_pieces_the_largest_between_calls(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    async with running(store) as rig:
        read = rig.live._read_frames  # what each capture thread is told to read next
        assert read("mic") == BLOCK  # nothing heard yet
        await rig.play(mic=silence(3), loopback=silence(3))
        assert read("mic") == read("loopback") == QUIET_BLOCK
        await rig.play(mic=silence(30), loopback=silence(30))
        assert read("mic") == read("loopback") == IDLE_BLOCK
        await rig.live.start(StartOptions())
        assert read("mic") == QUIET_BLOCK  # in a call a short reply never waits for a second
        await rig.play(mic=tone(1.5, 220), loopback=silence(1.5))
        assert read("mic") == BLOCK and read("loopback") == QUIET_BLOCK


async def test_speech_on_both_sources_far_apart_starts_nothing(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    async with running(store, settings=Settings(auto_start=True)) as rig:
        await rig.play(mic=np.concatenate([tone(1.5, 220), silence(40)]))
        await rig.play(loopback=np.concatenate([tone(1.5, 330), silence(2)]))
    assert store.list_sessions() == []


async def test_after_a_stop_the_same_conversation_does_not_start_again(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    async with running(store, settings=Settings(auto_start=True)) as rig:
        await rig.live.start(StartOptions())
        await rig.live.stop()
        mic, loop = dialogue(("mic", 220), ("loopback", 330))
        await rig.play(mic, loop)
        assert [s.status for s in store.list_sessions()] == ["ended"]


async def test_a_backlog_is_reported_and_old_blocks_are_dropped_not_capture_blocked(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    slow = SlowTranscriber(seconds=20.0)
    async with running(store, transcriber=slow, block_backlog=10, queue_capacity=2) as rig:
        await rig.live.start(StartOptions())
        turns = [("mic", 220), ("loopback", 330)] * 4
        mic, loop = dialogue(*turns, talk=1.0, pause=0.8)
        await rig.play(mic, loop)  # returns: feeding never waited for transcription
        status = rig.live.status()
        assert status.utterances_queued == 3  # two queued, one being transcribed
        assert status.asr_lag_s > 5
        assert status.dropped_blocks > 0
        await trio.sleep(30)  # the first utterance (1 s of tone and the VAD's margins) is done
        assert 20 / 1.5 < rig.live.status().asr_real_time_factor < 20 / 1.0
        assert status.session_id is not None
        assert set(status.sources) == {"mic", "loopback"}
        assert status.sources["mic"].state == "off"


async def test_status_says_where_the_time_from_speech_to_turn_goes_and_when_it_is_heard(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    slow = SlowTranscriber(seconds=0.4)
    async with running(store, transcriber=slow) as rig:
        await rig.live.start(StartOptions())
        assert not rig.live.hearing()
        mic, loop = dialogue(("mic", 220), ("loopback", 330), talk=1.5, pause=3.0, tail=0)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(rig.play, mic, loop)
            await trio.sleep(1.0)  # the first turn is being said
            assert rig.live.hearing()
        await trio.sleep(3.0)  # both stored
        assert not rig.live.hearing()
        stages = rig.live.status().stages_p50_s
        longest = rig.live.status().after_asr_max_s
    assert longest >= stages["voices"] + stages["stored"] and longest < 1.0
    assert list(stages) == ["cut", "queued", "asr", "voices", "stored", "total"]
    # the VAD waits 0.5 s of silence and keeps 0.15 s of it: cut 0.35 s after the audio
    # ends, give or take a block
    assert stages["cut"] == pytest.approx(0.35, abs=BLOCK_S + 0.02)
    assert stages["queued"] == 0.0  # nothing ahead of it
    assert stages["asr"] == pytest.approx(0.4)
    assert stages["total"] == pytest.approx(sum(v for k, v in stages.items() if k != "total"))


async def test_the_utterance_that_ended_first_is_transcribed_first() -> None:
    queue = UtteranceQueue(capacity=4)
    audio = silence(0.1)
    await queue.put(Heard("mic", 0.0, 9.0, audio))  # cut at the maximum length: queued at once
    await queue.put(Heard("loopback", 5.0, 8.4, audio))  # ended earlier, queued after
    await queue.put(Heard("mic", 9.0, 12.0, audio))
    assert [(await queue.get()).end for _ in range(3)] == [8.4, 9.0, 12.0]


async def test_a_full_utterance_queue_makes_the_producer_wait(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue = UtteranceQueue(capacity=1)
    audio = silence(0.1)
    await queue.put(Heard("mic", 0.0, 1.0, audio))
    with trio.move_on_after(1) as waited:
        await queue.put(Heard("mic", 1.0, 2.0, audio))
    assert waited.cancelled_caught and len(queue) == 1


# -- starting --------------------------------------------------------------------------------


async def test_start_says_what_survives_and_an_interview_needs_a_space(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    space = store.create_space("Acme", activity="job")
    async with running(store) as rig:
        with pytest.raises(InvalidInput, match="needs a Space"):
            await rig.live.start(StartOptions(activity="job"))
        with pytest.raises(NotFound):
            await rig.live.start(StartOptions(space="Nowhere"))
        assert store.list_sessions() == []

        plain = await rig.live.start(StartOptions(title="chat"))
        assert plain.message == (f"session {plain.session_id} started: nothing is summarised "
                                 "or remembered — pick a Space for that")
        assert plain.activity == "meeting" and plain.space is None

        # starting again gives the live session a Space (and the Space's kind)
        filed = await rig.live.start(StartOptions(space="acme"))
        assert filed.session_id == plain.session_id
        assert filed.message.endswith("a summary and memory suggestions will be filed into Acme")
        assert "continues" in filed.message
        session = store.get_session(plain.session_id)
        assert (session.space_id, session.activity, session.title) == (space.id, "job", "chat")
        stopped = await rig.live.stop()
        assert stopped.space == "Acme"
        with pytest.raises(InvalidInput, match="no session is live"):
            await rig.live.stop()

        interview = await rig.live.start(StartOptions(space="Acme", title="round 2"))
        assert interview.activity == "job"
        assert "filed into Acme" in interview.message


async def test_sessions_left_live_by_a_crash_are_ended_at_their_last_turn(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    from daemon.store.records import NewTurn

    left = store.create_session(started_at=T0 - 1000)
    store.append_turns(left.id, [NewTurn(speaker="me", text="unfinished", start=3, end=12)])
    async with running(store):
        pass
    ended = store.get_session(left.id)
    assert ended.status == "ended" and ended.ended_at == T0 - 1000 + 12


# -- importing -------------------------------------------------------------------------------


def _write(path: Path, *channels: np.ndarray, rate: int = 44100) -> Path:
    import soxr

    resampled = [soxr.resample(c, SAMPLE_RATE, rate) for c in channels]
    soundfile.write(path, np.stack(resampled, axis=1), rate)
    return path


async def test_import_of_a_mono_file_is_one_speaker_with_progress(
    autojump_clock: trio.testing.MockClock, store: Store, tmp_path: Path
) -> None:
    audio = np.concatenate([silence(1), tone(2, 220), silence(1.5), tone(2, 440), silence(1)])
    path = _write(tmp_path / "memo.wav", audio)
    async with running(store) as rig:
        progress: list[ImportedSoFar] = []
        reply = await rig.live.import_audio(
            ImportOptions(path=path, started_at=T0 - 3600), progress.append)
    turns = store.turns(reply.session_id)
    assert [(t.speaker, t.source, t.text) for t in turns] == [
        ("me", "import", WORDS[220]), ("me", "import", WORDS[440])]
    assert turns[0].start == pytest.approx(1.0, abs=0.3)
    assert turns[1].start == pytest.approx(4.5, abs=0.3)
    session = store.get_session(reply.session_id)
    assert session.status == "ended" and session.title == "memo"
    assert session.started_at == T0 - 3600
    assert reply.turns == 2 and reply.duration_s == pytest.approx(7.5, abs=0.01)
    assert "nothing is summarised" in reply.message
    assert [p.done_s for p in progress] == sorted(p.done_s for p in progress)
    assert progress[-1].done_s == progress[-1].total_s and progress[-1].turns == 2
    [ended] = rig.of(Ended)
    assert (ended.session_id, ended.turns, ended.speakers) == (reply.session_id, 2, ["me"])


async def test_import_of_a_stereo_file_takes_left_as_me_and_right_as_them(
    autojump_clock: trio.testing.MockClock, store: Store, tmp_path: Path
) -> None:
    left = np.concatenate([silence(0.5), tone(2, 220), silence(4)])
    right = np.concatenate([silence(3.5), tone(2, 330), silence(1)])
    path = _write(tmp_path / "call.flac", left, right)
    store.create_space("Atlas")
    async with running(store) as rig:
        reply = await rig.live.import_audio(
            ImportOptions(path=path, stereo=True, space="Atlas", title="Atlas sync"),
            lambda e: None)
        assert [(t.speaker, t.text) for t in store.turns(reply.session_id)] == [
            ("me", WORDS[220]), ("them", WORDS[330])]
        assert "filed into Atlas" in reply.message
        assert store.get_session(reply.session_id).title == "Atlas sync"

        mono = _write(tmp_path / "mono.wav", left)
        with pytest.raises(InvalidInput, match="two channels"):
            await rig.live.import_audio(ImportOptions(path=mono, stereo=True), lambda e: None)
        with pytest.raises(InvalidInput, match="not absolute"):
            await rig.live.import_audio(ImportOptions(path=Path("call.flac")), lambda e: None)
        with pytest.raises(InvalidInput, match="needs a Space"):
            await rig.live.import_audio(ImportOptions(path=mono, activity="job"),
                                        lambda e: None)
        (tmp_path / "notes.wav").write_text("not audio")
        with pytest.raises(AudioError, match="cannot read audio file"):
            await rig.live.import_audio(ImportOptions(path=tmp_path / "notes.wav"),
                                        lambda e: None)
    assert len(store.list_sessions()) == 1  # refused imports leave nothing behind


async def test_pausing_cuts_what_is_being_said_and_reports_paused(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    async with running(store) as rig:
        started = await rig.live.start(StartOptions())
        await rig.play(mic=tone(1.0, 220))  # still talking when the pause comes
        await rig.live.pause(True)
        await rig.live.stop()
        assert [t.text for t in store.turns(started.session_id)] == [WORDS[220]]
        assert rig.live.capture_state() == "paused"
        assert {s.state for s in rig.live.status().sources.values()} == {"paused"}
        await rig.live.pause(False)
        assert rig.live.capture_state() == "off"  # this rig has no capture threads
    assert [e.message for e in rig.of(CaptureChanged)] == ["listening paused", "listening again"]
    assert [e.capture for e in rig.of(CaptureChanged)] == ["paused", "off"]


async def test_turns_the_store_refuses_are_held_and_saved_in_order_once_it_can(
    autojump_clock: trio.testing.MockClock, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from daemon.errors import StoreError

    append = store.append_turns
    disk_full = False

    def append_unless_full(session_id: int, turns: Any, **kwargs: Any) -> Any:
        if disk_full:  # what the store raises for SQLITE_FULL
            raise StoreError("the disk is full", fix="free some disk space and try again")
        return append(session_id, turns, **kwargs)

    monkeypatch.setattr(store, "append_turns", append_unless_full)
    async with running(store) as rig:
        started = await rig.live.start(StartOptions())
        await rig.play(mic=np.concatenate([tone(1.5, 220), silence(1.0)]))
        disk_full = True
        await rig.play(loopback=np.concatenate([tone(1.5, 330), silence(1.0)]))
        await rig.play(mic=np.concatenate([tone(1.5, 440), silence(1.0)]))
        assert [t.text for t in store.turns(started.session_id)] == [WORDS[220]]
        disk_full = False  # space was freed
        await rig.play(loopback=np.concatenate([tone(1.5, 550), silence(1.0)]))
        await rig.live.stop()
    turns = store.turns(started.session_id)
    assert [(t.speaker, t.text) for t in turns] == [
        ("me", WORDS[220]), ("them", WORDS[330]), ("me", WORDS[440]), ("them", WORDS[550])
    ]
    assert [t.start for t in turns] == sorted(t.start for t in turns)
    messages = [e.message for e in rig.of(CaptureChanged)]
    assert messages[0] == ("what is heard is not saved yet: the disk is full"
                           " — free some disk space and try again")
    assert "2 held turn(s) saved" in messages
    assert [e.text for e in rig.of(Turn)] == [t.text for t in turns]
    assert rig.live.pipeline is not None and rig.live.pipeline.failed == 0


async def test_turns_held_at_a_stop_are_saved_by_it(
    autojump_clock: trio.testing.MockClock, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from daemon.errors import StoreError

    append = store.append_turns
    refusals = iter([True])

    def flaky_append(session_id: int, turns: Any, **kwargs: Any) -> Any:
        if next(refusals, False):
            raise StoreError("the disk is full")
        return append(session_id, turns, **kwargs)

    monkeypatch.setattr(store, "append_turns", flaky_append)
    async with running(store) as rig:
        started = await rig.live.start(StartOptions())
        await rig.play(mic=np.concatenate([tone(1.5, 220), silence(1.0)]))
        await rig.live.stop()
    assert [t.text for t in store.turns(started.session_id)] == [WORDS[220]]


async def test_a_changed_speech_model_setting_applies_from_the_next_utterance(
    tmp_path: Path, store: Store
) -> None:
    for name in ("whisper-tiny.en.bin", "whisper-base.bin"):
        (tmp_path / name).write_bytes(b"ggml")  # loaded only on first use, never here
    settings = Settings(asr_model="whisper-tiny.en", asr_threads=1)
    live = Live(store, lambda: settings, tmp_path, lambda event: None, capture=False)
    first = live._speech_model()
    assert first is not None and first.model_id == "whisper-tiny.en"
    assert live._speech_model() is first

    settings = Settings(asr_model="whisper-base", asr_threads=1)
    second = live._speech_model()
    assert second is not None and second is not first and second.model_id == "whisper-base"

    settings = Settings(asr_model="whisper-base", asr_threads=2)
    third = live._speech_model()
    assert third is not second and live.status().asr_model == "whisper-base"
    assert live.speech_model_loaded() is None  # made; it loads on its first utterance

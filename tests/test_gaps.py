"""The capture receipt's bookkeeping (daemon.live.gaps), fed block by block without audio.

The real thing — a PulseAudio mic unplugged and silenced under a live daemon — is in
tests/test_receipts_e2e.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import apsw
import pytest

from daemon.errors import InvalidInput, NotFound
from daemon.live.gaps import GapTracker, cause_of, receipt_text
from daemon.store.receipts import CaptureGap, Receipt, receipt, receipts, save_receipt
from daemon.store.store import Store

T0 = 1_000.0  # the session starts here (wall-clock seconds)
STEP = 0.1


def feed(tracker: GapTracker, start: float, end: float, *,
         them_speaking: Callable[[float], bool] = lambda t: False,
         me_speaking: Callable[[float], bool] = lambda t: False,
         sources: tuple[str, ...] = ("mic", "loopback"), epoch: int = 1) -> list[str]:
    """Blocks of both sources from ``start`` to ``end`` (session seconds), interleaved as
    capture delivers them; the alerts' messages."""
    alerts = []
    steps = round((end - start) / STEP)
    for i in range(steps):
        t = start + i * STEP
        for source in sources:
            speaking = (me_speaking if source == "mic" else them_speaking)(t)
            alerts += [a.message for a in tracker.block(source, T0 + t, STEP, epoch, speaking)]
    return alerts


def tracker(**kwargs: float) -> GapTracker:
    heard = {"mic": T0, "loopback": T0}
    return GapTracker(T0, kwargs.get("silent_mic_s", 120.0), heard_until=dict(heard),
                      epochs={"mic": 1, "loopback": 1})


def test_a_session_heard_throughout_says_so() -> None:
    t = tracker()
    assert feed(t, 0, 60, them_speaking=lambda s: s % 10 < 5, me_speaking=lambda s: s > 50) == []
    receipt = t.receipt(T0 + 60)
    assert receipt.gaps == ()
    assert receipt.heard_s == {"mic": 60.0, "loopback": 60.0}
    assert receipt_text(receipt) == "heard 01:00 of 01:00"


def test_an_unplugged_mic_is_a_gap_told_at_once_and_named_with_its_times() -> None:
    t = tracker()
    feed(t, 0, 10)
    alert = t.no_audio("mic", T0 + 11.0, cause_of("Remapped Monitor of mic is gone"),
                       "Remapped Monitor of mic is gone")
    assert alert is not None and "me: nothing heard since 00:10 (device lost" in alert.message
    assert t.no_audio("mic", T0 + 12.0, "device lost") is None  # told once
    # the other side goes on; the mic comes back at 40 s
    feed(t, 10, 40, sources=("loopback",), them_speaking=lambda s: True)
    assert feed(t, 40, 50, epoch=2) == []  # already told
    receipt = t.receipt(T0 + 50)
    assert receipt.gaps == (CaptureGap("mic", "device lost", 10.0, 40.0,
                                       "Remapped Monitor of mic is gone"),)
    assert receipt.heard_s == {"mic": 20.0, "loopback": 50.0}
    assert receipt_text(receipt) == (
        "heard me 00:20, them 00:50 of 00:50 — me 00:10–00:40: device lost "
        "(Remapped Monitor of mic is gone)")


def test_a_mic_silent_while_they_talk_is_told_at_the_threshold_and_kept() -> None:
    t = tracker(silent_mic_s=30.0)
    feed(t, 0, 5, me_speaking=lambda s: True)
    alerts = feed(t, 5, 50, them_speaking=lambda s: 8 <= s < 45)
    assert alerts == ["me: the mic has been silent since 00:08 while they talked: is it muted?"]
    feed(t, 50, 55, me_speaking=lambda s: True)  # the user unmutes and speaks
    feed(t, 55, 70, them_speaking=lambda s: True)  # shorter than the threshold: nothing
    receipt = t.receipt(T0 + 70)
    assert receipt.gaps == (CaptureGap("mic", "mic silent", 8.0, 45.0),)
    assert receipt.heard_s == {"mic": 70.0, "loopback": 70.0}  # it was captured, only silent
    assert "me 00:08–00:45: silent while they talked (muted?)" in receipt_text(receipt)


def test_a_mic_still_silent_when_the_session_ends_is_in_its_receipt() -> None:
    t = tracker(silent_mic_s=10.0)
    feed(t, 0, 30, them_speaking=lambda s: True)
    assert t.receipt(T0 + 30).gaps == (CaptureGap("mic", "mic silent", 0.0, 30.0),)


def test_a_mic_that_is_gone_is_not_also_said_to_be_silent() -> None:
    t = tracker(silent_mic_s=10.0)
    feed(t, 0, 5)
    t.no_audio("mic", T0 + 5, "audio server gone", "no audio server")
    assert feed(t, 5, 40, sources=("loopback",), them_speaking=lambda s: True) == []
    gaps = t.receipt(T0 + 40).gaps
    assert [(g.cause, g.start, g.end) for g in gaps] == [("audio server gone", 5.0, 40.0)]


def test_dropped_blocks_are_one_gap_told_once() -> None:
    t = tracker()
    feed(t, 0, 10)
    told = [t.dropped("loopback", T0 + 10 + i * STEP, STEP) for i in range(20)]
    assert [a.message for a in told if a is not None] == [
        "them 00:10: audio dropped: transcription fell behind"]
    feed(t, 12, 20, sources=("loopback",))
    feed(t, 10, 20, sources=("mic",))
    receipt = t.receipt(T0 + 20)
    assert [(g.source, g.cause, g.start, g.end) for g in receipt.gaps] == [
        ("loopback", "blocks dropped", 10.0, 12.0)]
    assert receipt.heard_s == {"mic": 20.0, "loopback": 18.0}


def test_a_break_in_the_blocks_is_named_by_what_is_known_of_it() -> None:
    t = tracker()
    feed(t, 0, 10)
    alerts = feed(t, 13, 20, epoch=2)  # reopened on another device: a 3 s break
    assert alerts == ["me: nothing heard 00:10–00:13 (device changed)",
                      "them: nothing heard 00:10–00:13 (device changed)"]
    feed(t, 30, 40, epoch=2)  # a break with nothing known ...
    t.suspended(T0 + 20.5, T0 + 30)  # ... until the machine is found to have slept then
    feed(t, 40, 50, epoch=2)
    assert [(g.source, g.cause, g.start, g.end) for g in t.receipt(T0 + 50).gaps] == [
        ("loopback", "device changed", 10.0, 13.0), ("mic", "device changed", 10.0, 13.0),
        ("loopback", "suspend", 20.0, 30.0), ("mic", "suspend", 20.0, 30.0)]


def test_utterances_not_transcribed_are_named() -> None:
    t = tracker()
    feed(t, 0, 20)
    alert = t.not_transcribed("mic", T0 + 3, T0 + 6, "no speech model")
    assert alert is not None and "not transcribed: no speech model" in alert.message
    assert t.not_transcribed("mic", T0 + 6.5, T0 + 9, "no speech model") is None  # merged
    assert t.not_transcribed("mic", T0 + 15, T0 + 17, "no speech model") is None  # told once
    receipt = t.receipt(T0 + 20)
    assert receipt.gaps == (CaptureGap("mic", "not transcribed", 3.0, 9.0, "no speech model"),
                            CaptureGap("mic", "not transcribed", 15.0, 17.0, "no speech model"))
    assert receipt.heard_s["mic"] == 20.0  # heard, just not transcribed


def test_a_source_that_stopped_delivering_or_never_did_is_a_gap_to_the_end() -> None:
    t = GapTracker(T0, 120.0)  # capture had heard nothing before the session
    feed(t, 0, 10, sources=("loopback",))
    receipt = t.receipt(T0 + 30)
    assert [(g.source, g.cause, g.start, g.end) for g in receipt.gaps] == [
        ("mic", "audio stopped", 0.0, 30.0), ("loopback", "audio stopped", 10.0, 30.0)]
    assert receipt.heard_s == {"mic": 0.0, "loopback": 10.0}


def test_a_paused_stretch_is_named() -> None:
    t = tracker()
    feed(t, 0, 10)
    t.no_audio("mic", T0 + 10, "paused")
    t.no_audio("loopback", T0 + 10, "paused")
    feed(t, 70, 80, epoch=2)
    assert {(g.cause, g.start, g.end) for g in t.receipt(T0 + 80).gaps} == {
        ("paused", 10.0, 70.0)}


def test_causes_of_capture_reasons() -> None:
    assert cause_of("no audio server") == "audio server gone"
    assert cause_of("the audio server connection is gone") == "audio server gone"
    assert cause_of("no soundcard with id mic") == "device lost"


# -- in the database -------------------------------------------------------------------------


def test_a_receipt_is_stored_replaced_and_deleted_with_its_session(tmp_path: Path) -> None:
    with Store(tmp_path) as store:
        first = store.create_session(title="call", started_at=T0)
        other = store.create_session(title="imported", started_at=T0)
        t = tracker()
        feed(t, 0, 10)
        t.no_audio("mic", T0 + 10, "device lost", "mic is gone")
        save_receipt(store, first.id, t.receipt(T0 + 15))  # while live
        feed(t, 10, 30, sources=("loopback",))
        feed(t, 30, 40, epoch=2)
        final = t.receipt(T0 + 40)
        save_receipt(store, first.id, final)  # at the end: replaces it
        assert receipts(store, [first.id, other.id]) == {first.id: final}
        assert receipt(store, other.id) is None
        assert final.gaps == (CaptureGap("mic", "device lost", 10.0, 30.0, "mic is gone"),)
        with pytest.raises(NotFound):
            save_receipt(store, 999, final)
        with pytest.raises(InvalidInput):
            save_receipt(store, first.id, Receipt(1.0, {}, (CaptureGap("mic", "gremlins", 0, 1),)))

        store.delete_session(first.id)

        def left(conn: apsw.Connection) -> list[int]:
            return [n for (n,) in conn.execute(
                "SELECT (SELECT count(*) FROM capture_receipts)"
                " + (SELECT count(*) FROM capture_gaps)")]

        assert store.db.read(left) == [0]

"""The session rules, pure: start messages, the interview gate, the gist, auto-start, auto-end."""

from __future__ import annotations

import pytest

from daemon.errors import InvalidInput
from daemon.live.rules import AutoStart, capture_summary, check_start, end_due, gist, start_message


def test_starting_says_what_will_survive() -> None:
    assert capture_summary("Atlas") == "a summary and memory suggestions will be filed into Atlas"
    assert capture_summary(None) == "nothing is summarised or remembered — pick a Space for that"
    assert "set to be forgotten" in capture_summary("Private", space_remembered=False)
    assert start_message(7, "Atlas") == (
        "session 7 started in Atlas: a summary and memory suggestions will be filed into Atlas"
    )
    assert start_message(7, None).startswith("session 7 started: nothing is summarised")
    assert start_message(7, None, continued=True).startswith("session 7 continues")


def test_an_interview_cannot_start_without_a_space() -> None:
    with pytest.raises(InvalidInput, match="needs a Space") as raised:
        check_start("job", None)
    assert raised.value.fix is not None and "--space" in raised.value.fix
    check_start("job", "Acme interviews")
    for activity in ("meeting", "personal", "solo"):
        check_start(activity, None)


def test_gist_is_the_most_content_rich_turn_on_one_line() -> None:
    texts = [
        "Hi, how are you?",
        "We agreed to move the Atlas launch to March because the vendor is late.",
        "Okay, sounds good to me.",
    ]
    assert gist(texts) == texts[1]
    long = "budget " * 10 + "forecast review with finance and the regional sales leads " * 3
    line = gist([long], limit=60)
    assert len(line) <= 60 and line.endswith("…") and "\n" not in line
    assert gist([]) == "nothing was said"
    assert gist(["  spread\nover   lines "]) == "spread over lines"


def test_auto_start_needs_both_sources_within_the_window() -> None:
    auto: AutoStart[str] = AutoStart(window_s=30)
    assert auto.heard("mic", 10.0, "me 1") is None
    assert auto.heard("mic", 20.0, "me 2") is None
    assert auto.heard("loopback", 35.0, "them 1") == ["me 1", "me 2", "them 1"]
    # what started it is handed over once
    assert auto.heard("loopback", 36.0, "them 2") is None


def test_auto_start_forgets_speech_older_than_the_window() -> None:
    auto: AutoStart[str] = AutoStart(window_s=30)
    auto.heard("mic", 0.0, "old")
    assert auto.heard("loopback", 31.0, "late") is None  # "old" is 31 s before: forgotten
    assert auto.heard("mic", 40.0, "new") == ["late", "new"]


def test_auto_start_keeps_quiet_after_a_stop_until_a_silence() -> None:
    auto: AutoStart[str] = AutoStart(window_s=30, rearm_silence_s=300)
    auto.stopped_by_hand(100.0)
    assert auto.heard("mic", 110.0, "a") is None
    assert auto.heard("loopback", 115.0, "b") is None  # the stopped conversation goes on
    assert auto.heard("mic", 350.0, "c") is None  # 235 s after "b": still the same one
    assert auto.heard("loopback", 700.0, "d") is None  # 350 s of silence: armed again
    assert auto.heard("mic", 705.0, "e") == ["d", "e"]


def test_a_session_ends_after_the_silence_setting() -> None:
    assert end_due(started_at=100.0, last_speech=None, silence_s=300) == 400.0
    assert end_due(started_at=100.0, last_speech=250.0, silence_s=300) == 550.0
    assert end_due(started_at=100.0, last_speech=250.0, silence_s=0) is None

"""The tray and hotkey clients, driven under Xvfb against a fake daemon and a fake notification
server on a private D-Bus session bus (tests/desktopkit.py). Screenshots of what the user sees
go to artifacts/screenshots/."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from desktopkit import (
    ANSWER_TOKENS,
    FakeDaemon,
    FakeNotificationServer,
    live_status,
    screenshot,
    start_session_bus,
    start_xvfb,
    wait_until,
)

from clients.desktop.keep import (
    NO_SPACE_LABEL,
    QUESTION,
    SpaceOption,
    once_named,
    prompt_actions,
    prompt_body,
    remember_request,
    remember_summary,
    space_options,
)
from clients.desktop.voices import Offer, offers
from clients.desktop.xkeys import Hotkey, parse_hotkey
from daemon.config import Paths, Settings
from daemon.errors import ConfigError
from daemon.ipc.protocol import (
    Ask,
    CarriedForward,
    HeardVoiceInfo,
    ItemInfo,
    LanguageModelInfo,
    Pause,
    Remember,
    RememberReply,
    SessionEnded,
    SessionInfo,
    SessionStarted,
    Start,
    StatusReply,
    VoiceName,
    VoicesReply,
)

HAVE_X = all(shutil.which(tool) for tool in ("Xvfb", "dbus-daemon", "xdotool"))
# Tests under Xvfb: marked slow; without the tools (scripts/setup.sh --dev installs them) the
# `display` fixture skips them.
under_x = pytest.mark.slow


def fields(request: Any) -> dict[str, Any]:
    """A request's content, without its (random) id."""
    data: dict[str, Any] = msgspec.structs.asdict(request)
    data.pop("id")
    return data


# ---------------------------------------------------------------------------------------------
# pure parts


def status(capture: str = "capturing", **live: Any) -> StatusReply:
    return StatusReply(profile="default", version="t", protocol=1, pid=1, uptime_s=1.0,
                       models_loaded=[], capture=capture, counts={}, ipc={},
                       live=live_status(**live))


def test_tray_states_follow_the_daemons_status() -> None:
    from clients.tray import tray_view

    assert tray_view(status()).state == "listening"
    call = tray_view(status(session_id=4))
    assert (call.state, call.live_session) == ("in a call", 4)
    assert tray_view(status("paused")).paused
    assert tray_view(status("paused")).state == "paused"
    assert tray_view(status("off")).state == "paused"
    silent = tray_view(status("no audio", no_audio=True, session_id=4))
    assert silent.state == "error" and "no audio server" in silent.tooltip
    gone = tray_view(None, "the BrainCue daemon is not running for profile 'default'")
    assert gone.state == "error" and "not running" in gone.tooltip


def test_the_tray_says_where_conversation_text_goes_when_the_model_is_elsewhere() -> None:
    from clients.tray import tray_view

    here = LanguageModelInfo(engine="openai", model="qwen", state="ready",
                             url="http://127.0.0.1:11434/v1")
    elsewhere = msgspec.structs.replace(here, url="http://10.0.0.5:11434/v1",
                                        sends_to="10.0.0.5:11434")
    assert "goes to" not in tray_view(msgspec.structs.replace(status(), language_model=here)
                                      ).tooltip
    shown = tray_view(msgspec.structs.replace(status(), language_model=elsewhere))
    assert shown.state == "listening"
    assert shown.tooltip.splitlines()[1] == ("conversation text goes to 10.0.0.5:11434, off this "
                                             "machine (llm_allow_network is on)")


def test_the_space_choice_defaults_to_where_the_session_ran() -> None:
    options, default = space_options(["Atlas", "Hiring"], "Hiring")
    assert [o.label for o in options] == ["Atlas", "Hiring", NO_SPACE_LABEL]
    assert options[default] == SpaceOption("Hiring", "Hiring")
    options, default = space_options(["Atlas"], None)
    assert options[default] == SpaceOption(NO_SPACE_LABEL, None)
    options, default = space_options([], "Gone")  # the list failed or does not have it
    assert options[default] == SpaceOption("Gone", "Gone")


def test_each_answer_is_one_remember_request() -> None:
    atlas, nowhere = SpaceOption("Atlas", "Atlas"), SpaceOption(NO_SPACE_LABEL, None)
    assert fields(remember_request(3, "keep", atlas)) == {
        "session_id": 3, "answer": "keep", "space": "Atlas", "no_space": False, "v": 1}
    assert remember_request(3, "keep", nowhere).no_space
    later = remember_request(3, "later", atlas)  # filing is part of keeping only
    assert (later.answer, later.space, later.no_space) == ("later", None, False)
    assert remember_request(3, "discard", nowhere).answer == "discard"


def test_prompt_and_summary_texts() -> None:
    ended = SessionEnded(session_id=1, duration_s=1830, gist="pricing for Atlas", space="Atlas")
    assert prompt_body(ended) == "“pricing for Atlas”\n30 min, in Atlas"
    unfiled = SessionEnded(session_id=1, duration_s=20, gist="", space=None)
    assert "nothing is remembered unless you pick one" in prompt_body(unfiled)
    named = SessionEnded(session_id=1, duration_s=60, gist="", space="Atlas",
                         speakers=["me", "Sarah", "Them 2"])
    assert prompt_body(named) == "me, Sarah, Them 2\n1 min, in Atlas"
    kept = RememberReply(session_id=1, answer="keep", status="kept", space="Atlas",
                         archived=True, assertions=3, notes=["memory is off"])
    assert remember_summary(kept) == ("Kept in Atlas: summary written, 3 decisions, facts or "
                                      "tasks.\nmemory is off")
    assert remember_summary(RememberReply(session_id=1, answer="discard",
                                          status="discarded")).startswith("Discarded")


# voices of two sessions: in session 42 "Them 2" may be Sarah, "Them 1" is surely Tom; in
# session 41 nothing is offered ("Them 1" was not like any named voice)
HEARD = [HeardVoiceInfo(session_id=41, label="Them 1", name=None, seconds=12.0),
         HeardVoiceInfo(session_id=42, label="Them 1", name="Tom", seconds=30.0),
         HeardVoiceInfo(session_id=42, label="Them 2", name=None, seconds=41.0,
                        suggestion="Sarah")]


def test_a_name_is_offered_only_for_an_unnamed_voice_with_a_suggestion() -> None:
    reply = VoicesReply(voices=[], heard=HEARD, voices_enabled=True, state="on")
    [sarah] = offers(reply, 42)
    assert (sarah.text, fields(sarah.confirm())) == (
        "Them 2 — Sarah?", {"voice": "Them 2", "name": "Sarah", "session_id": 42, "v": 1})
    assert offers(reply, 41) == [] and offers(reply, 7) == []
    ended = SessionEnded(session_id=42, duration_s=60, gist="", space="Atlas",
                         speakers=["me", "Tom", "Them 2"])
    assert prompt_body(ended, [sarah]) == "me, Tom, Them 2\n1 min, in Atlas\nThem 2 — Sarah?"
    assert prompt_actions([sarah])[-1] == ("voice:Them 2", "Them 2 is Sarah?")
    assert [key for key, _ in prompt_actions([])] == ["default", "keep", "discard", "later"]
    assert once_named(ended, sarah).speakers == ["me", "Tom", "Sarah"]
    # a name already among the speakers is said once
    assert once_named(ended, Offer(42, "Them 2", "Tom")).speakers == ["me", "Tom"]


def test_hotkeys_parse_and_errors_name_the_fix() -> None:
    assert parse_hotkey("Ctrl+Alt+Space") == Hotkey(frozenset({"ctrl", "alt"}), "space")
    assert parse_hotkey(" ctrl + shift + K ") == Hotkey(frozenset({"ctrl", "shift"}), "k")
    assert parse_hotkey("Super+Enter") == Hotkey(frozenset({"super"}), "Return")
    assert str(parse_hotkey("Alt+Ctrl+Shift+space")) == "Ctrl+Alt+Shift+Space"
    for bad, problem in [("Space", "needs a modifier"), ("Ctrl+Hyper+K", "not a modifier"),
                         ("Ctrl+Alt+Nokey", "unknown key"), ("Ctrl++", "needs a modifier")]:
        with pytest.raises(ConfigError, match=problem) as caught:
            parse_hotkey(bad)
        assert caught.value.fix and "Ctrl+Alt+Space" in caught.value.fix
    defaults = Settings()
    parse_hotkey(defaults.hotkey_ask)
    parse_hotkey(defaults.hotkey_answer_them)


# ---------------------------------------------------------------------------------------------
# under Xvfb


@pytest.fixture(scope="session")
def display() -> Iterator[str]:
    if not HAVE_X:
        pytest.skip("needs Xvfb, dbus-daemon and xdotool")
    process, name = start_xvfb()
    saved = {k: os.environ.get(k) for k in ("DISPLAY", "QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    os.environ.update(DISPLAY=name, QT_QPA_PLATFORM="xcb")
    os.environ.pop("WAYLAND_DISPLAY", None)
    yield name
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    process.terminate()
    process.wait(10)


@pytest.fixture(scope="session")
def qapp(display: str) -> Any:
    from clients.desktop.qt import application

    return application("braincue-tests")


@pytest.fixture(scope="session")
def bus() -> Iterator[str]:
    process, address = start_session_bus()
    yield address
    process.terminate()
    process.wait(10)


@pytest.fixture
def notifications(bus: str) -> Iterator[FakeNotificationServer]:
    server = FakeNotificationServer(bus)
    yield server
    server.close()


@pytest.fixture
def paths(short_home: Path) -> Paths:
    return Paths.resolve()


@pytest.fixture
def daemon(paths: Paths) -> Iterator[FakeDaemon]:
    fake = FakeDaemon(paths)
    fake.start()
    yield fake
    fake.release_answer.set()
    fake.stop()


@pytest.fixture
def tray(qapp: Any, bus: str, notifications: FakeNotificationServer, daemon: FakeDaemon,
         paths: Paths) -> Iterator[Any]:
    from clients.tray import Tray

    client = Tray(paths, bus=bus)
    assert client.notifications is not None, "the tray did not find the notification server"
    wait_until(lambda: client.view.state == "listening", "the tray to reach the daemon")
    yield client
    for dialog in list(client.prompter.dialogs.values()):
        dialog.close()
    client.close()


def icon_colour(tray: Any) -> str:
    image = tray.icon.icon().pixmap(64, 64).toImage()
    return str(image.pixelColor(32, 32).name())


@under_x
def test_the_keep_prompt_then_keep_it_in_another_space_sends_remember(
    tray: Any, daemon: FakeDaemon, notifications: FakeNotificationServer,
) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    daemon.publish(SessionEnded(session_id=42, duration_s=31 * 60, gist="Atlas beta date",
                                space="Atlas"))
    wait_until(lambda: notifications.notifications(QUESTION), "the keep notification")
    [call] = notifications.notifications(QUESTION)
    assert call.app_name == "BrainCue"
    assert call.body == "“Atlas beta date”\n31 min, in Atlas"
    assert [label for _, label in call.actions] == ["Choose…", "Keep it", "Discard",
                                                    "Decide later"]
    assert call.timeout_ms == 0  # it waits for an answer

    notifications.click(call, "keep")
    wait_until(lambda: 42 in tray.prompter.dialogs and tray.prompter.dialogs[42].isVisible(),
               "the Space chooser")
    chooser = tray.prompter.dialogs[42]
    assert chooser.space.currentText() == "Atlas"  # where it ran
    labels = [chooser.space.itemText(i) for i in range(chooser.space.count())]
    assert labels == ["Atlas", "Hiring", NO_SPACE_LABEL]
    chooser.space.setCurrentIndex(labels.index("Hiring"))
    print("screenshot:", screenshot("keep-space-chooser"))

    QTest.mouseClick(chooser.keep_button, Qt.MouseButton.LeftButton)
    remember = daemon.wait_for(Remember)
    assert fields(remember) == {"session_id": 42, "answer": "keep", "space": "Hiring",
                                "no_space": False, "v": 1}
    wait_until(lambda: notifications.notifications("BrainCue"), "the result notification")
    assert notifications.notifications("BrainCue")[0].body == "Kept in Hiring: summary written."
    assert not chooser.isVisible()


@pytest.fixture
def short_requests(monkeypatch: pytest.MonkeyPatch) -> float:
    """The desktop clients' requests time out after half a second (before they start)."""
    import clients.desktop.link

    monkeypatch.setattr(clients.desktop.link, "REQUEST_TIMEOUT_S", 0.5)
    return 0.5


@under_x
def test_a_keep_longer_than_a_request_waits_for_its_result_and_holds_nothing_up(
    short_requests: float, tray: Any, daemon: FakeDaemon,
    notifications: FakeNotificationServer,
) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    daemon.keep_takes_s = 4 * short_requests  # the language model reading the conversation
    for asked, session_id in enumerate((42, 43), 1):
        daemon.publish(SessionEnded(session_id=session_id, duration_s=600, gist="Atlas beta",
                                    space="Atlas"))
        def notified(n: int = asked) -> bool:
            return len(notifications.notifications(QUESTION)) == n

        def chooser_open(s: int = session_id) -> bool:
            return s in tray.prompter.dialogs

        wait_until(notified, "the keep notification")
        notifications.click(notifications.notifications(QUESTION)[-1], "keep")
        wait_until(chooser_open, "the Space chooser")
        if session_id == 42:
            QTest.mouseClick(tray.prompter.dialogs[42].keep_button, Qt.MouseButton.LeftButton)
            daemon.wait_for(Remember)
    # the second chooser came (its Space list answered) while the first keep went on
    assert not notifications.notifications("BrainCue")
    wait_until(lambda: notifications.notifications("BrainCue"), "the keep's result")
    assert notifications.notifications("BrainCue")[0].body == "Kept in Atlas: summary written."


@under_x
def test_discard_and_decide_later_are_sent_from_the_notification(
    tray: Any, daemon: FakeDaemon, notifications: FakeNotificationServer,
) -> None:
    def answer(session_id: int, key: str, nth: int) -> None:
        daemon.publish(SessionEnded(session_id=session_id, duration_s=60, gist="", space=None))
        wait_until(lambda: len(notifications.notifications(QUESTION)) == nth,
                   f"the notification of session {session_id}")
        notifications.click(notifications.notifications(QUESTION)[-1], key)
        wait_until(lambda: len(daemon.of_type(Remember)) == nth, f"the {key} answer")

    answer(7, "discard", 1)
    answer(8, "later", 2)
    answers = [(r.session_id, r.answer, r.space, r.no_space) for r in daemon.of_type(Remember)]
    assert answers == [(7, "discard", None, False), (8, "later", None, False)]
    assert tray.prompter.dialogs == {}


@under_x
def test_without_a_notification_server_the_question_opens_in_a_window(
    qapp: Any, daemon: FakeDaemon, paths: Paths,
) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from clients.tray import Tray

    tray = Tray(paths, notifications=False)
    try:
        wait_until(lambda: tray.view.state == "listening", "the tray to reach the daemon")
        daemon.publish(SessionEnded(session_id=5, duration_s=600, gist="a call about nothing",
                                    space=None))
        wait_until(lambda: 5 in tray.prompter.dialogs and tray.prompter.dialogs[5].isVisible(),
                   "the keep window")
        window = tray.prompter.dialogs[5]
        assert window.windowTitle() == QUESTION
        assert window.space.currentText() == NO_SPACE_LABEL  # it ran in no Space
        print("screenshot:", screenshot("keep-window"))
        QTest.mouseClick(window.keep_button, Qt.MouseButton.LeftButton)
        remember = daemon.wait_for(Remember)
        assert fields(remember) == {"session_id": 5, "answer": "keep", "space": None,
                                    "no_space": True, "v": 1}
    finally:
        tray.close()


@under_x
def test_the_keep_notification_offers_a_name_and_its_button_confirms_it(
    tray: Any, daemon: FakeDaemon, notifications: FakeNotificationServer,
) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    daemon.heard = list(HEARD)
    daemon.release_voices.clear()  # the daemon is slow to say: the question does not wait
    daemon.publish(SessionEnded(session_id=42, duration_s=10 * 60, gist="Atlas budget",
                                space="Atlas", speakers=["me", "Tom", "Them 2"]))
    wait_until(lambda: notifications.notifications(QUESTION), "the keep notification")
    [asked] = notifications.notifications(QUESTION)
    assert asked.body == "“Atlas budget”\nme, Tom, Them 2\n10 min, in Atlas"
    assert len(asked.actions) == 4
    daemon.release_voices.set()  # then it is updated in its place with the name offered
    wait_until(lambda: [c.updates for c in notifications.notifications(QUESTION)] == [1],
               "the keep notification with the name offered")
    [call] = notifications.notifications(QUESTION)
    assert call.body == "“Atlas budget”\nme, Tom, Them 2\n10 min, in Atlas\nThem 2 — Sarah?"
    assert call.actions[-1] == ("voice:Them 2", "Them 2 is Sarah?")
    assert [label for _, label in call.actions[:4]] == ["Choose…", "Keep it", "Discard",
                                                        "Decide later"]

    notifications.click(call, "voice:Them 2")
    assert fields(daemon.wait_for(VoiceName)) == {"voice": "Them 2", "name": "Sarah",
                                                  "session_id": 42, "v": 1}
    # the notification is gone: the question is asked again in a window, with the name
    wait_until(lambda: 42 in tray.prompter.dialogs and tray.prompter.dialogs[42].isVisible(),
               "the keep window")
    window = tray.prompter.dialogs[42]
    assert window.summary.text() == "“Atlas budget”\nme, Tom, Sarah\n10 min, in Atlas"
    assert window.offer_buttons == {}  # named now: nothing left to offer
    assert notifications.notifications("BrainCue")[0].body.startswith("Them 2 is Sarah: ")
    assert not daemon.of_type(Remember)  # naming answers nothing about keeping
    QTest.mouseClick(window.keep_button, Qt.MouseButton.LeftButton)
    assert fields(daemon.wait_for(Remember))["session_id"] == 42


@under_x
def test_the_keep_window_offers_a_name_only_where_there_is_one(
    qapp: Any, daemon: FakeDaemon, paths: Paths,
) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from clients.tray import Tray

    daemon.heard = list(HEARD)
    tray = Tray(paths, notifications=False)
    try:
        wait_until(lambda: tray.view.state == "listening", "the tray to reach the daemon")
        daemon.publish(SessionEnded(session_id=41, duration_s=60, gist="", space=None,
                                    speakers=["me", "Them 1"]))
        wait_until(lambda: 41 in tray.prompter.dialogs, "the keep window of session 41")
        assert tray.prompter.dialogs[41].offer_buttons == {}  # no suggestion: nothing offered
        assert "?" not in tray.prompter.dialogs[41].summary.text()

        daemon.publish(SessionEnded(session_id=42, duration_s=60, gist="", space="Atlas",
                                    speakers=["me", "Tom", "Them 2"]))
        wait_until(lambda: 42 in tray.prompter.dialogs and tray.prompter.dialogs[42].isVisible(),
                   "the keep window of session 42")
        window = tray.prompter.dialogs[42]
        [button] = window.offer_buttons.values()
        assert button.text() == "Them 2 — Sarah?" and button.isVisible()
        print("screenshot:", screenshot("keep-window-offer"))
        QTest.mouseClick(button, Qt.MouseButton.LeftButton)
        assert fields(daemon.wait_for(VoiceName)) == {"voice": "Them 2", "name": "Sarah",
                                                      "session_id": 42, "v": 1}
        wait_until(lambda: "Sarah" in window.summary.text(), "the name in the prompt")
        assert window.summary.text() == "me, Tom, Sarah\n1 min, in Atlas"
        assert not button.isVisible() and window.isVisible()  # the question still waits
        assert not window.offer_row.isVisible()  # nothing left to offer: no "Who spoke:"
        assert not daemon.of_type(Remember)
    finally:
        for dialog in list(tray.prompter.dialogs.values()):
            dialog.close()
        tray.close()


@under_x
def test_the_tray_follows_the_daemon_through_a_restart(
    tray: Any, daemon: FakeDaemon, notifications: FakeNotificationServer,
) -> None:
    from clients.tray import COLOURS

    assert icon_colour(tray) == COLOURS["listening"]
    daemon.live = live_status(session_id=3)
    daemon.publish(SessionStarted(session_id=3, started_at=0.0, space="Atlas"))
    wait_until(lambda: tray.view.state == "in a call", "the in-a-call state")
    assert icon_colour(tray) == COLOURS["in a call"]
    assert tray.icon.toolTip() == "BrainCue — in a call (session 3)"
    assert tray.stop_action.isVisible() and not tray.start_menu.menuAction().isVisible()

    daemon.stop()
    wait_until(lambda: tray.view.state == "error", "the tray to notice the daemon is gone")
    assert "not running" in tray.icon.toolTip()
    assert icon_colour(tray) == COLOURS["error"]

    daemon.live = live_status()
    daemon.start()
    wait_until(lambda: tray.view.state == "listening", "the tray to reconnect")
    daemon.publish(SessionEnded(session_id=11, duration_s=90, gist="after the restart",
                                space="Atlas"))
    wait_until(lambda: notifications.notifications(QUESTION), "a keep prompt after the restart")
    assert "after the restart" in notifications.notifications(QUESTION)[0].body


@under_x
def test_the_menu_starts_sessions_in_a_space_pauses_and_lists_recent_ones(
    tray: Any, daemon: FakeDaemon,
) -> None:
    from PySide6.QtCore import QPoint

    daemon.sessions = [SessionInfo(id=12, title="Atlas weekly", activity="meeting",
                                   status="later", started_at=1_785_000_000.0,
                                   ended_at=1_785_001_800.0, space="Atlas", participants=[],
                                   turns=40)]
    tray.start_menu.aboutToShow.emit()
    wait_until(lambda: "Atlas" in [a.text() for a in tray.start_menu.actions()],
               "the Spaces in the start menu")
    next(a for a in tray.start_menu.actions() if a.text() == "Atlas").trigger()
    assert fields(daemon.wait_for(Start)) == {"space": "Atlas", "activity": "", "title": "",
                                              "v": 1}

    tray.pause_action.trigger()
    assert daemon.wait_for(Pause).paused is True

    tray.recent_menu.aboutToShow.emit()
    wait_until(lambda: any("Atlas weekly" in a.text() for a in tray.recent_menu.actions()),
               "the recent sessions")
    [entry] = tray.recent_menu.actions()
    assert entry.text().endswith("· Atlas · undecided")
    tray.menu.popup(QPoint(200, 150))
    wait_until(tray.menu.isVisible, "the menu")
    tray.recent_menu.popup(tray.menu.geometry().topRight() + QPoint(0, 70))  # refills it
    wait_until(lambda: tray.recent_menu.isVisible() and "undecided" in tray.recent_menu.actions()[0].text(),
               "the recent sessions menu")
    print("screenshot:", screenshot("tray-menu"))
    tray.recent_menu.hide()
    tray.menu.hide()
    tray.recent_menu.actions()[0].trigger()  # asks again, in a window
    wait_until(lambda: 12 in tray.prompter.dialogs and tray.prompter.dialogs[12].isVisible(),
               "the keep window of a recent session")
    assert tray.prompter.dialogs[12].space.currentText() == "Atlas"


@under_x
def test_what_is_open_from_last_time_is_notified_and_listed_in_the_menu(
    tray: Any, daemon: FakeDaemon, notifications: FakeNotificationServer,
) -> None:
    from PySide6.QtCore import QPoint

    daemon.live = live_status(9)  # a session is live in Atlas
    items = [ItemInfo(id=3, kind="commitment", text="Priya will send the revised budget.",
                      occurred_at=1_785_000_000.0, status="open", owner="Priya", due="Friday",
                      space="Atlas", session_id=4, session_title="Atlas sync"),
             ItemInfo(id=5, kind="task", text="Book the offsite venue.",
                      occurred_at=1_785_003_600.0, status="open", owner="me", space="Atlas")]
    daemon.publish(CarriedForward(session_id=9, space="Atlas", message="2 open from last time",
                                  items=items))
    wait_until(lambda: notifications.notifications("BrainCue"), "the open-items notification")
    [call] = notifications.notifications("BrainCue")
    assert call.body == ("2 open from last time in Atlas:\n"
                         "• Priya: Priya will send the revised budget. (due Friday)\n"
                         "• me: Book the offsite venue.")
    wait_until(lambda: tray.view.live_session == 9, "the live session in the tray")
    assert tray.carried_menu.menuAction().isVisible()
    assert tray.carried_menu.title() == "2 open from last time"
    assert [a.text() for a in tray.carried_menu.actions()] == [
        "Priya: Priya will send the revised budget. · due Friday", "me: Book the offsite venue."]
    tray.menu.popup(QPoint(200, 150))
    wait_until(tray.menu.isVisible, "the menu")
    tray.carried_menu.popup(tray.menu.geometry().topRight() + QPoint(0, 50))
    wait_until(tray.carried_menu.isVisible, "the open items menu")
    print("screenshot:", screenshot("tray-open-from-last-time"))
    tray.carried_menu.hide()
    tray.menu.hide()

    daemon.live = live_status(None)  # the session ended: the list goes with it
    tray.refresh()
    wait_until(lambda: not tray.carried_menu.menuAction().isVisible(), "the list to go")


# -- the hotkey -------------------------------------------------------------------------------


def press(display: str, keys: str) -> None:
    subprocess.run(["xdotool", "key", keys], env={**os.environ, "DISPLAY": display},
                   check=True, timeout=10)


@pytest.fixture
def hotkey_client(qapp: Any, display: str, paths: Paths) -> Iterator[Any]:
    from clients.hotkey import HotkeyClient

    client = HotkeyClient(paths, Settings(), display_name=display)
    yield client
    client.close()


@under_x
def test_the_hotkey_opens_the_ask_box_which_streams_the_answer(
    hotkey_client: Any, daemon: FakeDaemon, display: str,
) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    box = hotkey_client.box
    press(display, "ctrl+alt+space")
    wait_until(box.isVisible, "the ask box to open on Ctrl+Alt+Space")
    box.question.setText("When do we ship the beta?")
    QTest.keyClick(box.question, Qt.Key.Key_Return)

    ask = daemon.wait_for(Ask)
    assert (ask.question, ask.space) == ("When do we ship the beta?", None)
    partial = "".join(ANSWER_TOKENS[:2])
    wait_until(lambda: box.answer.toPlainText() == partial, "the first tokens")
    assert box.status.text() == "Answering…"  # streamed: the reply has not come yet
    # what memory holds is shown before the answer, with its source and number
    assert box.evidence.isVisible() and box.evidence.toPlainText() == (
        "What memory holds:\n"
        "  [1] Launch review · 2026-07-25 · them at 01:35: “So, let's ship the beta on Friday.”")
    print("screenshot:", screenshot("ask-box-streaming"))

    daemon.release_answer.set()
    wait_until(lambda: "Sources" in box.answer.toPlainText(), "the sources")
    assert box.answer.toPlainText() == (
        "We agreed to ship the beta on Friday [1].\n\nSources\n"
        "[1] Launch review · 2026-07-25 · them: “let's ship the beta on Friday”")
    assert box.status.text() == ""
    print("screenshot:", screenshot("ask-box"))


@under_x
def test_the_second_hotkey_answers_what_they_just_asked(
    hotkey_client: Any, daemon: FakeDaemon, display: str,
) -> None:
    daemon.release_answer.set()
    box = hotkey_client.box
    press(display, "ctrl+alt+shift+space")
    ask = daemon.wait_for(Ask)
    assert ask.question is None
    wait_until(lambda: "Sources" in box.answer.toPlainText(), "the answer")
    assert box.isVisible()
    assert box.question.text() == "When can you ship the beta?"  # what they asked, as heard


@under_x
def test_the_ask_box_says_when_the_daemon_is_not_running(
    hotkey_client: Any, display: str,
) -> None:
    box = hotkey_client.box
    box.open_for_question()
    box.question.setText("anything")
    box.submit()
    wait_until(lambda: "not running" in box.status.text(), "the error")
    assert "braincued" in box.status.text()  # and how to start it


@under_x
def test_a_hotkey_taken_by_another_program_is_reported(qapp: Any, display: str,
                                                       paths: Paths) -> None:
    from Xlib import XK, X
    from Xlib import display as xdisplay

    from clients.hotkey import HotkeyClient

    other = xdisplay.Display(display)
    keycode = other.keysym_to_keycode(XK.string_to_keysym("space"))
    other.screen().root.grab_key(keycode, X.ControlMask | X.Mod1Mask, True, X.GrabModeAsync,
                                 X.GrabModeAsync)
    other.sync()
    try:
        with pytest.raises(ConfigError, match="Ctrl\\+Alt\\+Space is taken by another program"):
            HotkeyClient(paths, Settings(), display_name=display)
    finally:
        other.close()



@under_x
def test_hotkey_open_shows_the_box_once_and_exits_when_it_closes(display: str,
                                                                paths: Paths) -> None:
    """`braincue hotkey --open`, for a desktop shortcut where no global grab works."""
    env = {**os.environ, "DISPLAY": display}
    process = subprocess.Popen([str(Path(sys.executable).parent / "braincue"), "hotkey", "--open"],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # Only a mapped window takes the focus (X answers BadMatch for one not yet shown), and
        # Qt may name a window before it maps it.
        found = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name",
                                "Ask BrainCue"],
                               env=env, capture_output=True, text=True, timeout=60, check=True)
        window = found.stdout.split()[0]
        subprocess.run(["xdotool", "windowfocus", "--sync", window], env=env, check=True,
                       timeout=10)
        subprocess.run(["xdotool", "key", "Escape"], env=env, check=True, timeout=10)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


# -- against the real daemon ------------------------------------------------------------------


@under_x
def test_the_tray_keeps_a_session_of_the_real_daemon(
    qapp: Any, bus: str, notifications: FakeNotificationServer, paths: Paths,
) -> None:
    """The same flow against braincued itself: a session started and stopped over the protocol,
    the keep prompt from its SessionEnded, Keep it in its Space, the session kept."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from clients.tray import Tray
    from daemon.ipc.client import Client
    from daemon.ipc.protocol import AddSpace, ListSessions, Stop
    from daemon.ipc.testing import start_daemon

    process = start_daemon(Path(os.environ["BRAINCUE_HOME"]))
    tray = Tray(paths, bus=bus)
    try:
        wait_until(lambda: tray.view.tooltip != "BrainCue: connecting to the daemon…",
                   "the tray to reach braincued")
        assert tray.view.state == "paused"  # the tests run the daemon with capture off
        with Client(paths) as client:
            client.request(AddSpace(name="Atlas"))
            started = client.request(Start(space="Atlas", title="Atlas sync"))
            client.request(Stop())
        wait_until(lambda: notifications.notifications(QUESTION), "the keep notification")
        [call] = notifications.notifications(QUESTION)
        notifications.click(call, "keep")
        wait_until(lambda: started.session_id in tray.prompter.dialogs, "the Space chooser")
        chooser = tray.prompter.dialogs[started.session_id]
        assert chooser.space.currentText() == "Atlas"
        QTest.mouseClick(chooser.keep_button, Qt.MouseButton.LeftButton)
        wait_until(lambda: notifications.notifications("BrainCue"), "the daemon's answer")
        assert notifications.notifications("BrainCue")[0].body.startswith("Kept in Atlas")
        with Client(paths) as client:
            [session] = client.request(ListSessions()).sessions
        assert (session.id, session.status, session.space) == (started.session_id, "kept",
                                                               "Atlas")
    finally:
        tray.close()
        process.stop()

"""The memory window, driven under Xvfb through the real daemon (real store file, real sockets,
real handlers) holding two kept meetings of one series (AMI TS3010a and b from the QMSum dev
set, in tests/data/meetings): what it lists and shows is checked by widget text, the
corrections made in it are then read back by `braincue show`, `open`, `search` and `ask`, with
the old values still found as of before. The language model is scripted here (this is the logic
around it: the window shows what the keep stored); its lines quote the meetings verbatim, so
the keep's own checks (grounding, anchors, quotes) run on real text. The name offered for a
voice is driven against the fake daemon (tests/desktopkit.py) and against the daemon's own
voices on the diarisation tests' scripted encoder. Screenshots go to artifacts/screenshots/."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner
from desktopkit import FakeDaemon, ThreadedDaemon, screenshot, wait_until
from test_desktop import display, qapp, under_x  # noqa: F401  (fixtures)

from clients.shell import cli
from clients.window import expiry_time, key_quotes, session_status
from daemon.config import Config, Paths, Settings, save_settings
from daemon.engines import Engines
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    AddSpace,
    HeardVoiceInfo,
    ImportTranscript,
    MemoryApprove,
    Remember,
    SessionInfo,
    SessionReply,
    TurnInfo,
    VoiceName,
)
from daemon.llm.embed import ScriptedEmbedder
from daemon.llm.generate import ChatMessage, ScriptedGenerator

SPACE = "Remote control"
# The turns of each meeting the test keeps: a transcript this short is read whole by the model
# for its assertions (a longer one is read by rules first, and the model is asked little).
MEETINGS = {"TS3010a": [(150, 167)],
            "TS3010b": [(4, 4), (74, 80), (94, 95), (100, 112), (239, 239)]}

# What the scripted model says of each meeting; every "evidence" and quote is a meeting's words.
COVERS = {
    "kind": "decision", "text": "The remote will have no interchangeable covers.",
    "chosen": "no changeable covers", "alternatives": ["changeable covers like Nokia phones"],
    "reasoning": "too few people would change covers for a good profit",
    "evidence": "too less people would change it for good profit",
}
TELEVISIONS = {
    "kind": "decision", "text": "The remote has to work on all televisions.",
    "chosen": "all televisions", "alternatives": ["only the company's own televisions"],
    "evidence": "They are two different things though. We have to choose one.",
}
MINUTES = {
    "kind": "commitment", "text": "Project Manager will put the minutes in the Project "
    "Documents folder.", "owner": "Project Manager", "due": "after lunch",
    "evidence": "you can find the minutes in the Project Documents folder",
}
COMPATIBLE = {
    "kind": "decision", "text": "The remote must be compatible with other products.",
    "chosen": "compatible", "evidence": "It has to be compatible with other things",
}
INSTRUCTIONS = {
    "kind": "task", "text": "Project Manager sends the next instructions by email.",
    "owner": "Project Manager", "evidence": "Next instructions you'll get in your email",
}
SECRETARY = {
    "kind": "preference", "text": "Likes to take the minutes as the secretary of the team.",
    "about_person": True, "scope": "space",
    "evidence": "I want to say I'm the secretary, so I make the minutes",
}
ASSERTIONS: list[dict[str, Any]] = [COVERS, TELEVISIONS, MINUTES, COMPATIBLE, INSTRUCTIONS, SECRETARY]
ARCHIVES: dict[str, dict[str, Any]] = {
    "TS3010a": {"topic": "Kick-off of the remote control project",
                "summary": "The team met for the first time and collected first ideas.",
                "sections": {"decided": ["The remote must be compatible with other products"],
                             "action_items": ["Instructions follow by email"],
                             "still_open": [], "changed_since_last_time": []},
                "key_quotes": ["It has to be compatible with other things"]},
    "TS3010b": {"topic": "Functional design of the remote control",
                "summary": "The team decided against changeable covers and for all televisions.",
                "sections": {"decided": ["No interchangeable covers",
                                         "The remote works on all televisions"],
                             "action_items": ["The minutes go to the Project Documents folder"],
                             "still_open": [], "changed_since_last_time": []},
                "key_quotes": ["We have to choose one."]},
}
ANSWER = "The minutes go to the Project Documents folder [1]."


class MeetingModel:
    """The scripted language model: archives, extraction and rulings by what the prompt
    quotes; anything else is an answer, its prompt kept in ``asked``."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, messages: Sequence[ChatMessage]) -> object:
        prompt = "\n".join(m.content for m in messages)
        if '"key_quotes"' in prompt:
            meeting = "TS3010a" if "(TS3010a)" in prompt else "TS3010b"
            return {**ARCHIVES[meeting], "participants": []}
        if '{"assertions"' in prompt:
            return {"assertions": [a for a in ASSERTIONS if a["evidence"] in prompt]}
        if messages[-1].content.startswith("Existing:"):
            return {"verdict": "separate", "existing": 0}
        self.asked.append(prompt)
        return ANSWER


def excerpt(path: Path, ranges: Sequence[tuple[int, int]]) -> bytes:
    """The meeting's transcript with only the turns numbered within ``ranges``."""
    meeting = json.loads(path.read_bytes())
    meeting["turns"] = [t for t in meeting["turns"]
                        if any(a <= int(t["ref"].split(":")[1]) <= b for a, b in ranges)]
    return json.dumps(meeting).encode()


class Profile:
    """A daemon with the two meetings imported into the Space and kept."""

    def __init__(self, paths: Paths, test_data: Path) -> None:
        save_settings(paths, Settings(memory_enabled=True))
        config = Config.load()
        self.model = MeetingModel()
        self.paths = paths
        self.daemon = ThreadedDaemon(Engines(lambda: config.settings, paths.models_dir,
                                             embedder=ScriptedEmbedder(),
                                             generator=ScriptedGenerator(self.model)),
                                     config)
        self.daemon.start(timeout=60)
        self.sessions: dict[str, SessionInfo] = {}
        with Client(paths) as client:
            client.request(AddSpace(name=SPACE))
            for meeting, ranges in MEETINGS.items():
                imported = client.request(ImportTranscript(
                    content=excerpt(test_data / "meetings" / f"{meeting}.json", ranges),
                    filename=f"{meeting}.json", space=SPACE))
                kept = client.request(Remember(session_id=imported.session.id, answer="keep"),
                                      timeout=120)
                print(kept)
                assert kept.archived and kept.assertions >= 2, kept
                self.sessions[meeting] = imported.session

    def braincue(self, *args: str) -> str:
        result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output


@pytest.fixture
def profile(short_home: Path, test_data: Path) -> Iterator[Profile]:
    made = Profile(Paths.resolve(), test_data)
    yield made
    made.daemon.stop()


@pytest.fixture
def window(qapp: Any, profile: Profile) -> Iterator[Any]:  # noqa: F811
    from clients.window import MemoryWindow

    shown = MemoryWindow(profile.paths)
    shown.show()
    wait_until(lambda: shown.loads and shown.memories and shown.open_items,
               "the window to load")
    yield shown
    shown.close_link()
    shown.close()


def open_session(window: Any, title_part: str) -> None:
    for _, rows in window_groups(window.session_list):
        for row in rows:
            if title_part in row.text(0):
                window.session_list.setCurrentItem(row)
    wait_until(lambda: window.session is not None and title_part in window.session.session.title
               and window.items, f"the session {title_part}")


def window_groups(tree: Any) -> list[tuple[Any, list[Any]]]:
    from clients.window import groups

    return groups(tree)


def choose(tree: Any, text_part: str) -> None:
    for i in range(tree.topLevelItemCount()):
        if text_part in tree.topLevelItem(i).text(0):
            tree.setCurrentItem(tree.topLevelItem(i))
            return
    raise AssertionError(f"no row {text_part!r}")


def rows(tree: Any) -> list[list[str]]:
    from clients.window import row_texts

    return [row_texts(tree.topLevelItem(i)) for i in range(tree.topLevelItemCount())]


def save_dialog(window: Any, **values: str) -> None:
    from PySide6.QtWidgets import QDialogButtonBox

    dialog = window.dialog
    assert dialog is not None and dialog.isVisible()
    for key, value in values.items():
        dialog.set(key, value)
    before = window.last_message
    dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok).click()
    wait_until(lambda: window.last_message != before, "the correction to be saved")


# ---------------------------------------------------------------------------------------------
# pure parts


def test_status_quotes_and_expiry_as_shown() -> None:
    def info(status: str, keep: str | None = None, why: str | None = None) -> SessionInfo:
        return SessionInfo(id=1, title="t", activity="meeting", started_at=0.0, ended_at=60.0,
                           space="S", participants=[], turns=1, status=status,
                           keep_status=keep, keep_reason=why)

    assert session_status(info("kept", "running")) == "archive pending"
    assert session_status(info("kept", "failed", "no model")) \
        == "failed: no model"
    assert session_status(info("ended")) == "undecided"
    assert session_status(info("later")) == "decide later"
    archive = 'Topic: x\nIn their own words:\n- Marketing: "yes"\n- PM: "no"'
    assert key_quotes(archive) == ['Marketing: "yes"', 'PM: "no"']
    assert key_quotes("Topic: x") == []
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    assert expiry_time("never", now) is None
    assert expiry_time("30", now) == dt.datetime(2026, 1, 31, tzinfo=dt.UTC).timestamp()
    with pytest.raises(ValueError):
        expiry_time("soon", now)


# ---------------------------------------------------------------------------------------------
# under Xvfb


@under_x
def test_the_window_shows_sessions_archive_decisions_items_and_the_review_queue(
    window: Any, profile: Profile,
) -> None:
    listed = dict(window.session_rows())
    assert set(listed) == {f"{SPACE} (2)", "No Space (0)"}
    titles = [row[0] for row in listed[f"{SPACE} (2)"]]
    assert titles == ["Remote control design, meeting B (TS3010b)",
                      "Remote control design, meeting A (TS3010a)"]
    assert {row[3] for row in listed[f"{SPACE} (2)"]} == {"kept"}

    open_session(window, "TS3010b")
    assert window.archive.toPlainText().startswith("Topic: Functional design of the remote")
    assert ("Decided:\n- The remote will have no interchangeable covers.\n"  # as stored
            "- The remote has to work on all televisions.\n") in window.archive.toPlainText()
    assert [q.startswith("Project Manager: ") for q in
            (window.quotes.item(i).text() for i in range(window.quotes.count()))] == [True]
    decisions = {row[0]: row for row in rows(window.decisions)}
    covers = decisions["The remote will have no interchangeable covers."]
    assert covers[1:5] == ["no changeable covers", "changeable covers like Nokia phones",
                           "too few people would change covers for a good profit",
                           "Project Manager"]
    assert rows(window.item_list) == [[MINUTES["text"], "Project Manager", "after lunch", "open",
                                       "commitment"]]

    choose(window.decisions, "no interchangeable covers")  # its evidence turns are selected
    assert any("too less people would change it for good profit" in line
               for line in window.selected_turns())
    print("screenshot:", screenshot("window-session"))
    docs = Path(__file__).resolve().parents[1] / "artifacts" / "screenshots" / "window.png"
    assert window.grab().save(str(docs))
    print("window:", docs)

    window.tabs.setCurrentIndex(2)
    window.open_space.setCurrentText(SPACE)
    wait_until(lambda: window.open_count.text() == "2 open items", "the open items")
    assert [row[:4] for row in rows(window.open_tree)] == [
        [INSTRUCTIONS["text"], "Project Manager", "", "Remote control design, meeting A "
         "(TS3010a)"],
        [MINUTES["text"], "Project Manager", "after lunch", "Remote control design, meeting B "
         "(TS3010b)"]]
    print("screenshot:", screenshot("window-open-items"))

    window.tabs.setCurrentIndex(1)
    assert window.switches["memory_enabled"].isChecked()
    assert window.switches["session_archive_enabled"].isChecked()
    assert window.memory_rows() == [(SPACE, [[SECRETARY["text"], "preference", "pending",
                                              "never"]])]
    print("screenshot:", screenshot("window-memory"))
    (_, [memory]) = window_groups(window.memory_tree)[0]
    window.memory_tree.setCurrentItem(memory)
    window.expire_memory()
    save_dialog(window, days="30")
    wait_until(lambda: window.memory_rows()[0][1][0][3] != "never", "the expiry")
    window.memory_tree.setCurrentItem(window_groups(window.memory_tree)[0][1][0])
    window._review(MemoryApprove)
    wait_until(lambda: window.memory_rows() == [], "the approved memory to leave the queue")
    assert "approved" in profile.braincue("memory", "list", "--status", "approved")


@under_x
def test_corrections_made_in_the_window_flow_to_show_open_search_and_ask(
    window: Any, profile: Profile,
) -> None:
    meeting_b = profile.sessions["TS3010b"].id
    open_session(window, "TS3010b")
    before = dt.datetime.now().replace(microsecond=0) - dt.timedelta(seconds=1)
    while dt.datetime.now() - before < dt.timedelta(seconds=1.5):  # as-of reads by the second
        time.sleep(0.1)

    choose(window.item_list, "minutes")  # the owner renamed, the text with it
    window.edit_selected()
    save_dialog(window, owner="Sarah", text="Sarah will put the minutes in the Project "
                                             "Documents folder.")
    wait_until(lambda: [r[1] for r in rows(window.item_list)] == ["Sarah"], "the new owner")

    choose(window.decisions, "no interchangeable covers")
    window.edit_selected()
    save_dialog(window, chosen="one fixed cover",
                text="The remote will have one fixed cover.")
    wait_until(lambda: any(r[0] == "The remote will have one fixed cover. (corrected)"
                           for r in rows(window.decisions)), "the corrected decision")
    assert not any("interchangeable" in r[0] for r in rows(window.decisions))

    window.select_turns([t.id for t in window.session.turns if t.speaker == "Marketing"][:1])
    window.rename_speaker()
    assert window.dialog.inputs["speaker"].currentText() == "Marketing"
    save_dialog(window, name="Maria")
    wait_until(lambda: any(" Maria: " in window.transcript.item(i).text()
                           for i in range(window.transcript.count())), "the renamed speaker")
    print("screenshot:", screenshot("window-corrected"))

    choose(window.decisions, "all televisions")  # deleted as wrong
    window.retract_selected()
    wait_until(lambda: not any("televisions" in r[0] for r in rows(window.decisions)),
               "the deleted decision to go")

    open_session(window, "TS3010a")  # an item closed, then opened again
    choose(window.item_list, "instructions")
    window.close_selected("done")
    wait_until(lambda: [r[3] for r in rows(window.item_list)] == ["done"], "the item done")
    assert "instructions" not in profile.braincue("open", "--space", SPACE)
    choose(window.item_list, "instructions")
    window.reopen_selected()
    wait_until(lambda: [r[3] for r in rows(window.item_list)] == ["open"], "the item reopened")
    assert "instructions" in profile.braincue("open", "--space", SPACE)

    shown = profile.braincue("show", str(meeting_b))
    assert "Sarah will put the minutes in the Project Documents folder." in shown
    assert "The remote will have one fixed cover." in shown
    assert "superseded by" in shown  # the extracted versions stay, marked
    assert "] Maria: " in shown and "] Marketing: " not in shown
    assert f"(no longer current): {TELEVISIONS['text']}" in shown

    now_open = profile.braincue("open", "--space", SPACE)
    assert "Sarah" in now_open and "Sarah will put the minutes" in now_open
    as_of = before.strftime("%Y-%m-%d %H:%M:%S")
    then_open = profile.braincue("open", "--space", SPACE, "--as-of", as_of)
    assert "Project Manager will put the minutes" in then_open and "Sarah" not in then_open

    found = profile.braincue("search", "minutes Project Documents folder", "--space", SPACE,
                             "--json")
    texts = [hit["text"] for hit in json.loads(found)]
    assert "Sarah will put the minutes in the Project Documents folder." in texts
    assert MINUTES["text"] not in texts
    found_then = profile.braincue("search", "minutes Project Documents folder", "--space",
                                  SPACE, "--as-of", as_of, "--json")
    texts_then = [hit["text"] for hit in json.loads(found_then)]
    assert MINUTES["text"] in texts_then
    assert "Sarah will put the minutes in the Project Documents folder." not in texts_then
    covers_then = profile.braincue("search", "interchangeable covers", "--space", SPACE,
                                   "--as-of", as_of, "--json")
    assert COVERS["text"] in [h["text"].splitlines()[0] for h in json.loads(covers_then)]
    covers_now = profile.braincue("search", "interchangeable covers", "--space", SPACE,
                                  "--json")
    firsts = [h["text"].splitlines()[0] for h in json.loads(covers_now)]
    assert "The remote will have one fixed cover." in firsts and COVERS["text"] not in firsts

    answer = profile.braincue("ask", "--space", SPACE, "who puts the minutes in the folder?")
    assert ANSWER.split(" [")[0] in answer
    prompt = profile.model.asked[-1]
    assert "Sarah will put the minutes" in prompt  # what the answer is written from
    # the old wording is only in the archive: the account of the meeting as it was kept
    (kept,) = [source for source in prompt.split("\n\n[") if MINUTES["text"] in source]
    assert "(summary of the conversation)" in kept.splitlines()[0]


@under_x
def test_the_tray_menu_and_the_shell_open_the_window(qapp: Any, profile: Profile) -> None:  # noqa: F811
    from clients.tray import Tray

    tray = Tray(profile.paths, notifications=False)
    try:
        [action] = [a for a in tray.menu.actions() if a.text() == "Open BrainCue…"]
        action.trigger()
        wait_until(lambda: tray.window is not None and tray.window.isVisible()
                   and tray.window.loads, "the window from the tray")
        assert tray.window is not None
        assert len(dict(tray.window.session_rows())[f"{SPACE} (2)"]) == 2
    finally:
        tray.close()
    assert "See, correct and review" in profile.braincue("window", "--help")


@under_x
def test_events_keep_the_window_current(window: Any, profile: Profile, test_data: Path) -> None:
    loads = window.loads
    with Client(profile.paths) as client:  # a session ends elsewhere: the daemon says so
        client.request(ImportTranscript(
            content=excerpt(test_data / "meetings" / "TS3010a.json", [(0, 4)]),
            filename="TS3010a.json"))
    wait_until(lambda: window.loads > loads and "No Space (1)" in dict(window.session_rows()),
               "the new session in the list")
    [row] = dict(window.session_rows())["No Space (1)"]
    assert row[3] == "undecided"


@under_x
def test_a_kept_session_is_refiled_from_the_window(window: Any, profile: Profile) -> None:
    with Client(profile.paths) as client:
        client.request(AddSpace(name="Hardware"))
    window.reload()
    wait_until(lambda: "Hardware (0)" in dict(window.session_rows()), "the new Space")
    open_session(window, "TS3010a")
    window.keep_space.setCurrentText("Hardware")
    window.remember("keep")
    wait_until(lambda: "Hardware (1)" in dict(window.session_rows()), "the session re-filed")
    [row] = dict(window.session_rows())["Hardware (1)"]
    assert row[0] == "Remote control design, meeting A (TS3010a)" and row[3] == "kept"
    assert "in Hardware" in window.last_message


@under_x
def test_a_name_the_daemon_was_not_sure_of_is_offered_and_one_click_confirms_it(
    qapp: Any, short_home: Path,  # noqa: F811
) -> None:
    """Against the fake daemon, which names a voice and its turns as the daemon does."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from clients.window import MemoryWindow

    def session(session_id: int, title: str, said: list[tuple[str, str]]) -> SessionReply:
        info = SessionInfo(id=session_id, title=title, activity="meeting", started_at=0.0,
                           ended_at=600.0, space=None, participants=[], turns=len(said),
                           status="ended")
        return SessionReply(session=info, turns=[
            TurnInfo(id=session_id * 10 + i, seq=i, speaker=who, source="loopback",
                     start=10.0 * i, end=10.0 * i + 5, text=text)
            for i, (who, text) in enumerate(said)])

    daemon = FakeDaemon(Paths.resolve())
    daemon.shown = {7: session(7, "Budget sync", [("me", "Can you send the budget?"),
                                                  ("Them 1", "Friday works for me."),
                                                  ("Them 2", "I will send it by Friday.")]),
                    8: session(8, "Hiring chat", [("Them 1", "We have two candidates.")])}
    daemon.sessions = [reply.session for reply in daemon.shown.values()]
    daemon.heard = [HeardVoiceInfo(session_id=7, label="Them 1", name=None, seconds=5.0),
                    HeardVoiceInfo(session_id=7, label="Them 2", name=None, seconds=5.0,
                                   suggestion="Sarah"),
                    HeardVoiceInfo(session_id=8, label="Them 1", name=None, seconds=5.0)]
    daemon.start()
    window = MemoryWindow(daemon.paths)
    window.show()
    try:
        def lines() -> list[str]:
            return [window.transcript.item(i).text() for i in range(window.transcript.count())]

        window.show_session(8)  # no suggestion: nothing offered
        wait_until(lambda: window.offered_in == 8, "session 8 and its offers")
        assert window.offers == [] and window.offer_buttons == []
        assert not window.offer_label.isVisible()

        window.show_session(7)
        wait_until(lambda: window.offered_in == 7, "session 7 and its offers")
        [button] = window.offer_buttons
        assert button.text() == "Them 2 — Sarah?" and button.isVisible()
        assert window.offer_label.isVisible()
        print("screenshot:", screenshot("window-offer"))
        QTest.mouseClick(button, Qt.MouseButton.LeftButton)
        assert msgspec.structs.asdict(daemon.wait_for(VoiceName)) | {"id": ""} == {
            "voice": "Them 2", "name": "Sarah", "session_id": 7, "v": 1, "id": ""}
        wait_until(lambda: "[00:20] Sarah: I will send it by Friday." in lines(),
                   "the turn with the name")
        assert "[00:10] Them 1: Friday works for me." in lines()  # the other voice stays
        wait_until(lambda: window.offer_buttons == [], "the offer to go")
        assert not window.offer_label.isVisible()
        assert window.last_message.startswith("Them 2 is Sarah: 1 turns")
    finally:
        window.close_link()
        window.close()
        daemon.stop()


@under_x
def test_a_name_offered_by_the_real_daemon_is_confirmed_in_the_window_and_its_turns_follow(
    qapp: Any, short_home: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    """The daemon's own voices, with the scripted encoder of the diarisation tests: Sarah is
    named in one session; in the next a voice only 0.7 alike to her (her tone and another at
    once) is not named but offered. The window's click names it through the daemon, which
    renames its turns."""
    import numpy as np
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from test_diarize import RATE, TONES, ToneEncoder, speech

    import daemon.handlers.live
    from clients.window import MemoryWindow
    from daemon.asr.engine import Segment
    from daemon.store.records import NewTurn
    from daemon.voices.diarize import DiarizeConfig
    from daemon.voices.service import Voices

    config = DiarizeConfig(named_voice=0.8, suggest_voice=0.5)
    monkeypatch.setattr(daemon.handlers.live, "Voices", lambda *args: Voices(
        *args, encoder=ToneEncoder(), config=config))
    running = ThreadedDaemon(Engines(lambda: Settings(), Paths.resolve().models_dir,
                                     embedder=ScriptedEmbedder(),
                                     generator=ScriptedGenerator(["unused"])), Config.load())
    running.start(timeout=60)
    assert running.daemon is not None and running.daemon.live is not None
    store, voices = running.daemon.store, running.daemon.live.voices
    assert voices is not None

    def heard(title: str, audio: np.ndarray, words: str) -> int:
        """A session in which one voice of "them" said ``words``, as capture stores it."""
        session = store.create_session(title=title, started_at=time.time())
        said = voices.label(session.id, audio, [Segment(0.0, len(audio) / RATE, words)])
        assert said is not None
        store.append_turns(session.id, [
            NewTurn(speaker="me", text="Can you send the budget?", start=0.0, end=2.0,
                    source="mic"),
            *[NewTurn(speaker=s.speaker, text=s.text, start=3.0 + s.start, end=3.0 + s.end,
                      source="loopback", voice_label=s.voice, voice_id=s.voice_id)
              for s in said]])
        store.end_session(session.id, ended_at=time.time() + 60)
        return session.id

    first = heard("Budget kickoff", speech(("ann", 3.0)), "I will draft the budget.")
    t = np.arange(3 * RATE) / RATE
    alike = (0.1 * np.sin(2 * np.pi * TONES["ann"] * t)
             + 0.1 * np.sin(2 * np.pi * TONES["bob"] * t)).astype(np.float32)
    window = None
    try:
        paths = Paths.resolve()
        with Client(paths) as client:
            client.request(VoiceName(voice="Them 1", name="Sarah", session_id=first))
        later = heard("Budget review", alike, "I will send it by Friday.")
        window = MemoryWindow(paths)
        window.show()
        window.show_session(later)
        wait_until(lambda: window.offered_in == later, "the later session and its offers")
        [button] = window.offer_buttons
        assert button.text() == "Them 1 — Sarah?"  # offered, not named
        assert any("] Them 1: I will send it by Friday." in window.transcript.item(i).text()
                   for i in range(window.transcript.count()))
        QTest.mouseClick(button, Qt.MouseButton.LeftButton)
        wait_until(lambda: any("] Sarah: I will send it by Friday." in
                               window.transcript.item(i).text()
                               for i in range(window.transcript.count())),
                   "the turn with the name")
        wait_until(lambda: window.offer_buttons == [], "the offer to go")
        assert [t.speaker for t in store.turns(later)] == ["me", "Sarah"]
        [sarah] = [v for v in voices.heard() if v.session_id == later]
        assert (sarah.name, sarah.suggestion) == ("Sarah", None)
    finally:
        if window is not None:
            window.close_link()
            window.close()
        running.stop()

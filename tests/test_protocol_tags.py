"""The wire names of the protocol's messages are its contract with every client built
against it: a move or a rename in the code must not change them. A new message type is added
here on purpose; changing or removing a tag breaks clients already installed."""

from __future__ import annotations

from typing import Any

from daemon.ipc import protocol

# request tag -> the tag of its reply
REQUESTS = {
    "add_document": "document_reply",
    "add_space": "space_reply",
    "ask": "ask_reply",
    "ask_cancel": "ok",
    "close_item": "history_reply",
    "correct_item": "history_reply",
    "export_session": "export_reply",
    "forget": "forget_reply",
    "history": "history_reply",
    "import_audio": "import_audio_reply",
    "import_transcript": "import_transcript_reply",
    "list_assertions": "assertions_reply",
    "list_documents": "documents_reply",
    "list_sessions": "sessions_reply",
    "list_spaces": "spaces_reply",
    "memory_approve": "memory_reply",
    "memory_archive": "memory_reply",
    "memory_edit": "memory_reply",
    "memory_expire": "memory_reply",
    "memory_list": "memory_list_reply",
    "memory_reject": "memory_reply",
    "memory_scope": "memory_reply",
    "open_items": "items_reply",
    "pause": "ok",
    "ping": "pong",
    "remember": "remember_reply",
    "remove_document": "deleted_reply",
    "remove_space": "deleted_reply",
    "rename_speaker": "session_reply",
    "reopen_item": "history_reply",
    "retract_item": "history_reply",
    "search": "search_reply",
    "select_items": "items_reply",
    "set_space": "space_reply",
    "settings_get": "settings_reply",
    "settings_set": "settings_reply",
    "show_session": "session_reply",
    "start": "start_reply",
    "status": "status_reply",
    "stop": "stop_reply",
    "voice_forget": "voice_reply",
    "voice_merge": "voice_reply",
    "voice_name": "voice_reply",
    "voice_show": "voice_reply",
    "voices_list": "voices_reply",
}
REPLIES = {
    "ask_reply",
    "assertions_reply",
    "deleted_reply",
    "document_reply",
    "documents_reply",
    "error",
    "export_reply",
    "forget_reply",
    "history_reply",
    "import_audio_reply",
    "import_transcript_reply",
    "items_reply",
    "memory_list_reply",
    "memory_reply",
    "ok",
    "pong",
    "remember_reply",
    "search_reply",
    "session_reply",
    "sessions_reply",
    "settings_reply",
    "space_reply",
    "spaces_reply",
    "start_reply",
    "status_reply",
    "stop_reply",
    "voice_reply",
    "voices_reply",
}
EVENTS = {
    "answer_done",
    "answer_evidence",
    "answer_token",
    "carried_forward",
    "import_progress",
    "session_ended",
    "session_started",
    "stage_progress",
    "status_event",
    "subscribed",
    "turn_event",
}


def defined(family: Any) -> dict[str, Any]:
    """The family's types the protocol defines (tests register probes of their own)."""
    return {tag: cls for tag, cls in family.types.items()
            if cls.__module__.startswith(f"{protocol.__name__}.")}


def test_every_request_keeps_its_tag_and_its_reply() -> None:
    requests = defined(protocol.REQUESTS)
    assert {tag: protocol.tag_of(cls.reply_type) for tag, cls in requests.items()} == REQUESTS


def test_every_reply_and_event_keeps_its_tag() -> None:
    assert set(defined(protocol.REPLIES)) == REPLIES
    assert set(defined(protocol.EVENTS)) == EVENTS


def test_the_tag_is_the_snake_case_class_name() -> None:
    for family in (protocol.REQUESTS, protocol.REPLIES, protocol.EVENTS):
        for tag, cls in defined(family).items():
            assert tag == protocol.snake_case(cls.__name__)

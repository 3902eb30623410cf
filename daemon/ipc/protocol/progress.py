"""The progress of a long request's stages."""

from __future__ import annotations

from daemon.ipc.protocol.base import TOPIC_PROGRESS, Event, progress_topic

__all__ = [
    "StageProgress"
]


class StageProgress(Event):
    """How far one stage of the long request ``request_id`` has got: ``done`` of ``total``.

    A keep (Remember) goes through ``extraction`` and ``archive`` (pieces of the transcript
    sent to the language model) and ``reconciliation`` (extracted statements checked against
    what is stored); an ImportTranscript or AddDocument through ``embedding`` (texts embedded,
    where ``total`` may grow as the store finds more to embed). A stage is reported when it
    starts (``done`` 0) and after each step; a stage that failed stops short of its total (the
    reply says why). ``stage`` is a plain string: a client shows a stage it does not know.
    """

    topic_prefix = TOPIC_PROGRESS
    request_id: str
    stage: str
    done: int
    total: int

    def topic(self) -> str:
        return progress_topic(self.request_id)

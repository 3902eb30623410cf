"""Progress of long requests as StageProgress events on ``progress_topic(request.id)``."""

from __future__ import annotations

import contextlib

import trio

from daemon.ipc.dispatch import Publish
from daemon.ipc.protocol import StageProgress
from daemon.llm.embed import EmbedProgress


def embedding_progress(request_id: str, publish: Publish) -> EmbedProgress:
    """An :class:`EmbedProgress` that publishes the ``embedding`` stage of ``request_id``, for
    the request's store calls to count what they embed (on the store's worker threads). Make
    it on the trio thread; the events are published there, in order, before the request's work
    hands back its result."""
    token = trio.lowlevel.current_trio_token()

    def report(done: int, total: int) -> None:
        event = StageProgress(request_id=request_id, stage="embedding", done=done, total=total)
        with contextlib.suppress(trio.RunFinishedError):  # the daemon is gone: nobody waits
            token.run_sync_soon(publish, event)

    return EmbedProgress(report)

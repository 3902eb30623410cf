"""Helpers for the store tests: a settable clock, embedders that count or fail, a transcript."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from daemon.errors import EngineError
from daemon.llm.embed import EmbedProgress, ScriptedEmbedder
from daemon.store.records import NewTurn
from daemon.store.store import Store

T0 = 1_785_000_000.0  # 2026-07-25


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class CountingEmbedder(ScriptedEmbedder):
    """The scripted embedder, remembering every text it embedded; it can be made to fail."""

    def __init__(self, dimensions: int = 64, *, model_id: str | None = None) -> None:
        super().__init__(dimensions, model_id=model_id)
        self.texts: list[str] = []
        self.failing = False

    def embed_sync(
        self, texts: Sequence[str], progress: EmbedProgress | None = None
    ) -> np.ndarray:
        if self.failing:
            raise EngineError("embedding failed: scripted failure")
        self.texts.extend(texts)
        return super().embed_sync(texts, progress)


def open_store(
    data_dir: Path, embedder: ScriptedEmbedder | None = None, clock: Clock | None = None
) -> Store:
    return Store(data_dir, embedder or CountingEmbedder(), clock=clock or Clock())


def turns(*texts: str, speaker: str = "me", start: float = 0.0, step: float = 5.0) -> list[NewTurn]:
    return [
        NewTurn(speaker=speaker, text=text, start=start + i * step) for i, text in enumerate(texts)
    ]


def recorded_session(
    store: Store,
    texts: Sequence[str],
    *,
    space_id: int | None = None,
    title: str = "call",
    started_at: float = T0,
) -> int:
    """A finished session holding ``texts`` as turns; returns its id."""
    session = store.create_session(space_id=space_id, title=title, started_at=started_at)
    store.append_turns(session.id, turns(*texts))
    store.end_session(session.id, ended_at=started_at + 5 * len(texts))
    return session.id


# A short transcript in the import format (`braincue import-transcript`).
TRANSCRIPT: dict[str, Any] = {
    "title": "Atlas sync",
    "started_at": "2026-07-28T14:05:00+02:00",
    "activity": "project",
    "participants": ["me", "Sarah"],
    "turns": [
        {"speaker": "me", "text": "Shall we ship Atlas on Friday?", "t": 0, "ref": "u1"},
        {"speaker": "Sarah", "text": "Friday works, the database migration is done.",
         "t": 3.5, "end": 6.0},
        {"speaker": "me", "text": "Then Friday it is.", "t": 7.25},
    ],
}

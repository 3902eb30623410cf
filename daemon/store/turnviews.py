"""What is embedded for one transcript turn (pure: no I/O).

A 1,400-character chunk embedded whole dilutes each of its turns: on long chats
(docs/benchmarks/search.md) vectors of whole chunks put all the evidence of a question in the
top 5 for about 40% of the questions, vectors of single turns scored by their chunk's best turn
for about 63%. So the store embeds every transcript turn on its own, under a context header
like a chunk's ``[date | kind | title | participants | speaker @ ts]``, and the vector search
ranks a chunk by its best-matching turn. A turn never changes once stored, so it is embedded
exactly once.
"""

from __future__ import annotations

from daemon.sensitive.gate import mask_lines
from daemon.store.chunking import ChunkContext, ChunkTurn, header, turn_line


def turn_view(ctx: ChunkContext, turn: ChunkTurn) -> str:
    """The text embedded for ``turn``: its own context header, then its ``speaker: text`` line
    with any secret in it masked (a vector can be inverted towards its text)."""
    line = mask_lines([turn_line(turn)], turn.before)[0]
    return f"{header(ctx, turn.speaker, turn.start)}\n{line}"

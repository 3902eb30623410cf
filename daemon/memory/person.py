"""Memory about the person: the review of what was proposed, and its recall.

A memory is an assertion with ``about_person``: a standing claim about the user, proposed from
a kept session as a *pending* candidate. Nothing about it is recalled until the user approves
it, and then only while memory is consented to (``memory_enabled``), before it expires, in its
own Space or — profile-wide — in every Space, and only with a vector from the current embedding
model (a model change drops it from recall until it is embedded again, rather than letting it
rank with a stale vector). Revoking consent silences recall and deletes nothing.

Every function here is synchronous over the :class:`~daemon.store.store.Store`: call it from a
thread.
"""

from __future__ import annotations

import logging

from daemon.errors import BrainCueError, InvalidInput
from daemon.store.records import Assertion, ReviewStatus
from daemon.store.scope import Scope
from daemon.store.store import Store

log = logging.getLogger(__name__)

RECALL_K = 5


def get_memory(store: Store, memory_id: int) -> Assertion:
    """The memory ``memory_id``; an assertion that is not about the person is refused."""
    found = store.get_assertion(memory_id)
    if not found.about_person:
        raise InvalidInput(
            f"assertion {memory_id} is not a memory about you",
            fix=f"see its history with `braincue history {memory_id}`",
        )
    return found


def list_memories(
    store: Store,
    *,
    space_id: int | None = None,
    profile_wide: bool = False,
    status: ReviewStatus | None = None,
) -> list[Assertion]:
    """Memories for review, newest first: all, those of ``space_id``, or only the profile-wide
    ones; optionally of one status. Superseded versions are left out."""
    return store.list_assertions(
        space_id=space_id,
        profile_wide=profile_wide,
        about_person=True,
        statuses=None if status is None else [status],
    )


def set_status(store: Store, memory_id: int, status: ReviewStatus) -> Assertion:
    """Approve, reject or archive a memory (or put it back to pending)."""
    get_memory(store, memory_id)
    return store.update_assertion(memory_id, review_status=status)


def edit(store: Store, memory_id: int, text: str) -> Assertion:
    """Rewrite a memory; it is embedded again, so recall follows the new words."""
    get_memory(store, memory_id)
    return store.update_assertion(memory_id, text=" ".join(text.split()))


def rescope(store: Store, memory_id: int, space_id: int | None) -> Assertion:
    """Recall a memory only in ``space_id``, or (None) everywhere."""
    get_memory(store, memory_id)
    return store.update_assertion(memory_id, space_id=space_id)


def set_expiry(store: Store, memory_id: int, expires_at: float | None) -> Assertion:
    """Stop recalling a memory after ``expires_at`` (None: never)."""
    get_memory(store, memory_id)
    return store.update_assertion(memory_id, expires_at=expires_at)


def recall_memories(
    store: Store, query: str, space_id: int | None, k: int = RECALL_K, *, consent: bool
) -> list[Assertion]:
    """The ``k`` memories about the person nearest to ``query`` that may be recalled in
    ``space_id`` (None: outside any Space, so profile-wide ones only), best first.

    Empty without consent, without an embedding model, or when embedding the query fails: a
    failing provider means no memories, never an error in the middle of an answer.
    """
    if not consent or k <= 0 or store.embedder is None or not query.strip():
        return []
    scope = Scope(space_id=space_id, person_memory=True)
    try:
        vector = store.index.embed_query(query)
    except BrainCueError as e:
        log.warning("memories not recalled: %s", e)
        return []
    assert vector is not None
    # the scope admits every approved assertion; memories are the about_person ones among
    # them, so fetch more until k of them are found or nothing nearer is left
    limit = max(4 * k, 20)
    while True:
        hits = store.vector_assertions(vector, scope, limit)
        found = [a for a in store.get_assertions([h.id for h in hits]) if a.about_person]
        if len(found) >= k or len(hits) < limit:
            return found[:k]
        limit *= 4

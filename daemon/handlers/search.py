"""The handler of Search: fusion search (``daemon.store.search``) in the scope a client names.

The scope is the Space asked for plus profile-wide memory (no Space: profile-wide memory only);
memories about the person are searched only with the ``memory_enabled`` consent. The caps and
``k`` come from the settings unless the request gives ``k``.
"""

from __future__ import annotations

from daemon.errors import InvalidInput
from daemon.handlers.context import Context
from daemon.handlers.wire import search_hit
from daemon.ipc.protocol import Search, SearchReply
from daemon.store.scope import Scope
from daemon.store.search import SearchOptions, search

MAX_K = 100


async def register(daemon: Context) -> None:
    store = daemon.store

    async def search_(request: Search) -> SearchReply:
        settings = daemon.settings
        k = settings.search_k if request.k is None else request.k
        if not 1 <= k <= MAX_K:
            raise InvalidInput(f"k: {k} results is not between 1 and {MAX_K}")
        options = SearchOptions.from_settings(settings)

        def work() -> SearchReply:
            space_id = store.space_id(request.space)
            scope = Scope(space_id=space_id, person_memory=settings.memory_enabled)
            found = search(store, request.query, scope=scope, k=k, as_of=request.as_of,
                           explain=request.explain, options=options,
                           reranker=daemon.engines.reranker())
            return SearchReply(results=[search_hit(r) for r in found])

        return await daemon.store.run(work)

    daemon.handlers.add(Search, search_)

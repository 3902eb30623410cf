"""The memory store: one SQLite database and its vector indexes per profile.

``store.Store`` is the public face, made of one part per table family: ``spaces``,
``sessions`` (and keep state), ``turns`` (turns, chunks, archives), ``document_store``,
``assertions`` (and open items) and ``legs`` (the search legs fusion search builds on), over the
shared state of ``base``; ``records`` holds the row types and ``scope`` the rule of what a
search may see. ``db`` (migrations, the writer thread),
``schema``, ``sql`` (rows to records), ``writes`` (transaction bodies) and ``vectors`` (the
usearch cache) are its machinery; ``chunking``, ``fts``, ``transcript``, ``documents`` and
``export`` are pure helpers. Nothing is imported here, so
the pure helpers stay cheap to import.
"""

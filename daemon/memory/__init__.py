"""Memory: what a kept session becomes, and what is answered from it.

``remember`` keeps a session (archive, assertions, memory candidates; its state survives a
crash) with ``archive``, ``pieces``, ``extract`` and ``validate`` as its pure rules and
``behind_live`` pausing it while a session is live; ``sensitive`` is the gate every model output
passes before it is stored; ``person`` reviews and recalls memories about the user;
``open_items`` and ``item_questions`` follow commitments and tasks; ``ask`` and ``grounding``
answer questions from recall; ``retention`` forgets by age.
"""

"""Live capture: what the daemon hears becomes searchable turns.

``rules`` — the session rules, pure (when a session starts and ends by itself, what a start
says); ``pipeline`` — audio blocks -> VAD -> utterances -> the speech model, in order;
``actor`` — :class:`daemon.live.actor.Live`, which owns capture, the pipeline and the live
session, and stores what is said; ``records`` — what it takes, answers and publishes, plain data
(the live handler converts it to and from the protocol).
"""

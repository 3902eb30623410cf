"""The BrainCue protocol: every message between the daemon and its clients.

Imported by the daemon and by every client, so it depends on msgspec only.

Wire format: each message is one msgpack map tagged by ``type`` (the snake-case class name).
Requests go to the daemon's ROUTER socket as the two frames ``[b"", payload]`` (a DEALER with an
empty delimiter, so REQ sockets work too); each carries the protocol version ``v`` and a request
id ``id`` that its reply echoes. Events come from the PUB socket as ``[topic, payload]``.

The types live in one module per request family, as the daemon's ``handlers`` are split
(``base`` holds the bases, ``codec`` the encoding); this package re-exports every name. Adding
a request type is one struct in its family's module plus one handler in the daemon::

    class Forget(Request[Ok]):
        session_id: int

Subclasses of :class:`Request`, :class:`Reply` and :class:`Event` register themselves, so the
decoders always know every type; ``Request[Ok]`` declares the reply the request gets.
"""

# Every public name of every family, so that `from daemon.ipc.protocol import X` works.
from daemon.ipc.protocol.ask import *  # noqa: F403
from daemon.ipc.protocol.atrest import *  # noqa: F403
from daemon.ipc.protocol.base import *  # noqa: F403
from daemon.ipc.protocol.builtin import *  # noqa: F403
from daemon.ipc.protocol.codec import *  # noqa: F403
from daemon.ipc.protocol.live import *  # noqa: F403
from daemon.ipc.protocol.memory import *  # noqa: F403
from daemon.ipc.protocol.open_items import *  # noqa: F403
from daemon.ipc.protocol.progress import *  # noqa: F403
from daemon.ipc.protocol.search import *  # noqa: F403
from daemon.ipc.protocol.store import *  # noqa: F403
from daemon.ipc.protocol.voices import *  # noqa: F403

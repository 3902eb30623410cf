"""Forgetting by age: ``braincue forget --before DATE`` and ``retention_days``.

Both delete whole sessions exactly as a discard does (turns, chunks, archive, the assertions
they produced, vectors, FTS entries, pending memory candidates; memories the user reviewed
stay). ``forget`` takes every session that started before a time (in one Space, or all);
retention only those the user never decided about — ended and never answered, or answered
"later" — once they are older than ``retention_days``. A live session is never touched.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import msgspec

from daemon.store.records import Deleted, SessionStatus
from daemon.store.store import Store

log = logging.getLogger(__name__)

DAY_S = 86400.0
UNDECIDED: tuple[SessionStatus, ...] = ("ended", "later")
FORGETTABLE: tuple[SessionStatus, ...] = ("ended", "kept", "later")


@dataclass
class Forgotten:
    session_ids: list[int] = field(default_factory=list)
    deleted: Deleted = field(default_factory=Deleted)


def forget_before(store: Store, before: float, *, space_id: int | None = None,
                  statuses: tuple[SessionStatus, ...] = FORGETTABLE) -> Forgotten:
    """Delete the sessions that started before ``before`` (of ``space_id`` when given), with
    ``statuses``. A blocking call (the store's)."""
    sessions = store.list_sessions(space_id=space_id, statuses=list(statuses))
    out = Forgotten()
    total = msgspec.structs.asdict(out.deleted)
    for session in sorted(sessions, key=lambda s: s.id):
        if session.started_at >= before:
            continue
        deleted = store.delete_session(session.id)
        out.session_ids.append(session.id)
        for name, n in msgspec.structs.asdict(deleted).items():
            total[name] += n
    out.deleted = Deleted(**total)
    return out


def expire_undecided(store: Store, now: float, retention_days: int) -> Forgotten:
    """Retention: delete undecided sessions older than ``retention_days`` (0: none)."""
    if retention_days <= 0:
        return Forgotten()
    forgotten = forget_before(store, now - retention_days * DAY_S, statuses=UNDECIDED)
    if forgotten.session_ids:
        log.info("retention (%d days): deleted %d undecided session(s): %s", retention_days,
                 len(forgotten.session_ids), ", ".join(map(str, forgotten.session_ids)))
    return forgotten

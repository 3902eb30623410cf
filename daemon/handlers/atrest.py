"""The daemon part for what is at rest: scheduled backups, retention, and ``Forget``.

- Backups: every ``backup_interval_hours`` (default daily) an online backup, taken only while
  no session is live (capture and transcription have the machine), checked once a minute; a
  profile with no backup yet gets its first an hour after the daemon started.
- Retention: with ``retention_days`` on, undecided sessions older than that are deleted like a
  discard, checked at start and hourly, each run logged and announced as a status event.
- ``Forget``: sessions before a date, in one Space or all (``braincue forget --before``).
"""

from __future__ import annotations

import logging
import time

import msgspec
import trio

from daemon.errors import BrainCueError
from daemon.handlers.context import Context
from daemon.ipc.protocol import Forget, ForgetReply, StatusEvent
from daemon.memory.retention import Forgotten, expire_undecided, forget_before
from daemon.store.backup import latest_backup

log = logging.getLogger(__name__)

BACKUP_CHECK_S = 60.0
FIRST_BACKUP_AFTER_S = 3600.0  # a profile with no backup yet: an hour after the daemon started
RETENTION_CHECK_S = 3600.0


def _counts(forgotten: Forgotten) -> dict[str, int]:
    return {k: v for k, v in msgspec.structs.asdict(forgotten.deleted).items() if v}


async def register(daemon: Context) -> None:
    store = daemon.store

    async def forget(request: Forget) -> ForgetReply:
        def run() -> Forgotten:
            space_id = store.space_id(request.space)
            return forget_before(store, request.before, space_id=space_id)

        forgotten = await daemon.store.run(run)
        return ForgetReply(session_ids=forgotten.session_ids, deleted=_counts(forgotten))

    daemon.handlers.add(Forget, forget)
    daemon.nursery.start_soon(_retention, daemon)
    daemon.nursery.start_soon(_scheduled_backups, daemon)


async def _retention(daemon: Context) -> None:
    while True:
        days = daemon.settings.retention_days
        if days > 0:
            try:
                forgotten = await daemon.store.run(expire_undecided, daemon.store, time.time(),
                                                   days)
            except BrainCueError as e:
                log.warning("retention could not delete old sessions: %s", e)
            else:
                if forgotten.session_ids:
                    daemon.publish(StatusEvent(
                        capture=daemon.capture_state(),
                        message=f"retention: deleted {len(forgotten.session_ids)} undecided "
                                f"session(s) older than {days} days"))
        await trio.sleep(RETENTION_CHECK_S)


def backup_due(last: float, now: float, interval_hours: float) -> bool:
    return interval_hours > 0 and now - last >= interval_hours * 3600


async def _scheduled_backups(daemon: Context) -> None:
    store = daemon.store
    while True:
        settings = daemon.settings
        latest = latest_backup(store.data_dir)
        live = daemon.live_status()
        idle = live is None or live.session_id is None
        now = time.time()
        if latest is not None:
            due = backup_due(latest.created_at, now, settings.backup_interval_hours)
        else:
            due = settings.backup_interval_hours > 0 and \
                now - daemon.started_at >= FIRST_BACKUP_AFTER_S
        if idle and due:
            try:
                await store.run(store.make_backup, reason="scheduled",
                                keep=settings.backups_kept)
            except BrainCueError as e:
                log.warning("the scheduled backup failed: %s", e)
        await trio.sleep(BACKUP_CHECK_S)

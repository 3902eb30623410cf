"""`braincue show ID` and `braincue sessions` on kept sessions, against a real daemon
(in-process, scripted models): what a keep remembered, and where a keep stands."""

from __future__ import annotations

import json
from pathlib import Path

from test_cli_memory import braincue, ok, recorded, scripted_daemon
from test_persistence_e2e import Script

from daemon.errors import EngineError


async def test_show_prints_the_archive_and_the_assertions_of_a_kept_session(short_home: Path) -> None:
    async with scripted_daemon(Script()) as daemon:
        await daemon.store.run(lambda: daemon.store.create_space("Atlas"))
        session_id = await recorded(daemon)
        await ok("keep", str(session_id), "--space", "Atlas")
        archive = await daemon.store.run(lambda: daemon.store.archive(session_id))
        assertions = await daemon.store.run(lambda: daemon.store.list_assertions(session_id=session_id))
        by_kind = {a.kind: a.id for a in assertions}

        out = (await ok("show", str(session_id))).splitlines()
        assert out[:4] == [f"session {session_id}: Atlas sync", out[1], "meeting, kept",
                           "Space: Atlas"]
        archive_at = out.index("Archive")
        assert out[archive_at + 2:archive_at + 2 + len(archive[0].body.splitlines())] == \
            archive[0].body.splitlines()
        assert "Topic: Atlas launch" in out[archive_at + 2]
        listed = out.index("Assertions (3)")
        assert listed > archive_at
        # in the order said (all three in the one chunk: then as extracted), each with its
        # details and where it was said
        assert out[listed + 1:listed + 8] == [
            f"  {by_kind['decision']}  decision  said at [00:00]: Atlas launches on March 3rd.",
            "      chosen: March 3rd",
            "      over: February",
            f"  {by_kind['commitment']}  commitment  said at [00:00]: Priya will send the "
            "revised budget by Friday.",
            "      owner: Priya; due: Friday",
            f"  {by_kind['preference']}  preference  said at [00:00] (memory about you, "
            "pending): Prefers concise written updates over long status calls.",
            "",
        ]
        assert out[listed + 8] == "Transcript"
        assert out[listed + 9].startswith("[00:00] them: Let's settle the Atlas launch.")

        shown = json.loads(await ok("show", str(session_id), "--json"))
        assert shown["session"]["keep_status"] == "done"
        assert shown["archive"].startswith("Topic: Atlas launch")
        decision = next(a for a in shown["assertions"] if a["kind"] == "decision")
        assert (decision["chosen"], decision["alternatives"]) == ("March 3rd", ["February"])
        assert len(shown["turns"]) == 3


async def test_a_failed_keep_is_shown_by_sessions_and_show(short_home: Path) -> None:
    script = Script(assertions=EngineError("the model's answer was cut off after 1536 tokens"))
    async with scripted_daemon(script) as daemon:
        await daemon.store.run(lambda: daemon.store.create_space("Atlas"))
        session_id = await recorded(daemon, "Atlas")
        kept = await ok("keep", str(session_id))
        assert "note: extraction failed: the model's answer was cut off after 1536 tokens" in kept

        reason = ("archive failed: extraction failed: the model's answer was cut off after "
                  f"1536 tokens (`braincue keep {session_id}` tries again)")
        listing = await ok("sessions")
        assert "kept, archive failed" in listing.splitlines()[1]
        assert listing.splitlines()[-1] == f"session {session_id}: {reason}"
        shown = (await ok("show", str(session_id))).splitlines()
        assert f"Archive ({reason})" in shown
        assert not any(line.startswith("Assertions") for line in shown)


async def test_show_of_a_session_never_kept_has_no_archive_section(short_home: Path) -> None:
    async with scripted_daemon(Script()) as daemon:
        session_id = await recorded(daemon)
        out = (await ok("show", str(session_id))).splitlines()
        assert "meeting, ended" in out
        assert "Transcript" in out
        assert not any(line.startswith(("Archive", "Assertions")) for line in out)
        missing = await braincue("show", "999")
        assert "no session 999" in str(missing.exception)

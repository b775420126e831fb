"""Runs held by another process show as running elsewhere (with who), lapsed ones as crashed."""

from __future__ import annotations

import time

from rich.console import Console

from lovia import (
    AssistantMessage,
    RunHead,
    RunOwner,
    RunSnapshot,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCall,
    UserMessage,
)
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.widgets.run_header import RunHeader
from tests.tui.conftest import make_app, settle, told, wait_for

BUILD_HOST = RunOwner(host="build-7", pid=4242, started=99)


async def store_runs(db) -> None:
    """Two in-flight runs of session s-a on another host: one still leased, one whose lease lapsed."""
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        await session.append("s-a", [UserMessage(text="earlier"), AssistantMessage(text="ok")], run_id="old")
        for run_id, text, lease_until in [("run-live", "live job", time.time() + 3600),
                                          ("run-lapsed", "lapsed job", time.time() - 60)]:
            head = RunHead(agent="assistant", status="running", turn=1, session_id="s-a", first_input=text,
                           owner=BUILD_HOST, claim=f"token-{run_id}", lease_until=lease_until)
            await checkpointer.save(RunSnapshot(run_id, head, [
                UserMessage(text=text), ToolCall(call_id=f"c-{run_id}", name="wait", arguments='{"seconds": 60}')]))


def plain(renderable) -> str:
    console = Console(width=100, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


async def test_runs_pane_and_transcript_tell_running_elsewhere_from_crashed(tmp_path):
    db = tmp_path / "lovia.db"
    await store_runs(db)
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        pane = app.screen.query_one("RunsPane")
        assert {r.run_id for r in pane.runs} == {"run-live", "run-lapsed"}
        options = app.screen.query_one("#run-list")
        shown = {options.get_option_at_index(i).id: plain(options.get_option_at_index(i).prompt)
                 for i in range(options.option_count)}
        assert "running elsewhere" in shown["run-live"] and "pid 4242 on build-7" in shown["run-live"]
        assert "crashed" in shown["run-lapsed"] and "elsewhere" not in shown["run-lapsed"]

        # The session's transcript shows both in-flight runs under headers that say which is which.
        assert app.screen.chat.session_id == "s-a"
        headers = {h.run_id: plain(h.render()) for h in app.screen.chat.transcript.query(RunHeader)}
        assert "running elsewhere" in headers["run-live"] and "process 4242 on build-7" in headers["run-live"]
        assert "crashed" in headers["run-lapsed"]

        # Resuming the one held elsewhere is refused with who holds it; the run is left alone.
        options.focus()
        await pilot.pause()
        options.highlighted = list(shown).index("run-live")
        await wait_for(pilot, lambda: app.screen.inspected == "run-live")
        assert "running elsewhere" in plain(app.screen.query_one("CheckpointInspector").shown)
        await pilot.press("r")
        await settle(pilot)
        assert any("being executed by process 4242 on build-7" in n.message for n in told(app))
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        live = (await checkpointer.load("run-live")).head
        assert (live.status, live.owner, live.claim) == ("running", BUILD_HOST, "token-run-live")


async def test_deleting_a_session_whose_run_executes_elsewhere_is_refused_before_asking(tmp_path):
    db = tmp_path / "lovia.db"
    await store_runs(db)
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        sessions = app.screen.query_one("#session-list")
        sessions.focus()
        sessions.highlighted = 0  # the only session, s-a
        await pilot.press("delete")
        await wait_for(pilot, lambda: any("build-7" in n.message for n in told(app)))
        assert not isinstance(app.screen, ConfirmScreen)  # no question whose yes is then refused
        assert app.is_running and app.return_code is None
        assert any("being executed by process 4242 on build-7" in n.message for n in told(app))
        assert not any("lapsed job" in n.message or "live job" in n.message for n in told(app))
    async with SQLiteSession(db, wal=True) as session:
        assert [s.run_id for s in await session.segments("s-a")] == ["old"]  # nothing was deleted


async def test_the_footer_leaves_out_regenerate_and_edit_last_while_a_run_of_the_session_executes_elsewhere(tmp_path):
    """The footer offered them, and each was then refused naming the process: it shows the keys that do
    something where you are. Once that run is held no more, they are back."""
    from lovia.tui.widgets.footer import LoviaFooter

    db = tmp_path / "lovia.db"
    await store_runs(db)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.screen.chat.session_id == "s-a"
        app.screen.query_one("#composer").focus()
        footer = app.screen.query_one(LoviaFooter)

        def offered() -> set[str]:  # in force, whether or not 80 columns have room for them
            return {entry.action for entry in footer._entries_in_force()[0]}

        await wait_for(pilot, lambda: "regenerate" not in offered() and "edit_last" not in offered() and "submit" in offered())
        await pilot.press("ctrl+g")  # pressed all the same, it says why
        await wait_for(pilot, lambda: any("being executed by process 4242" in n.message for n in told(app)))
        async with SQLiteCheckpointer(db, wal=True) as checkpointer:  # that process let go of it
            await checkpointer.delete("run-live")
        await app.screen.refresh_changed()
        await wait_for(pilot, lambda: {"regenerate", "edit_last"} <= offered())


async def test_a_resume_another_window_claimed_first_is_told_and_not_shown_as_failed(tmp_path, monkeypatch):
    """A new user's trial: two windows pressed ctrl+r on one stopped run at once. The one whose claim
    came second showed the run as failed, under "ctrl+r retries the run from its checkpoint", while it
    ran in the other window."""
    import dataclasses

    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        await session.append("s-a", [UserMessage(text="earlier"), AssistantMessage(text="ok")], run_id="old")
        head = RunHead(agent="assistant", status="interrupted", turn=1, session_id="s-a", first_input="job")
        await checkpointer.save(RunSnapshot("run-stopped", head, [UserMessage(text="job")]))
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.screen.chat.session_id == "s-a"
        checkpointer = app.backend.checkpointer
        claim = checkpointer.claim_alone  # a resume's claim: alone in its session

        async def claimed_elsewhere_first(*args, **kwargs):
            # The other window's claim lands between this one's check and its claim.
            stored = await checkpointer.load("run-stopped")
            await checkpointer.save(RunSnapshot("run-stopped", dataclasses.replace(
                stored.head, status="running", owner=BUILD_HOST, claim="token-other",
                lease_until=time.time() + 3600), stored.entries))
            return await claim(*args, **kwargs)

        monkeypatch.setattr(checkpointer, "claim_alone", claimed_elsewhere_first)
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert any(n.message.startswith("Not resumed: run 'run-stopped' is being executed by process 4242 on build-7")
                   for n in told(app)), [n.message for n in told(app)]
        shown = " ".join(view.copy_text() for view in app.screen.chat.transcript.views)
        assert "retries the run" not in shown and "Failed" not in shown
        headers = [plain(h.render()) for h in app.screen.chat.transcript.query(RunHeader)]
        assert not any("failed" in header for header in headers), headers
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        held = (await checkpointer.load("run-stopped")).head
        assert (held.status, held.owner, held.claim) == ("running", BUILD_HOST, "token-other")

"""A dialog action (fork, undo a rewind, export, the trash) never cancels the conversation's other user actions.

The conversation's user actions share the worker group ``dialog`` (the several-windows watcher
leaves the transcript alone while one runs): starting a run is one of them. A dialog action
declared ``exclusive`` in that group cancelled whatever else of the group was under way, so a
key pressed while a sent message was starting could cancel the start half done.
"""

from __future__ import annotations

import asyncio

from lovia.tui.widgets.chat_panel import ChatPanel
from tests.tui.conftest import make_app, settle, wait_for
from tests.tui.test_fork_and_export import select, two_runs


async def test_fork_and_export_leave_a_starting_run_alone(tmp_path):
    db = tmp_path / "lovia.db"
    await two_runs(db)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        chat = app.screen.query_one(ChatPanel)
        await select(pilot, 3)
        # Stand for a run being started (ChatPanel._start_run is a worker of this group, on this widget) and for
        # the main screen's flows of the same group (settle would wait for them: they are made after it).
        starting = chat.run_worker(asyncio.sleep(30), group="dialog")
        held = app.screen.run_worker(asyncio.sleep(30), group="dialog")
        await pilot.press("f")  # fork: a worker of the chat panel
        await wait_for(pilot, lambda: chat.session_id != "s-source")  # not settle: it waits for every worker
        assert not starting.is_cancelled
        await pilot.press("ctrl+s")  # export: a worker of the main screen
        await pilot.pause(0.2)
        assert not held.is_cancelled
        starting.cancel()
        held.cancel()

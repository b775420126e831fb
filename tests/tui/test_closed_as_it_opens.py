"""A dialog or a view closed as it opens: the app goes on, or ends, quietly.

The CI once failed on the timeline: ``ctrl+q`` (or ``app.exit``) landing between a dialog being
pushed and its parts being mounted ends the screen before its compose is mounted, yet Textual still
sends it ``Mount``; a dialog that looked its parts up there raised ``NoMatches``, printed a
traceback over the terminal and made the app exit with an error. A tool call's view removed the
same way (its session left as it loaded) ended the app.
"""

from __future__ import annotations

import pytest

from lovia import ToolCall
from lovia.tui.backend import TranscriptRun
from lovia.tui.screens.choice import Choice, ChoiceScreen
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.screens.help import HelpScreen
from lovia.tui.screens.mcp_servers import ServersScreen
from lovia.tui.screens.prompt import PromptScreen
from lovia.tui.screens.search import SearchScreen
from lovia.tui.screens.timeline import TimelineScreen
from lovia.tui.screens.trash import TrashScreen
from lovia.tui.widgets.tool_call_view import ToolCallView
from lovia.tui.widgets.transcript import Transcript
from tests.tui.conftest import make_app, settle
from tests.tui.test_where_time_went import T0, TIMED_STEPS, timed_db

DIALOGS = {
    "timeline": lambda backend: TimelineScreen(TranscriptRun("r", (), "completed", T0, T0 + 5, active_seconds=5.0,
                                                             steps=TIMED_STEPS)),
    "trash": lambda backend: TrashScreen(backend),
    "mcp servers": lambda backend: ServersScreen(backend.mcp, "s-timed"),
    "search": lambda backend: SearchScreen(backend, "timed"),
    "help": lambda backend: HelpScreen(),
    "prompt": lambda backend: PromptScreen("Save where?", "x.md"),
    "confirm": lambda backend: ConfirmScreen("Delete?", confirm="Delete"),
    "choice": lambda backend: ChoiceScreen("Which?", [Choice("One", "1", "one"), Choice("Two", "2", "two")]),
}


@pytest.mark.parametrize("dialog", DIALOGS)
@pytest.mark.parametrize("ending", ["exit", "closed"])
async def test_quitting_as_a_dialog_opens_ends_the_app_without_an_error(tmp_path, dialog, ending):
    db = tmp_path / "lovia.db"
    await timed_db(db, crashed=True)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.push_screen(DIALOGS[dialog](app.screen.backend))
        if ending == "exit":
            app.exit()  # before the dialog's parts are mounted
        # else the app is closed as run_test ends (the CI's failure), before they are mounted too
    # run_test raises what the app caught; its return code says the same to a terminal's shell
    assert ending == "closed" or app.return_code == 0


async def test_quitting_as_the_app_starts_ends_it_without_an_error(tmp_path):
    db = tmp_path / "lovia.db"
    await timed_db(db, crashed=True)
    app = make_app(db)
    async with app.run_test(size=(80, 24)):
        app.exit()
    assert app.return_code == 0


@pytest.mark.parametrize("then", ["removed", "quit"])
async def test_a_tool_calls_view_closed_before_its_parts_were_mounted_ends_nothing(tmp_path, then):
    db = tmp_path / "lovia.db"
    await timed_db(db, crashed=True)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        views = [ToolCallView(ToolCall(call_id=f"call-{n}", name="look", arguments="{}")) for n in range(3)]
        app.screen.query_one(Transcript).mount_all(views)
        if then == "removed":
            for view in views:
                view.remove()
            await settle(pilot)
            assert app.is_running  # run_test raises, after, what the app caught
        else:
            app.exit()
    assert then == "removed" or app.return_code == 0

"""The texts of issue 10's features (trash, export, fork, undo, timeline, time views) name the keys
in force: a key the config file's [keys] table moved is named where it moved, in the palette, the
delete confirmation, the trash screen and the timeline, in the real app on a real SQLite file."""

from __future__ import annotations

from lovia import AssistantMessage, SQLiteSession, UserMessage
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.screens.timeline import TimelineScreen
from lovia.tui.screens.trash import TrashScreen
from lovia.tui.widgets.sessions_pane import SessionsPane
from tests.tui.conftest import make_app, settle, told, wait_for

MOVED = {
    "main.trash": ("f9",), "main.export": ("ctrl+e",), "transcript.fork": ("v",),
    "transcript.undo_rewind": ("z",), "transcript.timeline": ("g",), "runs.timeline": ("g",),
    "sessions.time_view": ("f4",), "trash.restore": ("o",), "trash.purge": ("x",), "trash.close": ("q",),
    "timeline.close": ("q",),
}


def text_of(widget) -> str:
    return str(widget.render()).replace("\xa0", " ")


async def test_the_new_features_name_their_moved_keys(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as store:
        await store.append("s-one", [UserMessage(text="hello"), AssistantMessage(text="Hi.", agent="assistant")],
                           meta={"timing": {"started_at": 1000.0, "finished_at": 1001.0}})
    app = make_app(db, keys=MOVED)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.screen.chat.session_id == "s-one"
        transcript = app.screen.chat.transcript
        transcript.focus()
        await pilot.press("up")
        await settle(pilot)
        helps = "\n".join(f"{c.title}: {c.help}" for c in app.get_system_commands(app.screen))
        for old in ("(ctrl+s)", "(f8", "(f in the transcript", "(w in the transcript", "(f3 in"):
            assert old not in helps, old
        for new in ("(ctrl+e)", "(v in the transcript", "(g in the transcript", "(f4 in the sessions pane"):
            assert new in helps, new

        await pilot.press("g")  # the timeline of the run under the cursor
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen))
        await settle(pilot)
        legend = text_of(app.screen.query_one("#timeline-legend"))
        assert "q closes" in legend and "esc" not in legend
        await pilot.press("q")
        await wait_for(pilot, lambda: not isinstance(app.screen, TimelineScreen))

        app.screen.query_one(SessionsPane).post_message(SessionsPane.Action("delete", "s-one"))
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "f9 restores it" in app.screen.question and "f8" not in app.screen.question
        await pilot.press("y")
        await settle(pilot)
        moved = [n.message for n in told(app) if "trash" in n.message]
        assert moved and all("f9 restores it" in m for m in moved), moved

        await pilot.press("f9")
        await wait_for(pilot, lambda: isinstance(app.screen, TrashScreen) and bool(app.screen.items))
        keys = text_of(app.screen.query_one("#trash-keys"))
        assert keys == "enter/o restore · x purge now · q close", keys
        await pilot.press("q")
        await wait_for(pilot, lambda: not isinstance(app.screen, TrashScreen))


async def test_a_full_trash_keeps_its_key_line_on_an_80x24_screen(tmp_path):
    """Ten sessions and more in the trash: the list scrolls, the line naming its keys stays in view."""
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as store:
        for number in range(12):
            await store.append(f"s-{number}", [UserMessage(text=f"hello {number}"),
                                               AssistantMessage(text="Hi.", agent="assistant")])
            await store.trash_session(f"s-{number}")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f8")
        await wait_for(pilot, lambda: isinstance(app.screen, TrashScreen) and len(app.screen.items) == 12)
        await pilot.pause()
        keys = app.screen.query_one("#trash-keys")
        assert keys.region.bottom <= 23, keys.region  # above the dialog's bottom border, on the screen
        assert "purge now" in app.export_screenshot().replace("&#160;", " ")
        await pilot.press("escape")


async def test_the_dangling_call_prompt_names_the_moved_cancel_key(tmp_path):
    from lovia.tui.screens.prompt import PromptScreen
    from tests.tui.test_crash_resume import crash_a_run
    from tests.tui.test_dangling_calls import counting_agent, open_runs

    db = tmp_path / "lovia.db"
    crash_a_run(db)
    agent, _ = counting_agent()
    app = make_app(db, agent=agent, keys={"prompt.cancel": ("f11",)})
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await open_runs(pilot, (80, 24))
        await pilot.press("f6", "o")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        question = app.screen.question
        assert "(f11: leave it to run again)" in question and "escape" not in question, question
        await pilot.press("f11")
        await wait_for(pilot, lambda: not isinstance(app.screen, PromptScreen))


async def test_the_search_screen_names_its_moved_close_key(tmp_path):
    from lovia.tui.screens.search import SearchScreen

    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as store:
        await store.append("s-one", [UserMessage(text="hello atlas"), AssistantMessage(text="Hi.", agent="assistant")])
    app = make_app(db, keys={"search.close": ("ctrl+w",)})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        await pilot.press(*"atlas")
        status = app.screen.query_one("#search-status")
        await wait_for(pilot, lambda: "1 match" in text_of(status))
        assert "^w closes" in text_of(status) or "ctrl+w closes" in text_of(status), text_of(status)
        assert "escape" not in text_of(status)

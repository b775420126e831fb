"""Start-up of the ``lovia`` command: what the first paint shows, and the collector paused while it starts."""

from __future__ import annotations

import asyncio
import gc
import json
import shutil

import pytest

from lovia import AssistantMessage, SQLiteSession, UserMessage
from lovia.cli import build_app, build_parser
from lovia.tui.widgets.footer import LoviaFooter
from tests.tui.conftest import make_app, settle, wait_for


@pytest.fixture
def lovia_command(tmp_path, monkeypatch):
    """The app the ``lovia`` command builds, on a data directory holding one stored session."""
    monkeypatch.setenv("LOVIA_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    monkeypatch.delenv("LOVIA_BASE_URL", raising=False)
    (tmp_path / "data").mkdir(mode=0o700)

    async def one_session() -> None:
        async with SQLiteSession(tmp_path / "data" / "lovia.db", wal=True) as session:
            await session.append("s-atlas", [UserMessage(text="My project is called Atlas."),
                                             AssistantMessage(text="Noted: **Atlas**.")])

    asyncio.run(one_session())
    yield build_app(build_parser().parse_args([]))  # opens the stores in a loop of its own, as the command does
    gc.enable()  # whatever the test did, the rest of the test run collects as usual
    gc.unfreeze()
    shutil.rmtree(tmp_path / "data", ignore_errors=True)


async def test_the_first_paint_shows_the_composers_keys_in_the_footer(lovia_command):
    # The footer was made for the sessions filter, which Textual focused first, and made again for
    # the composer only after the first paint: that paint offered `esc Clear filter`, `f2 Rename`.
    app = lovia_command
    painted = asyncio.Event()
    keys_at_first_paint: list[str] = []

    async with app.run_test(size=(160, 45)) as pilot:
        # What the pilot sees first: the main screen mounted (its first load done), then its next refresh.
        assert app.main_screen is not None and app.main_screen.is_mounted

        def record() -> None:
            keys_at_first_paint.extend(entry.action for entry in app.main.query_one(LoviaFooter).entries)
            painted.set()

        app.main.call_after_refresh(record)
        await painted.wait()
        assert app.focused is app.main.query_one("#composer")
        assert "submit" in keys_at_first_paint and "help" in keys_at_first_paint, keys_at_first_paint
        assert not any("filter" in action or "rename" in action for action in keys_at_first_paint)
        await pilot.pause()
        # and it stays so once the app settles
        assert [entry.action for entry in app.main.query_one(LoviaFooter).entries] == keys_at_first_paint


async def test_the_collector_paused_while_the_app_starts_runs_again_after_the_first_paint(lovia_command):
    app = lovia_command
    async with app.run_test(size=(160, 45)) as pilot:
        assert app.main_screen is not None and app.main_screen.is_mounted
        await wait_for(pilot, gc.isenabled)  # once the main screen was painted (a timer after it)
        assert app.main.chat.session_id == "s-atlas"


async def test_the_collector_runs_again_when_the_app_closes_before_it_resumed(lovia_command, monkeypatch):
    monkeypatch.setattr("lovia.tui.app.COLLECTOR_RESUMES_AFTER", 3600.0)  # not resumed by its timer
    app = lovia_command
    async with app.run_test(size=(160, 45)):
        assert not gc.isenabled(), "paused while the app starts"
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0, "what start-up froze is thawed once the app closed"


async def test_the_theme_read_at_start_is_not_written_back(tmp_path):
    # The theme signal comes for the theme set at start too: the state file was rewritten (and
    # synced to disk) with what it held, on the way to the first paint.
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"theme": "lovia-light"}), encoding="utf-8")
    before = state.stat().st_ino, state.stat().st_mtime_ns
    app = make_app(tmp_path / "lovia.db", state_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.theme == "lovia-light"
        assert (state.stat().st_ino, state.stat().st_mtime_ns) == before
        await pilot.press("ctrl+t")  # a theme picked in the app is remembered, as before
        await settle(pilot)
        assert json.loads(state.read_text(encoding="utf-8"))["theme"] == app.theme != "lovia-light"


async def test_the_main_screen_is_not_restyled_whole_when_first_shown(lovia_command, monkeypatch):
    # Textual restyles every node of a screen when it is pushed (its first ScreenResume), right
    # after the mount styled each of them: ~15 ms on the way to the first paint, changing nothing.
    from lovia.tui.screens.main import MainScreen

    restyled: list[MainScreen] = []
    whole = MainScreen.update_node_styles

    def counted(self, animate: bool = True) -> None:
        restyled.append(self)
        whole(self, animate=animate)

    monkeypatch.setattr(MainScreen, "update_node_styles", counted)
    app = lovia_command
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        assert app.main.chat.session_id == "s-atlas"
        assert restyled == []
        await pilot.press("f1")  # a dialog over it and back: shown as it was, styles and all
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is app.main



@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_an_enter_typed_while_the_app_starts_sends(tmp_path, size):
    """A new user's trial: "probe 1" and enter typed half a second after ``lovia`` stayed in the
    composer with an empty line under it. Typed before the app has the terminal, an enter reaches
    it through the terminal's line discipline as a line feed, the byte of ctrl+j (a new line); the
    keys wait in the app's queue until the first paint. Those keys are posted here as the terminal
    reading posts them, before the first paint; a ctrl+j typed after it still makes a new line."""
    from textual import events

    app = make_app(tmp_path / "lovia.db")
    painted = app.first_paint_done

    def keys_typed_while_starting() -> None:
        for character in "hello":
            app.post_message(events.Key(character, character))
        app.post_message(events.Key("ctrl+j", "\n"))
        painted()

    app.first_paint_done = keys_typed_while_starting
    async with app.run_test(size=size) as pilot:
        chat = app.screen.chat
        await wait_for(pilot, lambda: chat.session_id is not None and not chat.running and chat.composer.text == ""
                       and len(chat.transcript.query("UserMessageView")) == 1,
                       describe=lambda: f"composer {chat.composer.text!r}, session {chat.session_id!r}")
        await settle(pilot)
        assert [view.message.text for view in chat.transcript.query("UserMessageView")] == ["hello"]
        await pilot.press(*"two", "ctrl+j", *"lines")
        await settle(pilot)
        assert chat.composer.text == "two\nlines"

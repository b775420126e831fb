"""Snapshots of every pane and screen, in more than one theme, on a demo database at fixed times."""

from __future__ import annotations

import asyncio

import pytest

from screenshots.demo_data import build
from tests.tui.conftest import make_app, wait_for

SIZE = (160, 45)
THEMES = ["lovia-dark", "lovia-light"]


@pytest.fixture
def demo_db(tmp_path):
    path = tmp_path / "demo.db"
    asyncio.run(build(path))
    return path


def app_on(demo_db, theme):
    return make_app(demo_db, theme=theme)


@pytest.mark.parametrize("theme", [*THEMES, "lovia-high-contrast"])
def test_main_screen(snap_compare, demo_db, theme):
    assert snap_compare(app_on(demo_db, theme), terminal_size=SIZE)


@pytest.mark.parametrize("theme", THEMES)
def test_help_screen(snap_compare, demo_db, theme):
    assert snap_compare(app_on(demo_db, theme), press=["f1"], terminal_size=SIZE)


@pytest.mark.parametrize("theme", THEMES)
def test_runs_list_and_inspector(snap_compare, demo_db, theme):
    async def focus_runs(pilot):
        pilot.app.screen.query_one("#run-list").focus()
        await wait_for(pilot, lambda: pilot.app.screen.inspected == "run-demo-interrupted")
        await pilot.pause()

    assert snap_compare(app_on(demo_db, theme), terminal_size=SIZE, run_before=focus_runs)


@pytest.mark.parametrize("theme", THEMES)
def test_transcript_with_an_expanded_tool_call(snap_compare, demo_db, theme):
    async def expand(pilot):
        transcript = pilot.app.screen.chat.transcript
        transcript.focus()
        await pilot.press("end", "up", "up", "up")  # onto the calculate call
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(app_on(demo_db, theme), terminal_size=SIZE, run_before=expand)


@pytest.mark.parametrize("theme", THEMES)
def test_delete_confirmation(snap_compare, demo_db, theme):
    async def ask(pilot):
        pilot.app.screen.query_one("#session-list").focus()
        await pilot.press("delete")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "ConfirmScreen")
        await pilot.pause()

    assert snap_compare(app_on(demo_db, theme), terminal_size=SIZE, run_before=ask)


@pytest.mark.parametrize("theme", THEMES)
def test_rename_prompt(snap_compare, demo_db, theme):
    async def ask(pilot):
        pilot.app.screen.query_one("#session-list").focus()
        await pilot.press("f2")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "PromptScreen")
        await pilot.pause()

    assert snap_compare(app_on(demo_db, theme), terminal_size=SIZE, run_before=ask)


@pytest.mark.parametrize("theme", THEMES)
def test_editing_a_message(snap_compare, demo_db, theme):
    async def edit(pilot):
        await pilot.press("ctrl+l")
        await wait_for(pilot, lambda: pilot.app.screen.chat.has_class("-editing"))
        await pilot.pause()

    assert snap_compare(app_on(demo_db, theme), terminal_size=SIZE, run_before=edit)

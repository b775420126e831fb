"""ctrl+s given the name of a directory (the current one, ``.``, or ``~``) says so and the app stays up;
nothing is written (real SQLite file, real app at 80x24)."""

from __future__ import annotations

from lovia import AssistantMessage, SQLiteSession, UserMessage
from lovia.tui.screens.prompt import PromptScreen
from tests.tui.conftest import make_app, settle, told, wait_for


async def test_exporting_to_a_directory_is_refused_with_the_reason(tmp_path, monkeypatch):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as store:
        await store.append("s-one", [UserMessage(text="hello"), AssistantMessage(text="Hi.", agent="assistant")])
    work = tmp_path / "work"
    (work / "out").mkdir(parents=True)
    monkeypatch.chdir(work)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        await pilot.press("ctrl+u", *"out", "enter")
        await settle(pilot)
        assert app.is_running and app.return_code is None
        notices = [n.message for n in told(app)]
        assert any("is a directory" in n for n in notices), notices
        assert list((work / "out").iterdir()) == []  # no temporary file left behind

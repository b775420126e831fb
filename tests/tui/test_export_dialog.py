"""The export dialog (ctrl+s) in the real app on real SQLite files at 80x24: it asks before replacing a
file, keeps a path it could not write to, and writes a trimmed tool output whole from the archive."""

from __future__ import annotations

import json

import pytest

from lovia import Agent, AssistantMessage, SQLiteCheckpointer, SQLiteSession, UserMessage, tool
from lovia.context import ContextPolicy, FileResultStore
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.tui.app import LoviaApp
from lovia.tui.backend import ChatBackend
from lovia.tui.config import RememberedState
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.screens.prompt import PromptScreen
from lovia.tui.widgets.chat_panel import ChatPanel
from lovia.tui.widgets.tool_call_view import ToolCallView
from tests.tui.conftest import make_app, settle, told, type_and_send, wait_for
from tests.tui.test_fork_and_export import SIZES


async def two_sessions(db) -> None:
    async with SQLiteSession(db, wal=True) as store:
        await store.append("s-alpha", [UserMessage(text="alpha question"),
                                       AssistantMessage(text="alpha answer", agent="assistant")])
        await store.append("s-beta", [UserMessage(text="beta question"),
                                      AssistantMessage(text="beta answer", agent="assistant")])


async def export_to(pilot, typed: str) -> None:
    """ctrl+s, the path replaced with ``typed``, enter (the flow may go on to ask)."""
    app = pilot.app
    await pilot.press("ctrl+s")
    await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
    await pilot.press("ctrl+u", *typed, "enter")


def exported(app) -> int:
    return sum(n.message.startswith("Exported") for n in told(app))


def answer(app) -> str:
    return app.screen.query_one("#answer").value


@pytest.mark.parametrize("size", SIZES)
async def test_exporting_onto_an_existing_file_asks_before_replacing_it(tmp_path, monkeypatch, size):
    db = tmp_path / "lovia.db"
    await two_sessions(db)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        chat = app.screen.query_one(ChatPanel)
        await chat.open_session("s-alpha")
        await settle(pilot)
        await export_to(pilot, "x.md")  # a new file: written without a question
        await settle(pilot)
        first = (work / "x.md").read_text()
        assert "alpha answer" in first

        await chat.open_session("s-beta")
        await settle(pilot)
        await export_to(pilot, "x.md")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        question = app.screen.question
        assert question == "./x.md already exists. Replace it with this session's export?"
        assert "alpha" not in question and "beta" not in question  # names the file, quotes nothing stored
        await pilot.press("escape")  # no: the file stays, the path comes back to name another
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        assert answer(app) == "x.md"
        assert (work / "x.md").read_text() == first
        await pilot.press("enter")  # the same name again: asked again
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        await pilot.press("escape")  # and the dialog closed: nothing written
        await settle(pilot)
        assert (work / "x.md").read_text() == first
        assert exported(app) == 1  # the first export's notice alone
        assert sorted(p.name for p in work.iterdir()) == ["x.md"]

        await export_to(pilot, "x.md")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")  # replace it
        await settle(pilot)
        replaced = (work / "x.md").read_text()
        assert "beta answer" in replaced and "alpha answer" not in replaced
        assert told(app)[-1].message == "Exported 1 run (2 entries) to\n./x.md"
        assert sorted(p.name for p in work.iterdir()) == ["x.md"]


async def test_a_path_that_could_not_be_written_comes_back_in_the_dialog(tmp_path, monkeypatch):
    db = tmp_path / "lovia.db"
    await two_sessions(db)
    monkeypatch.chdir(tmp_path)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        chat = app.screen.query_one(ChatPanel)
        await chat.open_session("s-alpha")
        await settle(pilot)
        await export_to(pilot, "/nonexistent/dir/x.md")
        await settle(pilot)
        assert any("the directory /nonexistent/dir does not exist" in n.message for n in told(app))
        await pilot.press("ctrl+s")  # reopened: the path typed, to be mended
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        assert answer(app) == "/nonexistent/dir/x.md"
        await pilot.press("escape")
        await settle(pilot)
        # Another session suggests its own file; the one typed for the first stays the first's.
        await chat.open_session("s-beta")
        await settle(pilot)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        assert answer(app) == str(tmp_path / "lovia-s-beta.md")
        await pilot.press("escape")
        await settle(pilot)
        await chat.open_session("s-alpha")
        await settle(pilot)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        assert answer(app) == "/nonexistent/dir/x.md"
        await pilot.press("ctrl+u", *"fixed.md", "enter")  # mended and written: the next one suggests afresh
        await settle(pilot)
        assert (tmp_path / "fixed.md").is_file()
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        assert answer(app) == str(tmp_path / "lovia-s-alpha.md")
        await pilot.press("escape")
        await settle(pilot)


FULL = "".join(f"line {n:04d} of the long output\n" for n in range(60)) + "THE END"


def archiving_app(db, archive) -> LoviaApp:
    @tool
    async def long_output() -> str:
        """A long output."""
        return FULL

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("long_output", call_id="c-long")]), "first", "second"])
    agent = Agent(name="assistant", model=model, tools=[long_output])
    backend = ChatBackend(SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True), agent,
                          context_policy=ContextPolicy(result_store=FileResultStore(archive)))
    return LoviaApp(backend, model_label="scripted", state=RememberedState(db.parent / "state.json"))


async def run_and_trim(pilot) -> None:
    """A run whose tool output the context policy archives, another run, then ``t`` trims the first's output."""
    app = pilot.app
    await type_and_send(pilot, "one")
    await type_and_send(pilot, "two")
    transcript = app.screen.chat.transcript
    transcript.focus()
    await pilot.press("t")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
    await pilot.press("y")
    await settle(pilot)
    view = next(v for v in transcript.query(ToolCallView) if v.call.call_id == "c-long")
    assert view.result.trimmed_chars


@pytest.mark.parametrize("size", SIZES)
async def test_a_trimmed_tool_output_is_exported_whole_from_the_archive(tmp_path, monkeypatch, size):
    db = tmp_path / "lovia.db"
    monkeypatch.chdir(tmp_path)
    app = archiving_app(db, tmp_path / "tool-outputs")
    async with app.run_test(size=size) as pilot:
        await run_and_trim(pilot)
        await export_to(pilot, "out.md")
        await settle(pilot)
        text = (tmp_path / "out.md").read_text()
        assert f"```text\n{FULL}\n```" in text
        assert "trimmed by lovia" not in text
        assert "**Result** of `long_output` · whole, from the tool-output archive\n" in text

        await export_to(pilot, "out.jsonl")
        await settle(pilot)
        records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
        result = next(r for r in records if r["record"] == "entry" and r["entry"]["type"] == "tool_result")
        assert result["entry"]["output"] == FULL and result["entry"]["trimmed_chars"] == 0
        assert result["output_from_archive"] is True
        others = [r for r in records if r["record"] == "entry" and r is not result]
        assert others and not any("output_from_archive" in r for r in others)


async def test_a_trimmed_output_gone_from_the_archive_is_exported_as_stored(tmp_path, monkeypatch):
    db = tmp_path / "lovia.db"
    monkeypatch.chdir(tmp_path)
    archive = tmp_path / "tool-outputs"
    app = archiving_app(db, archive)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_and_trim(pilot)
        for archived in archive.iterdir():  # deleted by hand
            archived.unlink()
        await export_to(pilot, "out.md")
        await settle(pilot)
        text = (tmp_path / "out.md").read_text()
        assert "characters trimmed by lovia]\n```" in text and "THE END" not in text
        assert "from the tool-output archive" not in text
        assert FULL[:100] in text

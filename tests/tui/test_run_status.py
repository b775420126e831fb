"""The line above the composer while a run goes: what it waits on (the model, a tool), for how long.

A model that has not answered yet looked the same as a dead server: "running…" on a header far up
the transcript, for minutes (the client's timeout, each try). The model here holds its first
token until the test lets it go; the tool holds its result the same way.
"""

from __future__ import annotations

import asyncio
import io
import re

import pytest

from lovia import Agent, SQLiteSession, tool
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.tui.widgets.footer import LoviaFooter
from lovia.tui.widgets.inspector import CheckpointInspector
from lovia.tui.widgets.run_status import RunStatus
from tests.tui.conftest import make_app, settle, wait_for


class HeldModel(ScriptedModel):
    """A scripted model whose every turn waits for ``go`` before its first chunk."""

    def __init__(self, turns) -> None:
        super().__init__(turns, name="slow-model")
        self.asked, self.go = asyncio.Event(), asyncio.Event()

    async def stream(self, request):
        self.asked.set()
        await self.go.wait()
        self.go.clear()
        async for chunk in super().stream(request):
            yield chunk


async def send(pilot, text: str) -> None:
    """Type ``text`` and send it, without waiting for the run (it waits on the test)."""
    pilot.app.screen.query_one("#composer").focus()
    await pilot.pause()
    await pilot.press(*text, "enter")


async def send_and_hold(pilot, model: HeldModel, text: str = "hello") -> None:
    """Send ``text`` and wait until ``model`` is asked (it holds its answer until ``model.go`` is set)."""
    await send(pilot, text)
    await asyncio.wait_for(model.asked.wait(), 10)


def status_line(app) -> str:
    status = app.screen.query_one(RunStatus)
    return str(status.render()) if status.display else ""


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_the_line_says_what_the_run_waits_on_and_for_how_long(tmp_path, size):
    tool_started, tool_release = asyncio.Event(), asyncio.Event()

    @tool
    async def lookup() -> str:
        """A slow lookup."""
        tool_started.set()
        await tool_release.wait()
        return "found"

    model = HeldModel([ScriptedTurn(tool_calls=[call("lookup", {}, call_id="c1")]), "All done."])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model, tools=[lookup]))
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert status_line(app) == ""  # no run: no line
        await send(pilot, "look it up")
        await wait_for(pilot, model.asked.is_set)
        await wait_for(pilot, lambda: status_line(app).startswith("Waiting for slow-model"))
        await wait_for(pilot, lambda: re.fullmatch(r"Waiting for slow-model · \d+s", status_line(app)),
                       give_up_after=5)
        assert "Waiting for slow-model" in app.export_screenshot().replace("&#160;", " ")

        model.asked.clear()
        model.go.set()  # the model calls the tool, which holds
        await wait_for(pilot, tool_started.is_set)
        await wait_for(pilot, lambda: status_line(app).startswith("Running lookup"))

        tool_release.set()  # the result goes back: the model is asked again, and waited on afresh
        await wait_for(pilot, model.asked.is_set)
        await wait_for(pilot, lambda: status_line(app) == "Waiting for slow-model…")

        model.go.set()
        await wait_for(pilot, lambda: not app.screen.chat.running)
        await settle(pilot)
        assert status_line(app) == ""


def inspector_text(app) -> str:
    from rich.console import Console

    console = Console(width=120, record=True, file=io.StringIO())
    console.print(app.screen.query_one(CheckpointInspector).shown)
    return console.export_text()


def footer_actions(footer: LoviaFooter) -> set[str]:
    return {entry.action for entry in footer.entries}


async def test_the_line_goes_when_the_run_is_stopped_while_waiting(tmp_path):
    model = HeldModel(["never sent"])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await send(pilot, "hello")
        await wait_for(pilot, model.asked.is_set)
        await wait_for(pilot, lambda: status_line(app).startswith("Waiting for slow-model"))
        # The inspector showed the lease's end as last read, which looked lapsed a minute on
        inspector = app.screen.query_one(CheckpointInspector)
        await wait_for(pilot, lambda: inspector.run_id is not None)
        assert "renewed while it runs here" in inspector_text(app)
        footer = app.screen.query_one(LoviaFooter)
        # enter only says to wait: the footer offers Stop, not Send (the composer still has the focus)
        assert app.focused is app.screen.chat.composer
        assert "stop_run" in footer_actions(footer) and "submit" not in footer_actions(footer)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.screen.chat.running)
        await settle(pilot)
        assert status_line(app) == ""
        assert "submit" in footer_actions(footer)


@pytest.mark.parametrize("key", ["ctrl+g", "ctrl+l"])
async def test_a_session_whose_answers_were_all_stopped_keeps_its_first_message_as_title(tmp_path, key):
    """Stopped, then regenerated (or edited and sent again) and stopped: the rewind left the stored session
    with no message of the user's, and the sessions list called it "(untitled)", after a restart too."""
    model = HeldModel(["never sent", "never sent", "never sent"])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await send(pilot, "are you there?")
        await wait_for(pilot, model.asked.is_set)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.screen.chat.running)
        await settle(pilot)
        model.asked.clear()
        await pilot.press(key)
        if key == "ctrl+l":  # the message back in the composer: sent again as it was
            await wait_for(pilot, lambda: app.screen.chat.composer.text == "are you there?")
            await pilot.press("enter")
        await wait_for(pilot, model.asked.is_set)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.screen.chat.running)
        await settle(pilot)
        (listing,) = await app.screen.backend.sessions()
        assert listing.title == "are you there?" and listing.state == "interrupted"
        assert [s.title for s in await app.screen.backend.sessions("there")] == ["are you there?"]
        await app.screen.refresh_lists()
        await settle(pilot)
        assert "are you there?" in str(app.screen.query_one("#session-list").get_option_at_index(0).prompt)


async def test_several_tool_calls_running_at_once_are_counted(tmp_path):
    release = asyncio.Event()
    started: list[str] = []

    @tool
    async def fetch(what: str) -> str:
        """A slow fetch."""
        started.append(what)
        await release.wait()
        return what

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("fetch", {"what": w}, call_id=f"c-{w}") for w in "abc"]),
                           "Done."])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model, tools=[fetch]))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await send(pilot, "fetch three")
        await wait_for(pilot, lambda: len(started) == 3)
        await wait_for(pilot, lambda: status_line(app).startswith("Running fetch and 2 more calls"))
        release.set()
        await wait_for(pilot, lambda: not app.screen.chat.running)
        await settle(pilot)
        assert status_line(app) == ""


async def test_a_long_model_name_is_cut_and_the_time_kept(tmp_path):
    model = HeldModel(["never sent"])
    model.name = "openai:qwen2.5-coder-32b-instruct-q4_K_M-gguf-a-very-long-model-name-indeed"
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await send(pilot, "hello")
        await wait_for(pilot, lambda: re.search(r"…? · \d+s$", status_line(app)) is not None, give_up_after=5)
        line = status_line(app)
        assert line.startswith("Waiting for openai:qwen2.5") and "…" in line
        assert len(line) <= app.screen.query_one(RunStatus).content_region.width
        model.go.set()
        await wait_for(pilot, lambda: not app.screen.chat.running)


def long_answer(paragraphs: int) -> str:
    return "\n\n".join(f"Paragraph {n} of a long first answer." for n in range(paragraphs))


async def answered(pilot, model: HeldModel, text: str) -> None:
    """Send ``text`` and let the model answer it at once."""
    await send(pilot, text)
    await wait_for(pilot, model.asked.is_set)
    model.asked.clear()
    model.go.set()
    await wait_for(pilot, lambda: not pilot.app.screen.chat.running)
    await settle(pilot)


async def asked_then_scrolled_up(pilot, model: HeldModel, *keys: str) -> None:
    """Send a message whose answer waits; meanwhile the reader goes up the conversation with ``keys``."""
    await send(pilot, "two")
    await wait_for(pilot, model.asked.is_set)
    transcript = pilot.app.screen.chat.transcript
    transcript.focus()
    await pilot.pause()
    await pilot.press(*keys)
    # (settle would wait for the run)
    await wait_for(pilot, lambda: transcript.selected == 0 and transcript.scroll_y < 5)


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_an_answer_that_ends_below_a_reader_scrolled_up_says_so_until_the_end_is_shown(tmp_path, size):
    """The view stays where the reader took it while an answer streams; when the answer ended below
    it, nothing said so: the line above the composer was gone with the run, and the new answer unseen."""
    model = HeldModel([long_answer(40), "The second answer, written below the view."])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model))
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await answered(pilot, model, "one")
        assert status_line(app) == ""
        await asked_then_scrolled_up(pilot, model, "home")  # up to the first message while the model thinks
        transcript = app.screen.chat.transcript
        top = transcript.scroll_y
        model.go.set()
        await wait_for(pilot, lambda: not app.screen.chat.running)
        await settle(pilot)
        assert transcript.scroll_y == top  # the view stays where the reader is
        line = status_line(app)
        assert line.startswith("↓ New below") and "end" in line
        assert "New below" in app.export_screenshot().replace("&#160;", " ")

        await pilot.press("end")  # the answer shown: the line goes
        await wait_for(pilot, lambda: status_line(app) == "")


async def test_the_new_below_line_does_not_follow_into_another_session(tmp_path):
    model = HeldModel([long_answer(40), "The second answer."])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await answered(pilot, model, "one")
        transcript = app.screen.chat.transcript
        transcript.focus()
        await settle(pilot)
        await pilot.press("home")
        await wait_for(pilot, lambda: transcript.selected == 0 and transcript.scroll_y < 5)
        # Another session's run, started from the composer, follows its own answer: nothing below.
        await pilot.press("ctrl+n")
        await settle(pilot)
        await answered(pilot, model, "two")
        assert status_line(app) == ""


async def test_the_new_below_line_goes_when_a_larger_terminal_shows_the_end(tmp_path):
    """Grown to hold the whole conversation, the view scrolled no more, and the line stayed; so it
    did after ``end``, which the line names, with the conversation shorter than the view."""
    model = HeldModel([long_answer(12), "The second answer."])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await answered(pilot, model, "one")
        # The very top: a larger view scrolls no more
        await asked_then_scrolled_up(pilot, model, "home", "pageup", "pageup")
        transcript = app.screen.chat.transcript
        await wait_for(pilot, lambda: transcript.scroll_y == 0)
        model.go.set()
        await wait_for(pilot, lambda: not app.screen.chat.running)
        await settle(pilot)
        assert status_line(app).startswith("↓ New below")
        await pilot.resize_terminal(160, 70)  # the whole conversation fits now
        await settle(pilot)
        await wait_for(pilot, lambda: status_line(app) == "", give_up_after=3)


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_a_rate_limited_request_counts_down_to_being_sent_again(tmp_path, size):
    """A 429 whose Retry-After the model waited out read "Waiting for openai:x · 9s", as a slow model does."""
    from lovia.models import OpenAIChatModel
    from lovia.tui.widgets.run_header import StepSummary
    from tests.models.sse_server import SSEServer

    with SSEServer() as server:
        model = OpenAIChatModel("rate-limited-once-2s", base_url=server.base_url, api_key="sk-test", timeout=10)
        app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model))
        async with app.run_test(size=size) as pilot:
            await send(pilot, "hello")
            await wait_for(pilot, lambda: "asking again in" in status_line(app))
            line = status_line(app)
            assert line.startswith("openai:rate-limited-once-2s is rate limiting") and re.search(
                r" · asking again in [12]s$", line), line
            await wait_for(pilot, lambda: not app.screen.chat.running)
            status = app.screen.query_one(RunStatus)
            status.asking_again("openai:x", "openai:x is rate limiting requests (429)", 0.3)  # then nothing comes
            await wait_for(pilot, lambda: status_line(app).startswith("Waiting for openai:x"))
            status.clear()
            data = await app.backend.transcript(app.screen.chat.session_id)
            [run] = data.runs
            assert StepSummary.of(run.steps).first_token < 1.0  # the 2 s wait is not the model's


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_a_message_waiting_on_a_busy_database_says_so_until_its_run_starts(tmp_path, size):
    """Another program held the database's write lock (a PostgreSQL server down did the same, for
    the pool's 30 s): the message sat in the composer with nothing on screen until the store gave up."""
    import sqlite3

    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process writing: the run's claim waits for it
        try:
            await send(pilot, "hello")
            await wait_for(pilot, lambda: status_line(app).startswith("Saving your message to the database"))
            await pilot.pause(1.2)
            assert re.fullmatch(r"Saving your message to the database · \ds", status_line(app)), status_line(app)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        await wait_for(pilot, lambda: not app.screen.chat.running)
        await settle(pilot)
        assert status_line(app) == ""
        session_id = app.screen.chat.session_id
    stored = await SQLiteSession(db).load(session_id)
    assert [type(entry).__name__ for entry in stored][:2] == ["UserMessage", "AssistantMessage"]


async def test_the_seconds_count_from_the_step_not_from_the_step_before(tmp_path):
    """After a resume the line read "Running wait…" at 1.5 s and "· 1s" at 2 s: its ticks kept the
    phase of the step before, so the seconds shown lagged by up to one."""
    from tests.tui.test_streaming_speed import painted

    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        status = app.screen.query_one(RunStatus)
        status.waiting_for_model("slow-model")  # the ticks start here
        await pilot.pause(0.5)
        status.running_tools("c1", "wait")  # half a tick later, the step restarts
        started = asyncio.get_running_loop().time()
        await pilot.pause(1.3)
        assert asyncio.get_running_loop().time() - started < 1.5  # before a tick of the old phase could come
        shown = "".join(text for text, _ in painted(app, status.region)[0])
        assert "Running wait · 1s" in shown, shown
        status.clear()

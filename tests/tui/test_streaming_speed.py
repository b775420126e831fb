"""Long answers stream at model speed (issue 9, item 3): the real app, a real SQLite file, the real runtime.

The answers come from ScriptedModel through the runner, the run stream and the chat panel, as a
model's do. Speed itself is measured in bench/tui_stream.py; these tests hold what makes it:
a growing code block costs what it adds (no re-highlighting of the whole block per update),
the finished answer paints exactly as the same text loaded from the store, and escape stops a
long answer while it streams.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownFence

from lovia.models import ScriptedModel, ScriptedTurn
from lovia.tui.widgets.assistant_message import AssistantMessageView
from lovia.tui.widgets.notice import NoticeView
from lovia.tui.widgets.streaming_markdown import CHUNK_LINES, StreamedFence
from tests.tui.conftest import make_app, settle, type_and_send, wait_for


def code_block(lines: int) -> str:
    """Python whose docstring spans chunk boundaries: highlighted chunk by chunk it would be coloured wrong."""
    body = "".join(f"    total += step({i})  # step {i}\n" for i in range(lines))
    steps = "".join(f"    Step {i} says 'ok'.\n" for i in range(CHUNK_LINES + 3))
    docstring = f'    """Runs the steps.\n\n{steps}    """\n'
    return f"```python\ndef run(step):\n{docstring}    total = 0\n{body}    return total\n```\n"


def answer(lines: int) -> str:
    return ("Here is the **code** you asked for:\n\n" + code_block(lines)
            + "\nAnd unlabelled:\n\n```\nplain = 1\n```\n\n- one point\n- another with `code`\n\n> a quote\n\nDone.\n")


def painted(app, region: Region) -> list[list[tuple[str, object]]]:
    """What the screen shows in ``region``: each row's text and styles, as the terminal gets them.

    (Without the meta Textual keeps for the mouse: offsets within each widget, which the terminal never sees.)
    """
    update = app.screen._compositor.render_update(full=True)  # what export_screenshot paints; guarded in
    rows = []                                                  # test_textual_private_names.py
    for y in range(region.y, region.bottom):
        strip = Strip.join(update.strips[y]).crop(region.x, region.right).simplify()
        rows.append([(segment.text, segment.style and segment.style.clear_meta_and_links()) for segment in strip])
    return rows


async def streamed_then_loaded(tmp_path, text: str, *, stop_after: int | None = None):
    """Stream ``text`` through the app (escape once ``stop_after`` characters show), then reopen the session.

    Returns what the answer's markdown painted as streamed and as loaded from the store, the streamed view,
    whether each of its code blocks was highlighted whole and in how many chunks it streamed, and the notices.
    """
    model = ScriptedModel([ScriptedTurn(text=text, chunk_chars=40, delay=0.004)])
    app = make_app(tmp_path / "lovia.db", model=model)
    async with app.run_test(size=(160, 400)) as pilot:
        await pilot.pause()
        chat = app.main.chat
        app.screen.query_one("#composer").focus()
        await pilot.press(*"hi")
        await pilot.press("enter")
        await wait_for(pilot, lambda: chat.transcript.query(AssistantMessageView))
        streamed = chat.transcript.query(AssistantMessageView).last()
        if stop_after is not None:
            await wait_for(pilot, lambda: streamed.shown_length >= stop_after)
            assert chat.running
            await pilot.press("escape")
        await settle(pilot)
        assert not chat.running
        assert streamed.outer_size.height < chat.transcript.size.height, "the answer must fit the screen to be compared"
        # A block's exact colouring starts after a refresh and shows at the next one: settle can
        # return between them under load (CI painted the streamed block as coloured line by line).
        await wait_for(pilot, lambda: all(fence.exact for fence in streamed.query(StreamedFence)))
        drawn = asyncio.Event()
        app.screen.call_after_refresh(drawn.set)
        await drawn.wait()
        as_streamed = painted(app, streamed.query_one(Markdown).region)
        fences = [(fence.exact, fence.chunks) for fence in streamed.query(StreamedFence)]
        notices = [notice.copy_text() for notice in chat.transcript.query(NoticeView)]
        await app.main.open_session(chat.session_id)
        await settle(pilot)
        loaded = chat.transcript.query(AssistantMessageView).last()
        assert loaded is not streamed and loaded.text == streamed.text
        as_loaded = painted(app, loaded.query_one(Markdown).region)
    return as_streamed, as_loaded, streamed, fences, notices


async def test_a_long_code_block_streamed_paints_as_the_same_answer_loaded(tmp_path):
    text = answer(150)
    as_streamed, as_loaded, streamed, fences, _ = await streamed_then_loaded(tmp_path, text)
    assert streamed.text == text and streamed.shown_length == len(text)
    assert fences[0][1] > 3  # streamed as several chunks
    assert all(exact for exact, _ in fences)  # and coloured as whole blocks at the end
    assert len(as_streamed) > 150
    assert as_streamed == as_loaded


async def test_escape_stops_a_long_answer_while_it_streams(tmp_path):
    text = answer(2000)
    as_streamed, as_loaded, streamed, _, notices = await streamed_then_loaded(tmp_path, text, stop_after=2000)
    assert 2000 <= len(streamed.text) < len(text)  # stopped part way, and everything it got is shown
    assert streamed.shown_length == len(streamed.text)
    assert any(notice.startswith("Stopped.") for notice in notices)
    assert as_streamed == as_loaded  # the stopped answer paints as it is stored (the note under it aside)


async def test_the_app_answers_after_escape_stops_a_long_answer(tmp_path):
    model = ScriptedModel([ScriptedTurn(text=answer(2000), chunk_chars=40, delay=0.002), "Next answer."])
    app = make_app(tmp_path / "lovia.db", model=model)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        chat = app.main.chat
        app.screen.query_one("#composer").focus()
        await pilot.press(*"hi")
        await pilot.press("enter")
        await wait_for(pilot, lambda: chat.transcript.query(AssistantMessageView))
        view = chat.transcript.query(AssistantMessageView).last()
        await wait_for(pilot, lambda: view.shown_length >= 2000)
        await pilot.press("escape")
        await settle(pilot)
        assert not chat.running
        await type_and_send(pilot, "again")
        assert chat.transcript.query(AssistantMessageView).last().text == "Next answer."
        assert len(model.requests) == 2


@pytest.fixture
def highlighted_on_the_loop(monkeypatch):
    """The line counts of the code highlighted on the event loop's thread (where it holds up the screen and keys)."""
    calls: list[int] = []
    original = MarkdownFence.highlight.__func__

    def counting(cls, code, language, ansi=False, dark=False):
        if threading.current_thread() is threading.main_thread():
            calls.append(len(code.splitlines()))
        return original(cls, code, language, ansi, dark)

    monkeypatch.setattr(MarkdownFence, "highlight", classmethod(counting))
    return calls


async def test_a_growing_code_block_is_not_highlighted_again_whole(tmp_path, highlighted_on_the_loop):
    # Textual's Markdown rebuilds the document's last block on every append: a code block being
    # streamed was highlighted whole, on the event loop, each time (quadratic: a 2,000-line block crawled).
    text = answer(400)
    model = ScriptedModel([ScriptedTurn(text=text, chunk_chars=40, delay=0.002)])
    app = make_app(tmp_path / "lovia.db", model=model)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "hi")
        view = app.main.chat.transcript.query(AssistantMessageView).last()
        assert view.shown_length == len(text)
        assert view.query(StreamedFence).first().exact  # highlighted whole once, off the loop
    assert highlighted_on_the_loop and max(highlighted_on_the_loop) <= CHUNK_LINES



async def test_a_code_block_is_highlighted_whole_only_after_the_screen_was_drawn(tmp_path):
    # The whole-block highlight holds the GIL in its thread: started at once, it slowed the drawing of
    # a stopped answer's end and notice (bench/tui_stream.py, "shown stopped": ~6 frames against ~3).
    text = answer(100)
    app = make_app(tmp_path / "lovia.db", model=ScriptedModel([ScriptedTurn(text=text)]))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "hi")
        await settle(pilot)
        fence = app.main.chat.transcript.query(StreamedFence).first()
        assert fence.exact
        fence.show(fence.code + "\n# one more line")
        assert not fence.exact
        fence.exact_soon()
        assert not [worker for worker in app.workers if worker.group == "highlight"], "nothing started before a refresh"
        await settle(pilot)
        assert fence.exact

"""A streamed answer keeps blank rows below its end to grow into (issue 9, item 3: display lag).

A row more in the answer's last paragraph changed the answer's height, and with it the
transcript's: the transcript scrolled, and Textual rendered every row of it and of the
containers behind the answer again, at every row, which made the frames that showed the new
rows the slowest of the stream. The answer now keeps room, as a streamed code block does
(lovia/tui/widgets/code_lines.py), and takes its own height at the end. These tests stream into
the real widgets beside Textual's own ``Markdown`` given the same text. A stopped answer gives
its room back too: ``test_escape_stops_a_long_answer_while_it_streams`` (test_streaming_speed.py)
compares what it paints with the same answer reopened.
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Markdown

from lovia.models import ScriptedModel, ScriptedTurn
from lovia.tui.widgets.assistant_message import AssistantMessageView
from lovia.tui.widgets.code_lines import ROOM_LINES, room_for
from lovia.tui.widgets.streaming_markdown import StreamedFence, StreamingMarkdown
from tests.tui.conftest import make_app, settle, type_and_send

WIDTH, HEIGHT = 120, 60


def paragraphs(count: int) -> str:
    return "".join(f"Paragraph {i} of the answer, long enough to take a row of its own here.\n\n"
                   for i in range(count))


class Beside(App[None]):
    """The streamed answer at the bottom of a scrolling column, Textual's Markdown of the same text beside it."""

    def compose(self) -> ComposeResult:
        with Horizontal():
            with VerticalScroll(id="ours"):
                yield StreamingMarkdown()
            with VerticalScroll(id="theirs"):
                yield Markdown()


async def append_both(pilot, text: str) -> None:
    app = pilot.app
    await app.query_one(StreamingMarkdown).append(text)
    await app.query_one("#theirs Markdown", Markdown).append(text)
    await pilot.pause()
    await pilot.pause()


def heights(app: App) -> tuple[int, int]:
    return app.query_one(StreamingMarkdown).size.height, app.query_one("#theirs Markdown").size.height


async def test_rows_added_to_a_long_answer_fill_its_room_without_changing_its_height():
    app = Beside()
    async with app.run_test(size=(WIDTH, HEIGHT)) as pilot:
        await append_both(pilot, paragraphs(20) + "The last paragraph")
        ours, theirs = heights(app)
        room = room_for(theirs, HEIGHT)
        assert room == ROOM_LINES  # a long answer on a tall screen keeps the most
        assert ours == theirs + room
        column = app.query_one("#ours", VerticalScroll)
        column.scroll_end(animate=False)
        await pilot.pause()
        scrolled = column.max_scroll_y
        needed = theirs
        while needed <= ours:  # rows more, into the room: the answer's height stays
            await append_both(pilot, " more words")
            needed = heights(app)[1]
            if needed <= ours:
                assert heights(app)[0] == ours
                assert column.max_scroll_y == scrolled  # nothing scrolled: the transcript is not drawn again
        assert needed == ours + 1  # a row more than the room holds: room again below the new end
        assert heights(app)[0] == needed + room


async def test_a_short_answer_keeps_a_quarter_of_its_rows_and_a_small_screen_less():
    app = Beside()
    async with app.run_test(size=(WIDTH, HEIGHT)) as pilot:
        await append_both(pilot, "A short answer")
        ours, theirs = heights(app)
        assert theirs < 4 and ours == theirs  # no room: a short answer would jump at its end
        await append_both(pilot, paragraphs(4))
        ours, theirs = heights(app)
        assert ours == theirs + theirs // 4
    app = Beside()
    async with app.run_test(size=(WIDTH, 24)) as pilot:
        await append_both(pilot, paragraphs(20))
        ours, theirs = heights(app)
        assert ours == theirs + 24 // 6


async def test_a_growing_code_block_s_room_counts_as_the_answer_s():
    app = Beside()
    async with app.run_test(size=(WIDTH, HEIGHT)) as pilot:
        await append_both(pilot, paragraphs(4) + "```python\n" + "".join(f"x = {i}\n" for i in range(40)))
        await append_both(pilot, "y = ")  # the answer ends inside the open fence, which keeps its own room
        fence = app.query_one(StreamedFence)
        kept = fence.lines.room
        assert 0 < kept <= ROOM_LINES
        ours, theirs = heights(app)
        assert ours == theirs + kept  # not twice the room
        await append_both(pilot, "1\n```\n\nAfter the code.")  # closed: the block gives its room back
        assert fence.lines.room == 0
        ours_after, theirs_after = heights(app)
        assert ours_after == ours  # the answer keeps its height: the room is now the answer's
        assert ours_after - theirs_after <= room_for(theirs_after, HEIGHT)


async def test_stop_growing_gives_the_room_back():
    app = Beside()
    async with app.run_test(size=(WIDTH, HEIGHT)) as pilot:
        await append_both(pilot, paragraphs(20))
        ours, theirs = heights(app)
        assert ours > theirs
        markdown = app.query_one(StreamingMarkdown)
        markdown.stop_growing()
        await pilot.pause()
        assert heights(app) == (theirs, theirs)
        assert not markdown.growing


async def test_an_answer_streamed_in_the_app_ends_at_the_height_of_the_stored_message(tmp_path):
    text = paragraphs(30)
    app = make_app(tmp_path / "lovia.db", model=ScriptedModel([ScriptedTurn(text=text, chunk_chars=40)]))
    async with app.run_test(size=(WIDTH, HEIGHT)) as pilot:
        await settle(pilot)
        await type_and_send(pilot, "hi")
        await settle(pilot)
        transcript = app.main.chat.transcript
        live = transcript.query(AssistantMessageView).last()
        markdown = live.query_one(StreamingMarkdown)
        assert not markdown.growing
        stored = AssistantMessageView(text, "assistant")
        await transcript.mount(stored)
        await pilot.pause()
        assert live.size.height == stored.size.height

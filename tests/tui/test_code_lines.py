"""A code block drawn a line at a time (issue 9, item 3: the display lag of a streamed code block).

:class:`~lovia.tui.widgets.code_lines.CodeLines` takes the place of the labels a streamed code block
was shown as: one widget that renders a line at a time, lays out again only when its size changes,
and keeps a few blank lines of room while it grows. These tests hold its promises in a real Textual
app: it paints exactly as a ``Label`` of the same lines (with a mouse selection too, and copies the
same text), a changed line is the only one rendered again, and a streamed block's growth inside its
room lays nothing out.
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.geometry import Offset
from textual.selection import Selection
from textual.widgets import Label
from textual.widgets.markdown import MarkdownFence

from lovia.tui.widgets.code_lines import ROOM_LINES, CodeLines
from lovia.tui.widgets.streaming_markdown import StreamedFence, StreamingMarkdown
from tests.tui.test_streaming_speed import painted

CODE = '''def run(step):
    """Runs the steps,\twith a tab."""
    total = 0  # a comment long enough to pass the width of the narrow view, so that it scrolls sideways
    for i in range(10):
        total += step(i)

    return "déjà vu 日本語"'''


def highlighted() -> Content:
    return MarkdownFence.highlight(CODE, "python", dark=True)


class Beside(App[None]):
    """A label and a CodeLines of the same highlighted code, in boxes styled as a fence's."""

    CSS = """
    .box { height: auto; overflow: scroll hidden; scrollbar-size-horizontal: 0; background: black 10%;
           margin-bottom: 1; }
    .box > * { padding: 1 2; }
    """

    def compose(self) -> ComposeResult:
        content = highlighted()
        with Vertical(classes="box", id="label-box"):
            yield Label(content, expand=True, id="label")
        with Vertical(classes="box", id="lines-box"):
            yield CodeLines(content.split("\n", allow_blank=True), classes="lines")


def rows(app: App, box: str):
    return painted(app, app.query_one(f"#{box}").region)


async def test_the_lines_paint_as_a_label_of_the_same_code_at_any_width():
    for width in (40, 120):
        app = Beside()
        async with app.run_test(size=(width, 30)) as pilot:
            await pilot.pause()
            assert rows(app, "label-box") == rows(app, "lines-box")
            lines = app.query_one(CodeLines)
            assert lines.size == app.query_one("#label").size


async def test_a_mouse_selection_paints_and_copies_as_in_a_label():
    app = Beside()
    async with app.run_test(size=(60, 30)) as pilot:
        label, lines = app.query_one("#label", Label), app.query_one(CodeLines)
        selection = Selection(Offset(4, 1), Offset(9, 3))
        app.screen.selections = {label: selection, lines: selection}
        await pilot.pause()
        assert rows(app, "label-box") == rows(app, "lines-box")
        assert lines.get_selection(selection) == label.get_selection(selection)
        assert lines.get_selection(selection)[0].startswith('"""Runs')
        app.screen.selections = {}
        await pilot.pause()
        assert rows(app, "label-box") == rows(app, "lines-box")


def layouts_asked_by_show(monkeypatch) -> list[bool]:
    """Whether each refresh :meth:`CodeLines.show` asks for is a layout (Textual's own refreshes aside)."""
    asked: list[bool] = []
    show, refresh = CodeLines.show, CodeLines.refresh

    def showing(self, *args, **kwargs):
        def refreshing(*regions, **options):
            asked.append(options.get("layout", False))
            return refresh(self, *regions, **options)
        self.refresh = refreshing
        try:
            return show(self, *args, **kwargs)
        finally:
            del self.refresh

    monkeypatch.setattr(CodeLines, "show", showing)
    return asked


class One(App[None]):
    def compose(self) -> ComposeResult:
        yield CodeLines(highlighted().split("\n", allow_blank=True))


async def test_a_changed_line_is_the_only_one_rendered_again(monkeypatch):
    app = One()
    async with app.run_test(size=(80, 20)) as pilot:
        await pilot.pause()
        lines = app.query_one(CodeLines)
        rendered: list[int] = []
        render_one = CodeLines._render_one
        monkeypatch.setattr(CodeLines, "_render_one", lambda self, y, *rest: rendered.append(y) or render_one(self, y, *rest))
        layouts = layouts_asked_by_show(monkeypatch)
        changed = [*lines.lines]
        changed[4] = Content("        total += step(i) * 2")
        lines.show(changed)
        await pilot.pause()
        assert rendered == [4] and layouts == [False]
        rendered.clear()
        lines.show(changed)  # the same again: nothing to do
        await pilot.pause()
        assert rendered == [] and layouts == [False]  # no refresh asked
        lines.show([*changed, Content("print(run(abs))")])  # a line more: a layout, and that line rendered
        await pilot.pause()
        assert rendered == [7] and layouts == [False, True]


async def test_a_growing_block_keeps_room_below_and_takes_its_height_at_the_end():
    app = One()
    async with app.run_test(size=(80, 60)) as pilot:
        lines = app.query_one(CodeLines)
        code = [Content(f"x = {i}") for i in range(40)]
        lines.show(code, growing=True)
        await pilot.pause()
        assert lines.size.height == 40 + ROOM_LINES  # room for the lines to come
        for count in range(41, 40 + ROOM_LINES + 1):  # they fill it: no layout
            lines.show([Content(f"x = {i}") for i in range(count)], growing=True)
            await pilot.pause()
            assert lines.size.height == 40 + ROOM_LINES
        lines.show([Content(f"x = {i}") for i in range(40 + ROOM_LINES + 1)], growing=True)
        await pilot.pause()
        assert lines.size.height == 40 + 2 * ROOM_LINES + 1
        lines.show([Content(f"x = {i}") for i in range(43)])  # the end: the lines' own height
        await pilot.pause()
        assert lines.size.height == 43
        short = [Content("a = 1"), Content("b = 2")]
        lines.show(short, growing=True)  # a short block keeps a quarter of its lines at most
        await pilot.pause()
        assert lines.size.height == 2


class Streamed(App[None]):
    def compose(self) -> ComposeResult:
        yield StreamingMarkdown()


async def test_a_streamed_code_block_grows_inside_its_room_without_a_layout(monkeypatch):
    # Each line used to lay out the screen again (a label per 32 lines, each a widget): with a long
    # transcript, that took longer than a frame at every line.
    app = Streamed()
    async with app.run_test(size=(80, 60)) as pilot:
        markdown = app.query_one(StreamingMarkdown)
        await markdown.append("```python\n" + "".join(f"x = {i}\n" for i in range(40)))
        await pilot.pause()
        await markdown.append("y = ")  # the answer now ends inside the open fence: streamed as it grows
        await pilot.pause()
        lines = app.query_one(StreamedFence).lines
        layouts = layouts_asked_by_show(monkeypatch)
        for piece in ("1", "2\nz = ", "3\n", "w = 4"):
            await markdown.append(piece)
            await pilot.pause()
        assert layouts and not any(layouts)
        assert [line.plain for line in lines.lines[-3:]] == ["y = 12", "z = 3", "w = 4"]
        await markdown.append("\n```\n\nAfter.\n")  # closed: the block takes its lines' height
        await pilot.pause()
        assert lines.size.height == len(lines.lines) == 43


async def test_the_room_is_smaller_on_a_small_screen():
    app = One()
    async with app.run_test(size=(80, 24)) as pilot:  # 8 blank lines would be half the transcript
        lines = app.query_one(CodeLines)
        lines.show([Content(f"x = {i}") for i in range(40)], growing=True)
        await pilot.pause()
        assert lines.size.height == 44


async def test_the_room_shrinks_when_the_screen_does():
    app = One()
    async with app.run_test(size=(80, 60)) as pilot:
        lines = app.query_one(CodeLines)
        lines.show([Content(f"x = {i}") for i in range(40)], growing=True)
        await pilot.pause()
        assert lines.size.height == 48
        await pilot.resize_terminal(80, 24)
        lines.show([Content(f"x = {i}") for i in range(41)], growing=True)
        await pilot.pause()
        assert lines.size.height == 45


async def test_a_line_after_a_blank_line_streams_in_its_place():
    # Highlighting drops a chunk's trailing empty line: the line being written after a blank line was
    # shown a line too high, over the blank line, and its earlier text stayed below the chunk ("def g"
    # above "def g(x").
    app = Streamed()
    async with app.run_test(size=(80, 40)) as pilot:
        markdown = app.query_one(StreamingMarkdown)
        await markdown.append("```python\ndef f():\n    pass\n")
        await pilot.pause()
        for piece in ("\n", "def g", "(x"):
            await markdown.append(piece)
            await pilot.pause()
        fence = app.query_one(StreamedFence)
        assert fence.code == "def f():\n    pass\n\ndef g(x"
        assert [line.plain for line in fence.lines.lines] == fence.code.split("\n")


GO = "func f() error {\n" + "\t" * 10 + 'return fmt.Errorf("THE-END")\n}'


async def test_a_line_widened_by_tabs_is_drawn_whole():
    # A tab counts no cells for rich's cell_len but is drawn 8 wide: the line was measured short,
    # wrapped, and only its first row drawn (Textual's label wraps it onto a row of its own).
    class Go(App[None]):
        def compose(self) -> ComposeResult:
            yield CodeLines(MarkdownFence.highlight(GO, "go", dark=True).split("\n", allow_blank=True))

    app = Go()
    async with app.run_test(size=(80, 20)) as pilot:
        await pilot.pause()
        lines = app.query_one(CodeLines)
        assert lines.size.width >= 80 + len('return fmt.Errorf("THE-END")')
        drawn = "".join(segment.text for segment in lines.render_line(1))
        assert drawn.rstrip().endswith('return fmt.Errorf("THE-END")')


async def test_a_longest_line_growing_within_the_width_lays_nothing_out(monkeypatch):
    app = Streamed()
    async with app.run_test(size=(120, 60)) as pilot:
        markdown = app.query_one(StreamingMarkdown)
        await markdown.append("```python\n" + "".join(f"x = {i}\n" for i in range(40)))
        await pilot.pause()
        await markdown.append("y = ")
        await pilot.pause()
        layouts = layouts_asked_by_show(monkeypatch)
        for piece in ("compute(", "alpha, ", "beta, ", "gamma)"):  # the longest line so far, far within 116 columns
            await markdown.append(piece)
            await pilot.pause()
        assert layouts and not any(layouts)


async def test_an_answer_ended_inside_an_open_block_gives_back_the_room_at_once():
    # flush parsed nothing (the held text was dropped before Textual's append saw it): the block kept its
    # room until its whole-block highlight ended in the background, and the source lacked the held text.
    app = Streamed()
    async with app.run_test(size=(80, 60)) as pilot:
        markdown = app.query_one(StreamingMarkdown)
        await markdown.append("```python\n" + "".join(f"x = {i}\n" for i in range(40)))
        await pilot.pause()
        for piece in ("y = 1\n", "z = 2\n", "w = 3"):
            await markdown.append(piece)
            await pilot.pause()
        lines = app.query_one(StreamedFence).lines
        assert lines.size.height > len(lines.lines)  # room while it streams
        await markdown.flush()  # what the answer's end does first
        await pilot.pause()
        assert markdown.source.endswith("w = 3")
        assert lines.size.height == len(lines.lines) == 43


async def test_a_mouse_drag_selects_what_it_selects_in_a_label():
    async def drag(pilot, widget, start, end) -> str | None:
        await pilot.mouse_down(widget, offset=start)
        await pilot.hover(widget, offset=end)
        await pilot.mouse_up(widget, offset=end)
        await pilot.pause()
        return pilot.app.screen.get_selected_text()

    app = Beside()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        in_label = await drag(pilot, app.query_one("#label", Label), (6, 2), (12, 4))
        app.screen.clear_selection()
        await pilot.pause()
        in_lines = await drag(pilot, app.query_one(CodeLines), (6, 2), (12, 4))
        assert in_lines == in_label
        assert in_lines and in_lines.startswith('"""Runs') and in_lines.endswith("for i i")

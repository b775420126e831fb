"""Textual names we rely on that Textual does not promise to keep: they start with an underscore.

Each test says which lovia code needs the name, so a Textual release that renames one fails here,
with a pointer, instead of as a puzzling symptom in a pilot test.
"""

from __future__ import annotations

import inspect
import io

import pytest
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Input, OptionList, Static, TextArea

from lovia.tui.widgets.composer import Composer
from lovia.tui.widgets.sessions_pane import SessionList
from lovia.tui.widgets.text_input import TextInput
from tests.tui.conftest import Told, told


@pytest.mark.parametrize(("ours", "textuals"), [(Composer, TextArea), (SessionList, OptionList), (TextInput, Input)])
def test_the_key_handlers_we_extend_exist(ours, textuals):
    # Composer, SessionList and TextInput take some keys themselves and pass the rest to
    # super()._on_key, Textual's own key handling (for TextArea and Input: the typing itself).
    assert issubclass(ours, textuals)
    handler = getattr(textuals, "_on_key", None)
    assert handler is not None and inspect.iscoroutinefunction(handler), (
        f"Textual's {textuals.__name__} no longer has an async _on_key: {ours.__module__}.{ours.__name__}._on_key "
        "must hand unhandled keys to Textual another way")
    assert list(inspect.signature(handler).parameters) == ["self", "event"]


class ComposerApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Composer()


async def test_keys_the_composer_passes_on_are_typed():
    app = ComposerApp()
    async with app.run_test() as pilot:
        await pilot.press("h", "i", "space", "x")
        assert app.query_one(Composer).text == "hi x"


async def test_the_notices_tests_read_outlast_the_toasts():
    # tests/tui read what the app told the user through conftest's wrapper of App.notify, not from
    # App._notifications: Textual drops a toast when it times out, which on a slow machine came
    # before the test looked (CI failed so).
    app = App[None]()
    app.NOTIFICATION_TIMEOUT = 0.05
    async with app.run_test() as pilot:
        app.notify("saved", severity="warning")
        await pilot.pause(0.3)
        assert told(app) == [Told("saved", "", "warning")]


def test_the_crash_report_we_replace_exists():
    # LoviaApp._fatal_error replaces Textual's crash report (which prints every frame's locals)
    # and uses what Textual's own does: _exit_renderables and _close_messages_no_wait.
    from lovia.tui.app import LoviaApp

    assert "_fatal_error" in vars(App) and "_fatal_error" in vars(LoviaApp)
    assert list(inspect.signature(App._fatal_error).parameters) == ["self"]
    assert callable(getattr(App, "_close_messages_no_wait", None))
    assert isinstance(App()._exit_renderables, list)


def test_the_shutdown_we_extend_exists():
    # LoviaApp._shutdown cancels the app's workers before Textual's own removes the widgets
    # (tests/tui/test_closing_mid_flow.py): it must still be the coroutine every close awaits.
    from lovia.tui.app import LoviaApp

    assert "_shutdown" in vars(App) and "_shutdown" in vars(LoviaApp)
    assert inspect.iscoroutinefunction(App._shutdown)
    assert list(inspect.signature(App._shutdown).parameters) == ["self"]
    for closes in (App.run_async, App.run_test):
        assert "app._shutdown()" in inspect.getsource(closes)


async def test_a_crash_report_shows_no_local_variables(tmp_path):
    """A crash prints the traceback, never the locals of its frames (conversation text, keys)."""
    from rich.console import Console

    from tests.tui.conftest import make_app

    secret = "-".join(["sk", "never", "printed", str(6 * 7)])  # built, so the source shows no copy of it

    def fail_with_a_secret_in_scope() -> None:
        api_key = secret  # noqa: F841 - a local a crash report with locals would show
        raise RuntimeError("boom")

    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        try:
            fail_with_a_secret_in_scope()
        except RuntimeError:
            app._fatal_error()  # what Textual calls for an unhandled exception, inside its handler
        console = Console(record=True, width=120, file=io.StringIO())
        for renderable in app._exit_renderables:
            console.print(renderable)
    report = console.export_text()
    assert "RuntimeError" in report and "boom" in report  # the report is there
    assert secret not in report


def test_the_markdown_block_update_we_override_exists():
    # lovia.tui.widgets.streaming_markdown.StreamedFence overrides MarkdownBlock._update_from_block, which
    # Markdown.append calls on the document's last block with the block rebuilt from its source, and
    # builds itself with MarkdownBlock.__init__ (MarkdownFence.__init__ highlights the whole code).
    from textual.widgets import Markdown
    from textual.widgets.markdown import MarkdownBlock, MarkdownFence

    handler = getattr(MarkdownBlock, "_update_from_block", None)
    assert handler is not None and inspect.iscoroutinefunction(handler)
    assert list(inspect.signature(handler).parameters) == ["self", "block"]
    assert "_update_from_block" in inspect.getsource(Markdown.append)
    assert list(inspect.signature(MarkdownBlock.__init__).parameters)[:3] == ["self", "markdown", "token"]
    assert list(inspect.signature(MarkdownFence.__init__).parameters) == ["self", "markdown", "token", "code"]


def test_the_code_a_fence_shows_is_kept_where_we_set_it():
    # lovia.tui.widgets.stored_markdown.StoredFence builds itself with MarkdownBlock.__init__ and
    # sets MarkdownFence._highlighted_code, the content its label is composed with and that
    # _copy_context passes on; set_content then shows what a worker thread coloured.
    from textual.widgets.markdown import MarkdownFence

    assert "self._highlighted_code" in inspect.getsource(MarkdownFence.compose)
    assert "_highlighted_code" in inspect.getsource(MarkdownFence._copy_context)
    assert list(inspect.signature(MarkdownFence.set_content).parameters) == ["self", "content"]


async def test_the_line_markdown_append_parses_from_can_be_set():
    # lovia.tui.widgets.streaming_markdown.StreamingMarkdown._parse sets Markdown._last_parsed_line, the
    # source line Markdown.append parses from (the last block's), to a list's start when the last block may
    # join that list; the block rebuilt first then updates the document's last block left.
    from textual.widgets import Markdown

    source = inspect.getsource(Markdown.append)
    assert "self._last_parsed_line" in source and "existing_blocks[-1]" in source

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield Markdown()

    async with One().run_test() as pilot:
        markdown = pilot.app.query_one(Markdown)
        await markdown.append("1. a\n\n2")
        assert [type(block).__name__ for block in markdown.children] == ["MarkdownOrderedList", "MarkdownParagraph"]
        assert markdown._last_parsed_line == 2  # the last block's line
        await markdown.query_children().last().remove()
        markdown._last_parsed_line = 0
        await markdown.append(". b\n")
        assert [type(block).__name__ for block in markdown.children] == ["MarkdownOrderedList"]
        assert len(markdown.children[0].children) == 2  # its two rows


def test_the_markdown_blocks_we_grow_in_place_exist():
    # lovia.tui.widgets.streaming_markdown grows lists and quotes in place (GrowsInPlace): it imports
    # their classes from textual.widgets._markdown (not exported), reads a parsed block's _blocks and
    # _content, and calls _copy_context. Their compose shapes are held by tests/tui/test_streaming_lists.py
    # (a streamed list paints as Textual's own).
    from textual.widgets import _markdown

    names = ("MarkdownBlockQuote", "MarkdownBullet", "MarkdownBulletList", "MarkdownListItem", "MarkdownOrderedList",
             "MarkdownParagraph")
    assert all(isinstance(getattr(_markdown, name, None), type) for name in names)
    block = _markdown.MarkdownBlock.__new__(_markdown.MarkdownBlock)
    source = inspect.getsource(_markdown.MarkdownBlock.__init__)
    assert "self._blocks" in source and "self._content" in source
    assert callable(getattr(block, "_copy_context", None))
    # StreamedTable compares the rows a table shows (_rows) with those of the table rebuilt
    # (_get_headers_and_rows) before letting Textual's _update_from_block add the new ones.
    assert "self._rows" in inspect.getsource(_markdown.MarkdownTable.__init__)
    assert callable(getattr(_markdown.MarkdownTable, "_get_headers_and_rows", None))
    assert "MarkdownTable" in names or isinstance(getattr(_markdown, "MarkdownTable", None), type)
    assert "symbol" in _markdown.MarkdownBullet.__dict__


async def test_the_screen_can_be_read_as_the_terminal_gets_it():
    # tests/tui/test_streaming_speed.py compares what two answers paint with Screen._compositor.render_update,
    # as App.export_screenshot does.
    from textual.widgets import Static

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("painted")

    app = One()
    async with app.run_test(size=(20, 2)) as pilot:
        await pilot.pause()
        assert "_compositor.render_update" in inspect.getsource(App.export_screenshot)
        update = app.screen._compositor.render_update(full=True)
        assert "painted" in "".join(strip.text for strip in update.strips[0])


def test_the_compositor_settled_lines_lays_a_container_out_with_exists():
    # lovia/tui/widgets/settled_lines.py lays a folded answer's container out with a compositor of
    # its own (textual._compositor.Compositor: reflow, then layers of (widget, geometry) with
    # region and clip) to capture the lines its settled blocks painted.
    from textual._compositor import Compositor, MapGeometry

    compositor = Compositor()
    assert callable(compositor.reflow)
    assert list(inspect.signature(Compositor.reflow).parameters)[1:3] == ["parent", "size"]
    assert isinstance(inspect.getattr_static(Compositor, "layers"), property)
    assert {"region", "clip"} <= set(MapGeometry._fields)


def test_the_call_that_forgets_a_notification_exists():
    # LoviaApp._unnotify extends Textual's: a toast timed out or clicked away calls it, so the
    # same notice may show again (LoviaApp.notify does not stack one still shown).
    from textual.widgets._toast import Toast

    handler = getattr(App, "_unnotify", None)
    assert handler is not None and list(inspect.signature(handler).parameters) == ["self", "notification", "refresh"]
    assert "_unnotify" in inspect.getsource(Toast)
    # LoviaApp._withdraw reads the notifications shown from App._notifications
    assert "self._notifications = Notifications()" in inspect.getsource(App.__init__)
    assert "self._notifications.add(" in inspect.getsource(App)
    from textual.notifications import Notification, Notifications

    shown = Notification("shown", "t", "warning")
    notifications = Notifications().add(shown)
    assert [(n.message, n.title, n.severity) for n in notifications] == [("shown", "t", "warning")]


def test_the_toast_rack_hidden_under_a_dialog_is_shown_again_with_its_screen():
    # LoviaApp.withdraw_notices hides the ToastRack of the screen under a dialog (display False),
    # and counts on Textual to show it again, up to date, when that screen comes back: a resumed
    # screen's notifications are refreshed (App._refresh_notifications), and ToastRack.show sets
    # display from them.
    from textual.screen import Screen
    from textual.widgets._toast import ToastRack

    assert "self.app._refresh_notifications()" in inspect.getsource(Screen._on_screen_resume)
    assert "toast_rack.show, self._notifications" in inspect.getsource(App._refresh_notifications)
    assert "self.display = bool(notifications)" in inspect.getsource(ToastRack.show)
    assert ToastRack.__name__ == "ToastRack"  # the name the screen's query selects it by


class Scroller(App[None]):
    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield from (Static(f"line {i}") for i in range(50))


async def test_the_anchor_release_flag_we_read_exists_and_means_what_we_read():
    # Transcript.follows_end reads Widget._anchor_released: whether a set anchor was released by
    # a move away from the end (Textual's is_anchored says only that anchor() was called).
    app = Scroller()
    async with app.run_test(size=(40, 10)) as pilot:
        scroll = app.query_one(VerticalScroll)
        scroll.anchor()
        await pilot.pause()
        assert scroll.is_anchored and scroll._anchor_released is False
        scroll.release_anchor()
        assert scroll.is_anchored and scroll._anchor_released is True
        scroll.scroll_end(animate=False, immediate=True)  # back at the end: it follows again
        await pilot.pause()
        assert scroll._anchor_released is False

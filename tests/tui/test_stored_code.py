"""Stored answers' code blocks: coloured as Textual colours them, never on the event loop when that is slow."""

from __future__ import annotations

import threading

import pytest
from textual.widgets.markdown import MarkdownFence

from lovia import AssistantMessage, SQLiteSession, UserMessage
from lovia.tui.widgets import stored_markdown
from lovia.tui.widgets.stored_markdown import StoredFence
from tests.tui.conftest import make_app, settle, told, wait_for
from tests.tui.test_streaming_speed import painted

SIZES = [(80, 24), (160, 45)]
# Languages no other test colours: each test takes one this process has not coloured yet.
RARE_LANGUAGES = ["fortran", "erlang", "ocaml", "prolog", "ada", "cobol", "haskell", "elixir", "scheme", "tcl",
                  "vhdl", "smalltalk", "pascal", "forth", "awk", "groovy", "julia", "nim", "zig", "dart"]


def rare_language() -> str:
    return next(language for language in RARE_LANGUAGES if language not in stored_markdown._COLOURED_LANGUAGES)


async def answer_with_code(db, *blocks: tuple[str, str], session_id: str = "s-code") -> None:
    text = "Here it is:\n\n" + "\n\n".join(f"```{language}\n{code}\n```" for language, code in blocks)
    async with SQLiteSession(db, wal=True) as session:
        await session.append(session_id, [UserMessage(text="Show me code"), AssistantMessage(text=text)])


class Colouring:
    """MarkdownFence.highlight, recorded: the languages asked, and whether on the event loop's thread.
    While ``held`` is cleared, a colouring in a worker thread waits for it to be set."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, bool]] = []
        self.held = threading.Event()
        self.held.set()

    def on_the_loop(self, language: str) -> list[bool]:
        return [on_main for asked, on_main in self.calls if asked == language]


@pytest.fixture
def colouring(monkeypatch):
    recorder = Colouring()
    highlight = MarkdownFence.highlight.__func__  # type: ignore[attr-defined]

    def recorded(cls, code, language, ansi=False, dark=False):
        on_main = threading.current_thread() is threading.main_thread()
        recorder.calls.append((language, on_main))
        if not on_main:
            assert recorder.held.wait(10)
        return highlight(cls, code, language, ansi, dark)

    monkeypatch.setattr(MarkdownFence, "highlight", classmethod(recorded))
    yield recorder
    recorder.held.set()


def styled(fence: StoredFence) -> bool:
    return bool(fence._highlighted_code.spans)


@pytest.mark.parametrize("size", SIZES)
async def test_a_language_new_to_the_process_is_shown_plain_then_coloured_off_the_event_loop(
        tmp_path, size, colouring):
    language, code = rare_language(), "x = 1\nprint x"
    unlabelled = "def f(x):\n    return x + 1"
    await answer_with_code(tmp_path / "lovia.db", (language, code), ("", unlabelled))
    app = make_app(tmp_path / "lovia.db")
    colouring.held.clear()
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: len(colouring.calls) == 1)  # one asked in its thread, held there
        await pilot.pause()
        fences = list(app.screen.query(StoredFence))
        assert [fence.code for fence in fences] == [code, unlabelled]
        for fence in fences:  # shown meanwhile: the code, plain, in the cells it takes coloured
            assert fence.coloured_with is None and not styled(fence)
            assert str(fence.query_one("#code-content").render()) == fence.code
        colouring.held.set()
        await wait_for(pilot, lambda: all(fence.coloured_with is not None for fence in fences))
        await settle(pilot)
        asked_on_the_loop = [language for language, on_main in colouring.calls if on_main]
        for fence in fences:
            expected = MarkdownFence.highlight(fence.code, fence.lexer, app.native_ansi_color, app.current_theme.dark)
            assert fence._highlighted_code == expected
            assert str(fence.query_one("#code-content").render()) == str(expected)
        assert styled(fences[0]) and styled(fences[1])
    assert language not in asked_on_the_loop and "" not in asked_on_the_loop, colouring.calls


async def test_a_language_coloured_before_is_coloured_at_once(tmp_path, colouring):
    language = rare_language()
    await answer_with_code(tmp_path / "lovia.db", (language, "x = 1"), session_id="s-first")
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: all(f.coloured_with is not None for f in app.screen.query(StoredFence)))
    assert colouring.on_the_loop(language) == [False]  # new to the process: in the thread
    await answer_with_code(tmp_path / "lovia.db", (language, "y = 2"), session_id="s-second")
    app = make_app(tmp_path / "lovia.db")
    colouring.held.clear()  # a colouring in the thread would not end
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        (fence,) = app.screen.query(StoredFence)
        assert fence.code == "y = 2" and fence.coloured_with is not None and styled(fence)
    assert colouring.on_the_loop(language) == [False, True]  # then as Textual does, as it is built


async def test_a_theme_changed_while_a_block_is_coloured_gets_its_colours(tmp_path, colouring):
    language = rare_language()
    await answer_with_code(tmp_path / "lovia.db", (language, "x = 1"))
    app = make_app(tmp_path / "lovia.db", theme="lovia-dark")
    colouring.held.clear()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: len(colouring.calls) == 1)
        (fence,) = app.screen.query(StoredFence)
        app.theme = "lovia-light"  # while the thread colours it for the dark one
        await pilot.pause()
        colouring.held.set()
        await wait_for(pilot, lambda: fence.coloured_with is not None)
        assert fence.coloured_with == (app.native_ansi_color, False)
        assert fence._highlighted_code == MarkdownFence.highlight(fence.code, language, app.native_ansi_color, False)


async def test_a_theme_change_colours_the_code_again_for_it(tmp_path):
    await answer_with_code(tmp_path / "lovia.db", ("python", "import os\nprint(os.sep)"), ("", "SELECT 1;"))
    app = make_app(tmp_path / "lovia.db", theme="lovia-dark")
    async with app.run_test(size=(160, 45)) as pilot:
        fences = list(app.screen.query(StoredFence))
        await wait_for(pilot, lambda: all(fence.coloured_with is not None for fence in fences))
        app.theme = "lovia-light"
        await wait_for(pilot, lambda: all(fence.coloured_with == (app.native_ansi_color, False) for fence in fences))
        for fence in fences:
            assert fence._highlighted_code == MarkdownFence.highlight(fence.code, fence.lexer, app.native_ansi_color,
                                                                      False)


async def test_blocks_are_coloured_one_at_a_time(tmp_path, colouring):
    # Each colouring thread holds the GIL as often as the event loop would: in turn, not all at once.
    first, second = rare_language(), RARE_LANGUAGES[RARE_LANGUAGES.index(rare_language()) + 1]
    await answer_with_code(tmp_path / "lovia.db", (first, "a = 1"), (second, "b = 2"), ("", "c = 3"))
    app = make_app(tmp_path / "lovia.db")
    colouring.held.clear()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: len(colouring.calls) == 1)
        await pilot.pause(0.3)  # time for the others' threads to start: they wait for the first
        assert len(colouring.calls) == 1, colouring.calls
        colouring.held.set()
        fences = list(app.screen.query(StoredFence))
        await wait_for(pilot, lambda: all(fence.coloured_with is not None for fence in fences))
    assert len(colouring.calls) == 3 and not any(on_main for _, on_main in colouring.calls)


LONG_LINE = "print([fib(i) for i in range(20)])  # " + "a comment that goes on " * 8 + "THE-END"


def screen_text(app) -> str:
    return "\n".join("".join(text for text, _ in row) for row in painted(app, app.screen.region))


@pytest.mark.parametrize("size", SIZES)
async def test_a_code_line_wider_than_the_view_is_read_by_moving_its_block_sideways(tmp_path, size):
    """Code is not wrapped: a line wider than the view went on past it with no sign, and no key
    showed the rest (a trial at 80x24 and 200x50). Its block now shows a scrollbar under it, and
    right / left (l / h) on the selected message move its wide blocks half a view at a time."""
    db = tmp_path / "lovia.db"
    await answer_with_code(db, ("python", f"import sys\n{LONG_LINE}\nx = 1"), ("", "short"))
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        wide, narrow = app.screen.query(MarkdownFence)
        assert wide.max_scroll_x > 0 and wide.scrollbar_gutter.bottom == 1  # a scrollbar says the line goes on
        assert narrow.max_scroll_x == 0 and narrow.scrollbar_gutter.bottom == 0
        assert "THE-END" not in screen_text(app)
        transcript = app.screen.query_one("Transcript")
        transcript.focus()
        await pilot.press("up")  # from the last message (the answer) to the question: no code there
        await settle(pilot)
        told(app).clear()
        await pilot.press("right")
        assert any("No code block of the selected message is wider" in str(t) for t in told(app))
        await pilot.press("down")
        for _ in range(8):
            await pilot.press("right")
        await settle(pilot)
        assert wide.scroll_x == wide.max_scroll_x and "THE-END" in screen_text(app)
        assert narrow.scroll_x == 0
        await pilot.press("h", *["left"] * 8)
        await settle(pilot)
        assert wide.scroll_x == 0 and "import sys" in screen_text(app)

"""Long histories: a session of thousands of entries opens on its newest page and moves by pages.

Real SQLite files, the real app through its pilot, at 80x24 and 160x45. The long session is the
one ``screenshots/demo_data.py`` writes (runs of 200 question/answer entries); another one starts
with a tool call, so an entry of its first page can be expanded, copied and edited from the end.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from lovia import InMemorySession, SQLiteSession
from lovia.entries import AssistantMessage, ToolCall, ToolResult, UserMessage
from lovia.tui.widgets.assistant_message import AssistantMessageView
from lovia.tui.widgets.notice import NoticeView
from lovia.tui.widgets.run_header import RunHeader
from lovia.tui.widgets.tool_call_view import ToolCallView
from lovia.tui.widgets.transcript import KEPT_PAGES, MIN_PAGE, MOUNTED_PAGES, PAGE
from lovia.tui.widgets.user_message import UserMessageView
from screenshots.demo_data import LONG_SESSION, build

from .conftest import make_app, settle, told, type_and_send, wait_for

ENTRIES = 3_000
SIZES = [(80, 24), (160, 45)]
TOOLS_FIRST = "s-tools-first"
BOUND = MOUNTED_PAGES * PAGE  # stored entries mounted at most
# Where the tools-first session has a call whose result lies on the next page (pages of MIN_PAGE from 0).
CALL_AT = 3 * MIN_PAGE - 1


@pytest.fixture(scope="module")
def long_db(tmp_path_factory) -> Path:
    """One database for the module: building thousands of entries once keeps the tests quick."""
    import asyncio

    db = tmp_path_factory.mktemp("long") / "lovia.db"
    asyncio.run(build(db, long_entries=ENTRIES))
    return db


def copy_of(db: Path, tmp_path: Path) -> Path:
    """A test's own copy of the module's database (the app writes to it)."""
    import sqlite3

    target = tmp_path / "lovia.db"
    with sqlite3.connect(db) as source, sqlite3.connect(target) as copy:
        source.backup(copy)
    return target


async def with_short_session(db: Path, session_id: str, questions: int) -> Path:
    """``db`` with a session of ``questions`` runs of a question and its answer, numbered as the long session's."""
    async with SQLiteSession(db, wal=True) as session:
        for i in range(questions):
            await session.append(session_id, [UserMessage(text=f"Question number {i}: what changed in step {i}?"),
                                              AssistantMessage(text=f"Step {i} changed.")])
    return db


async def tools_first(db: Path, runs: int = 10) -> None:
    """A session whose first run has a tool call across the first page's edge, then ``runs`` runs of 200."""
    async with SQLiteSession(db, wal=True) as session:
        first = [UserMessage(text="first question, on the first page")]
        first += [AssistantMessage(text=f"warming up {i}") for i in range(CALL_AT - 1)]
        first += [ToolCall(call_id="call-edge", name="calculate", arguments='{"expression": "6*7"}'),
                  ToolResult(call_id="call-edge", output="6*7 = 42", name="calculate"),
                  AssistantMessage(text="It is **42**.")]
        await session.append(TOOLS_FIRST, first, run_id="run-first", meta={"timing": {"started_at": 1.0,
                                                                                      "finished_at": 2.0}})
        for run in range(runs):
            batch = []
            for i in range(100):
                batch += [UserMessage(text=f"q{run}-{i}"), AssistantMessage(text=f"a{run}-{i}")]
            await session.append(TOOLS_FIRST, batch, run_id=f"run-{run}")


async def open_long(pilot, session_id: str = LONG_SESSION):
    app = pilot.app
    await settle(pilot)
    await app.screen.open_session(session_id)
    await settle(pilot)
    transcript = app.screen.chat.transcript
    transcript.focus()
    await settle(pilot)
    return transcript


def texts(transcript) -> list[str]:
    return [view.copy_text() for view in transcript.views]


RUN = 200  # entries in each run of the long session


def position(view) -> int:
    """Where a message of the long session is stored, from its text: entry 2k asks question k, 2k+1 answers it."""
    match = re.match(r"(Question number|Step) (\d+)", view.copy_text())
    assert match, view.copy_text()
    return 2 * int(match[2]) + (match[1] == "Step")


def rows_per_stored_entry(transcript) -> float:
    """How many rows an entry of the long session takes, on average over the first 20 shown."""
    views = transcript.views
    return (views[20].virtual_region.y - views[0].virtual_region.y) / 20


def positions(transcript) -> list[int]:
    return [position(view) for view in transcript.views]


def assert_shown_right(transcript) -> list[int]:
    """The messages shown are stored ones in order with none missing, each run headed where it begins."""
    shown = positions(transcript)
    assert shown == list(range(shown[0], shown[0] + len(shown)))
    children = [child for child in transcript.children if child.display]
    for before, after in itertools.pairwise(children):
        if isinstance(after, UserMessageView | AssistantMessageView):
            assert isinstance(before, RunHeader) == (position(after) % RUN == 0)
        if isinstance(before, RunHeader):
            assert position(after) % RUN == 0
    return shown


def hidden(transcript) -> list:
    return [child for child in transcript.children if not child.display]


def visible(transcript, view) -> bool:
    """Whether ``view`` is within the transcript's visible region."""
    top, bottom = transcript.scroll_y, transcript.scroll_y + transcript.scrollable_content_region.height
    region = view.virtual_region
    return region.y < bottom and region.bottom > top


@pytest.mark.parametrize("size", SIZES)
async def test_a_long_session_opens_at_its_end_with_a_page_mounted(long_db, tmp_path, size):
    app = make_app(copy_of(long_db, tmp_path))
    async with app.run_test(size=size) as pilot:
        transcript = await open_long(pilot)
        last = f"Step {ENTRIES // 2 - 1} changed"
        assert texts(transcript)[-1].startswith(last)
        assert visible(transcript, transcript.views[-1])
        assert 0 < transcript.mounted_entries <= BOUND
        assert transcript.older_hidden == ENTRIES - transcript.mounted_entries
        assert transcript.at_end


@pytest.mark.parametrize("size", SIZES)
async def test_home_shows_the_first_entry_and_end_the_last(long_db, tmp_path, size):
    app = make_app(copy_of(long_db, tmp_path))
    async with app.run_test(size=size) as pilot:
        transcript = await open_long(pilot)
        await pilot.press("home")
        await settle(pilot)
        assert transcript.older_hidden == 0
        first = transcript.selected_view
        assert isinstance(first, UserMessageView) and first.message.text.startswith("Question number 0:")
        assert transcript.selected == 0 and visible(transcript, first)
        assert not transcript.at_end and transcript.mounted_entries <= BOUND

        await pilot.press("end")
        await settle(pilot)
        assert transcript.at_end and transcript.at_last_message
        last = transcript.selected_view
        assert isinstance(last, AssistantMessageView) and last.text.startswith(f"Step {ENTRIES // 2 - 1} ")
        assert visible(transcript, last)


@pytest.mark.parametrize("size", SIZES)
async def test_home_and_end_show_the_session_ends_kept_mounted(long_db, tmp_path, size):
    """The first entries are mounted, hidden, once the session opened; home and end show what was kept."""
    app = make_app(copy_of(long_db, tmp_path))
    async with app.run_test(size=size) as pilot:
        transcript = await open_long(pilot)
        composed = hidden(transcript)
        assert composed and not set(composed) & set(transcript.views)  # the first page, not shown
        last = transcript.views[-1]
        most = (MOUNTED_PAGES + 2 * KEPT_PAGES) * transcript.page_size
        for _ in range(2):
            await pilot.press("home")
            await settle(pilot)
            first = transcript.selected_view
            assert first in composed  # shown, not mounted anew
            assert assert_shown_right(transcript)[0] == 0
            assert transcript.selected == 0 and transcript.scroll_y == 0 and visible(transcript, first)
            assert isinstance(next(c for c in transcript.children if c.display), RunHeader)
            assert len(transcript.children) <= most + most // RUN + 2

            await pilot.press("end")
            await settle(pilot)
            assert transcript.selected_view is last and transcript.at_last_message  # the last page was kept
            assert assert_shown_right(transcript)[-1] == ENTRIES - 1
            assert visible(transcript, last)
            assert len(transcript.children) <= most + most // RUN + 2
            await pilot.press("up")  # the cursor moves from where it is shown, whatever was shown above it
            await settle(pilot)
            assert position(transcript.selected_view) == ENTRIES - 2
            await pilot.press("down")
            await settle(pilot)


@pytest.mark.parametrize("size", SIZES)
async def test_from_home_and_from_end_the_view_scrolls_on_both_ways(long_db, tmp_path, size):
    """Past what was kept, pages are read; going back, the kept ends join what is shown again."""
    app = make_app(copy_of(long_db, tmp_path))
    async with app.run_test(size=size) as pilot:
        transcript = await open_long(pilot)
        kept_most = 2 * KEPT_PAGES * transcript.page_size
        await pilot.press("home")
        await settle(pilot)
        first = transcript.selected_view
        while transcript.older_hidden < 3 * kept_most:
            await pilot.press("pagedown")
            await settle(pilot)
            assert_shown_right(transcript)
            assert len(hidden(transcript)) <= kept_most + kept_most // RUN + 2
        for _ in range(10 * kept_most):
            if transcript.older_hidden == 0 and transcript.scroll_y == 0:
                break
            await pilot.press("pageup")
            await settle(pilot)
            assert_shown_right(transcript)
        assert transcript.older_hidden == 0 and transcript.views[0] is first

        await pilot.press("end")
        await settle(pilot)
        last = transcript.selected_view
        while transcript.newer_hidden < 3 * kept_most:
            await pilot.press("pageup")
            await settle(pilot)
            assert_shown_right(transcript)
            assert len(hidden(transcript)) <= kept_most + kept_most // RUN + 2
        for _ in range(10 * kept_most):
            if transcript.at_end and transcript.scroll_y >= transcript.max_scroll_y:
                break
            await pilot.press("pagedown")
            await settle(pilot)
            assert_shown_right(transcript)
        assert transcript.at_end and transcript.views[-1] is last


@pytest.mark.parametrize("size", SIZES)
async def test_home_and_end_in_a_session_of_two_pages_keep_every_entry_shown(long_db, tmp_path, size):
    """Ten entries at 80x24 open as a page and the two before it: home shows those two above, hides nothing."""
    app = make_app(await with_short_session(copy_of(long_db, tmp_path), "s-ten", 5))
    async with app.run_test(size=size) as pilot:
        transcript = await open_long(pilot, "s-ten")
        await pilot.press("home")
        await settle(pilot)
        assert positions(transcript) == list(range(10)) and not hidden(transcript)
        assert transcript.selected == 0 and visible(transcript, transcript.selected_view)
        await pilot.press("end")
        await settle(pilot)
        assert positions(transcript) == list(range(10)) and transcript.at_last_message


@pytest.mark.parametrize("size", SIZES)
async def test_page_keys_move_through_pages(long_db, tmp_path, size):
    app = make_app(copy_of(long_db, tmp_path))
    async with app.run_test(size=size) as pilot:
        transcript = await open_long(pilot)
        await pilot.press("home")
        await settle(pilot)
        shown = transcript.older_hidden + transcript.mounted_entries
        for _ in range(8):
            await pilot.press("pagedown")
            await settle(pilot)
        assert transcript.scroll_y > 0
        assert transcript.older_hidden + transcript.mounted_entries > shown  # newer pages were read
        top = transcript.scroll_y
        await pilot.press("pageup")
        await settle(pilot)
        assert transcript.scroll_y < top


@pytest.mark.parametrize("size", SIZES)
async def test_scrolling_through_keeps_the_mounted_widgets_bounded(long_db, tmp_path, size):
    app = make_app(copy_of(long_db, tmp_path))
    async with app.run_test(size=size) as pilot:
        transcript = await open_long(pilot)
        await pilot.press("home")
        await settle(pilot)
        most = 0
        while transcript.older_hidden < 600:
            await pilot.press("pagedown")
            await settle(pilot)
            most = max(most, len(transcript.children))
            assert transcript.mounted_entries <= BOUND
        assert most <= BOUND + BOUND // 100 + 2  # the entries and their few run headers, never the session
        # And back up: older pages come back as the view nears the top, the newest ones go.
        hidden, newer = transcript.older_hidden, transcript.newer_hidden
        for _ in range(3 * BOUND):
            if transcript.older_hidden < hidden - BOUND:
                break
            await pilot.press("pageup")
            await settle(pilot)
            assert transcript.mounted_entries <= BOUND
        assert transcript.older_hidden < hidden - BOUND and transcript.newer_hidden > newer


async def test_a_call_on_a_far_page_expands_copies_and_keeps_its_result(tmp_path):
    db = tmp_path / "lovia.db"
    await tools_first(db)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        transcript = await open_long(pilot, TOOLS_FIRST)
        assert transcript.older_hidden > 1_000
        assert transcript.page_size == MIN_PAGE  # 80x24: the call ends a page, its result begins the next
        await pilot.press("home")
        await settle(pilot)
        while not isinstance(transcript.selected_view, ToolCallView):
            await pilot.press("down")  # newer pages are read as the cursor goes
            assert transcript.selected < 2 * CALL_AT
        await settle(pilot)
        call = transcript.selected_view
        assert call.result is not None and call.result.output == "6*7 = 42"  # its result is on the next page
        # The inspector shows the whole run, not the part of it the first page holds.
        await wait_for(pilot, lambda: app.screen.inspected == "run-first" and app.screen._inspected_run is not None
                       and len(app.screen._inspected_run.entries) == CALL_AT + 3)
        await pilot.press("enter")
        await settle(pilot)
        assert not call.query_one("Collapsible").collapsed
        await pilot.press("c")
        await settle(pilot)
        assert any("Copied the tool output" in n.message for n in told(app))  # not "the message": its output
        # The next page's result is not shown again on its own.
        await pilot.press("end")
        await settle(pilot)
        await pilot.press("home")
        await settle(pilot)
        for _ in range(PAGE + 4):
            await pilot.press("down")
        await settle(pilot)
        assert not [n for n in transcript.query(NoticeView) if "result of" in str(n.render())]
        assert len(transcript.query(ToolCallView)) == 1


@pytest.mark.parametrize("size", SIZES)
async def test_edit_on_a_far_page_counts_the_runs_it_drops(tmp_path, size):
    db = tmp_path / "lovia.db"
    await tools_first(db, runs=8)
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        transcript = await open_long(pilot, TOOLS_FIRST)
        await pilot.press("home")
        await settle(pilot)
        assert transcript.selected_view.message.text == "first question, on the first page"
        await pilot.press("e")
        await settle(pilot)
        assert "its answer and the 8 runs after it" in str(app.screen.query_one("#editing").render())
        composer = app.screen.query_one("#composer")
        assert composer.text == "first question, on the first page"
        await pilot.press("escape")
        await settle(pilot)
        assert composer.text == ""


async def test_a_message_sent_from_an_earlier_page_is_followed_at_the_end(long_db, tmp_path):
    app = make_app(copy_of(long_db, tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        transcript = await open_long(pilot)
        await pilot.press("home")
        await settle(pilot)
        assert not transcript.at_end
        app.screen.query_one("#composer").focus()
        await pilot.press(*"hello")
        await pilot.press("enter")
        await settle(pilot)
        assert transcript.at_end
        assert [v.copy_text() for v in transcript.views][-2] == "hello"
        assert visible(transcript, transcript.views[-1])


async def test_quit_answers_at_once_after_home(long_db, tmp_path):
    app = make_app(copy_of(long_db, tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_long(pilot)
        await pilot.press("home", "ctrl+q")
        await wait_for(pilot, lambda: not app.is_running, give_up_after=5)


async def test_a_store_without_paged_reads_still_pages_the_transcript(tmp_path):
    class PlainSession:
        """Only the four protocol methods: the session is loaded whole, then paged from memory."""

        def __init__(self, inner):
            self.inner = inner

        async def segments(self, session_id):
            return await self.inner.segments(session_id)

        async def load(self, session_id):
            return await self.inner.load(session_id)

        async def append(self, session_id, entries, *, run_id=None, meta=None):
            return await self.inner.append(session_id, entries, run_id=run_id, meta=meta)

        async def clear(self, session_id):
            await self.inner.clear(session_id)

    inner = InMemorySession()
    for run in range(5):
        await inner.append("s-plain", [e for i in range(100) for e in (UserMessage(text=f"q{run}-{i}"),
                                                                       AssistantMessage(text=f"a{run}-{i}"))])
    app = make_app(tmp_path / "lovia.db", session=PlainSession(inner))
    async with app.run_test(size=(80, 24)) as pilot:
        transcript = await open_long(pilot, "s-plain")
        assert texts(transcript)[-1] == "a4-99" and transcript.older_hidden > 0
        await pilot.press("home")
        await settle(pilot)
        assert transcript.selected_view.copy_text() == "q0-0"
        await pilot.press("end")
        await settle(pilot)
        assert transcript.selected_view.copy_text() == "a4-99"


@pytest.mark.parametrize("store", ["sqlite", "memory"])
async def test_a_page_finds_its_calls_results_however_far_on_in_the_run_they_are(tmp_path, store):
    """Parallel calls store their results after all the calls: 70 calls put the first results
    70 entries past a page that ends among the calls. A stored run is tool-consistent, so none of
    its calls may read "will run again on resume"."""
    from lovia.tui.backend import TranscriptPages

    calls = [ToolCall(call_id=f"c{i}", name="calculate", arguments="{}") for i in range(70)]
    results = [ToolResult(call_id=f"c{i}", output=f"result {i}", name="calculate") for i in range(70)]
    entries = [UserMessage(text="seventy sums at once"), *calls, *results, AssistantMessage(text="done")]
    session = SQLiteSession(tmp_path / "lovia.db", wal=True) if store == "sqlite" else InMemorySession()
    async with session:
        await session.append("s", entries, run_id="r-parallel")
        page = await TranscriptPages(session, "s").read(0, 10)  # the question and the first nine calls
        (run,) = page.runs
        on_page = [e.call_id for e in run.run.entries if isinstance(e, ToolCall)]
        assert on_page == [f"c{i}" for i in range(9)]
        assert {call_id: result.output for call_id, result in run.later_results.items()} == {
            f"c{i}": f"result {i}" for i in range(9)}


async def test_what_a_jump_hid_is_never_taken_for_the_live_part_while_it_is_removed(long_db, tmp_path):
    # The widgets a jump hid are removed after the screen is drawn. While that removal was under
    # way they had been forgotten as stored items already, so they counted as the live part
    # (what follows the stored pages), which `end` then showed above the last page.
    app = make_app(copy_of(long_db, tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        transcript = await open_long(pilot)
        taken_for_live: list[int] = []
        remove_children = transcript.remove_children

        def watching_removal(selector):
            taken_for_live.append(len(set(transcript._tail()) & set(selector)))
            return remove_children(selector)

        transcript.remove_children = watching_removal
        await pilot.press("home")
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        assert taken_for_live and taken_for_live == [0] * len(taken_for_live)


async def test_trim_leaves_the_footer_once_paging_shows_no_tool_call_anywhere(long_db, tmp_path):
    # Trim applies while a page not shown may hold a tool output; the footer kept `t` once scrolling
    # showed every entry of a session without one (its keys were not brought up to date by a page).
    from tests.tui.test_footer import footer_of

    app = make_app(await with_short_session(copy_of(long_db, tmp_path), "s-thirty-two", 16))
    async with app.run_test(size=(160, 45)) as pilot:
        transcript = await open_long(pilot, "s-thirty-two")
        assert transcript.older_hidden > 0
        assert "trim" in {entry.action for entry in footer_of(app).entries}
        selected = transcript.selected_view
        transcript.scroll_home(animate=False)  # as the mouse's wheel does: the cursor stays
        await wait_for(pilot, lambda: transcript.older_hidden == 0)
        await settle(pilot)
        assert transcript.newer_hidden == 0 and not hidden(transcript) and transcript.selected_view is selected
        assert "trim" not in {entry.action for entry in footer_of(app).entries}


async def test_the_timeline_of_a_run_begun_on_a_page_not_shown(long_db, tmp_path):
    # The long session opens inside its last run of 200 entries, whose header is on a page not
    # shown: `w` left the footer and said no run had run in the session.
    from lovia.tui.screens.timeline import TimelineScreen
    from tests.tui.test_footer import footer_of

    app = make_app(copy_of(long_db, tmp_path))
    async with app.run_test(size=(160, 45)) as pilot:
        transcript = await open_long(pilot)
        assert not [h for h in transcript.query(RunHeader) if h.display]
        assert "timeline" in {entry.action for entry in footer_of(app).entries}
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen))


@pytest.mark.parametrize("size", SIZES)
async def test_a_page_key_that_reads_a_page_mid_slide_still_goes_a_whole_page(long_db, tmp_path, size):
    # The place kept across the page read was taken from where the slide had got to, and the
    # slide was stopped there: the key went 10 or 11 rows of 18.
    app = make_app(copy_of(long_db, tmp_path))
    async with app.run_test(size=size) as pilot:
        transcript = await open_long(pilot)
        page = transcript.scrollable_content_region.height
        reads = 0
        for _ in range(4 * KEPT_PAGES * transcript.page_size):
            anchor = next(w for w in transcript.children
                          if w.display and w.virtual_region.bottom > transcript.scroll_y)
            on_screen = anchor.virtual_region.y - transcript.scroll_y
            hidden_before = transcript.older_hidden
            await pilot.press("pageup")
            await pilot.wait_for_animation()
            await settle(pilot)
            if transcript.scroll_y == 0 and transcript.older_hidden == 0:
                break
            assert anchor.virtual_region.y - transcript.scroll_y == on_screen + page
            reads += transcript.older_hidden < hidden_before
            if reads >= 3:
                break
        assert reads >= 3


async def test_a_fork_deep_in_a_long_session_opens_at_its_end(long_db, tmp_path):
    # The fork's older page was read while the message box took focus and the view grew a row
    # shorter: the anchor was taken to be released, and the view stopped a row above the end,
    # the forked message's text out of sight.
    app = make_app(copy_of(long_db, tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        transcript = await open_long(pilot)
        assert await transcript.show_entry(1500)
        await settle(pilot)
        source = app.screen.chat.session_id
        await pilot.press("f")
        await wait_for(pilot, lambda: app.screen.chat.session_id != source)
        await settle(pilot)
        fork = app.screen.chat.transcript
        assert fork.max_scroll_y > 0 and fork.scroll_y == fork.max_scroll_y
        assert fork.region.contains_region(fork.views[-1].region)


@pytest.mark.parametrize("presses", [10, 40])
async def test_page_keys_pressed_together_go_a_page_each_across_page_reads(long_db, tmp_path, presses):
    # Keys past the pages mounted, while the next was being read, were cut at their end: 40
    # pagedowns at once went 3 pages of a long session, and a key held down half its pages.
    from tests.tui.test_new_user_pass import burst

    app = make_app(copy_of(long_db, tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        transcript = await open_long(pilot)
        await pilot.press("home")
        await settle(pilot)
        rows_per_entry = rows_per_stored_entry(transcript)
        expected = presses * transcript.scrollable_content_region.height / rows_per_entry
        burst(app, *["pagedown"] * presses)
        for _ in range(presses):
            await pilot.pause(0.1)
            await pilot.wait_for_animation()
            await settle(pilot)
        top = next(v for v in transcript.views if v.virtual_region.bottom > transcript.scroll_y)
        assert 0.75 * expected <= position(top) <= 1.1 * expected


async def test_the_mouse_wheel_after_page_keys_forgets_the_rows_they_still_owed(long_db, tmp_path):
    # Page keys held down past the pages mounted are owed their rows once the next page is read
    # (above). A wheel turned meanwhile is the reader's own move: the view went on to where the
    # keys had asked for, pages past where the wheel had left it.
    from textual import events

    from tests.tui.test_new_user_pass import burst

    app = make_app(copy_of(long_db, tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        transcript = await open_long(pilot)
        await pilot.press("home")
        await settle(pilot)
        rows_per_entry = rows_per_stored_entry(transcript)
        asked = 40 * transcript.scrollable_content_region.height / rows_per_entry
        burst(app, *["pagedown"] * 40)
        await wait_for(pilot, lambda: transcript.scroll_y > 0)  # the keys went as far as the pages mounted
        x, y = transcript.region.x + 2, transcript.region.y + 2
        app.post_message(events.MouseScrollUp(None, x, y, 0, -1, 0, False, False, False, screen_x=x, screen_y=y))
        for _ in range(10):
            await pilot.pause(0.1)
            await pilot.wait_for_animation()
            await settle(pilot)
        top = next(v for v in transcript.views if v.virtual_region.bottom > transcript.scroll_y)
        assert position(top) < 0.5 * asked


@pytest.mark.parametrize(("key", "start"), [("up", "end"), ("down", "home")])
async def test_a_hundred_cursor_keys_at_once_leave_the_cursor_in_sight(long_db, tmp_path, key, start):
    # Each key moved the cursor while the pages read for the ones before were being mounted, with
    # no place yet: the view stayed where the first keys took it, the cursor 90 rows out of sight.
    from tests.tui.test_new_user_pass import burst

    app = make_app(copy_of(long_db, tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        transcript = await open_long(pilot)
        await pilot.press(start)
        await settle(pilot)
        first = position(transcript.selected_view)
        burst(app, *[key] * 100)
        target = first + (100 if key == "down" else -100)

        def in_sight_at_target() -> bool:
            selected = transcript.selected_view
            return (selected is not None and position(selected) == target
                    and transcript.region.contains_region(selected.region))

        # Pages are read and mounted as the keys go: on a loaded machine that took longer than the
        # second this test once waited, so it waits for the end (the assertions below say what failed).
        await wait_for(pilot, in_sight_at_target, give_up_after=30)
        await settle(pilot)
        selected = transcript.selected_view
        assert position(selected) == target
        assert transcript.region.contains_region(selected.region)


async def test_each_message_sent_in_a_long_session_lets_go_of_the_history_its_run_read(tmp_path):
    """Every run reads the whole session for the model; the app kept each run's copy as long as the
    run's widgets were shown (its worker's stream held it): 144 MB more a message at 100,000 entries."""
    import gc

    db = tmp_path / "lovia.db"
    history = 1000
    async with SQLiteSession(db, wal=True) as session:
        for i in range(history // 2):
            await session.append("s-long", [UserMessage(text=f"old question {i}"), AssistantMessage(text=f"old {i}")])
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await app.screen.open_session("s-long")
        await settle(pilot)
        for _ in range(3):
            await type_and_send(pilot, "hello")
        gc.unfreeze()  # what streaming froze, as the user's first idle moment does (lovia.tui.collector)
        gc.collect()
        alive = sum(1 for o in gc.get_objects() if isinstance(o, UserMessage | AssistantMessage)
                    and o.text.startswith("old "))
        # What the transcript shows and keeps (a few pages), and no run's copy of the 1,000 (3,052 before).
        assert alive < 4 * PAGE * KEPT_PAGES, alive

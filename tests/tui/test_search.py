"""Search in the app (ctrl+f): the screen, opening a session at a hit far up, and n / N.

Real SQLite files (and the in-memory store), the real app through its pilot, at 80x24 and 160x45.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from textual.widgets import Collapsible

from lovia import InMemorySession, SQLiteSession, UserError
from lovia.entries import AssistantMessage, ToolCall, ToolResult, UserMessage
from lovia.tui.screens.search import SearchScreen
from lovia.tui.widgets.assistant_message import AssistantMessageView
from lovia.tui.widgets.tool_call_view import ToolCallView
from lovia.tui.widgets.transcript import Transcript

from .conftest import make_app, settle, told, type_and_send, wait_for

SIZES = [(80, 24), (160, 45)]
LONG = "s-long"
RUN = 200
RUNS = 10  # 2,000 entries
WORD = "pelican"
# Where WORD is in the long session: near its top, in its middle, near its end.
IN_LONG = [6, 1001, 1995]


def long_runs() -> list[list]:
    runs = []
    for r in range(RUNS):
        entries: list = []
        for i in range(r * RUN, (r + 1) * RUN, 2):
            entries.append(UserMessage(text=f"question {i}" + (f" about the {WORD}" if i in IN_LONG else "")))
            entries.append(AssistantMessage(text=f"answer {i + 1}" + (f": the {WORD} flies" if i + 1 in IN_LONG
                                                                        else ""), agent="assistant"))
        runs.append(entries)
    return runs


async def fill(session) -> None:
    await session.append("s-tools", [
        UserMessage(text="look for birds"),
        ToolCall(call_id="c1", name="grep", arguments='{"pattern": "bird"}'),
        ToolCall(call_id="c2", name="grep", arguments='{"pattern": "fish"}'),
        ToolResult(call_id="c1", output=f"birds.txt: a {WORD} and a gull"),
        ToolResult(call_id="c2", output="fish.txt: nothing"),
        AssistantMessage(text="Found one bird.", agent="assistant"),
    ])
    for entries in long_runs():
        await session.append(LONG, entries)
    await session.rename_session(LONG, "The long one")
    await session.append("s-latest", [UserMessage(text="hello"), AssistantMessage(text="hi", agent="assistant")])


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "lovia.db"

    async def build() -> None:
        async with SQLiteSession(path, wal=True) as session:
            await fill(session)

    asyncio.run(build())
    return path


async def search(pilot, query: str) -> SearchScreen:
    await pilot.press("ctrl+f")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, SearchScreen))
    screen = pilot.app.screen
    await pilot.press(*query)
    await wait_for(pilot, lambda: screen.searched == query)
    await pilot.pause()  # (the search screen's own flow is a worker until it closes: no settle here)
    return screen


def cursor_on_screen(transcript: Transcript) -> bool:
    view = transcript.selected_view
    if view is None:
        return False
    region = view.virtual_region
    return transcript.scroll_y <= region.y < transcript.scroll_y + transcript.size.height


async def cursor_shown(pilot, transcript: Transcript) -> None:
    """The cursor's message comes into view within a few frames.

    Not at once: the page around it is laid out (and the view scrolled to it) after the frame that
    mounted it, and a page read next to it keeps the view in place one frame later. Under load
    ``settle`` can return between the two (it failed so in CI, once in many runs).
    """
    await wait_for(pilot, lambda: cursor_on_screen(transcript), give_up_after=3.0)


@pytest.mark.parametrize("size", SIZES)
async def test_a_hit_far_up_a_long_session_opens_with_the_cursor_on_it(db, size):
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert app.screen.query_one(Transcript).at_end
        screen = await search(pilot, WORD)
        hits = screen.hits
        # Newest first: the long session's three (newest run first), then the tool output.
        assert [(h.session_id, h.position) for h in hits] == [(LONG, 1995), (LONG, 1001), (LONG, 6),
                                                               ("s-tools", 3)]
        assert hits[0].title == "The long one"
        label = screen.results.get_option_at_index(2).prompt
        assert "The long one" in label.plain and WORD in label.plain
        assert any(WORD in label.plain[span.start:span.end] and "reverse" in str(span.style)
                   for span in label.spans)
        await pilot.press("down", "down", "down", "enter")  # to the list, then its third hit: position 6
        await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
        await settle(pilot)
        transcript = app.screen.query_one(Transcript)
        assert app.screen.chat.session_id == LONG
        assert transcript.selected_position == 6
        assert WORD in transcript.selected_view.copy_text()
        assert transcript.has_focus
        await cursor_shown(pilot, transcript)
        assert transcript.mounted_entries < 200  # a page around the hit, not the session

        await pilot.press("n")  # the next match down this session: the middle one
        await settle(pilot)
        await wait_for(pilot, lambda: transcript.selected_position == 1001, give_up_after=5.0)
        await cursor_shown(pilot, transcript)
        await pilot.press("n")
        await settle(pilot)
        await wait_for(pilot, lambda: transcript.selected_position == 1995, give_up_after=5.0)
        await cursor_shown(pilot, transcript)
        await pilot.press("N", "N")
        await settle(pilot)
        await wait_for(pilot, lambda: transcript.selected_position == 6, give_up_after=5.0)
        await pilot.press("N")  # before the first match of this session: the previous session has none
        await settle(pilot)
        assert transcript.selected_position == 6
        await pilot.press("n", "n", "n")  # past the last: the next session of the results, at its match
        await settle(pilot)
        # The screen's handler of the last n may still await the store (pilot sees that as idle):
        # its cursor is placed once the other session's page is read (CI failed so, once).
        await wait_for(pilot, lambda: app.screen.chat.session_id == "s-tools"
                       and isinstance(transcript.selected_view, ToolCallView), give_up_after=5.0)
        view = transcript.selected_view
        assert isinstance(view, ToolCallView) and view.call.call_id == "c1"  # the result is shown in its call


@pytest.mark.parametrize("size", SIZES)
async def test_queries_that_are_not_searches_say_so_and_escape_closes(db, size):
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        screen = app.screen
        for query, expected in [('"-', "Type a word"), ("-gull", "Say what to find"), ("nothingmatches", "Nothing")]:
            screen.query_one("#search-query").value = ""
            await pilot.press(*query)
            await wait_for(pilot, lambda text=expected: text in str(screen.query_one("#search-status").render()))
            assert expected in str(screen.query_one("#search-status").render())
        screen.query_one("#search-query").value = ""
        await pilot.press(*'"a gull')  # an unclosed quote: a phrase to the end
        await wait_for(pilot, lambda: screen.searched == '"a gull')
        assert [(h.session_id, h.kind) for h in screen.hits] == [("s-tools", "tool_result")]
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
        assert app.screen.chat.session_id == "s-latest"


async def test_a_query_that_is_no_search_clears_the_last_ones_hits(db):
    """The last query's hits stayed under "Type a word to search for", and enter opened one."""
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await search(pilot, "gull")
        assert screen.hits and screen.results.option_count
        screen.query_one("#search-query").value = ""
        await pilot.press(*"!?.,;:")
        await wait_for(pilot, lambda: "Type a word" in str(screen.query_one("#search-status").render()))
        assert not screen.hits and not screen.results.option_count
        await pilot.press("enter", "down", "enter")
        await pilot.pause(0.2)  # (no settle: the search screen's flow is a worker until it closes)
        assert app.screen is screen  # nothing to open


async def test_ctrl_f_works_from_the_composer_and_reopens_with_the_last_query(db):
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.focused.id == "composer"
        screen = await search(pilot, "gull")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
        await settle(pilot)
        assert app.screen.chat.session_id == "s-tools"
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        screen = app.screen
        assert screen.query_one("#search-query").value == "gull"
        await wait_for(pilot, lambda: screen.searched == "gull")
        await pilot.press(*"birds")  # the last query is selected: a new one replaces it (it was appended)
        assert screen.query_one("#search-query").value == "birds"
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        # The query as it was when the search closed, no hit opened (it came back as "gull", the query
        # of the last hit opened, though the README promises the last query)
        assert app.screen.query_one("#search-query").value == "birds"
        await pilot.press("end", *" look")  # a cursor key keeps it, to refine
        assert app.screen.query_one("#search-query").value == "birds look"


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_enter_typed_with_the_query_opens_its_first_hit_once_found(db, size):
    """A new user's trial: ``ctrl+f atlas enter`` typed at once searched and stopped there ("1 match.
    enter opens the highlighted one"); a second enter was needed. Enter before the hits of what is
    typed opens the first of them once they are listed."""
    from tests.tui.test_new_user_pass import burst as burst_keys

    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        burst_keys(app, "ctrl+f", *"gull", "enter")
        await wait_for(pilot, lambda: app.main.chat.session_id == "s-tools")
        await settle(pilot)
        assert app.screen is app.main


async def test_a_hit_found_under_another_dialog_opens_nothing_and_the_dialogs_close_in_turn(db, monkeypatch):
    """Enter before the hits, a slow search, and a dialog opened over the search meanwhile: the first
    hit's open dismissed whatever screen was on top (the help went in the search's place, and the
    next escape crashed the app)."""
    from lovia.tui.screens.help import HelpScreen

    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await search(pilot, "birds")
        real = app.backend.search

        async def slow(query, **options):
            await asyncio.sleep(1.0)
            return await real(query, **options)

        monkeypatch.setattr(app.backend, "search", slow)
        await pilot.press("ctrl+u", *"gull")
        await screen.query_one("#search-query").action_submit()  # enter, before gull's hits
        app.push_screen(HelpScreen())
        await wait_for(pilot, lambda: screen.searched == "gull", give_up_after=5)
        await pilot.pause(0.2)
        assert isinstance(app.screen, HelpScreen) and app.screen_stack[-2] is screen
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.main)
        assert app.return_code is None


async def test_the_in_memory_store_searches_too(tmp_path):
    session = InMemorySession()
    await fill(session)
    app = make_app(tmp_path / "lovia.db", session=session)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = await search(pilot, f"{WORD} flies")
        assert [(h.session_id, h.position) for h in screen.hits] == [(LONG, 1995), (LONG, 1001)]
        await pilot.press("down", "down")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
        await settle(pilot)
        transcript = app.screen.query_one(Transcript)
        assert transcript.selected_position == 1001
        await cursor_shown(pilot, transcript)


async def test_n_before_a_search_says_so_and_is_not_in_the_footer(db):
    from lovia.tui.widgets.footer import LoviaFooter

    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        transcript = app.screen.query_one(Transcript)
        transcript.focus()
        await pilot.press("up")
        before = transcript.selected_position
        await pilot.press("n")
        await settle(pilot)
        assert transcript.selected_position == before
        assert "No search to step through: ctrl+f searches every session." in [t.message for t in told(app)]
        assert "match(1)" not in {entry.action for entry in app.screen.query_one(LoviaFooter).entries}


@pytest.mark.parametrize("size", SIZES)
async def test_after_a_search_the_footer_offers_n_and_n_first_as_one_entry(db, size):
    # At 80 columns the footer had room for neither n nor N once a hit was opened (they came after
    # c, e, t, f and w); N never fitted beside n.
    from lovia.tui.widgets.footer import LoviaFooter

    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await search(pilot, WORD)
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
        await settle(pilot)
        footer = app.screen.query_one(LoviaFooter)
        first = footer.entries[0]
        assert (first.key_display, first.description, first.action) == ("n/N", "Match", "match(1)")
        assert "n/N Match" in "".join(segment.text for segment in footer.render_line(0))
        transcript = app.screen.query_one(Transcript)
        opened = (app.screen.chat.session_id, transcript.selected_position)
        await pilot.click(footer, offset=(1, 0))  # a click on it presses n: the next match
        await wait_for(pilot, lambda: (app.screen.chat.session_id,
                                       app.screen.query_one(Transcript).selected_position) != opened)


@pytest.mark.parametrize("size", SIZES)
async def test_a_hit_in_a_session_shorter_than_the_screen_opens_with_its_last_line_in_view(tmp_path, size):
    # Coming from a taller session, the short one opened scrolled as the anchor left it before its
    # answer took its height: the answer's last lines hid behind the composer, and no key brought
    # them back (seen in tmux; 3 runs in 3 at 160x45 before the fix).
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session:
        await session.append("s-short", [UserMessage(text="gamma notes about atlas"),
                                         AssistantMessage(text="I'm the offline demo model. " * 12 + "The gamma end.")])
        await session.append("s-tall", [UserMessage(text="calculate 2+2"),
                                        ToolCall(call_id="c1", name="calculate", arguments='{"expression": "2+2"}'),
                                        ToolResult(call_id="c1", name="calculate", output="4"),
                                        AssistantMessage(text="2+2 = 4. " * 20)])
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert app.screen.chat.session_id == "s-tall"
        await search(pilot, "gamma")
        await pilot.press("down", "down", "enter")  # the user message's hit
        await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
        await settle(pilot)
        await pilot.pause(0.3)
        transcript = app.screen.query_one(Transcript)
        assert app.screen.chat.session_id == "s-short"
        last = transcript.views[-1]
        assert transcript.region.y <= last.region.y and last.region.bottom <= transcript.region.bottom
        assert "The gamma end." in app.export_screenshot().replace("&#160;", " ")


def test_an_answer_s_snippet_reads_without_its_markdown_syntax_and_keeps_its_matches():
    """The list showed an answer's ``**294**`` as stored; a tool's output keeps its own characters."""
    from lovia.session import SearchHit
    from lovia.tui.screens.search import hit_label

    snippet = "…the total is **294** apples, and `x = 294` in code:  ```python print(294)  ```…"
    matches = tuple((found.start(), found.end()) for found in re.finditer("294", snippet))
    label = hit_label(SearchHit("s-1", "Sums", 3, "assistant", snippet, matches), 100, now=0.0)
    line = label.plain.splitlines()[1]
    assert line == "  …the total is 294 apples, and x = 294 in code: print(294) …"  # the fences go too
    lit = [label.plain[span.start:span.end] for span in label.spans if "reverse" in str(span.style)]
    assert lit == ["294", "294", "294"]
    cut = "I'm the offline **demo… fixed rules. Try: `what time"  # halves of pairs the cut left out
    label = hit_label(SearchHit("s-1", "Sums", 3, "assistant", cut, ((4, 11),)), 100, now=0.0)
    assert label.plain.splitlines()[1] == "  I'm the offline demo… fixed rules. Try: what time"
    output = hit_label(SearchHit("s-1", "Sums", 4, "tool_result", "2**8 = 256", ((0, 1),)), 100, now=0.0)
    assert output.plain.splitlines()[1] == "  2**8 = 256"
    # Code shows as written: a power's ** in a code span or a code block is no emphasis mark.
    code = "`2**10 = 1024` and ```python print(3**2)  ``` then **bold"
    at = code.index("1024")
    label = hit_label(SearchHit("s-1", "Sums", 3, "assistant", code, ((at, at + 4),)), 100, now=0.0)
    assert label.plain.splitlines()[1] == "  2**10 = 1024 and print(3**2) then bold"
    lit = [label.plain[span.start:span.end] for span in label.spans if "reverse" in str(span.style)]
    assert lit == ["1024"]
    # Cut inside a code block (its opening fence left out), the snippet cannot tell code from text
    # by its fences: neither the code's ** nor the text's Markdown is taken the wrong way round.
    inside = "…np x = np.arange(10)**2 print(x) ``` Then **note** that the"
    at = inside.index("arange")
    label = hit_label(SearchHit("s-1", "Sums", 3, "assistant", inside, ((at, at + 6),)), 100, now=0.0)
    assert "**note**" not in label.plain and "note that" in label.plain
    # A fence naming its language opens a block, so what follows it is code, cut or not.
    opened = "…as follows: ```python x = 2**8 ``` then **bold** text"
    label = hit_label(SearchHit("s-1", "Sums", 3, "assistant", opened, ((2, 4),)), 100, now=0.0)
    assert label.plain.splitlines()[1] == "  …as follows: x = 2**8 then bold text"


async def snippets_shown(tmp_path, store: str, answers: dict[str, str]) -> dict[str, tuple[str, list[str]]]:
    """Each answer stored in a session of its own, then searched for by its key: the hit's snippet line
    as the results list shows it, and the words highlighted there."""
    from lovia.tui.screens.search import hit_label

    session = InMemorySession() if store == "memory" else SQLiteSession(tmp_path / "lovia.db")
    shown: dict[str, tuple[str, list[str]]] = {}
    async with session:
        for word, answer in answers.items():
            await session.append(f"s-{word}", [UserMessage(text="tell me"), AssistantMessage(text=answer)])
        for word in answers:
            [hit] = await session.search(word)
            label = hit_label(hit, 200, now=0.0)
            lit = [label.plain[span.start:span.end] for span in label.spans if "reverse" in str(span.style)]
            shown[word] = (label.plain.splitlines()[1].strip(), lit)
    return shown


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_an_answer_s_snippet_leaves_out_the_marks_that_begin_its_lines(tmp_path, store):
    """The list showed "resumes it - my project is called Atlas": a list item's "- ", joined to the
    line before it, where the transcript shows a bullet. A heading's "#" and a quote's ">" too; a
    dash inside a line and a code block's "#" stay."""
    answers = {
        "atlas": "The runs list resumes it\n- my project is called Atlas, then later what",
        "borealis": "Deploy it - quickly, said Borealis",
        "cygnus": "Intro\n## Cygnus notes\n> Cygnus quoted\n  1. Cygnus first\r\n* Cygnus starred\n+ Cygnus",
        "dorado": "Run this:\n```python\n# Dorado setup\nx = 1\n```",
    }
    shown = await snippets_shown(tmp_path, store, answers)
    line, lit = shown["atlas"]
    assert "resumes it my project is called Atlas, then later" in line and lit == ["Atlas"]
    line, lit = shown["borealis"]
    assert line == "Deploy it - quickly, said Borealis" and lit == ["Borealis"]
    line, lit = shown["cygnus"]
    assert line == "Intro Cygnus notes Cygnus quoted Cygnus first Cygnus starred Cygnus"
    assert lit == ["Cygnus"] * 5
    line, lit = shown["dorado"]
    assert line == "Run this: # Dorado setup x = 1" and lit == ["Dorado"]


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_an_answer_s_snippet_leaves_out_a_table_s_pipes_and_rule(tmp_path, store):
    """A trial's search showed "…2 | 3 | Final words…": a table's cell pipes, where the transcript
    draws a table. Its rows read as their cells' words, its rule under the header goes; a pipe in a
    line of prose, or escaped in a cell, stays."""
    answers = {
        "eridanus": "Results:\n\n| a | b |\n|---|:-:|\n| 1 | Eridanus |\n\nFinal words",
        "fornax": " ".join(f"w{i}" for i in range(40)) + "\n| 1 | 2 | 3 |\n| x | y | Fornax |\nFinal words",
        "grus": "Run ls | grep Grus to find it",
        "hydra": "| cmd | what |\n|--|--|\n| `a \\| b` | Hydra pipes |",
        # Code whose block's opening fence the snippet cut off: read as text, its pipes are code's.
        "ilium": "```elixir\n" + "a " * 30 + "\n|> Enum.map(fn x -> x end) # Ilium\n```",
        "lyra": "```rust\n" + "b " * 30 + "\n|x| x + 1 // Lyra\n```",
    }
    shown = await snippets_shown(tmp_path, store, answers)
    assert shown["eridanus"] == ("Results: a b 1 Eridanus Final words", ["Eridanus"])
    line, lit = shown["fornax"]
    assert "|" not in line and "x y Fornax Final words" in line and lit == ["Fornax"]
    assert shown["grus"] == ("Run ls | grep Grus to find it", ["Grus"])
    assert shown["hydra"] == ("cmd what a | b Hydra pipes", ["Hydra"])
    assert "|> Enum.map(fn x -> x end) # Ilium" in shown["ilium"][0]
    assert "|x| x + 1 // Lyra" in shown["lyra"][0]


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_a_code_span_the_snippet_cut_through_does_not_pair_with_the_next(tmp_path, store):
    """Searching "calls" in the demo's help: "…it?`: calls the `current_time` tool - `calculate…" read
    "calls the current_timetoolcalculate": the cut span's lone backtick paired with the next one."""
    from lovia.models.demo import HELP
    from lovia.tui.screens.search import hit_label

    session = InMemorySession() if store == "memory" else SQLiteSession(tmp_path / "lovia.db")
    async with session:
        await session.append("s-help", [UserMessage(text="help"), AssistantMessage(text=HELP)])
        hits = [hit for hit in await session.search("calls") if "current_time" in hit.snippet]
    assert hits, "the help's line about what time it is"
    label = hit_label(hits[0], 200, now=0.0)
    line = label.plain.splitlines()[1]
    assert "calls the current_time tool" in line and "`" not in line
    lit = [label.plain[span.start:span.end] for span in label.spans if "reverse" in str(span.style)]
    assert lit and set(lit) == {"calls"}


@pytest.mark.parametrize("width", [78, 158])
async def test_a_match_among_long_words_is_shown_at_every_width(tmp_path, width):
    """A snippet is a dozen words around the match: a dozen long ones (paths, identifiers) put the
    match past the edge of an 80-column list, where the cut left it out of sight."""
    from rich.cells import cell_len

    from lovia.tui.screens.search import hit_label

    paths = [f"/usr/local/lib/python3.11/site-packages/package{i:02d}/module.py" for i in range(30)]
    names = [f"internationalisation{i:02d}" for i in range(15)] + ["needle"] + ["東京の天気予報について"] * 14
    async with SQLiteSession(tmp_path / "lovia.db", wal=True) as session:
        await session.append("s-paths", [UserMessage(text=" ".join(paths[:20] + ["needle"] + paths[20:]))])
        await session.append("s-names", [UserMessage(text=" ".join(names))])
        hits = await session.search("needle")
    assert len(hits) == 2
    for hit in hits:
        label = hit_label(hit, width, now=hit.at)
        lit = [label.plain[span.start:span.end] for span in label.spans if "reverse" in str(span.style)]
        assert lit == ["needle"]
        head, snippet = label.plain.splitlines()
        assert "needle" in snippet and cell_len(snippet) <= width
        # A long title (the first message, here) is cut, not what matched and when.
        assert head.endswith("  you  just now") and cell_len(head) <= width


LONG_TITLE = "Atlas replica window vector socket matrix thread lattice harbor beacon pylon"
AGE = r"  (answer|you)  (just now|\d+ s ago)$"


@pytest.mark.parametrize("width", [158, 76, 73, 72, 71, 40, 24, 12, 8, 5])
def test_a_long_title_is_cut_so_that_what_matched_and_when_fit_beside_it(width):
    """The title is cut (…) so that the first line, title, kind and age, fits the width given, and the
    snippet keeps its own line: wider, the line wrapped ("26 days" / "ago") and the snippet went."""
    from rich.cells import cell_len

    from lovia.session import SearchHit
    from lovia.tui.screens.search import hit_label

    day = 86400.0
    for title in (LONG_TITLE, "東京の天気予報について " * 6):
        for kind in ("assistant", "user", "tool_result"):
            hit = SearchHit("s-1", title, 3, kind, f"the {WORD} flies over the harbor", ((4, 4 + len(WORD)),),
                            at=0.0)
            label = hit_label(hit, width, now=26 * day)
            lines = label.plain.split("\n")
            assert len(lines) == 2
            assert all(cell_len(line) <= width for line in lines), (width, lines)
            head, snippet = lines
            assert snippet.startswith("  ")
            if width >= 40:  # room for some of the title beside what matched and when
                assert head.endswith("  26 days ago") and ("…" in head or width > 100)
            if width >= 24:
                lit = [label.plain[span.start:span.end] for span in label.spans if "reverse" in str(span.style)]
                assert lit == [WORD] and WORD in snippet


def shown_hits(results) -> list[str]:
    """The lines the results list draws, as on screen (each option as Textual renders it, at the list's width)."""
    return ["".join(segment.text for segment in results.render_line(y)).rstrip()
            for y in range(results.scrollable_content_region.height)]


def lit_words(results) -> list[str]:
    """The highlighted (reverse) words the results list draws."""
    return [segment.text for y in range(results.scrollable_content_region.height)
            for segment in results.render_line(y) if segment.style is not None and segment.style.reverse]


async def test_hits_of_sessions_with_long_titles_show_their_snippets_at_80_columns(tmp_path):
    """Found at 80x24 in tmux: enough hits to scroll gave the list its scrollbar after their labels were
    cut to its width without it; a long title's first line came out a cell too wide, wrapped
    ("…  answer  26 days" / "ago"), and the snippet went out of its hit. Resized, the labels fit again."""
    from rich.cells import cell_len

    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session:
        for i in range(8):  # 16 hits, two lines each: more than the list's height, so it scrolls
            await session.append(f"s-{i}", [UserMessage(text=f"where does the {WORD} sleep, {i}?"),
                                            AssistantMessage(text=f"The {WORD} sleeps on one leg, {i}."
                                                             + (" So does the heron." if i == 0 else ""), agent="a")])
            await session.rename_session(f"s-{i}", f"{LONG_TITLE} {i}")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await search(pilot, WORD)
        assert len(screen.hits) == 16
        for size in [(80, 24), (64, 24), (120, 30), (80, 24)]:
            if size != app.size:
                await pilot.resize_terminal(*size)
            await pilot.pause()
            await pilot.pause()
            results = screen.results
            assert results.max_scroll_y > 0  # the list scrolls: its scrollbar takes its room
            lines = shown_hits(results)
            assert len(lines) >= 8
            # Each hit: its first line (the title cut, then what matched and when), then its snippet.
            heads, snippets = lines[0::2], lines[1::2]
            cut = "…" if size[0] <= 80 else ""  # at 120 columns the whole title fits
            assert all(head.startswith(LONG_TITLE[:12]) and re.search(cut + AGE, head)
                       for head in heads), (size, lines)
            assert all(snippet.startswith("  ") and WORD in snippet for snippet in snippets), (size, lines)
            assert all(cell_len(line) <= results.scrollable_content_region.width for line in lines)
            assert lit_words(results).count(WORD) == len(snippets)
            shown = app.export_screenshot()
            assert shown.count(WORD) >= len(snippets)
        await pilot.press("escape")
        screen = await search(pilot, "heron")  # one hit: no scrollbar, and the label keeps its room
        await pilot.pause()
        results = screen.results
        assert results.max_scroll_y == 0
        head, snippet = shown_hits(results)[:2]
        assert cell_len(head) == results.scrollable_content_region.width - 1 and re.search("…" + AGE, head)
        assert "heron" in snippet and lit_words(results) == ["heron"]


async def test_a_store_that_cannot_search_hides_ctrl_f(tmp_path):
    from .test_custom_sessions import FourMethodSession

    app = make_app(tmp_path / "lovia.db", session=FourMethodSession())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert not app.screen.check_action("search", ())
        await pilot.press("ctrl+f")
        await settle(pilot)
        assert not isinstance(app.screen, SearchScreen)
        with pytest.raises(UserError, match="cannot search"):
            await app.screen.backend.search("anything")


# A hit deep inside one long message: the view scrolls to the matched row, not the message's top.
DEEP = {
    "s-paragraphs": ("albatross", [UserMessage(text="tell me a long story"), AssistantMessage(
        text="\n\n".join(f"Paragraph {i} of the story goes on." + (" An albatross lands." if i == 100 else "")
                         for i in range(130)), agent="assistant")]),
    "s-code": ("cormorant", [UserMessage(text="a long listing"), AssistantMessage(
        text="Here it is:\n\n```python\n" + "\n".join(f"value_{i} = {i}" + ("  # cormorant" if i == 300 else "")
                                                   for i in range(400)) + "\n```\n\nThat is all.",
        agent="assistant")]),
    # A word on every line ("value") with one found once: the view goes where they stand together,
    # not to the first line ("line 1500 of the big block" opened a 2,000-line listing at its top).
    "s-code-common": ("value shearwater", [UserMessage(text="another listing"), AssistantMessage(
        text="Here:\n\n```python\n" + "\n".join(f"value_{i} = {i}" + ("  # shearwater" if i == 300 else "")
                                                for i in range(400)) + "\n```\n\nDone.",
        agent="assistant")]),
    "s-paste": ("puffin", [UserMessage(text="\n".join(f"log line {i}: nothing to see" + (" but a puffin" if i == 250
                                                                                           else "")
                                                      for i in range(300))),
                           AssistantMessage(text="Noted.", agent="assistant")]),
    # A tool's output is folded inside its call: the hit unfolds it, at the matched line.
    "s-output": ("guillemot", [UserMessage(text="read the log"),
                               ToolCall(call_id="c-log", name="read_file", arguments='{"path": "birds.log"}'),
                               ToolResult(call_id="c-log", output="\n".join(
                                   f"entry {i}: seen nothing" + (" but a guillemot" if i == 200 else "")
                                   for i in range(260))),
                               AssistantMessage(text="One bird in the log.", agent="assistant")]),
}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("session_id", list(DEEP))
async def test_a_hit_deep_inside_a_long_message_is_scrolled_into_view(tmp_path, size, session_id):
    word, entries = DEEP[session_id]
    path = tmp_path / "lovia.db"
    async with SQLiteSession(path, wal=True) as session:
        await session.append(session_id, entries)
        await session.append("s-latest", [UserMessage(text="hello"), AssistantMessage(text="hi", agent="assistant")])
    app = make_app(path)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = await search(pilot, word)
        assert [h.session_id for h in screen.hits] == [session_id]
        position = screen.hits[0].position
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
        await settle(pilot)
        transcript = app.screen.query_one(Transcript)
        # A result is shown inside its call, the entry before it here.
        assert transcript.selected_position == (position - 1 if isinstance(entries[position], ToolResult) else position)
        # What the terminal shows: the matched line (the word appears nowhere else in the message).
        rare = word.split()[-1]
        await wait_for(pilot, lambda: rare in app.export_screenshot(), give_up_after=3.0)


async def chatted_with_a_tool(pilot) -> None:
    """What a new user does: a tool call (the demo's wait: its output says "waited"), then messages."""
    for text in ("wait 1", "help", "help", "help"):
        await type_and_send(pilot, text)
    await settle(pilot)


async def open_hit(pilot, app, query: str, kind: str) -> Transcript:
    screen = await search(pilot, query)
    index = [hit.kind for hit in screen.hits].index(kind)
    await pilot.press("down", *["down"] * index, "enter")
    await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
    await settle(pilot)
    return app.screen.query_one(Transcript)


@pytest.mark.parametrize("size", SIZES)
async def test_a_hit_in_a_run_shown_live_in_this_window_opens(tmp_path, size):
    """The session open since its runs streamed here: its stored transcript is read again to show the hit
    (it said the match was no longer there)."""
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await chatted_with_a_tool(pilot)
        transcript = await open_hit(pilot, app, "waited", "tool_result")
        await wait_for(pilot, lambda: isinstance(transcript.selected_view, ToolCallView), give_up_after=3.0)
        assert not [t for t in told(app) if "no longer there" in t.message]
        assert not transcript.selected_view.query_one(Collapsible).collapsed  # the output shown


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("new_session_first", [False, True])
async def test_a_tool_output_hit_whose_call_is_on_another_page_opens_at_the_call(tmp_path, size, new_session_first):
    """Reopened, the session's last page may begin between a call and its result: the hit's call was
    then not shown (the app crashed at 80x24, or said the match was gone)."""
    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await chatted_with_a_tool(pilot)
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if new_session_first:
            await pilot.press("ctrl+n")
            await settle(pilot)
        transcript = await open_hit(pilot, app, "waited", "tool_result")
        await wait_for(pilot, lambda: isinstance(transcript.selected_view, ToolCallView), give_up_after=3.0)
        assert not [t for t in told(app) if "no longer there" in t.message]
        # n goes on to the next match, the answer after the call (it stayed on the call)
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(transcript.selected_view, AssistantMessageView), give_up_after=3.0)


class SlowPages(SQLiteSession):
    """A store that takes its time over a page while ``slow``, as a busy one does."""

    slow = False

    async def read_page(self, session_id, *, start=None, limit=200):
        if self.slow:
            await asyncio.sleep(0.3)
        return await super().read_page(session_id, start=start, limit=limit)


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.2, 0.4])
async def test_n_pressed_as_a_hit_opens_brings_the_next_match_into_view(tmp_path, delay):
    """``n`` within a second of opening a hit moved the cursor to the next match and left the view
    on the hit: the page the jump kept hidden until drawn had no place yet to scroll to."""
    path = tmp_path / "lovia.db"
    async with SQLiteSession(path, wal=True) as session:
        for r in range(8):
            await session.append("s-atlas", [
                UserMessage(text=f"question {r}" + (" about atlas" if r in (1, 6) else "")),
                AssistantMessage(text="\n\n".join(f"line {i} of answer {r}" for i in range(4)), agent="a")])
        await session.append("s-other", [UserMessage(text="hello"), AssistantMessage(text="hi", agent="a")])
    app = make_app(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await search(pilot, "atlas")
        await pilot.press("down", "down", "enter")  # the older hit, near the session's top
        await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
        await pilot.pause(delay)
        await pilot.press("n")
        await settle(pilot)
        transcript = app.screen.query_one(Transcript)
        await wait_for(pilot, lambda: transcript.selected_position == 12, give_up_after=5.0)
        await cursor_shown(pilot, transcript)


@pytest.mark.parametrize("size", SIZES)
async def test_n_pressed_before_a_hit_has_opened_steps_from_the_hit(tmp_path, size):
    """``n`` while the hit picked was still opening (its page being read) stepped from where the
    cursor was before the search: from the session's end it said "No later match", or skipped the
    matches in between. The store here takes its time over a page, as a busy one does."""
    path = tmp_path / "lovia.db"
    async with SQLiteSession(path, wal=True) as session:
        for r in range(200):
            await session.append("s-atlas", [
                UserMessage(text=f"question {r}" + (" about atlas" if r in (1, 3, 196) else "")),
                AssistantMessage(text=f"answer {r}", agent="a")])
    store = SlowPages(path, wal=True)
    app = make_app(path, session=store)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        transcript = app.screen.query_one(Transcript)
        transcript.focus()
        await pilot.press("end")  # the cursor past every match
        await settle(pilot)
        screen = await search(pilot, "atlas")
        await pilot.press("down", "down", "down")  # the oldest hit, far up the session
        assert screen.results.highlighted == 2
        store.slow = True
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
        await pilot.press("n")  # while the hit's page is read
        store.slow = False
        await settle(pilot)
        await wait_for(pilot, lambda: transcript.selected_position == 6, give_up_after=5.0)  # r = 3's
        await cursor_shown(pilot, transcript)
        assert not any("No later match" in notice.message for notice in told(app))


@pytest.mark.parametrize("size", SIZES)
async def test_a_message_typed_as_a_hit_opens_goes_into_the_message_box(db, size):
    """A new user's trial: "enter great news" in one burst from the search screen started an edit of
    the hit (``e``) with the rest of the words in it, one enter from dropping the runs after it; "the
    result" trimmed (``t``). Keys typed while a hit opens are text, as after opening a session from
    the sessions list; ``n`` and ``N`` typed first still step through the matches, and once the hit
    is shown the transcript's keys are its own again."""
    store = SlowPages(db, wal=True)
    app = make_app(db, session=store)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        chat = app.screen.chat
        transcript = chat.transcript
        await search(pilot, WORD)
        store.slow = True
        await pilot.press("down", "down", "down", "enter")  # the hit at position 6, far up the session
        await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
        await pilot.press(*"fetch the url")  # while the hit's page is read
        store.slow = False
        await settle(pilot)
        await wait_for(pilot, lambda: chat.composer.text == "fetch the url",
                       describe=lambda: f"composer {chat.composer.text!r}, focus {app.focused!r}")
        assert app.focused is chat.composer
        assert chat.session_id == LONG and transcript.selected_position == 6  # the cursor on the hit
        assert chat._editing is None and not told(app)  # no edit, fork, trim or undo started

        transcript.focus()
        await pilot.press("n")  # the transcript's keys are its own again
        await settle(pilot)
        await wait_for(pilot, lambda: transcript.selected_position == 1001, give_up_after=5.0)
        assert chat.composer.text == "fetch the url"

        await search(pilot, WORD)
        store.slow = True
        await pilot.press("down", "down", "down", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
        await pilot.press("n")  # n first: a step, as before
        store.slow = False
        await settle(pilot)
        await wait_for(pilot, lambda: transcript.selected_position == 1001, give_up_after=5.0)
        assert transcript.has_focus and chat.composer.text == "fetch the url"

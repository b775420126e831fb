"""Search in the app (ctrl+f) with its sessions on PostgreSQL: the screen, a hit far up a long session, n / N.

The real app through its pilot, its session store a ``PostgresSession`` on a fresh database of the
test server (the checkpoints stay in a SQLite file: what is searched is the session store).
"""

from __future__ import annotations

import pytest

from lovia.stores.postgres import PostgresSession
from lovia.tui.screens.search import SearchScreen
from lovia.tui.widgets.transcript import Transcript

from .conftest import make_app, settle, wait_for
from .test_search import LONG, WORD, cursor_shown, fill, search


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_search_on_postgres_opens_a_hit_far_up_and_steps_with_n(postgres_url, tmp_path, size):
    async with PostgresSession(postgres_url) as filler:
        await fill(filler)
    session = PostgresSession(postgres_url)
    app = make_app(tmp_path / "lovia.db", session=session)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = await search(pilot, WORD)
        assert [(h.session_id, h.position) for h in screen.hits] == [(LONG, 1995), (LONG, 1001), (LONG, 6),
                                                                      ("s-tools", 3)]
        assert screen.hits[0].title == "The long one"
        label = screen.results.get_option_at_index(2).prompt
        assert any(WORD in label.plain[span.start:span.end] and "reverse" in str(span.style) for span in label.spans)
        await pilot.press("down", "down", "down", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
        await settle(pilot)
        transcript = app.screen.query_one(Transcript)
        assert app.screen.chat.session_id == LONG and transcript.selected_position == 6
        assert transcript.has_focus
        await cursor_shown(pilot, transcript)
        await pilot.press("n")
        await settle(pilot)
        assert transcript.selected_position == 1001
        await cursor_shown(pilot, transcript)
        await pilot.press("N")
        await settle(pilot)
        assert transcript.selected_position == 6
        # A query that is no search says so, as on SQLite; a phrase is found.
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        screen = app.screen
        screen.query_one("#search-query").value = ""
        await pilot.press(*"-gull")
        await wait_for(pilot, lambda: "Say what to find" in str(screen.query_one("#search-status").render()))
        screen.query_one("#search-query").value = ""
        await pilot.press(*'"a gull')
        await wait_for(pilot, lambda: screen.searched == '"a gull')
        assert [(h.session_id, h.kind) for h in screen.hits] == [("s-tools", "tool_result")]
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, SearchScreen))
    await session.close()  # idempotent: the app may have closed it

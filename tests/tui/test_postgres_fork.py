"""Fork (f in the transcript) in the real app with its sessions on PostgreSQL, at 80x24 and full size."""

from __future__ import annotations

import pytest

from lovia import AssistantMessage, ForkOrigin, ToolCall, ToolResult, UserMessage
from lovia.stores.postgres import PostgresSession
from lovia.tui.widgets.chat_panel import ChatPanel
from tests.tui.conftest import make_app, settle
from tests.tui.test_fork_and_export import SIZES, notices, select


@pytest.mark.parametrize("size", SIZES)
async def test_f_forks_on_postgres(postgres_url, tmp_path, size):
    async with PostgresSession(postgres_url) as store:
        await store.append("s-source", [
            UserMessage(text="what time is it?"),
            ToolCall(call_id="c1", name="current_time", arguments="{}"),
            ToolResult(call_id="c1", name="current_time", output="12:00"),
            AssistantMessage(text="It is noon.", agent="assistant"),
        ], meta={"timing": {"started_at": 1000.0, "finished_at": 1002.0}})
        await store.append("s-source", [UserMessage(text="and in Tokyo?"),
                                        AssistantMessage(text="Nine in the evening.", agent="assistant")])
    session = PostgresSession(postgres_url)
    app = make_app(tmp_path / "lovia.db", session=session)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        chat = app.screen.query_one(ChatPanel)
        assert chat.session_id == "s-source"
        await select(pilot, 2)  # "It is noon.": the end of the first run
        await pilot.press("f")
        await settle(pilot)
        fork_id = chat.session_id
        assert fork_id != "s-source"
        assert "forked from “what time is it?” at entry 4" in str(chat.query_one("#chat-title").render())
        assert any("Forked: a new session with 4 entries" in n for n in notices(app))
        assert len(chat.transcript.views) == 3
    await session.close()
    async with PostgresSession(postgres_url) as store:
        [segment] = await store.segments(fork_id)
        assert len(segment.entries) == 4
        origin = ForkOrigin.from_meta(segment.meta)
        assert origin is not None and (origin.session_id, origin.entries) == ("s-source", 4)
        assert segment.meta["timing"] == {"started_at": 1000.0, "finished_at": 1002.0}
        assert len(await store.load("s-source")) == 6

"""Stored text is shown as it was written, never read as Textual markup.

A title, a message, a tool call's arguments or output, an agent's name or a finish reason
holding ``[/]`` made the widget showing it raise as it drew, which ended the app; one holding
``[@click=app.quit]…[/]`` became a link that ran an action; ``[b]`` vanished into bold.
"""

from __future__ import annotations

from textual.widgets import Static
from textual.widgets.collapsible import CollapsibleTitle

from lovia import AssistantMessage, SQLiteSession, ToolCall, ToolResult, UserMessage
from lovia.tui.screens.confirm import ConfirmScreen
from tests.tui.conftest import make_app, settle, wait_for
from tests.tui.test_keys_and_quit import show_the_sessions_pane

CLOSES = "[/]"
LINK = "[@click=app.quit]quit[/]"
TITLE = f"Regex {CLOSES} notes {LINK} [b]x[/b]"


def shown(widget) -> str:
    """What ``widget`` draws, as plain text."""
    return widget.render().plain


async def test_markup_in_stored_text_is_shown_as_written_and_ends_nothing(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session:
        await session.append("s-m", [
            UserMessage(text=f"what does {CLOSES} close?"),
            ToolCall(call_id="c1", name="grep", arguments=f'{{"pattern": "{CLOSES}"}}', agent="a"),
            ToolResult(call_id="c1", output=f"line 3: {CLOSES} {LINK}"),
            AssistantMessage(text="Nothing: it closes the last tag.", agent=f"a{CLOSES}b", finish_reason=f"x{CLOSES}"),
        ], run_id="r1")
        await session.rename_session("s-m", TITLE)
    app = make_app(db)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.chat.session_id == "s-m"
        assert TITLE[:40] in shown(screen.query_one("#chat-title", Static))
        (call_title,) = screen.chat.transcript.query(CollapsibleTitle)
        assert f'"pattern": "{CLOSES}"' in shown(call_title) and f"{CLOSES} {LINK}" in shown(call_title)
        who = screen.chat.transcript.query_one("AssistantMessageView .who", Static)
        assert shown(who) == f"a{CLOSES}b"
        assert f"x{CLOSES}" in shown(screen.chat.transcript.query_one("AssistantMessageView .finish", Static))

        await show_the_sessions_pane(pilot, (80, 24))
        screen.query_one("#session-list").focus()
        await pilot.press("delete")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert TITLE in shown(app.screen.query_one("#question", Static))
        await pilot.press("y")
        await settle(pilot)
        await wait_for(pilot, lambda: any("to the trash" in shown(t) for t in app.screen.query("Toast")))
        (toast,) = [t for t in app.screen.query("Toast") if "to the trash" in shown(t)]
        assert f"Moved “Regex {CLOSES} notes" in shown(toast)
        assert app.is_running

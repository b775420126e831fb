"""Focus and the message cursor in a session of long formatted answers restyle and lay out no answer.

Textual restyles every descendant of a widget whose focus or classes change, and a change of
border or padding lays its children out again. A long answer is hundreds of widgets (a block of
markdown each, code highlighted again when restyled): moving focus into the conversation took
over a second with eight such answers, and each cursor key a few tenths. The real app through its
pilot on a real SQLite file, at both sizes.
"""

from __future__ import annotations

import pytest
from textual.scrollbar import ScrollBar

from lovia import SQLiteSession
from lovia.entries import AssistantMessage, UserMessage
from lovia.tui.widgets.message_view import MessageView

from .conftest import make_app, settle

SIZES = [(80, 24), (160, 45)]


def long_answer() -> str:
    part = ("Some *text* with `code` and **bold** words that wrap across the view. " * 2
            + "\n\n- item one\n- item two\n  - nested\n\n```python\n"
            + "\n".join(f"x{i} = {i} * 2  # comment" for i in range(15)) + "\n```\n")
    return "\n".join(f"## Part {k}\n\n{part}" for k in range(6))


async def long_session(db) -> None:
    async with SQLiteSession(db, wal=True) as session:
        for r in range(6):
            await session.append("s-long", [UserMessage(text=f"question {r}"),
                                            AssistantMessage(text=long_answer())], run_id=f"r{r}")


async def app_on_long_answers(tmp_path):
    await long_session(tmp_path / "lovia.db")
    return make_app(tmp_path / "lovia.db")


async def opened(pilot) -> None:
    """The app started, with the session of long answers open."""
    await settle(pilot)
    await pilot.app.main.open_session("s-long")
    await settle(pilot)


class Restyles:
    """Every node the app's stylesheet restyles while the block runs."""

    def __init__(self, app) -> None:
        self.app, self.nodes = app, []

    def __enter__(self) -> Restyles:
        stylesheet = self.app.stylesheet
        apply = stylesheet.apply

        def counting(node, *args, **kwargs):
            self.nodes.append(node)
            return apply(node, *args, **kwargs)

        stylesheet.apply = counting
        return self

    def __exit__(self, *exc) -> None:
        del self.app.stylesheet.apply


def inside(transcript, nodes) -> list:
    """The nodes among ``nodes`` that the transcript holds (its scrollbar is its own)."""
    return [node for node in nodes if transcript in node.ancestors and not isinstance(node, ScrollBar)]


def text_column(view: MessageView) -> int:
    return view.content_region.x


@pytest.mark.parametrize("size", SIZES)
async def test_focus_into_and_out_of_the_conversation_restyles_no_message(tmp_path, size):
    app = await app_on_long_answers(tmp_path)
    async with app.run_test(size=size) as pilot:
        await opened(pilot)
        transcript = app.main.chat.transcript
        assert sum(1 for _ in transcript.walk_children()) > 300  # long answers: hundreds of widgets
        last = transcript.views[-1]
        column = text_column(last)
        for _ in range(2):
            with Restyles(app) as restyled:
                transcript.focus()
                await settle(pilot)
                assert transcript.has_focus
                assert text_column(last) == column  # the focus bar takes a column kept for it
                app.main.query_one("#composer").focus()
                await settle(pilot)
            shown = inside(transcript, restyled.nodes)
            assert len(shown) < 20, f"{len(shown)} widgets of the transcript restyled"
            assert text_column(last) == column


@pytest.mark.parametrize("size", SIZES)
async def test_the_message_cursor_restyles_only_the_messages_it_leaves_and_reaches(tmp_path, size):
    app = await app_on_long_answers(tmp_path)
    async with app.run_test(size=size) as pilot:
        await opened(pilot)
        transcript = app.main.chat.transcript
        transcript.focus()
        await settle(pilot)
        views = transcript.views
        columns = [text_column(view) for view in views]
        with Restyles(app) as restyled:
            for _ in range(4):
                await pilot.press("up")
                await settle(pilot)
        assert transcript.selected == len(views) - 5  # focus put it on the last message
        assert views[-5].has_class("-selected")
        assert [view for view in views if view.has_class("-selected")] == [views[-5]]
        held = inside(transcript, restyled.nodes)
        assert all(isinstance(node, MessageView) for node in held), \
            f"{sum(not isinstance(node, MessageView) for node in held)} widgets inside messages restyled"
        assert [text_column(view) for view in views] == columns  # the cursor's bar has a column kept for it


@pytest.mark.parametrize("size", SIZES)
async def test_dialogs_panes_and_edits_restyle_nothing_inside_the_messages(tmp_path, size):
    """The screen's classes (covered by a dialog, a pane shown or folded) and the chat panel's
    (editing) style no message: changing them restyles what is around the messages only."""
    app = await app_on_long_answers(tmp_path)
    async with app.run_test(size=size) as pilot:
        await opened(pilot)
        transcript = app.main.chat.transcript
        with Restyles(app) as restyled:
            for keys in (["f1"], ["ctrl+p"], ["ctrl+b"], ["ctrl+o"]):
                await pilot.press(*keys)
                await settle(pilot)
                await pilot.press("escape")
                await settle(pilot)
        assert app.screen is app.main
        assert not inside(transcript, restyled.nodes)
        assert restyled.nodes  # the control: what the classes style was restyled

        transcript.focus()
        await pilot.press("up")  # from the last answer (focus put the cursor there) to the last question
        await settle(pilot)
        with Restyles(app) as restyled:
            await pilot.press("e")
            await settle(pilot)
            assert app.main.chat.has_class("-editing")
            await pilot.press("escape")
            await settle(pilot)
            assert not app.main.chat.has_class("-editing")
        held = inside(transcript, restyled.nodes)
        assert all(isinstance(node, MessageView) for node in held), \
            f"{sum(not isinstance(node, MessageView) for node in held)} widgets inside messages restyled"

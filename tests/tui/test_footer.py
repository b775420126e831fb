"""The footer: one widget that draws the keys in force, answers the mouse, and follows focus."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.command import CommandPalette
from textual.widgets import Input

from lovia.tui.screens.help import HelpScreen
from lovia.tui.widgets.footer import FooterEntry, LoviaFooter
from tests.tui.conftest import make_app, settle, told, wait_for
from tests.tui.test_crash_resume import highlight_run

SIZES = [(80, 24), (160, 45)]


def footer_of(app) -> LoviaFooter:
    return app.screen.query_one(LoviaFooter)


def column_of(footer: LoviaFooter, action: str) -> int:
    """A column inside the entry for ``action``."""
    return next(start + 1 for entry, start, _ in footer.spans() if entry.action == action)


@pytest.mark.parametrize("size", SIZES)
async def test_a_click_on_an_entry_presses_its_key(tmp_path, size):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        footer = footer_of(app)
        await pilot.click(footer, offset=(column_of(footer, "help"), 0))
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("escape")
        await settle(pilot)
        await pilot.click(footer, offset=(column_of(footer, "command_palette"), 0))
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))


@pytest.mark.parametrize("size", SIZES)
async def test_the_entries_follow_focus_and_are_drawn_where_spans_says(tmp_path, size):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        footer = footer_of(app)
        assert "submit" in [entry.action for entry in footer.entries]  # the composer has focus
        app.screen.query_one("#session-list").focus()
        await settle(pilot)
        assert "submit" not in [entry.action for entry in footer.entries]
        line = footer.render_line(0).text
        assert len(line) == size[0]
        for entry, start, end in footer.spans():
            assert entry.key_display in line[start:end] and entry.description in line[start:end + 1]
        assert line[footer.spans()[-1][1] - 1] == "▏"  # the line before the palette's entry


class Keys(App[None]):
    """A footer with an entry whose binding is shown but disabled (``check_action`` says ``None``)."""

    BINDINGS = [Binding("f2", "save", "Save", tooltip="Write the file"), Binding("f3", "load", "Load")]

    def __init__(self) -> None:
        super().__init__()
        self.saved = 0

    def compose(self) -> ComposeResult:
        yield Input()
        yield LoviaFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return None if action == "load" else True

    def action_save(self) -> None:
        self.saved += 1

    def action_load(self) -> None:
        raise AssertionError("a disabled binding ran")


async def test_a_disabled_entry_is_dim_and_a_click_on_it_rings_the_bell():
    app = Keys()
    bells = []
    app.bell = lambda: bells.append(True)  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        footer = app.query_one(LoviaFooter)
        load = next(entry for entry in footer.entries if entry.action == "load")
        assert load == FooterEntry("f3", "f3", "Load", "load", enabled=False)
        dim = [segment.style.dim for segment in footer.render_line(0)
               if segment.text.strip() in {"f3", "Load"} and segment.style is not None]
        assert dim == [True, True]
        await pilot.click(footer, offset=(column_of(footer, "load"), 0))
        await pilot.click(footer, offset=(column_of(footer, "save"), 0))
        await pilot.pause()
        assert bells == [True] and app.saved == 1


async def test_hovering_an_entry_shows_its_tooltip_and_lights_it():
    app = Keys()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        footer = app.query_one(LoviaFooter)
        before = {segment.text: segment.style for segment in footer.render_line(0)}
        await pilot.hover(footer, offset=(column_of(footer, "save"), 0))
        await pilot.pause()
        assert footer.tooltip == "Write the file"
        after = {segment.text: segment.style for segment in footer.render_line(0)}
        assert after[" f2 "].bgcolor != before[" f2 "].bgcolor
        assert after[" f3 "] == before[" f3 "]  # only the entry under the pointer
        await pilot.hover(footer, offset=(column_of(footer, "load"), 0))
        await pilot.pause()
        assert footer.tooltip is None  # its binding has none


class FocusKeys(App[None]):
    """The first input offers f2 Save beside the app's f3 Load; the second offers nothing of its own."""

    BINDINGS = [Binding("f3", "load", "Load", tooltip="Read the file")]

    def compose(self) -> ComposeResult:
        yield SaveInput(id="saving")
        yield Input(id="plain")
        yield LoviaFooter()

    def action_load(self) -> None:
        pass


class SaveInput(Input):
    BINDINGS = [Binding("f2", "save", "Save", tooltip="Write the file")]

    def action_save(self) -> None:
        pass


async def test_when_the_entries_change_under_the_pointer_the_old_entry_is_not_lit_or_told():
    app = FocusKeys()
    async with app.run_test(size=(80, 24)) as pilot:
        app.query_one("#saving").focus()
        await pilot.pause()
        footer = app.query_one(LoviaFooter)
        await pilot.hover(footer, offset=(column_of(footer, "save"), 0))
        await pilot.pause()
        assert footer.tooltip == "Write the file"
        app.query_one("#plain").focus()  # Save goes; Load is drawn where it was
        await pilot.pause()
        assert [entry.action for entry in footer.entries][:1] == ["load"]
        assert footer.tooltip is None
        lit = {segment.text for segment in footer.render_line(0) if segment.style is not None
               and segment.style.bgcolor != footer.rich_style.bgcolor}
        assert not lit, lit


@pytest.mark.parametrize("size", SIZES)
async def test_the_footer_shows_the_cursor_keys_that_apply_to_the_message_under_it(tmp_path, size):
    """An 80-column footer has room for four or five keys: those that do nothing for the selected
    message (edit on an answer, expand on a message, copy code without code) leave room for the
    rest. Their keys still work, and say why they do nothing."""
    from lovia.models import ScriptedModel, ScriptedTurn, call
    from lovia.tui.widgets.assistant_message import AssistantMessageView
    from lovia.tui.widgets.tool_call_view import ToolCallView
    from lovia.tui.widgets.user_message import UserMessageView
    from tests.tui.conftest import told, type_and_send

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("calculate", {"expression": "6*7"})]),
                           "It is 42:\n\n```python\nprint(6 * 7)\n```",
                           "Words, and ```three backticks``` in a line, which open no block."])
    app = make_app(tmp_path / "lovia.db", model=model)
    async with app.run_test(size=size) as pilot:
        await type_and_send(pilot, "what is 6*7?")
        await type_and_send(pilot, "thanks")
        transcript = app.screen.chat.transcript
        transcript.focus()
        await settle(pilot)
        footer = footer_of(app)

        async def cursor_to(kind: type) -> set[str]:
            await pilot.press("home")
            while not isinstance(transcript.selected_view, kind):
                await pilot.press("down")
            await settle(pilot)
            return {entry.action for entry in footer.entries}

        def palette() -> set[str]:
            return {command.title for command in app.get_system_commands(app.screen)}

        shown = await cursor_to(UserMessageView)
        assert "edit" in shown and not {"expand", "copy_code"} & shown
        assert "Edit selected message" in palette() and "Copy code block" not in palette()  # the same rule
        shown = await cursor_to(ToolCallView)
        assert "expand" in shown and not {"edit", "copy_code"} & shown
        shown = await cursor_to(AssistantMessageView)
        assert "copy_code" in shown and not {"edit", "expand"} & shown
        assert "Copy code block" in palette() and "Edit selected message" not in palette()
        assert "fork" in shown and "copy" in shown
        await pilot.press("end")
        await settle(pilot)
        assert isinstance(transcript.selected_view, AssistantMessageView)  # no block, though it has ```
        assert "copy_code" not in {entry.action for entry in footer.entries}
        await pilot.press("y", "enter", "e")  # hidden, and still saying why they do nothing
        await settle(pilot)
        said = [t.message for t in told(app)]
        assert "The selected message has no code block." in said
        assert "Select one of your messages to edit it (↑/↓)." in said
        assert "Nothing to expand here: enter unfolds a tool call, or a notice with more lines." in said


@pytest.mark.parametrize("size", SIZES)
async def test_enter_on_an_unfolded_tool_call_reads_collapse_however_it_unfolded(tmp_path, size):
    """The footer said "Expand" on a tool call enter had just unfolded; it says what enter does."""
    from lovia.models import ScriptedModel, ScriptedTurn, call
    from lovia.tui.widgets.tool_call_view import ToolCallView
    from tests.tui.conftest import type_and_send

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("calculate", {"expression": "6*7"})]), "It is 42."])
    app = make_app(tmp_path / "lovia.db", model=model)
    async with app.run_test(size=size) as pilot:
        await type_and_send(pilot, "what is 6*7?")
        transcript = app.screen.chat.transcript
        transcript.focus()
        await pilot.press("home")
        while not isinstance(transcript.selected_view, ToolCallView):
            await pilot.press("down")
        await settle(pilot)
        footer = footer_of(app)

        def expand_reads() -> str:
            return next(entry.description for entry in footer.entries if entry.action == "expand")

        assert expand_reads() == "Expand"
        await pilot.press("enter")
        await settle(pilot)
        assert transcript.selected_view.expanded
        assert expand_reads() == "Collapse"
        await pilot.press("enter")
        await settle(pilot)
        assert expand_reads() == "Expand"
        await pilot.click(transcript.selected_view.query_one("CollapsibleTitle"))  # unfolded by the mouse
        await settle(pilot)
        assert transcript.selected_view.expanded and expand_reads() == "Collapse"


@pytest.mark.parametrize("size", SIZES)
async def test_trim_undo_and_the_match_keys_show_only_when_they_apply_and_say_why_when_pressed(tmp_path, size):
    """t showed in a chat with no tool output; u and n did nothing, silently, with nothing to undo or
    no search (their bindings were off). Left out of the footer and the palette then, they still
    answer when pressed; trim shows once a tool call does."""
    from lovia.models import ScriptedModel, ScriptedTurn, call
    from tests.tui.conftest import told, type_and_send

    model = ScriptedModel(["Hello.", ScriptedTurn(tool_calls=[call("calculate", {"expression": "6*7"})]),
                           "It is 42."])
    app = make_app(tmp_path / "lovia.db", model=model)
    async with app.run_test(size=size) as pilot:
        await type_and_send(pilot, "hi")
        transcript = app.screen.chat.transcript
        transcript.focus()
        await pilot.press("end")
        await settle(pilot)
        footer = footer_of(app)

        def shown() -> set[str]:
            return {entry.action for entry in footer.entries}

        def palette() -> set[str]:
            return {command.title for command in app.get_system_commands(app.screen)}

        assert not {"trim", "undo_rewind", "match"} & shown()
        assert not {"Trim tool outputs", "Undo rewind", "Next match"} & palette()
        await pilot.press("u", "n")
        await settle(pilot)
        said = [t.message for t in told(app)]
        assert ("Nothing to undo: u brings back what an edit-and-resend or a regenerate dropped, until the next "
                "message is sent.") in said
        assert "No search to step through: ctrl+f searches every session." in said
        await pilot.press("t")
        await wait_for(pilot, lambda: "This session has no tool output to trim." in [t.message for t in told(app)])

        await type_and_send(pilot, "what is 6*7?")
        transcript.focus()
        await settle(pilot)
        assert "Trim tool outputs" in palette()
        if size[0] > 80:  # at 80 columns the cursor's keys come first, and trim has no room left
            assert "trim" in shown()


async def test_trim_fork_and_undo_leave_the_footer_while_an_answer_runs(tmp_path):
    """They only said to wait for the answer; the footer offered them all the same."""
    from lovia import Agent
    from lovia.models import ScriptedModel, ScriptedTurn, call
    from tests.tui.conftest import told, type_and_send
    from tests.tui.test_stop_and_continue import blocking_tool

    slow, gate = blocking_tool()
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("calculate", {"expression": "6*7"})]), "42.",
                           ScriptedTurn(tool_calls=[call("slow", {"seconds": 1})]), "done"])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model, tools=[slow]))
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "what is 6*7?")
        transcript = app.screen.chat.transcript
        transcript.focus()
        await pilot.press("home")
        await settle(pilot)
        footer = footer_of(app)
        assert {"trim", "fork"} <= {entry.action for entry in footer.entries}
        app.screen.chat.composer.focus()
        await pilot.press(*"slow please", "enter")
        await wait_for(pilot, gate.is_set)
        transcript.focus()
        await pilot.press("home")
        await pilot.pause()
        assert "copy" in {entry.action for entry in footer.entries}  # a message is selected
        assert not {"trim", "fork", "undo_rewind"} & {entry.action for entry in footer.entries}
        await pilot.press("f")  # still says why
        await wait_for(pilot, lambda: any("before forking" in t.message for t in told(app)))
        await pilot.press("escape")
        await settle(pilot)
        assert {"trim", "fork"} <= {entry.action for entry in footer.entries}


async def test_keys_that_need_a_run_show_once_one_is_shown_and_an_empty_session_says_why(tmp_path):
    """A new session's footer offered `w Timeline`, and `w` answered "select a message of one",
    `enter` "select a message to expand it", with no message to select; ctrl+g, ctrl+l, ctrl+s and
    ctrl+r did nothing, silently (their bindings were off)."""
    from tests.tui.conftest import told, type_and_send

    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        transcript = app.screen.chat.transcript
        transcript.focus()
        await settle(pilot)
        assert "timeline" not in {entry.action for entry in footer_of(app).entries}
        await pilot.press("w", "enter")
        await settle(pilot)
        said = [t.message for t in told(app)]
        assert "No run to show: none has run in this session yet." in said
        assert "Nothing to expand: no message yet." in said
        offered = {entry.action for entry in footer_of(app).entries}
        assert not {"regenerate", "edit_last", "export", "resume"} & offered
        told(app).clear()
        await pilot.press("ctrl+g", "ctrl+l", "ctrl+s", "ctrl+r")  # they did nothing, silently
        await settle(pilot)
        assert [t.message for t in told(app)] == [
            "Nothing to regenerate yet: send a message first.", "Nothing to edit yet.",
            "Nothing to export yet: this session has no stored message.",
            "This session has no interrupted run to resume."]
        app.screen.query_one("#composer").focus()
        await pilot.press("up")  # in the empty composer: would edit the last message; there is none, quietly
        await settle(pilot)
        assert len(told(app)) == 4
        await type_and_send(pilot, "hi")
        transcript.focus()
        await settle(pilot)
        offered = {entry.action for entry in footer_of(app).entries}
        assert {"timeline", "regenerate", "edit_last", "export"} <= offered and "resume" not in offered


async def test_at_80_columns_the_timeline_key_shows_on_a_message_of_a_run_with_tool_output(tmp_path):
    """With the cursor on a message, an 80-column footer showed copy, edit, trim and fork, and left
    out `w Timeline`: trimming, an occasional clean-up, took the room of the pane's newer feature."""
    from lovia import Agent
    from lovia.models import ScriptedModel, ScriptedTurn, call
    from tests.tui.conftest import type_and_send

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("calculate", {"expression": "6*7"})]), "42."])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model))
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "what is 6*7?")
        transcript = app.screen.chat.transcript
        transcript.focus()
        await pilot.press("home")
        await settle(pilot)
        shown = [entry.action for entry in footer_of(app).entries]
        assert transcript.applies("trim")
        assert {"copy", "edit", "fork", "timeline", "help"} <= set(shown)
        assert "trim" not in shown  # still on f1 and in the palette


async def test_at_80_columns_the_runs_list_footer_has_room_for_its_timeline_key(tmp_path):
    """The runs list's footer left out `w Timeline` at 80 columns, two cells short."""
    from screenshots.demo_data import build

    await build(tmp_path / "lovia.db")
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+o")  # the runs pane, over the conversation
        await wait_for(pilot, lambda: app.focused is app.screen.query_one("#run-list"))
        await settle(pilot)
        shown = [entry.action for entry in footer_of(app).entries]
        assert "act('timeline')" in shown and "copy_run_id" in shown, shown


@pytest.mark.parametrize("size", SIZES)
async def test_the_runs_list_footer_leaves_out_what_a_run_running_elsewhere_refuses(tmp_path, size):
    """A new user's trial: on a run another process executes, the footer offered resume, discard and
    finalize, each refused when pressed. They show for a run that can take them, and still say why
    when pressed on one that cannot."""
    from screenshots.demo_data import build, build_stopped_runs

    await build(tmp_path / "lovia.db")
    await build_stopped_runs(tmp_path / "lovia.db")
    app = make_app(tmp_path / "lovia.db")
    refused = ("act('resume')", "act('discard')", "act('finalize')")
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        run_list = await highlight_run(pilot, size, "run-demo-elsewhere")
        ids = [run_list.get_option_at_index(i).id for i in range(run_list.option_count)]
        for run_id, offered in (("run-demo-elsewhere", False), ("run-demo-tools", True)):
            run_list.highlighted = ids.index(run_id)
            await settle(pilot)
            shown = [entry.action for entry in footer_of(app).entries]
            assert all((action in shown) == offered for action in refused), (run_id, shown)
            assert "act('timeline')" in shown
        run_list.highlighted = ids.index("run-demo-elsewhere")
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        assert any("is being executed by process" in n.message for n in told(app))

"""CheckpointInspector: the head, entries and dangling calls of one run."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence, Set
from typing import ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from lovia.checkpoint import RunSnapshot
from lovia.entries import AssistantMessage, Entry, Handoff, ToolCall, ToolResult
from lovia.timing import Step, ToolStep, given_results
from lovia.transcript import dangling_tool_calls
from lovia.tui import format
from lovia.tui.backend import RESUMABLE_STATES, STATE_LABELS, TranscriptRun, run_state
from lovia.tui.keymap import keymap_of
from lovia.tui.widgets.lists import StoppingOptionList
from lovia.tui.widgets.run_header import header_parts, partial_label
from lovia.tui.widgets.runs_pane import RunsPane, copy_run_id
from lovia.tui.widgets.steady_scroll import SteadyScroll
from lovia.tui.widgets.tool_call_view import GIVEN

SUMMARY_CHARS = 200
"""How much of an entry's text the inspector shows (wrapped under its column)."""
CALL_ROW_CHARS = 60
"""How much of a dangling call (its name and arguments) its row shows: two lines at most at 80x24."""


class DanglingCallList(StoppingOptionList):
    """The shown run's tool calls without a result, each marked "may have run", one row a call.

    On a row, ``o`` gives the call's output and ``e`` an error in its place (the inspector
    posts :class:`CheckpointInspector.CompleteCall`), so resuming does not run it again; the
    inspector's ``r`` resumes the run as the spec says, running every call still without a result again.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "complete(False)", "Give output", id="inspector.give_output",
                tooltip="Store the output this call gave, so resuming does not run it again"),
        Binding("e", "complete(True)", "Give error", id="inspector.give_error",
                tooltip="Store an error as this call's result, so resuming does not run it again"),
    ]

    def action_complete(self, as_error: bool) -> None:
        inspector = self.inspector
        if self.highlighted is None or inspector is None or inspector.run_id is None:
            return
        call_id = self.get_option_at_index(self.highlighted).id
        call = next((c for c in inspector.dangling if c.call_id == call_id), None)
        if call is not None:
            self.post_message(CheckpointInspector.CompleteCall(inspector.run_id, call, as_error))

    @property
    def inspector(self) -> CheckpointInspector | None:
        return next((a for a in self.ancestors if isinstance(a, CheckpointInspector)), None)

    def on_key(self, event: events.Key) -> None:
        # Textual's shift+tab (the screen's binding, run once the key has bubbled up) would focus
        # the inspector, which hands focus straight back here (on_focus): focus never moved. It
        # goes to what comes before the inspector instead.
        if event.key != "shift+tab":
            return
        inspector = self.inspector
        chain = self.screen.focus_chain
        if inspector in chain:
            event.stop()
            event.prevent_default()
            self.screen.set_focus(chain[chain.index(inspector) - 1])


NOT_RESUMABLE = {
    "completed": "This run has completed: there is nothing to resume.",
    "stored": "This run is stored in its session and has no checkpoint: there is nothing to resume.",
    "running": "This run is running in this window: escape stops it, then it can be resumed.",
    "elsewhere": "This run is running in another window or process: it can be resumed once that stops.",
}
"""What the resume key says of a run shown that cannot be resumed, by how it stands."""
NO_RUN_SHOWN = "No run is shown: select one in the runs list first."


class CheckpointInspector(SteadyScroll, can_focus=True):
    """Shows a :class:`RunSnapshot`, or a stored run without one (:meth:`show_run`);
    ``show(None)`` explains how to pick one. ``c`` copies the shown run's id; ``r`` resumes it when
    it is a run a user may resume (stopped, crashed or failed), from the dangling calls' list too.

    A run a user may resume that stopped inside tool calls lists them under its entries
    (:class:`DanglingCallList`), each marked "may have run", with what resuming does to it;
    focus entering the inspector goes to that list, whose keys decide each call.
    """

    class CompleteCall(Message):
        """The user wants to give ``call``'s result (an error when ``as_error``) before resuming ``run_id``."""

        def __init__(self, run_id: str, call: ToolCall, as_error: bool) -> None:
            super().__init__()
            self.run_id = run_id
            self.call = call
            self.as_error = as_error

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "copy_run_id", "Copy run id", id="inspector.copy_run_id"),
        # Here, not on the dangling calls' list alone: once the last call has its result the list
        # goes, and the run is still to be resumed.
        Binding("r", "resume", "Resume", id="inspector.resume",
                tooltip="Resume the run shown: every call still without a result runs again"),
    ]

    DEFAULT_CSS = """
    /* The focus bar's column is kept, blank without focus: the text does not shift as focus moves. */
    CheckpointInspector { height: 1fr; padding: 0 1; border-left: blank; }
    CheckpointInspector:focus { border-left: tall $accent; }
    CheckpointInspector .pane-title { color: $text-muted; text-style: bold; }
    CheckpointInspector .dangling { color: $warning; }
    CheckpointInspector DanglingCallList { height: auto; border: tall $panel; display: none; }
    CheckpointInspector DanglingCallList:focus { border: tall $accent; }
    """

    shown: RenderableType = ""
    run_id: str | None = None
    """The run shown, if any."""
    dangling: tuple[ToolCall, ...] = ()
    """The shown run's calls a user may decide before resuming it (listed under its entries)."""
    resumable = False
    """Whether the shown run is one a user may resume (stopped, crashed or failed; not held)."""
    _state = ""
    """How the shown run stands (:func:`~lovia.run_state.run_state`), ``"stored"`` for a run with no
    checkpoint: what the resume key says when there is nothing to resume."""

    def compose(self) -> ComposeResult:
        yield Static("Checkpoint", classes="pane-title")
        yield Static(id="inspector-body")
        yield DanglingCallList(id="dangling-calls")

    def on_focus(self) -> None:
        # The calls to decide are what the inspector is entered for while there are any.
        calls = self.query_one(DanglingCallList)
        if self.dangling and calls.display:
            calls.focus()
            self.call_after_refresh(self.scroll_end, animate=False)  # they come last: below the fold

    def _show(self, run_id: str | None, renderable: RenderableType, dangling: Sequence[ToolCall] = (),
              servers: Mapping[str, str] | None = None, *, resumable: bool = False, state: str = "") -> None:
        another = run_id != self.run_id
        self.run_id, self._state = run_id, state
        if resumable != self.resumable:
            self.resumable = resumable
            self.refresh_bindings()
        self.shown = renderable
        self.query_one("#inspector-body", Static).update(renderable)
        self._list_dangling(tuple(dangling), servers or {})
        if another:  # from its head: it opened where the last run was scrolled to, its facts out of sight
            self.scroll_home(animate=False, immediate=True)

    def _list_dangling(self, dangling: tuple[ToolCall, ...], servers: Mapping[str, str]) -> None:
        """List ``dangling`` (hide the list when empty); the call highlighted before stays highlighted."""
        calls = self.query_one(DanglingCallList)
        if dangling == self.dangling and calls.display == bool(dangling):
            return
        before = calls.highlighted
        highlighted_id = calls.get_option_at_index(before).id if before is not None else None
        had_focus = calls.has_focus
        self.dangling = dangling
        with calls.prevent(OptionList.OptionHighlighted):
            calls.clear_options()
            calls.add_options([Option(_dangling_row(call, servers), id=call.call_id) for call in dangling])
            ids = [call.call_id for call in dangling]
            if ids:
                calls.highlighted = ids.index(highlighted_id) if highlighted_id in ids else min(before or 0,
                                                                                                 len(ids) - 1)
        calls.display = bool(dangling)
        if had_focus and not dangling:
            self.focus()  # the last call was decided: the inspector keeps focus, not the screen

    def show(self, snapshot: RunSnapshot | None) -> None:
        """Show ``snapshot``'s head, entries and dangling calls (``None``: say how to pick a run)."""
        if snapshot is None:
            self._show(None, Text("Select a run in the runs list or a message in the conversation, or start "
                                  "one, to inspect its checkpoint.", style="dim"))
            return
        head = snapshot.head
        rows = [
            ("run", snapshot.run_id),
            ("status", STATE_LABELS.get(run_state(head), run_state(head))),
            ("agent", head.agent),
            ("model", head.model or "—"),
            # The turns finished: a run cut off in its first answer has none (not a "turn 0").
            ("turn", str(head.turn) if head.turn else "none finished"),
            ("usage", format.usage(head.usage) if head.usage.requests else "no request finished"),
            ("handoff", head.pending_handoff or "—"),
            ("started", format.when(head.started_at)),
            ("updated", format.when(head.updated_at)),
            ("ran", format.duration(head.active_seconds) if head.active_seconds else "not recorded"),
            ("session", head.session_id or "—"),
            ("owner", f"pid {head.owner.pid} on {head.owner.host}" if head.owner else "—"),
        ]
        state = run_state(head)
        if head.lease_until is not None:
            # This process renews it without a snapshot to show: the time last read would look lapsed.
            # A crashed run's lease may not have run out: its owner is gone, so it holds nothing.
            rows.append(("lease", "renewed while it runs here" if state == "running" else
                         f"until {format.when(head.lease_until)}" + (", but its owner is gone" if state == "crashed"
                                                                     and head.lease_until > time.time() else "")))
        if head.error:
            rows.append(("error", head.error))
        dangling = dangling_tool_calls(snapshot.entries)
        dangling_ids = {c.call_id for c in dangling}
        servers = servers_of_calls(head.steps)
        calls = ", ".join(f"{c.name}{_on_server(servers, c)} ({c.call_id})" for c in dangling)
        decidable: list[ToolCall] = []
        if dangling and run_state(head) in ("running", "elsewhere"):  # executing now, not left behind
            note = Text.assemble((f"\n{format.count(len(dangling), 'tool call')} running now: ", "bold"), calls)
        elif dangling and head.status != "completed":
            decidable = dangling
            note = Text.assemble((f"\n{format.count(len(dangling), 'dangling call')} — will run again on resume "
                                  "unless you give its result (each may have run before the run was cut short): ",
                                  "bold"), calls)
        else:
            note = Text("\nNo dangling tool calls.", style="dim")
        entries = _entries(snapshot.entries, dangling_ids, servers, given_results(head.steps))
        self._show(snapshot.run_id, Group(_facts(rows), entries, note), decidable, servers,
                   resumable=state in RESUMABLE_STATES, state=state)

    def show_run(self, run: TranscriptRun) -> None:
        """A run with no checkpoint (a stored segment): what its session records of it."""
        rows = [
            ("run", run.run_id),
            ("status", partial_label(run) if run.partial else STATE_LABELS.get(run.state, run.state)),
            ("header", " · ".join(header_parts(run))),
            ("started", format.when(run.started_at)),
            ("took", format.duration(run.duration)),
            ("ran", format.duration(run.active_seconds) if run.active_seconds else "not recorded"),
        ]
        note = Text("\nIn the session; no checkpoint is kept for this run.", style="dim")
        entries = _entries(run.entries, set(), servers_of_calls(run.steps), given_results(run.steps))
        self._show(run.run_id, Group(_facts(rows), entries, note), state="stored")

    def on_key(self, event: events.Key) -> None:
        """The keys that give a call's result (the dangling calls' list's) pressed here, where the run
        shown has no call waiting for one (the list is there only while it has): they say so."""
        keys = keymap_of(self)
        giving = (*keys.keys_in_force("inspector.give_output"), *keys.keys_in_force("inspector.give_error"))
        # Not a key another binding in force takes here (the config file may have given it one).
        if not self.has_focus or event.key not in giving or event.key in self.screen.active_bindings:
            return
        event.stop()
        event.prevent_default()
        calls = self.query_one(DanglingCallList)
        if self.dangling and calls.display:  # listed while focus stayed here (the run shown was stopped)
            calls.focus()
            calls.action_complete(event.key in keys.keys_in_force("inspector.give_error"))
        else:
            self.notify("The run shown has no tool call waiting for a result: there is none to give."
                        if self.run_id else NO_RUN_SHOWN, severity="warning")

    def hidden_in_footer(self, action: str) -> bool:
        """Resume while the run shown cannot be resumed: the footer leaves it out (see
        :class:`~lovia.tui.widgets.footer.HidesInFooter`); pressed, it says why."""
        return action == "resume" and not self.resumable

    def action_resume(self) -> None:
        if self.resumable and self.run_id is not None:
            self.post_message(RunsPane.Action("resume", self.run_id))
            return
        why = NOT_RESUMABLE.get(self._state, "There is nothing to resume here.") if self.run_id else NO_RUN_SHOWN
        self.notify(why, severity="warning")

    def action_copy_run_id(self) -> None:
        if self.run_id is None:
            self.notify(NO_RUN_SHOWN, severity="warning")
        else:
            copy_run_id(self, self.run_id)


def servers_of_calls(steps: Sequence[Step]) -> dict[str, str]:
    """call id -> the MCP server the call went to, as the run's steps record it."""
    return {step.call_id: step.server for step in steps if isinstance(step, ToolStep) and step.server}


def _on_server(servers: Mapping[str, str], call: ToolCall) -> str:
    server = servers.get(call.call_id)
    return f" on MCP server {server}" if server else ""


def _dangling_row(call: ToolCall, servers: Mapping[str, str]) -> Text:
    """A dangling call's row: the call, then that it may have run and what resuming does to it."""
    row = Text(f"⚠ {format.one_line(f'{call.name}({call.arguments})', CALL_ROW_CHARS)}", style="bold yellow")
    row.append(f"\n  may have run{_on_server(servers, call)} · reruns on resume", style="dim")
    return row


def _facts(rows: Sequence[tuple[str, str]]) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="dim", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, Text(value))
    return table


def _entries(entries: Sequence[Entry], dangling_ids: set[str], servers: Mapping[str, str],
             given: Set[str] = frozenset()) -> Table:
    """One row an entry: position, type, and its summary wrapped under its own column; a result
    given rather than received from its tool (``given``, by call id) says so."""
    table = Table(title=format.count(len(entries), "entry", "entries"), title_justify="left", title_style="bold",
                  box=None, show_header=False, padding=(0, 1, 0, 0), expand=True)
    table.add_column(justify="right", style="dim", no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(ratio=1, overflow="fold")
    for position, entry in enumerate(entries):
        style = "yellow" if isinstance(entry, ToolCall) and entry.call_id in dangling_ids else ""
        summary = _summary(entry)
        if isinstance(entry, ToolCall) and entry.call_id in servers:
            summary = f"{summary} → {servers[entry.call_id]}"
        elif isinstance(entry, ToolResult) and entry.call_id in given:
            summary = f"{GIVEN} {summary}"
        table.add_row(str(position), Text(entry.type, style=style), Text(summary, style=style))
    return table


def _summary(entry: Entry) -> str:
    """An entry in a few plain words: no markdown syntax, on one line."""
    if isinstance(entry, ToolCall):
        return format.one_line(f"{entry.name}({entry.arguments})", SUMMARY_CHARS)
    if isinstance(entry, ToolResult):
        return format.one_line(("✗ " if entry.is_error else "") + entry.output, SUMMARY_CHARS)
    if isinstance(entry, Handoff):
        return f"{entry.from_agent} → {entry.to_agent}"
    text = getattr(entry, "text", "")
    if isinstance(entry, AssistantMessage):
        text = format.plain_text(text)
    return format.one_line(text, SUMMARY_CHARS)

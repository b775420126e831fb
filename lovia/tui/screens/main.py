"""MainScreen: sessions | conversation | runs and checkpoint inspector."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header

from lovia.errors import LoviaError
from lovia.tui.backend import ChatBackend
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.screens.prompt import PromptScreen
from lovia.tui.widgets.chat_panel import ChatPanel
from lovia.tui.widgets.inspector import CheckpointInspector
from lovia.tui.widgets.runs_pane import RunsPane
from lovia.tui.widgets.sessions_pane import SessionsPane

PANES = ["#session-list", "#transcript", "#composer", "#run-list", "CheckpointInspector"]


class MainScreen(Screen):
    DEFAULT_CSS = """
    MainScreen #side { width: 46; border-left: solid $panel; }
    MainScreen CheckpointInspector { border-top: solid $panel; }
    """

    def __init__(self, backend: ChatBackend) -> None:
        super().__init__()
        self.backend = backend
        self.inspected: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal():
            if self.backend.can_list_sessions:
                yield SessionsPane(can_rename=self.backend.can_rename)
            yield ChatPanel(self.backend)
            with Vertical(id="side"):
                if self.backend.can_list_runs:
                    yield RunsPane()
                yield CheckpointInspector()
        yield Footer()

    async def on_mount(self) -> None:
        sessions = await self.backend.sessions()
        await self.open_session(sessions[0].session_id if sessions else None)
        self.query_one("#composer").focus()
        self._record_finished_runs()

    @work(group="heal")
    async def _record_finished_runs(self) -> None:
        """After the first paint: a run finished just before a crash gets into its session."""
        try:
            replayed = await self.backend.record_finished_runs()
        except Exception as exc:  # a check at start: it must never take the app down
            self.notify(f"Could not check the last finished runs: {exc}", severity="warning")
            return
        chat = self.chat
        if any(session_id == chat.session_id and run_id not in chat.transcript.run_ids
               for session_id, run_id in replayed) and not chat.running:
            await chat.open_session(chat.session_id)  # one of its runs was missing from what is shown
        if replayed:
            await self.refresh_lists()

    async def open_session(self, session_id: str | None) -> None:
        """Show ``session_id`` in the chat; the inspector shows its newest in-flight run, if any."""
        await self.chat.open_session(session_id)
        in_flight = await self.backend.runs(session_id=session_id) if session_id else []
        self.inspected = in_flight[0].run_id if in_flight else None
        await self.refresh_lists()

    @property
    def chat(self) -> ChatPanel:
        return self.query_one(ChatPanel)

    async def refresh_lists(self) -> None:
        """Reload the sessions and runs panes (and the inspected run) from the stores."""
        current = self.chat.session_id
        if self.backend.can_list_sessions:
            pane = self.query_one(SessionsPane)
            pane.show(await self.backend.sessions(pane.query_text), current)
        if self.backend.can_list_runs:
            runs = await self.backend.runs()
            titles = {info.session_id: info.title for info in await self.backend.sessions()}
            self.query_one(RunsPane).show(runs, titles)
        await self.inspect(self.inspected)

    async def inspect(self, run_id: str | None) -> None:
        self.inspected = run_id
        snapshot = await self.backend.snapshot(run_id) if run_id else None
        self.query_one(CheckpointInspector).show(snapshot)

    def focus_pane(self, step: int) -> None:
        """Move focus to the next (or previous) pane."""
        panes = [w for selector in PANES for w in self.query(selector)]
        if not panes:
            return
        focused = self.focused
        index = next((i for i, pane in enumerate(panes) if focused is pane or (focused and pane in focused.ancestors)),
                     -1)
        panes[(index + step) % len(panes)].focus()

    # -- messages from the panes ---------------------------------------------------------

    @on(ChatPanel.Changed)
    async def _chat_changed(self, event: ChatPanel.Changed) -> None:
        if event.run_id:
            self.inspected = event.run_id
        await self.refresh_lists()

    @on(SessionsPane.Selected)
    async def _session_selected(self, event: SessionsPane.Selected) -> None:
        await self.open_session(event.session_id)

    @on(SessionsPane.Action)
    def _session_action(self, event: SessionsPane.Action) -> None:
        if event.action == "filter":
            self.run_worker(self.refresh_lists(), exclusive=True, group="lists")
        elif event.session_id:
            self._session_flow(event.action, event.session_id)

    @work(group="dialog")
    async def _session_flow(self, action: str, session_id: str) -> None:
        try:
            await self._act_on_session(action, session_id)
        except LoviaError as exc:  # refused (a run of it executes elsewhere) or a store error: say so, stay up
            self.notify(str(exc), severity="error")
        await self.refresh_lists()

    async def _act_on_session(self, action: str, session_id: str) -> None:
        info = await self.backend.session_info(session_id)
        title = info.title if info else session_id
        if action == "rename":
            new_title = await self.app.push_screen_wait(PromptScreen("New title for this session:", title))
            if new_title is not None:
                await self.backend.rename(session_id, new_title)
                if self.chat.session_id == session_id:
                    await self.chat.refresh_title()
        elif action == "delete":
            question = (f"Delete the session “{title}”?\nIts {info.entry_count if info else 0} entries and any "
                        "interrupted runs of it are removed for good.")
            if not await self.app.push_screen_wait(ConfirmScreen(question, confirm="Delete")):
                return
            if self.chat.running and self.chat.session_id == session_id:
                self.notify("Stop the running answer first (escape).", severity="warning")
                return
            await self.backend.delete_session(session_id)
            if self.chat.session_id == session_id:
                await self.chat.open_session(None)

    @on(RunsPane.Highlighted)
    async def _run_highlighted(self, event: RunsPane.Highlighted) -> None:
        await self.inspect(event.run_id)

    @on(RunsPane.Action)
    def _run_action(self, event: RunsPane.Action) -> None:
        self._run_flow(event.action, event.run_id)

    @work(group="dialog")
    async def _run_flow(self, action: str, run_id: str) -> None:
        try:
            if action == "resume":
                await self.chat.resume(run_id)
                self.query_one("#transcript").focus()
            elif action == "discard":
                if await self.app.push_screen_wait(ConfirmScreen(
                        "Discard this run? Its checkpoint is deleted; nothing of it reaches the session.",
                        confirm="Discard")):
                    await self.backend.discard(run_id)
                    self.notify("Run discarded.")
            elif action == "finalize" and await self.app.push_screen_wait(ConfirmScreen(
                    "Finalize this run into its session as it stands? Tool calls without results are "
                    "dropped so the transcript stays consistent; the checkpoint is then deleted.",
                    confirm="Finalize")):
                session_id, kept = await self.backend.finalize(run_id)
                self.notify(f"Finalized: {kept} entries added to the session.")
                if session_id == self.chat.session_id:
                    await self.chat.open_session(session_id)  # the partial is stored now
        except LoviaError as exc:
            self.notify(str(exc), severity="error")
        await self.refresh_lists()

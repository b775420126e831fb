"""Fixtures for driving the real app with Textual's pilot against a real SQLite file."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from textual import events
from textual.app import App
from textual.worker import WorkerCancelled

from lovia import BUILTIN_TOOLS, Agent, SQLiteCheckpointer, SQLiteSession
from lovia.models import DemoModel
from lovia.tui.app import LoviaApp
from lovia.tui.backend import ChatBackend
from lovia.tui.config import RememberedState
from lovia.tui.session_servers import SessionServers


@pytest.fixture(autouse=True)
def utc_and_no_clipboard(monkeypatch):
    """Times render the same everywhere; pyperclip finds no clipboard program (as on CI)."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    import pyperclip

    def no_clipboard(text):
        raise pyperclip.PyperclipException("no clipboard in tests")

    monkeypatch.setattr(pyperclip, "copy", no_clipboard)
    yield
    time.tzset()


@dataclass(frozen=True)
class Told:
    """One notification the app gave, as the user read it."""

    message: str
    title: str
    severity: str


@pytest.fixture(autouse=True)
def every_notice(monkeypatch):
    """Keep every notification an app gives, for ``told(app)``.

    Textual drops a toast when its timeout passes, so a test that read the toasts still shown
    missed a notice given more than a few seconds earlier on a slow machine.
    """
    shown = App.notify

    def notify(self, message, *, title="", severity="information", timeout=None, markup=True):
        told(self).append(Told(str(message), title, severity))
        return shown(self, message, title=title, severity=severity, timeout=timeout, markup=markup)

    monkeypatch.setattr(App, "notify", notify)


def told(app: App) -> list[Told]:
    """Every notification ``app`` gave since it was made (or since the list was last cleared)."""
    return app.__dict__.setdefault("_told_in_tests", [])


def make_app(db: Path, *, model=None, agent: Agent | None = None, session=None, state_dir: Path | None = None,
             theme: str | None = None, keys: dict[str, tuple[str, ...]] | None = None,
             mcp_servers=(), mcp_on: set[str] | None = None) -> LoviaApp:
    """The app on the SQLite file ``db``; ``mcp_servers`` are offered, those named in ``mcp_on`` (default all) on."""
    agent = agent or Agent(name="assistant", tools=BUILTIN_TOOLS, model=model or DemoModel(delay=0))
    state = RememberedState((state_dir or db.parent) / "state.json")
    on = {server.name for server in mcp_servers} if mcp_on is None else mcp_on
    backend = ChatBackend(session or SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True), agent,
                          mcp=SessionServers(mcp_servers, on_by_default=on, state=state))
    return LoviaApp(backend, model_label="demo (offline)", theme=theme, state=state, keys=keys)


async def wait_for(pilot, predicate, give_up_after: float = 10.0, describe=None) -> None:
    """Let the app run until ``predicate()`` holds (a hang guard gives up after ``give_up_after`` s);
    ``describe()`` says what the app was doing then, for a failure seen once in a long CI run."""
    deadline = time.monotonic() + give_up_after
    while not predicate():
        if time.monotonic() > deadline:
            state = f" ({describe()})" if describe is not None else ""
            raise AssertionError(f"timed out waiting for {getattr(predicate, '__name__', predicate)}{state}")
        await pilot.pause(0.02)


def burst(app: App, text: str) -> None:
    """Letters and spaces arriving together, as a fast typist's reach the app: every key is queued
    before the first is handled (``pilot.press`` lets the app go idle between keys)."""
    for char in text:
        assert char == " " or char.isalnum(), "burst types letters, digits and spaces"
        app.post_message(events.Key("space" if char == " " else char, char))


async def type_and_send(pilot, text: str) -> None:
    app = pilot.app
    app.screen.query_one("#composer").focus()
    await pilot.pause()
    await pilot.press(*text)
    await pilot.press("enter")
    await settle(pilot)


async def settle(pilot) -> None:
    """Wait until every worker (a run, a dialog flow) is done and the screen has caught up."""
    await pilot.pause()
    while pending := [worker for worker in pilot.app.workers if not worker.is_finished]:
        outcomes = await asyncio.gather(*(worker.wait() for worker in pending), return_exceptions=True)
        for outcome in outcomes:  # a worker superseded (exclusive) or whose widget went is cancelled: done
            if isinstance(outcome, BaseException) and not isinstance(outcome, WorkerCancelled):
                raise outcome
    await pilot.pause()

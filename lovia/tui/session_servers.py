"""The MCP servers the app may offer the model, and which are switched on in which session.

The config file's ``[mcp.servers.NAME]`` tables give the servers; ``enabled = false`` (or, for
all but the named ones, ``lovia --mcp NAME``) leaves a server off unless a session switches it
on. A session's switches are remembered in ``state.json`` (only those that differ from the
default), so reopening a session offers the servers it had. Servers start at their first use
by a run and are stopped when the app closes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Sequence
from typing import Any

from lovia.mcp import MCPServer
from lovia.tui.config import RememberedState

SWITCHES_KEY = "mcp_switched"
"""``state.json``'s table of per-session switches: session id -> server name -> on."""


class SessionServers:
    """The app's MCP servers, each on or off per session."""

    def __init__(self, servers: Sequence[MCPServer] = (), *, on_by_default: Iterable[str] = (),
                 state: RememberedState | None = None) -> None:
        self.servers = list(servers)
        self.on_by_default = set(on_by_default)
        self.state = state
        self._switched: dict[str, dict[str, bool]] = self._remembered()

    def _remembered(self) -> dict[str, dict[str, bool]]:
        stored: Any = self.state.load().get(SWITCHES_KEY, {}) if self.state is not None else {}
        if not isinstance(stored, dict):
            return {}
        return {session_id: {name: on for name, on in switches.items() if isinstance(on, bool)}
                for session_id, switches in stored.items() if isinstance(switches, dict)}

    def is_on(self, session_id: str | None, name: str) -> bool:
        """Whether the server ``name`` is offered in ``session_id`` (a new session: the default)."""
        switched = self._switched.get(session_id or "", {})
        return switched.get(name, name in self.on_by_default)

    def switch(self, session_id: str, name: str, on: bool) -> None:
        """Offer the server ``name`` in ``session_id`` from its next run on, or stop offering it; remembered."""
        switches = self._switched.setdefault(session_id, {})
        if on == (name in self.on_by_default):
            switches.pop(name, None)
        else:
            switches[name] = on
        if not switches:
            del self._switched[session_id]
        if self.state is not None:
            self.state.remember(**{SWITCHES_KEY: self._switched})

    def offered(self, session_id: str | None) -> list[MCPServer]:
        """The servers a run in ``session_id`` offers, in the config file's order."""
        return [server for server in self.servers if self.is_on(session_id, server.name)]

    async def stop(self) -> None:
        """Stop every server that was started (their processes end); each is given its own chance."""
        async def stop_one(server: MCPServer) -> None:
            with contextlib.suppress(Exception):
                await server.stop()

        await asyncio.gather(*(stop_one(server) for server in self.servers))

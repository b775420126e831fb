"""ServersScreen: the MCP servers of the config file, their state and tools, on or off in this session (f5).

Each line says a server's name, whether this session offers it, how it is reached (the command
or URL; never its environment, which may hold secrets) and its state: not started yet, running
with so many tools, or why it failed. Below the list, the highlighted server's tools. space
(or enter) switches the server on or off for this session, from its next run on; ``s`` starts it
now, to see its tools before a run needs them.
"""

from __future__ import annotations

import contextlib
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from lovia.mcp import SDK_INSTALL_HINT, MCPServer, MCPServerError, sdk_installed
from lovia.tui import format
from lovia.tui.config import config_path
from lovia.tui.keymap import keymap_of
from lovia.tui.session_servers import SessionServers
from lovia.tui.widgets.lists import StoppingOptionList

EXAMPLE = ('[mcp.servers.files]\ncommand = "npx"\n'
           'args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]')


def state_text(server: MCPServer) -> str:
    """``not started yet`` / ``starting…`` / ``running · 6 tools`` / ``failed: why``."""
    if server.state == "running":
        left_out = f" · {len(server.left_out)} left out" if server.left_out else ""
        return f"running · {format.count(len(server.tools), 'tool')}{left_out}"
    if server.state == "failed":
        return f"failed: {server.error or 'no reason given'}"
    return "starting…" if server.state == "starting" else "not started yet (starts when a run needs it)"


class ServerList(StoppingOptionList):
    """The config file's MCP servers, in its order."""


class ServersScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "switch", "On/off here", id="mcp.switch",
                tooltip="Offer the highlighted server's tools in this session, or stop (enter does it too)"),
        Binding("s", "start", "Start now", id="mcp.start",
                tooltip="Start the highlighted server now and list its tools"),
        Binding("escape", "close", "Close", id="mcp.close"),
    ]

    DEFAULT_CSS = """
    ServersScreen { align: center middle; }
    ServersScreen > Vertical {
        width: 100; max-width: 100%; height: auto; max-height: 100%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    ServersScreen #mcp-title { text-style: bold; padding: 0 1; }
    ServersScreen #mcp-about { color: $text-muted; padding: 0 1; }
    /* a share of the screen: at 80x24 the tools and the key line stay in view below it */
    ServersScreen ServerList { height: auto; max-height: 40vh; border: none; margin-top: 1; }
    ServersScreen #mcp-tools { padding: 0 1; margin-top: 1; height: auto; max-height: 25vh; }
    ServersScreen #mcp-empty { padding: 1 1; color: $text-muted; display: none; }
    ServersScreen.-empty #mcp-empty { display: block; }
    ServersScreen.-empty ServerList, ServersScreen.-empty #mcp-tools { display: none; }
    ServersScreen #mcp-keys { color: $text-muted; padding: 0 1; margin-top: 1; }
    """

    def __init__(self, servers: SessionServers, session_id: str | None) -> None:
        super().__init__()
        self.servers = servers
        self.session_id = session_id

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("MCP servers", id="mcp-title")
            yield Static("The model is offered the tools of the servers on in this session, from its next "
                         "answer on.", id="mcp-about")
            yield ServerList(id="mcp-list")
            yield Static("", id="mcp-tools", markup=False)
            install = "" if sdk_installed() else f"Install the SDK ({SDK_INSTALL_HINT}) and "
            yield Static(f"No MCP servers. {install}{'add' if install else 'Add'} one to the config file "
                         f"({config_path()}), e.g.\n\n{EXAMPLE}", id="mcp-empty", markup=False)
            yield Static(id="mcp-keys")

    def on_mount(self) -> None:
        if self.query_one_optional(ServerList) is None:
            return  # closed before its parts were mounted: the app quit as this opened
        self.show()
        self.query_one(ServerList).focus()

    def show(self) -> None:
        """Draw the list again from the servers' state, keeping the highlight."""
        listing = self.query_one(ServerList)
        highlighted = listing.highlighted
        listing.clear_options()
        listing.add_options([self._option(server) for server in self.servers.servers])
        self.set_class(not self.servers.servers, "-empty")
        keys = keymap_of(self).key_text
        # With no server, switching and starting one have nothing to act on: only the way out is said.
        acting = "" if not self.servers.servers else \
            f"{keys('mcp.switch')}/enter on or off here · {keys('mcp.start')} start now · "
        self.query_one("#mcp-keys", Static).update(f"{acting}{keys('mcp.close')} close")
        if self.servers.servers:
            listing.highlighted = min(highlighted or 0, len(self.servers.servers) - 1)
        self._show_tools()

    def _option(self, server: MCPServer) -> Option:
        on_here = self.servers.is_on(self.session_id, server.name)
        mark = ("● on", "$success") if on_here else ("○ off", "$text-muted")
        how = "stdio" if server.transport == "stdio" else "http"
        details = f"{how}: {format.one_line(server.where, 60)} · {state_text(server)}"
        return Option(Content.assemble((server.name, "bold"), "  ", mark, "\n", (details, "$text-muted")),
                      id=server.name)

    @property
    def highlighted_server(self) -> MCPServer | None:
        index = self.query_one(ServerList).highlighted
        servers = self.servers.servers
        return servers[index] if index is not None and 0 <= index < len(servers) else None

    @on(OptionList.OptionHighlighted)
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        self._show_tools()

    def _show_tools(self) -> None:
        server = self.highlighted_server
        text = ""
        if server is not None and server.state == "failed":
            text = f"{server.name} failed: {server.error or 'no reason given'}. {self._start_key()} tries again."
        elif server is not None and server.tools:
            # What is left out first: at 80x24 a long list of tools is cut at the bottom.
            text = "".join(f"Not offered: {name} ({why})\n" for name, why in server.left_out.items())
            text += "Tools: " + ", ".join(tool.name for tool in server.tools)
        elif server is not None:
            text = f"Its tools are listed once it has started ({self._start_key()} starts it now)."
        self.query_one("#mcp-tools", Static).update(text)

    def _start_key(self) -> str:
        return keymap_of(self).key_text("mcp.start")

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_switch()

    def action_switch(self) -> None:
        server = self.highlighted_server
        if server is None:
            return
        if self.session_id is None:
            self.notify("No session is open: start or open one, then switch its servers here.", severity="warning")
            return
        on_now = not self.servers.is_on(self.session_id, server.name)
        self.servers.switch(self.session_id, server.name, on_now)
        self.notify(f"{server.name} is {'on' if on_now else 'off'} in this session from its next answer.")
        self.show()

    def action_start(self) -> None:
        server = self.highlighted_server
        if server is None:
            return

        async def start_then_show() -> None:
            with contextlib.suppress(MCPServerError):  # its row and the line below the list say why
                await server.start(retry=True)
            if self.is_attached:
                self.show()

        # The app's worker, not this screen's: closing the screen must not kill a start under way
        # (an npx download, say); the row says "starting…" meanwhile (its state is set at once).
        self.app.run_worker(start_then_show(), name=f"start MCP server {server.name}", group="mcp-start")
        self.set_timer(0.05, self.show)

    def action_close(self) -> None:
        self.dismiss(None)

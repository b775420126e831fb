"""The real app in a process of its own, asking an MCP server's tool; killed by the test mid-call.

    python -m tests.tui.mcp_app_child DB CALLS

The app (headless, driven by Textual's pilot) sends "note this", the model calls the test
server's ``record`` tool, and the server holds the call (``LOVIA_TEST_MCP_RECORD_PAUSE``). Once
the call has reached the server (CALLS has its line) the process prints ``IN CALL`` and waits
for its SIGKILL.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from lovia import Agent
from tests.mcp.test_mcp_servers import stdio_server
from tests.tui.conftest import make_app
from tests.tui.test_mcp_in_app import NoteTakingModel

DB, CALLS = Path(sys.argv[1]), Path(sys.argv[2])


async def main() -> None:
    server = stdio_server(CALLS.parent, env={"LOVIA_TEST_MCP_RECORD_PAUSE": "4"})
    app = make_app(DB, agent=Agent("assistant", model=NoteTakingModel()), mcp_servers=[server])
    async with app.run_test(size=(80, 24)) as pilot:
        app.screen.query_one("#composer").focus()
        await pilot.pause()
        await pilot.press(*"note this", "enter")
        deadline = time.monotonic() + 60
        while not CALLS.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        print("IN CALL", flush=True)
        await asyncio.sleep(600)  # the test kills us here


asyncio.run(main())

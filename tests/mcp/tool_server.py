"""A real MCP server written with the official SDK, for lovia's tests: ``python tool_server.py [--http PORT]``.

Its tools cover what a client meets: a plain answer, the request's ``_meta`` echoed back, a
call that is written down (``LOVIA_TEST_MCP_CALLS``, one JSON line a call, for counting how
often a call reached the server), a tool error, a slow call and a server that dies mid-call.
"""

from __future__ import annotations

import json
import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("lovia-test-tools")


def _ids(ctx: Context) -> dict[str, object]:
    meta = ctx.request_context.meta or {}
    return {key: meta.get(key) for key in ("run_id", "call_id")}


@server.tool()
def add(a: int, b: int) -> str:
    """Add two whole numbers."""
    return str(a + b)


@server.tool()
def whoami(ctx: Context) -> str:
    """Say which run and call asked (from the request's metadata)."""
    return json.dumps(_ids(ctx))


@server.tool()
def record(note: str, ctx: Context) -> str:
    """Write the note down, with the run and call that asked, and say so."""
    with open(os.environ["LOVIA_TEST_MCP_CALLS"], "a", encoding="utf-8") as calls:
        calls.write(json.dumps({"note": note, **_ids(ctx), "pid": os.getpid()}) + "\n")
    pause = float(os.environ.get("LOVIA_TEST_MCP_RECORD_PAUSE", "0"))
    time.sleep(pause)  # lets a test kill the client while the call is in flight
    return f"noted: {note}"


@server.tool()
def fail(reason: str) -> str:
    """Always fails, with the reason given."""
    raise ValueError(f"refused: {reason}")


@server.tool()
async def slow(seconds: float) -> str:
    """Answer after ``seconds``."""
    import anyio

    await anyio.sleep(seconds)
    return "done"


@server.tool()
def die() -> str:
    """End the server's process at once, mid-call."""
    os._exit(3)


@server.tool()
def authorization(ctx: Context) -> str:
    """The Authorization header of the HTTP request that carried this call ("none" on stdio)."""
    headers = ctx.headers or {}
    return next((value for name, value in headers.items() if name.lower() == "authorization"), "none")


@server.tool(name="notes.read")
def notes_read() -> str:
    """A name with a dot, as MCP allows and model APIs refuse."""
    return "never offered"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()

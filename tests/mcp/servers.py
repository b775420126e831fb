"""Start the test MCP server (``tool_server.py``, written with the official SDK) for a test."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TOOL_SERVER = Path(__file__).with_name("tool_server.py")


def stdio_command() -> tuple[str, list[str]]:
    """The command and args that start the test server on stdio."""
    return sys.executable, [str(TOOL_SERVER)]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def http_server(env: dict[str, str] | None = None) -> Iterator[str]:
    """The test server on streamable HTTP at 127.0.0.1, in its own process; yields its URL."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(TOOL_SERVER), "--http", str(port)],
                               env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the test MCP server did not start: {process.stderr.read().decode()[-2000:]}") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except OSError:
        return False

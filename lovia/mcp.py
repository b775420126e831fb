"""Model Context Protocol servers as an agent's tools, on the official ``mcp`` SDK (extra ``mcp``).

An :class:`MCPServer` is one server: a command lovia starts and talks to over its stdin and
stdout (``command``, ``args``, ``env``), or a streamable-HTTP endpoint (``url``). Give servers
to an agent (``Agent(mcp_servers=[...])``) and the model is offered their tools, each with the
JSON schema the server declares, under the server's own tool names.

Promises:

- A server starts on first use (the first model turn that offers its tools, or a dangling call
  to it on resume), not when it is made, and :meth:`MCPServer.stop` ends it: a stdio server's
  process is gone when ``stop`` returns. One that exits is started again at its next use.
- A call is a tool call like any other: snapshotted, resumed and replayed as the run's other
  calls are. Each carries the run's ``run_id`` and the call's ``call_id`` in its request's
  ``_meta`` (keys ``run_id`` and ``call_id``), the same ids when a dangling call is run again on
  resume, so a server can recognise a call it has seen.
- What goes wrong becomes the call's error result, which the model sees, never a crash: a server
  that cannot start, one that exits during a call, a call that outlasts ``call_timeout``, and the
  server's own tool errors. The error names the server and what to do; it never quotes the
  call's arguments or the server's environment.

Two servers offering the same tool name (or a server and one of the agent's own tools): the
first keeps it; the later server's tool is left out and named in :attr:`MCPServer.left_out`, so
that a name always means the same tool in a run and on its resume. So is a tool whose name
model APIs refuse.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO, cast

from lovia._urls import shown_url
from lovia.errors import UserError
from lovia.run_state import first_line
from lovia.tools import Tool, ToolContext, ToolError, parse_arguments

if TYPE_CHECKING:
    from mcp import ClientSession

__all__ = ["MCPServer", "MCPServerError", "MCPTool", "ServerState"]

ServerState = Literal["stopped", "starting", "running", "failed"]

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A tool name every OpenAI-compatible API accepts (MCP allows more: dots, 128 characters)."""

NAME_REFUSED = "models take only letters, digits, _ and - in a name, 64 at most"
NAME_TAKEN = "an earlier tool has the name"

SDK_INSTALL_HINT = ("pip install 'mcp>=2.0,<3' (lovia's mcp extra: pip install -e '.[mcp]' in lovia's checkout)")
"""How to install the SDK, by its own name: a package named lovia on PyPI is another project."""


def sdk_installed() -> bool:
    """Whether the MCP SDK can be imported (found, not imported: it loads when a server first starts)."""
    import importlib.util

    return importlib.util.find_spec("mcp") is not None
"""Why a server's tool is in :attr:`MCPServer.left_out`."""

RETRY_FAILED_AFTER = 30.0
"""Seconds a server that failed to start is left alone before its next use tries it again."""

IDLE_CHECK_AFTER = 5.0
"""Seconds of quiet after which a call first pings the server, to start it again if it went away."""


class MCPServerError(UserError):
    """An MCP server could not be started or asked; the message names it and says what to do."""


@dataclass(frozen=True)
class MCPTool(Tool):
    """A tool an MCP server offers; ``server`` is the server's name (shown beside its calls)."""

    server: str = ""
    mcp_server: MCPServer | None = field(default=None, repr=False, compare=False)

    async def invoke(self, ctx: ToolContext[Any], arguments: str) -> str:
        """Send the call to the server with the run's and call's ids; the server checks the arguments.

        Raises :class:`~lovia.tools.ToolArgumentsError` when ``arguments`` is not a JSON object,
        :class:`~lovia.tools.ToolError` with the server's own words when the tool fails, or with
        what went wrong when the server cannot be reached.
        """
        assert self.mcp_server is not None
        return await self.mcp_server.call(self.name, parse_arguments(arguments), run_id=ctx.run_id, call_id=ctx.call_id)


@dataclass(eq=False)
class MCPServer:
    """One MCP server: ``command`` (``args``, ``env``) for stdio, or ``url`` (``headers``) for streamable HTTP.

    ``call_timeout`` bounds one call, ``start_timeout`` the start and the listing of its tools
    (seconds). A stdio server's standard error goes to ``log`` (a file path, appended to), else to
    this process's standard error. ``env`` is added to the few variables the SDK passes on
    (``HOME``, ``PATH`` and the like): a server sees no other variable of this process.
    """

    name: str
    command: str | None = None
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = field(default=None, repr=False)  # may hold secrets: never shown
    url: str | None = field(default=None, repr=False)  # may hold credentials: ``where`` shows it without
    headers: Mapping[str, str] | None = field(default=None, repr=False)  # sent with every HTTP request; secret
    call_timeout: float = 60.0
    start_timeout: float = 30.0
    log: Path | None = None

    state: ServerState = field(default="stopped", init=False)
    error: str | None = field(default=None, init=False)
    """Why the server last failed to start or stopped answering; ``None`` while all is well."""
    tools: list[MCPTool] = field(default_factory=list, init=False)
    """The tools the server offered when it last started."""
    left_out: dict[str, str] = field(default_factory=dict, init=False)
    """Tools of this server not offered, by name, with the reason (see ``Agent.mcp_tools``)."""
    calls: int = field(default=0, init=False)

    _session: ClientSession | None = field(default=None, init=False, repr=False)
    _task: asyncio.Task[None] | None = field(default=None, init=False, repr=False)
    _stop: asyncio.Event | None = field(default=None, init=False, repr=False)
    _stop_asked: asyncio.Event | None = field(default=None, init=False, repr=False)  # stop() was called
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)
    _ready: asyncio.Future[None] | None = field(default=None, init=False, repr=False)
    _failure: tuple[float, str] | None = field(default=None, init=False, repr=False)  # when, and the message
    _last_used: float = field(default=0.0, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.name or not self.name.strip():
            raise UserError("an MCP server needs a name")
        if (self.command is None) == (self.url is None):
            raise UserError(f"MCP server {self.name!r}: give either a command (stdio) or a url (streamable HTTP), "
                            "not both and not neither")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise UserError(f"MCP server {self.name!r}: url must start with http:// or https://")
        if self.headers and self.url is None:
            raise UserError(f"MCP server {self.name!r}: headers go with a url (a streamable-HTTP server); "
                            "a server lovia starts takes env instead")
        self.args = list(self.args)

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    @property
    def where(self) -> str:
        """The command or URL, for lists: no environment, nor the URL's credentials or query (they may hold secrets)."""
        if self.command is not None:
            return " ".join([self.command, *self.args])
        assert self.url is not None
        return shown_url(self.url)

    async def __aenter__(self) -> MCPServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self, *, retry: bool = False) -> list[MCPTool]:
        """Start the server if it is not running, and return its tools.

        Raises :class:`MCPServerError` when it cannot start or does not answer within
        ``start_timeout``; :attr:`state` is then ``"failed"`` and :attr:`error` says why. A server
        that failed is not tried again for :data:`RETRY_FAILED_AFTER` seconds unless ``retry``
        (every model turn would wait for it again): until then this raises its failure at once.
        """
        if self._running():
            return self.tools
        if not retry and self._failure is not None and time.monotonic() - self._failure[0] < RETRY_FAILED_AFTER:
            raise MCPServerError(self._failure[1])
        async with self._lock:
            if self._running():
                return self.tools
            await self._end_task()
            self.state, self.error, self._failure = "starting", None, None
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._ready = ready
            self._stop, self._stop_asked = asyncio.Event(), asyncio.Event()
            self._task = asyncio.create_task(self._serve(ready, self._stop), name=f"lovia-mcp-{self.name}")
            try:
                await asyncio.wait_for(asyncio.shield(ready), self.start_timeout)
            except TimeoutError:
                await self._end_task()
                self._failed(f"did not answer within {self.start_timeout:g} s of starting")
            except asyncio.CancelledError:
                await self._end_task()
                if self.state == "starting":
                    self.state = "stopped"
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise  # the caller was cancelled (a run stopped): the start ends with it
                raise MCPServerError(f"MCP server {self.name!r} was stopped while it started") from None
            except BaseException:
                await self._end_task()
                raise
            self.state, self._last_used = "running", time.monotonic()
            return self.tools

    async def stop(self) -> None:
        """End the session and, for a stdio server, its process; idempotent. A start under way ends at once."""
        if self._stop_asked is not None:  # at once: a call ending meanwhile is told it was stopped
            self._stop_asked.set()
        if self._task is not None and self._ready is not None and not self._ready.done():
            self._task.cancel()  # starting: it would not look at the stop before it answered or timed out
        async with self._lock:
            await self._end_task()
            if self.state != "failed":
                self.state = "stopped"

    def _running(self) -> bool:
        return self.state == "running" and self._task is not None and not self._task.done()

    async def call(self, tool: str, arguments: dict[str, Any], *, run_id: str, call_id: str) -> str:
        """Call ``tool`` with ``arguments``, carrying ``run_id`` and ``call_id`` in the request's ``_meta``.

        Returns the result's text. Raises :class:`~lovia.tools.ToolError` with the server's words
        when the tool reports an error, and when the server cannot start, exits during the call or
        does not answer within ``call_timeout``.
        """
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT, RequestParamsMeta

        try:
            await self.start()
        except MCPServerError as exc:
            raise ToolError(str(exc)) from None
        if time.monotonic() - self._last_used > IDLE_CHECK_AFTER and not await self._still_there():
            # It went away while idle: this call has not gone out, so it goes to the server started again.
            try:
                await self.start()
            except MCPServerError as exc:
                raise ToolError(str(exc)) from None
        # This session's own: a stop, or a restart by another call, must not be taken for this one's end.
        session, task, stop, stop_asked = self._session, self._task, self._stop, self._stop_asked
        if session is None or task is None or stop is None or stop_asked is None or stop.is_set():
            raise ToolError(f"MCP server {self.name!r} was stopped before the call to {tool} went out")
        self.calls += 1
        self._last_used = time.monotonic()
        try:
            result = await session.call_tool(tool, arguments, read_timeout_seconds=self.call_timeout,
                                             meta=cast(RequestParamsMeta, {"run_id": run_id, "call_id": call_id}))
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise ToolError(f"MCP server {self.name!r} did not answer {tool} within {self.call_timeout:g} s; "
                                "the call may still be running there") from None
            if exc.code == CONNECTION_CLOSED and stop_asked.is_set():
                raise ToolError(f"MCP server {self.name!r} was stopped during the call to {tool}") from None
            if exc.code == CONNECTION_CLOSED:
                await self._lost(task, "exited during a call" + self._see_log())
                raise ToolError(f"MCP server {self.name!r} exited during the call to {tool}{self._see_log()}; "
                                "it is started again at its next call") from None
            raise ToolError(f"MCP server {self.name!r} refused the call to {tool}: {exc.message}") from None
        finally:
            self._last_used = time.monotonic()
        text = result_text(result.content, result.structured_content)
        if result.is_error:
            raise ToolError(text or f"{tool} failed on MCP server {self.name!r} (it gave no reason)")
        return text

    async def _still_there(self) -> bool:
        """A ping, after the server was idle: false (and its session ended) when it went away meanwhile."""
        from mcp import MCPError

        session, task = self._session, self._task
        if session is None or task is None:
            return False
        try:
            await asyncio.wait_for(session.send_ping(), min(self.call_timeout, 10.0))
        except (MCPError, TimeoutError):
            await self._lost(task, "stopped answering while idle" + self._see_log())
            return False
        self._last_used = time.monotonic()
        return True

    # -- the session's own task ------------------------------------------------------------------

    async def _serve(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        """Open the transport and the session, list the tools, then hold both open until ``stop``.

        One task enters and leaves the SDK's context managers: they are anyio cancel scopes,
        which must be left in the task that entered them.
        """
        from mcp import ClientSession
        from mcp_types import Implementation

        from lovia import __version__

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(await self._transport(stack))
                session = await stack.enter_async_context(
                    ClientSession(read, write, client_info=Implementation(name="lovia", version=__version__)))
                await session.initialize()
                self.tools = await self._list_tools(session)
                self._session = session
                ready.set_result(None)
                await stop.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(MCPServerError(self._start_error(exc)))
        finally:
            self._session = None
            if not ready.done():  # cancelled while starting
                ready.cancel()

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        if self.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            if not self.headers:
                return streamable_http_client(self.url)
            import httpx2  # the SDK's own HTTP client; headers are given to it, as the SDK documents

            # The SDK's default timeouts: a server may hold a response stream open for long.
            client = httpx2.AsyncClient(headers=dict(self.headers), timeout=httpx2.Timeout(30.0, read=300.0))
            await stack.enter_async_context(client)  # closed after the transport, which is entered after it
            return streamable_http_client(self.url, http_client=client)
        from mcp import StdioServerParameters, stdio_client

        assert self.command is not None
        return stdio_client(StdioServerParameters(command=self.command, args=list(self.args),
                                                  env=dict(self.env) if self.env else None),
                            errlog=self._errlog(stack))

    def _errlog(self, stack: contextlib.AsyncExitStack) -> TextIO:
        """Where a stdio server's standard error goes: its ``log``, else ours when it is a real one."""
        if self.log is not None:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            return stack.enter_context(self.log.open("a", encoding="utf-8"))
        if _has_descriptor(sys.stderr):
            return sys.stderr
        # Under a terminal UI standard error is captured, without a descriptor of its own: the
        # child would write on the UI's terminal. Its messages are dropped instead.
        return stack.enter_context(open(os.devnull, "w", encoding="utf-8"))

    async def _list_tools(self, session: ClientSession) -> list[MCPTool]:
        from mcp_types import PaginatedRequestParams

        tools: list[MCPTool] = []
        self.left_out = {}
        cursor: str | None = None
        while True:
            listed = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            for found in listed.tools:
                if not TOOL_NAME.fullmatch(found.name):
                    self.left_out[found.name] = NAME_REFUSED
                    continue
                schema = dict(found.input_schema or {}) or {"type": "object", "properties": {}}
                tools.append(MCPTool(name=found.name, description=found.description or "", parameters=schema,
                                     function=_not_called, takes_context=True, server=self.name, mcp_server=self))
            cursor = listed.next_cursor
            if not cursor:
                return tools

    async def _end_task(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        if self._stop is not None:
            self._stop.set()
        if self._ready is not None and not self._ready.done():
            task.cancel()  # still starting: it looks at the stop only once it has answered
        try:
            await asyncio.wait_for(asyncio.shield(task), 10)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        except BaseException:
            if not task.done():
                raise
        self._session = None

    async def _lost(self, task: asyncio.Task[None], why: str) -> None:
        """The server of ``task`` went away: end what is left of its session, so the next use starts it again.

        Only if ``task`` is still the server's: another call may have started it again meanwhile.
        """
        async with self._lock:
            if self._task is task:
                await self._end_task()
                self.state, self.error = "failed", why

    def _failed(self, why: str) -> None:
        raise MCPServerError(self._failed_to_start(why, f"{self._see_log()}; {self._fix()}"))

    def _failed_to_start(self, why: str, advice: str) -> str:
        """Record a failed start (state, error, and when, for :data:`RETRY_FAILED_AFTER`); its message."""
        message = f"MCP server {self.name!r} {why}{advice}"
        self.state, self.error, self._failure = "failed", why, (time.monotonic(), message)
        return message

    def _start_error(self, exc: Exception) -> str:
        while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:  # anyio's task groups wrap it
            exc = exc.exceptions[0]
        if isinstance(exc, FileNotFoundError) and self.command is not None:
            return self._failed_to_start(f"could not start: no program {self.command!r} was found",
                                         "; check its command (a program on PATH, or a full path)")
        if self.url is not None and _unreachable(exc):
            # httpx says only "ConnectError: All connection attempts failed": say where, and what it means.
            reason = first_line(str(exc)) or type(exc).__name__
            return self._failed_to_start(f"could not be reached at {self.where} ({reason[:200]})",
                                         "; check its url and that the server is up and listening there")
        detail = (exc.strerror or str(exc)) if isinstance(exc, OSError) else _short(exc)
        return self._failed_to_start(f"could not start: {detail}", f"{self._see_log()}; {self._fix()}")

    def _see_log(self) -> str:
        return f" (its messages are in {self.log})" if self.log is not None and self.command is not None else ""

    def _fix(self) -> str:
        if self.command is not None:
            return "check its command and args, and that it speaks MCP on stdin and stdout"
        return "check its url and that the server is up"


def result_text(content: Sequence[Any], structured: Mapping[str, Any] | None = None) -> str:
    """A tool result's content as the text a model is given: text as is, other kinds named."""
    parts: list[str] = []
    for block in content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {getattr(block, 'mime_type', '')}, {len(getattr(block, 'data', ''))} characters "
                         "of base64 not shown]")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if text is not None else f"[resource {resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource {block.uri}]")
        else:
            parts.append(f"[{kind or 'unknown'} content]")
    if not parts and structured:
        return json.dumps(structured, ensure_ascii=False)
    return "\n".join(parts)


def _not_called(*args: Any, **kwargs: Any) -> Any:  # MCPTool.invoke sends the call to its server instead
    raise AssertionError("an MCP tool is called through its server")


def _unreachable(exc: BaseException) -> bool:
    """Whether an HTTP server's start failed before any answer: no connection, or none in time.

    Told by the class names of the SDK's HTTP client (``httpx`` for its 1.x, ``httpx2`` for 2.x),
    which are the same in both, so lovia imports neither.
    """
    return any(kind.__name__ in ("ConnectError", "ConnectTimeout") for kind in type(exc).__mro__)


def _short(exc: BaseException) -> str:
    text = first_line(str(exc))
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _has_descriptor(stream: TextIO) -> bool:
    try:
        return stream.fileno() >= 0
    except (OSError, ValueError, AttributeError):
        return False

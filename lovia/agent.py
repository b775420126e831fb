"""Agents: instructions, tools, handoffs, a model, guardrails and hooks."""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from lovia.errors import AgentResolutionError
from lovia.tools import RunContext, Tool, ToolSpec

if TYPE_CHECKING:
    from lovia.entries import ToolCall, ToolResult
    from lovia.mcp import MCPServer
    from lovia.models.base import Model
    from lovia.runtime.result import RunResult

__all__ = ["Agent", "Guardrail", "RunHooks", "agent_graph", "handoff_tool_name"]

DepsT = TypeVar("DepsT")

Instructions = str | Callable[[RunContext[Any]], str | Awaitable[str]]
Guardrail = Callable[[RunContext[Any], str], str | Awaitable[str | None] | None]
"""A check on the run's input (input guardrail) or final output (output guardrail).

It returns ``None`` to let the run go on, or a reason (a string) to stop it; the run then
fails with :class:`~lovia.errors.GuardrailTripped` carrying that reason.
"""


class RunHooks:
    """Callbacks around a run; subclass and override what you need. All are no-ops here.

    Hooks run on a run's original execution only: a replay of a completed run does not
    call them again.
    """

    async def on_run_start(self, ctx: RunContext[Any], agent: Agent[Any]) -> None:
        """Before the first model turn of a fresh or resumed run."""

    async def on_tool_start(self, ctx: RunContext[Any], call: ToolCall) -> None:
        """Before a tool executes."""

    async def on_tool_end(self, ctx: RunContext[Any], call: ToolCall, result: ToolResult) -> None:
        """After a tool produced its result (or error)."""

    async def on_handoff(self, ctx: RunContext[Any], source: Agent[Any], target: Agent[Any]) -> None:
        """After control passed from ``source`` to ``target``."""

    async def on_run_end(self, ctx: RunContext[Any], result: RunResult) -> None:
        """After the run completed and was persisted."""


def handoff_tool_name(agent_name: str) -> str:
    """The tool a model calls to hand the conversation to ``agent_name``."""
    return "transfer_to_" + (re.sub(r"[^a-zA-Z0-9_]+", "_", agent_name).strip("_").lower() or "agent")


@dataclass(eq=False)
class Agent(Generic[DepsT]):
    """A named assistant.

    ``instructions`` is a string or a function of the :class:`RunContext` (sync or async),
    rendered at every run start and every resume. ``handoffs`` are agents this one may
    pass control to; the model sees one ``transfer_to_<name>`` tool per target. ``model``
    is a :class:`~lovia.models.base.Model` or a model string; ``None`` uses the configured
    default (``LOVIA_MODEL``, else the offline demo). Names must be unique across the
    handoff graph: resume finds agents by name. ``mcp_servers`` offer their tools beside the
    agent's own (:mod:`lovia.mcp`); each starts at its first use, and whoever made it stops it.
    """

    name: str
    instructions: Instructions = ""
    tools: Sequence[Tool] = ()
    handoffs: Sequence[Agent[DepsT]] = ()
    model: Model | str | None = None
    handoff_description: str = ""
    input_guardrails: Sequence[Guardrail] = ()
    output_guardrails: Sequence[Guardrail] = ()
    hooks: RunHooks | None = None
    mcp_servers: Sequence[MCPServer] = ()

    def __post_init__(self) -> None:
        if not self.name or not self.name.strip():
            raise ValueError("an agent needs a name")
        self.tools = list(self.tools)
        self.handoffs = list(self.handoffs)
        self.mcp_servers = list(self.mcp_servers)

    async def render_instructions(self, ctx: RunContext[DepsT]) -> str:
        """The system prompt for this run, freshly rendered."""
        if callable(self.instructions):
            value = self.instructions(ctx)
            if inspect.isawaitable(value):
                value = await value
            return str(value)
        return self.instructions

    async def mcp_tools(self, extra_servers: Sequence[MCPServer] = (), *, reserved: Iterable[str] = ()) -> list[Tool]:
        """The tools of this agent's MCP servers, then of ``extra_servers``, each server started if it is not running.

        A server that cannot start offers none (its ``state`` and ``error`` say why). A tool whose
        name is taken already (by an own tool, a handoff, a ``reserved`` name such as the runner's
        recall tool, or an earlier server's tool) is left out and named in its server's
        ``left_out``, as the server leaves out names model APIs refuse: a name means one tool, in
        a run and on its resume.
        """
        servers = [*self.mcp_servers, *(s for s in extra_servers if s not in self.mcp_servers)]
        if not servers:
            return []
        from lovia.mcp import NAME_TAKEN, MCPServerError

        async def tools_of(server: MCPServer) -> list[Tool]:
            try:
                return list(await server.start())
            except MCPServerError:
                return []

        listed = await asyncio.gather(*(tools_of(server) for server in servers))
        taken = {spec.name for spec in self.tool_specs()} | set(reserved)
        offered: list[Tool] = []
        for server, tools in zip(servers, listed, strict=True):
            server.left_out = {name: why for name, why in server.left_out.items() if why != NAME_TAKEN}
            for found in tools:
                if found.name in taken:
                    server.left_out[found.name] = NAME_TAKEN
                else:
                    offered.append(found)
                    taken.add(found.name)
        return offered

    def tool_specs(self, extra: Sequence[Tool] = ()) -> list[ToolSpec]:
        """Everything the model is offered: own tools, ``extra`` (its MCP tools), then one transfer tool per handoff."""
        specs = [t.spec for t in (*self.tools, *extra)]
        for target in self.handoffs:
            about = f": {target.handoff_description}" if target.handoff_description else "."
            specs.append(ToolSpec(handoff_tool_name(target.name), f"Hand the conversation to {target.name}{about}",
                                  {"type": "object", "properties": {}, "additionalProperties": False}))
        return specs

    def find_tool(self, name: str, extra: Sequence[Tool] = ()) -> Tool | None:
        """This agent's own tool called ``name``, else the one of ``extra`` (its MCP tools)."""
        return next((t for t in (*self.tools, *extra) if t.name == name), None)

    def handoff_target(self, tool_name: str) -> Agent[DepsT] | None:
        """The agent a ``transfer_to_*`` tool of this agent hands to."""
        return next((a for a in self.handoffs if handoff_tool_name(a.name) == tool_name), None)


def agent_graph(entry: Agent[Any]) -> dict[str, Agent[Any]]:
    """Every agent reachable from ``entry`` through handoffs, by name.

    Raises :class:`AgentResolutionError` if two distinct agents share a name.
    """
    found: dict[str, Agent[Any]] = {}
    stack = [entry]
    while stack:
        agent = stack.pop()
        known = found.get(agent.name)
        if known is agent:
            continue
        if known is not None:
            raise AgentResolutionError(
                f"two different agents are both named {agent.name!r} in the handoff graph of {entry.name!r}; "
                "agent names must be unique there, because a resumed run finds its agent by name"
            )
        found[agent.name] = agent
        stack.extend(agent.handoffs)
    return found

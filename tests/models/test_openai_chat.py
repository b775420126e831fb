"""OpenAIChatModel against a real HTTP server on 127.0.0.1 streaming server-sent events."""

from __future__ import annotations

import socket

import pytest

from lovia import Agent, ModelError, Runner, ToolResult, UserMessage, tool
from lovia.models import ModelRequest, OpenAIChatModel, TextChunk, ToolCallChunk, UsageChunk, resolve_model
from lovia.tools import ToolSpec

from tests.models.sse_server import SSEServer

SECRET = "sk-test-very-secret-key-0123456789"


@pytest.fixture
def server():
    with SSEServer() as running:
        yield running


def model(server, name: str, **kwargs) -> OpenAIChatModel:
    return OpenAIChatModel(name, base_url=server.base_url, api_key=SECRET, retries=1, timeout=10, **kwargs)


async def collect(m: OpenAIChatModel, request: ModelRequest | None = None) -> list:
    request = request or ModelRequest("be brief", [UserMessage(text="hi")])
    return [chunk async for chunk in m.stream(request)]


async def test_text_streams_in_pieces_with_usage(server):
    chunks = await collect(model(server, "text"))
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == "Hello, world"
    assert len([c for c in chunks if isinstance(c, TextChunk)]) == 3
    usage = next(c for c in chunks if isinstance(c, UsageChunk)).usage
    assert (usage.input_tokens, usage.output_tokens) == (11, 7)
    assert chunks[-1].reason == "stop"
    sent = server.requests[0]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert server.headers[0]["authorization"] == f"Bearer {SECRET}"


async def test_tool_call_fragments_are_streamed_and_tools_are_offered(server):
    spec = ToolSpec("add", "Add.", {"type": "object", "properties": {}})
    chunks = await collect(model(server, "tools"), ModelRequest("", [UserMessage(text="add")], [spec]))
    fragments = [c for c in chunks if isinstance(c, ToolCallChunk)]
    assert [(f.index, f.call_id, f.name) for f in fragments][:1] == [(0, "call_A", "add")]
    assert "".join(f.arguments for f in fragments if f.index == 0) == '{"a": 2, "b": 3}'
    assert chunks[-1].reason == "tool_calls"
    assert server.requests[0]["tools"] == [{"type": "function", "function": {
        "name": "add", "description": "Add.", "parameters": {"type": "object", "properties": {}}}}]


async def test_a_full_run_with_parallel_tool_calls_against_the_server(server):
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    class TwoTurns(OpenAIChatModel):
        """The server's 'tools' script first, then its 'text' script."""

        async def stream(self, request):
            self.model = "tools" if not server.requests else "text"
            async for chunk in super().stream(request):
                yield chunk

    agent = Agent(name="bot", model=TwoTurns("tools", base_url=server.base_url, api_key=SECRET), tools=[add])
    result = await Runner.run(agent, "add things")
    assert sorted(e.output for e in result.new_entries if isinstance(e, ToolResult)) == ["2", "5"]
    assert result.final_output == "Hello, world"
    assert result.usage.input_tokens == 22 and result.usage.requests == 2
    second = server.requests[1]["messages"]
    assert second[1]["role"] == "assistant" and [c["id"] for c in second[1]["tool_calls"]] == ["call_A", "call_B"]
    assert {m["tool_call_id"] for m in second[2:4]} == {"call_A", "call_B"} and second[2]["role"] == "tool"


async def test_a_stream_that_dies_half_way_is_a_clear_error(server):
    chunks = []
    with pytest.raises(ModelError, match="stream broke off"):
        async for chunk in model(server, "die").stream(ModelRequest("", [UserMessage(text="hi")])):
            chunks.append(chunk)
    assert [c.text for c in chunks if isinstance(c, TextChunk)] == ["Hello", ", "]  # what arrived was delivered
    assert len(server.requests) == 1  # not retried: text had already been shown


async def test_a_stream_that_dies_before_its_first_token_is_retried(server):
    chunks = await collect(model(server, "die-once"))
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == "Hello, world"
    assert len(server.requests) == 2


async def test_a_stream_without_a_finish_is_an_error(server):
    with pytest.raises(ModelError, match="ended before the model finished"):
        await collect(model(server, "no-finish"))


async def test_401_names_the_key_variable_but_never_the_key(server):
    with pytest.raises(ModelError) as caught:
        await collect(model(server, "auth", api_key_source="MY_KEY_VAR"))
    message = str(caught.value)
    assert "401" in message and "Incorrect API key" in message and "MY_KEY_VAR" in message
    assert SECRET not in message and SECRET not in repr(model(server, "auth"))


@pytest.mark.parametrize("name, expected", [("missing", "not found"), ("overloaded", "500")])
async def test_other_refusals_are_clear(server, name, expected):
    with pytest.raises(ModelError, match=expected):
        await collect(model(server, name))


async def test_a_server_without_stream_options_still_works(server):
    chunks = await collect(model(server, "no-stream-options"))
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == "Hello, world"
    assert "stream_options" not in server.requests[-1]


async def test_a_server_that_is_not_there_is_a_clear_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    m = OpenAIChatModel("x", base_url=f"http://127.0.0.1:{port}/v1", retries=0, timeout=5)
    with pytest.raises(ModelError, match=rf"cannot reach openai:x at http://127.0.0.1:{port}/v1.*Is the server running"):
        await collect(m)


async def test_a_run_whose_model_dies_keeps_what_was_stored(server, tmp_path):
    from lovia import CheckpointOptions, SQLiteCheckpointer, SQLiteSession

    session, checkpointer = SQLiteSession(tmp_path / "c.db"), SQLiteCheckpointer(tmp_path / "c.db")
    await session.append("u1", [UserMessage(text="earlier")], run_id="old")
    with pytest.raises(ModelError):
        await Runner.run(Agent(name="bot", model=model(server, "die")), "hi", session=session, session_id="u1",
                         checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert [e.text for e in await session.load("u1")] == ["earlier"]
    snapshot = await checkpointer.load("r1")
    assert snapshot.head.status == "failed" and "stream broke off" in snapshot.head.error
    retried = await Runner.run(Agent(name="bot", model=model(server, "text")), [], session=session,
                               session_id="u1", checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert retried.final_output == "Hello, world"
    assert [getattr(e, "text", None) for e in await session.load("u1")] == ["earlier", "hi", "Hello, world"]
    await session.close()
    await checkpointer.close()


def test_model_strings(monkeypatch):
    monkeypatch.delenv("LOVIA_BASE_URL", raising=False)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    assert resolve_model("demo").name == "demo"
    openai_model = resolve_model("openai:gpt-4.1-mini")
    assert openai_model.name == "openai:gpt-4.1-mini" and openai_model.base_url is None
    assert resolve_model("ollama:qwen2.5").base_url == "http://127.0.0.1:11434/v1"
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:9999")
    assert resolve_model("ollama:qwen2.5").base_url == "http://gpu-box:9999/v1"
    monkeypatch.setenv("LOVIA_BASE_URL", "http://127.0.0.1:8080/v1")
    assert resolve_model("openai:local").base_url == "http://127.0.0.1:8080/v1"
    from lovia import UserError

    for bad in ("gpt-4", "anthropic:claude"):
        with pytest.raises(UserError, match="openai:NAME"):
            resolve_model(bad)


async def test_openai_without_a_key_says_which_variable_to_set(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("LOVIA_API_KEY", raising=False)
    monkeypatch.delenv("LOVIA_BASE_URL", raising=False)
    with pytest.raises(ModelError, match="set OPENAI_API_KEY"):
        await collect(resolve_model("openai:gpt-4.1-mini"))

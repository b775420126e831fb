"""OpenAIChatModel against a real HTTP server on 127.0.0.1 streaming server-sent events."""

from __future__ import annotations

import socket
import time

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    ModelError,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCall,
    ToolResult,
    UserMessage,
    tool,
)
from lovia.models import (
    ModelRequest,
    OpenAIChatModel,
    RetryChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
    resolve_model,
)
from lovia.runtime import ModelRetrying
from lovia.timing import steps_from_meta
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
    assert "tools" not in sent and "tool_choice" not in sent  # no tools offered: no tool_choice
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


async def test_calls_a_server_numbers_alike_are_told_apart_by_their_ids(server):
    """Every call at index 0: the second's JSON was appended to the first's, one broken call."""
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    class TwoTurns(OpenAIChatModel):
        async def stream(self, request):
            self.model = "same-index" if not server.requests else "text"
            async for chunk in super().stream(request):
                yield chunk

    agent = Agent(name="bot", model=TwoTurns("same-index", base_url=server.base_url, api_key=SECRET), tools=[add])
    result = await Runner.run(agent, "add things")
    calls = [(e.call_id, e.arguments) for e in result.new_entries if isinstance(e, ToolCall)]
    assert calls == [("call_X", '{"a": 2, "b": 3}'), ("call_Y", '{"a": 1, "b": 1}')]
    assert {(e.call_id, e.output) for e in result.new_entries if isinstance(e, ToolResult)} == {
        ("call_X", "5"), ("call_Y", "2")}


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


@pytest.mark.parametrize("name", ["busy", "stall"])
async def test_a_request_that_timed_out_is_not_sent_again(server, name):
    """The client sent it three times (its own retries), each waiting the whole timeout: a local
    server still reading the first copy's prompt got two more to queue behind it."""
    m = OpenAIChatModel(name, base_url=server.base_url, api_key=SECRET, retries=2, timeout=0.5)
    started = time.monotonic()
    with pytest.raises(ModelError, match=rf"^openai:{name}: no reply for 0.5 s .*not sent again"):
        await collect(m)
    assert len(server.requests) == 1 and time.monotonic() - started < 2.5


async def test_a_rate_limit_is_waited_out_as_the_server_asks_and_tried_again(server):
    started = time.monotonic()
    chunks = await collect(model(server, "rate-limited-once"))
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == "Hello, world"
    assert len(server.requests) == 2 and time.monotonic() - started >= 0.2
    # Said before the wait, so it is shown for what it is and not taken for the model's slowness.
    assert chunks[0] == RetryChunk("openai:rate-limited-once is rate limiting requests (429): Rate limit reached.",
                                   0.2)


async def test_a_rate_limited_turn_is_timed_from_the_request_sent_again(server, tmp_path):
    """The wait a 429 asked for was counted as the model's time to first token ("first token 16s")."""
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as checkpointer:
        agent = Agent(name="bot", model=model(server, "rate-limited-once"))
        stream = Runner.stream(agent, "hi", session=session, session_id="s",
                               checkpoint=CheckpointOptions(checkpointer, "r1"))
        events = [event async for event in stream]
        [segment] = await session.segments("s")
    [retrying] = [e for e in events if isinstance(e, ModelRetrying)]
    assert (retrying.agent, retrying.model, retrying.wait) == ("bot", "openai:rate-limited-once", 0.2)
    assert retrying.reason.startswith("openai:rate-limited-once is rate limiting requests (429)")
    refused, answered = steps_from_meta(segment.meta)
    assert refused.cut_off and refused.error and refused.first_token_at is None
    assert answered.started_at >= refused.finished_at + 0.19 and not answered.cut_off
    assert answered.time_to_first_token < 0.15 and answered.turn == refused.turn == 1


async def test_an_error_after_a_retry_that_is_not_retried_does_not_say_how_often(server):
    """A 500, then a timeout: "… not sent again … (asked 2 times)" said both."""
    class ThenBusy(OpenAIChatModel):
        async def _stream_once(self, request):
            self.model = "overloaded" if not server.requests else "busy"
            async for chunk in super()._stream_once(request):
                yield chunk

    with pytest.raises(ModelError) as caught:
        await collect(ThenBusy("overloaded", base_url=server.base_url, api_key=SECRET, retries=2, timeout=0.5))
    assert "no reply for 0.5 s" in str(caught.value) and "asked" not in str(caught.value)
    assert len(server.requests) == 2


async def test_a_query_in_the_base_url_goes_with_every_request(server):
    """The client put the endpoint's path after it: "POST /v1/?token=sk-xchat/completions"."""
    m = OpenAIChatModel("text", base_url=f"{server.base_url}?api-version=2024-06-01&token=sk-x", api_key=SECRET)
    chunks = await collect(m)
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == "Hello, world"
    assert server.paths == ["/v1/chat/completions?api-version=2024-06-01&token=sk-x"]


async def test_a_stream_without_a_finish_is_an_error(server):
    with pytest.raises(ModelError, match="ended before the model finished"):
        await collect(model(server, "no-finish"))


async def test_401_names_the_key_variable_but_never_the_key(server):
    with pytest.raises(ModelError) as caught:
        await collect(model(server, "auth", api_key_source="MY_KEY_VAR"))
    message = str(caught.value)
    assert "401" in message and "Incorrect API key" in message and "MY_KEY_VAR" in message
    assert SECRET not in message and SECRET not in repr(model(server, "auth"))


async def test_a_proxy_s_html_page_is_shown_by_its_title_with_how_often_it_was_asked(server):
    """It showed the page's markup: `answered 502: <html><head><title>502 Bad Gateway</title>...`."""
    with pytest.raises(ModelError) as caught:
        await collect(model(server, "html-502"))
    assert str(caught.value) == ("openai:html-502 answered 502 (asked 2 times): 502 Bad Gateway (an HTML page: a web "
                                 "server or proxy in front of the model server answered)")
    assert len(server.requests) == 2


async def test_a_missing_model_names_the_model_and_where_it_was_asked(server):
    with pytest.raises(ModelError) as caught:
        await collect(model(server, "missing"))
    assert str(caught.value).startswith(f"openai:missing: model or endpoint not found (404) at "
                                        f"{server.base_url}; check the model name (missing) and the base URL: ")


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
    where = rf"http://127.0.0.1:{port}/v1"
    with pytest.raises(ModelError, match=rf"cannot reach openai:x at {where}.*Is the server running"):
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
    with pytest.raises(ModelError, match="set LOVIA_API_KEY or OPENAI_API_KEY in the environment"):
        await collect(resolve_model("openai:gpt-4.1-mini"))


@pytest.mark.parametrize("spec", ["openai:auth", "ollama:auth"])
async def test_a_server_that_wants_a_key_when_none_is_set_is_told_so(server, monkeypatch, spec):
    """Without a key lovia sends a placeholder a server may quote: the error said "check
    OPENAI_API_KEY: Incorrect API key provided: not-needed", as if the user had set that."""
    for name in ("OPENAI_API_KEY", "LOVIA_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ModelError) as caught:
        await collect(resolve_model(spec, base_url=server.base_url))
    wanted = "LOVIA_API_KEY or OPENAI_API_KEY" if spec.startswith("openai") else "LOVIA_API_KEY"
    assert str(caught.value).startswith(f"{spec} refused the request (401): it wants an API key and none is set "
                                        f"(lovia sent a placeholder); set {wanted}: ")
    assert server.headers[-1]["authorization"] == "Bearer not-needed"


@pytest.mark.parametrize("variable", ["LOVIA_API_KEY", "OPENAI_API_KEY"])
async def test_a_refused_key_names_the_variable_it_came_from(server, monkeypatch, variable):
    for name in ("OPENAI_API_KEY", "LOVIA_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, SECRET)
    with pytest.raises(ModelError) as caught:
        await collect(resolve_model("openai:auth", base_url=server.base_url))
    assert f"(401); check {variable}: " in str(caught.value) and SECRET not in str(caught.value)


class Playlist(OpenAIChatModel):
    """Asks for the server's scripts in order, one per request; the last one repeats."""

    def __init__(self, server, *scripts: str, **kwargs) -> None:
        super().__init__(scripts[0], base_url=server.base_url, api_key=SECRET, retries=0, timeout=10, **kwargs)
        self._scripts = list(scripts)

    async def stream(self, request):
        self.model = self._scripts.pop(0) if len(self._scripts) > 1 else self._scripts[0]
        async for chunk in super().stream(request):
            yield chunk


ADDED: list[tuple[int, int]] = []


@tool
def add(a: int, b: int) -> int:
    """Add."""
    ADDED.append((a, b))
    return a + b


async def test_tools_are_offered_with_tool_choice_auto_and_calls_go_back_with_empty_content(server):
    # llama-cpp-python calls no tools without tool_choice, and answers 500 to "content": null.
    agent = Agent(name="bot", model=Playlist(server, "tools", "text"), tools=[add])
    result = await Runner.run(agent, "add things")
    assert result.final_output == "Hello, world"
    assert server.requests[0]["tool_choice"] == "auto"
    assistant = next(m for m in server.requests[1]["messages"] if m["role"] == "assistant")
    assert assistant["content"] == "" and len(assistant["tool_calls"]) == 2


async def test_a_server_that_refuses_tool_choice_is_asked_again_without_it(server):
    m = model(server, "no-tool-choice")
    spec = ToolSpec("add", "Add.", {"type": "object", "properties": {}})
    for _ in range(2):
        chunks = await collect(m, ModelRequest("", [UserMessage(text="add")], [spec]))
        assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == "Hello, world"
    assert ["tool_choice" in sent for sent in server.requests] == [True, False, False]  # remembered


async def test_a_call_cut_off_by_the_token_limit_is_not_run_nor_sent_back_and_the_session_goes_on(server, tmp_path):
    ADDED.clear()
    session, checkpointer = SQLiteSession(tmp_path / "c.db"), SQLiteCheckpointer(tmp_path / "c.db")
    agent = Agent(name="bot", model=Playlist(server, "cut", "text"), tools=[add])
    result = await Runner.run(agent, "add things", session=session, session_id="u1",
                              checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert ADDED == []  # never executed on half its arguments
    cut = next(e for e in result.new_entries if isinstance(e, ToolCall))
    assert cut.arguments == '{"a": 2, "b' and cut.finish_reason == "length"  # stored as the model wrote it
    refusal = next(e for e in result.new_entries if isinstance(e, ToolResult))
    assert refusal.is_error and "cut off at the model's output token limit" in refusal.output
    assert result.final_output == "Hello, world"
    resent = next(m for m in server.requests[1]["messages"] if m["role"] == "assistant")["tool_calls"][0]["function"]
    assert resent == {"name": "add", "arguments": "{}"}  # llama-server refuses unparseable arguments
    stored = await checkpointer.load("r1")
    assert [e.finish_reason for e in stored.entries if isinstance(e, ToolCall)] == ["length"]
    # The next run of the session sends the cut call in its history, and is not refused for it.
    again = await Runner.run(Agent(name="bot", model=model(server, "text"), tools=[add]), "and now?",
                             session=session, session_id="u1")
    assert again.final_output == "Hello, world"
    assert [getattr(e, "finish_reason", None) for e in await session.load("u1") if isinstance(e, ToolCall)] == [
        "length"]
    await session.close()
    await checkpointer.close()


async def test_fastapi_detail_bodies_are_shown(server):
    with pytest.raises(ModelError) as caught:
        await collect(model(server, "detail-auth", api_key_source="MY_KEY_VAR"))
    assert "401" in str(caught.value) and "Invalid API key" in str(caught.value) and "MY_KEY_VAR" in str(caught.value)
    with pytest.raises(ModelError) as caught:
        await collect(model(server, "detail-validation"))
    message = str(caught.value)
    assert "422" in message and "body.messages.1.content: Input should be a valid string" in message
    assert "private words" not in message  # the input a validation error echoes is conversation text


async def test_a_traceback_body_keeps_the_advice_on_the_first_line(server):
    with pytest.raises(ModelError) as caught:
        await collect(model(server, "traceback"))
    first, _, rest = str(caught.value).partition("\n")
    assert first == "openai:traceback answered 500 (asked 2 times): Traceback (most recent call last):"
    assert rest.endswith('TypeError: can only concatenate str (not "NoneType") to str')


async def test_a_server_that_echoes_the_key_never_gets_it_shown_or_stored(server, tmp_path):
    with pytest.raises(ModelError) as caught:
        await collect(model(server, "echo-key"))
    assert SECRET not in str(caught.value) and "rejected credentials: Bearer [redacted]" in str(caught.value)
    db = tmp_path / "c.db"
    checkpointer = SQLiteCheckpointer(db)
    with pytest.raises(ModelError):
        await Runner.run(Agent(name="bot", model=model(server, "echo-key")), "hi",
                         checkpoint=CheckpointOptions(checkpointer, "r1"))
    head = (await checkpointer.load("r1")).head
    assert head.status == "failed" and "[redacted]" in head.error and SECRET not in head.error
    await checkpointer.close()
    assert all(SECRET.encode() not in path.read_bytes() for path in tmp_path.iterdir() if path.is_file())


async def test_a_placeholder_key_is_not_redacted(server, monkeypatch):
    monkeypatch.delenv("LOVIA_API_KEY", raising=False)
    with pytest.raises(ModelError) as caught:
        await collect(resolve_model("ollama:echo-key", base_url=server.base_url))
    assert str(caught.value).startswith("ollama:echo-key refused the request (401)")


async def test_usage_a_server_never_reports_is_unknown_not_zero(server, tmp_path):
    checkpointer = SQLiteCheckpointer(tmp_path / "c.db")
    result = await Runner.run(Agent(name="bot", model=model(server, "ignores-usage")), "hi",
                              checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert result.usage.unknown and (result.usage.requests, result.usage.unreported_requests) == (1, 1)
    assert (await checkpointer.load("r1")).head.usage == result.usage  # durable, not 0
    # Known and unknown turns add up: the known tokens, and how many requests are missing.
    mixed = await Runner.run(Agent(name="bot", model=Playlist(server, "tools", "ignores-usage"), tools=[add]), "go")
    assert (mixed.usage.requests, mixed.usage.unreported_requests, mixed.usage.input_tokens) == (2, 1, 11)
    assert not mixed.usage.known and not mixed.usage.unknown
    await checkpointer.close()


async def test_usage_repeated_on_every_chunk_is_counted_once(server):
    chunks = await collect(model(server, "usage-every-chunk"))
    usages = [c.usage for c in chunks if isinstance(c, UsageChunk)]
    assert [(u.input_tokens, u.output_tokens) for u in usages] == [(11, 3)]

"""What OpenAIChatModel shows of a server's errors, and what it concludes from them.

A real HTTP server on 127.0.0.1 (``sse_server.py``) plays servers that echo the API key, the
request or the conversation back in their errors, and servers that refuse a field by name.
Nothing of the key or the conversation may reach the error message (and so the transcript and
the checkpoint's ``head.error``); an unrelated refusal must not switch a field off for good.
"""

from __future__ import annotations

import socket
from urllib.parse import quote

import pytest

from lovia import Agent, CheckpointOptions, ModelError, Runner, SQLiteCheckpointer, UserMessage
from lovia.cli import DEFAULT_INSTRUCTIONS
from lovia.models import ModelRequest, OpenAIChatModel, TextChunk
from lovia.tools import ToolSpec
from tests.models.sse_server import SSEServer
from tests.models.test_openai_chat import SECRET, collect, model

SPEC = ToolSpec("add", "Add.", {"type": "object", "properties": {}})
INSTRUCTIONS = "You are the private assistant of Alice Example, born 1984 in Leeds."
QUESTION = "How do I set tool_choice and stream_options when I call the OpenAI API?"
PRIVATE = ("Alice Example", "Leeds", "How do I set", "OpenAI API?")


@pytest.fixture
def server():
    with SSEServer() as running:
        yield running


def asking(tools: bool = True) -> ModelRequest:
    """A request whose conversation names both optional fields, as a user asking about the API would."""
    return ModelRequest(INSTRUCTIONS, [UserMessage(text=QUESTION)], [SPEC] if tools else [])


async def error_of(m: OpenAIChatModel, request: ModelRequest | None = None) -> str:
    with pytest.raises(ModelError) as caught:
        await collect(m, request or asking())
    return str(caught.value)


# -- the API key -------------------------------------------------------------------------------

async def test_a_key_straddling_the_cut_is_redacted_before_the_text_is_cut(server, tmp_path):
    message = await error_of(model(server, "echo-key-straddle"))
    assert "more characters)" in message  # the cut did happen, after the key began
    assert SECRET[:8] not in message and "[redacted]" in message
    checkpointer = SQLiteCheckpointer(tmp_path / "c.db")
    with pytest.raises(ModelError):
        await Runner.run(Agent(name="bot", model=model(server, "echo-key-straddle")), "hi",
                         checkpoint=CheckpointOptions(checkpointer, "r1"))
    head = (await checkpointer.load("r1")).head
    assert head.status == "failed" and SECRET[:8] not in head.error
    await checkpointer.close()


async def test_a_url_encoded_key_is_redacted(server):
    key = "sk-test+very/secret=key&0123456789"
    assert quote(key, safe="") != key
    m = OpenAIChatModel("echo-key-quoted", base_url=server.base_url, api_key=key, retries=0, timeout=10)
    message = await error_of(m)
    assert quote(key, safe="") not in message and "api-key=[redacted]" in message


async def test_a_key_the_server_cut_off_part_way_is_redacted(server):
    message = await error_of(model(server, "echo-key-cut"))
    assert SECRET[: len(SECRET) // 2] not in message and message.endswith("Bearer [redacted]")


async def test_the_public_prefix_and_last_characters_of_a_key_are_not_taken_for_the_key(server):
    """OpenAI names a wrong key by its kind (``sk-proj-``, shared by every project key) and its
    last four characters: neither says anything of the secret, and both help find the key."""
    key = "sk-proj-4fG7hJ2kL9mN0pQ3rS6tU8vWxY1z"
    m = OpenAIChatModel("echo-key-masked", base_url=server.base_url, api_key=key, retries=0, timeout=10)
    message = await error_of(m)
    assert f"Incorrect API key provided: sk-proj-{'*' * 24}xY1z. You can find your API key" in message


# -- the request and the conversation ----------------------------------------------------------

@pytest.mark.parametrize("name, status", [("echo-request-text", "400"), ("echo-request-json", "500"),
                                          ("echo-request-message", "400")])
async def test_an_error_that_echoes_the_request_does_not_quote_the_conversation(server, tmp_path, name, status):
    message = await error_of(model(server, name))
    assert f"answered {status}" in message
    assert not [words for words in PRIVATE if words in message]
    checkpointer = SQLiteCheckpointer(tmp_path / "c.db")
    with pytest.raises(ModelError):
        await Runner.run(Agent(name="bot", model=model(server, name), instructions=INSTRUCTIONS), QUESTION,
                         checkpoint=CheckpointOptions(checkpointer, "r1"))
    head = (await checkpointer.load("r1")).head
    assert head.status == "failed" and not [words for words in PRIVATE if words in head.error]
    await checkpointer.close()


async def test_an_html_page_quoting_the_message_does_not_show_it_once_its_markup_is_taken_out(server):
    """The page's words were joined across the message's short lines before the quotes were looked
    for, and lines under 20 characters were then not found: "Request rejected my card number is ..."."""
    text = "my card number is\n4111 1111 1111 1111\nexpiry 12/29\nplease pay"
    message = await error_of(model(server, "echo-request-html"), ModelRequest("", [UserMessage(text=text)], []))
    assert message.startswith("openai:echo-request-html answered 400: Request rejected [conversation text] (an HTML")
    assert not [word for word in ("card", "4111", "12/29", "please") if word in message]


async def test_an_excerpt_from_the_middle_of_a_message_is_withheld(server):
    request = ModelRequest("", [UserMessage(text="What's the weather in Paris tomorrow at noon?")], [])
    message = await error_of(model(server, "echo-excerpt"), request)
    assert message.endswith(": could not parse [conversation text] as a request")
    quoted = await error_of(model(server, "echo-excerpt-quoted"), request)
    assert quoted.endswith(': invalid input near: "[conversation text]" (position 12)')


async def test_a_server_error_that_begins_like_the_system_prompt_is_shown_as_sent(server):
    """The server's own words are not conversation text because a prompt shares a phrase with them."""
    request = ModelRequest(DEFAULT_INSTRUCTIONS, [UserMessage(text="You are not to use tools. Hello!")], [])
    assert DEFAULT_INSTRUCTIONS.startswith("You are ")
    message = await error_of(model(server, "forbidden"), request)
    assert message.endswith("(403); check OPENAI_API_KEY: You are not allowed to sample from this model")


async def test_an_unknown_json_error_shape_shows_its_fields_not_its_values(server):
    message = await error_of(model(server, "echo-request-json"))
    assert "status" in message and "request" in message and "failed" not in message


# -- refusals by name --------------------------------------------------------------------------

async def test_an_unrelated_400_switches_no_field_off(server):
    m = model(server, "echo-request-text")
    await error_of(m)
    assert len(server.requests) == 1  # the echoed request named both fields; it was not taken as a refusal
    m.model = "text"
    chunks = await collect(m, asking())
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == "Hello, world"
    assert "tool_choice" in server.requests[-1] and "stream_options" in server.requests[-1]


async def test_a_field_is_remembered_as_refused_only_once_the_request_without_it_succeeds(server):
    m = OpenAIChatModel("tool-choice-then-down", base_url=server.base_url, api_key=SECRET, retries=0, timeout=10)
    assert "503" in await error_of(m)
    assert ["tool_choice" in sent for sent in server.requests] == [True, False]  # named in "param": dropped
    await error_of(m)
    assert ["tool_choice" in sent for sent in server.requests] == [True, False, True, False]  # not remembered


async def test_a_fastapi_422_naming_the_field_in_loc_is_a_refusal(server):
    m = model(server, "forbids-stream-options")
    for _ in range(2):
        chunks = await collect(m, asking(tools=False))
        assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == "Hello, world"
    assert ["stream_options" in sent for sent in server.requests] == [True, False, False]


# -- the server's address ----------------------------------------------------------------------

async def test_credentials_in_the_base_url_are_not_shown():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    m = OpenAIChatModel("x", base_url=f"http://alice:hunter2@127.0.0.1:{port}/v1?api-key=s3cr3t-query",
                        retries=0, timeout=5)
    message = await error_of(m, asking(tools=False))
    assert f"cannot reach openai:x at http://127.0.0.1:{port}/v1:" in message
    assert "hunter2" not in message and "alice" not in message and "s3cr3t" not in message
    assert "hunter2" not in repr(m) and "s3cr3t" not in repr(m)
    assert ".." not in message  # the cause's own full stop and the advice's ran together


def test_a_base_url_that_is_no_http_address_is_refused_at_once():
    # Taken, every request failed ("Request URL is missing an 'http://' or 'https://' protocol").
    from lovia.errors import UserError
    from lovia.models import resolve_model

    for bad in ("not a url", "127.0.0.1:8080/v1", "ftp://h/v1", "http:///v1"):
        with pytest.raises(UserError, match="not an http:// or https:// address with a host"):
            resolve_model("openai:x", base_url=bad, api_key="k")
    assert resolve_model("ollama:x", base_url="https://h.example/v1").name

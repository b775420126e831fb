"""A scripted model behind the LiteLLM proxy (see config.yaml beside this file).

The proxy loads this file and serves every model of the config through ``handler``. Each
request is appended, as the handler received it from the proxy, to the JSON-lines file named
by ``LOVIA_TEST_RECORD``, so a test can check what a real third-party server passed on.
Behaviours, by the part of the model name after ``lovia-test/``:

- ``tools``: a ``calculate`` call while the last message is not a tool result, then an answer;
- ``cut``: the same, but the call is cut off by the token limit (half its JSON, ``length``);
- ``traceback``: fails with a multi-line error;
- ``mcp``: an ``add`` call of 2 and 40 when ``add`` is offered (an MCP server's tool), then the
  answer quoting the tool's result.
"""

import json
import os
from collections.abc import AsyncIterator
from typing import Any

from litellm import CustomLLM
from litellm.llms.custom_llm import CustomLLMError
from litellm.types.utils import GenericStreamingChunk

TRACEBACK = """the scripted model crashed
Traceback (most recent call last):
  File "server.py", line 12, in generate
    raise RuntimeError("out of memory")
RuntimeError: out of memory"""


def _chunk(text: str = "", *, call: dict[str, Any] | None = None, finish: str = "") -> GenericStreamingChunk:
    return {"text": text, "tool_use": call, "is_finished": bool(finish), "finish_reason": finish, "usage": None,
            "index": 0}


def _call(call_id: str, arguments: str, name: str = "calculate") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "index": 0,
            "function": {"name": name, "arguments": arguments}}


def _record(model: str, messages: list, optional_params: dict[str, Any] | None) -> None:
    with open(os.environ["LOVIA_TEST_RECORD"], "a", encoding="utf-8") as record:
        record.write(json.dumps({"model": model, "messages": messages, "optional_params": optional_params},
                                default=str) + "\n")


class Scripted(CustomLLM):
    async def astreaming(self, model: str, messages: list, *args: Any, **kwargs: Any) -> AsyncIterator[
            GenericStreamingChunk]:
        _record(model, messages, kwargs.get("optional_params"))
        behaviour = model.rsplit("/", 1)[-1]
        if behaviour == "traceback":
            raise CustomLLMError(status_code=500, message=TRACEBACK)
        if behaviour == "mcp":
            offered = [tool["function"]["name"] for tool in (kwargs.get("optional_params") or {}).get("tools", [])]
            if messages[-1]["role"] == "tool":
                yield _chunk(f"The server says {messages[-1]['content']}.")
                yield _chunk(finish="stop")
            elif "add" in offered:
                yield _chunk(call=_call("call_add", '{"a": 2, "b": 40}', name="add"))
                yield _chunk(finish="tool_calls")
            else:
                yield _chunk("No add tool was offered.")
                yield _chunk(finish="stop")
            return
        if messages[-1]["role"] != "tool":
            if behaviour == "cut":
                yield _chunk(call=_call("call_cut", '{"expression": "12*'))
                yield _chunk(finish="length")
            else:
                yield _chunk(call=_call("call_calc", '{"expression": "6*7"}'))
                yield _chunk(finish="tool_calls")
            return
        yield _chunk("The answer ")
        yield _chunk("is 42.")
        yield _chunk(finish="stop")


handler = Scripted()

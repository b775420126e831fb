"""OpenAIChatModel: any OpenAI-compatible Chat Completions endpoint, streamed.

Works with OpenAI itself and with the servers that speak its protocol: Ollama, llama.cpp,
vLLM, LM Studio. It uses the official ``openai`` client. The API key is read when the
model is made and is never logged or shown; error messages name only the environment
variable it came from.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Sequence

import openai

from lovia.entries import AssistantMessage, Entry, ToolCall, ToolResult, UserMessage
from lovia.errors import ModelError
from lovia.models.base import FinishChunk, ModelChunk, ModelRequest, TextChunk, ToolCallChunk, UsageChunk
from lovia.tools import ToolSpec
from lovia.usage import Usage

__all__ = ["OpenAIChatModel", "to_chat_messages"]


class OpenAIChatModel:
    """Chat Completions with streaming.

    ``retries`` covers failures before anything was streamed: the client retries refused
    connections, 429 and 5xx answers, and a stream that dies before its first token is
    asked for again. A stream that dies after tokens were
    shown raises :class:`ModelError`, and the run can be retried or resumed.
    """

    offline = False

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_source: str = "OPENAI_API_KEY",
        label: str | None = None,
        retries: int = 2,
        timeout: float = 120.0,
        include_usage: bool = True,
    ) -> None:
        self.model = model
        self.name = label or f"openai:{model}"
        self.base_url = base_url
        self._api_key_source = api_key_source
        self._include_usage = include_usage
        self._retries = retries
        self._missing_key = not api_key and base_url is None
        # A local server needs no key, but the client insists on one.
        self._client = openai.AsyncOpenAI(
            api_key=api_key or "not-needed", base_url=base_url, max_retries=retries, timeout=timeout
        )

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIChatModel({self.model!r}, base_url={self.base_url!r})"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        if self._missing_key:
            raise ModelError(
                f"no API key for {self.name}: set {self._api_key_source} in the environment, "
                "or point lovia at a local server (for example --model ollama:qwen2.5)"
            )
        attempt = 0
        while True:
            streamed_anything = False
            try:
                async for chunk in self._stream_once(request):
                    streamed_anything = True
                    yield chunk
                return
            except ModelError as exc:
                retriable = getattr(exc, "retriable", False)
                if streamed_anything or not retriable or attempt >= self._retries:
                    raise
                attempt += 1

    async def _stream_once(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": to_chat_messages(request.instructions, request.messages),
            "stream": True,
        }
        if request.tools:
            kwargs["tools"] = [_tool_param(spec) for spec in request.tools]
        if self._include_usage:
            kwargs["stream_options"] = {"include_usage": True}
        connected = False  # past this point a transport error means the stream broke off
        try:
            try:
                stream = await self._client.chat.completions.create(**kwargs)
            except openai.BadRequestError as exc:
                if "stream_options" not in str(exc) or "stream_options" not in kwargs:
                    raise
                self._include_usage = False  # an older server: ask without it from now on
                del kwargs["stream_options"]
                stream = await self._client.chat.completions.create(**kwargs)
            connected = True
            finish: str | None = None
            async for chunk in stream:
                if getattr(chunk, "usage", None):
                    yield UsageChunk(Usage(
                        requests=1,
                        input_tokens=chunk.usage.prompt_tokens or 0,
                        output_tokens=chunk.usage.completion_tokens or 0,
                    ))
                for choice in chunk.choices or ():
                    delta = choice.delta
                    if delta is not None and delta.content:
                        yield TextChunk(delta.content)
                    for fragment in (delta.tool_calls or ()) if delta is not None else ():
                        function = fragment.function
                        yield ToolCallChunk(
                            index=fragment.index or 0,
                            call_id=fragment.id,
                            name=function.name if function else None,
                            arguments=(function.arguments or "") if function else "",
                        )
                    if choice.finish_reason:
                        finish = choice.finish_reason
            if finish is None:
                raise _model_error(
                    f"{self.name}: the stream ended before the model finished its answer", retriable=True
                )
            yield FinishChunk(finish)
        except ModelError:
            raise
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from None
        except Exception as exc:  # transport errors; their types differ between client versions
            if connected:
                raise _model_error(f"{self.name}: the stream broke off ({_cause(exc)})", retriable=True) from None
            if isinstance(exc, openai.APITimeoutError):
                raise _model_error(f"{self.name} did not answer in time ({self._where()})") from None
            raise _model_error(
                f"cannot reach {self.name} at {self._where()}: {_cause(exc)}. Is the server running?"
            ) from None

    def _where(self) -> str:
        return self.base_url or "api.openai.com"

    def _status_error(self, exc: openai.APIStatusError) -> ModelError:
        status = exc.status_code
        detail = _detail(exc)
        if status in (401, 403):
            return _model_error(
                f"{self.name} refused the request ({status}: {detail}); check {self._api_key_source}"
            )
        if status == 404:
            return _model_error(f"{self.name}: model or endpoint not found ({detail}); check the model name and base URL")
        if status == 429:
            return _model_error(f"{self.name} is rate limiting requests ({detail}); wait and retry")
        return _model_error(f"{self.name} answered {status}: {detail}")


def _model_error(message: str, *, retriable: bool = False) -> ModelError:
    error = ModelError(message)
    error.retriable = retriable  # type: ignore[attr-defined]
    return error


def _detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error")
        message = error.get("message") if isinstance(error, dict) else body.get("message")
        if message:
            return str(message)
    return exc.message


def _cause(exc: BaseException) -> str:
    while exc.__cause__ is not None and exc.__cause__ is not exc:
        exc = exc.__cause__
    return str(exc) or type(exc).__name__


def _tool_param(spec: ToolSpec) -> dict[str, Any]:
    return {"type": "function", "function": {"name": spec.name, "description": spec.description,
                                             "parameters": spec.parameters}}


def to_chat_messages(instructions: str, entries: Sequence[Entry]) -> list[dict[str, Any]]:
    """The transcript as Chat Completions messages.

    Consecutive tool calls join the assistant message before them, as the API expects;
    handoff entries are bookkeeping and are not sent (the transfer call and its result are).
    """
    messages: list[dict[str, Any]] = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    for entry in entries:
        if isinstance(entry, UserMessage):
            messages.append({"role": "user", "content": entry.text})
        elif isinstance(entry, AssistantMessage):
            messages.append({"role": "assistant", "content": entry.text})
        elif isinstance(entry, ToolCall):
            last = messages[-1] if messages else None
            if not (last and last["role"] == "assistant"):
                last = {"role": "assistant", "content": None}
                messages.append(last)
            last.setdefault("tool_calls", []).append({
                "id": entry.call_id, "type": "function",
                "function": {"name": entry.name, "arguments": entry.arguments or "{}"},
            })
        elif isinstance(entry, ToolResult):
            messages.append({"role": "tool", "tool_call_id": entry.call_id, "content": entry.output})
    return messages

"""OpenAIChatModel: any OpenAI-compatible Chat Completions endpoint, streamed.

Works with OpenAI itself and with the servers that speak its protocol: Ollama, llama.cpp
(``llama-server`` and llama-cpp-python), vLLM, LM Studio, the LiteLLM proxy. It uses the
official ``openai`` client. The API key is read when the model is made and is never logged
or shown: error messages name only the environment variable it came from, and a server's
error text that echoes the key has it replaced by ``[redacted]`` before anyone sees it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import openai

from lovia.entries import AssistantMessage, Entry, ToolCall, ToolResult, UserMessage
from lovia.errors import ModelError
from lovia.models.base import FinishChunk, ModelChunk, ModelRequest, TextChunk, ToolCallChunk, UsageChunk
from lovia.tools import ToolSpec
from lovia.usage import Usage

__all__ = ["OpenAIChatModel", "to_chat_messages"]

REDACTED = "[redacted]"
MAX_DETAIL_CHARS = 4000  # a server's error text kept in the message (and so in the checkpoint)
# Request fields a server may refuse by name; then they are left out from then on.
_OPTIONAL_FIELDS = ("stream_options", "tool_choice")


class OpenAIChatModel:
    """Chat Completions with streaming.

    ``retries`` covers failures before anything was streamed: the client retries refused
    connections, 429 and 5xx answers, and a stream that dies before its first token is
    asked for again. A stream that dies after tokens were
    shown raises :class:`ModelError`, and the run can be retried or resumed.

    When tools are offered, ``tool_choice`` is ``"auto"`` (llama-cpp-python calls no tools
    without it); a server that refuses ``tool_choice`` or ``stream_options`` by name is asked
    again without it. Usage is the last the stream reported (some servers repeat a running
    total on every chunk); a server that reports none yields no :class:`UsageChunk`.
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
        self._secret = api_key or None
        self._refused_fields: set[str] = set() if include_usage else {"stream_options"}
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
            raise self._error(
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
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            kwargs["tools"] = [_tool_param(spec) for spec in request.tools]
            kwargs["tool_choice"] = "auto"
        connected = False  # past this point a transport error means the stream broke off
        try:
            stream = await self._create(kwargs)
            connected = True
            finish: str | None = None
            usage: Usage | None = None
            async for chunk in stream:
                if getattr(chunk, "usage", None):
                    usage = Usage(
                        requests=1,
                        input_tokens=chunk.usage.prompt_tokens or 0,
                        output_tokens=chunk.usage.completion_tokens or 0,
                    )
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
                raise self._error(
                    f"{self.name}: the stream ended before the model finished its answer", retriable=True
                )
            if usage is not None:
                yield UsageChunk(usage)
            yield FinishChunk(finish)
        except ModelError:
            raise
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from None
        except Exception as exc:  # transport errors; their types differ between client versions
            if connected:
                raise self._error(f"{self.name}: the stream broke off ({_cause(exc)})", retriable=True) from None
            if isinstance(exc, openai.APITimeoutError):
                raise self._error(f"{self.name} did not answer in time ({self._where()})") from None
            raise self._error(
                f"cannot reach {self.name} at {self._where()}: {_cause(exc)}. Is the server running?"
            ) from None

    async def _create(self, kwargs: dict[str, Any]) -> Any:
        """Open the stream; a field the server refuses by name is dropped, for this and later requests."""
        for name in self._refused_fields:
            kwargs.pop(name, None)
        while True:
            try:
                return await self._client.chat.completions.create(**kwargs)
            except openai.BadRequestError as exc:
                said = f"{exc} {_body_text(exc.body)}"
                refused = next((f for f in _OPTIONAL_FIELDS if f in kwargs and f in said), None)
                if refused is None:
                    raise
                self._refused_fields.add(refused)
                del kwargs[refused]

    def _where(self) -> str:
        return self.base_url or "api.openai.com"

    def _status_error(self, exc: openai.APIStatusError) -> ModelError:
        # The advice comes first and the server's text last: a multi-line traceback then
        # leaves the advice on the first line, the one a transcript shows collapsed.
        status = exc.status_code
        detail = _detail(exc)
        if status in (401, 403):
            return self._error(f"{self.name} refused the request ({status}); check {self._api_key_source}: {detail}")
        if status == 404:
            return self._error(
                f"{self.name}: model or endpoint not found (404); check the model name and base URL: {detail}"
            )
        if status == 429:
            return self._error(f"{self.name} is rate limiting requests (429); wait and retry: {detail}")
        return self._error(f"{self.name} answered {status}: {detail}")

    def _error(self, message: str, *, retriable: bool = False) -> ModelError:
        """A :class:`ModelError` whose message never holds the API key, whatever a server echoed."""
        if self._secret:
            message = message.replace(self._secret, REDACTED)
        error = ModelError(message)
        error.retriable = retriable  # type: ignore[attr-defined]
        return error


def _detail(exc: openai.APIStatusError) -> str:
    """What the server said, from any of the error bodies servers send, cut to a sane length."""
    text = _body_text(exc.body) or exc.message
    if len(text) > MAX_DETAIL_CHARS:
        text = f"{text[:MAX_DETAIL_CHARS]}… ({len(text) - MAX_DETAIL_CHARS} more characters)"
    return text


def _body_text(body: object) -> str:
    """The message in an error body.

    OpenAI and most servers: ``{"error": {"message": ...}}`` (the client unwraps ``error``).
    FastAPI servers (llama-cpp-python, vLLM's and LiteLLM's routes): ``{"detail": "..."}``, or
    ``{"detail": [{"loc": [...], "msg": ...}]}`` for a request that failed validation; the
    offending input those items carry is left out. Others send plain text.
    """
    if isinstance(body, str):
        return body.strip()
    if isinstance(body, list):
        return "; ".join(filter(None, (_body_text(item) for item in body)))
    if not isinstance(body, dict):
        return ""
    if "msg" in body:  # one FastAPI validation error
        where = ".".join(str(part) for part in body.get("loc") or ())
        return f"{where}: {body['msg']}" if where else str(body["msg"])
    for key in ("message", "detail", "error"):
        text = _body_text(body.get(key))
        if text:
            return text
    return json.dumps(body, ensure_ascii=False) if body else ""


def _cause(exc: BaseException) -> str:
    while exc.__cause__ is not None and exc.__cause__ is not exc:
        exc = exc.__cause__
    return str(exc) or type(exc).__name__


def _tool_param(spec: ToolSpec) -> dict[str, Any]:
    return {"type": "function", "function": {"name": spec.name, "description": spec.description,
                                             "parameters": spec.parameters}}


def to_chat_messages(instructions: str, entries: Sequence[Entry]) -> list[dict[str, Any]]:
    """The transcript as Chat Completions messages, in the form every server accepts.

    Consecutive tool calls join the assistant message before them, as the API expects;
    handoff entries are bookkeeping and are not sent (the transfer call and its result are).
    A call's arguments that are not a JSON object (cut off by the token limit, say) are sent
    as ``{}``: llama-server refuses every request whose history holds unparseable arguments,
    and the call's error result already tells the model what went wrong. The stored entry
    is not changed.
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
                # "" and not null: llama-cpp-python's server answers 500 to a null content,
                # and a message without content fails chat templates that read it; OpenAI,
                # llama-server, vLLM, Ollama and LiteLLM all take "" beside tool_calls.
                last = {"role": "assistant", "content": ""}
                messages.append(last)
            last.setdefault("tool_calls", []).append({
                "id": entry.call_id, "type": "function",
                "function": {"name": entry.name, "arguments": _sendable_arguments(entry)},
            })
        elif isinstance(entry, ToolResult):
            messages.append({"role": "tool", "tool_call_id": entry.call_id, "content": entry.output})
    return messages


def _sendable_arguments(call: ToolCall) -> str:
    try:
        call.parsed_arguments()
    except ValueError:
        return "{}"
    return call.arguments or "{}"

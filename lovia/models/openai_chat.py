"""OpenAIChatModel: any OpenAI-compatible Chat Completions endpoint, streamed.

Works with OpenAI itself and with the servers that speak its protocol: Ollama, llama.cpp
(``llama-server`` and llama-cpp-python), vLLM, LM Studio, the LiteLLM proxy. It uses the
official ``openai`` client. The API key is read when the model is made and is never logged
or shown: error messages name only the environment variable it came from, and a server's
error text that echoes the key (whole, URL-encoded or cut off) has it replaced by ``[redacted]``
before anyone sees it; so do credentials written into ``base_url``.

A server's error text goes into the transcript and the checkpoint, so only its message is
kept: the message fields of a JSON body (an unknown JSON shape is shown by its field names),
or the first lines of a plain-text one, and any part of the conversation it quotes is replaced
by ``[conversation text]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

import openai

from lovia.entries import AssistantMessage, Entry, ToolCall, ToolResult, UserMessage
from lovia.errors import ModelError
from lovia.models.base import FinishChunk, ModelChunk, ModelRequest, TextChunk, ToolCallChunk, UsageChunk
from lovia.tools import ToolSpec
from lovia.usage import Usage

__all__ = ["OpenAIChatModel", "to_chat_messages"]

REDACTED = "[redacted]"
WITHHELD = "[conversation text]"
MAX_DETAIL_CHARS = 4000  # a server's error text kept in the message (and so in the checkpoint)
MAX_DETAIL_LINES = 40  # enough for a server's traceback
# A copy of a secret or of a conversation text cut off (by the server or by the caps above)
# is still found from this many of its first or last characters on; shorter pieces say too
# little to matter, and looking for them would hide ordinary words.
MIN_COPY_CHARS = 8
# Request fields a server may refuse by name; then they are left out from then on.
_OPTIONAL_FIELDS = ("stream_options", "tool_choice")


class OpenAIChatModel:
    """Chat Completions with streaming.

    ``retries`` covers failures before anything was streamed: the client retries refused
    connections, 429 and 5xx answers, and a stream that dies before its first token is
    asked for again. A stream that dies after tokens were
    shown raises :class:`ModelError`, and the run can be retried or resumed.

    When tools are offered, ``tool_choice`` is ``"auto"`` (llama-cpp-python calls no tools
    without it); a server that refuses ``tool_choice`` or ``stream_options`` by name (400 or
    422) is asked again without it, and once that request is taken the field stays out.
    Usage is the last the stream reported (some servers repeat a running total on every
    chunk); a server that reports none yields no :class:`UsageChunk`.
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
        self._hidden = _secret_forms(api_key, base_url)
        self._refused_fields: set[str] = set() if include_usage else {"stream_options"}
        self._retries = retries
        self._missing_key = not api_key and base_url is None
        # A local server needs no key, but the client insists on one.
        self._client = openai.AsyncOpenAI(
            api_key=api_key or "not-needed", base_url=base_url, max_retries=retries, timeout=timeout
        )

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIChatModel({self.model!r}, base_url={self._where()!r})"

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
        conversation = _conversation_texts(kwargs["messages"])
        connected = False  # past this point a transport error means the stream broke off
        try:
            stream = await self._create(kwargs, conversation)
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
            raise self._status_error(exc, conversation) from None
        except Exception as exc:  # transport errors; their types differ between client versions
            if connected:
                raise self._error(f"{self.name}: the stream broke off ({_cause(exc)})", retriable=True) from None
            if isinstance(exc, openai.APITimeoutError):
                raise self._error(f"{self.name} did not answer in time ({self._where()})") from None
            raise self._error(
                f"cannot reach {self.name} at {self._where()}: {_cause(exc)}. Is the server running?"
            ) from None

    async def _create(self, kwargs: dict[str, Any], conversation: Sequence[str]) -> Any:
        """Open the stream. A field the server refuses by name is dropped and the request sent
        again; once a request without it is taken, the field stays out of later requests too.

        Only the error's structured parts count as naming a field: OpenAI's ``param``, a FastAPI
        item's ``loc``, and its message with any quoted conversation taken out. The rest of an
        error body may echo the request, which holds every field name.
        """
        for name in self._refused_fields:
            kwargs.pop(name, None)
        dropped: list[str] = []
        while True:
            try:
                stream = await self._client.chat.completions.create(**kwargs)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                refused = next(
                    (f for f in _OPTIONAL_FIELDS if f in kwargs and _names_field(exc.body, f, conversation)), None
                )
                if refused is None:
                    raise
                dropped.append(refused)
                del kwargs[refused]
                continue
            self._refused_fields.update(dropped)
            return stream

    def _where(self) -> str:
        """The server's address as it may be shown: without user, password or query."""
        if self.base_url is None:
            return "api.openai.com"
        parts = urlsplit(self.base_url)
        return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))

    def _status_error(self, exc: openai.APIStatusError, conversation: Sequence[str]) -> ModelError:
        # The advice comes first and the server's text last: a multi-line traceback then
        # leaves the advice on the first line, the one a transcript shows collapsed.
        status = exc.status_code
        detail = self._detail(exc, conversation)
        if status in (401, 403):
            return self._error(f"{self.name} refused the request ({status}); check {self._api_key_source}: {detail}")
        if status == 404:
            return self._error(
                f"{self.name}: model or endpoint not found (404); check the model name and base URL: {detail}"
            )
        if status == 429:
            return self._error(f"{self.name} is rate limiting requests (429); wait and retry: {detail}")
        return self._error(f"{self.name} answered {status}: {detail}")

    def _detail(self, exc: openai.APIStatusError, conversation: Sequence[str]) -> str:
        """What the server said, safe to show and store: the key taken out before the text is
        cut (a cut through the key would hide it from the search), then cut to a sane length,
        then any conversation text it quotes taken out."""
        # Not exc.message: some client versions put the whole body into it.
        text = self._redact(_body_text(exc.body) or "the server sent no error message")
        return _withhold(_clip(text), conversation, WITHHELD)

    def _redact(self, text: str) -> str:
        for form in self._hidden:  # whole copies first, however short: a key is never an ordinary word
            text = text.replace(form, REDACTED)
        return _withhold(text, self._hidden, REDACTED)

    def _error(self, message: str, *, retriable: bool = False) -> ModelError:
        """A :class:`ModelError` whose message never holds the API key, whatever a server echoed."""
        error = ModelError(self._redact(message))
        error.retriable = retriable  # type: ignore[attr-defined]
        return error


def _secret_forms(api_key: str | None, base_url: str | None) -> list[str]:
    """The key as a server may echo it (as sent, URL-encoded), and the credentials and query of
    ``base_url`` (``user:password@``, ``?api-key=...``)."""
    forms = [api_key, quote(api_key, safe=""), quote_plus(api_key)] if api_key else []
    if base_url:
        parts = urlsplit(base_url)
        forms += [parts.netloc.rpartition("@")[0], parts.query]
    return sorted({form for form in forms if form}, key=len, reverse=True)


def _conversation_texts(messages: Sequence[dict[str, Any]]) -> list[str]:
    """The conversation text in a request's messages: what a server's error must not quote."""
    texts: list[str] = []
    for message in messages:
        if isinstance(message.get("content"), str):
            texts.append(message["content"])
        texts += [call["function"]["arguments"] for call in message.get("tool_calls") or ()]
    return [text for text in texts if text.strip()]


def _withhold(text: str, secrets: Iterable[str], placeholder: str) -> str:
    """``text`` with every copy of each of ``secrets`` replaced by ``placeholder``: whole, JSON-
    escaped (as an echoed request holds it), or cut off, that is any run of its first or of its
    last :data:`MIN_COPY_CHARS` characters or more. A secret shorter than that is replaced only
    as a quoted string, as an echoed request holds it; anywhere, it would hide ordinary words."""
    for secret in secrets:
        if len(secret) < MIN_COPY_CHARS:
            for form in {json.dumps(secret), json.dumps(secret, ensure_ascii=False), repr(secret)}:
                text = text.replace(form, f'"{placeholder}"')
            continue
        for form in {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}:
            text = _replace_leading_runs(text, form, placeholder)
            # The last characters: the same search on the reversed strings.
            text = _replace_leading_runs(text[::-1], form[::-1], placeholder[::-1])[::-1]
    return text


def _replace_leading_runs(text: str, secret: str, placeholder: str) -> str:
    """``text`` with every run of ``secret``'s first characters, at least :data:`MIN_COPY_CHARS`
    of them and as many as match, replaced by ``placeholder``."""
    head = secret[:MIN_COPY_CHARS]
    kept: list[str] = []
    start = 0
    while (found := text.find(head, start)) != -1:
        end = found + len(head)
        while end < len(text) and end - found < len(secret) and text[end] == secret[end - found]:
            end += 1
        kept += [text[start:found], placeholder]
        start = end
    return "".join(kept) + text[start:]


def _clip(text: str) -> str:
    """The first :data:`MAX_DETAIL_LINES` lines of ``text``, and of those the first
    :data:`MAX_DETAIL_CHARS` characters, saying how much was left out."""
    lines = text.splitlines()
    if len(lines) > MAX_DETAIL_LINES:
        text = "\n".join(lines[:MAX_DETAIL_LINES]) + f"\n… ({len(lines) - MAX_DETAIL_LINES} more lines)"
    if len(text) > MAX_DETAIL_CHARS:
        text = f"{text[:MAX_DETAIL_CHARS]}… ({len(text) - MAX_DETAIL_CHARS} more characters)"
    return text


def _body_text(body: object) -> str:
    """The message in an error body.

    OpenAI and most servers: ``{"error": {"message": ...}}`` (the client unwraps ``error``).
    FastAPI servers (llama-cpp-python, vLLM's and LiteLLM's routes): ``{"detail": "..."}``, or
    ``{"detail": [{"loc": [...], "msg": ...}]}`` for a request that failed validation; the
    offending input those items carry is left out. Others send plain text. A JSON body without
    a message is shown by its field names: its values may echo the request.
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
    if not body:
        return ""
    names = [str(name)[:40] for name in list(body)[:12]]
    more = f" and {len(body) - len(names)} more" if len(body) > len(names) else ""
    return f"an error without a message (its fields: {', '.join(names)}{more})"


def _names_field(body: object, field: str, conversation: Sequence[str]) -> bool:
    """Whether an error body (JSON) names ``field`` as what was refused: as OpenAI's ``param``,
    in a FastAPI item's ``loc``, or as a word of its message once quoted conversation is out."""
    if isinstance(body, list):
        return any(_names_field(item, field, conversation) for item in body)
    if not isinstance(body, dict):
        return False  # plain text is not structured enough: it may be the echoed request
    param, loc = body.get("param"), body.get("loc")
    if isinstance(param, str) and re.match(rf"{field}\b", param):
        return True
    if isinstance(loc, list) and field in loc:
        return True
    for key in ("message", "msg", "detail", "error"):
        value = body.get(key)
        if isinstance(value, str):
            if re.search(rf"\b{field}\b", _withhold(value, conversation, WITHHELD)):
                return True
        elif _names_field(value, field, conversation):
            return True
    return False


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

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

import asyncio
import html
import json
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit, urlunsplit

import openai

from lovia._urls import shown_url
from lovia.entries import AssistantMessage, Entry, ToolCall, ToolResult, UserMessage
from lovia.errors import ModelError
from lovia.models.base import (
    DEFAULT_MODEL_TIMEOUT,
    FinishChunk,
    ModelChunk,
    ModelRequest,
    RetryChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from lovia.tools import ToolSpec
from lovia.usage import Usage

__all__ = ["OpenAIChatModel", "to_chat_messages"]

REDACTED = "[redacted]"
WITHHELD = "[conversation text]"
MAX_DETAIL_CHARS = 4000  # a server's error text kept in the message (and so in the checkpoint)
MAX_DETAIL_LINES = 40  # enough for a server's traceback
# A key cut off (by the server or by the caps above) is still found from this many of its
# first or last characters on, counted past its public prefix: fewer say too little of it,
# and the first few of every key of one kind are the same.
MIN_SECRET_CHARS = 12
PUBLIC_KEY_PREFIXES = ("Bearer ", "sk-proj-", "sk-svcacct-", "sk-admin-", "sk-ant-api03-", "sk-ant-", "sk-or-v1-",
                       "sk-", "gsk_", "xai-", "hf_")
# Conversation text in a server's error: a run of this many characters of whole words shared
# with the conversation is an echo of it, and so is a quoted string of this many found in it.
# Shorter shared runs are ordinary phrases that a server's own text shares with many a prompt.
MIN_ECHO_CHARS = 20
MIN_QUOTED_CHARS = 4
# Request fields a server may refuse by name; then they are left out from then on.
_OPTIONAL_FIELDS = ("stream_options", "tool_choice")


class OpenAIChatModel:
    """Chat Completions with streaming.

    ``retries`` covers failures before anything was streamed: a refused connection, a 408,
    409, 429 or 5xx answer, and a stream that dies before its first token are asked for again,
    after 0.5 s, then twice as long each time (up to 8 s), or after the wait a ``Retry-After``
    header asks for (up to a minute; a longer one is not waited out). A request that timed out
    is not sent again: the server is still working on it (a local model reading a long prompt),
    and a second copy would only queue behind the first. A stream that dies after tokens were
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
        timeout: float = DEFAULT_MODEL_TIMEOUT,
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
        self._keyless = not api_key  # a local server's placeholder goes instead: none was set
        self._timeout = timeout
        # A local server needs no key, but the client insists on one. The client retries nothing:
        # it would send a timed-out request again (see stream).
        # A query in the base URL (a proxy's ``?api-version=...``) goes with every request: the
        # client would put the endpoint's path after it ("/v1?token=xchat/completions").
        address, query = _split_query(base_url)
        self._client = openai.AsyncOpenAI(
            api_key=api_key or "not-needed", base_url=address, max_retries=0, timeout=timeout, default_query=query
        )

    @property
    def missing_key(self) -> bool:
        """True when no API key was given for the hosted OpenAI endpoint (no ``base_url``),
        which refuses every request without one; a local server at a ``base_url`` needs none."""
        return self._missing_key

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
                wait = _retry_wait(exc, attempt)
                if streamed_anything or wait is None or attempt >= self._retries:
                    if attempt and wait is not None and not streamed_anything:
                        # Asked as often as it may be, to no avail: a retry from the user may need to wait.
                        exc.args = (_with_attempts(exc, attempt + 1),)
                    raise
                yield RetryChunk(str(exc), wait)  # the wait is not the model's: the runner times it apart
                await asyncio.sleep(wait)
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
        conversation = _Conversation.of(kwargs)
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
            if _timed_out(exc):  # waiting on the server
                # The figure first: a list cuts the message to its first 30-odd characters
                raise self._error(f"{self.name}: no reply for {self._timeout:g} s ({self._where()}); the "
                                  "request was not sent again, since the server may still be working on it. A "
                                  "slow server needs a longer wait: model_timeout in lovia's config file") from None
            if connected:
                raise self._error(f"{self.name}: the stream broke off ({_cause(exc)})", retriable=True) from None
            raise self._error(
                f"cannot reach {self.name} at {self._where()}: {_cause(exc)}. Is the server running?", retriable=True
            ) from None

    async def _create(self, kwargs: dict[str, Any], conversation: _Conversation) -> Any:
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
        return shown_url(self.base_url)

    def _status_error(self, exc: openai.APIStatusError, conversation: _Conversation) -> ModelError:
        # The advice comes first and the server's text last: a multi-line traceback then
        # leaves the advice on the first line, the one a transcript shows collapsed.
        status = exc.status_code
        detail = self._detail(exc, conversation)
        retriable = status in RETRIED_STATUSES or status >= 500
        retry_after = _retry_after(exc.response) if retriable else None
        if status in (401, 403) and self._keyless:
            # The server read lovia's placeholder, and may quote it: not the user's key, none is set.
            advice = (f"{self.name} refused the request ({status}): it wants an API key and none is set (lovia "
                      f"sent a placeholder); set {self._api_key_source}")
        elif status in (401, 403):
            advice = f"{self.name} refused the request ({status}); check {self._api_key_source}"
        elif status == 404:
            advice = (f"{self.name}: model or endpoint not found (404) at {self._where()}; check the model name "
                      f"({self.model}) and the base URL")
        elif status == 429:
            advice, retriable = f"{self.name} is rate limiting requests (429)", True
        else:
            advice = f"{self.name} answered {status}"
        return self._error(advice, detail=detail, retriable=retriable, retry_after=retry_after)

    def _detail(self, exc: openai.APIStatusError, conversation: _Conversation) -> str:
        """What the server said, safe to show and store: the key taken out before the text is
        cut (a cut through the key would hide it from the search), then cut to a sane length,
        then any conversation text it quotes taken out (before the note on what was cut, so a
        quote the cut broke off still counts as one). An HTML page (a proxy's) is then read for
        its words: after the quotes were taken out, as the markup gone would join words the
        search looks for across lines."""
        # Not exc.message: some client versions put the whole body into it.
        text, note = _clip(self._redact(_body_text(exc.body) or "the server sent no error message"))
        withheld = conversation.withhold(text)
        return _html_page_text(withheld) or withheld + note

    def _redact(self, text: str) -> str:
        for form in self._hidden:  # whole copies first, however short: a key is never an ordinary word
            text = text.replace(form, REDACTED)
        for form in self._hidden:
            text = _redact_cut_copies(text, form)
        return text

    def _error(self, message: str, *, detail: str | None = None, retriable: bool = False,
               retry_after: float | None = None) -> ModelError:
        """A :class:`ModelError` whose message never holds the API key, whatever a server echoed:
        ``message``, then what the server said (``detail``) after a colon. ``retriable`` and
        ``retry_after`` (seconds the server asked for) are read by :func:`_retry_wait`."""
        advice = self._redact(message)
        error = ModelError(advice if detail is None else f"{advice}: {self._redact(detail)}")
        error.advice_chars = len(advice)  # type: ignore[attr-defined]
        error.retriable = retriable  # type: ignore[attr-defined]
        error.retry_after = retry_after  # type: ignore[attr-defined]
        return error


RETRIED_STATUSES = frozenset({408, 409, 429})
"""Answers asked for again (as are 5xx): a timeout on the server's side, a conflict, a rate limit."""
MAX_RETRY_AFTER_SECONDS = 60.0
"""The longest ``Retry-After`` waited out; a server asking for more gets the error shown instead."""


def _with_attempts(error: ModelError, attempts: int) -> str:
    """``error``'s message saying how often the request was sent: after its advice, before the
    server's own words (which may run to many lines), else at the end of its first line."""
    message, note = str(error), f" (asked {attempts} times)"
    at = getattr(error, "advice_chars", None)
    if at is None or at > len(message):
        at = len(message.partition("\n")[0])
    return message[:at] + note + message[at:]


def _retry_wait(error: ModelError, attempt: int) -> float | None:
    """Seconds to wait before asking again after ``error`` (the ``attempt``-th retry, from 0); ``None``: do not."""
    if not getattr(error, "retriable", False):
        return None
    asked = getattr(error, "retry_after", None)
    if asked is not None:
        return asked if asked <= MAX_RETRY_AFTER_SECONDS else None
    return min(8.0, 0.5 * 2**attempt)


def _timed_out(exc: BaseException) -> bool:
    """Whether ``exc`` is the client's timeout: ``APITimeoutError`` while the request is sent, the
    HTTP library's own timeout (``httpx`` or, in later clients, ``httpx2``) while the stream is read."""
    return isinstance(exc, (openai.APITimeoutError, TimeoutError)) or any(
        kind.__name__ == "TimeoutException" for kind in type(exc).__mro__)


def _retry_after(response: Any) -> float | None:
    """The seconds a ``Retry-After`` header asks for (a number; an HTTP date is not read); ``None`` without one."""
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return None


def _split_query(base_url: str | None) -> tuple[str | None, dict[str, str] | None]:
    """``base_url`` without its query, and the query's fields (``None`` when it has none)."""
    if base_url is None:
        return None, None
    parts = urlsplit(base_url)
    if not parts.query:
        return base_url, None
    return urlunsplit(parts._replace(query="")), dict(parse_qsl(parts.query, keep_blank_values=True))


def _secret_forms(api_key: str | None, base_url: str | None) -> list[str]:
    """The key as a server may echo it (as sent, URL-encoded, JSON-escaped), and the credentials
    and query of ``base_url`` (``user:password@``, ``?api-key=...``)."""
    forms = [api_key, quote(api_key, safe=""), quote_plus(api_key), json.dumps(api_key)[1:-1]] if api_key else []
    if base_url:
        parts = urlsplit(base_url)
        forms += [parts.netloc.rpartition("@")[0], parts.query]
    return sorted({form for form in forms if form}, key=len, reverse=True)


def _redact_cut_copies(text: str, secret: str) -> str:
    """``text`` with every cut-off copy of ``secret`` replaced by :data:`REDACTED`: a run of its
    first or of its last characters that holds :data:`MIN_SECRET_CHARS` or more of the secret
    beyond its public prefix (:data:`PUBLIC_KEY_PREFIXES`). Shorter runs give nothing away, and
    looking for them would hide the shared prefix of every other key of the same kind."""
    public = len(_public_prefix(secret))
    if len(secret) - public < MIN_SECRET_CHARS:
        return text  # only whole copies can be told apart from other keys' parts
    text = _replace_leading_runs(text, secret, public + MIN_SECRET_CHARS, REDACTED)
    # The last characters: the same search on the reversed strings.
    return _replace_leading_runs(text[::-1], secret[::-1], MIN_SECRET_CHARS, REDACTED[::-1])[::-1]


def _public_prefix(secret: str) -> str:
    """The leading part of ``secret`` that says only what kind of key it is (``sk-proj-``, say)."""
    prefix = ""
    while match := next((p for p in PUBLIC_KEY_PREFIXES if secret.startswith(prefix + p)), None):
        prefix += match  # "Bearer sk-proj-": one public prefix after another
    return prefix


def _replace_leading_runs(text: str, secret: str, min_chars: int, placeholder: str) -> str:
    """``text`` with every run of ``secret``'s first characters, at least ``min_chars`` of them
    and as many as match, replaced by ``placeholder``."""
    head = secret[:min_chars]
    kept: list[str] = []
    start = 0
    while (found := text.find(head, start)) != -1:
        end = found + len(head)
        while end < len(text) and end - found < len(secret) and text[end] == secret[end - found]:
            end += 1
        kept += [text[start:found], placeholder]
        start = end
    return "".join(kept) + text[start:]


@dataclass(frozen=True, slots=True)
class _Conversation:
    """The conversation text of one request (message contents, tool-call arguments), which a
    server's error must not quote, and the request's other strings (roles, field and tool
    names, the model), which it may.

    :meth:`withhold` replaces by :data:`WITHHELD`:

    - every run of :data:`MIN_ECHO_CHARS` or more characters of whole words that also occurs in
      the conversation (as written, JSON- or Python-escaped), wherever it stands: a quote of any
      part of a message, its middle included. Shorter shared runs are ordinary phrases
      ("You are not ...") that a server's own text shares with many a system prompt;
    - every quoted string (in ``"..."`` or ``'...'``, or from a quote to the end of a cut-off
      text) that is a whole conversation text, or has :data:`MIN_QUOTED_CHARS` or more
      characters and occurs in one as whole words, unless it is one of the request's other
      strings or a word of the protocol (``"user"``, ``"auto"``, ``"none"``).
    """

    texts: tuple[str, ...]
    protocol: frozenset[str]

    @classmethod
    def of(cls, request: dict[str, Any]) -> _Conversation:
        """The conversation in the fields of a Chat Completions request."""
        texts: list[str] = []
        protocol: set[str] = set(_PROTOCOL_WORDS)

        def walk(value: object, in_messages: bool) -> None:
            if isinstance(value, dict):
                for key, item in value.items():
                    protocol.add(str(key))
                    if in_messages and key in ("content", "arguments") and isinstance(item, str):
                        texts.append(item)
                    else:
                        walk(item, in_messages)
            elif isinstance(value, list):
                for item in value:
                    walk(item, in_messages)
            elif isinstance(value, str):
                protocol.add(value)

        for key, value in request.items():
            protocol.add(key)
            walk(value, key == "messages")
        return cls(tuple(text for text in texts if text.strip()), frozenset(protocol))

    def withhold(self, text: str) -> str:
        """``text`` with what it quotes of the conversation replaced by :data:`WITHHELD`."""
        forms = {form for conversation in self.texts for form in _escaped_forms(conversation)}
        spans = sorted(_echoed_runs(text, forms) + self._quoted_copies(text, forms))
        kept: list[str] = []
        done = 0
        for start, end in spans:
            if end <= done:
                continue
            if start >= done:
                kept += [text[done:start], WITHHELD]
            done = end
        return "".join(kept) + text[done:]

    def _quoted_copies(self, text: str, forms: set[str]) -> list[tuple[int, int]]:
        verdicts: dict[str, bool] = {}  # an echoed request repeats its quoted strings many times
        spans = []
        for start, end in _quoted_strings(text):
            quoted = text[start:end]
            if quoted not in verdicts:
                verdicts[quoted] = quoted in forms or (
                    len(quoted) >= MIN_QUOTED_CHARS
                    and quoted not in self.protocol
                    and any(_occurs_as_words(quoted, form) for form in forms)
                )
            if verdicts[quoted]:
                spans.append((start, end))
        return spans


# Words of the Chat Completions protocol a server may quote although this request did not send
# them (a validation error listing the allowed values, say); never taken for conversation text.
_PROTOCOL_WORDS = ("system", "developer", "user", "assistant", "tool", "function", "auto", "none", "required",
                   "text", "json_object", "json_schema", "string", "object", "array", "null")


def _escaped_forms(text: str) -> set[str]:
    """``text`` as written and as an echoed request holds it: JSON-escaped, Python-escaped."""
    return {text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1], repr(text)[1:-1]}


def _echoed_runs(text: str, sources: Iterable[str]) -> list[tuple[int, int]]:
    """Where ``text`` repeats :data:`MIN_ECHO_CHARS` or more consecutive characters of one of
    ``sources``, as spans cut back to whole words of ``text``.

    ``text`` is short (a capped error) and the sources may be long (a whole conversation), so
    the index is of ``text``'s windows of that length, and each source is slid past it once."""
    width = MIN_ECHO_CHARS
    windows: dict[str, list[int]] = {}
    for i in range(len(text) - width + 1):
        windows.setdefault(text[i : i + width], []).append(i)
    covered = bytearray(len(text))
    for source in sources:
        for j in range(len(source) - width + 1):
            for i in windows.pop(source[j : j + width], ()):  # popped: each window is marked once
                covered[i : i + width] = b"\x01" * width
            if not windows:
                break
    spans = []
    for run in re.finditer(rb"\x01+", bytes(covered)):
        start, end = _whole_words(text, run.start(), run.end())
        if end - start >= MIN_ECHO_CHARS:
            spans.append((start, end))
    return spans


def _whole_words(text: str, start: int, end: int) -> tuple[int, int]:
    """The span ``start:end`` of ``text`` without a word cut at either end and without the
    spaces around it: a withheld run then never takes half of the server's own word."""
    if 0 < start < end and _is_word(text[start - 1]) and _is_word(text[start]):
        while start < end and _is_word(text[start]):
            start += 1
    if start < end < len(text) and _is_word(text[end]) and _is_word(text[end - 1]):
        while end > start and _is_word(text[end - 1]):
            end -= 1
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _quoted_strings(text: str) -> set[tuple[int, int]]:
    """The spans of ``text`` that may be quoted strings: JSON strings (escapes included), the
    text between any two neighbouring quote marks of one kind on a line (an apostrophe pairs
    the quotes wrongly otherwise), and the text from a line's last quote mark to its end (a
    quote the server or the cap cut off)."""
    spans = {(match.start(1), match.end(1)) for match in re.finditer(r'"((?:[^"\\\n]|\\.)*)"', text)}
    for line in re.finditer(r"[^\n]+", text):
        for mark in "\"'":
            at = [i for i in range(line.start(), line.end()) if text[i] == mark]
            if at:
                spans.update((a + 1, b) for a, b in zip(at, [*at[1:], line.end()], strict=True))
    return {(start, end) for start, end in spans if start < end}


def _occurs_as_words(part: str, text: str) -> bool:
    """Whether ``part`` occurs in ``text`` not as a piece of a longer word."""
    if part not in text:
        return False
    before = r"(?<!\w)" if _is_word(part[0]) else ""
    after = r"(?!\w)" if _is_word(part[-1]) else ""
    return re.search(before + re.escape(part) + after, text) is not None


def _clip(text: str) -> tuple[str, str]:
    """The first :data:`MAX_DETAIL_LINES` lines of ``text``, and of those the first
    :data:`MAX_DETAIL_CHARS` characters; and the note saying how much was left out."""
    lines = text.splitlines()
    more_lines = max(0, len(lines) - MAX_DETAIL_LINES)
    note = ""
    if more_lines:
        text = "\n".join(lines[:MAX_DETAIL_LINES])
        note = f"\n… ({more_lines} more lines)"
    if len(text) > MAX_DETAIL_CHARS:
        also = f" and {more_lines} more lines" if more_lines else ""
        note = f"… ({len(text) - MAX_DETAIL_CHARS} more characters{also})"
        text = text[:MAX_DETAIL_CHARS]
    return text, note


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


_HTML_PAGE = re.compile(r"\A(?:<!doctype html[^>]*>\s*)?<(?:html|head|body)\b", re.IGNORECASE)
_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_HTML_TAG = re.compile(r"<[^>]*>")


def _html_page_text(text: str) -> str | None:
    """What an HTML error page says, when ``text`` is one (a proxy's or web server's: nginx's 502),
    else ``None``: its title, or its text without the markup, and where it came from."""
    if not _HTML_PAGE.match(text):
        return None
    title = _HTML_TITLE.search(text)
    words = html.unescape(_HTML_TAG.sub(" ", title.group(1) if title else text)).split()
    said = " ".join(words) or "an empty page"
    return f"{said} (an HTML page: a web server or proxy in front of the model server answered)"


def _names_field(body: object, field: str, conversation: _Conversation) -> bool:
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
            if re.search(rf"\b{field}\b", conversation.withhold(_clip(value)[0])):
                return True
        elif _names_field(value, field, conversation):
            return True
    return False


def _cause(exc: BaseException) -> str:
    while exc.__cause__ is not None and exc.__cause__ is not exc:
        exc = exc.__cause__
    return str(exc).rstrip(".") or type(exc).__name__  # it is followed by ". " and more


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

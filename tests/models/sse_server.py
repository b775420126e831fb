"""A real OpenAI-compatible HTTP server on 127.0.0.1 that streams server-sent events.

The requested ``model`` picks the behaviour, so one server serves every test:
``text``, ``tools``, ``die`` (breaks the connection mid-stream), ``die-once`` (breaks before
its first event once, then works), ``no-finish`` (ends cleanly but never says it finished),
``no-stream-options`` (a server that rejects ``stream_options``), ``auth`` (401), ``missing`` (404),
``overloaded`` (500), ``same-index`` (two tool calls, both numbered 0, each with an id of its own), ``cut`` (a tool call cut off by the token limit: half its JSON, finish
``length``), ``ignores-usage`` (never reports usage, as a server that ignores ``stream_options``),
``usage-every-chunk`` (a running usage total on every chunk), ``no-tool-choice`` (rejects
``tool_choice``), ``detail-auth`` and ``detail-validation`` (FastAPI's ``{"detail": ...}``
bodies, as llama-cpp-python sends), ``traceback`` (a 500 whose plain-text body is a Python
traceback), ``html-502`` (nginx's HTML page for a 502), ``echo-request-html`` (an HTML page quoting the last
message, its lines as sent) and ``echo-key`` (a 401 whose body echoes the Authorization header), with its variants
``echo-key-straddle`` (the key starts just before the 4000th character of the message),
``echo-key-quoted`` (URL-encoded), ``echo-key-cut`` (the server cut its echo off part way into the key)
and ``echo-key-masked`` (OpenAI's way: the key's first 8 and last 4 characters, stars between).
Errors that echo the request: ``echo-request-text`` (a 400 whose plain-text body quotes the request
body), ``echo-request-json`` (a 500 with an unknown JSON shape holding the request) and
``echo-request-message`` (a 400 whose error message quotes the messages), ``echo-excerpt`` (a 400
quoting the middle of the last message's words, all but its first and last) and ``echo-excerpt-quoted``
(a 400 quoting its third to fifth words in double quotes). ``forbidden`` is OpenAI's 403 for a
model the key may not use. Refusals by name:
``forbids-stream-options`` (FastAPI's 422 naming ``stream_options`` in ``loc``) and
``tool-choice-then-down`` (a 400 naming ``tool_choice`` only in ``param``; without it, 503).
Slow and busy servers: ``busy`` (answers nothing for 3 s, as a local model reading a long prompt),
``stall`` (sends its headers, then nothing for 3 s) and ``rate-limited-once`` (a 429 asking, in
``Retry-After``, for 0.2 s once, then works; ``rate-limited-once-2s`` asks for 2 s).

Like llama-cpp-python and llama-server, it refuses (500) any request whose history holds an
assistant message with ``"content": null`` or tool-call arguments that are not a JSON object.
Every request body is recorded.
"""

from __future__ import annotations

import html
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote

from lovia.models.openai_chat import MAX_DETAIL_CHARS


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


USAGE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
         "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}

SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "text": [_chunk({"role": "assistant", "content": ""}), _chunk({"content": "Hello"}), _chunk({"content": ", "}),
             _chunk({"content": "world"}), _chunk({}, "stop"), USAGE],
    "tools": [
        _chunk({"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": "call_A", "type": "function", "function": {"name": "add", "arguments": ""}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 2,'}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ' "b": 3}'}}]}),
        _chunk({"tool_calls": [{"index": 1, "id": "call_B", "type": "function",
                                "function": {"name": "add", "arguments": '{"a": 1, "b": 1}'}}]}),
        _chunk({}, "tool_calls"), USAGE],
    "same-index": [  # two calls, each whole in one chunk, both numbered 0 (as some servers send them)
        _chunk({"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": "call_X", "type": "function", "function": {"name": "add", "arguments": '{"a": 2,'}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ' "b": 3}'}}]}),
        _chunk({"tool_calls": [{"index": 0, "id": "call_Y", "type": "function",
                                "function": {"name": "add", "arguments": '{"a": 1, "b": 1}'}}]}),
        _chunk({}, "tool_calls"), USAGE],
    "cut": [
        _chunk({"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": "call_cut", "type": "function", "function": {"name": "add", "arguments": '{"a": 2,'}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ' "b'}}]}),
        _chunk({}, "length"), USAGE],
    "usage-every-chunk": [
        {**_chunk({"role": "assistant", "content": "Hel"}), "usage": {"prompt_tokens": 11, "completion_tokens": 1}},
        {**_chunk({"content": "lo"}), "usage": {"prompt_tokens": 11, "completion_tokens": 2}},
        {**_chunk({}, "stop"), "usage": {"prompt_tokens": 11, "completion_tokens": 3}}],
}

NGINX_502 = """<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx/1.25.3</center>
</body>
</html>
"""

TRACEBACK = """Traceback (most recent call last):
  File "/srv/llama_cpp/server/app.py", line 491, in create_chat_completion
    iterator_or_completion = await run_in_threadpool(llama.create_chat_completion, **kwargs)
TypeError: can only concatenate str (not "NoneType") to str"""


class SSEServer:
    """Start with ``with SSEServer() as server``; ``server.base_url`` is its /v1 address."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []  # each request's path, with its query
        self._die_once_served = False
        self._rate_limited = False
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with outer._lock:
                    outer.requests.append(body)
                    outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                    outer.paths.append(self.path)
                outer._respond(self, body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> SSEServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- behaviours --------------------------------------------------------------------------

    def _respond(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        model = body.get("model", "text")
        refusal = _history_refusal(body.get("messages", []))
        if refusal:
            return self._text(handler, 500, refusal)
        errors = {"auth": (401, "Incorrect API key provided."), "missing": (404, "The model does not exist."),
                  "overloaded": (500, "The server is overloaded."),
                  "forbidden": (403, "You are not allowed to sample from this model")}
        if model in errors:
            status, message = errors[model]
            return self._json(handler, status, {"error": {"message": message, "type": "invalid_request_error"}})
        if model == "no-stream-options" and "stream_options" in body:
            return self._json(handler, 400, {"error": {"message": "unknown field: stream_options"}})
        if model == "no-tool-choice" and "tool_choice" in body:
            return self._json(handler, 400, {"error": {"message": "tool_choice is not supported by this server"}})
        if model == "detail-auth":
            return self._json(handler, 401, {"detail": "Invalid API key"})
        if model == "detail-validation":
            return self._json(handler, 422, {"detail": [
                {"type": "string_type", "loc": ["body", "messages", 1, "content"],
                 "msg": "Input should be a valid string", "input": "the user's private words"}]})
        if model == "traceback":
            return self._text(handler, 500, TRACEBACK)
        if model == "html-502":
            return self._text(handler, 502, NGINX_502, "text/html")
        if model == "echo-request-html":  # a page without a title quoting the last message in <pre>
            quoted = html.escape(str(body["messages"][-1]["content"]))
            return self._text(handler, 400, f"<html><body><h1>Request rejected</h1><pre>{quoted}</pre></body></html>",
                              "text/html")
        if model.startswith("echo-key"):
            return self._json(handler, 401, {"error": {"message": _echoed_key(model, handler)}})
        if model == "echo-request-text":
            return self._text(handler, 400, f"could not handle the request {json.dumps(body)}")
        if model == "echo-request-json":
            return self._json(handler, 500, {"status": "failed", "request": body})
        if model == "echo-request-message":
            return self._json(handler, 400, {"error": {
                "message": f"invalid messages: {json.dumps(body['messages'])}", "type": "invalid_request_error"}})
        if model.startswith("echo-excerpt"):
            words = str(body["messages"][-1]["content"]).split()
            if model == "echo-excerpt-quoted":
                message = f'invalid input near: "{" ".join(words[2:5])}" (position 12)'
            else:
                message = f"could not parse {' '.join(words[1:-1])} as a request"
            return self._json(handler, 400, {"error": {"message": message, "type": "invalid_request_error"}})
        if model == "forbids-stream-options" and "stream_options" in body:
            return self._json(handler, 422, {"detail": [
                {"type": "extra_forbidden", "loc": ["body", "stream_options"], "msg": "Extra inputs are not permitted",
                 "input": body["stream_options"]}]})
        if model == "tool-choice-then-down":
            if "tool_choice" in body:
                return self._json(handler, 400, {"error": {
                    "message": "Unsupported parameter.", "type": "invalid_request_error", "param": "tool_choice"}})
            return self._json(handler, 503, {"error": {"message": "The server is loading the model."}})
        if model in ("busy", "stall"):
            if model == "stall":
                self._start_stream(handler)
            time.sleep(3)
            # The client gave up long ago: whatever is sent now meets a closed connection.
            handler.close_connection = True
            return None
        if model in ("rate-limited-once", "rate-limited-once-2s"):
            with self._lock:
                first, self._rate_limited = not self._rate_limited, True
            if first:
                return self._json(handler, 429, {"error": {"message": "Rate limit reached."}},
                                  headers={"Retry-After": "2" if model.endswith("2s") else "0.2"})
            model = "text"
        if model == "die-once":
            with self._lock:
                first, self._die_once_served = not self._die_once_served, True
            if first:
                self._start_stream(handler)
                return self._break(handler)
            model = "text"
        self._start_stream(handler)
        script = SCRIPTS.get(model, SCRIPTS["text"])
        if model == "die":
            for event in script[:3]:
                self._event(handler, event)
            return self._break(handler)
        if model == "no-finish":
            script = [c for c in script if not c["choices"] or not c["choices"][0]["finish_reason"]]
        if model == "ignores-usage":
            script = [c for c in script if c is not USAGE]
        for event in script:
            self._event(handler, event)
        self._write_chunk(handler, b"data: [DONE]\n\n")
        self._write_chunk(handler, b"")

    @staticmethod
    def _json(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any],
              headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    @staticmethod
    def _text(handler: BaseHTTPRequestHandler, status: int, text: str, kind: str = "text/plain") -> None:
        data = text.encode()
        handler.send_response(status)
        handler.send_header("Content-Type", f"{kind}; charset=utf-8")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    @staticmethod
    def _start_stream(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()

    def _event(self, handler: BaseHTTPRequestHandler, event: dict[str, Any]) -> None:
        self._write_chunk(handler, f"data: {json.dumps(event)}\n\n".encode())

    @staticmethod
    def _write_chunk(handler: BaseHTTPRequestHandler, data: bytes) -> None:
        handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        handler.wfile.flush()

    @staticmethod
    def _break(handler: BaseHTTPRequestHandler) -> None:
        """Cut the connection in the middle of a chunk, as a crashing server would."""
        handler.wfile.write(b"40\r\ndata: {\"trunc")
        handler.wfile.flush()
        handler.close_connection = True
        handler.connection.shutdown(2)


def _echoed_key(model: str, handler: BaseHTTPRequestHandler) -> str:
    """A 401 message quoting the request's key, whole or in the form the ``echo-key*`` model names."""
    authorization = handler.headers.get("Authorization", "")
    key = authorization.removeprefix("Bearer ")
    if model == "echo-key-straddle":
        lead = "rejected credentials: "
        return lead + "." * (MAX_DETAIL_CHARS - 10 - len(lead) - len("Bearer ")) + authorization + " (twice)" * 20
    if model == "echo-key-quoted":
        return f"rejected key in https://example.test/v1?api-key={quote(key, safe='')}"
    if model == "echo-key-masked":
        return f"Incorrect API key provided: {key[:8]}{'*' * 24}{key[-4:]}. You can find your API key at https://platform.openai.com/account/api-keys."
    if model == "echo-key-cut":
        return f"rejected credentials: Bearer {key[:len(key) // 2]}"
    return f"rejected credentials: {authorization}"


def _history_refusal(messages: list[dict[str, Any]]) -> str:
    """What llama-cpp-python or llama-server would answer 500 to in a request's history, or ""."""
    for message in messages:
        if message.get("role") != "assistant":
            continue
        if "content" in message and message["content"] is None:
            return TRACEBACK
        for call in message.get("tool_calls") or ():
            try:
                arguments = json.loads(call["function"]["arguments"])
            except ValueError:
                arguments = None
            if not isinstance(arguments, dict):
                return "Failed to parse tool call arguments as JSON"
    return ""

"""A real SSE server whose first answer streams some words and then stalls, as a slow model does.

Model ``drip``: the first request streams ``WORDS`` (``"w0 w1 ... "``), one event each, and
then holds the stream open until :meth:`DripServer.release` (the test kills the client
meanwhile). Every later request streams ``WHOLE`` at once and finishes, with usage.
"""

from __future__ import annotations

import contextlib
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.models.sse_server import USAGE, SSEServer, _chunk

WORD_COUNT = 40
WORDS = [f"w{i} " for i in range(WORD_COUNT)]
PARTIAL = "".join(WORDS)
WHOLE = "The whole answer, asked for again."


class DripServer(SSEServer):
    def __init__(self) -> None:
        super().__init__()
        self._released = threading.Event()
        self._first_served = False
        self.stalled = threading.Event()
        """Set once the first answer streamed its words and stalls."""

    def release(self) -> None:
        self._released.set()

    def __exit__(self, *exc: object) -> None:
        self.release()
        super().__exit__(*exc)

    def _respond(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        if body.get("model") != "drip":
            return super()._respond(handler, body)
        with self._lock:
            first, self._first_served = not self._first_served, True
        self._start_stream(handler)
        with contextlib.suppress(OSError):  # the client was killed: its connection is gone
            if first:
                self._event(handler, _chunk({"role": "assistant", "content": ""}))
                for word in WORDS:
                    self._event(handler, _chunk({"content": word}))
                self.stalled.set()
                self._released.wait(120)
                return self._break(handler)
            for event in (_chunk({"role": "assistant", "content": WHOLE}), _chunk({}, "stop"), USAGE):
                self._event(handler, event)
            self._write_chunk(handler, b"data: [DONE]\n\n")
            self._write_chunk(handler, b"")

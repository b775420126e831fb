"""Stores that count the calls made to them: how tests and ``bench/tui_sessions.py`` count queries.

A real mechanism, not a timing: each public coroutine method of a real SQLite store is wrapped
to count its calls (and, for ``list_sessions``, the sessions it returned) before running as is.
"""

from __future__ import annotations

import functools
import inspect
from collections import Counter
from typing import Any

from lovia.stores import SQLiteCheckpointer, SQLiteSession

LISTING_CALLS = ("list_sessions", "session_info", "list_runs")
"""The store calls the sessions and runs lists make."""


def _counting(base: type) -> type:
    """A subclass of ``base`` whose public coroutine methods count their calls in ``self.calls``."""

    def wrap(name: str, method: Any) -> Any:
        @functools.wraps(method)
        async def counted(self, *args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            result = await method(self, *args, **kwargs)
            if name == "list_sessions":
                self.calls["sessions listed"] += len(result)
            return result

        return counted

    namespace: dict[str, Any] = {
        name: wrap(name, method) for name, method in inspect.getmembers(base, inspect.iscoroutinefunction)
        if not name.startswith("_")
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        base.__init__(self, *args, **kwargs)
        self.calls = Counter()

    namespace["__init__"] = __init__
    return type(f"Counting{base.__name__}", (base,), namespace)


CountingSession: type[SQLiteSession] = _counting(SQLiteSession)
CountingCheckpointer: type[SQLiteCheckpointer] = _counting(SQLiteCheckpointer)


def listing_calls(*stores: Any) -> dict[str, int]:
    """The listing calls (and sessions listed) the stores counted, without the zeros."""
    total: Counter[str] = Counter()
    for store in stores:
        total.update(store.calls)
    return {name: total[name] for name in (*LISTING_CALLS, "sessions listed") if total[name]}


def reset(*stores: Any) -> None:
    for store in stores:
        store.calls.clear()

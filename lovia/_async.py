"""Small asyncio helpers shared by the stores, the runner and the terminal UI."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def shielded(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` to its end even if the caller is cancelled meanwhile.

    Some work must not be abandoned half-way: a transaction on a worker thread, the write that
    marks a run interrupted, a widget's removal (Textual's awaitable removal gathers the removed
    widgets' own message loops, so cancelling its awaiter cancelled those loops, and the app's
    close then failed on their ``CancelledError``). ``awaitable`` runs in a task of its own: a
    removal awaited so from a handler of a widget being removed would wait for that widget's
    own loop, and never end (no caller does that). If the caller was cancelled while waiting, ``CancelledError`` is
    raised only once the work has really ended (its own error, if any, is then dropped: the
    caller asked to stop). Otherwise the result or error is the work's own.
    """
    task = asyncio.ensure_future(awaitable)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done():
                cancelled = True  # we were cancelled, not the work: keep waiting for it
                continue
            raise  # the work itself was cancelled
        except BaseException:
            if cancelled:
                raise asyncio.CancelledError() from None
            raise
        if cancelled:
            raise asyncio.CancelledError()
        return result


async def wait_out(task: asyncio.Future[T]) -> None:
    """Wait until ``task`` has ended, whatever its outcome, which is marked retrieved and dropped.

    For a task this one cancelled and must not leave running (its end may still write). A
    cancellation of the caller that arrives meanwhile is not swallowed: it is raised once
    ``task`` has ended.
    """
    cancelled = False
    while not task.done():
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            cancelled = True
    if not task.cancelled():
        task.exception()  # retrieved: the caller reports it (or not) its own way
    if cancelled:
        raise asyncio.CancelledError()

"""How the UI survives a store that fails while it only reads to refresh what is shown."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from textual.widget import Widget

from lovia.errors import LoviaError


@contextlib.contextmanager
def told_on(node: Widget, doing: str) -> Iterator[None]:
    """Run a refreshing read; a store error becomes a notice and what is shown stays as it was.

    For reads that only bring the screen up to date (lists, the inspector, a title): the app
    must not die of a busy, locked or vanished database file, and nothing is lost by showing
    the last view. ``doing`` completes "Could not ...". Errors of lovia never quote stored text.
    """
    try:
        yield
    except LoviaError as exc:
        node.notify(f"Could not {doing}: {exc}", severity="error")

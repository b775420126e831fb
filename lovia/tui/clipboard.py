"""Copying text: the system clipboard through pyperclip, else the terminal's OSC 52 escape."""

from __future__ import annotations

import pyperclip
from textual.app import App


def copy_text(app: App, text: str) -> str:
    """Copy ``text`` and say how it was done (for the notification)."""
    try:
        pyperclip.copy(text)
        return "to the clipboard"
    except pyperclip.PyperclipException:
        # No clipboard program (a server, an SSH session): ask the terminal to do it.
        app.copy_to_clipboard(text)
        return "through the terminal (OSC 52)"

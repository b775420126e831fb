"""Copying text: the system clipboard through pyperclip, else the terminal's OSC 52 escape."""

from __future__ import annotations

from textual.app import App


def copy_text(app: App, text: str) -> str:
    """Copy ``text`` and say how it was done (for the notification)."""
    # Imported at the first copy, not at start-up: pyperclip loads ctypes (~0.8 MiB resident, 2 ms).
    import pyperclip

    try:
        pyperclip.copy(text)
        return "to the clipboard"
    except pyperclip.PyperclipException:
        # No clipboard program (a server, an SSH session): ask the terminal to do it.
        app.copy_to_clipboard(text)
        return "through the terminal (OSC 52)"

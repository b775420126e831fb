"""A small MCP server for the README's screenshot of the MCP servers screen: notes kept in memory.

    python screenshots/mcp_notes_server.py

Written with the official SDK, run by lovia on stdio like any server in ``[mcp.servers.NAME]``.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")
NOTES: list[str] = []


@server.tool()
def add_note(text: str) -> str:
    """Keep a note."""
    NOTES.append(text)
    return f"note {len(NOTES)} kept"


@server.tool()
def list_notes() -> str:
    """Every note kept, numbered."""
    return "\n".join(f"{number}. {note}" for number, note in enumerate(NOTES, 1)) or "no notes yet"


@server.tool()
def find_notes(words: str) -> str:
    """The notes that hold every one of ``words``."""
    wanted = words.lower().split()
    found = [note for note in NOTES if all(word in note.lower() for word in wanted)]
    return "\n".join(found) or "no note holds all of those words"


if __name__ == "__main__":
    server.run()

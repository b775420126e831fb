"""What a finished run returns."""

from __future__ import annotations

from dataclasses import dataclass, field

from lovia.entries import Entry
from lovia.usage import Usage

__all__ = ["RunResult"]


@dataclass
class RunResult:
    """The outcome of a completed run.

    ``new_entries`` are the run's own entries (what was appended to the session).
    ``replayed`` is true when a completed run's stored result was returned without calling
    the model; its ``finish_reason`` is then ``None`` (it is not persisted).
    """

    final_output: str
    new_entries: list[Entry]
    usage: Usage
    last_agent: str
    run_id: str
    finish_reason: str | None
    session_id: str | None = None
    replayed: bool = False
    warnings: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return self.final_output

"""Token and request accounting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Usage"]


@dataclass(slots=True)
class Usage:
    """Requests made to models and the tokens they reported; ``+=`` folds another in."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def add(self, other: "Usage") -> None:
        """Fold ``other`` into this one."""
        self.requests += other.requests
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens

    def __iadd__(self, other: "Usage") -> "Usage":
        self.add(other)
        return self

    def to_dict(self) -> dict[str, int]:
        """A JSON-ready dict."""
        return {"requests": self.requests, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "Usage":
        """Rebuild from :meth:`to_dict` output; unknown keys are ignored."""
        data = data or {}
        return cls(
            requests=int(data.get("requests", 0)),
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
        )

"""Token and request accounting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Usage"]


@dataclass(slots=True)
class Usage:
    """Requests made to models and the tokens they reported; ``+=`` folds another in.

    Not every server reports tokens (one that ignores ``stream_options`` never does).
    ``unreported_requests`` counts the requests whose tokens are unknown, so a sum over
    known and unknown turns stays honest: the token counts are those of the reported
    requests only, and :attr:`known` says whether they are the whole story.
    """

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    unreported_requests: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens, of the requests that reported them."""
        return self.input_tokens + self.output_tokens

    @property
    def known(self) -> bool:
        """True when every request reported its tokens, so the counts are complete."""
        return self.unreported_requests == 0

    @property
    def unknown(self) -> bool:
        """True when requests were made and none of them reported tokens."""
        return self.requests > 0 and self.unreported_requests >= self.requests

    def add(self, other: Usage) -> None:
        """Fold ``other`` into this one."""
        self.requests += other.requests
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.unreported_requests += other.unreported_requests

    def __iadd__(self, other: Usage) -> Usage:
        self.add(other)
        return self

    def to_dict(self) -> dict[str, int]:
        """A JSON-ready dict; ``unreported_requests`` only when there are any (older readers ignore it)."""
        data = {"requests": self.requests, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.unreported_requests:
            data["unreported_requests"] = self.unreported_requests
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Usage:
        """Rebuild from :meth:`to_dict` output; unknown keys are ignored."""
        data = data or {}
        return cls(
            requests=int(data.get("requests", 0)),
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            unreported_requests=int(data.get("unreported_requests", 0)),
        )

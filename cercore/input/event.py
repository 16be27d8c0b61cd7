"""One input event as users see it (inside a complex event, or passed to a callback): the
decoder builds it, the engines hand it out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Event:
    """One input event: its type, its 0-based position in the input, its attributes."""

    type: str
    position: int
    attributes: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "position": self.position, "attributes": self.attributes}

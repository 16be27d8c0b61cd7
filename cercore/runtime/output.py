"""What users receive: complex events and the events inside them."""

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


class ComplexEvent:
    """A complex event (CORE §2): the interval [start, end] of input positions and the positions
    of the events that form it. ``events`` is built on first access from the engine's store."""

    __slots__ = ("_bind", "_bindings", "_events", "_lookup", "end", "end_time", "positions",
                 "start", "start_time")

    def __init__(self, start: int, end: int, positions: tuple[int, ...],
                 start_time: int | None, end_time: int | None, lookup, bind=None) -> None:
        self.start = start
        self.end = end
        self.positions = positions
        self.start_time = start_time
        self.end_time = end_time
        self._lookup = lookup
        self._events: list[Event] | None = None
        self._bind = bind
        self._bindings: dict[str, tuple[int, ...]] | None = None

    @property
    def events(self) -> list[Event]:
        """The matched events, in stream order."""
        if self._events is None:
            self._events = [self._lookup(p) for p in self.positions]
        return self._events

    @property
    def bindings(self) -> dict[str, tuple[int, ...]]:
        """Variable (``AS`` names and event-type names) -> the reported positions bound to it;
        where several runs produce this complex event, the union of their bindings. Computed on
        first access (linear in the span from start to end)."""
        if self._bindings is None:
            self._bindings = self._bind(self) if self._bind is not None else {}
        return self._bindings

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"start": self.start, "end": self.end, "start_time": self.start_time,
                "end_time": self.end_time, "positions": list(self.positions),
                "events": [e.to_dict() for e in self.events]}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ComplexEvent):
            return NotImplemented
        return (self.start, self.end, self.positions) == (other.start, other.end, other.positions)

    def __hash__(self) -> int:
        return hash((self.start, self.end, self.positions))

    def __repr__(self) -> str:
        return f"ComplexEvent(start={self.start}, end={self.end}, positions={self.positions})"

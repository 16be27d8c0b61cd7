"""The one taxonomy of bad input, shared by every engine.

Each unusable event raises an ``EventError`` whose ``reason`` is one of the names below; with
``on_error="skip"`` it is skipped instead and counted under that name in
``engine.stats["skipped_by_reason"]``. Its position is still consumed, so positions always
index the input.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from cercore.errors import EventError

NOT_AN_EVENT = "not an event"              # a record that is no (type, attributes) pair
UNKNOWN_TYPE = "unknown event type"
UNKNOWN_ATTRIBUTE = "unknown attribute"    # an attribute its type does not declare
MISSING_ATTRIBUTE = "missing attribute"    # a declared attribute absent from a record
WRONG_TYPE = "wrong type"                  # a value that is not of (or not exactly
                                           # convertible to) the declared type
STREAM = "stream"                          # an unknown stream, or one without the event's type
TIME_MISSING = "time missing"              # the time attribute is null or absent
TIME_BACKWARDS = "time goes backwards"
LATE = "late beyond the reorder slack"
NULL_AGGREGATED = "null aggregated attribute"  # trend queries: SUM/MIN/MAX/AVG over a null
UNREADABLE = "unreadable in the file"      # a file row whose cells do not convert, or a
                                           # malformed line (cercore.input.files, on_error="skip")

REASONS = (NOT_AN_EVENT, UNKNOWN_TYPE, UNKNOWN_ATTRIBUTE, MISSING_ATTRIBUTE, WRONG_TYPE, STREAM,
           TIME_MISSING, TIME_BACKWARDS, LATE, NULL_AGGREGATED, UNREADABLE)
MAX_EXAMPLES = 20


@dataclass
class SkipLog:
    """Counts of skipped events by reason, plus the first few messages."""

    count: int = 0
    by_reason: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def add(self, err: EventError) -> None:
        self.count += 1
        self.by_reason[err.reason or "invalid event"] += 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(str(err))

    def add_lazily(self, reason: str, make: Callable[[], EventError]) -> None:
        """``add(make())``, building the error only while examples are still kept (a batch
        of bad rows must not cost a message each)."""
        if len(self.examples) < MAX_EXAMPLES:
            self.add(make())
        else:
            self.count += 1
            self.by_reason[reason] += 1

"""The exceptions cercore raises. Every user mistake surfaces as one of these."""

from __future__ import annotations

import difflib


class CercoreError(Exception):
    """Base class of every error cercore raises on purpose."""


class CEQLError(CercoreError, ValueError):
    """A problem with query or declaration text, located at ``line``/``column`` (1-based)."""

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        text: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.text = text
        self.hint = hint
        self.snippet = caret_snippet(text, line, column) if text is not None else ""
        super().__init__(self._render())

    def _render(self) -> str:
        where = f" (line {self.line}, column {self.column})" if self.line is not None else ""
        parts = [f"{self.message}{where}"]
        if self.snippet:
            parts.append(self.snippet)
        if self.hint:
            parts.append(self.hint)
        return "\n".join(parts)


class CEQLSyntaxError(CEQLError):
    """The text does not follow the CEQL grammar.

    ``expected`` lists what the parser would have accepted at that spot, in source form
    (e.g. ``")"``, ``"end of query"``).
    """

    def __init__(self, message: str, *, expected: list[str] | None = None, **kw) -> None:
        self.expected = list(expected or [])
        super().__init__(message, **kw)


class CEQLSemanticError(CEQLError):
    """The text parses but means nothing valid: unknown names, type mismatches,
    ill-formed formulas, or features this version does not evaluate."""


class ConfigError(CercoreError, ValueError):
    """An engine option that cannot work: a reorder slack without event time, a negative
    slack, an unknown backend."""


class UnknownOptionError(ConfigError, TypeError):
    """A keyword option that no option is named (a misspelling: ``on_eror=``): a
    ``ConfigError`` with a did-you-mean, and a ``TypeError`` as for any function."""


class EventError(CercoreError, ValueError):
    """An input event is unusable: unknown type, missing or mistyped attribute, time going
    backwards. ``position`` is the event's 0-based index in the input stream; ``reason`` is
    the counter that ``on_error="skip"`` adds the event to (``engine.stats
    ["skipped_by_reason"]``)."""

    def __init__(self, message: str, *, position: int | None = None,
                 field: str | None = None, reason: str | None = None) -> None:
        self.position = position
        self.field = field
        # the skip taxonomy's name for what went wrong (cercore.input.skips), if it is one
        self.reason = reason
        where = f"event {position}: " if position is not None else ""
        super().__init__(where + message)


def caret_snippet(text: str | None, line: int | None, column: int | None) -> str:
    """The offending source line with a caret under ``column`` (both 1-based)."""
    if text is None or line is None or column is None:
        return ""
    lines = text.splitlines() or [""]
    if not 1 <= line <= len(lines):
        return ""
    src = lines[line - 1].expandtabs(1)
    return f"  {src}\n  {' ' * (max(column, 1) - 1)}^"


def did_you_mean(name: str, candidates) -> str:
    """'; did you mean X?' for the closest candidate, or ''."""
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    if not close:
        lowered = {str(c).lower(): c for c in candidates}
        if name.lower() in lowered:
            close = [lowered[name.lower()]]
    return f"; did you mean {close[0]!r}?" if close else ""

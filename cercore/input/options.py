"""Engine options: how an engine reads its events and what it does with a bad one -- one set,
checked here once, accepted by every engine (CEQL, trend, multi-query), by Spark's ``find`` and
``aggregate`` and by the CLI.

Front doors take them as keywords (``query.engine(on_error="skip")``) or whole
(``query.engine(options=EngineOptions(on_error="skip"))``); keywords replace the fields of
``options``. Adding an option is adding a field here (and reading it where it acts)."""

from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass
from typing import Any, ClassVar

from cercore.errors import ConfigError, UnknownOptionError, did_you_mean

BACKENDS = ("auto", "python", "cython")
ON_ERROR = ("raise", "skip")


def checked_on_error(on_error: str) -> str:
    """``on_error`` if it is "raise" (an EventError on a bad event) or "skip" (skip and count
    it), else a ConfigError."""
    if on_error not in ON_ERROR:
        raise ConfigError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
    return on_error


@dataclass(frozen=True)
class EngineOptions:
    """Engine options (all optional).

    * ``backend``: "auto" (Cython when built), "python" or "cython";
    * ``on_error``: "raise" (EventError on a bad event) or "skip" (skip it and count it in
      ``engine.stats``, by reason);
    * ``type_column``: in tabular input, the column holding each event's type;
    * ``reorder_slack``: buffer events and evaluate them in time order, accepting events up to
      this much (in time units) older than the newest seen (None: events arrive in order);
    * ``stream_column``: in tabular input, the column naming each event's stream (None: every
      event belongs to every stream of its type).
    """

    backend: str = "auto"
    on_error: str = "raise"
    type_column: str = "event_type"
    reorder_slack: int | None = None
    stream_column: str | None = None

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ConfigError(f"unknown backend {self.backend!r}; use 'auto', 'python' or "
                              "'cython'")
        checked_on_error(self.on_error)
        if not isinstance(self.type_column, str) or not self.type_column:
            raise ConfigError(f"type_column must name a column, not {self.type_column!r}")
        if self.stream_column is not None and not isinstance(self.stream_column, str):
            raise ConfigError(f"stream_column must name a column, not {self.stream_column!r}")
        if self.reorder_slack is not None:
            try:  # any integer (numpy's too, not a bool), kept as a Python int
                if isinstance(self.reorder_slack, bool):
                    raise TypeError
                slack = operator.index(self.reorder_slack)
            except TypeError:
                raise ConfigError(f"reorder_slack must be a whole number of time units, not "
                                  f"{self.reorder_slack!r}") from None
            object.__setattr__(self, "reorder_slack", slack)
            if slack < 0:
                raise ConfigError(f"reorder_slack must be >= 0, got {self.reorder_slack}")

    DEFAULT: ClassVar[EngineOptions]  # every option at its default (set below)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The options' names."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def of(cls, options: EngineOptions | None = None, **given: Any) -> EngineOptions:
        """``options`` (default: every default) with the ``given`` keyword options in place of
        its fields; ``backend=None`` keeps ``options``' backend. A name that is no option is a
        TypeError, as for any function."""
        unknown = sorted(set(given) - set(cls.names()))
        if unknown:
            hint = did_you_mean(unknown[0], cls.names()) if len(unknown) == 1 else ""
            raise UnknownOptionError(
                f"unknown engine option(s) {', '.join(map(repr, unknown))}{hint} (the options "
                f"are {', '.join(cls.names())})")
        if given.get("backend", "") is None:
            del given["backend"]
        base = options if options is not None else cls.DEFAULT
        return dataclasses.replace(base, **given) if given else base


EngineOptions.DEFAULT = EngineOptions()

"""cercore: Complex Event Recognition with CORE's CEQL, tECS and output-linear enumeration.

Public API (see docs/DESIGN.md)::

    schema = cercore.Schema.parse("CREATE STREAM S { EVENT BUY { name:string, price:double } }")
    query = cercore.compile("SELECT * FROM S WHERE BUY AS b; BUY AS c FILTER b[price > 10]", schema)
    for ce in query.engine().process(events):
        print(ce.start, ce.end, ce.positions)
"""

from cercore.errors import (
    CEQLError,
    CEQLSemanticError,
    CEQLSyntaxError,
    CercoreError,
    ConfigError,
    EventError,
    UnknownOptionError,
)
from cercore.input.options import EngineOptions
from cercore.query import CompiledQuery, compile, multi_engine, run
from cercore.runtime.backend import BACKEND
from cercore.runtime.output import ComplexEvent, Event
from cercore.schema import EventType, Schema, Stream
from cercore.types import AttrType

__all__ = [
    "BACKEND",
    "AttrType",
    "CEQLError",
    "CEQLSemanticError",
    "CEQLSyntaxError",
    "CercoreError",
    "CompiledQuery",
    "ConfigError",
    "EngineOptions",
    "ComplexEvent",
    "Event",
    "EventError",
    "EventType",
    "Schema",
    "Stream",
    "UnknownOptionError",
    "compile",
    "multi_engine",
    "run",
]

__version__ = "0.1.0"

"""Stream declarations: event types, their attributes, the streams that carry them, and
which attribute (if any) carries event time.

Declarations use CORE's syntax::

    CREATE STREAM S { EVENT BUY { name:string, price:double, ts:primary_time }, EVENT SELL {...} }

``primary_time`` (CORE's own marker) is an ``int`` attribute that carries event time;
``primary_time(ms)`` also states its unit (``s``, ``ms``, ``us`` or ``ns``). The cercore way
to name it without touching the declaration is ``Schema.parse(text, time_attribute="ts",
time_unit="ms")`` (CLI: ``--time-attribute ts --time-unit ms``). Integer times count
``time_unit`` units (default ``s``, and ``time_unit_stated`` is False: ``explain`` and the CLI
say so where a time window meets it); timestamps (``datetime``, pandas ``datetime64``, Arrow
``timestamp``, ISO-8601 text) are read as instants and converted to that unit
(``cercore.types.coerce_time``).

A program that already knows the types builds the schema instead of writing declaration
text: ``Schema.build({"BUY": [("name", "string"), ("ts", "int")]}, {"S": ["BUY"]},
time_attribute="ts", time_unit="ms")`` is what ``parse`` makes of the text above; both
go through the same checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from cercore.errors import CEQLSemanticError, did_you_mean
from cercore.types import TIME_UNITS_PER_SECOND, AttrType

DEFAULT_STREAM = "S"  # the stream ``Schema.build`` declares when it is given none


@dataclass(frozen=True)
class EventType:
    """An event type (CORE: ``EVENT NAME { attr:type, ... }``); ``id``: its index in the schema."""

    name: str
    attributes: tuple[tuple[str, AttrType], ...]
    id: int = 0

    @property
    def attribute_types(self) -> dict[str, AttrType]:
        return dict(self.attributes)

    def has(self, attribute: str) -> bool:
        return any(a == attribute for a, _ in self.attributes)


@dataclass(frozen=True)
class Stream:
    """A named stream and the event types it carries."""

    name: str
    event_types: tuple[str, ...]


@dataclass
class Schema:
    """Every declared stream and event type, plus the event-time attribute.

    An event type may belong to several streams; declaring it twice requires the same attributes.
    """

    streams: dict[str, Stream] = field(default_factory=dict)
    event_types: dict[str, EventType] = field(default_factory=dict)
    time_attribute: str | None = None
    time_unit: str = "s"
    time_unit_stated: bool = True  # False: the default unit, which nobody stated

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str, *, time_attribute: str | None = None,
              time_unit: str | None = None) -> Schema:
        """Parse one or more ``CREATE STREAM`` declarations; ``time_unit`` is the unit of
        integer times (default: the declaration's ``primary_time(unit)``, else ``s``)."""
        from cercore.ceql.parser import parse_declarations

        schema = cls(time_unit=time_unit or "s", time_unit_stated=time_unit is not None)
        declared_time: str | None = None
        for decl in parse_declarations(text):
            types = []
            for ev in decl.events:
                attrs = []
                for attr in ev.attributes:
                    if attr.type == "primary_time":
                        if declared_time not in (None, attr.name):
                            raise CEQLSemanticError(
                                f"two primary_time attributes: {declared_time!r} and {attr.name!r}",
                                line=attr.line, column=attr.column, text=text,
                            )
                        declared_time = attr.name
                        attrs.append((attr.name, AttrType.INT))
                        if attr.unit is not None:
                            if time_unit is not None and time_unit != attr.unit:
                                raise CEQLSemanticError(
                                    f"time unit {time_unit!r} given, but the declaration "
                                    f"says {attr.name}:primary_time({attr.unit})",
                                    line=attr.line, column=attr.column, text=text)
                            schema.time_unit, schema.time_unit_stated = attr.unit, True
                    else:
                        attrs.append((attr.name, AttrType(attr.type)))
                schema._add_event_type(ev.name, attrs, text=text, line=ev.line, column=ev.column)
                types.append(ev.name)
            schema._add_stream(decl.name, types, text=text, line=decl.line, column=decl.column)
        if time_attribute is not None and declared_time not in (None, time_attribute):
            raise CEQLSemanticError(
                f"time attribute {time_attribute!r} given, but the declaration marks "
                f"{declared_time!r} as primary_time"
            )
        return schema._with_time(time_attribute or declared_time)

    @classmethod
    def build(cls, event_types: Mapping[str, Iterable[tuple[str, AttrType | str]]],
              streams: Mapping[str, Iterable[str]] | None = None, *,
              time_attribute: str | None = None, time_unit: str | None = None) -> Schema:
        """The schema ``parse`` makes of the declarations these parts spell, built directly.

        ``event_types``: event type name -> its ``(attribute, type)`` pairs in order (a type
        is an ``AttrType`` or its name: ``int``, ``double``, ``string``, ``bool``; ids follow
        this order); ``streams``: stream name -> the event types it carries (default: one
        stream ``S`` carrying every type); ``time_attribute``: the ``int`` attribute that
        carries event time (what ``primary_time`` marks in text); ``time_unit``: the unit of
        integer times (default ``s``, not stated). Raises ``CEQLSemanticError`` as ``parse``
        does, and for a stream carrying an undeclared type or a type in no stream."""
        schema = cls(time_unit=time_unit or "s", time_unit_stated=time_unit is not None)
        for name, attrs in event_types.items():
            schema._add_event_type(name, [(a, _attribute_type(t, a, name)) for a, t in attrs])
        if streams is None:
            streams = {DEFAULT_STREAM: list(schema.event_types)}
        for name, types in streams.items():
            types = list(types)
            for t in types:
                if t not in schema.event_types:
                    raise CEQLSemanticError(f"stream {name!r} carries event type {t!r}, which "
                                            "is not declared"
                                            + did_you_mean(t, schema.event_types))
            schema._add_stream(name, types)
        carried = {t for s in schema.streams.values() for t in s.event_types}
        lonely = [t for t in schema.event_types if t not in carried]
        if lonely:
            raise CEQLSemanticError("event type(s) in no stream: " + ", ".join(lonely))
        return schema._with_time(time_attribute)

    @classmethod
    def coerce(cls, schema: Schema | str, **kw) -> Schema:
        """Accept a ``Schema`` or declaration text."""
        return schema if isinstance(schema, Schema) else cls.parse(schema, **kw)

    def _add_event_type(self, name: str, attrs: list[tuple[str, AttrType]], *, text=None,
                        line=None, column=None) -> None:
        seen: set[str] = set()
        for a, _ in attrs:
            if a in seen:
                raise CEQLSemanticError(f"attribute {a!r} is declared twice in event {name}",
                                        line=line, column=column, text=text)
            seen.add(a)
        if name in self.event_types:
            if self.event_types[name].attributes != tuple(attrs):
                raise CEQLSemanticError(
                    f"event {name} is declared again with different attributes",
                    line=line, column=column, text=text)
            return
        self.event_types[name] = EventType(name, tuple(attrs), id=len(self.event_types))

    def _add_stream(self, name: str, types: list[str], *, text=None, line=None,
                    column=None) -> None:
        if name in self.streams:
            raise CEQLSemanticError(f"stream {name!r} is declared twice",
                                    line=line, column=column, text=text)
        self.streams[name] = Stream(name, tuple(types))

    def _with_time(self, time_attribute: str | None) -> Schema:
        """This schema with its time attribute set, validated (the last step of building)."""
        self.time_attribute = time_attribute
        self.validate()
        return self

    def validate(self) -> None:
        """Check cross-type consistency: one type per attribute name, a sane time attribute."""
        if self.time_unit not in TIME_UNITS_PER_SECOND:
            raise CEQLSemanticError(
                f"unknown time unit {self.time_unit!r}; use one of {sorted(TIME_UNITS_PER_SECOND)}")
        types = self.attribute_types()
        if self.time_attribute is not None:
            t = types.get(self.time_attribute)
            if t is None:
                raise CEQLSemanticError(f"time attribute {self.time_attribute!r} is not declared"
                                        + did_you_mean(self.time_attribute, types))
            if t is not AttrType.INT:
                raise CEQLSemanticError(
                    f"time attribute {self.time_attribute!r} must be int, not {t.value}")
            lacking = [e.name for e in self.event_types.values() if not e.has(self.time_attribute)]
            if lacking:
                raise CEQLSemanticError(
                    f"time attribute {self.time_attribute!r} is missing from event type(s) "
                    + ", ".join(lacking))

    # ---- queries ------------------------------------------------------------------------
    def attribute_types(self) -> dict[str, AttrType]:
        """Attribute name -> type over all event types; a name has one type schema-wide."""
        out: dict[str, AttrType] = {}
        owner: dict[str, str] = {}
        for ev in self.event_types.values():
            for a, t in ev.attributes:
                if a in out and out[a] is not t:
                    raise CEQLSemanticError(
                        f"attribute {a!r} is {out[a].value} in {owner[a]} but {t.value} in "
                        f"{ev.name}; cercore needs one type per attribute name")
                out[a] = t
                owner.setdefault(a, ev.name)
        return out

    def event_type(self, name: str) -> EventType:
        try:
            return self.event_types[name]
        except KeyError:
            raise CEQLSemanticError(f"unknown event type {name!r}"
                                    + did_you_mean(name, self.event_types)) from None

    @property
    def stream_ids(self) -> dict[str, int]:
        """Stream name -> id (declaration order); events tagged with a stream carry its id."""
        return {name: i for i, name in enumerate(self.streams)}

    @property
    def type_names(self) -> list[str]:
        """Event type names by id."""
        return [e.name for e in sorted(self.event_types.values(), key=lambda e: e.id)]

    def to_text(self) -> str:
        """Declarations that parse back to this schema (time attribute as primary_time)."""
        out = []
        for s in self.streams.values():
            evs = []
            for n in s.event_types:
                e = self.event_types[n]
                time = ("primary_time" if not self.time_unit_stated
                        else f"primary_time({self.time_unit})")
                attrs = ", ".join(f"{a}:{time if a == self.time_attribute else t.value}"
                                  for a, t in e.attributes)
                evs.append(f"EVENT {n} {{ {attrs} }}")
            out.append(f"CREATE STREAM {s.name} {{ " + ", ".join(evs) + " }")
        return "\n".join(out)


def _attribute_type(t: AttrType | str, attribute: str, event_type: str) -> AttrType:
    """``t`` (an ``AttrType`` or its name) as an ``AttrType``."""
    if isinstance(t, AttrType):
        return t
    try:
        return AttrType(t)
    except ValueError:
        hint = ("; name the time attribute with time_attribute=" if t == "primary_time"
                else "; use one of " + ", ".join(a.value for a in AttrType))
        raise CEQLSemanticError(f"attribute {attribute!r} of event {event_type} has unknown "
                                f"type {t!r}" + hint) from None

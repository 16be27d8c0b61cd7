"""``cercore.compile``, ``cercore.run`` and ``cercore.multi_engine``: text -> AST -> analysis
-> automaton -> engine."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cercore.automata.cea import CEA, SKIP, compile_cea, strict
from cercore.ceql import ast
from cercore.ceql.analysis import AnalysedQuery, analyse
from cercore.ceql.guards import format_guard
from cercore.ceql.normal import format_normal
from cercore.errors import CEQLSemanticError, ConfigError, UnknownOptionError, did_you_mean
from cercore.input.options import EngineOptions
from cercore.runtime.event_predicates import computed_by_kernel
from cercore.runtime.intake import order_attribute
from cercore.runtime.output import ComplexEvent
from cercore.runtime.partitions import describe_keys
from cercore.runtime.shards import shards_for
from cercore.runtime.slices import MIN_EVENTS_BY_DEFAULT, MIN_EVENTS_PER_SLICE, window_reach
from cercore.schema import Schema

if TYPE_CHECKING:
    from cercore.trends.query import CompiledTrendQuery


class CompiledQuery:
    """A query checked against a schema and compiled to a complex event automaton.

    It is immutable and can start any number of independent engines."""

    def __init__(self, text: str | ast.Query, schema: Schema, *,
                 parsed: ast.Query | None = None) -> None:
        """``text``: the query's CEQL text, or its AST (``cercore.ceql.ast.Query``, e.g. built
        by another front end), which is compiled as it is -- never printed and parsed again.
        ``parsed``: the AST of ``text`` when the caller parsed it already (it is not parsed
        again; errors still quote ``text``)."""
        self.schema = schema
        if isinstance(text, ast.Query):
            self.ast = text  # ``text``: printed on first use (``__getattr__``)
            self.analysed: AnalysedQuery = analyse(self.ast, schema)
        else:
            if parsed is None:
                from cercore.ceql.parser import parse_query

                parsed = parse_query(text)
            self.text = text
            self.ast = parsed
            self.analysed = analyse(self.ast, schema, text)
        self.cea: CEA = compile_cea(self.analysed.formula, self.analysed.marked)
        if self.analysed.strategy == "STRICT":
            self.cea = strict(self.cea)
        elif self.ranking_strategy is not None and any(
                mark == SKIP for _, mark, _ in self.cea.transitions[self.cea.initial]):
            raise CEQLSemanticError(
                f"SELECT {self.analysed.strategy}: a match may begin with an event it does not "
                "report (a leading NOT(...) or an atom outside the SELECT list), and the "
                "strategy has no position to rank it by", line=self.ast.line,
                column=self.ast.column, text=self.__dict__.get("text"),
                hint="start the pattern with a reported event, or use SELECT * / ALL")

    def __getattr__(self, name: str) -> Any:
        """``text`` of a query compiled from its AST: the AST printed, on first use."""
        if name == "text" and "ast" in self.__dict__:
            from cercore.ceql.printer import format_query

            self.text = format_query(self.ast)
            return self.text
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def ranking_strategy(self) -> str | None:
        """NEXT, LAST or MAX: the strategy the determiniser builds on the fly over ``cea``
        (STRICT is already part of ``cea``; ALL/ANY need nothing)."""
        s = self.analysed.strategy
        return s if s in ("NEXT", "LAST", "MAX") else None

    @property
    def warnings(self) -> list[str]:
        return list(self.analysed.warnings)

    def engine(self, backend: str | None = None, *, options: EngineOptions | None = None,
               **option: Any):
        """A fresh engine: ``process(events)`` yields complex events as they complete,
        ``push(type, attrs)`` takes one event, ``advance(t)`` is a watermark, ``flush()`` ends
        the stream, ``stats`` counts. Engine options (``EngineOptions``: ``backend``,
        ``on_error``, ``type_column``, ``reorder_slack``, ``stream_column``) come as keywords,
        whole as ``options``, or both (keywords win)."""
        from cercore.runtime.engine import Engine

        return Engine(self, EngineOptions.of(options, backend=backend, **option))

    def run(self, events: Any, *, options: EngineOptions | None = None,
            workers: int | None = None, **option: Any) -> list[ComplexEvent]:
        """Every complex event over ``events`` (the whole stream); engine options as for
        ``engine``; ``workers`` as for ``Engine.process_arrays``."""
        engine = self.engine(options=options, **option)
        return list(engine.process(events, workers=workers)) + engine.flush()

    # ---- explain --------------------------------------------------------------------------
    def atom_text(self, atom) -> str:
        names = self.schema.type_names
        types = " | ".join(names[t] for t in sorted(atom.types))
        if atom.guard == ("const", True):
            return types
        return f"{types}[{format_guard(atom.guard, self.analysed.leaves)}]"

    def explain(self) -> str:
        """The AST, the normalised formula, the window and partitioning, and the automaton."""
        from cercore.ceql.printer import format_pred, format_query

        a = self.analysed
        w = a.window
        window = {None: "none (unbounded)", "events": f"{w.epsilon} events",
                  "time": f"{w.epsilon} {self.schema.time_unit} of {w.attribute}",
                  "attr": f"{w.epsilon} of {w.attribute}"}[w.kind]
        parts = [
            "query:", "  " + format_query(self.ast).replace("\n", "\n  "),
            "ast:", "  " + repr(self.ast.formula),
            "normalised formula (filters pushed onto atoms):",
            "  " + format_normal(a.formula, self.atom_text),
            f"window: {window}",
            "partition by: " + (", ".join("[" + ", ".join(g) + "]" for g in a.partition_by)
                                or "none")
            + ("" if a.implied_partition is None else
               " (the last group is implied by the equality predicates between events: each "
               "key is evaluated apart, in constant time per event)"),
            *([] if not a.partition_by else [
                "  key per event type: " + describe_keys(
                    self.schema, a.partition_by,
                    [n for n in self.schema.type_names
                     if self.schema.event_types[n].id in {t for x in a.atoms for t in x.types}])]),
            "selection strategy: " + _STRATEGY_TEXT[a.strategy]
            + (_WINDOWED_STRATEGY_TEXT if self.ranking_strategy and w.kind else ""),
            "reported atoms (SELECT): " + ("all" if a.marked is None else
                                           ", ".join(f"a{i}" for i in sorted(a.marked))
                                           or "none (intervals only)"),
            "predicates between events: " + _between_text(a, format_pred),
            "deadline: " + ("none" if a.deadline is None else
                            "no " + " OR ".join(f"a{i}" for i in a.deadline.psi_atoms)
                            + f" within {a.deadline.span} [{a.deadline.attribute}] after the "
                            "pattern's last event; each complex event is reported once event "
                            "time passes its deadline (O(1) per event: a FIFO of deadlines)"),
            "look back: " + ("none" if a.lookback is None else
                             "no " + " OR ".join(f"a{i}" for i in a.lookback.psi_atoms)
                             + f" within {a.lookback.span} [{a.lookback.attribute}] before the "
                             "pattern's first event (checked per complex event: the last one "
                             "of its partition, by bisection)"),
            f"consume by: {a.query.consume or 'NONE'}; limit: "
            + ("none" if a.query.limit is None else f"{a.query.limit} per event"),
            "workers (a large input in hand): " + _slicing(a),
            "atoms:",
            *(f"  a{atom.id}: {self.atom_text(atom)}" for atom in a.atoms),
            *(f"  a{n.id}: NOT(" + " OR ".join(f"a{b.id}" for b in n.branches) + ")"
              for n in a.negations),
            *(f"  a{n.id}: no " + " OR ".join(f"a{b.id}" for b in n.branches)
              + " (an ABSENT gap: consumes nothing)" for n in a.absences),
            "automaton (CEA" + (", after the STRICT construction" if a.strategy == "STRICT"
                                else "") + "; determinised lazily while running):",
            "  " + self.cea.describe(lambda lab: f"a{lab}").replace("\n", "\n  "),
        ]
        if a.warnings:
            parts += ["warnings:", *(f"  - {m}" for m in a.warnings)]
        return "\n".join(parts)


_STRATEGY_TEXT = {
    None: "ALL (every complex event)",
    "STRICT": "STRICT (Foundations App. C.3.1: marked and unmarked copies of each state; "
              "every event from the first reported one to the last is reported)",
    "NEXT": "NEXT (Foundations App. C.3.2 over the automaton below, with one fresh final "
            "state; states are ranked blocks of automaton states, built lazily)",
    "LAST": "LAST (Foundations App. C.3.3 over the automaton below, with one fresh final "
            "state; states are ranked blocks of automaton states, built lazily)",
    "MAX": "MAX (Foundations App. C.3.4 over the automaton below, with one fresh final state; "
           "states are (S, T) pairs of automaton state sets, built lazily)",
}


def _slicing(a) -> str:
    """What ``workers`` does to ``a`` (``runtime/slices.py``, ``runtime/shards.py``)."""
    reach, why_not = window_reach(a, order_attribute(a))
    if reach is not None:
        return (f"T-CER slices: a table in event order cut into N runs (workers=N, "
                f"{MIN_EVENTS_PER_SLICE} events per run at least; by default the machine's "
                f"cores from {MIN_EVENTS_BY_DEFAULT} events), each also evaluating the {reach} "
                "time units before it")
    k, why = shards_for(a, 2)
    return f"not in time slices ({why_not}); " + (
        "one worker unless workers=N: then the partitions split among N threads (key shards)"
        if k > 1 else why)


def _between_text(a, format_pred) -> str:
    """explain's line on predicates between events: which ones the partition guarantees, which
    ones are checked, and how."""
    if not a.event_predicates:
        return "none"
    checked = a.checked_predicates
    kept = [p for p in a.event_predicates if p not in checked]
    out = []
    if kept:
        out.append(" AND ".join(map(format_pred, kept)) + " -- guaranteed by PARTITION BY "
                   "(each key is evaluated apart): never checked")
    if checked:
        out.append(" AND ".join(map(format_pred, checked)) + _BETWEEN_TEXT)
        types = a.schema.attribute_types()
        slow = [p for p in checked if not computed_by_kernel(p, types)]
        out[-1] += (". The compiled backend computes every comparison itself" if not slow else
                    ". The compiled backend calls Python (with the GIL) for "
                    + " AND ".join(map(format_pred, slow)) + ": only comparisons of numbers, "
                    "numeric attributes and their arithmetic (+ - * / %, up to 8 steps a "
                    "side), and string (in)equalities, run in its kernel")
    return "; ".join(out)


_BETWEEN_TEXT = (
    " -- checked while the enumerator walks each complex event from its last event back, "
    "as soon as the events a combination names are bound (NEXT(x): each consecutive pair as "
    "its earlier event joins); a failing branch is abandoned with everything below it, so the "
    "delay per complex event is its own length plus the branches abandoned on the way, each "
    "cut at its first failing combination; where runs bind one event to different variables, "
    "the complex event is checked whole over the valuations that produce it. Strategies and "
    "LIMIT see only complex events that satisfy them")

_WINDOWED_STRATEGY_TEXT = (
    "; under WITHIN only complex events that fit the window compete: the automaton ranks the "
    "runs of each start, and the winners among the starts inside the window are chosen when "
    "an event completes them (cost per such event: the number of those starts, times their "
    "length; squared for MAX), so delay is no longer output-linear")


#: keywords of ``compile`` and ``run`` that apply to declaration text (``Schema.parse``)
SCHEMA_OPTIONS = ("time_attribute", "time_unit")


def compile(query: str | ast.Query, schema: Schema | str, *,
            next_algorithm: str | None = None,
            **schema_options: Any) -> CompiledQuery | CompiledTrendQuery:
    """Parse, check and compile ``query`` against ``schema`` (a Schema or declaration text;
    ``schema_options`` such as ``time_attribute=`` apply when it is text). A CEQL query
    (``SELECT ...``, or its AST, a ``cercore.ceql.ast.Query``) gives a ``CompiledQuery``, a
    trend aggregation query (``RETURN ... PATTERN ...``) a ``CompiledTrendQuery``; both have
    ``engine()``, ``run()`` and ``explain()``. ``next_algorithm`` is a trend query option (see
    ``cercore.trends.compile_trend``)."""
    from cercore.trends.parse import is_trend_query
    from cercore.trends.query import CompiledTrendQuery

    unknown = sorted(set(schema_options) - set(SCHEMA_OPTIONS))
    if unknown:
        known = (*SCHEMA_OPTIONS, *EngineOptions.names(), "next_algorithm")
        raise UnknownOptionError(
            f"unknown option(s) {', '.join(map(repr, unknown))}"
            + did_you_mean(unknown[0], known) + f" (schema options: {', '.join(SCHEMA_OPTIONS)}"
            f"; engine options: {', '.join(EngineOptions.names())})")
    schema = Schema.coerce(schema, **schema_options)
    if isinstance(query, str) and is_trend_query(query):
        return CompiledTrendQuery(query, schema, next_algorithm or "exact")
    if next_algorithm is not None:
        raise ConfigError("next_algorithm applies to trend queries (RETURN ... PATTERN ...), "
                          "not to CEQL queries")
    return CompiledQuery(query, schema)


def run(query: str, schema: Schema | str, events: Iterable | Any, *,
        options: EngineOptions | None = None, **keywords: Any) -> list[ComplexEvent] | list[dict]:
    """Compile ``query`` and evaluate it over ``events`` (the whole stream): every complex
    event of a CEQL query, every result row of a trend query. ``keywords``: engine options
    (``EngineOptions``' names), ``workers=`` (a CEQL query: ``Engine.process_arrays``) and,
    when ``schema`` is text, schema options (``time_attribute=``...)."""
    option = {k: keywords.pop(k) for k in EngineOptions.names() + ("workers",) if k in keywords}
    return compile(query, schema, **keywords).run(events, options=options, **option)


def multi_engine(queries: Sequence[CompiledQuery | str] | Mapping[str, CompiledQuery | str],
                 schema: Schema | str | None = None, *, options: EngineOptions | None = None,
                 **option: Any):
    """One engine for several queries over one stream: the stream is decoded once and each
    distinct predicate evaluated once per batch; ``process`` yields ``(query name, complex
    event)`` pairs in stream order. ``queries``: a list (named "q0", "q1", ...) or a mapping
    name -> query, compiled or as text (then ``schema`` is needed). Engine options as for
    ``CompiledQuery.engine``."""
    from cercore.runtime.multi import MultiEngine

    named = dict(queries) if isinstance(queries, Mapping) else \
        {f"q{i}": q for i, q in enumerate(queries)}
    for name, q in named.items():
        if isinstance(q, str):
            if schema is None:
                raise ConfigError("queries given as text need a schema")
            named[name] = compile(q, schema)
    return MultiEngine(named, EngineOptions.of(options, **option))

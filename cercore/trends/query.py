"""``compile_trend``: trend query text -> checked plan -> engines; and ``explain``."""

from __future__ import annotations

from typing import Any

from cercore.input.options import EngineOptions
from cercore.runtime.partitions import describe_keys
from cercore.schema import Schema
from cercore.trends import ast
from cercore.trends.analysis import SEMANTICS_TEXT, TrendPlan, analyse
from cercore.trends.ast import condition_text
from cercore.trends.engine import TrendEngine, TrendSlices, trend_backend
from cercore.trends.parse import parse_trend_query


class CompiledTrendQuery:
    """A trend aggregation query checked against a schema. Immutable; starts engines."""

    def __init__(self, text: str, schema: Schema, next_algorithm: str = "exact") -> None:
        self.text = text
        self.schema = schema
        self.ast: ast.TrendQuery = parse_trend_query(text)
        self.plan: TrendPlan = analyse(self.ast, schema, text, next_algorithm)

    @property
    def warnings(self) -> list[str]:
        """What ``explain`` and the CLI tell about the query (as for CEQL queries)."""
        return list(self.plan.warnings)

    @property
    def granularity(self) -> str:
        """"type-grained" | "mixed" | "pattern-grained"."""
        return self.plan.granularity

    @property
    def columns(self) -> list[str]:
        """The columns of a result row."""
        head = ["window_start", "window_end"] if self.plan.window else []
        return head + list(self.plan.group_by) + [str(a) for a, _, _ in self.plan.aggregates]

    def engine(self, backend: str | None = None, *, options: EngineOptions | None = None,
               **option: Any) -> TrendEngine:
        """A fresh engine: ``process(events)`` yields rows as windows close, ``advance(t)``
        (a watermark) closes the windows ending by ``t``, ``flush()`` returns the rest.
        Engine options as for CEQL engines (``CompiledQuery.engine``)."""
        return TrendEngine(self.plan, EngineOptions.of(options, backend=backend, **option))

    def run(self, events: Any, *, options: EngineOptions | None = None,
            workers: int | None = None, **option: Any) -> list[dict]:
        """Every result row over ``events`` (the whole stream); engine options as for
        ``engine``; ``workers`` as for ``TrendEngine.process``."""
        return self.engine(options=options, **option).run(events, workers=workers)

    def explain(self, backend: str = "auto") -> str:
        """The automaton, the predicate classes, the window and the granularity choice."""
        p = self.plan
        names = p.var_names
        preds = lambda i: "{" + ", ".join(names[u] for u in sorted(p.preds[i])) + "}"  # noqa: E731
        local = [f"{v.name}: " + " AND ".join(condition_text(c) for c in v.local)
                 for v in p.vars if v.local]
        window = "none (one window: the whole stream)"
        if p.window:
            size, slide = p.window
            unit = p.schema.time_unit
            window = (f"WITHIN {size} {unit} SLIDE {slide} {unit}: windows [k*{slide}, "
                      f"k*{slide} + {size}); each event updates up to {-(-size // slide)} "
                      "window aggregators, never shared")
        reach, why = TrendSlices.reach(self)  # (it reads the plan only)
        lines = [
            f"trend aggregation query ({'COGRA' if self.ast.form == 'cogra' else 'CEQL'} form)",
            "pattern automaton (variables):",
            *(f"  {v.name}: {v.type}, predecessors {preds(v.id)}" for v in p.vars),
            f"  start: {names[p.start]}, end: {names[p.end]}",
            f"semantics: {SEMANTICS_TEXT[p.semantics]}"
            + (" (paper's Algorithm 3, compatibility mode)" if p.semantics == "next"
               and p.next_algorithm == "paper" else ""),
            "predicates:",
            "  local (filter the stream first): " + ("; ".join(local) or "none"),
            "  equivalence (partition): " + ("[" + ", ".join(p.equivalence) + "]"
                                             if p.equivalence else "none"),
            "  on adjacent events: " + ("; ".join(
                f"{condition_text(a.cond)} ({names[a.pred_var]} -> {names[a.succ_var]})"
                for a in p.adjacent)
                or "none"),
            "partitions: " + (", ".join("[" + ", ".join(g) + "]" for g in p.partition_groups)
                              or "one (no equivalence or GROUP BY)"),
            *([] if not p.partition_groups else [
                "  key per event type: " + describe_keys(
                    p.schema, p.partition_groups, sorted(p.types))]),
            "groups (roll-up): " + (", ".join(p.group_by) or "one"),
            f"window: {window}",
            "workers (a table in hand): " + (
                f"workers=N cuts it in time into N runs (T-CER slices), each also evaluating "
                f"the {reach} time units before it, the first in this thread and the others "
                "in worker processes (the runner holds the GIL); the same rows"
                if reach is not None else f"one worker: {why}"),
            "aggregates: " + ", ".join(str(a) for a, _, _ in p.aggregates),
            f"granularity: {p.granularity}",
            f"  why: {p.reason}",
        ]
        if p.granularity == "mixed":
            lines.append("  T_e (event-grained): {" + ", ".join(
                names[i] for i in sorted(p.event_grained)) + "}; T_t (type-grained): {"
                + ", ".join(n for i, n in enumerate(names) if i not in p.event_grained) + "}")
        n = len(p.vars)
        if p.semantics == "contiguous":
            state = "the vectors of the previous timestamp's events"
        else:
            state = f"{n} aggregate vector{'s' if n > 1 else ''}"
            if p.event_grained:
                state += (" + the stored T_e events of the window" if p.semantics == "any"
                          else " + the T_e events still waiting for their successor")
        lines.append(f"state per (window, partition): {state}")
        chosen, note = trend_backend(self.plan, backend)
        lines.append(f"backend: {chosen.name}" + (f" ({note})" if note else ""))
        lines.append("counts: exact -- " + (
            "int64 with overflow checks; a window that would overflow goes on with Python "
            "integers" if chosen.compiled else "Python integers"))
        if p.warnings:
            lines += ["warnings:", *(f"  - {m}" for m in p.warnings)]
        return "\n".join(lines)


def compile_trend(text: str, schema: Schema | str, *, next_algorithm: str = "exact",
                  **schema_options: Any) -> CompiledTrendQuery:
    """Parse, check and plan a trend aggregation query. ``next_algorithm="paper"`` runs
    skip-till-next-match with the paper's Algorithm 3 (compatibility mode; it can undercount,
    see docs/trends.md) instead of the exact waiting-set algorithm for Definition 2.6."""
    return CompiledTrendQuery(text, Schema.coerce(schema, **schema_options), next_algorithm)


def run_trend(text: str, schema: Schema | str, events: Any, *, backend: str = "auto",
              next_algorithm: str = "exact", **schema_options: Any) -> list[dict]:
    """Compile ``text`` and return every result row over ``events``."""
    return compile_trend(text, schema, next_algorithm=next_algorithm,
                         **schema_options).run(events, backend=backend)

"""cercore.trends against the brute-force two-step oracle (tests/trends_oracle.py) on random
small streams and patterns: every semantics x aggregate x predicate class (none, local,
adjacent, equivalence, GROUP BY, sliding windows), in both query forms, on both backends."""

from __future__ import annotations

import trends_oracle as oracle
from hypothesis import HealthCheck, given, settings
from trends_strategies import SCHEMA, cases, query_text

from cercore.trends import compile_trend


def expected_rows(c) -> dict:
    atoms = oracle.atoms(c["pattern"])
    vs = {c["target"]} if any(a[1] == c["target"] for a in atoms) else \
        {a[1] for a in atoms if a[2] == c["target"]}
    return oracle.run(c["pattern"], c["events"], local=c["local"], theta=c["theta"],
                      semantics=c["semantics"], partition=c["partition"], group=c["group"],
                      window=c["window"], targets={"x": (vs, "v")})


def actual_rows(c, backend: str) -> dict:
    q = compile_trend(query_text(c), SCHEMA)
    evs = [(e["type"], {k: e[k] for k in ("v", "g", "h", "t")}) for e in c["events"]]
    x = c["target"]
    out = {}
    for r in q.run(evs, backend=backend):
        w = (r["window_start"], r["window_end"]) if c["window"] else None
        g = (r["g"],) if c["group"] else ()
        cnt, s = r[f"COUNT({x})"], r[f"SUM({x}.v)"]
        assert r[f"AVG({x}.v)"] == (s / cnt if cnt else None)
        out[(w, g)] = {"count": r["COUNT(*)"], "x": {"cnt": cnt, "sum": s,
                                                     "min": r[f"MIN({x}.v)"],
                                                     "max": r[f"MAX({x}.v)"]}}
    return out


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(c=cases())
def test_trends_equal_brute_force(c, backend):
    assert actual_rows(c, backend) == expected_rows(c), query_text(c)


@settings(max_examples=60, deadline=None)
@given(c=cases())
def test_oracle_semantics_nest(c):
    """Definitions: trends_cont ⊆ trends_next ⊆ trends_any (a check of the oracle itself)."""
    c = dict(c, window=None, group=(), partition=())
    counts = {}
    for sem in ("any", "next", "contiguous"):
        rows = oracle.run(c["pattern"], c["events"], local=c["local"], theta=c["theta"],
                          semantics=sem)
        counts[sem] = sum(r["count"] for r in rows.values())
    assert counts["contiguous"] <= counts["next"] <= counts["any"]

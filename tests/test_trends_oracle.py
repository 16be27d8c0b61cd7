"""cercore.trends against the brute-force two-step oracle (tests/trends_oracle.py) on random
small streams and patterns: every semantics x aggregate x predicate class (none, local,
adjacent, equivalence, GROUP BY, sliding windows), in both query forms, on both backends."""

from __future__ import annotations

import pytest
import trends_oracle as oracle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cercore.trends import compile_trend

SCHEMA = "CREATE STREAM S { " + ", ".join(
    f"EVENT {t} {{ v:int, g:int, h:int, t:primary_time }}" for t in "ABCD") + " }"
CMP = ["<", "<=", ">", ">=", "=", "!="]


@st.composite
def patterns(draw, depth=2):
    kind = draw(st.sampled_from(["atom", "atom", "seq", "plus"] if depth else ["atom"]))
    if kind == "atom":
        return ["atom", None, draw(st.sampled_from("ABC"))]
    if kind == "plus":
        return ["plus", draw(patterns(depth - 1))]
    return ["seq"] + draw(st.lists(patterns(depth - 1), min_size=2, max_size=3))


def name_vars(p, counter):
    if p[0] == "atom":
        counter.append(None)
        return ("atom", f"v{len(counter) - 1}", p[2])
    return (p[0],) + tuple(name_vars(s, counter) for s in p[1:])


def cogra_text(p):
    if p[0] == "atom":
        return f"{p[2]} {p[1]}"
    if p[0] == "plus":
        inner = cogra_text(p[1])
        return inner + "+"
    return "SEQ(" + ", ".join(cogra_text(s) for s in p[1:]) + ")"


def ceql_text(p):
    if p[0] == "atom":
        return f"{p[2]} AS {p[1]}"
    if p[0] == "plus":
        return "(" + ceql_text(p[1]) + ")+"
    return "(" + " ; ".join(ceql_text(s) for s in p[1:]) + ")"


@st.composite
def cases(draw):
    pattern = name_vars(draw(patterns()), [])
    atoms = oracle.atoms(pattern)
    if len(atoms) > 4:
        pattern = name_vars(["plus", ["atom", None, "A"]], [])
        atoms = oracle.atoms(pattern)
    var_names = [a[1] for a in atoms]
    _, _, follow = oracle.first_last_follow(pattern)
    n = draw(st.integers(1, 8))
    # mostly the pattern's own types, so that trends are long enough to tell algorithms apart
    types = sorted({a[2] for a in atoms}) * 3 + ["D"] + sorted(set("ABC") - {a[2] for a in atoms})
    t, events = 0, []
    for _ in range(n):
        t += draw(st.sampled_from([0, 1, 1, 1, 2]))
        events.append({"type": draw(st.sampled_from(types)), "t": t,
                       "v": draw(st.integers(0, 3)), "g": draw(st.integers(0, 1)),
                       "h": draw(st.integers(0, 1))})
    preds = draw(st.sampled_from(["none", "local", "adjacent", "both"]))
    local, theta = [], []
    if preds in ("local", "both"):
        local.append((draw(st.sampled_from(var_names)), "v", draw(st.sampled_from(CMP)),
                      draw(st.integers(0, 3))))
    if preds in ("adjacent", "both") and follow:
        u, v = draw(st.sampled_from(sorted(follow)))
        theta.append((u, "v", draw(st.sampled_from(CMP)), v, "v"))
    target = draw(st.sampled_from(var_names + ["A"]))
    if target == "A" and not any(a[2] == "A" for a in atoms):
        target = var_names[0]
    return dict(pattern=pattern, events=events, local=local, theta=theta, target=target,
                semantics=draw(st.sampled_from(["any", "next", "contiguous"])),
                partition=("h",) if draw(st.booleans()) else (),
                group=("g",) if draw(st.booleans()) else (),
                window=draw(st.one_of(st.none(), st.integers(1, 4).flatmap(
                    lambda size: st.tuples(st.just(size), st.integers(1, size))))),
                form=draw(st.sampled_from(["cogra", "ceql"])))


AGGS = "COUNT(*), COUNT({x}), SUM({x}.v), MIN({x}.v), MAX({x}.v), AVG({x}.v)"
SEM = {"any": "skip-till-any-match", "next": "skip-till-next-match",
       "contiguous": "contiguous"}


def query_text(c) -> str:
    conds = [f"{v}.{a} {op} {k}" for v, a, op, k in c["local"]]
    conds += [f"{u}.{a} {op} NEXT({v}).{b}" for u, a, op, v, b in c["theta"]]
    group = "g, " if c["group"] else ""
    aggs = AGGS.format(x=c["target"])
    if c["form"] == "cogra":
        where = ([f"[{', '.join(c['partition'])}]"] if c["partition"] else []) + conds
        text = f"RETURN {group}{aggs} PATTERN {cogra_text(c['pattern'])} " \
               f"SEMANTICS {SEM[c['semantics']]}"
        if where:
            text += " WHERE " + " AND ".join(where)
        if c["group"]:
            text += " GROUP-BY g"
        if c["window"]:
            text += " WITHIN {} SLIDE {}".format(*c["window"])
        return text
    text = f"SELECT {group}{aggs} FROM S WHERE {ceql_text(c['pattern'])}"
    if conds:
        text += " FILTER " + " AND ".join(conds)
    text += f" SEMANTICS {c['semantics']}"
    if c["partition"]:
        text += " PARTITION BY [h]"
    if c["group"]:
        text += " GROUP BY g"
    if c["window"]:
        text += " WINDOW {} SLIDE {}".format(*c["window"])
    return text


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


@pytest.mark.parametrize("backend", ["python", "cython"])
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(c=cases())
def test_trends_equal_brute_force(c, backend):
    if backend == "cython":
        pytest.importorskip("cercore_fast.trends")
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

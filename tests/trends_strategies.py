"""Hypothesis strategies for trend aggregation queries and streams, and their query text in
both forms (COGRA's and CEQL's); shared by the oracle and the backend-differential tests."""

from __future__ import annotations

import trends_oracle as oracle
from hypothesis import strategies as st

SCHEMA = "CREATE STREAM S { " + ", ".join(
    f"EVENT {t} {{ v:int, g:int, h:int, t:primary_time }}" for t in "ABCD") + " }"
SMALL_VALUES = st.integers(0, 3)
CMP = ["<", "<=", ">", ">=", "=", "!="]
# sides of a predicate on adjacent events with arithmetic ({} is the event: x or NEXT(y)),
# as the compiled kernel computes them: int64 (overflowing on 2^62-sized values), truncating
# division, a division by zero (null: the predicate fails), doubles
ARITHMETIC_SIDES = ["{}.v", "{}.v", "{}.v * 2", "({}.v + 1) * 3", "-{}.v", "{}.v / 2",
                    "{}.v % 3", "{}.v * 1.5", "{}.v - 0.5", "{}.v / 0", "-({}.v - 2) % 2"]


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
def cases(draw, max_events: int = 8, values=SMALL_VALUES, arithmetic: bool = False):
    """A random trend query (pattern, predicates, semantics, partitions, groups, window,
    query form) and a stream of up to ``max_events`` events with ``v`` drawn from
    ``values``. ``arithmetic``: the sides of a predicate on adjacent events may compute
    (``ARITHMETIC_SIDES``; the brute-force oracle compares attributes only)."""
    pattern = name_vars(draw(patterns()), [])
    atoms = oracle.atoms(pattern)
    if len(atoms) > 4:
        pattern = name_vars(["plus", ["atom", None, "A"]], [])
        atoms = oracle.atoms(pattern)
    var_names = [a[1] for a in atoms]
    _, _, follow = oracle.first_last_follow(pattern)
    n = draw(st.integers(1, max_events))
    # mostly the pattern's own types, so that trends are long enough to tell algorithms apart
    types = sorted({a[2] for a in atoms}) * 3 + ["D"] + sorted(set("ABC") - {a[2] for a in atoms})
    t, events = 0, []
    for _ in range(n):
        t += draw(st.sampled_from([0, 1, 1, 1, 2]))
        events.append({"type": draw(st.sampled_from(types)), "t": t,
                       "v": draw(values), "g": draw(st.integers(0, 1)),
                       "h": draw(st.integers(0, 1))})
    preds = draw(st.sampled_from(["none", "local", "adjacent", "both"]))
    local, theta = [], []
    if preds in ("local", "both"):
        op = draw(st.sampled_from(CMP + ["IN", "NOT IN"]))
        const = (tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=3)))
                 if op.endswith("IN") else draw(st.integers(0, 3)))
        local.append((draw(st.sampled_from(var_names)), "v", op, const))
    if preds in ("adjacent", "both") and follow:
        u, v = draw(st.sampled_from(sorted(follow)))
        sides = st.sampled_from(ARITHMETIC_SIDES if arithmetic else ["v"])
        theta.append((u, draw(sides), draw(st.sampled_from(CMP)), v, draw(sides)))
    target = draw(st.sampled_from(var_names + ["A"]))
    if target == "A" and not any(a[2] == "A" for a in atoms):
        target = var_names[0]
    return dict(pattern=pattern, events=events, local=local, theta=theta, target=target,
                semantics=draw(st.sampled_from(["any", "next", "contiguous"])),
                partition=("h",) if draw(st.booleans()) else (),
                group=("g",) if draw(st.booleans()) else (),
                window=draw(st.one_of(st.none(), st.integers(1, 4).flatmap(
                    lambda size: st.tuples(st.just(size), st.integers(1, size + 2))))),
                form=draw(st.sampled_from(["cogra", "ceql"])))


def literal(k) -> str:
    """A local condition's constant as text: a number, or the set of an IN."""
    return "{" + ", ".join(map(str, k)) + "}" if isinstance(k, tuple) else str(k)


AGGS = "COUNT(*), COUNT({x}), SUM({x}.v), MIN({x}.v), MAX({x}.v), AVG({x}.v)"
SEM = {"any": "skip-till-any-match", "next": "skip-till-next-match",
       "contiguous": "contiguous"}


def side(attr: str, event: str) -> str:
    """One side of a predicate on adjacent events: the attribute ``attr`` of ``event``, or an
    ``ARITHMETIC_SIDES`` template over it."""
    return attr.format(event) if "{}" in attr else f"{event}.{attr}"


def query_text(c) -> str:
    conds = [f"{v}.{a} {op} {literal(k)}" for v, a, op, k in c["local"]]
    conds += [f"{side(a, u)} {op} {side(b, f'NEXT({v})')}" for u, a, op, v, b in c["theta"]]
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



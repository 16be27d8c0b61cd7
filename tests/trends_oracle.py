"""Brute-force trend aggregation, straight from the definitions (COGRA Defs 2.4, 2.6, 2.8, 2.9
as corrected in notes/seed-002 §1.3): enumerate every trend, then aggregate. Exponential; for
tiny streams only. Shares no code with cercore.trends.

A pattern is a nested tuple: ("atom", var, type) | ("seq", p1, p2, ...) | ("plus", p).
A trend is a sequence of (event index, variable): the same events bound to different variables
are different trends (the renaming of repeated types, Appendix C).
"""

from __future__ import annotations

import operator
import re

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
       "=": operator.eq, "!=": operator.ne,
       "IN": lambda x, values: x in values, "NOT IN": lambda x, values: x not in values}


def atoms(p):
    if p[0] == "atom":
        return [p]
    return [a for sub in p[1:] for a in atoms(sub)]


def regex(p, letter):
    """The pattern as a Python regular expression over one letter per variable."""
    if p[0] == "atom":
        return letter[p[1]]
    if p[0] == "seq":
        return "".join(regex(s, letter) for s in p[1:])
    return "(?:" + regex(p[1], letter) + ")+"


def first_last_follow(p):
    """Glushkov sets of a pattern without disjunction: its first and last variable and the
    pairs (u, v) that may be adjacent."""
    if p[0] == "atom":
        return p[1], p[1], set()
    if p[0] == "plus":
        first, last, fol = first_last_follow(p[1])
        return first, last, fol | {(last, first)}
    parts = [first_last_follow(s) for s in p[1:]]
    fol = set().union(*(x[2] for x in parts))
    for (_, l1, _), (f2, _, _) in zip(parts, parts[1:]):
        fol.add((l1, f2))
    return parts[0][0], parts[-1][1], fol


def trends_in(pattern, stream, local, theta, semantics):
    """Every trend over ``stream`` (the events of one window and one partition after local
    filtering: dicts with 'type', 't' and attributes)."""
    vars_ = {a[1]: a[2] for a in atoms(pattern)}
    letter = {v: chr(ord("a") + i) for i, v in enumerate(vars_)}
    rx = re.compile(regex(pattern, letter))
    start, _, follow = first_last_follow(pattern)
    nodes = [(i, v) for i, e in enumerate(stream) for v, t in vars_.items()
             if e["type"] == t and all(OPS[op](e[a], c) for (lv, a, op, c) in local if lv == v)]

    def any_adjacent(p, x):
        (i, u), (j, v) = p, x
        return ((u, v) in follow and stream[i]["t"] < stream[j]["t"]
                and all(OPS[op](stream[i][a], stream[j][b])
                        for (pu, a, op, sv, b) in theta if pu == u and sv == v))

    out = []

    def dfs(tr):
        if rx.fullmatch("".join(letter[v] for _, v in tr)):
            out.append(list(tr))
        for x in nodes:
            if any_adjacent(tr[-1], x):
                dfs(tr + [x])

    for n in nodes:
        if n[1] == start:
            dfs([n])
    if semantics == "next":
        out = [tr for tr in out if all(
            not any(stream[p[0]]["t"] < stream[x[0]]["t"] < stream[e[0]]["t"]
                    and any_adjacent(p, x) for x in nodes)
            for p, e in zip(tr, tr[1:]))]
    elif semantics == "contiguous":
        out = [tr for tr in out if not any(
            stream[tr[0][0]]["t"] < x["t"] < stream[tr[-1][0]]["t"]
            and k not in {i for i, _ in tr} for k, x in enumerate(stream))]
    return out


def aggregate(trends, stream, targets):
    """COUNT(*) and, per target (vars, attr): COUNT, SUM, MIN, MAX over the trends."""
    res = {"count": len(trends)}
    for name, (vs, attr) in targets.items():
        vals = [[stream[i][attr] for i, v in tr if v in vs] for tr in trends]
        res[name] = {"cnt": sum(len(x) for x in vals), "sum": sum(sum(x) for x in vals),
                     "min": min((min(x) for x in vals if x), default=None),
                     "max": max((max(x) for x in vals if x), default=None)}
    return res


def run(pattern, events, *, local=(), theta=(), semantics="any", partition=(), group=(),
        window=None, targets=None):
    """Rows {(window, group): aggregates} with at least one trend. ``events`` are dicts with
    'type' and 't' (non-decreasing); ``local``: (var, attr, op, const); ``theta``:
    (pred var, attr, op, succ var, attr) = pred.attr op NEXT(succ).attr; ``window``:
    (size, slide); ``targets``: name -> (set of vars, attr)."""
    targets = targets or {}
    vars_ = {a[1]: a[2] for a in atoms(pattern)}
    types = set(vars_.values())
    keys = tuple(dict.fromkeys(tuple(partition) + tuple(group)))

    def in_stream(e):  # local predicates filter; other types stay (they break contiguity)
        if e["type"] not in types:
            return semantics == "contiguous"
        return any(e["type"] == t and all(OPS[op](e[a], c) for (lv, a, op, c) in local
                                          if lv == v) for v, t in vars_.items())

    stream = [e for e in events if in_stream(e) and all(e.get(k) is not None for k in keys)]
    if window is None:
        windows = [None]
    else:
        size, slide = window
        ks = {k for e in stream for k in range((e["t"] - size) // slide - 2, e["t"] // slide + 3)
              if k * slide <= e["t"] < k * slide + size}
        windows = [(k * slide, k * slide + size) for k in sorted(ks)]
    rows = {}
    for w in windows:
        in_w = [e for e in stream if w is None or w[0] <= e["t"] < w[1]]
        for pkey in sorted({tuple(e[k] for k in keys) for e in in_w}):
            sub = [e for e in in_w if tuple(e[k] for k in keys) == pkey]
            res = aggregate(trends_in(pattern, sub, local, theta, semantics), sub, targets)
            g = tuple(pkey[keys.index(a)] for a in group)
            acc = rows.setdefault((w, g), {"count": 0, **{n: {"cnt": 0, "sum": 0, "min": None,
                                                              "max": None} for n in targets}})
            acc["count"] += res["count"]
            for n in targets:
                a, b = acc[n], res[n]
                a["cnt"] += b["cnt"]
                a["sum"] += b["sum"]
                a["min"] = b["min"] if a["min"] is None else (
                    a["min"] if b["min"] is None else min(a["min"], b["min"]))
                a["max"] = b["max"] if a["max"] is None else (
                    a["max"] if b["max"] is None else max(a["max"], b["max"]))
    return {k: v for k, v in rows.items() if v["count"] > 0}

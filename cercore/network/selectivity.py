"""The selectivity catalog the cost model reads (§3.2, §5.4).

* ``σ_{a,b}``: the combined selectivity of the predicates over the pair {a, b} (default 1).
* ``σ(ε, X)``: the fraction of distinct ε events that occur in at least one partial match over
  X (``σ(ε, {ε}) = 1``). It is an input, estimated from traces (cercore.network.estimate); when
  the catalog has no value, it is *derived* by an independence estimate: the expected number
  of partial matches around one ε event, ``Π_{ε'∈X∖ε} R(ε')·W · Π_{pairs⊆X} σ_pair``, capped at
  1 and at the value of every smaller X that contains ε (adding a type can only filter more).
* ``window_sigma(ε, Ψ)``: for the time-window-only baseline, the fraction of ε events within
  one window of at least one pulled Ψ event, ``min(1, Σ_{ψ∈Ψ} R(ψ)·W)`` (each Ψ event pulls
  the ε events of one window; Fig. 1: 1 A per minute pulls the ~1000 B of 30 s, ratio 1/2),
  and never below σ(ε, {ε}∪Ψ): filtering by window alone sends a superset of what the
  predicates let through.

Note on response selectivities (note §3.2b): the paper's Fig. 1 numbers need σ(C,{B,C}) read
as "fraction of C events matching at least one *pulled* B"; the catalog stores whatever the
user or the estimator puts there and the cost model reads σ(ε, {ε}∪Ψ) as printed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cercore.network.errors import NetworkError
from cercore.network.network import Network, read_json
from cercore.network.query import NetQuery


@dataclass
class Selectivities:
    """Pairwise and per-type projection selectivities of one query on one network."""

    rates_per_window: dict[str, float]
    pairwise: dict[frozenset[str], float] = field(default_factory=dict)
    projection: dict[tuple[str, frozenset[str]], float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for k, v in [*self.pairwise.items(), *self.projection.items()]:
            if not (isinstance(v, int | float) and 0 <= v <= 1):
                raise NetworkError(f"selectivity {_key(k)} must be in [0, 1], not {v!r}")
        self._derived: dict[tuple[str, frozenset[str]], float] = {}

    @classmethod
    def for_query(cls, query: NetQuery, network: Network,
                  pairwise: dict[Any, float] | None = None,
                  projection: dict[tuple[str, Iterable[str]], float] | None = None
                  ) -> Selectivities:
        """A catalog for ``query`` on ``network`` with the given explicit values."""
        network.require_types(query.types)
        rw = {t: network.global_rate(t) * query.window for t in query.types}
        pw = {frozenset(k): float(v) for k, v in (pairwise or {}).items()}
        for k in pw:
            if len(k) != 2 or not k <= set(query.types):
                raise NetworkError(f"pairwise selectivity {_key(k)}: name two types of the query")
        pj = {}
        for (t, xs), v in (projection or {}).items():
            xs = frozenset(xs)
            if t not in xs or not xs <= set(query.types):
                raise NetworkError(f"selectivity σ({t}, {_key(xs)}): the set must contain {t} "
                                   "and only types of the query")
            pj[(t, xs)] = float(v)
        return cls(rw, pw, pj)

    def pair(self, a: str, b: str) -> float:
        return self.pairwise.get(frozenset((a, b)), 1.0)

    def sigma(self, t: str, types: Iterable[str]) -> float:
        """σ(t, X)."""
        xs = frozenset(types) | {t}
        if len(xs) == 1:
            return 1.0
        key = (t, xs)
        if key in self.projection:
            return self.projection[key]
        if key not in self._derived:
            members = sorted(xs)
            expected = math.prod(self.rates_per_window.get(u, 0.0) for u in members if u != t)
            expected *= math.prod(self.pair(a, b) for a in members for b in members if a < b)
            smaller = (self.sigma(t, xs - {u}) for u in members if u != t)
            self._derived[key] = min(1.0, expected, *smaller)
        return self._derived[key]

    def window_sigma(self, t: str, pull_set: Iterable[str]) -> float:
        ps = sorted(pull_set)
        by_window = min(1.0, sum(self.rates_per_window.get(u, 0.0) for u in ps))
        # a window-only pull sends a superset of what a predicate pull sends
        return max(by_window, self.sigma(t, {t, *ps}))

    # ---- JSON -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"pairwise": [[*sorted(k), v] for k, v in sorted(self.pairwise.items(),
                                                                 key=lambda kv: sorted(kv[0]))],
                "projection": [[t, sorted(xs), v] for (t, xs), v in
                               sorted(self.projection.items(),
                                      key=lambda kv: (kv[0][0], sorted(kv[0][1])))]}

    @classmethod
    def from_dict(cls, data: dict[str, Any], query: NetQuery, network: Network
                  ) -> Selectivities:
        """``{"pairwise": [[a, b, σ], ...], "projection": [[ε, [types...], σ], ...]}``."""
        try:
            pw = {(a, b): v for a, b, v in data.get("pairwise", [])}
            pj = {(t, tuple(xs)): v for t, xs, v in data.get("projection", [])}
        except (TypeError, ValueError) as exc:
            raise NetworkError(f"selectivities: expected 'pairwise': [[a, b, σ]] and "
                               f"'projection': [[ε, [types], σ]] ({exc})") from None
        return cls.for_query(query, network, pw, pj)

    @classmethod
    def load(cls, path: str | Path, query: NetQuery, network: Network) -> Selectivities:
        return cls.from_dict(read_json(path), query, network)


def _key(k) -> str:
    if isinstance(k, tuple):
        return f"({k[0]}, {_key(k[1])})"
    return "{" + ",".join(sorted(k)) + "}"

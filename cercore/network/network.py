"""The event network Γ = (N, f, r) of §3.1: nodes, the sources of each event type and the local
rate per source. The network is a clique with unit cost per message."""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cercore.network.errors import NetworkError


@dataclass(frozen=True)
class Network:
    """``sources[ε]`` = f(ε), the nodes producing type ε; ``rates[ε]`` = r(ε), the rate of
    each of those sources (events per time unit). ``R(ε) = |f(ε)|·r(ε)`` is the global rate."""

    nodes: tuple[Hashable, ...]
    sources: dict[str, frozenset]
    rates: dict[str, float]

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "sources",
                           {t: frozenset(ns) for t, ns in self.sources.items()})
        object.__setattr__(self, "rates", {t: float(r) for t, r in self.rates.items()})
        if not self.nodes:
            raise NetworkError("a network needs at least one node")
        if len(set(self.nodes)) != len(self.nodes):
            raise NetworkError("node names must be unique")
        nodes = set(self.nodes)
        for t, ns in self.sources.items():
            bad = ns - nodes
            if bad:
                raise NetworkError(f"type {t} has source {sorted(map(str, bad))[0]}, "
                                   "which is not a node of the network")
            if t not in self.rates:
                raise NetworkError(f"type {t} has sources but no rate")
        for t, r in self.rates.items():
            if not (math.isfinite(r) and r >= 0):
                raise NetworkError(f"rate of {t} must be a finite number >= 0, not {r!r}")

    def global_rate(self, t: str) -> float:
        """R(ε) = |f(ε)|·r(ε)."""
        return len(self.sources_of(t)) * self.rates.get(t, 0.0)

    def sources_of(self, t: str) -> frozenset:
        return self.sources.get(t, frozenset())

    def local_types(self, node: Hashable) -> frozenset[str]:
        """The types ``node`` produces."""
        return frozenset(t for t, ns in self.sources.items() if node in ns)

    def require_types(self, types: Iterable[str]) -> None:
        missing = [t for t in types if t not in self.sources]
        if missing:
            raise NetworkError(f"the network has no sources for type {missing[0]}")

    # ---- JSON -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"nodes": list(self.nodes),
                "sources": {t: sorted(ns, key=str) for t, ns in sorted(self.sources.items())},
                "rates": dict(sorted(self.rates.items()))}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Network:
        try:
            nodes = list(data["nodes"])
            sources = {str(t): list(ns) for t, ns in data["sources"].items()}
            rates = {str(t): r for t, r in data["rates"].items()}
        except (KeyError, TypeError, AttributeError) as exc:
            raise NetworkError(f"a network needs 'nodes', 'sources' and 'rates' ({exc})") from None
        return cls(tuple(nodes), sources, rates)

    @classmethod
    def load(cls, path: str | Path) -> Network:
        """A network from JSON: ``{"nodes": [...], "sources": {type: [node, ...]},
        "rates": {type: rate}}``."""
        return cls.from_dict(read_json(path))


def read_json(path: str | Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise NetworkError(f"{path}: not valid JSON ({exc})") from None

"""PrePP plans (§5.1): a sink node plus an ordered list of acquisition steps ``(Ψ, ρ)``: the
already acquired events of the types in the pull set Ψ pull the events of the types in ρ;
Ψ = ∅ pushes them. Correctness is Definition 3."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from cercore.network.errors import PlanError
from cercore.network.network import Network
from cercore.network.query import NetQuery


@dataclass(frozen=True)
class Step:
    """An acquisition step ``(pull_set, acquire)`` = (Ψ, ρ)."""

    pull_set: frozenset[str]
    acquire: frozenset[str]

    def __init__(self, pull_set: Iterable[str], acquire: Iterable[str]) -> None:
        object.__setattr__(self, "pull_set", frozenset(pull_set))
        object.__setattr__(self, "acquire", frozenset(acquire))

    @property
    def is_push(self) -> bool:
        return not self.pull_set

    def __str__(self) -> str:
        return f"({_set(self.pull_set)}, {_set(self.acquire)})"


@dataclass(frozen=True)
class Plan:
    """``sink`` evaluates the query; ``steps`` acquire the types in order.
    ``predicate_pull=False`` marks a time-window-only push-pull plan (the PPoP-style baseline):
    sources answer pull requests by window and order only, not by the predicates."""

    sink: Hashable
    steps: tuple[Step, ...]
    predicate_pull: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(self.steps))

    def available(self, index: int) -> frozenset[str]:
        """𝒜(s_index): the types acquired by the steps before ``index`` (0-based)."""
        return frozenset().union(*(s.acquire for s in self.steps[:index]))

    def step_of(self, event_type: str) -> int:
        for i, s in enumerate(self.steps):
            if event_type in s.acquire:
                return i
        raise PlanError(f"the plan never acquires {event_type}")

    def validate(self, query: NetQuery, network: Network | None = None) -> None:
        """Raise :class:`PlanError` unless the plan is correct (Def. 3): every pull set ⊆ the
        available types, every query type acquired (exactly once), no foreign types, and the
        sink a node of the network."""
        types = set(query.types)
        seen: set[str] = set()
        if not self.steps:
            raise PlanError("a plan needs at least one acquisition step")
        for i, s in enumerate(self.steps):
            if not s.acquire:
                raise PlanError(f"step {i + 1} {s} acquires nothing")
            foreign = (s.acquire | s.pull_set) - types
            if foreign:
                raise PlanError(f"step {i + 1} {s} names {sorted(foreign)[0]}, which the query "
                                "does not use")
            avail = self.available(i)
            missing = s.pull_set - avail
            if missing:
                raise PlanError(f"step {i + 1} {s} pulls with {_set(missing)}, which is not "
                                f"available yet (available: {_set(avail)})")
            again = s.acquire & seen
            if again:
                raise PlanError(f"step {i + 1} {s} acquires {sorted(again)[0]} a second time")
            seen |= s.acquire
        if seen != types:
            raise PlanError(f"the plan never acquires {_set(types - seen)}")
        if network is not None and self.sink not in network.nodes:
            raise PlanError(f"the sink {self.sink!r} is not a node of the network")

    def __str__(self) -> str:
        kind = "" if self.predicate_pull else " (window-only pulls)"
        return (f"sink {self.sink}: ⟨" + ", ".join(map(str, self.steps)) + "⟩" + kind)

    # ---- JSON -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"sink": self.sink, "predicate_pull": self.predicate_pull,
                "steps": [{"pull_set": sorted(s.pull_set), "acquire": sorted(s.acquire)}
                          for s in self.steps]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        try:
            steps = tuple(Step(s["pull_set"], s["acquire"]) for s in data["steps"])
            return cls(data["sink"], steps, bool(data.get("predicate_pull", True)))
        except (KeyError, TypeError) as exc:
            raise PlanError(f"a plan needs 'sink' and 'steps' of pull_set/acquire ({exc})") \
                from None


def _set(types: Iterable[str]) -> str:
    ts = sorted(types)
    return "{" + ",".join(ts) + "}" if ts else "∅"

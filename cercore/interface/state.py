"""Backend-neutral evaluator state: what both evaluators pickle, so that a state saved by one
backend loads into the other.

An ``EvaluatorState`` is the evaluator's whole mutable state as numpy arrays:

- the tECS arena, struct-of-arrays: one array per field of ``NODE_DTYPE`` (``kind`` int8,
  ``pos``, ``maxs``, ``left``, ``right`` int64), node ids as in ``cercore.runtime.tecs``;
- the partition tables in CSR form: partition ``part_ids[i]`` owns entries
  ``part_offsets[i]:part_offsets[i + 1]``; entry ``e`` is det state ``entry_states[e]`` with the
  union list ``list_nodes[entry_offsets[e]:entry_offsets[e + 1]]``. Entries keep their table's
  insertion order (enumeration order depends on it);
- the determinised transition table cache: ``table[sid, letter] = (q•, q∘, next pre state)``,
  int32, with ``MISSING`` where not computed yet (``NO_STATE`` = -1 is a computed "no
  successor");
- the partitions' pre states where they are not the initial state (selection strategies):
  ``pre_ids[i]`` -> ``pre_states[i]``, sorted by partition id;
- ``compact_at``, ``last_tau``, ``reclaimed``;
- ``work``: the evaluator's work counters (``WORK_KEYS``, see ``PythonEvaluator.work_counts``),
  so a restored evaluator keeps counting where it stopped. Optional in the dict: a state
  written before the counters existed loads with zero counts, and readers that do not know the
  key ignore it, so ``STATE_FORMAT`` stays 2.

Pickled evaluators are dicts ``{"format", "backend", "det", "encoder", "evaluator"}`` where
``"evaluator"`` is ``EvaluatorState.to_dict()``; ``format`` is ``STATE_FORMAT``.
"""

from __future__ import annotations

from dataclasses import MISSING as NO_DEFAULT
from dataclasses import dataclass, field, fields

import numpy as np

from cercore.interface.constants import MISSING, OUTPUT

STATE_FORMAT = 2

# The tECS node, described once for both backends: the fields of the Cython arena's ``Node``
# struct (cercore_fast/tecs.pxd) in its order and with its C alignment, so the arena copies
# to and from one NODE_DTYPE array in a block (cercore_fast.tecs checks the layout at import);
# in a state, one array per field.
NODE_DTYPE = np.dtype([("pos", np.int64), ("maxs", np.int64), ("left", np.int64),
                       ("right", np.int64), ("kind", np.int8)], align=True)
NODE_FIELDS: tuple[str, ...] = NODE_DTYPE.names

# Work counters, identical on both backends (documented in PythonEvaluator.work_counts).
WORK_KEYS = ("events", "transitions", "determinisation_misses", "nodes_bottom", "nodes_output",
             "nodes_union", "union_list_inserts", "union_list_merges", "step_work_max",
             "enumerated", "enumerated_positions", "enumeration_nodes", "predicate_checks",
             "branches_pruned")

_ARRAYS = {**{f: NODE_DTYPE[f] for f in NODE_FIELDS}, "part_ids": np.int64,
           "part_offsets": np.int64, "entry_states": np.int32, "entry_offsets": np.int64,
           "list_nodes": np.int64, "table": np.int32, "pre_ids": np.int64,
           "pre_states": np.int32}


def check_pickled(d: dict) -> None:
    """Reject pickled evaluator states of an unknown format."""
    fmt = d.get("format") if isinstance(d, dict) else None
    if fmt != STATE_FORMAT:
        raise ValueError(f"unsupported cercore evaluator state format {fmt!r} "
                         f"(this version reads format {STATE_FORMAT})")


def pickled(evaluator) -> dict:
    """The pickle envelope of an evaluator of either backend (``__getstate__``)."""
    return {"format": STATE_FORMAT, "backend": evaluator.backend, "det": evaluator.det,
            "encoder": evaluator.encoder, "evaluator": evaluator.to_state().to_dict()}


def unpickled(evaluator, d: dict) -> None:
    """Load a pickle envelope into a fresh evaluator of either backend (``__setstate__``);
    the engine installs its check of predicates between events again."""
    check_pickled(d)
    evaluator.det = d["det"]
    evaluator.encoder = d["encoder"]
    evaluator.from_state(EvaluatorState.from_dict(d["evaluator"]))


@dataclass
class EvaluatorState:
    """One evaluator's whole mutable state, the same for both backends (see the module)."""

    kind: np.ndarray
    pos: np.ndarray
    maxs: np.ndarray
    left: np.ndarray
    right: np.ndarray
    part_ids: np.ndarray
    part_offsets: np.ndarray
    entry_states: np.ndarray
    entry_offsets: np.ndarray
    list_nodes: np.ndarray
    table: np.ndarray
    pre_ids: np.ndarray
    pre_states: np.ndarray
    compact_at: int
    last_tau: int
    reclaimed: bool
    work: dict = field(default_factory=dict)

    # ---- (de)serialisation --------------------------------------------------------------------
    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["format"] = STATE_FORMAT
        return d

    @classmethod
    def from_dict(cls, d: dict) -> EvaluatorState:
        check_pickled(d)
        # fields with a default (``work``) may be absent: states written before they existed
        state = cls(**{f.name: d[f.name] for f in fields(cls)
                       if f.name in d or f.default_factory is NO_DEFAULT})
        state.validate()
        return state

    def validate(self) -> None:
        for name, dtype in _ARRAYS.items():
            setattr(self, name, np.ascontiguousarray(getattr(self, name), dtype=dtype))
        n = len(self.kind)
        if any(len(getattr(self, f)) != n for f in NODE_FIELDS):
            raise ValueError("evaluator state: node arrays of different lengths")
        if len(self.part_offsets) != len(self.part_ids) + 1 \
                or len(self.entry_offsets) != len(self.entry_states) + 1:
            raise ValueError("evaluator state: bad offsets")
        if self.table.ndim != 3 or self.table.shape[2] != 3:
            raise ValueError("evaluator state: transition table must have shape (rows, cols, 3)")
        if len(self.pre_ids) != len(self.pre_states):
            raise ValueError("evaluator state: pre state arrays of different lengths")
        # (an OUTPUT node's right holds its binding label, encoded negative)
        for arr in (self.left, self.right[self.kind != OUTPUT], self.list_nodes):
            if arr.size and (arr.max() >= n or arr.min() < -1):
                raise ValueError("evaluator state: node id out of range")
        if (self.right[self.kind == OUTPUT] >= 0).any():
            raise ValueError("evaluator state: an OUTPUT node with a right child")
        self.compact_at, self.last_tau = int(self.compact_at), int(self.last_tau)
        self.reclaimed = bool(self.reclaimed)
        self.work = {k: int(self.work.get(k, 0)) for k in WORK_KEYS}

    def trimmed(self) -> EvaluatorState:
        """Drop the table's all-MISSING trailing rows/columns (capacity slack)."""
        t = self.table
        if t.size:
            known = (t != MISSING).any(axis=2)
            rows = np.flatnonzero(known.any(axis=1))
            cols = np.flatnonzero(known.any(axis=0))
            t = t[: rows[-1] + 1 if rows.size else 0, : cols[-1] + 1 if cols.size else 0]
            self.table = np.ascontiguousarray(t)
        return self

    # ---- converters -----------------------------------------------------------------------------
    @staticmethod
    def pack_nodes(nodes) -> dict[str, np.ndarray]:
        """The node arrays of a state from anything indexed by ``NODE_FIELDS`` (a NODE_DTYPE
        array, a reference arena's lists by name)."""
        return {f: np.array(nodes[f], dtype=NODE_DTYPE[f]) for f in NODE_FIELDS}

    def nodes(self) -> np.ndarray:
        """The node arrays as one NODE_DTYPE array (the Cython arena's memory layout)."""
        out = np.empty(len(self.kind), dtype=NODE_DTYPE)
        for f in NODE_FIELDS:
            out[f] = getattr(self, f)
        return out

    @staticmethod
    def pack_pre(pre: dict[int, int]) -> dict[str, np.ndarray]:
        ids = sorted(pre)
        return {"pre_ids": np.array(ids, dtype=np.int64),
                "pre_states": np.array([pre[i] for i in ids], dtype=np.int32)}

    def pre_map(self) -> dict[int, int]:
        return dict(zip(self.pre_ids.tolist(), self.pre_states.tolist()))

    def partitions(self) -> dict[int, dict[int, list[int]]]:
        """Partition id -> {det state -> union list}, tables in insertion order."""
        out: dict[int, dict[int, list[int]]] = {}
        states = self.entry_states.tolist()
        eo = self.entry_offsets.tolist()
        nodes = self.list_nodes.tolist()
        po = self.part_offsets.tolist()
        for i, pid in enumerate(self.part_ids.tolist()):
            out[pid] = {states[e]: nodes[eo[e]:eo[e + 1]] for e in range(po[i], po[i + 1])}
        return out

    @staticmethod
    def pack_partitions(partitions: dict[int, dict[int, list[int]]]) -> dict[str, np.ndarray]:
        """CSR arrays of a partition map, partitions sorted by id, entries in table order."""
        part_ids, part_offsets, entry_states, entry_offsets, list_nodes = [], [0], [], [0], []
        for pid in sorted(partitions):
            for q, ul in partitions[pid].items():
                entry_states.append(q)
                list_nodes.extend(ul)
                entry_offsets.append(len(list_nodes))
            part_ids.append(pid)
            part_offsets.append(len(entry_states))
        return {"part_ids": np.array(part_ids, dtype=np.int64),
                "part_offsets": np.array(part_offsets, dtype=np.int64),
                "entry_states": np.array(entry_states, dtype=np.int32),
                "entry_offsets": np.array(entry_offsets, dtype=np.int64),
                "list_nodes": np.array(list_nodes, dtype=np.int64)}

    @staticmethod
    def pack_table(rows: list[list]) -> np.ndarray:
        """Reference-backend table (det state -> [letter -> (q•, q∘, pre) or None]) as int32
        array."""
        n_cols = max((len(r) for r in rows), default=0)
        table = np.full((len(rows), n_cols, 3), MISSING, dtype=np.int32)
        for s, row in enumerate(rows):
            for letter, tr in enumerate(row):
                if tr is not None:
                    table[s, letter] = tr
        return table

    def table_rows(self) -> list[list]:
        """The transition table in the reference backend's shape."""
        rows: list[list] = []
        for s in range(self.table.shape[0]):
            row = [None if a == MISSING else (a, b, c) for a, b, c in self.table[s].tolist()]
            while row and row[-1] is None:
                row.pop()
            rows.append(row)
        return rows

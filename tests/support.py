"""Test data and helpers shared by the test modules (import them from here, not from conftest:
tests/spark has its own conftest, and ``from conftest import`` would pick whichever pytest
loaded last)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa
import pytest

import cercore
from cercore.runtime.backend import CYTHON_AVAILABLE
from cercore.types import AttrType

BACKENDS = ["python"] + (["cython"] if CYTHON_AVAILABLE else [])

# Foundations of CEP, Figure 1: H = humidity, T = temperature; value in ``v``.
HT_DECL = "CREATE STREAM S { EVENT H { id:int, v:int }, EVENT T { id:int, v:int } }"
F1_STREAM = [("H", {"id": 2, "v": 25}), ("T", {"id": 0, "v": 45}), ("H", {"id": 0, "v": 20}),
             ("H", {"id": 1, "v": 25}), ("T", {"id": 1, "v": 40}), ("T", {"id": 0, "v": 42}),
             ("T", {"id": 1, "v": 25}), ("H", {"id": 1, "v": 70}), ("H", {"id": 0, "v": 18})]

# Letters-only streams for the Foundations test vectors: types A..E with one int attribute.
ABC_DECL = ("CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int }, EVENT C { v:int }, "
            "EVENT D { v:int }, EVENT E { v:int } }")

STOCK_DECL = ("CREATE STREAM Stock { EVENT BUY { id:int, name:string, volume:int, price:double, "
              "stock_time:int }, EVENT SELL { id:int, name:string, volume:int, price:double, "
              "stock_time:int } }")


def letters(word: str, values: list[int] | None = None) -> list[tuple[str, dict]]:
    """'AAB' -> [('A', {'v': 0}), ('A', {'v': 0}), ('B', {'v': 0})]."""
    values = values or [0] * len(word)
    return [(c, {"v": v}) for c, v in zip(word, values)]


def outputs(query: str, schema, events, backend: str = "python", **kw) -> set[tuple]:
    """The set of (start, end, positions); fails on duplicates."""
    ces = [(ce.start, ce.end, ce.positions)
           for ce in cercore.compile(query, schema, **kw).engine(backend).process(events)]
    assert len(ces) == len(set(ces)), f"duplicate complex events: {ces}"
    return set(ces)


def position_sets(query: str, schema, events, backend: str = "python") -> set[frozenset]:
    return {frozenset(p) for _, _, p in outputs(query, schema, events, backend)}


def compiled_or_discarded(text: str, schema) -> cercore.CompiledQuery:
    """A generated query, compiled; discarded (hypothesis ``assume``) when NEXT/LAST/MAX cannot
    rank its matches, a refusal tests/runtime/test_full_ceql_vs_oracle.py checks."""
    from hypothesis import assume

    try:
        return cercore.compile(text, schema)
    except cercore.CEQLSemanticError as e:
        assume("no position to rank" not in str(e))
        raise


def compiled_or_none(query, schema) -> cercore.CompiledQuery | None:
    """A generated query, compiled; None when cercore refuses it."""
    try:
        return cercore.compile(query, schema)
    except cercore.CercoreError:
        return None


ARROW_TYPES = {AttrType.INT: pa.int64(), AttrType.DOUBLE: pa.float64(),
               AttrType.STRING: pa.string(), AttrType.BOOL: pa.bool_()}


def as_table(schema, events: list[tuple]) -> pa.Table:
    """``(type, attrs)`` events as one Arrow table: a column per attribute of ``schema``
    (null where an event's type does not declare it, or the event has None)."""
    cols = {"event_type": pa.array([e[0] for e in events], pa.string())}
    for a, t in schema.attribute_types().items():
        cols[a] = pa.array([e[1].get(a) for e in events], ARROW_TYPES[t])
    return pa.table(cols)


@contextmanager
def runs_spied() -> Iterator[list[tuple[int, int, int]]]:
    """Inside: the (first, start, stop) of every T-CER run ``runtime/slices.py`` evaluates
    (its prefix from ``first``, its own events [start, stop)), in run order once the block
    ends (the runs' threads record them as they start). Runs that go to worker processes
    (``runtime/processes.py``) run in threads instead inside: a process's calls cannot be
    spied on from here (``tests/trends/test_trends_processes.py`` tests the processes)."""
    from cercore.runtime import slices

    runs: list[tuple[int, int, int]] = []
    original = slices._evaluate_run

    def spied(run, table, stream, first, start, stop, collect, base=0):
        runs.append((first, start, stop))
        return original(run, table, stream, first, start, stop, collect, base)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(slices, "_evaluate_run", spied)
        patch.setattr(slices, "_in_processes", slices._in_threads)
        try:
            yield runs
        finally:
            runs.sort(key=lambda run: run[1])


def exit_at_once(*args) -> None:
    """Stands for a T-CER run in a worker process that dies (``os._exit``, as a kill would
    end it): importable by the worker, unlike a local function."""
    os._exit(3)


def raise_in_worker(*args) -> None:
    """Stands for a T-CER run in a worker process that raises."""
    raise ValueError("a run that fails in its worker")

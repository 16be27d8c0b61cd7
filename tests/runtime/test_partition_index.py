"""Partition ids: the coded way (sorted int64 codes, numpy only) hands out exactly the ids of
the dict way (a dict from key tuples), batch after batch, with partitions forgotten between."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cercore.input import StringColumn
from cercore.input.columns import Columns
from cercore.runtime.partitions import NO_PARTITION, PartitionIndex
from cercore.schema import Schema

DECL = ("CREATE STREAM S { EVENT A { k:int, s:string }, EVENT B { k:int, s:string }, "
        "EVENT C { x:int } }")


def batch(rows: list[tuple[int, int | None, str | None]]) -> tuple:
    """(type id, k, s) rows -> type ids, columns, read mask."""
    tids = np.array([r[0] for r in rows], dtype=np.int32)
    ks = [r[1] for r in rows]
    ss = [r[2] for r in rows]
    cols = Columns(len(rows), {"k": np.array([0 if v is None else v for v in ks], np.int64),
                               "s": StringColumn.encode(ss),
                               "x": np.zeros(len(rows), np.int64)},
                   {"k": np.array([v is not None for v in ks]),
                    "s": np.array([v is not None for v in ss]),
                    "x": np.ones(len(rows), bool)})
    return tids, cols, np.ones(len(rows), dtype=bool)


# int keys: a compact range (found in a table over it) or far apart, to int64's ends (found
# by binary search and sorted)
INTS = st.one_of(st.integers(-3, 3), st.sampled_from([-2 ** 63, 2 ** 63 - 1, 2 ** 40, -7000]))
ROWS = st.lists(st.tuples(st.integers(0, 2), st.one_of(st.none(), INTS),
                          st.one_of(st.none(), st.sampled_from(["a", "b", "c", "d"]))),
                max_size=12)


@settings(max_examples=300, deadline=None)
@given(batches=st.lists(st.tuples(ROWS, st.lists(st.integers(0, 8), max_size=4), ROWS),
                       max_size=6),
       attr=st.sampled_from(["k", "s"]))
def test_coded_ids_equal_dict_ids(batches, attr):
    """Batches, events one at a time (``assign_one``) and forgotten partitions between."""
    schema = Schema.parse(DECL)
    coded = PartitionIndex(schema, [(attr,)])
    plain = PartitionIndex(schema, [(attr,)])
    assert coded.coded is not None
    plain.coded = None
    for rows, live, pushed in batches:
        args = batch(rows)
        got, want = coded.assign(*args), plain.assign(*args)
        assert got.tolist() == want.tolist()
        assert (got[args[0] == 2] == NO_PARTITION).all()  # C has no key attribute
        for tid, k, s in pushed:
            row = {"k": k, "s": s, "x": 0}
            assert coded.assign_one(tid, row) == plain.assign_one(tid, row)
        coded.forget(set(live))
        plain.forget(set(live))
        assert len(coded) == len(plain)

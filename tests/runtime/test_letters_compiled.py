"""The compiled letter passes (cercore_fast.letters) give the numpy path's letters and active
events exactly -- the same interned numbering, in the same order -- on random full-CEQL queries
over random streams, stream-tagged or not, with partitions and inert-event skipping."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import SCHEMAS, queries, streams
from support import compiled_or_discarded

from cercore.ceql.printer import format_query
from cercore.runtime.backend import CYTHON_AVAILABLE, Backend
from cercore.runtime.letters import Alphabet, LetterEncoder

pytestmark = pytest.mark.skipif(not CYTHON_AVAILABLE, reason="needs the compiled extension")

KERNEL = Backend("cython").letters if CYTHON_AVAILABLE else None  # the compiled passes


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_compiled_letters_equal_numpy_letters(data):
    schema = data.draw(st.sampled_from(list(SCHEMAS.values())))
    query = compiled_or_discarded(format_query(data.draw(queries(schema, full=True))), schema)
    events = data.draw(streams(schema, max_len=40, tagged=True))
    engine = query.engine("python", on_error="skip")
    numpy_path = LetterEncoder(Alphabet.of_query(query.analysed))
    compiled = LetterEncoder(Alphabet.of_query(query.analysed))
    skip_inert = data.draw(st.booleans())
    for batch in engine.input.batches(events, None):
        read = numpy_path.read_mask(batch)
        assert np.array_equal(read, compiled.read_mask(batch))
        expected = numpy_path.encode(batch, None, read)
        got = compiled.encode(batch, {}, read, KERNEL)
        assert got.dtype == expected.dtype and np.array_equal(got, expected)
        pids = engine.partitions.assign(batch.type_ids, batch.columns, read) \
            if engine.partitions.partitioned else None
        assert np.array_equal(numpy_path.active(read, expected, pids, skip_inert),
                              compiled.active(read, got, pids, skip_inert, KERNEL))
        engine.input.consumed(batch, batch.n)
    assert numpy_path.keys == compiled.keys and numpy_path.atom_masks == compiled.atom_masks


def test_compiled_letters_need_a_dense_key_space():
    """Beyond DENSE_BITS of key the compiled encoder takes the numpy path (same letters)."""
    schema = SCHEMAS["seconds"]
    many = " OR ".join(f"x[v = {i}]" for i in range(20))
    query = compiled_or_discarded(f"SELECT * FROM S WHERE A AS x FILTER {many}", schema)
    compiled = LetterEncoder(Alphabet.of_query(query.analysed))
    assert compiled.dense is None
    events = [("A", {"v": i % 25, "w": 0.0, "s": "a", "b": True, "k": 0, "ts": i})
              for i in range(60)]
    engine = query.engine("python")
    for batch in engine.input.batches(events, None):
        read = compiled.read_mask(batch)
        letters = compiled.encode(batch, None, read, KERNEL)
        assert np.array_equal(letters, LetterEncoder(Alphabet.of_query(query.analysed)).encode(
            batch, None, read))

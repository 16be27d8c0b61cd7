"""Every input kind gives the same complex events as records, on both backends.

Records, Arrow tables with plain / large / view / dictionary-encoded strings, pandas frames
with ``category`` columns, Parquet files read back with their dictionaries, and CSV files go
through the one input layer (``cercore.input``); random full-CEQL queries (``strategies``) and
random streams with stream tags must give identical outputs in the same order, whatever the
input and however the stream is cut into batches.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import SCHEMAS, queries, streams
from support import compiled_or_discarded

import cercore
from cercore.ceql.printer import format_query
from cercore.io import read_events
from cercore.types import AttrType

ARROW = {AttrType.INT: pa.int64(), AttrType.DOUBLE: pa.float64(), AttrType.STRING: pa.string(),
         AttrType.BOOL: pa.bool_()}
STRING_KINDS = ("string", "large_string", "string_view", "dictionary")


def to_table(schema: cercore.Schema, events: list[tuple], strings: str = "string") -> pa.Table:
    """Records ``(type, attrs[, stream])`` as an Arrow table; string columns (the type and
    stream columns too) stored as ``strings``."""
    types = schema.attribute_types()
    cols = {"event_type": [e[0] for e in events],
            "stream": [e[2] if len(e) == 3 else None for e in events]}
    for a in types:
        cols[a] = [e[1].get(a) for e in events]

    def string_array(values):
        arr = pa.array(values, pa.string())
        if strings == "dictionary":
            return arr.dictionary_encode()
        return arr.cast({"string": pa.string(), "large_string": pa.large_string(),
                         "string_view": pa.string_view()}[strings])

    arrays = {"event_type": string_array(cols["event_type"]),
              "stream": string_array(cols["stream"])}
    for a, t in types.items():
        arrays[a] = string_array(cols[a]) if t is AttrType.STRING else pa.array(cols[a], ARROW[t])
    return pa.table(arrays)


def outputs(engine, events) -> list[tuple]:
    return [(ce.start, ce.end, ce.positions, tuple((e.type, e.position, e.attributes)
                                                   for e in ce.events))
            for ce in engine.process(events)]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_input_kind_equals_records(backend, data):
    schema = data.draw(st.sampled_from(list(SCHEMAS.values())))
    query = compiled_or_discarded(format_query(data.draw(queries(schema, full=True))), schema)
    events = data.draw(streams(schema, max_len=10, tagged=True))
    batch = data.draw(st.sampled_from([1, 3, 16384]))

    def engine():
        e = query.engine(backend, stream_column="stream")
        e.input.batch_size = batch
        return e

    # records carry their stream tag one by one: push each
    rec = engine()
    want = []
    for e in events:
        want.extend((ce.start, ce.end, ce.positions,
                     tuple((x.type, x.position, x.attributes) for x in ce.events))
                    for ce in rec.push(e[0], e[1], stream=e[2] if len(e) == 3 else None))
    for kind in STRING_KINDS:
        assert outputs(engine(), to_table(schema, events, kind)) == want, kind
    frame = to_table(schema, events).to_pandas()
    for c in frame.columns:
        if frame[c].dtype == object and c != "stream":
            frame[c] = frame[c].astype("category")
    assert outputs(engine(), frame) == want, "pandas category"


def test_parquet_dictionary_and_csv_equal_records(backend, tmp_path):
    from cercore.bench.datasets import schema, stock_trace

    sch = schema("stock_trace")
    table = stock_trace(3000)
    query = cercore.compile("""
        SELECT * FROM S WHERE (SELL AS a; BUY AS b; BUY AS c)
        FILTER a[name = 'INTC'] AND b[name LIKE 'R.M+'] AND c[name IN {'QQQ', 'MSFT'}]
        PARTITION BY [volume] WITHIN 30000 [stock_time]""", sch)
    rows = table.to_pylist()
    records = [(r.pop("event_type"), r) for r in rows]
    want = outputs(query.engine(backend), records)
    assert want  # the query matches on this prefix: the comparison is not vacuous
    path = tmp_path / "trades.parquet"
    pq.write_table(table, path, use_dictionary=True)
    dictionary = pq.read_table(path, read_dictionary=["event_type", "name"])
    assert pa.types.is_dictionary(dictionary.schema.field("name").type)
    assert outputs(query.engine(backend), dictionary) == want
    assert outputs(query.engine(backend), read_events(path, sch)) == want
    csv = tmp_path / "trades.csv"
    import pyarrow.csv as pcsv

    pcsv.write_csv(table, csv)
    assert outputs(query.engine(backend), read_events(csv, sch)) == want


def test_dictionary_strings_are_not_rejected(backend):
    """Regression: a categorical column used to fail every row with "must be string"."""
    import pandas as pd

    sch = cercore.Schema.parse("CREATE STREAM S { EVENT T { name:string, x:int } }")
    query = cercore.compile("SELECT * FROM S WHERE T AS a; T AS b FILTER a[name = 'INTC'] "
                            "AND b[name = 'QQQ']", sch)
    frame = pd.DataFrame({"event_type": pd.Categorical(["T", "T", "T"]),
                          "name": pd.Categorical(["INTC", "MSFT", "QQQ"]), "x": [1, 2, 3]})
    got = [ce.positions for ce in query.engine(backend).process(frame)]
    assert got == [(0, 2)]


def test_large_dictionary_slices_stay_proportional_to_the_batch():
    """A batch cut from a column with a large dictionary reads only the values it uses."""
    from cercore.input.decode import string_codes

    names = pa.array([f"n{i}" for i in range(10_000)]).dictionary_encode()
    column, ok = string_codes(names.slice(5000, 10))
    assert ok is None and len(column.dictionary) == 10
    assert column.tolist() == [f"n{i}" for i in range(5000, 5010)]

"""The in-place plan (``cercore.spark.base.plan`` module doc) as the workers run it, without a
JVM: the stream cut into read partitions (contiguous stretches, as Spark reads a log written in
time order), one engine per read partition keeping what does not cross its start, and one
engine per boundary over the rows within K of it keeping what crosses and ends after it. The
union must equal the local engine's complex events exactly (a multiset: nothing lost, nothing
twice), keyed or not, with strategies, LIMIT, predicates between events and leading absences.
The Spark runs (``ordered=True`` and the order the first pass finds) are in
``test_spark_batch.py``-style tests at the end, on a real local session.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from spark_helpers import local_complex_events
from strategies import SCHEMAS, deadline_queries, queries, queries_between_events, streams
from test_spark_tcer_slices import ARROW, ATTRS, out_schema

import cercore
from cercore.ceql import ast, printer
from cercore.errors import EventError
from cercore.spark.base.job import (
    GROUP,
    KEY,
    POS,
    TIME,
    TYPE,
    EngineJob,
    ReadPartitions,
    run_sorted_groups,
)
from cercore.spark.base.plan import SINGLE, choose_plan
from cercore.spark.ceql.batch import in_place_bounds
from cercore.spark.ceql.read_order import ReadLayout


def part_index(j: int) -> int:
    return 7 * j + 3  # read partitions are numbered as Spark numbers them, not 0, 1, ...


def read_layout(events, cuts: list[int]) -> tuple[ReadLayout, list[int]]:
    """The stream cut before each index of ``cuts``: its layout, and each event's partition."""
    edges = [0, *cuts, len(events)]
    parts, owner = [], []
    for j, (lo, hi) in enumerate(zip(edges, edges[1:])):
        parts.append((part_index(j), lo, events[lo][1]["ts"], events[hi - 1][1]["ts"]))
        owner += [part_index(j)] * (hi - lo)
    read = ReadLayout(True, {p: s for p, s, _, _ in parts}, len(events), 0,
                      parts[0][2], parts[-1][3], 0, None, (), tuple(parts))
    return read, owner


def rows_table(events, rows: list[tuple[int, int]]) -> pa.Table:
    """(group, stream index) rows as the plan's workers get them."""
    cols = {TYPE: [events[i][0] for _, i in rows], TIME: [events[i][1]["ts"] for _, i in rows],
            POS: [i for _, i in rows], KEY: [None] * len(rows), GROUP: [g for g, _ in rows],
            "event_type": [events[i][0] for _, i in rows]}
    for a in ATTRS:
        cols[a] = pa.array([events[i][1].get(a) for _, i in rows], ARROW[a])
    return pa.table(cols)


def in_place_complex_events(query: str, schema, events, cuts: list[int], offset: int
                            ) -> Counter | None:
    """Both stages over the stream cut at ``cuts`` (None: the partitions are too short)."""
    read, owner = read_layout(events, cuts)
    laid = in_place_bounds(read, offset)
    if laid is None:
        return None
    bounds, head, tail, nxt = laid
    declared = schema.attribute_types()
    job = EngineJob(query, schema, tuple((a, TIME if a == "ts" else a) for a in ATTRS
                                         if a in declared), ("event_type", *ATTRS))
    placed = [(owner[i], i) for i in range(len(events))]
    seen = {q: (owner.count(q), min(a["ts"] for (_, a), o in zip(events, owner) if o == q),
                max(a["ts"] for (_, a), o in zip(events, owner) if o == q)) for q in bounds}
    edges = []
    for i, (_, attrs) in enumerate(events):
        q, t = owner[i], attrs["ts"]
        if q in head and t <= head[q]:
            edges.append((q, i))
        if q in tail and t >= tail[q]:
            edges.append((nxt[q], i))
    edges.sort()  # the boundary stage's sort (GROUP, POS)
    found = Counter()
    for rows, rule in ((placed, ReadPartitions(offset, bounds, expected=seen)),
                       (edges, ReadPartitions(offset, bounds, crossing=True))):
        batches = rows_table(events, rows).to_batches(max_chunksize=3)
        for rb in run_sorted_groups(iter(batches), job, None, out_schema(),
                                    read_partitions=rule, in_order=None):
            found.update((r["start"], r["end"], tuple(r["positions"])) for r in rb.to_pylist())
    return found


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_in_place_equals_the_local_engine(data):
    schema = data.draw(st.sampled_from([SCHEMAS["seconds"], SCHEMAS["millis"]]))
    q = data.draw(st.one_of(queries(schema, windowed=True, full=True),
                            queries(schema, windowed=True),
                            queries_between_events(schema, windowed=True),
                            deadline_queries(schema, windowed=True)))
    if data.draw(st.booleans()):  # mostly what runs in place: WITHIN on ts, no CONSUME BY
        within = q.within if isinstance(q.within, ast.AttrWindow) else \
            ast.AttrWindow(data.draw(st.sampled_from([0, 1, 2, 3, 4])), "ts")
        q = dataclasses.replace(q, consume=None, within=within)
    text = printer.format_query(q)
    try:
        compiled = cercore.compile(text, schema)
    except cercore.CEQLSemanticError:
        assume(False)
    plan = choose_plan(compiled.analysed, "ts")
    if plan.kind == SINGLE or plan.in_place is None:
        event(f"not in place: {plan.kind}")
        return
    events = data.draw(streams(schema, max_len=14))
    assume(len(events) >= 2 and all(a.get("ts") is not None for _, a in events))
    stretch = data.draw(st.sampled_from([1, 3, 7]))  # read partitions longer than K, or not
    events = [(t, {**a, "ts": a["ts"] * stretch}) for t, a in events]
    cuts = sorted(data.draw(st.sets(st.integers(1, len(events) - 1), max_size=4)))
    got = in_place_complex_events(text, schema, events, cuts, plan.in_place)
    if got is None:
        event("partitions shorter than K: shuffled plan")
        return
    expected = local_complex_events(text, schema, events)
    event(f"compared, {len(cuts) + 1} partitions, {plan.kind}, "
          + ("some" if expected else "no") + " complex events")
    assert got == expected, (text, cuts)


AB = cercore.Schema.parse("CREATE STREAM S { EVENT A { ts:int, k:int }, "
                          "EVENT B { ts:int, k:int } }", time_attribute="ts")


def ab(*items):
    return [(t, {"ts": ts, "k": k}) for t, ts, k in items]


def test_a_pair_across_a_boundary_is_found_once():
    """A at 9 (partition 1), B at 11 (partition 2), WITHIN 5: partition 2's engine cannot see
    A, partition 1's cannot see B; the boundary stage finds it, once."""
    events = ab(("A", 0, 1), ("A", 9, 1), ("B", 11, 1), ("B", 12, 2), ("A", 30, 1),
                ("B", 33, 1))
    query = "SELECT * FROM S WHERE A AS a ; B AS b PARTITION BY [k] WITHIN 5 [ts]"
    got = in_place_complex_events(query, AB, events, [2, 4], 5)
    assert got == local_complex_events(query, AB, events) == Counter(
        {(1, 2, (1, 2)): 1, (4, 5, (4, 5)): 1})


def test_within_is_inclusive_across_a_boundary():
    """A at 6 ends partition 1, B at 11 starts partition 2, WITHIN 5: end − K = 6 is the last
    time of partition 1, so the pair crosses (WITHIN is ≤) and the boundary stage finds it."""
    events = ab(("A", 0, 1), ("A", 6, 1), ("B", 11, 1), ("B", 20, 1))
    query = "SELECT * FROM S WHERE A AS a ; B AS b PARTITION BY [k] WITHIN 5 [ts]"
    got = in_place_complex_events(query, AB, events, [2], 5)
    assert got == local_complex_events(query, AB, events) == Counter({(1, 2, (1, 2)): 1})


def test_partitions_shorter_than_the_window_fall_back():
    events = ab(("A", 0, 1), ("A", 1, 1), ("B", 2, 1), ("B", 3, 1))
    assert in_place_complex_events("SELECT * FROM S WHERE A ; B WITHIN 5 [ts]", AB, events,
                                   [1, 2, 3], 5) is None


def test_a_read_partition_unlike_the_footers_is_an_error():
    """The in-place task checks its rows, first and last time against the footers'."""
    events = ab(("A", 1, 1), ("B", 2, 1), ("A", 3, 1), ("B", 9, 1))
    read, owner = read_layout(events, [2])
    bounds = in_place_bounds(read, 1)[0]
    job = EngineJob("SELECT * FROM S WHERE A ; B WITHIN 1 [ts]", AB, (("ts", TIME), ("k", "k")),
                    ("event_type", *ATTRS))
    rows = rows_table(events, [(owner[i], i) for i in range(4)])
    right = {part_index(0): (2, 1, 2), part_index(1): (2, 3, 9)}
    for wrong in ({**right, part_index(1): (3, 3, 9)}, {**right, part_index(0): (2, 1, 3)}):
        with pytest.raises(cercore.CercoreError, match="changed since"):
            list(run_sorted_groups(iter(rows.to_batches()), job, None, out_schema(),
                                   read_partitions=ReadPartitions(1, bounds, expected=wrong)))
    assert list(run_sorted_groups(iter(rows.to_batches()), job, None, out_schema(),
                                  read_partitions=ReadPartitions(1, bounds, expected=right)))


def test_a_row_out_of_order_is_an_error():
    """The user said ordered=True: the workers check it, and a row going back in time is an
    EventError naming its position, never a wrong answer."""
    events = ab(("A", 5, 1), ("B", 3, 1))
    read, _ = read_layout(events, [])
    bounds = in_place_bounds(read, 5)[0]
    job = EngineJob("SELECT * FROM S WHERE A ; B WITHIN 5 [ts]", AB,
                    (("ts", TIME), ("k", "k")), ("event_type", "ts", "k"))
    table = pa.table({TYPE: ["A", "B"], TIME: [5, 3], POS: [0, 1], KEY: [None, None],
                      GROUP: [part_index(0)] * 2, "event_type": ["A", "B"], "ts": [5, 3],
                      "k": [1, 1]})
    with pytest.raises(EventError, match="position 1 has time 3"):
        list(run_sorted_groups(iter(table.to_batches()), job, None, out_schema(),
                               read_partitions=ReadPartitions(5, bounds), in_order=None))


def test_explain_says_when_a_plan_runs_in_place():
    from cercore.spark import explain

    keyed = explain(AB, "SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 5 [ts]")
    assert "in place when the input is in event order" in keyed and "K = 5" in keyed
    unbounded = explain(AB, "SELECT * FROM S WHERE A ; B PARTITION BY [k]")
    assert "not in place: only WITHIN on the ordering time bounds how far back" in unbounded
    consumed = explain(AB, "SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 5 [ts] "
                           "CONSUME BY PARTITION")
    assert "not in place: history-dependent" in consumed
    assert "in place" not in explain(AB, "SELECT * FROM S WHERE A ; B PARTITION BY [k] "
                                         "WITHIN 5 [ts]", streaming=True)


# ---- on a real local SparkSession ------------------------------------------------------------
KEYED_QUERY = ("SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER b.price > s.price "
               "PARTITION BY [name] WITHIN 1000 [stock_time]")
TCER_QUERY = ("SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER s[name = 'QQQ'] AND "
              "b[name = 'INTC'] WITHIN 2000 [stock_time]")


@pytest.fixture(scope="module")
def trades(tmp_path_factory):
    """4,000 trades (with ``seq``) as four Parquet files of unequal sizes, in event order
    across and within them (Spark reads each file as one partition, the largest first); and
    the same trades with the last two files' times swapped (not in order across files)."""
    import pyarrow.parquet as pq

    from cercore.bench.datasets import stocks

    table = stocks(4000)
    table = table.append_column("seq", pa.array(range(table.num_rows), pa.int64()))
    ordered = tmp_path_factory.mktemp("ordered")
    cuts = [0, 700, 1900, 2600, 4000]
    for i, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
        pq.write_table(table.slice(lo, hi - lo), ordered / f"part-{i}.parquet")
    mixed = tmp_path_factory.mktemp("mixed")
    for i, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
        part = table.slice(lo, hi - lo)
        if i == 3:  # one file read backwards: each row's time before the one read before it
            part = part.take(pa.array(range(part.num_rows - 1, -1, -1)))
        pq.write_table(part, mixed / f"part-{i}.parquet")
    return table, str(ordered), str(mixed)


def local_keys(query: str, table: pa.Table) -> Counter:
    from cercore.bench.datasets import schema

    out = cercore.compile(query, schema("stocks")).engine().process_arrays(
        table.drop_columns(["seq"]))
    offsets = out.offsets.tolist()
    return Counter((s, e, tuple(out.positions[offsets[i]:offsets[i + 1]].tolist()))
                   for i, (s, e) in enumerate(zip(out.start.tolist(), out.end.tolist())))


def executed(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


@pytest.fixture
def file_per_partition(spark):
    """Spark reads each (small) file as its own partition: as it reads large files."""
    key = "spark.sql.files.openCostInBytes"
    before = spark.conf.get(key)
    spark.conf.set(key, str(1 << 30))
    yield spark
    spark.conf.set(key, before)


@pytest.mark.spark
@pytest.mark.parametrize("query", [KEYED_QUERY, TCER_QUERY], ids=["keyed", "tcer"])
def test_in_place_on_spark_equals_the_local_engine(file_per_partition, trades, query):
    """ordered=True (the footers' layout) and the default (the times read on the driver find
    the order) run in place -- the workers reading runs of row groups, the boundary stage on
    the driver -- and give the local engine's complex events; ordered=False shuffles."""
    from spark_helpers import spark_complex_events

    from cercore.bench.datasets import schema
    from cercore.spark import find

    spark = file_per_partition
    table, ordered, _ = trades
    want = local_keys(query, table)
    assert len(want) > 50
    df = spark.read.parquet(ordered)
    assert df.rdd.getNumPartitions() == 4
    for flag in (True, None, False):
        out = find(df, query, schema=schema("stocks"), sequence="seq", ordered=flag)
        # in place over plain Parquet: the workers read the row groups (a Range of runs)
        assert ("Range (0" in executed(out)) == (flag is not False), flag
        assert spark_complex_events(out.collect()) == want, flag


@pytest.mark.spark
def test_ordered_input_that_is_not_is_an_error(file_per_partition, trades):
    """ordered=True over a file read backwards: the worker's check stops the job with an
    EventError (through cercore_errors), never a wrong answer."""
    from cercore.bench.datasets import schema
    from cercore.spark import cercore_errors, find

    spark = file_per_partition
    _, _, mixed = trades
    df = spark.read.parquet(mixed)
    with pytest.raises(EventError, match="not in event order"), cercore_errors():
        find(df, KEYED_QUERY, schema=schema("stocks"), sequence="seq", ordered=True).collect()
    # without ordered=True the same input is sorted first: the local engine's answer
    table, _, _ = trades
    got = find(df, KEYED_QUERY, schema=schema("stocks"), sequence="seq").collect()
    assert len(got) == sum(local_keys(KEYED_QUERY, table).values())


@pytest.mark.spark
def test_ordered_edge_cases(file_per_partition):
    """ordered=True over no rows finds nothing; over rows with a null time it runs as without
    it (the null time is the usual EventError, or skipped with on_error="skip")."""
    from cercore.spark import find

    spark = file_per_partition
    ddl = "event_type string, ts long, k long, seq long"
    query = "SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 5 [ts]"
    empty = spark.createDataFrame([], ddl)
    assert find(empty, query, schema=AB, sequence="seq", ordered=True).collect() == []
    rows = [("A", 1, 1, 0), ("B", None, 1, 1), ("B", 3, 1, 2)]
    holed = spark.createDataFrame(rows, ddl)
    with pytest.raises(EventError, match="null"):
        find(holed, query, schema=AB, sequence="seq", ordered=True).collect()
    with pytest.warns(UserWarning, match="skipped 1 event"):
        got = find(holed, query, schema=AB, sequence="seq", ordered=True,
                   on_error="skip").collect()
    assert [(r["start"], r["end"]) for r in got] == [(0, 1)]

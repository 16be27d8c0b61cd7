"""Where a plain Parquet scan's rows lie, from the files' footers, without a Spark job: the
in-place plan's layout for input the user says is in event order (``find(..., ordered=True)``).

Spark plans how it reads files on the driver: byte ranges of the files (``FilePartition``s, one
read partition each), and a range reads the row groups whose midpoint lies in it (parquet-mr's
``filterFileMetaDataByMidpoint``, the rule Spark's Parquet readers apply). So before any task
runs, the driver knows each read partition's row groups in read order, hence its rows and its
first global position; the first and last rows of those row groups give its first and last
time, and the row groups beside each boundary hold the rows the boundary stage needs
(``boundary``): read by the worker of the run after it, or, when Spark reads the files, few
enough (``DRIVER_ROWS``) to run that stage here, on the driver, with no second scan.

What this takes on trust is checked where it matters: every in-place task compares its rows,
first and last time with what the footers said (``ReadPartitions.expected``), so a file
rewritten since, or a reader that splits otherwise, stops the job with an error -- never a
wrong answer.

When every file holds the user's columns in types that cast to Spark's (``readable``), no Spark
scan runs at all: the row groups, in event order, are cut into one run of about equal rows per
core (``chunked``), and each worker reads its run with Arrow and computes the hidden columns
as the typed ``cer_find`` does (``batches``), then the rows of the boundary before its run
(``boundary``) -- Spark's reader and the rows' way from the JVM to Python cost the plan about
as much as the engines, and Spark splits a file by bytes, not by rows.

Without the user's word (``ordered=None``), the driver reads the time and sequence of every row
(``FooterRows.summaries(full=True)``, up to ``DRIVER_ROWS``) and runs the statistics pass's own
test of order on them (``read_order.summarise``), in process instead of as a Spark job.

Only for what Spark reads as it is: one Parquet scan of local files (``file:``), without
filters, partition columns or buckets, under nothing but column selection; anything else
(and Spark Connect, whose client sees no plan) takes the pass that reads the ordering columns.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cercore.spark.base.frames import Columns
from cercore.spark.base.job import GROUP, KEY, LOW_BITS, POS, SEQ, TIME
from cercore.spark.ceql.read_order import summarise

# the most rows the driver reads for the boundary stage (beyond: a Spark stage does it)
DRIVER_ROWS = 2_000_000

_PLAIN = {"WholeStageCodegenExec", "ColumnarToRowExec", "InputAdapter", "ProjectExec",
          "FileSourceScanExec"}


@dataclass(frozen=True)
class RowGroup:
    """One row group as a read partition reads it: the file, its index there, its rows."""

    path: str
    index: int
    rows: int


@dataclass
class ParquetLayout:
    """Each read partition's row groups, in the order its task reads them."""

    parts: dict[int, tuple[RowGroup, ...]]
    files: dict[str, pq.ParquetFile] = field(default_factory=dict, repr=False)

    def rows(self, part: int) -> int:
        return sum(g.rows for g in self.parts[part])

    def read(self, group: RowGroup, columns: list[str]) -> pa.Table:
        """The row group's ``columns`` as Parquet holds them."""
        return self.file(group.path).read_row_group(group.index, columns=columns)

    def file(self, path: str) -> pq.ParquetFile:
        f = self.files.get(path)
        if f is None:
            f = self.files[path] = pq.ParquetFile(path)
        return f

    def __getstate__(self) -> dict:
        return {"parts": self.parts, "files": {}}  # (a worker opens the files itself)


def parquet_layout(df) -> ParquetLayout | None:
    """The read partitions of ``df`` when it is a plain scan of local Parquet files (see the
    module doc), from Spark's file partitions and the files' footers; else None."""
    try:
        scan = _plain_scan(df._jdf.queryExecution().executedPlan())
        if scan is None:
            return None
        splits = scan.inputRDD().filePartitions()
        planned = []
        it = splits.iterator()
        while it.hasNext():
            fp = it.next()
            planned.append((int(fp.index()), [(str(f.filePath().toString()), int(f.start()),
                                               int(f.length())) for f in fp.files()]))
    except Exception:  # Spark Connect (no _jdf), another Spark's internals: take the pass
        return None
    layout = ParquetLayout({})
    for index, files in planned:
        groups: list[RowGroup] = []
        for uri, start, length in files:
            url = urlparse(uri)
            if url.scheme not in ("", "file"):
                return None
            path = unquote(url.path)
            if path not in layout.files:
                layout.files[path] = pq.ParquetFile(path)
            meta = layout.files[path].metadata
            groups += [RowGroup(path, i, meta.row_group(i).num_rows)
                       for i in _row_groups_in(meta, start, start + length)]
        layout.parts[index] = tuple(groups)
    return layout


def _plain_scan(plan):
    """The Parquet ``FileSourceScanExec`` under ``plan`` when the plan only reads and selects
    columns (no filter, partition column or bucket); else None."""
    nodes, stack = [], [plan]
    while stack:
        node = stack.pop()
        nodes.append(node)
        it = node.children().iterator()
        while it.hasNext():
            stack.append(it.next())
    scans = [n for n in nodes if n.getClass().getSimpleName() == "FileSourceScanExec"]
    if len(scans) != 1 or any(n.getClass().getSimpleName() not in _PLAIN for n in nodes):
        return None
    for n in nodes:
        if n.getClass().getSimpleName() == "ProjectExec":
            it = n.projectList().iterator()
            while it.hasNext():
                if it.next().getClass().getSimpleName() != "AttributeReference":
                    return None
    scan = scans[0]
    relation = scan.relation()
    if (relation.fileFormat().getClass().getSimpleName() != "ParquetFileFormat"
            or scan.dataFilters().size() or scan.partitionFilters().size()
            or relation.partitionSchema().size() or scan.bucketedScan()):
        return None
    return scan


def _row_groups_in(meta: pq.FileMetaData, start: int, end: int) -> list[int]:
    """The row groups a reader of the byte range [start, end) reads: those whose midpoint
    (first page offset + compressed size / 2) lies in it."""
    out = []
    for i in range(meta.num_row_groups):
        rg = meta.row_group(i)
        first = rg.column(0)
        offset = first.data_page_offset
        if first.has_dictionary_page and first.dictionary_page_offset is not None:
            offset = min(offset, first.dictionary_page_offset)
        size = sum(rg.column(j).total_compressed_size for j in range(rg.num_columns))
        if start <= offset + size // 2 < end:
            out.append(i)
    return out


@dataclass
class FooterRows:
    """Rows of a ``ParquetLayout`` with the hidden columns ``find`` adds (``columns``), as
    Spark hands them to the workers: the user's columns cast to Spark's Arrow types."""

    layout: ParquetLayout
    columns: Columns
    arrow_schema: pa.Schema  # the user's DataFrame as Arrow (Spark's types)
    time_zone: str
    sequence: str | None  # SEQ is computed only from a sequence column

    def prepared(self, group: RowGroup, order_only: bool = False,
                 rows: tuple[int, int] | None = None) -> pa.Table:
        """The row group's rows (``rows``: [lo, hi) of them) with the hidden columns
        (``order_only``: only the ordering ones, TIME and SEQ, from the time and sequence
        columns)."""
        fields = list(self.arrow_schema)
        # (the key text: written for the end rows of complex events, ``EngineJob.key``)
        skip = tuple(n for n, _ in self.columns.hidden if order_only and n not in (TIME, SEQ)
                     or n == SEQ and not self.sequence or n == KEY)
        if order_only:
            fields = [f for f in fields if f.name in (self.columns.time, self.sequence)]
        raw = self.layout.read(group, [f.name for f in fields])
        if rows is not None:
            raw = raw.slice(rows[0], rows[1] - rows[0])
        cast = {f.name: raw.column(f.name).combine_chunks().cast(f.type) for f in fields}
        hidden = self.columns.arrow(cast, self.time_zone, skip=skip)
        names = [f.name for f in fields if f.name not in hidden]
        return pa.table([cast[n] for n in names] + list(hidden.values()),
                        names=names + list(hidden))

    def summaries(self, full: bool = False) -> list[dict] | None:
        """``read_order.summarise``'s rows per read partition (what ``layout`` reads). Not
        ``full``: its rows, first and last time and sequence, taken as sorted (the user said
        so; the workers check it), or None when one of those has no time or sequence value
        (the plans that sort handle those). ``full``: ``summarise`` itself over the time and
        sequence of every row, read here (proves the order, counts ties and nulls); None when
        that is more than ``DRIVER_ROWS`` rows."""
        if full:
            if sum(self.layout.rows(p) for p in self.layout.parts) > DRIVER_ROWS:
                return None
            return [s for part in sorted(self.layout.parts) for s in self._summary(part)]
        out, start = [], 0
        for part, groups in sorted(self.layout.parts.items()):
            n = sum(g.rows for g in groups)
            row: dict = {"part": part, "n": n, "nulls": 0, "numbered": True, "sorted": True,
                         "first_run": 0, "last_run": 0, "tied": 0, "latest": None,
                         "sample": []}
            nonempty = [g for g in groups if g.rows]
            if nonempty:
                first = self.prepared(nonempty[0], order_only=True)
                last = self.prepared(nonempty[-1], order_only=True)
                ends = [(first, 0), (last, last.num_rows - 1)]
                for (table, i), side in zip(ends, ("first", "last")):
                    t = table.column(TIME)[i].as_py()
                    s = table.column(SEQ)[i].as_py() if self.sequence else None
                    if t is None or self.sequence is not None and s is None:
                        return None
                    row[f"{side}_t"], row[f"{side}_s"] = t, s
            out.append(row)
            start += n
        return out

    def prepared_names(self) -> list[str]:
        """The columns of ``prepared``'s rows, with POS and GROUP (``batches``)."""
        skip = {KEY} | (set() if self.sequence else {SEQ})
        hidden = [n for n, _ in self.columns.hidden if n not in skip]
        return [n for n in self.arrow_schema.names if n not in hidden] + hidden + [POS, GROUP]

    @functools.cached_property
    def readable(self) -> bool:
        """Whether every file holds the user's columns in a type that casts to Spark's, none
        stored as INT96 (which Spark reads with its own calendar rules): then a worker can
        read the row groups itself, as Spark would hand them over (``batches``)."""
        for path in {g.path for groups in self.layout.parts.values() for g in groups}:
            f = self.layout.file(path)
            have = f.schema_arrow
            int96 = {f.schema.column(i).path.split(".")[0] for i in range(len(f.schema))
                     if f.schema.column(i).physical_type == "INT96"}
            for want in self.arrow_schema:
                if want.name not in have.names or want.name in int96:
                    return False
                try:
                    pa.array([], have.field(want.name).type).cast(want.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    return False
        return True

    def chunked(self, parts: tuple[tuple[int, int, int, int], ...], n: int
                ) -> tuple[FooterRows, tuple[tuple[int, int, int, int], ...]]:
        """The row groups of the read partitions ``parts`` (in event order, as
        ``ReadLayout.parts``) cut into at most ``n`` runs of about equal rows, each a read
        partition of its own for the workers to read (``batches``): these rows, and the runs
        as ``parts`` gives the read partitions (index, first position, first and last time)."""
        groups = [g for part, *_ in parts for g in self.layout.parts[part] if g.rows]
        total = sum(g.rows for g in groups)
        chunks: list[list[RowGroup]] = [[]]
        done = 0
        for g in groups:
            if chunks[-1] and len(chunks) < n and done >= total * len(chunks) / n:
                chunks.append([])
            chunks[-1].append(g)
            done += g.rows
        rows = FooterRows(ParquetLayout({i: tuple(c) for i, c in enumerate(chunks)},
                                        self.layout.files),
                          self.columns, self.arrow_schema, self.time_zone, self.sequence)
        out, start = [], 0
        for i, c in enumerate(chunks):
            if not c:
                continue
            first = rows.prepared(c[0], order_only=True).column(TIME)[0].as_py()
            last = rows.prepared(c[-1], order_only=True).column(TIME)[-1].as_py()
            out.append((i, start, first, last))
            start += sum(g.rows for g in c)
        return rows, tuple(out)

    def batches(self, part: int, start: int, wanted: list[str]) -> Iterator[pa.RecordBatch]:
        """Read partition ``part``'s rows (its first position ``start``) with the hidden
        columns, POS and GROUP = ``part``, ``wanted`` columns: what a worker evaluates."""
        for g in self.layout.parts[part]:
            if not g.rows:
                continue
            table = self.prepared(g)
            table = table.append_column(POS, pa.array(
                np.arange(start, start + table.num_rows, dtype=np.int64)))
            table = table.append_column(GROUP, pa.array(np.full(table.num_rows, part, np.int64)))
            start += table.num_rows
            yield from table.select(wanted).to_batches()

    def _summary(self, part: int) -> list[dict]:
        """``summarise``'s row for read partition ``part`` (none when it is empty)."""
        tables = [self.prepared(g, order_only=True) for g in self.layout.parts[part] if g.rows]
        if not tables:
            return []
        table = pa.concat_tables(tables)
        n = table.num_rows
        seq = table.column(SEQ).combine_chunks() if self.sequence else pa.nulls(n, pa.int64())
        rows = pa.RecordBatch.from_arrays(
            [pa.array((part << LOW_BITS) + np.arange(n, dtype=np.int64)),
             table.column(TIME).combine_chunks(), seq, pa.nulls(n, pa.int64())],
            names=["r", "t", "s", "latest"])
        return [rb for out in summarise(iter([rows])) for rb in out.to_pylist()]

    def boundary_rows(self, parts: tuple[tuple[int, int, int, int], ...], offset: int,
                      wanted: list[str]) -> pa.Table | None:
        """The boundary stage's input (``batch.run_in_place``) over read partitions in event
        order (``ReadLayout.parts``) with K = ``offset``: every boundary's rows (``boundary``),
        ``wanted`` columns. None when that means reading more than ``DRIVER_ROWS`` rows."""
        budget = DRIVER_ROWS
        pieces: list[pa.Table] = []
        for before, after in zip(parts, parts[1:]):
            edge, left = self._boundary(before, after, offset, wanted, budget)
            if left is None or left < 0:
                return None
            budget = left
            pieces += edge
        return pa.concat_tables(pieces) if pieces else None

    def boundary(self, before: tuple[int, int, int, int], after: tuple[int, int, int, int],
                 offset: int, wanted: list[str]) -> pa.Table | None:
        """The rows of the boundary between read partitions ``before`` and ``after`` (as
        ``ReadLayout.parts`` gives them) with K = ``offset``: the rows of ``before`` with time
        >= ``after``'s first time - K, then those of ``after`` with time <= ``before``'s last
        time + K, with GROUP = ``after`` and their POS; ``wanted`` columns. None: no rows."""
        pieces, _ = self._boundary(before, after, offset, wanted, None)
        return pa.concat_tables(pieces) if pieces else None

    def _boundary(self, before: tuple[int, int, int, int], after: tuple[int, int, int, int],
                  offset: int, wanted: list[str], budget: int | None
                  ) -> tuple[list[pa.Table], int | None]:
        """``boundary``'s pieces, and what is left of ``budget`` (None: no limit)."""
        (part_b, start_b, _, last_b), (part_a, start_a, first_a, _) = before, after
        tail, budget = self._edge(part_b, start_b, first_a - offset, None, budget)
        head, budget = self._edge(part_a, start_a, None, last_b + offset, budget)
        return [piece.append_column(GROUP, pa.array(np.full(piece.num_rows, part_a, np.int64)))
                .select(wanted) for piece in tail + head], budget

    def _edge(self, part: int, start: int, at_least: int | None, at_most: int | None,
              budget: int | None) -> tuple[list[pa.Table], int | None]:
        """The rows of read partition ``part`` (first position ``start``) with time >=
        ``at_least`` (its last row groups, read backwards) or <= ``at_most`` (its first row
        groups), in read order, with POS; and what is left of ``budget`` (None: no limit)."""
        groups = self.layout.parts[part]
        firsts = np.cumsum([0, *(g.rows for g in groups)])[:-1] + start
        order = range(len(groups) - 1, -1, -1) if at_least is not None else range(len(groups))
        taken = []
        for i in order:
            if not groups[i].rows:
                continue
            if budget is not None:
                budget -= groups[i].rows
                if budget < 0:
                    return [], budget
            t = self.prepared(groups[i], order_only=True).column(TIME).to_numpy()
            # in order, the rows kept are a stretch at the row group's end (start)
            lo, hi = ((int(np.searchsorted(t, at_least, "left")), len(t)) if at_least is not None
                      else (0, int(np.searchsorted(t, at_most, "right"))))
            if hi > lo:
                table = self.prepared(groups[i], rows=(lo, hi))
                taken.append(table.append_column(POS, pa.array(
                    np.arange(firsts[i] + lo, firsts[i] + hi, dtype=np.int64))))
            if hi - lo < len(t):  # the rows beyond are all out of reach
                break
        return (taken[::-1] if at_least is not None else taken), budget


"""Where an event's time goes: decode / predicates / partitions / kernel / enumeration / output.

    cercore-bench breakdown [--workload "P'3" ...] [--replay 8] [--input arrow|pandas|parquet]

Each stage is timed on its own over the same events (CPU time of this process, best of R),
on the stock trace replayed R times with shifted times (199 k events for 8x):

* decode: the input layer (``EventInput.batches``): Arrow -> validated columns, string
  dictionary codes, type ids (``parquet`` also reads the file);
* predicates: letters (every atomic predicate, once per event, vectorised);
* partitions: time order check, window times and partition ids;
* kernel: Algorithm 1 alone (the evaluator with LIMIT 0: nothing enumerated);
* enumeration: Algorithm 2 into arrays (``process_arrays`` minus the kernel);
* output: one ``ComplexEvent`` view per complex event (``process`` minus ``process_arrays``).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import cercore
from cercore.errors import CercoreError

STAGES = ("decode", "predicates", "partitions", "kernel", "enumeration", "output")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workload", action="append", metavar="NAME",
                   help="stock workloads (repeatable; default: P3 P'3 P'6 P'24)")
    p.add_argument("--replay", type=int, default=8, metavar="R",
                   help="replay the 24,887-event trace R times, times shifted (default 8)")
    p.add_argument("--input", default="arrow", choices=["arrow", "pandas", "parquet"],
                   help="what the engine reads (default: an Arrow table)")
    p.add_argument("--backend", default="all", choices=["auto", "python", "cython", "all"])
    p.add_argument("--repeat", type=int, default=3, metavar="R", help="best of R (default 3)")
    p.add_argument("--no-methodology", action="store_true",
                   help="without the paper's CONSUME BY ANY / LIMIT 1000")


def replayed_trace(times: int):
    """The bundled stock trace ``times`` times over (see ``datasets.stock_trace``)."""
    from cercore.bench.datasets import stock_trace

    return stock_trace(replay=times)


def stage_seconds(query: cercore.CompiledQuery, events, backend: str, repeat: int,
                  source: Path | None = None) -> dict[str, float]:
    """CPU seconds per stage (see the module docstring) and ``total`` (``process``, every
    complex event built). ``source``: a Parquet file that decode reads first."""
    from cercore.bench.runner import best_of
    from cercore.io import read_events

    bare = cercore.compile(query.text, query.schema)
    silent = cercore.compile(_with_limit_zero(query.text), query.schema)

    def read():
        return read_events(source, query.schema) if source is not None else events

    def decode():
        return list(query.engine(backend).input.batches(read()))

    batches = decode()

    def predicates():
        enc = query.engine(backend).encoder
        for b in batches:
            enc.encode(b)

    def partitions():
        e = query.engine(backend)
        for b in batches:
            read_mask = e.encoder.read_mask(b)
            if e.time_order is not None:
                e.time_order.check(b, read_mask.copy())
            e.partitions.assign(b.type_ids, b.columns, read_mask)

    def consume(q):
        return sum(1 for _ in q.engine(backend).process(read(), workers=1))

    out = {"decode": best_of(decode, repeat, "cpu"),
           "predicates": best_of(predicates, repeat, "cpu"),
           "partitions": best_of(partitions, repeat, "cpu")}
    front = out["decode"] + out["predicates"] + out["partitions"]
    def bulk(q):  # (one worker: the breakdown is one core's)
        return q.engine(backend).process_arrays(read(), workers=1)

    kernel_pass = best_of(lambda: bulk(silent), repeat, "cpu")
    arrays = best_of(lambda: bulk(bare), repeat, "cpu")
    total = best_of(lambda: consume(bare), repeat, "cpu")
    out["kernel"] = max(kernel_pass - front, 0.0)
    out["enumeration"] = max(arrays - kernel_pass, 0.0)
    out["output"] = max(total - arrays, 0.0)
    out["total"] = total
    return out


def _with_limit_zero(text: str) -> str:
    import re

    text = re.sub(r"\bLIMIT\s+\d+", "", text)
    return text + "\nLIMIT 0"


def run(args) -> int:
    from cercore.bench import workloads
    from cercore.bench.cli import _backends
    from cercore.bench.datasets import schema

    if args.replay < 1 or args.repeat < 1:
        raise CercoreError("--replay and --repeat must be >= 1")
    table = replayed_trace(args.replay)
    n = table.num_rows
    source = None
    events = table
    tmp = tempfile.TemporaryDirectory()
    if args.input == "pandas":
        events = table.to_pandas()
    elif args.input == "parquet":
        import pyarrow.parquet as pq

        source = Path(tmp.name) / "trace.parquet"
        pq.write_table(table, source)
    sch = schema("stock_trace")
    names = args.workload or ["P3", "P'3", "P'6", "P'24"]
    print(f"cercore {cercore.__version__}: {n:,} events (stock trace x{args.replay}), "
          f"input {args.input}, CPU seconds, best of {args.repeat}; ns per event")
    head = f"{'workload':<10}{'backend':<8}" + "".join(f"{s:>12}" for s in STAGES) \
        + f"{'total':>10}{'M ev/s':>9}"
    print(head)
    print("-" * len(head))
    for w in workloads.select("stock_trace", names):
        query = cercore.compile(w.text(not args.no_methodology), sch)
        for b in _backends(args.backend):
            s = stage_seconds(query, events, b, args.repeat, source)
            print(f"{w.name:<10}{b:<8}" + "".join(f"{s[k] / n * 1e9:>12.0f}" for k in STAGES)
                  + f"{s['total'] / n * 1e9:>10.0f}{n / s['total'] / 1e6:>9.2f}")
    tmp.cleanup()
    return 0


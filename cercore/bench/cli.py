"""``cercore-bench``: the CORE paper's experiments as a command.

    cercore-bench [--events N ...]      # = cercore-bench core: the demo queries, stock trace
    cercore-bench suite [...]           # the paper's workloads x datasets x backends (+ pycer)
    cercore-bench scaling [...]         # Cython vs Python, vs window, vs length, memory
    cercore-bench scaling --workers N   # 1..N workers (--workers-memory EVENTS: memory per worker)
    cercore-bench realtime [...]        # events pushed one at a time; latency to output
    cercore-bench absence [...]         # ABSENT and deadlines beside the same query without
    cercore-bench correlated [...]      # predicates between events beside their twins
    cercore-bench cogra | prepp [...]   # plug-in experiments (trend aggregation, push-pull)

Plug-ins: ``EXPERIMENTS`` maps a subcommand to a module defining
``add_arguments(parser: argparse.ArgumentParser) -> None``, ``run(args) -> int`` and a module
docstring whose first line is the subcommand's help. A plug-in is imported only when its
subcommand runs (or ``--help`` lists it); when its module is missing the subcommand says so
in one line and exits 2. Plug-ins may reuse ``cercore.bench.runner`` (timing, memory, progress)
and ``cercore.bench.plots``.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np

import cercore
from cercore.bench import core as core_experiment
from cercore.errors import CercoreError
from cercore.runtime.backend import CYTHON_AVAILABLE

EXPERIMENTS = {"cogra": "cercore.bench.cogra", "prepp": "cercore.bench.prepp",
               "breakdown": "cercore.bench.breakdown", "multi": "cercore.bench.multiquery",
               "spark": "cercore.bench.spark", "realtime": "cercore.bench.realtime",
               "absence": "cercore.bench.absence", "correlated": "cercore.bench.correlated"}
DATASETS = ("stock_trace", "stocks", "smart_homes", "taxis")
FAMILIES = ("sequence", "no-output", "window", "operators")
BUILTIN = ("core", "suite", "scaling")


def _backends(choice: str) -> list[str]:
    if choice == "all":
        return ["python"] + (["cython"] if CYTHON_AVAILABLE else [])
    if choice == "cython" and not CYTHON_AVAILABLE:
        raise CercoreError("the Cython backend is not built here (cercore_fast is missing)")
    return [cercore.BACKEND if choice == "auto" else choice]


def _common_arguments(p: argparse.ArgumentParser, events: int) -> None:
    p.add_argument("--dataset", action="append", choices=DATASETS,
                   help="dataset(s) to run (repeatable; default: stock_trace)")
    p.add_argument("--events", type=int, default=events, metavar="N",
                   help=f"events per dataset (default {events:,}; the real trace has 24,887)")
    p.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    p.add_argument("--replay", type=int, default=1, metavar="R",
                   help="stock_trace: the real trace R times over, times shifted (default 1; "
                        "8 gives 199,096 events)")
    p.add_argument("--backend", default="all", choices=["auto", "python", "cython", "all"],
                   help="backends to run (default: all available, with ratios)")
    p.add_argument("--repeat", type=int, default=3, metavar="R", help="best of R (default 3)")
    p.add_argument("--clock", default="wall", choices=["wall", "cpu"],
                   help="time wall-clock (default, as the paper) or this process's CPU time "
                        "(steadier when other programs share the machine)")
    p.add_argument("--no-methodology", action="store_true",
                   help="run the queries without the paper's CONSUME BY ANY / LIMIT 1000 "
                        "(outputs of long sequences can explode)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="write results.json, results.csv and PNG figures there")
    p.add_argument("--progress", action="store_true",
                   help="force the progress bar (default: only on a terminal)")


def add_suite_arguments(p: argparse.ArgumentParser) -> None:
    _common_arguments(p, 20_000)
    p.add_argument("--workload", action="append", metavar="NAME",
                   help="e.g. P3, P'6, \"P'3@4T\", Q5 (repeatable; default: by --family)")
    p.add_argument("--family", action="append", choices=FAMILIES,
                   help="workload families (repeatable; default: all)")
    p.add_argument("--pycer", action="store_true",
                   help="also run pycer, the CORE authors' C++ engine (needs a Python 3.13 "
                        "with pycer: $CERCORE_PYCER_PYTHON or /work/peers/py313)")


def add_scaling_arguments(p: argparse.ArgumentParser) -> None:
    _common_arguments(p, 24_887)
    p.add_argument("--lengths", default="25000,50000,100000,200000,400000", metavar="N,N,..",
                   help="stream lengths of the length sweep (generated stocks)")
    p.add_argument("--memory-events", type=int, default=1_000_000, metavar="N",
                   help="length of the long windowed stream sampled for memory "
                        "(default 1,000,000; 0 skips it)")
    p.add_argument("--workers", type=int, default=0, metavar="N",
                   help="only the workers sweep: keyed and windowed queries over the stock trace "
                        "(--replay R times) with 1..N workers, speed-up and efficiency; with "
                        "--workers-memory, the workers (default 2)")
    p.add_argument("--workers-memory", type=int, default=0, metavar="EVENTS",
                   help="only memory per worker: the memory experiment's stream of EVENTS "
                        "generated trades (P'3) in --workers T-CER slices, each worker's tECS "
                        "nodes and the process's RSS every 10,000 events of its run")


def _check_common(args) -> None:
    if args.repeat < 1:
        raise CercoreError("--repeat must be >= 1")
    if args.replay < 1:
        raise CercoreError("--replay must be >= 1")
    if args.events is not None and args.events < 1:
        raise CercoreError("--events must be >= 1")


# --- suite -------------------------------------------------------------------------------------
def run_suite(args) -> int:
    from cercore.bench import datasets, peers, runner, workloads

    _check_common(args)
    backends = _backends(args.backend)
    pycer = peers.find_pycer() if args.pycer else None
    if args.pycer and pycer is None:
        print("cercore-bench: pycer not found (set CERCORE_PYCER_PYTHON to a Python 3.13 "
              "with pycer); skipping it", file=sys.stderr)
    plan = []
    for ds in args.dataset or ["stock_trace"]:
        plan += [(ds, w) for w in workloads.select(ds, args.workload, args.family)]
    progress = runner.Progress(len(plan), True if args.progress else None)
    rows: list[dict] = []
    tables: dict[str, object] = {}
    methodology = not args.no_methodology
    for ds, w in plan:
        if ds not in tables:
            tables[ds] = datasets.load(ds, args.events, args.seed, args.replay)
        table = tables[ds]
        progress.step(f"{ds} {w.name}")
        for m in runner.measure(w, table, backends, args.repeat, methodology, clock=args.clock):
            rows.append(m.to_dict())
        if pycer:
            row = _pycer_row(pycer, ds, w, table, args.repeat, methodology, args.clock)
            if row is not None:
                rows.append(row)
    progress.close()
    how = "the paper's CONSUME BY ANY, LIMIT 1000" if methodology else "bare queries"
    print(f"cercore {cercore.__version__}; best of {args.repeat} ({args.clock} clock), "
          f"fresh engine per pass; {how}")
    print(format_rows(rows))
    if args.out:
        _write(rows, Path(args.out), "suite")
    return 0


def _pycer_row(pycer: str, ds: str, w, table, repeat: int, methodology: bool,
               clock: str = "wall") -> dict | None:
    """pycer on the same events; its intervals are compared with cercore's before its time
    is reported (a disagreement is reported, and the row is marked)."""
    from cercore.bench import datasets, peers

    text = w.text(methodology)
    try:
        res = peers.run_pycer(pycer, datasets.DECLARATIONS[datasets_base(ds)], text, table,
                              repeat, clock)
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"\ncercore-bench: pycer failed on {ds} {w.name}: {exc}", file=sys.stderr)
        return None
    m = cercore.compile(text, datasets.schema(ds)).engine().process_arrays(table, workers=1)
    ours = sorted(zip(m.start_time.tolist(), m.end_time.tolist()))
    agrees = [tuple(i) for i in res["intervals"]] == ours
    if not agrees:
        print(f"\ncercore-bench: pycer and cercore disagree on {ds} {w.name}: pycer "
              f"{res['complex_events']} complex events, cercore {len(ours)}", file=sys.stderr)
    return {"dataset": ds, "workload": w.name, "family": w.family, "n": w.n,
            "window_factor": w.window_factor, "backend": "pycer", "events": res["events"],
            "complex_events": res["complex_events"], "seconds": res["seconds"],
            "events_per_second": res["events"] / max(res["seconds"], 1e-12),
            "agrees_with_cercore": agrees}


def datasets_base(ds: str) -> str:
    return "stocks" if ds == "stock_trace" else ds


def format_rows(rows: list[dict]) -> str:
    """A table: one line per (dataset, workload), events/s per engine, the enumeration time
    and peak tECS nodes of the last cercore backend, and each engine's speed relative to the
    first cercore backend and to pycer (when it ran), measured in the same run."""
    engines = list(dict.fromkeys(r["backend"] for r in rows))
    by_key: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        by_key.setdefault((r["dataset"], r["workload"]), {})[r["backend"]] = r
    head = f"{'dataset':<12}{'workload':<10}{'outputs':>9}" + "".join(
        f"{e + ' ev/s':>15}" for e in engines) + f"{'enum s':>9}{'nodes':>9}"
    ours = [e for e in engines if e != "pycer"]
    # speed-ups: each cercore backend over the first one, and over pycer when it ran
    pairs = [(e, ours[0]) for e in ours[1:]] + ([(e, "pycer") for e in ours]
                                                if "pycer" in engines else [])
    head += "".join(f"{a + '/' + b:>15}" for a, b in pairs)
    lines = [head, "-" * len(head)]
    for (ds, wl), res in by_key.items():
        ours = [r for r in res.values() if "enumeration_seconds" in r]
        last = ours[-1] if ours else None
        line = f"{ds:<12}{wl:<10}{next(iter(res.values()))['complex_events']:>9,}"
        line += "".join(f"{res[e]['events_per_second']:>15,.0f}" if e in res else f"{'-':>15}"
                        for e in engines)
        line += f"{last['enumeration_seconds']:>9.3f}{last['peak_tecs_nodes']:>9,}" if last \
            else f"{'-':>9}{'-':>9}"
        line += "".join(
            f"{res[b]['seconds'] / res[a]['seconds']:>14.1f}x" if a in res and b in res
            else f"{'-':>15}" for a, b in pairs)
        lines.append(line)
    return "\n".join(lines)


# --- scaling -----------------------------------------------------------------------------------
def _run_workers(args) -> int:
    import os
    import platform

    from cercore.bench import datasets, scaling

    if args.workers < 1:
        raise CercoreError("--workers must be >= 1")
    table = datasets.stock_trace(replay=args.replay)  # (the whole trace, R times)
    rows = scaling.workers_sweep(table, args.workers, args.repeat)
    print(f"cercore {cercore.__version__}: workers over one Arrow table (the stock trace x"
          f"{args.replay}), process_arrays(table, workers=w), backend {cercore.BACKEND}; "
          f"best wall time of {args.repeat}, its CPU time (all threads and worker "
          f"processes); {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}")
    print(scaling.format_workers(rows))
    if args.out:
        _write(rows, Path(args.out), "scaling")
    return 0


def _run_workers_memory(args) -> int:
    import os
    import platform
    import time

    from cercore.bench import scaling

    workers = args.workers or 2
    if workers < 2:
        raise CercoreError("--workers must be >= 2 with --workers-memory")
    backend = _backends(args.backend)[-1]  # cython when available, as the memory experiment
    wall = time.perf_counter()
    runs = scaling.memory_per_worker(args.workers_memory, workers, backend, args.seed)
    wall = time.perf_counter() - wall
    rows = scaling.worker_memory_rows(runs)
    print(f"cercore {cercore.__version__}: memory per worker, {args.workers_memory:,} generated "
          f"trades (seed {args.seed}) in {workers} T-CER slices, P'3 without CONSUME BY / LIMIT "
          f"(never completes: only the window frees memory), backend {backend}; each worker "
          f"fed its prefix and its run 10,000 events at a time, sampled after each; "
          f"{wall:.1f} s wall in all (the stream's generation included); {os.cpu_count()} "
          f"CPUs, {platform.processor() or platform.machine()}")
    print(scaling.format_worker_memory(rows))
    if args.out:
        samples = [{"experiment": "workers-memory-sample"} | asdict(s) for run in runs
                   for s in run]
        _write(rows + samples, Path(args.out), "workers-memory")
    return 0


def run_scaling(args) -> int:
    from cercore.bench import datasets, runner, scaling

    _check_common(args)
    backends = _backends(args.backend)
    try:
        lengths = [int(x) for x in args.lengths.split(",") if x.strip()]
    except ValueError:
        raise CercoreError(f"--lengths must be integers separated by commas, "
                           f"not {args.lengths!r}") from None
    if not lengths or min(lengths) < 1:
        raise CercoreError("--lengths must name positive stream lengths")
    if args.memory_events < 0:
        raise CercoreError("--memory-events must be >= 0")
    if args.workers_memory < 0:
        raise CercoreError("--workers-memory must be >= 0")
    if args.workers_memory:
        return _run_workers_memory(args)
    if args.workers:
        return _run_workers(args)
    methodology = not args.no_methodology
    fastest = backends[-1]  # cython when available: the one whose constancy matters
    names = args.dataset or ["stock_trace"]
    steps = len(names) * 2 + 1 + (1 if args.memory_events else 0)
    progress = runner.Progress(steps, True if args.progress else None)
    points: list[scaling.Point] = []
    for ds in names:
        table = datasets.load(ds, args.events, args.seed, args.replay)
        progress.step(f"{ds}: backends on P_n, P'_n")
        points += scaling.backend_ratios(ds, table, backends, args.repeat, methodology,
                                         clock=args.clock)
        progress.step(f"{ds}: window T..16T")
        points += scaling.window_sweep(ds, table, backends, args.repeat, methodology,
                                       clock=args.clock)
    progress.step("stream length")
    points += scaling.length_sweep(lengths, [fastest], args.repeat, args.seed, methodology,
                                   clock=args.clock)
    samples = []
    if args.memory_events:
        progress.step(f"memory over {args.memory_events:,} events")
        samples = scaling.memory_over_stream(args.memory_events, fastest, args.seed,
                                             methodology=methodology)
    progress.close()
    print(f"cercore {cercore.__version__}; best of {args.repeat} ({args.clock} clock), "
          f"backends interleaved, fresh engine per pass")
    for experiment, label, title in (
            ("backends", "n", "Backends on the sequence workloads (P_n with output, P'_n "
                              "without)"),
            ("window", "x T", "Throughput vs window size (P'_3)"),
            ("length", "events", f"Throughput vs stream length (generated stocks, {fastest})")):
        chosen = [p for p in points if p.experiment == experiment]
        if chosen:
            print(f"\n{title}\n{scaling.format_points(chosen, label)}")
    if samples:
        print(f"\nMemory over one long windowed stream (generated stocks, P'3, {fastest}), "
              f"sampled every 10,000 events\n{scaling.format_memory(samples)}")
    if args.out:
        rows = [p.to_dict() for p in points] + [
            {"experiment": "memory", "backend": fastest, "events": s.events,
             "tecs_nodes": s.tecs_nodes, "rss_bytes": s.rss_bytes} for s in samples]
        _write(rows, Path(args.out), "scaling")
    return 0


# --- output ------------------------------------------------------------------------------------
def _write(rows: list[dict], out: Path, kind: str) -> None:
    """results.json and results.csv in ``out``; the figures of ``kind`` "suite" or
    "scaling" (other kinds have none)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(rows, indent=1, default=_json_default))
    keys = sorted({k for r in rows for k in r})
    with open(out / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    print(f"\nwrote {out / 'results.json'}, {out / 'results.csv'}")
    if kind not in ("suite", "scaling"):
        return
    try:
        from cercore.bench import plots

        written = plots.suite_figures(rows, out) if kind == "suite" \
            else plots.scaling_figures(rows, out)
    except RuntimeError as exc:  # matplotlib missing
        print(f"cercore-bench: {exc}", file=sys.stderr)
        return
    for path in written:
        print(f"wrote {path}")


def _json_default(x):
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


# --- entry point -------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cercore-bench", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="`cercore-bench EXPERIMENT --help` tells more.")
    sub = p.add_subparsers(dest="experiment", metavar="EXPERIMENT")
    core = sub.add_parser("core", help="the demo queries on the bundled stock trace (default)")
    core_experiment.add_core_arguments(core)
    add_suite_arguments(sub.add_parser(
        "suite", help="the paper's workloads on its datasets, every backend (+ pycer), "
                      "JSON/CSV/PNG"))
    add_scaling_arguments(sub.add_parser(
        "scaling", help="Cython vs Python, throughput vs window and stream length, memory "
                        "over a long stream"))
    for name, module in EXPERIMENTS.items():
        sub.add_parser(name, help=_plugin_help(module), add_help=False)
    return p


def _plugin_help(module: str) -> str:
    """The plug-in's docstring's first line (importing it: only for --help)."""
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return f"(not available: {module} is not installed)"
    return ((mod.__doc__ or "").strip().split("\n") or [""])[0] or f"plug-in {module}"


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``cercore-bench``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        argv = ["core", *argv]  # `cercore-bench --events 5000` keeps working
    if argv[0] in EXPERIMENTS:
        return run_plugin(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    try:
        if args.experiment == "suite":
            return run_suite(args)
        if args.experiment == "scaling":
            return run_scaling(args)
        return core_experiment.run_core(args)
    except CercoreError as exc:
        print(f"cercore-bench: error: {exc}", file=sys.stderr)
        return 2


def run_plugin(name: str, argv: list[str]) -> int:
    """Import the plug-in ``name``, parse its arguments and run it."""
    module = EXPERIMENTS[name]
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module.startswith(exc.name):
            print(f"cercore-bench: the {name!r} experiment is not available in this "
                  f"installation ({module} is missing)", file=sys.stderr)
        else:
            print(f"cercore-bench: the {name!r} experiment cannot be loaded: {exc}",
                  file=sys.stderr)
        return 2
    p = argparse.ArgumentParser(prog=f"cercore-bench {name}",
                                description=((mod.__doc__ or name).strip().split("\n") or
                                             [name])[0])
    mod.add_arguments(p)
    args = p.parse_args(argv)
    try:
        return int(mod.run(args))
    except CercoreError as exc:
        print(f"cercore-bench {name}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

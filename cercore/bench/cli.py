"""``cercore-bench``: the CORE paper's experiments as a command.

    cercore-bench                      # quick: the demo queries on the bundled stock trace
    cercore-bench core [...]           # the same, with options
    cercore-bench suite [...]          # datasets x workloads x backends (+ pycer), JSON/CSV/PNG
    cercore-bench cogra | prepp [...]  # plug-in experiments (trend aggregation, push-pull)

Plug-ins: ``EXPERIMENTS`` maps a subcommand to a module defining ``add_arguments(parser)``,
``run(args) -> int`` and a docstring whose first line is the help; they are imported lazily.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import json
import subprocess
import sys
from pathlib import Path

import cercore
from cercore.errors import CercoreError
from cercore.runtime.backend import CYTHON_AVAILABLE

EXPERIMENTS = {"cogra": "cercore.trends.experiment", "prepp": "cercore.network.experiment"}
DATASETS = ("stock_trace", "stocks", "smart_homes", "taxis")
FAMILIES = ("sequence", "no-output", "window", "operators")


def _backends(choice: str) -> list[str]:
    if choice == "all":
        return ["python"] + (["cython"] if CYTHON_AVAILABLE else [])
    return [cercore.BACKEND if choice == "auto" else choice]


def add_suite_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", action="append", choices=DATASETS,
                   help="dataset(s) to run (default: stock_trace)")
    p.add_argument("--events", type=int, default=20_000, metavar="N",
                   help="events per dataset (generated ones; the real trace has 24,887)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workload", action="append", metavar="NAME",
                   help="e.g. P3, P'6, \"P'3@4T\", Q5 (repeatable; default: by --family)")
    p.add_argument("--family", action="append", choices=FAMILIES,
                   help="workload families (default: all)")
    p.add_argument("--backend", default="all", choices=["auto", "python", "cython", "all"])
    p.add_argument("--pycer", action="store_true",
                   help="also run pycer (needs a Python 3.13 with pycer: "
                        "$CERCORE_PYCER_PYTHON or /work/peers/py313)")
    p.add_argument("--repeat", type=int, default=3, metavar="R", help="best of R (default 3)")
    p.add_argument("--no-methodology", action="store_true",
                   help="run the queries without the paper's CONSUME BY ANY / LIMIT 1000")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="write results.json, results.csv and PNG figures there")
    p.add_argument("--progress", action="store_true", help="force the progress bar")


def run_suite(args) -> int:
    from cercore.bench import datasets, peers, runner, workloads

    if args.repeat < 1:
        raise CercoreError("--repeat must be >= 1")
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
            tables[ds] = datasets.load(ds, args.events, args.seed)
        table = tables[ds]
        for m in runner.measure(w, table, backends, args.repeat, methodology):
            rows.append(m.to_dict())
        if pycer:
            try:
                res = peers.run_pycer(pycer, datasets.DECLARATIONS[
                    "stocks" if ds == "stock_trace" else ds], w.text(methodology), table,
                    args.repeat)
            except (RuntimeError, subprocess.CalledProcessError) as exc:
                print(f"\ncercore-bench: pycer failed on {ds} {w.name}: {exc}", file=sys.stderr)
                progress.step(f"{ds} {w.name}")
                continue
            ours = next(r["complex_events"] for r in rows[::-1] if r["workload"] == w.name)
            if res["complex_events"] != ours:
                print(f"\ncercore-bench: pycer found {res['complex_events']} complex events on "
                      f"{ds} {w.name}, cercore {ours}", file=sys.stderr)
            rows.append({"dataset": ds, "workload": w.name, "family": w.family, "n": w.n,
                         "window_factor": w.window_factor, "backend": "pycer",
                         "events": res["events"], "complex_events": res["complex_events"],
                         "seconds": res["seconds"],
                         "events_per_second": res["events"] / max(res["seconds"], 1e-12)})
        progress.step(f"{ds} {w.name}")
    print(format_rows(rows))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(rows, indent=1))
        keys = sorted({k for r in rows for k in r})
        with open(out / "results.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)
        try:
            from cercore.bench.plots import throughput_plots

            for path in throughput_plots(rows, out):
                print(f"wrote {path}")
        except RuntimeError as exc:
            print(f"cercore-bench: {exc}", file=sys.stderr)
    return 0


def format_rows(rows: list[dict]) -> str:
    """A table: one line per (dataset, workload), one column per engine, plus ratios to the
    first engine measured in the same run."""
    engines = list(dict.fromkeys(r["backend"] for r in rows))
    by_key: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        by_key.setdefault((r["dataset"], r["workload"]), {})[r["backend"]] = r
    head = f"{'dataset':<12}{'workload':<10}{'outputs':>10}" + "".join(
        f"{e + ' ev/s':>16}" for e in engines)
    if len(engines) > 1:
        head += "".join(f"{e + '/' + engines[0]:>16}" for e in engines[1:])
    lines = [head, "-" * len(head)]
    for (ds, wl), res in by_key.items():
        first = res.get(engines[0])
        line = f"{ds:<12}{wl:<10}{next(iter(res.values()))['complex_events']:>10,}"
        line += "".join(f"{res[e]['events_per_second']:>16,.0f}" if e in res else f"{'-':>16}"
                        for e in engines)
        if len(engines) > 1:
            line += "".join(
                f"{first['seconds'] / res[e]['seconds']:>15.1f}x" if e in res and first
                else f"{'-':>16}" for e in engines[1:])
        lines.append(line)
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    from cercore import benchcli

    p = argparse.ArgumentParser(prog="cercore-bench", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="experiment", metavar="EXPERIMENT")
    core = sub.add_parser("core", help="the demo queries on the bundled stock trace (default)")
    benchcli.add_core_arguments(core)
    suite = sub.add_parser("suite", help="the paper's workloads on its datasets, all backends")
    add_suite_arguments(suite)
    for name, module in EXPERIMENTS.items():
        plug = sub.add_parser(name, help=_plugin_help(module), add_help=False)
        plug.add_argument("rest", nargs=argparse.REMAINDER)
    return p


def _plugin_help(module: str) -> str:
    return f"plug-in experiment ({module})"


def main(argv: list[str] | None = None) -> int:
    from cercore import benchcli

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        argv = ["core", *argv]  # `cercore-bench --events 5000` keeps working
    if argv and argv[0] in EXPERIMENTS:
        return run_plugin(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    try:
        if args.experiment == "suite":
            return run_suite(args)
        return benchcli.run_core(args)
    except CercoreError as exc:
        print(f"cercore-bench: error: {exc}", file=sys.stderr)
        return 2


def run_plugin(name: str, argv: list[str]) -> int:
    try:
        module = importlib.import_module(EXPERIMENTS[name])
    except ImportError:
        print(f"cercore-bench: the {name!r} experiment is not available in this version "
              f"({EXPERIMENTS[name]} is missing)", file=sys.stderr)
        return 2
    p = argparse.ArgumentParser(prog=f"cercore-bench {name}",
                                description=(module.__doc__ or name).strip().split("\n")[0])
    module.add_arguments(p)
    return module.run(p.parse_args(argv))

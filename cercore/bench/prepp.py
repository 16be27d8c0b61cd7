"""PrePP sweeps (DEBS'22 §7, Figs. 5 and 7): transmission ratio and plan-construction time.

Each point averages ``--repeats`` generated networks and queries (§7.1 generators). Planners:
sampling (s, k), greedy, the time-window-only push-pull baseline, push-all; the ratio is the
plan's sink-aware cost over pushing everything to the best sink. Sweeps:

* ``event-node-ratio`` 0.1 … 1.0 (Fig. 5a), ``skew`` 1.1 … 2.0 (Fig. 5b), ``nodes`` 10 … 250
  (Fig. 5c), ``min-sel`` 1e-6 … 1e-2 (minimal selectivity panel);
* ``plan-time``: construction time of exact search vs sampling vs greedy over query length
  (Fig. 7b; exact capped at ``--exact-max`` types).

Writes ``prepp_<sweep>.json`` / ``.csv`` and, unless ``--no-plots``, ``.png`` to ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from functools import partial
from pathlib import Path

from cercore.errors import CercoreError
from cercore.network.cost import push_all_cost
from cercore.network.generators import generate_network, generate_query, generate_selectivities
from cercore.network.planners import (
    plan_exact,
    plan_greedy,
    plan_push_all,
    plan_sampling,
    plan_window_pushpull,
)

SWEEPS = {
    "event-node-ratio": ("event_node_ratio", [0.1, 0.25, 0.5, 0.75, 1.0]),
    "skew": ("skew", [1.1, 1.3, 1.5, 1.7, 2.0]),
    "nodes": ("n_nodes", [10, 20, 50, 100, 250]),
    "min-sel": ("min_sel", [1e-6, 1e-5, 1e-4, 1e-3, 1e-2]),
}
DEFAULTS = {"event_node_ratio": 0.5, "skew": 1.3, "n_nodes": 20, "min_sel": 1e-4}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sweep", choices=[*SWEEPS, "plan-time", "all"], default="all")
    p.add_argument("--types", type=int, default=6, help="query length (default 6)")
    p.add_argument("--repeats", type=int, default=5, help="networks per point (default 5)")
    p.add_argument("--samples", type=int, default=1024, help="sampling s (default 1024)")
    p.add_argument("--topk", type=int, default=10, help="sampling k (default 10)")
    p.add_argument("--window", type=float, default=1.0, help="query window (default 1)")
    p.add_argument("--values", default=None,
                   help="comma-separated sweep values (default: the paper's range)")
    p.add_argument("--exact-max", type=int, default=6,
                   help="plan-time: longest query searched exactly (default 6)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="bench-results", help="output directory")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")


def run(args) -> int:
    if args.types < 2 or args.repeats < 1:
        raise CercoreError("--types must be >= 2 and --repeats >= 1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sweeps = [*SWEEPS, "plan-time"] if args.sweep == "all" else [args.sweep]
    for sweep in sweeps:
        rows = plan_time(args) if sweep == "plan-time" else ratio_sweep(sweep, args)
        write(rows, out / f"prepp_{sweep}", sweep, not args.no_plots)
    return 0


def _values(args, default):
    if args.values is None:
        return default
    try:
        return [float(v) for v in args.values.split(",") if v.strip()]
    except ValueError:
        raise CercoreError(f"--values must be numbers separated by commas, not "
                           f"{args.values!r}") from None


def instance(params: dict, n_types: int, window: float, seed: int):
    net = generate_network(n_types, int(params["n_nodes"]), params["event_node_ratio"],
                           params["skew"], seed)
    q, pw = generate_query(n_types, window, params["min_sel"], seed)
    return q, net, generate_selectivities(q, net, pw, seed)


def planners(q, net, sel, args, seed: int, baselines: bool = False, exact: bool = False
             ) -> dict:
    """name → zero-argument call of each planner to run on this instance."""
    runs = {"sampling": partial(plan_sampling, q, net, sel, samples=args.samples,
                                top_k=args.topk, seed=seed),
            "greedy": partial(plan_greedy, q, net, sel)}
    if baselines:
        runs["window"] = partial(plan_window_pushpull, q, net, sel)
        runs["push_all"] = partial(plan_push_all, q, net, sel)
    if exact:
        runs["exact"] = partial(plan_exact, q, net, sel, max_types=args.exact_max)
    return runs


def ratio_sweep(sweep: str, args) -> list[dict]:
    param, default = SWEEPS[sweep]
    rows = []
    for value in _values(args, default):
        params = {**DEFAULTS, param: value}
        per: dict[str, list[float]] = {}
        for rep in range(args.repeats):
            q, net, sel = instance(params, args.types, args.window, args.seed + rep)
            base = push_all_cost(q, net)
            runs = planners(q, net, sel, args, args.seed + rep, baselines=True)
            for name, fn in runs.items():
                per.setdefault(name, []).append(fn().cost / base if base else 0.0)
        for name, ratios in per.items():
            rows.append({"sweep": sweep, param: value, "planner": name,
                         "ratio_mean": statistics.fmean(ratios),
                         "ratio_stdev": statistics.pstdev(ratios), "repeats": len(ratios)})
        print(f"{sweep} {param}={value:g}: " + ", ".join(
            f"{n} {statistics.fmean(r):.4g}" for n, r in per.items()), file=sys.stderr)
    return rows


def plan_time(args) -> list[dict]:
    rows = []
    lengths = [int(v) for v in _values(args, list(range(3, max(args.types, 8) + 1)))]
    for n in lengths:
        for rep in range(args.repeats):
            q, net, sel = instance(DEFAULTS, n, args.window, args.seed + rep)
            runs = planners(q, net, sel, args, args.seed + rep, exact=n <= args.exact_max)
            costs = {}
            for name, fn in runs.items():
                t0 = time.perf_counter()
                r = fn()
                costs[name] = r.cost
                rows.append({"sweep": "plan-time", "types": n, "planner": name,
                             "seconds": time.perf_counter() - t0, "cost": r.cost,
                             "repeat": rep})
            if "exact" in costs:
                for row in rows[-len(runs):]:
                    row["vs_exact"] = row["cost"] / costs["exact"] if costs["exact"] else 1.0
        print(f"plan-time types={n}: " + ", ".join(
            f"{r['planner']} {r['seconds']:.3g}s" for r in rows[-len(runs):]), file=sys.stderr)
    return rows


def write(rows: list[dict], stem: Path, sweep: str, plots: bool) -> None:
    stem.with_suffix(".json").write_text(json.dumps(rows, indent=2))
    keys = sorted({k for r in rows for k in r})
    with open(stem.with_suffix(".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    if plots:
        plot(rows, stem.with_suffix(".png"), sweep)


def plot(rows: list[dict], path: Path, sweep: str) -> None:
    import matplotlib  # lazily: only the plots need it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    if sweep == "plan-time":
        x, y, label = "types", "seconds", "plan construction time (s)"
    else:
        x, y, label = SWEEPS[sweep][0], "ratio_mean", "transmission ratio"
    for planner in dict.fromkeys(r["planner"] for r in rows):
        pts: dict[float, list[float]] = {}
        for r in rows:
            if r["planner"] == planner:
                pts.setdefault(r[x], []).append(r[y])
        xs = sorted(pts)
        ax.plot(xs, [statistics.fmean(pts[v]) for v in xs], marker="o", label=planner)
    ax.set_yscale("log")
    if sweep in ("min-sel",):
        ax.set_xscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(label)
    ax.legend(fontsize=8)
    ax.set_title(f"PrePP: {sweep}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)

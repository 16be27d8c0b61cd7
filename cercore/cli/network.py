"""``cercore plan`` and ``cercore simulate`` (registered by :func:`add_subcommands`).

::

    cercore plan QUERY --network NET.json [--schema DECL] [--selectivities SEL.json |
                 --estimate-from TRACES] [--planner sampling] [--samples 1024] [--topk 10]
                 [--seed 0] [--mode sink_aware|literal] [--json]
    cercore simulate QUERY --network NET.json (--traces TRACES | --generate DURATION)
                 [--plan PLAN.json | planner options] [--latency 1] [--heartbeat H] [--json]

QUERY is PrePP notation (``PATTERN SEQ(A a, B b) WHERE a.id = b.id WITHIN 30``) or CEQL (with
``--schema``), as a file path or the text. Traces are JSON lines or CSV (see
cercore.network.traces).
"""

from __future__ import annotations

import argparse
import json
import sys

from cercore.input.files import text_or_file
from cercore.network.cost import MODES, cost_report, push_all_cost
from cercore.network.estimate import estimate_catalog
from cercore.network.generators import generate_traces
from cercore.network.network import Network
from cercore.network.pattern import net_query
from cercore.network.plan import Plan
from cercore.network.planners import PLANNERS, make_plan
from cercore.network.query import NetQuery
from cercore.network.selectivity import Selectivities
from cercore.network.simulator import simulate
from cercore.network.traces import read_traces


def add_subcommands(sub) -> None:
    """Add ``plan`` and ``simulate`` to the ``cercore`` subparsers."""
    plan = sub.add_parser("plan", help="build a PrePP push-pull plan for a distributed query",
                          description="Choose the sink and the acquisition steps of a "
                                      "predicate-based push-pull plan; print it with its cost "
                                      "in both modes and the ratio to push-all.")
    _common(plan)
    plan.add_argument("--json", action="store_true", help="print JSON")
    plan.set_defaults(func=cmd_plan)

    sim = sub.add_parser("simulate", help="run a PrePP plan in the network simulator",
                         description="Execute a plan over per-node traces (discrete-event "
                                     "simulation), evaluate at the sink with the cercore "
                                     "engine and check the matches against centralised "
                                     "evaluation.")
    _common(sim)
    src = sim.add_mutually_exclusive_group(required=True)
    src.add_argument("--traces", metavar="FILE", help="per-node events (.jsonl or .csv)")
    src.add_argument("--generate", type=int, metavar="DURATION",
                     help="generate Poisson traces of this length from the network's rates")
    sim.add_argument("--id-domain", type=int, default=10,
                     help="generated traces: values of the 'id' attribute (default 10)")
    sim.add_argument("--plan", metavar="PLAN.json", help="run this plan instead of planning")
    sim.add_argument("--latency", type=float, default=1.0, help="message latency (default 1)")
    sim.add_argument("--heartbeat", type=float, default=None,
                     help="heartbeat / watermark interval (default: the window)")
    sim.add_argument("--json", action="store_true", help="print JSON")
    sim.set_defaults(func=cmd_simulate)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", metavar="QUERY", help="PrePP pattern or CEQL (file or text)")
    p.add_argument("--network", "-n", required=True, metavar="NET.json",
                   help='{"nodes": [...], "sources": {type: [node]}, "rates": {type: rate}}')
    p.add_argument("--schema", "-s", metavar="DECL", help="declarations, for a CEQL query")
    p.add_argument("--selectivities", metavar="SEL.json",
                   help='{"pairwise": [[a, b, σ]], "projection": [[ε, [types], σ]]}')
    p.add_argument("--estimate-from", metavar="TRACES",
                   help="estimate rates and selectivities from these traces")
    p.add_argument("--planner", choices=PLANNERS, default="sampling")
    p.add_argument("--mode", choices=MODES, default="sink_aware",
                   help="cost mode the planner minimises (default sink_aware)")
    p.add_argument("--samples", type=int, default=1024, help="sampling: orderings (1024)")
    p.add_argument("--topk", type=int, default=10, help="sampling: orderings merged (10)")
    p.add_argument("--seed", type=int, default=0, help="sampling / generation seed (0)")


def load_query(args) -> NetQuery:
    """QUERY in PrePP notation, or CEQL checked against --schema."""
    return net_query(text_or_file(args.query),
                     text_or_file(args.schema) if args.schema else None)


def _inputs(args) -> tuple[NetQuery, Network, Selectivities]:
    query = load_query(args)
    network = Network.load(args.network)
    if args.estimate_from:
        _, sel = estimate_catalog(query, read_traces(args.estimate_from, network,
                                                     query.time_attribute))
        sel = Selectivities.for_query(query, network, sel.pairwise, sel.projection)
    elif args.selectivities:
        sel = Selectivities.load(args.selectivities, query, network)
    else:
        sel = Selectivities.for_query(query, network)
    return query, network, sel


def _plan(args, query, network, sel):
    options = {"sampling": {"samples": args.samples, "top_k": args.topk, "seed": args.seed}
               }.get(args.planner, {})
    return make_plan(args.planner, query, network, sel, args.mode, **options)


def cmd_plan(args) -> int:
    query, network, sel = _inputs(args)
    result = _plan(args, query, network, sel)
    costs = {m: cost_report(result.plan, query, network, sel, m).total for m in MODES}
    base = push_all_cost(query, network)
    out = {"query": str(query), "planner": result.planner, "plan": result.plan.to_dict(),
           "plan_text": str(result.plan), "cost": costs, "push_all": base,
           "ratio": costs["sink_aware"] / base if base else 0.0,
           "seconds": result.seconds, "evaluations": result.evaluations}
    if args.json:
        print(json.dumps(out, indent=2, default=str))
        return 0
    w = sys.stdout.write
    w(f"query:    {query}\n")
    w(f"planner:  {result.planner} (minimising {args.mode}; {result.evaluations:,} pull-set "
      f"evaluations in {result.seconds:.3f} s)\n")
    w(f"plan:     {result.plan}\n")
    for i, step in enumerate(result.plan.steps, 1):
        how = "push" if step.is_push else "pull with " + ", ".join(sorted(step.pull_set))
        w(f"  step {i}: {', '.join(sorted(step.acquire))} ({how})\n")
    w(f"cost:     {costs['sink_aware']:.6g} messages per time unit (sink-aware), "
      f"{costs['literal']:.6g} (paper's literal formula)\n")
    w(f"push-all: {base:.6g} (best sink); ratio {out['ratio']:.4g}\n")
    return 0


def cmd_simulate(args) -> int:
    query, network, sel = _inputs(args)
    if args.plan:
        from cercore.network.network import read_json
        plan = Plan.from_dict(read_json(args.plan))
    else:
        plan = _plan(args, query, network, sel).plan
    if args.traces:
        traces = read_traces(args.traces, network, query.time_attribute)
    else:
        traces = generate_traces(network, query.types, args.generate, args.seed,
                                 args.id_domain)
    report = simulate(query, network, plan, traces, latency=args.latency,
                      heartbeat=args.heartbeat)
    summary = report.summary()
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        for k, v in summary.items():
            sys.stdout.write(f"{k:>20}: {v:.4g}\n" if isinstance(v, float) else
                             f"{k:>20}: {v}\n")
    if report.correct is False:
        print("cercore: error: the sink's matches differ from centralised evaluation",
              file=sys.stderr)
        return 1
    return 0

"""The ``cercore`` command line: the parser of every command and the entry point.

::

    cercore run QUERY --schema DECL --input FILE [--format jsonl|csv|table] [--backend B]
                [--time-attribute A --time-unit ms] [--on-error raise|skip] [--output FILE]
                [--follow [--idle-timeout SECONDS]]
    cercore explain QUERY --schema DECL
    cercore demo [--backend B] [--limit N]
    cercore plan QUERY --network NET.json [...]
    cercore simulate QUERY --network NET.json (--traces TRACES | --generate DURATION) [...]
    cercore spark-pack OUT.tar.gz

The commands live in ``cercore.cli.ceql`` (run, explain: CEQL and trend queries alike),
``cercore.cli.demo``, ``cercore.cli.network`` (plan, simulate) and ``cercore.cli.spark``
(spark-pack).
Errors cercore raises on purpose are printed as one message on stderr with exit code 2;
Ctrl-C (SIGINT) stops with exit code 130, leaving what was written flushed.
"""

from __future__ import annotations

import argparse
import os
import sys

import cercore
from cercore.cli import ceql, demo, network, spark
from cercore.cli.common import EXIT_USAGE, PROG
from cercore.errors import CercoreError

EXAMPLES = """\
examples:
  cercore demo                                  the bundled stock queries on the bundled trace
  cercore run "SELECT * FROM S WHERE BUY AS b ; SELL AS s FILTER b[price > 100]
               WITHIN 30 SECONDS" --schema stocks.decl --input trades.csv --format table
  cercore run query.ceql --schema stocks.decl < events.jsonl --input-format jsonl
  tail -f events.csv | cercore run query.ceql --schema stocks.decl
  cercore explain query.ceql --schema stocks.decl   how it compiles, and its warnings

A declaration (stocks.decl) names the event types and their attributes:
  CREATE STREAM S { EVENT BUY { name:string, price:double, ts:primary_time(ms) },
                    EVENT SELL { name:string, price:double, ts:primary_time(ms) } }
Times are integers in the declared unit, or timestamps (ISO-8601 text, datetimes).
`cercore COMMAND --help` describes each command's options.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Complex Event Recognition with CEQL queries (CORE).",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {cercore.__version__} (backend: {cercore.BACKEND})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    ceql.add_subcommands(sub)  # cercore run / cercore explain
    demo.add_subcommands(sub)  # cercore demo
    network.add_subcommands(sub)  # cercore plan / cercore simulate (PrePP)
    spark.add_subcommands(sub)  # cercore spark-pack
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 ok, 2 usage or cercore error)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return int(exc.code or 0) if isinstance(exc.code, int) or exc.code is None else 2
    try:
        return args.func(args)
    except CercoreError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):  # e.g. `cercore run ... | head`
            _silence_stdout()
            return 0
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # Ctrl-C, e.g. to stop --follow: what was written stays
        _flush_stdout()
        return 130


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())

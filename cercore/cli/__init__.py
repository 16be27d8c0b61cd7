"""The ``cercore`` command line, one module per command family: ``main`` (the parser and the
entry point), ``ceql`` (run, explain), ``trends`` (run/explain of trend queries),
``streaming`` (where ``run`` reads its events: in bulk or line by line), ``demo`` and
``network`` (PrePP plan, simulate). The bench has its own: ``cercore.bench.cli``."""

from cercore.cli.ceql import cmd_explain, cmd_run, load_schema, query_names
from cercore.cli.common import EXIT_USAGE, PROG
from cercore.cli.demo import (
    DEMO_QUERIES,
    DEMO_TIME_UNIT,
    DemoQuery,
    cmd_demo,
    data_path,
    demo_queries,
    stock_schema,
    stock_trace,
)
from cercore.cli.main import build_parser, main

__all__ = ["DEMO_QUERIES", "DEMO_TIME_UNIT", "EXIT_USAGE", "PROG", "DemoQuery", "build_parser",
           "cmd_demo", "cmd_explain", "cmd_run", "data_path", "demo_queries", "load_schema",
           "main", "query_names", "stock_schema", "stock_trace"]

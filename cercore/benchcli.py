"""Deprecated path of ``cercore-bench``'s entry point, kept for one release: the command lives
in ``cercore.bench.cli`` (``main``), its core experiment in ``cercore.bench.core``."""

from cercore.bench.cli import main
from cercore.bench.core import add_core_arguments, run_bench, run_core

__all__ = ["add_core_arguments", "main", "run_bench", "run_core"]

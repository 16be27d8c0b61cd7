"""The benchmark workloads: see ``cercore.bench.workloads`` (installed with the package)."""

from cercore.bench.workloads import *  # noqa: F403

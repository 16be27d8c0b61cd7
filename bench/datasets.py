"""The benchmark datasets: see ``cercore.bench.datasets`` (installed with the package)."""

from cercore.bench.datasets import *  # noqa: F403

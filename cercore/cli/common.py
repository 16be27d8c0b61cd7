"""What every ``cercore`` command shares: the program name, the exit code of an error, and
the ``--backend`` option."""

from __future__ import annotations

import argparse

PROG = "cercore"
EXIT_USAGE = 2  # usage errors and errors cercore raises on purpose


def add_backend(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default="auto", choices=["auto", "python", "cython"],
                   help="evaluation backend (default: auto = cython when built)")

"""The numbers both backends share have one definition (``cercore.interface.constants``; the
determiniser's ``NO_STATE``): the C constants the Cython kernels compile in
(``cercore_fast/constants.pxd``) equal them, the compiled window start saturates as
``constants.window_start`` does at the ends of int64, and both evaluators report the work
counters of ``WORK_KEYS``, in its order, and load them back."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import BACKENDS

import cercore
from cercore.automata import determinize
from cercore.interface import constants
from cercore.interface.constants import INT64_MAX, INT64_MIN
from cercore.interface.state import WORK_KEYS

PXD = Path(__file__).resolve().parents[2] / "cercore_fast" / "constants.pxd"


def compiled_enums() -> dict[str, int]:
    """NAME = value of every ``cdef enum`` block of constants.pxd."""
    out: dict[str, int] = {}
    for block in re.findall(r"^cdef enum:\n((?:[ \t]+\w+ = -?\d+\n)+)", PXD.read_text(), re.M):
        out.update((name, int(value)) for name, value in re.findall(r"(\w+) = (-?\d+)", block))
    return out


def test_every_compiled_constant_equals_its_python_definition():
    enums = compiled_enums()
    assert {"BOTTOM", "OUTPUT", "UNION", "NIL", "NO_STATE"} <= set(enums)
    for name, value in enums.items():
        python = getattr(constants, name) if hasattr(constants, name) \
            else getattr(determinize, name)
        assert value == python, name


WINDOW_CASES = [(t, e) for t in (INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX)
                for e in (0, 1, 2, INT64_MAX - 1, INT64_MAX)]


def test_window_start_saturates_at_int64_min():
    assert constants.window_start(INT64_MIN, 1) == INT64_MIN
    assert constants.window_start(-1, INT64_MAX) == INT64_MIN
    assert constants.window_start(0, INT64_MAX) == INT64_MIN + 1
    assert constants.window_start(INT64_MAX, INT64_MAX) == 0


def test_compiled_window_start_equals_the_python_one():
    evaluator = pytest.importorskip("cercore_fast.evaluator")
    for t, e in WINDOW_CASES:
        assert evaluator.compiled_window_start(t, e) == constants.window_start(t, e), (t, e)


@pytest.mark.parametrize("backend", BACKENDS)
def test_work_counters_are_the_work_keys_and_load_back(backend):
    q = cercore.compile("SELECT * FROM S WHERE A ; B+", "CREATE STREAM S { EVENT A { v:int }, "
                        "EVENT B { v:int } }")
    evaluator = q.engine(backend).evaluator
    assert tuple(evaluator.work_counts()) == WORK_KEYS
    # distinct counts, so a counter loaded into another's place shows (one bottom node per
    # event: the Cython evaluator keeps those two as one counter)
    counts = {k: 10 * i + 3 for i, k in enumerate(WORK_KEYS)}
    counts["nodes_bottom"] = counts["events"]
    evaluator.reset_work_counts(counts)
    assert evaluator.work_counts() == counts
    evaluator.reset_work_counts()
    assert set(evaluator.work_counts().values()) == {0}

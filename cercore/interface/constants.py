"""Numbers the engine and both evaluator backends share, defined once: the Cython kernels
(``cercore_fast/*.pyx``) read them from this module when they are imported.

The exception is what the kernels need at compile time, as C the compiler folds into the hot
loops: the tECS node kinds and ``NIL`` (``cdef enum``) and ``window_start`` (``cdef inline``)
have compile-time twins in ``cercore_fast/constants.pxd``, which
``tests/runtime/test_shared_constants.py`` checks against the ones here (and the determiniser's
``NO_STATE``, defined with it in ``cercore.automata.determinize``)."""

from __future__ import annotations

from cercore.types import INT64_MAX, INT64_MIN  # noqa: F401  (the kernels read them here)

# window start (tau) when the query has no window: every run's start is >= it, none expires
UNBOUNDED_PAST = INT64_MIN
NO_LIMIT = -1  # LIMIT absent: every complex event of an event is reported
CONSUME_NONE, CONSUME_ANY, CONSUME_PARTITION = 0, 1, 2  # CONSUME BY (absent / ANY / PARTITION)
NOT_READ = -1  # letter of an event the query does not read (other type or stream, skipped)
NO_PARTITION = -1  # partition id of an event without its PARTITION BY key
MIN_COMPACTION = 1 << 14  # tECS arena size below which reclamation is not worth a pass
MISSING = -2  # determinised transition table: not computed yet (NO_STATE = -1 is computed)

# tECS nodes (cercore.runtime.tecs): the kind of a node, and the id of no node
BOTTOM, OUTPUT, UNION = 0, 1, 2
NIL = -1

# binding label (tECS OUTPUT nodes, cercore.runtime.event_predicates) of an event that
# different runs bind to different variables: the complex event is checked whole
AMBIGUOUS = 0


def window_start(time: int, epsilon: int) -> int:
    """The oldest start time a run may have at ``time`` under a window of ``epsilon``:
    ``time - epsilon``, saturated at INT64_MIN (times and windows are int64; the difference
    of two may not be)."""
    return max(time - epsilon, INT64_MIN)

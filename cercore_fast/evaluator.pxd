# cython: language_level=3
"""C API of the Cython evaluator: Algorithm 1 (per-event step over a tECS arena shared by every
partition), Algorithm 2 (stack-based, suspendable enumeration with window pruning), the lazily
filled determinised transition table, and arena reclamation."""

from libc.stdint cimport int32_t, int64_t, uint8_t
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

from cercore_fast.between cimport BetweenKernel
from cercore_fast.tecs cimport Arena, UList


cdef struct Table:
    # One partition's T: active det state -> union list, in first-insertion order.
    vector[int32_t] states
    vector[UList] lists


cdef class CythonEvaluator:
    cdef public object det
    cdef public object encoder
    cdef public bint reclaimed  # a reclamation pass ran that is not reported yet
    cdef public object on_reclaim  # (tau) -> None: told after a run that reclaimed
    cdef public int64_t last_tau
    cdef public int64_t compact_at
    cdef public int64_t reported  # complex events yielded so far (the engine counts deltas)
    cdef int64_t min_compaction

    # work counters (see work_counts): a few plain increments per event, no per-step scratch;
    # nodes_bottom = w_events (one bottom per step), nodes_union = w_created - bottoms - outputs
    cdef int64_t w_events
    cdef int64_t w_created
    cdef int64_t w_transitions
    cdef int64_t w_misses
    cdef int64_t w_outputs
    cdef int64_t w_inserts
    cdef int64_t w_merges
    cdef int64_t w_step_max
    cdef int64_t w_enumerated
    cdef int64_t w_positions
    cdef int64_t w_visited
    cdef int64_t w_checks
    cdef int64_t w_pruned

    # predicates between events, checked while enumerating (None: the query has none);
    # labels[sid * trans_cols + letter]: the OUTPUT node label of that marking move (encoded)
    cdef BetweenKernel between
    cdef int32_t* labels

    cdef Arena arena
    cdef unordered_map[int64_t, Table] partitions

    # partition -> pre state (the det state runs starting now begin in), where not `initial`
    cdef unordered_map[int64_t, int32_t] pre

    # lazily filled det transition table:
    # trans[(sid * trans_cols + letter) * 3 + {0: q•, 1: q∘, 2: next pre state}]
    cdef int32_t* trans
    cdef int64_t trans_rows
    cdef int64_t trans_cols
    cdef vector[uint8_t] final
    cdef int32_t initial
    cdef int32_t miss_sid
    cdef int32_t miss_letter

    # Algorithm 1 scratch
    cdef vector[int32_t] slot  # det state -> index in new_states, or -1
    cdef vector[int32_t] new_states
    cdef vector[UList] new_lists
    cdef vector[UList] spare_lists  # emptied lists kept with their buffers (no malloc per step)
    cdef UList bottom_list
    cdef vector[int64_t] roots

    # the batch being evaluated
    cdef const int64_t* b_active
    cdef const int64_t* b_pids
    cdef const int32_t* b_letters
    cdef const int64_t* b_times
    cdef int64_t b_n
    cdef int64_t b_i
    cdef int64_t b_first
    cdef int64_t b_epsilon
    cdef bint b_windowed
    cdef int64_t b_limit  # complex events reported per event; -1: no LIMIT
    cdef int b_consume  # constants.CONSUME_NONE / CONSUME_ANY / CONSUME_PARTITION
    # a batch of one event (run_one): the b_* pointers point here
    cdef int64_t one_active
    cdef int64_t one_pid
    cdef int32_t one_letter
    cdef int64_t one_time
    cdef int64_t left  # what LIMIT still allows for the current event
    # with predicates between events: a complex event of the current event satisfied them
    # (what CONSUME BY asks), and the enumeration only looks for one (LIMIT 0)
    cdef bint matched
    cdef bint probing
    cdef int64_t cur_pid
    cdef int64_t cur_pos
    cdef int64_t cur_tau
    cdef bint enumerating
    cdef int64_t root_idx

    # Algorithm 2: DFS stack of (node, path depth) and the path of marked positions
    cdef vector[int64_t] st_node
    cdef vector[int64_t] st_depth
    cdef vector[int64_t] path

    # output buffer: outputs i has positions out_pos[out_off[i]:out_off[i + 1]]
    cdef vector[int64_t] out_start
    cdef vector[int64_t] out_end
    cdef vector[int64_t] out_off
    cdef vector[int64_t] out_pos
    cdef int64_t out_cap

    cdef int lookup_ok(self, int32_t sid, int32_t letter) noexcept nogil
    cdef int step(self, int64_t pid, int32_t letter, int64_t pos, int64_t time,
                  int64_t tau) noexcept nogil
    cdef void process_item(self, int32_t p, UList& ul, int32_t letter, int64_t pos,
                           int64_t tau) noexcept nogil
    cdef int enum_run(self) noexcept nogil
    cdef int advance(self) noexcept nogil
    cdef void consume_after(self) noexcept nogil
    cdef int reclaim(self, int64_t tau) noexcept nogil
    cdef int resolve_miss(self) except -1
    cdef int grow_table(self, int64_t rows, int64_t cols) except -1
    cdef int refresh_states(self) except -1
    cdef int label_table(self) except -1
    cdef int32_t label_of(self, int64_t sid, int64_t letter) except? -9
    cdef void clear_output(self) noexcept
    cdef void recycle_new_lists(self) noexcept nogil
    cdef void new_list(self, size_t ns) noexcept nogil
    cdef void begin(self, const int64_t[::1] a, const int64_t[::1] p, const int32_t[::1] l,
                    const int64_t[::1] t, object batch) except *
    cdef void set_input(self, const int64_t* active, const int64_t* pids, const int32_t* letters,
                        const int64_t* times, Py_ssize_t n, int64_t first, int64_t epsilon,
                        bint windowed, int64_t limit, int consume) except *
    cdef int run_to_stop(self) except -1
    cdef int advance_or_raise(self) except -1
    cdef int finish(self) except -1
    cdef list _buffered(self, view)
    cdef object output(self, Py_ssize_t i, view)
    cdef tuple output_arrays(self)

# cython: language_level=3
"""A numpy data allocator that keeps freed large blocks for reuse, for the threads of one
call on several workers (``cercore.runtime.memory``).

Why: each batch of a run makes numpy temporaries of hundreds of KB (a column of the batch).
With one thread glibc serves them from the heap again and again; with several threads each
thread's heap is trimmed (``madvise``) and large blocks are unmapped as soon as they are
freed, so the next batch faults fresh pages in again -- the kernel zeroes them and, the
process having other threads on other cores, shoots down their TLBs. Measured on 2 cores, a
keyed query without output over 1 M events on two workers (``cercore-bench scaling``): 28 %
of the CPU samples in the kernel and the call 0.055-0.060 s against 0.068 s on one worker;
with freed blocks kept, 14 % and 0.041-0.046 s. (glibc keeps such blocks itself given
``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD``, but those are the whole process's settings,
not a library's to change.)

The blocks: a request of ``MIN_KEPT_BYTES`` bytes or more gets a block of the next power of two
(its untouched tail is never faulted in, so the rounding costs address space, not memory),
from the blocks kept for that size if there is one. A freed block is kept from the start of
a call (``open_cache``) until ``release``, which frees them all once no call uses them
(``cercore.runtime.memory`` releases them a few seconds after the last call ends: the next
call, and the arrays a call frees just after it ends, find them), while the blocks kept hold
at most ``MAX_KEPT_BYTES``; else it goes back to the system. Smaller
requests go to ``malloc``. Each block starts with a header (its size and the size asked), so
``realloc`` and ``free`` of an array made here work wherever the array is freed, after the
cache closed included. A lock guards the kept blocks (numpy allocates with the GIL held; the
lock keeps that an assumption it does not depend on).
"""

from cpython.pycapsule cimport PyCapsule_New
from libc.stdint cimport uint8_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy, memset, strncpy

cdef extern from "pythread.h":
    ctypedef void* PyThread_type_lock
    PyThread_type_lock PyThread_allocate_lock()
    int PyThread_acquire_lock(PyThread_type_lock, int) nogil
    void PyThread_release_lock(PyThread_type_lock) nogil

cdef extern from "numpy/arrayobject.h":
    ctypedef struct PyDataMemAllocator:
        void* ctx
        void* (*malloc)(void* ctx, size_t size) noexcept nogil
        void* (*calloc)(void* ctx, size_t nelem, size_t elsize) noexcept nogil
        void* (*realloc)(void* ctx, void* ptr, size_t new_size) noexcept nogil
        void (*free)(void* ctx, void* ptr, size_t size) noexcept nogil
    ctypedef struct PyDataMem_Handler:
        char name[127]
        uint8_t version
        PyDataMemAllocator allocator
    object PyDataMem_SetHandler(object handler)
    int _import_array() except -1

_import_array()

cdef enum:
    HEADER = 16          # bytes before the data: keeps malloc's 16-byte alignment
    SMALLEST = 10        # log2 of the smallest kept block (1 KB)
    LARGEST = 31         # log2 of the largest kept block (2 GB)
    PER_SIZE = 64        # blocks kept per size at most

cdef size_t MAX_KEPT = <size_t>256 << 20  # bytes kept at most, all sizes together

MIN_KEPT_BYTES = 1 << SMALLEST  # (Python names, for tests)
MAX_KEPT_BYTES = MAX_KEPT

cdef struct Header:
    size_t capacity      # the block's bytes with the header (0: a malloc'd block, not kept)
    size_t asked         # the bytes asked for (realloc copies these)

cdef void* blocks_kept[LARGEST + 1][PER_SIZE]
cdef int n_kept[LARGEST + 1]
cdef size_t kept_bytes = 0
cdef long users = 0      # calls with the cache open
cdef bint keeping = False  # freed blocks are kept: from a call's start to the next release
cdef PyThread_type_lock lock = PyThread_allocate_lock()
cdef PyDataMem_Handler handler


cdef inline int size_class(size_t total) noexcept nogil:
    """The power of two at least ``total``, as its log2 (``total`` >= 2 ** SMALLEST)."""
    cdef int k = SMALLEST
    while (<size_t>1 << k) < total:
        k += 1
    return k


cdef void* take(size_t asked, bint zeroed) noexcept nogil:
    """A block for ``asked`` bytes, its data zeroed if asked; NULL when out of memory."""
    global kept_bytes
    cdef size_t total = asked + HEADER
    cdef void* block = NULL
    cdef int k
    if total < asked:  # (overflow)
        return NULL
    if total < (<size_t>1 << SMALLEST) or total > (<size_t>1 << LARGEST):
        block = calloc(1, total) if zeroed else malloc(total)
        if block == NULL:
            return NULL
        (<Header*>block).capacity = 0
    else:
        k = size_class(total)
        PyThread_acquire_lock(lock, 1)
        if n_kept[k]:
            n_kept[k] -= 1
            block = blocks_kept[k][n_kept[k]]
            kept_bytes -= <size_t>1 << k
        PyThread_release_lock(lock)
        if block != NULL:
            if zeroed:
                memset(<char*>block + HEADER, 0, asked)
        else:
            block = calloc(1, <size_t>1 << k) if zeroed else malloc(<size_t>1 << k)
            if block == NULL:
                return NULL
        (<Header*>block).capacity = <size_t>1 << k
    (<Header*>block).asked = asked
    return <char*>block + HEADER


cdef void give_back(void* data) noexcept nogil:
    """Keep the block of ``data`` for the next request of its size, or free it."""
    global kept_bytes
    cdef void* block = <char*>data - HEADER
    cdef size_t capacity = (<Header*>block).capacity
    cdef int k
    if capacity:
        k = size_class(capacity)
        PyThread_acquire_lock(lock, 1)
        if keeping and n_kept[k] < PER_SIZE and kept_bytes + capacity <= MAX_KEPT:
            blocks_kept[k][n_kept[k]] = block
            n_kept[k] += 1
            kept_bytes += capacity
            block = NULL
        PyThread_release_lock(lock)
    if block != NULL:
        free(block)


cdef void* numpy_malloc(void* ctx, size_t size) noexcept nogil:
    return take(size, False)


cdef void* numpy_calloc(void* ctx, size_t nelem, size_t elsize) noexcept nogil:
    if elsize and nelem > (<size_t>-1) // elsize:
        return NULL
    return take(nelem * elsize, True)


cdef void* numpy_realloc(void* ctx, void* data, size_t new_size) noexcept nogil:
    cdef Header* header
    cdef void* moved
    if data == NULL:
        return take(new_size, False)
    header = <Header*>(<char*>data - HEADER)
    if header.capacity and new_size + HEADER <= header.capacity \
            and new_size + HEADER > header.capacity // 2:
        header.asked = new_size  # (room in the block, and not half of it empty)
        return data
    moved = take(new_size, False)
    if moved == NULL:
        return NULL
    memcpy(moved, data, new_size if new_size < header.asked else header.asked)
    give_back(data)
    return moved


cdef void numpy_free(void* ctx, void* data, size_t size) noexcept nogil:
    if data != NULL:
        give_back(data)


def open_cache() -> None:
    """A call starts using the kept blocks (freed blocks are kept from now on)."""
    global users, keeping
    PyThread_acquire_lock(lock, 1)
    users += 1
    keeping = True
    PyThread_release_lock(lock)


def close_cache() -> int:
    """A call is done with the kept blocks; how many calls still use them (the blocks stay
    until ``release``)."""
    global users
    PyThread_acquire_lock(lock, 1)
    users -= 1
    left = users
    PyThread_release_lock(lock)
    return left


def release() -> bool:
    """Free every kept block and keep none from now on, unless a call uses them (False)."""
    global kept_bytes, keeping
    cdef int k, i
    cdef void* blocks[(LARGEST + 1) * PER_SIZE]
    cdef int n = 0
    PyThread_acquire_lock(lock, 1)
    if users > 0:
        PyThread_release_lock(lock)
        return False
    keeping = False
    for k in range(LARGEST + 1):
        for i in range(n_kept[k]):
            blocks[n] = blocks_kept[k][i]
            n += 1
        n_kept[k] = 0
    kept_bytes = 0
    PyThread_release_lock(lock)
    for i in range(n):
        free(blocks[i])
    return True


def kept_blocks() -> tuple:
    """(blocks kept, their bytes): for tests and benchmarks."""
    cdef int k
    cdef long blocks = 0
    PyThread_acquire_lock(lock, 1)
    for k in range(LARGEST + 1):
        blocks += n_kept[k]
    result = (blocks, kept_bytes)
    PyThread_release_lock(lock)
    return result


strncpy(handler.name, b"cercore_kept_blocks", 127)
handler.version = 1
handler.allocator.ctx = NULL
handler.allocator.malloc = numpy_malloc
handler.allocator.calloc = numpy_calloc
handler.allocator.realloc = numpy_realloc
handler.allocator.free = numpy_free

HANDLER = PyCapsule_New(&handler, b"mem_handler", NULL)


def use(object capsule):
    """Make ``capsule`` (``HANDLER``, or what this returned) numpy's allocator in this thread's
    context; the one it replaces."""
    return PyDataMem_SetHandler(capsule)

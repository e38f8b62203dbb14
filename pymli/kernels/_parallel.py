"""Intra-op parallelism of the compute-bound kernels: one call's work split over a few threads.

The convolutions cut their output into blocks of rows (:func:`row_blocks`); :func:`run_parts` runs
the blocks on the calling thread and on the workers of a small pool, which take blocks from a
shared counter until none is left. NumPy and BLAS release the GIL on large arrays, so the blocks
run on separate cores; BLAS itself stays on one thread inside each block (the caller pins it with
:func:`pymli.kernels._blas.blas_single_thread`), so there is no second layer of threads.

Why not OpenBLAS's own threads: their idle workers spin for a core, and as soon as another
process keeps a core busy a call takes 10-30x longer (``_blas.py``). The pool's workers block on a
queue instead, and the calling thread works through the blocks itself: when a worker gets no core,
the caller takes the remaining blocks and, after a short grace period, computes again the block
the worker started but has not finished, so such a call costs about one block more than on one
thread (measured under a load average of 7-13 on 2 cores: 1.0-1.3x the one-thread time, where
OpenBLAS's threads took 5-10x).

Whether the pool pays off depends on the other processes: on a 2-core machine whose second core
another process keeps busy, a call split over two threads takes longer than on one (measured:
conv2d sa8 32x32x32 -> 64 at a load average of 3, 680 us on two threads, 580 us on one). A call
site (a kernel and shape, see :func:`pool_pays`) therefore keeps the recent times of both ways and
takes the faster, trying the other one every :data:`ADAPT_EXPLORE` calls.

Thread count: ``PYMLI_THREADS`` (an integer; 1 switches the pool off), by default the number of
cores this process may run on, at most :data:`MAX_THREADS`. :func:`set_threads` changes it at run
time. The workers run each call in a copy of the caller's :mod:`contextvars` context (the platform
of :func:`pymli.config.use_platform` is one). Nested calls (a block calling a parallel kernel) run
on their block's thread; a forked child starts a fresh pool.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["ADAPT_EXPLORE", "BLOCK_BYTES", "MAX_THREADS", "PARALLEL_WORK", "get_threads", "parts_for", "pool_pays",
           "record_time", "row_blocks", "run_parts", "set_threads", "threads_limit"]

T = TypeVar("T")

MAX_THREADS = 4
"""Default ceiling of the thread count (the kernels' blocks are memory-heavy beyond a few cores)."""

PARALLEL_WORK = 1 << 21
"""Calls with fewer multiply-adds (or element passes) than this stay on one thread: waking a
worker costs ~20-30 us, the time of about 2 M multiply-adds on one core."""

PARTS_PER_THREAD = 2
"""Blocks per thread of a parallel call: a few, so that a worker without a core delays the call by
a fraction of it, and not many, so that each block's GEMM stays efficient."""

BLOCK_BYTES = 1 << 18
"""Most bytes of one block's output-stage temporaries (256 kB): see :func:`parts_for`."""

ADAPT_EXPLORE = 16
"""A call site tries the slower of its two ways (pool or one thread) again every this many calls."""

ADAPT = True
"""Choose per call site between the pool and one thread (:func:`pool_pays`); False: always the pool."""

_ADAPT_WEIGHT = 0.25  # weight of a slower new time in a call site's recent time
_ADAPT_SITES = 256  # most call sites remembered (all are forgotten beyond)

MIN_GRACE = 50e-6
"""Shortest wait (seconds) for a block still running on a worker, see :func:`run_parts`."""

_FREE, _DONE, _FAILED, _ABANDONED = 0, 1, 2, 3

_STATE: dict[str, Any] = {"pool": None, "pid": None, "workers": 0, "threads": None}
_SITES: dict[Any, list] = {}  # call site -> [recent seconds on one thread or None, on the pool or None, calls]
_LOCK = threading.Lock()
_LOCAL = threading.local()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - platforms without affinity masks
        return os.cpu_count() or 1


def _default_threads() -> int:
    env = os.environ.get("PYMLI_THREADS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            pass
    return max(1, min(_cores(), MAX_THREADS))


def get_threads() -> int:
    """Threads a kernel call may use (1: no pool)."""
    n = _STATE["threads"]
    if n is None:
        n = _STATE["threads"] = _default_threads()
    return n


def set_threads(n: int | None) -> None:
    """Set the thread count of the kernels (None: back to the default of ``PYMLI_THREADS`` / the cores).

    Args:
        n: threads per kernel call, at least 1; or None.

    Raises:
        ValueError: ``n`` below 1.
    """
    if n is not None and int(n) < 1:
        raise ValueError(f"thread count must be at least 1, got {n}")
    _STATE["threads"] = None if n is None else int(n)


@contextlib.contextmanager
def threads_limit(n: int | None) -> Iterator[None]:
    """:func:`set_threads` for the duration of a ``with`` block, then the previous setting."""
    saved = _STATE["threads"]
    set_threads(n)
    try:
        yield
    finally:
        _STATE["threads"] = saved


def pool_pays(site: Any) -> bool:
    """Whether the next call of ``site`` should use the pool: the way (pool or one thread) of the
    lower recent time (:func:`record_time`), except every :data:`ADAPT_EXPLORE`-th call, which
    takes the other way so that its time follows the machine's load. A new site tries the pool,
    then one thread. Always True when :data:`ADAPT` is off.

    Args:
        site: a hashable key of the call site (e.g. the kernel and its shapes).
    """
    if not ADAPT:
        return True
    st = _SITES.get(site)
    if st is None or st[1] is None:
        return True
    if st[0] is None:
        return False
    st[2] += 1
    return (st[1] <= st[0]) != (st[2] % ADAPT_EXPLORE == 0)


def record_time(site: Any, pooled: bool, seconds: float) -> None:
    """Add a call's time to the recent time of ``site``'s way (``pooled``: it used the pool).

    A faster time replaces the recent time at once; a slower one moves it by a quarter of the way,
    counted at most twice the recent time (so one stalled call, e.g. the pool's first, does not
    hide that way for long, and a lasting change of the load is followed within a few calls).

    Args:
        site: the call site's key, as given to :func:`pool_pays`.
        pooled: the call ran on the pool (else on one thread).
        seconds: its wall time.
    """
    st = _SITES.get(site)
    if st is None:
        if len(_SITES) >= _ADAPT_SITES:
            _SITES.clear()
        st = _SITES[site] = [None, None, 0]
    i = 1 if pooled else 0
    old = st[i]
    st[i] = seconds if old is None or seconds < old else old + _ADAPT_WEIGHT * (min(seconds, 2 * old) - old)


def parts_for(work: int, out_bytes: int, max_parts: int, threads: int | None = None,
              per_thread: int | None = None) -> int:
    """Number of blocks to cut a call into (1: run it in one piece).

    Two reasons to cut: threads (a call of at least :data:`PARALLEL_WORK` gets
    :data:`PARTS_PER_THREAD` blocks per thread), and memory: the output stage of a block allocates
    temporaries of its size, and large temporaries can be fresh pages on every call, a page fault
    per 4 kB (measured: ~950 faults and 2 ms per call on a depthwise fx16 56x56x64 in one block,
    none with blocks of at most :data:`BLOCK_BYTES`). Each block costs ~20 us of output-stage
    overhead, so a call is not cut further than these two reasons ask.

    Args:
        work: size of the call (multiply-adds, or element passes).
        out_bytes: bytes of the call's output as the output stage holds it (int32 or int64).
        max_parts: most blocks the call can be cut into (e.g. its output rows).
        threads: threads the call will run on (None: :func:`get_threads`).
        per_thread: blocks per thread (None: :data:`PARTS_PER_THREAD`); 1 for blocks that are one
            BLAS product each, whose efficiency falls with the block's rows.

    Returns:
        The number of blocks, between 1 and ``max(1, max_parts)``.
    """
    parts = -(-out_bytes // BLOCK_BYTES)
    threads = get_threads() if threads is None else threads
    if threads > 1 and work >= PARALLEL_WORK and not getattr(_LOCAL, "inside", False):
        parts = max(parts, threads * (PARTS_PER_THREAD if per_thread is None else per_thread))
    return max(1, min(max_parts, parts))


def row_blocks(n: int, rows: int, parts: int) -> list[tuple[int, int, int, int]]:
    """Blocks ``(n0, n1, r0, r1)`` covering ``n`` samples x ``rows`` output rows, about ``parts`` of them.

    Whole samples per block when there are at least ``parts`` samples, else row ranges of each
    sample (a block never spans two samples partially). Empty blocks are left out.

    Args:
        n: samples; rows: output rows per sample; parts: wanted number of blocks.

    Returns:
        Blocks of samples ``n0:n1`` and rows ``r0:r1`` that cover every (sample, row) once.
    """
    if parts <= 1 or n * rows <= 1:
        return [(0, n, 0, rows)]
    if n >= parts:
        cuts = [n * i // parts for i in range(parts + 1)]
        return [(cuts[i], cuts[i + 1], 0, rows) for i in range(parts) if cuts[i] < cuts[i + 1]]
    per = min(rows, -(-parts // n))
    cuts = [rows * i // per for i in range(per + 1)]
    return [(s, s + 1, cuts[i], cuts[i + 1]) for s in range(n) for i in range(per) if cuts[i] < cuts[i + 1]]


def _pool(workers: int) -> ThreadPoolExecutor:
    """The shared pool with ``workers`` threads (created on first use, again after ``fork``)."""
    with _LOCK:
        pool = _STATE["pool"]
        if pool is None or _STATE["pid"] != os.getpid() or _STATE["workers"] != workers:
            if pool is not None and _STATE["pid"] == os.getpid():
                pool.shutdown(wait=False)
            pool = _STATE["pool"] = ThreadPoolExecutor(workers, thread_name_prefix="pymli")
            _STATE["pid"], _STATE["workers"] = os.getpid(), workers
    return pool


def run_parts(fn: Callable[[int], T], n: int, abandon: Callable[[], None] | None = None,
              threads: int | None = None) -> list[T]:
    """``[fn(0), ..., fn(n - 1)]``, computed on this thread and up to ``threads - 1`` pool workers.

    The calls may run in any order and concurrently. When this thread has run out of blocks, it
    waits for each block still running on a worker for a grace period (the mean time of its own
    blocks), then computes that block itself and drops the worker's result whenever it comes: a
    worker without a core (other processes keeping the cores busy) delays the call by about one
    block, not by the scheduler's time slices. ``fn`` must therefore write only to fresh or
    thread-private memory and keep alive what it reads: an abandoned call may still be running
    after this function returned, and ``abandon()`` is then called (the caller must not reuse
    for another call what the blocks read, e.g. a scratch buffer).

    Args:
        fn: the block function.
        n: number of blocks.
        abandon: called before returning (or raising) when a block may still be running.
        threads: most threads to use, this one included (None: :func:`get_threads`).

    Returns:
        The results in block order.

    Raises:
        Exception: whatever a call of ``fn`` raised on this thread (a block that failed on a worker
        is computed again here, and raises here).
    """
    helpers = min(get_threads() if threads is None else threads, n) - 1
    if helpers <= 0 or getattr(_LOCAL, "inside", False):
        return [fn(i) for i in range(n)]
    results: list[Any] = [None] * n
    state = [_FREE] * n  # a worker's blocks: _DONE or _FAILED once finished
    cond = threading.Condition()
    counter = itertools.count()  # next() on it is atomic under the GIL

    def helper() -> None:
        _LOCAL.inside = True
        try:
            for i in iter(counter.__next__, None):
                if i >= n:
                    return
                try:
                    r, st = fn(i), _DONE
                except Exception:  # computed again (and raised) by the caller's thread
                    r, st = None, _FAILED
                with cond:
                    if state[i] == _FREE:
                        results[i], state[i] = r, st
                        cond.notify_all()
        finally:
            _LOCAL.inside = False

    pool = _pool(get_threads() - 1)
    # The workers run in copies of the caller's context: pymli.config's platform (rounding mode,
    # FULL_ACCU) and memory budget are context variables.
    futures = [pool.submit(contextvars.copy_context().run, helper) for _ in range(helpers)]
    _LOCAL.inside = True
    abandoned = False
    try:
        mine = []
        t0 = time.perf_counter()
        for i in iter(counter.__next__, None):
            if i >= n:
                break
            results[i] = fn(i)
            mine.append(i)
        grace = max(MIN_GRACE, (time.perf_counter() - t0) / max(1, len(mine)))
        own = set(mine)
        for i in range(n):
            if i in own:
                continue
            with cond:
                cond.wait_for(lambda i=i: state[i] != _FREE, timeout=grace)
                if state[i] == _DONE:
                    continue
                if state[i] == _FREE:
                    abandoned = True  # the worker's result, if it comes, is dropped
                state[i] = _ABANDONED
            results[i] = fn(i)
    except BaseException:
        abandoned = True  # the workers may still be running blocks
        raise
    finally:
        _LOCAL.inside = False
        for f in futures:
            f.cancel()  # a helper that has not started finds nothing left to do
        if abandoned and abandon is not None:
            abandon()
    return results

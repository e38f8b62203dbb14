"""BLAS threading of the kernels: one OpenBLAS thread around their matrix products.

Measured on a 2-core machine (benchmarks/README.md): the products of MLI-sized layers (conv2d
32x32x32 3x3 -> 64 is a 1024 x 288 x 64 GEMM; LSTM steps are matrix-vector products) gain at
most ~1.3x from a second OpenBLAS thread on an idle machine, and lose 10-20x as soon as another
process keeps a core busy (the worker threads spin and wait for a core). pymli therefore runs its
kernels' BLAS calls on one thread: :func:`blas_single_thread` lowers the thread count for the
duration of one kernel call and restores it afterwards, so the rest of the process keeps its
setting.

Set ``PYMLI_BLAS_THREADS=default`` to leave BLAS alone (e.g. on a large idle machine). Without
``threadpoolctl`` (an optional dependency) the kernels run with whatever BLAS is configured for.

The convolutions get their second core another way: :mod:`pymli.kernels._parallel` cuts a large
call into row blocks run on a small pool whose idle workers block instead of spinning, each block
with its own single-threaded BLAS call (the pin is taken once around the whole call).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

__all__ = ["blas_single_thread", "SMALL_PRODUCT"]

_STATE: dict[str, Any] = {}

SMALL_PRODUCT = 1 << 14
"""Products of fewer multiply-adds than this stay on one thread in OpenBLAS anyway: no switch
(which costs ~10 us: it would dominate tiny calls)."""


def _blas_libs() -> list[Any]:
    """The BLAS library controllers of threadpoolctl (found once; empty when not applicable)."""
    libs = _STATE.get("libs")
    if libs is None:
        libs = []
        if os.environ.get("PYMLI_BLAS_THREADS", "1") != "default":
            try:  # optional dependency: without it BLAS keeps its own setting
                from threadpoolctl import ThreadpoolController
            except ImportError:
                pass
            else:
                libs = [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
        _STATE["libs"] = libs
    return libs


@contextlib.contextmanager
def blas_single_thread(macs: int | None = None) -> Iterator[None]:
    """Run the enclosed BLAS calls on one thread, then restore the previous thread counts.

    Args:
        macs: size of the enclosed work in multiply-adds; below :data:`SMALL_PRODUCT` nothing is
            changed. None: always switch.
    """
    changed = []
    libs = _blas_libs() if macs is None or macs >= SMALL_PRODUCT else []
    for lib in libs:
        n = lib.get_num_threads()
        if n != 1:
            lib.set_num_threads(1)
            changed.append((lib, n))
    try:
        yield
    finally:
        for lib, n in changed:
            lib.set_num_threads(n)

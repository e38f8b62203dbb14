"""Per-thread scratch buffers for the large temporaries of the memory-bound kernels.

A temporary of a few hundred KB freed after every call can be handed back to the system by the
allocator and faulted in again, page by page, on the next call (a few hundred page faults, often
more than the kernel's own work). Kernels therefore keep such temporaries here, one buffer per
(name, shape, dtype), and reuse it. Only for arrays that never leave the function using them.
"""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt

__all__ = ["scratch"]

_LOCAL = threading.local()
_MAX_BUFFERS = 24  # per thread; the oldest buffer is dropped first


def scratch(name: str, shape: tuple[int, ...], dtype: npt.DTypeLike) -> np.ndarray:
    """A reusable uninitialised C-contiguous buffer ``np.empty(shape, dtype)`` private to this thread.

    Args:
        name: what the buffer is for (two temporaries alive at once need two names).
        shape: its shape (a tuple).
        dtype: its dtype (any hashable NumPy dtype spelling; keep one spelling per call site).

    Returns:
        The buffer; its content is whatever the last user left.
    """
    cache = getattr(_LOCAL, "buffers", None)
    if cache is None:
        cache = _LOCAL.buffers = {}
    key = (name, shape, dtype)
    buf = cache.get(key)
    if buf is None:
        if len(cache) >= _MAX_BUFFERS:
            cache.pop(next(iter(cache)))
        buf = cache[key] = np.empty(shape, dtype=dtype)
    return buf

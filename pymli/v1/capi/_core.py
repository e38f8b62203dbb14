"""Plumbing shared by the 1.x C API callables: read tensors, run checks, commit writes."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..config import checked_build
from ..tensor import MliError, Status, Tensor

__all__ = ["read", "commit", "run", "FX8", "FX16", "TYPE_SUFFIXES", "is_null"]

FX8, FX16 = 0, 1

#: suffix -> (data el_type, weights el_type, data bits)
TYPE_SUFFIXES: dict[str, tuple[int, int, int]] = {"fx8": (FX8, FX8, 8), "fx16": (FX16, FX16, 16),
                                                   "fx8w16d": (FX16, FX8, 16)}

_DT = {FX8: np.dtype(np.int8), FX16: np.dtype(np.int16)}


def is_null(t: Tensor | None) -> bool:
    """A NULL struct pointer or a NULL data pointer."""
    return t is None or t.data is None


def read(t: Tensor, el: int, count: int | None = None, scalar_in_data: bool = False) -> np.ndarray:
    """The first ``count`` elements of ``t`` (default: its element count) as int64, read as type ``el``.

    Args:
        t: the tensor.
        el: element type the C function reads (its name's type, whatever ``t.el_type`` says).
        count: elements to read.
        scalar_in_data: rank 0 means "value in the data field" (eltwise operands, leaky slope).

    Raises:
        MliError: BAD_TENSOR for a NULL pointer or a buffer too small (a C out-of-bounds read).
    """
    n = t.count() if count is None else count
    if scalar_in_data and t.rank == 0:
        if isinstance(t.data, np.ndarray):
            return t.data.view(_DT[el])[:1].astype(np.int64)
        if t.data is None:
            return np.zeros(1, dtype=np.int64)
        v = int(t.data)
        bits = 8 * _DT[el].itemsize
        v = ((v + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))  # (int8_t)(intptr_t)data
        return np.asarray([v], dtype=np.int64)
    if not isinstance(t.data, np.ndarray):
        raise MliError(Status.BAD_TENSOR, "NULL (or non-buffer) data pointer")
    buf = t.data if t.data.dtype == _DT[el] else t.data.view(_DT[el])
    if buf.size < n:
        raise MliError(Status.BAD_TENSOR, f"buffer holds {buf.size} elements, the call reads {n}")
    return buf[:n].astype(np.int64)


def commit(writes: Sequence[tuple[Tensor, int, np.ndarray]], structs: Sequence[tuple[Tensor, dict[str, Any]]] = ()) -> None:
    """Check every write fits its buffer, then store values and struct fields (nothing on failure).

    Args:
        writes: (tensor, element type, values) triples; values are stored from element 0.
        structs: (tensor, {field: value}) struct updates applied after the data.

    Raises:
        MliError: NOT_ENGH_MEM if a buffer is smaller than what the C kernel writes.
    """
    for t, el, v in writes:
        if not isinstance(t.data, np.ndarray):
            raise MliError(Status.BAD_TENSOR, "output has no buffer")
        nbytes = t.data.nbytes
        if v.size * _DT[el].itemsize > nbytes:
            raise MliError(Status.NOT_ENGH_MEM, f"the result needs {v.size * _DT[el].itemsize} bytes, "
                                                f"the buffer has {nbytes}")
    for t, el, v in writes:
        buf = t.data if t.data.dtype == _DT[el] else t.data.view(_DT[el])
        buf[: v.size] = v.reshape(-1)
    for t, fields in structs:
        for k, val in fields.items():
            if k == "shape":
                shp = list(t.shape)
                for i, s in enumerate(val):
                    shp[i] = int(s)
                t.shape = shp
            else:
                setattr(t, k, val)


def run(check: Callable[[], Status], compute: Callable[[], None], extra: Callable[[], Status] | None = None) -> Status:
    """Check (checked builds), then compute; release builds skip MLI's checks as the C library does.

    ``extra`` holds pymli's own refusals (specialisation constraints, the 1.0 memory bugs), run in
    every build. NumPy errors from inconsistent arguments in a release build become ``MliError``.

    Returns:
        Status: ``Status.OK``.

    Raises:
        MliError: the checked build's status, or pymli's refusal.
    """
    if checked_build():
        st = check()
        if st != Status.OK:
            raise MliError(st, "rejected by the checked MLI 1.0 build")
    if extra is not None:
        st = extra()
        if st != Status.OK:
            raise MliError(st, "refused by pymli (the C library would misbehave)")
    try:
        compute()
    except MliError:
        raise
    except (ValueError, IndexError, TypeError, ZeroDivisionError) as e:  # release build, bad arguments
        raise MliError(Status.BAD_TENSOR, f"inconsistent arguments: {e}") from e
    return Status.OK

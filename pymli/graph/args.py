"""Argument checks of the Pythonic front ends (:mod:`pymli.ops`, :mod:`pymli.models`), written once.

The C API takes structs whose fields have fixed C types; the front ends take Python values (ints,
pairs, names, dicts of quantisation fields) and build those structs. Every front-end entry point
runs these checks on its arguments before it computes or allocates anything, so that a misuse ends
in :class:`~pymli.errors.MliError` naming the function, the argument and the expected value, never
in a ``TypeError`` / ``KeyError`` / ``ZeroDivisionError`` from deeper down.

Statuses: a malformed configuration value (stride, padding, axis, kind name, quantisation field)
is ``BAD_FUNC_CFG``; something that is not a tensor where one is expected, or a tensor struct whose
fields the front end cannot read, is ``BAD_TENSOR``; an output that would need more than
:func:`pymli.config.get_memory_budget` bytes is ``NOT_ENGH_MEM`` (refused before the allocation).

Example:
    >>> from pymli.graph import args
    >>> args.int_pair(2, "stride", what="conv2d", lo=1)
    (2, 2)
    >>> args.choice("RELU6", {"relu6": 3}, "relu", what="conv2d")
    3
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from ..checks.entry import check_budget
from ..config import DEFAULT_MEMORY_BUDGET
from ..errors import MliError, Status
from ..formats import ElType
from ..tensor import MLI_MAX_RANK, Tensor

__all__ = ["ALLOC_LIMIT", "INT8", "INT16", "UINT8", "INT32", "UINT32", "integer", "int_pair", "int_list", "choice",
           "finite", "array_like", "tensor", "tensor_list", "quant_fields", "check_alloc"]

T = TypeVar("T")

#: C integer field ranges (inclusive)
INT8 = (-(2**7), 2**7 - 1)
UINT8 = (0, 2**8 - 1)
INT16 = (-(2**15), 2**15 - 1)
INT32 = (-(2**31), 2**31 - 1)
#: the largest ``uint32_t``
UINT32 = 2**32 - 1

#: the default largest output buffer (bytes) a front end allocates for one call: the memory budget's
#: default; the budget in force is :func:`pymli.config.get_memory_budget`
ALLOC_LIMIT = DEFAULT_MEMORY_BUDGET


def _fail(status: Status, what: str, message: str) -> MliError:
    return MliError(status, f"{what}: {message}")


def integer(v: Any, name: str, *, what: str, lo: int | None = None, hi: int | None = None,
            status: Status = Status.BAD_FUNC_CFG) -> int:
    """A Python int from an integer argument (``int``, a NumPy integer or a 0-d integer array).

    Args:
        v: the value given; name: the argument's name (for the message); what: the function.
        lo, hi: inclusive bounds, or None.
        status: the status of the error.

    Returns:
        ``v`` as an int.

    Raises:
        MliError: ``status`` for a bool, float, string, None, sequence or a value outside [lo, hi].
    """
    if isinstance(v, (bool, np.bool_)):
        raise _fail(status, what, f"{name} = {v!r}: an integer expected, not a bool")
    try:
        i = operator.index(v)
    except TypeError:
        raise _fail(status, what, f"{name} = {v!r:.60}: an integer expected") from None
    if (lo is not None and i < lo) or (hi is not None and i > hi):
        rng = f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"
        raise _fail(status, what, f"{name} = {i} outside {rng}")
    return int(i)


def _is_seq(v: Any) -> bool:
    return isinstance(v, (list, tuple)) or (isinstance(v, np.ndarray) and v.ndim == 1)


def int_list(v: Any, name: str, *, what: str, length: int | Sequence[int] | None = None, lo: int | None = None,
             hi: int | None = None, status: Status = Status.BAD_FUNC_CFG) -> list[int]:
    """A list of ints from a list, tuple or 1-D integer array.

    Args:
        v: the value given; name, what: for the message.
        length: the required length, a set of allowed lengths, or None.
        lo, hi: inclusive bounds of every element.
        status: the status of the error.

    Returns:
        The values as Python ints.

    Raises:
        MliError: ``status`` for anything but such a sequence, a wrong length or a bad element.
    """
    if not _is_seq(v):
        raise _fail(status, what, f"{name} = {v!r:.60}: a list of integers expected")
    vals = [integer(e, f"{name}[{i}]", what=what, lo=lo, hi=hi, status=status) for i, e in enumerate(v)]
    if length is not None:
        allowed = (length,) if isinstance(length, int) else tuple(length)
        if len(vals) not in allowed:
            raise _fail(status, what, f"{name} = {vals}: {' or '.join(map(str, allowed))} values expected")
    return vals


def int_pair(v: Any, name: str, *, what: str, lo: int | None = None, hi: int | None = None,
             status: Status = Status.BAD_FUNC_CFG) -> tuple[int, int]:
    """``(height, width)`` from an int (both) or a pair of ints.

    Args:
        v: an int, or a sequence of two ints; name, what: the argument and the function, for the message.
        lo, hi: inclusive bounds of each value (None: unbounded).
        status: the status of the error.

    Returns:
        ``(height, width)`` as Python ints.

    Raises:
        MliError: ``status`` for another type, length or a value outside [lo, hi].
    """
    if _is_seq(v):
        a, b = int_list(v, name, what=what, length=2, lo=lo, hi=hi, status=status)
        return a, b
    i = integer(v, name, what=what, lo=lo, hi=hi, status=status)
    return i, i


def choice(v: Any, choices: Mapping[str, T], name: str, *, what: str, status: Status = Status.BAD_FUNC_CFG) -> T:
    """The value of a name given by the user, looked up case-insensitively.

    Args:
        v: the name given; choices: lower-case name -> value; name, what: for the message.
        status: the status of the error.

    Returns:
        ``choices[v.lower()]``.

    Raises:
        MliError: ``status`` for a non-string or an unknown name (the message lists the choices).
    """
    if isinstance(v, str):
        key = v.strip().lower()
        if key in choices:
            return choices[key]
    raise _fail(status, what, f"{name} = {v!r:.60}: one of {', '.join(repr(c) for c in choices)}")


def finite(v: Any, name: str, *, what: str, status: Status = Status.BAD_FUNC_CFG) -> float:
    """A finite float from a real number (not a bool, string or None).

    Args:
        v: the value given (a Python or NumPy int / float; not a bool); name, what: for the message.
        status: the status of the error.

    Returns:
        ``float(v)``.

    Raises:
        MliError: ``status`` for a non-number, NaN or an infinity.
    """
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise _fail(status, what, f"{name} = {v!r:.60}: a real number expected")
    f = float(v)
    if not math.isfinite(f):
        raise _fail(status, what, f"{name} = {f}: a finite number expected")
    return f


def array_like(v: Any, name: str, expected: str, *, status: Status = Status.BAD_TENSOR) -> np.ndarray:
    """``np.asarray(v)`` of array data, refusing what NumPy would turn into a string or object array.

    Args:
        v: any value (the caller then checks the dtype, rank and values it needs).
        name: what the value is (starts the message, e.g. ``"input"``).
        expected: what was expected (e.g. ``"an array of samples"``).
        status: the status of the error.

    Returns:
        The array (not copied where ``np.asarray`` does not copy).

    Raises:
        MliError: ``status`` for None, a string, bytes, a dict, or a value NumPy cannot make an array of.
    """
    if v is None or isinstance(v, (str, bytes, dict)):
        raise MliError(status, f"{name} {type(v).__name__}: {expected} expected")
    try:
        return np.asarray(v)
    except (TypeError, ValueError):
        raise MliError(status, f"{name}: {expected} expected") from None


def tensor(v: Any, name: str, *, what: str, ranks: Sequence[int] | None = None,
           status: Status = Status.BAD_TENSOR) -> Tensor:
    """A :class:`Tensor` whose struct fields the front end reads (type, rank, shape) are well formed.

    The MLI checks of the called function still run on every field; this only makes sure the front
    end itself can read the tensor.

    Args:
        v: the value given; name, what: for the message.
        ranks: the ranks the operation takes (a wrong rank is SHAPE_MISMATCH), or None.
        status: the status for a non-tensor or a malformed struct.

    Returns:
        ``v``.

    Raises:
        MliError: ``status`` for a non-tensor, an element type outside the enum, a rank outside
            0..4 or a shape shorter than the rank or with entries that are not positive ints;
            SHAPE_MISMATCH for a rank outside ``ranks``.
    """
    if not isinstance(v, Tensor):
        raise _fail(status, what, f"{name} = {type(v).__name__}: a pymli.Tensor expected")
    if not isinstance(v.el_type, ElType):
        raise _fail(status, what, f"{name}.el_type = {v.el_type!r:.40}: an ElType expected")
    rank = integer(v.rank, f"{name}.rank", what=what, lo=0, hi=MLI_MAX_RANK, status=status)
    if not isinstance(v.shape, (list, tuple, np.ndarray)) or len(v.shape) < rank:
        raise _fail(status, what, f"{name}.shape = {v.shape!r:.60}: {rank} dimensions expected")
    for i in range(rank):
        integer(v.shape[i], f"{name}.shape[{i}]", what=what, lo=1, hi=INT32[1], status=status)
    if ranks is not None and rank not in ranks:
        raise _fail(Status.SHAPE_MISMATCH, what, f"{name} has rank {rank}, expected {' or '.join(map(str, ranks))}")
    return v


def tensor_list(v: Any, name: str, *, what: str, min_len: int = 1, max_len: int | None = None) -> list[Tensor]:
    """A list (or tuple) of tensors, each checked by :func:`tensor`.

    Args:
        v: a list or tuple of :class:`~pymli.tensor.Tensor`; name, what: for the message.
        min_len, max_len: the accepted length (``max_len`` None: no upper bound).

    Returns:
        The tensors as a new list.

    Raises:
        MliError: BAD_FUNC_CFG for a non-sequence or a length outside [min_len, max_len]; BAD_TENSOR
            for an element that is not a well-formed tensor.
    """
    if not isinstance(v, (list, tuple)):
        raise _fail(Status.BAD_FUNC_CFG, what, f"{name} = {type(v).__name__}: a list of tensors expected")
    if len(v) < min_len or (max_len is not None and len(v) > max_len):
        upto = f"..{max_len}" if max_len is not None else " or more"
        raise _fail(Status.BAD_FUNC_CFG, what, f"{name}: {len(v)} tensors, {min_len}{upto} expected")
    return [tensor(t, f"{name}[{i}]", what=what) for i, t in enumerate(v)]


_SA_FIELDS = {"zero_point": INT16, "scale": (1, INT16[1]), "scale_frac_bits": INT8}


def quant_fields(v: Any, el: ElType, name: str, *, what: str, allow_range: bool = False) -> dict[str, Any]:
    """Output quantisation fields given as a dict, checked against the output's element type.

    FX: ``{"frac_bits": n}`` with ``n`` an int8; SA: ``{"zero_point", "scale", "scale_frac_bits"}``
    (int16, positive int16, int8; missing ones keep their defaults 0 / 1 / 0). With
    ``allow_range``, ``{"min": lo, "max": hi}`` (finite, ``lo <= hi``) is accepted too.

    Args:
        v: the dict given; el: the output element type; name, what: for the message.
        allow_range: accept a float range.

    Returns:
        A new dict of Python ints (or of the two floats of a range).

    Raises:
        MliError: BAD_FUNC_CFG for a non-dict, unknown or missing keys, or values outside their C type.
    """
    if not isinstance(v, Mapping):
        raise _fail(Status.BAD_FUNC_CFG, what, f"{name} = {v!r:.60}: a dict of quantisation fields expected")
    keys = set(v)
    if allow_range and keys == {"min", "max"}:
        lo = finite(v["min"], f"{name}['min']", what=what)
        hi = finite(v["max"], f"{name}['max']", what=what)
        if lo > hi:
            raise _fail(Status.BAD_FUNC_CFG, what, f"{name}: min {lo} > max {hi}")
        return {"min": lo, "max": hi}
    if el.is_fx:
        if keys != {"frac_bits"}:
            raise _fail(Status.BAD_FUNC_CFG, what, f"{name} keys {sorted(map(str, keys))}: {{'frac_bits'}} expected "
                                                   f"for {el.name}")
        return {"frac_bits": integer(v["frac_bits"], f"{name}['frac_bits']", what=what, lo=INT8[0], hi=INT8[1])}
    if el.is_sa:
        if not keys or not keys <= set(_SA_FIELDS):
            raise _fail(Status.BAD_FUNC_CFG, what, f"{name} keys {sorted(map(str, keys))}: some of "
                                                   f"{sorted(_SA_FIELDS)} expected for {el.name}")
        return {k: integer(v[k], f"{name}[{k!r}]", what=what, lo=lo, hi=hi)
                for k, (lo, hi) in _SA_FIELDS.items() if k in v}
    raise _fail(Status.TYPE_MISMATCH, what, f"{el.name} output has no quantisation fields")


def check_alloc(shape: Sequence[int], el: ElType, *, what: str) -> None:
    """Refuse an output of ``shape`` needing more than the memory budget in force (before allocating).

    Args:
        shape: the output shape (sizes below 1 count as 1).
        el: the output element type (its container size in bytes).
        what: the calling function, for the message.

    Raises:
        MliError: NOT_ENGH_MEM.
    """
    n = el.size or 1
    for s in shape:
        n *= max(int(s), 1)
    check_budget(n, f"{what}: an output of shape {list(shape)}")

"""Generic tensor-struct checks shared by every MLI function (``private/src/mli_check.cc``).

Each ``check_*`` function raises :class:`~pymli.errors.MliError` with the status the C library's
checked build (``MLI_DEBUG_MODE = DBG_MODE_RET_CODES``) returns, or returns ``None``; the predicates
(``same_shape``, ``layout_is_contiguous``, ...) return a bool. The checks of each kernel family
live beside this module in :mod:`pymli.checks` and are built from these.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..arith.rounding import wrap_int
from ..errors import MliError, Status
from ..formats import ElType
from ..tensor import MLI_MAX_RANK, Lut, Tensor, address

__all__ = [
    "fail",
    "shape_at",
    "stride_at",
    "check_tensor",
    "data_is_null",
    "check_tensor_private",
    "check_quant_params",
    "check_scalar_tensor",
    "tensor_is_scalar",
    "tensors_not_overlapped",
    "check_lut",
    "inner_most_dimension_is_one",
    "layout_is_contiguous",
    "mem_stride_matches",
    "same_shape",
    "calc_shift_idx",
    "INT32_MAX",
    "CheckCache",
    "struct_key",
    "count_elements",
    "same_data_pointer",
    "validate_tensor",
]

INT32_MAX = 2**31 - 1
_I32_MIN = -(2**31)


class CheckCache:
    """Memoised outcome of checks that depend only on struct fields (shapes, strides, types, params).

    ``run(key, check)`` calls ``check()`` the first time a ``key`` (built from exactly the fields the
    check reads) is seen and re-raises its :class:`MliError` on every later call with that key. Checks
    that depend on data addresses (buffer overlap) must stay outside.
    """

    def __init__(self, size: int = 512) -> None:
        self._size = size
        self._outcome: dict[object, tuple[Status, str] | None] = {}

    def run(self, key: object, check: Callable[[], None]) -> None:
        """Run ``check`` once per ``key`` and replay its outcome (``None`` or the same MliError).

        Args:
            key: a hashable value holding every field ``check`` reads (see :func:`struct_key`).
            check: a function of those fields only, raising MliError on failure.

        Raises:
            MliError: the error ``check`` raised for this key.
        """
        bad = self._outcome.get(key, False)
        if bad is False:
            try:
                check()
                bad = None
            except MliError as e:
                bad = (e.status, e.message)
            if len(self._outcome) >= self._size:
                self._outcome.clear()
            self._outcome[key] = bad
        if bad is not None:
            raise MliError(*bad)


def struct_key(t: Tensor) -> tuple:
    """Every struct field :func:`check_tensor` reads, as a hashable key for :class:`CheckCache`.

    Element type, rank, shape, mem_stride, capacity, whether the data pointer is NULL and, for a
    rank-0 tensor (whose C "pointer" is the value itself), the value.

    Args:
        t: the tensor.

    Returns:
        A tuple equal for two tensors exactly when :func:`check_tensor` treats them alike.
    """
    value = None
    if t.rank == 0 and t.data is None:
        value = (type(t.value).__name__, repr(t.value))
    return (t.el_type, t.rank, tuple(t.shape), tuple(t.mem_stride), t.capacity, t.data is None, value)


def fail(status: Status, message: str) -> None:
    """Raise ``MliError(status, message)``.

    Args:
        status: the C status; message: what was wrong, naming the values.

    Raises:
        MliError: always.
    """
    raise MliError(status, message)


def shape_at(t: Tensor, i: int) -> int:
    """``t->shape[i]`` with C's fixed ``MLI_MAX_RANK`` array (entries past the list are 0).

    Args:
        t: the tensor; i: the dimension (0 to 3).

    Returns:
        The shape entry as a Python int.
    """
    return int(t.shape[i]) if i < len(t.shape) else 0


def stride_at(t: Tensor, i: int) -> int:
    """``t->mem_stride[i]``: as :func:`shape_at`, for the mem_stride (entries past the list are 0)."""
    return int(t.mem_stride[i]) if i < len(t.mem_stride) else 0


def check_tensor_private(shape: list[int], mem_stride: list[int], rank: int, capacity: int,
                         element_size: int) -> None:
    """``check_tensor_private``: rank, strides, shape and capacity of a tensor description.

    Args:
        shape, mem_stride: the struct arrays; rank: the struct's rank;
        capacity: data capacity in bytes; element_size: bytes per element.

    Raises:
        MliError: BAD_TENSOR (rank, shape or strides) or NOT_ENGH_MEM (capacity).
    """
    if rank > MLI_MAX_RANK or capacity > INT32_MAX:
        fail(Status.BAD_TENSOR, f"rank {rank} > {MLI_MAX_RANK} or capacity {capacity} too big")
    sh = [int(shape[i]) if i < len(shape) else 0 for i in range(rank)]
    ms = [int(mem_stride[i]) if i < len(mem_stride) else 0 for i in range(rank)]
    for i in range(rank):
        if ms[i] <= 0 or not (0 < sh[i] <= INT32_MAX):
            fail(Status.BAD_TENSOR, f"bad mem_stride {ms} or shape {sh}")
    # C computes the span in 32-bit ints (wrapping); the same wrap is kept here (wrap_int only for
    # the values outside int32, which it would change).
    size = 1
    prev_shape, prev_stride = 1, 1
    bad = False
    for i in range(rank - 1, -1, -1):
        dense = prev_shape * prev_stride
        if not _I32_MIN <= dense <= INT32_MAX:
            dense = wrap_int(dense, 32)
        bad |= ms[i] < dense
        prev_shape, prev_stride = sh[i], ms[i]
        step = (prev_shape - 1) * prev_stride
        if not _I32_MIN <= step <= INT32_MAX:
            step = wrap_int(step, 32)
        size += step
        if not _I32_MIN <= size <= INT32_MAX:
            size = wrap_int(size, 32)
    if bad:
        fail(Status.BAD_TENSOR, f"mem_stride {ms} smaller than the dense strides of shape {sh}")
    size = wrap_int(size * element_size, 32)
    if capacity < size:
        fail(Status.NOT_ENGH_MEM, f"capacity {capacity} bytes < {size} bytes needed by shape {sh}, mem_stride {ms}")


def check_quant_params(t: Tensor, zp_used_bits: int = 15) -> None:
    """``mli_chk_tensor_quant_params``: SA dim, per-axis array sizes, positive scales, zero points.

    ``zp_used_bits`` limits the zero point to ``[-2**bits, 2**bits - 1]`` (0: zero points must be 0);
    a zero point out of that range gives INCOMPATEBLE_TENSORS.

    Args:
        t: the tensor (non-SA tensors pass); zp_used_bits: allowed zero-point bits.

    Raises:
        MliError: BAD_TENSOR (dim, array sizes, scales) or INCOMPATEBLE_TENSORS (zero points).
    """
    if not t.el_type.is_sa:
        return
    per_axis = t.dim >= 0
    if per_axis and t.dim >= t.rank:
        fail(Status.BAD_TENSOR, f"quantisation dim {t.dim} >= rank {t.rank}")
    n = shape_at(t, t.dim) if per_axis else 1
    if per_axis:
        for name, itemsize in (("scale", 2), ("zero_point", 2), ("scale_frac_bits", 1)):
            arr = getattr(t, name)
            if not isinstance(arr, np.ndarray) or arr.nbytes < n * itemsize:
                fail(Status.BAD_TENSOR, f"per-axis {name} holds fewer than shape[{t.dim}] = {n} values")
        scales = t.quant_vector("scale", n).tolist()
        zps = t.quant_vector("zero_point", n).tolist()
    else:
        scales, zps = [int(t.scale)], [int(t.zero_point)]  # what quant_vector holds for per-tensor values
    zp_min = 0 if zp_used_bits == 0 else -(1 << zp_used_bits)
    zp_max = 0 if zp_used_bits == 0 else (1 << zp_used_bits) - 1
    for s, z in zip(scales, zps):
        if s <= 0:
            fail(Status.BAD_TENSOR, f"non-positive scale {s}")
        if not (zp_min <= z <= zp_max):
            fail(Status.INCOMPATEBLE_TENSORS, f"zero point {z} outside [{zp_min}, {zp_max}]")


def data_is_null(t: Tensor) -> bool:
    """``!check_ptr_not_null(t)``: the data pointer is NULL.

    For a rank-0 tensor the C union holds the value itself, so the "pointer" is NULL exactly when
    the value's bytes are all zero (the rest of the struct zero-initialised).

    Args:
        t: the tensor.

    Returns:
        True for a NULL data pointer.
    """
    if t.data is not None:
        return False
    if t.rank == 0 and t.el_type.supported:
        return not np.asarray(t.value, dtype=t.el_type.dtype).tobytes().strip(b"\0")
    return True


def check_tensor(t: Tensor | None, check_quant: bool = False) -> None:
    """``mli_chk_tensor``: not NULL, data pointer set, valid shape/strides/capacity (+ quant params).

    Args:
        t: the tensor (``None`` is a NULL struct); check_quant: also check the SA parameters.

    Raises:
        MliError: BAD_TENSOR, NOT_ENGH_MEM or INCOMPATEBLE_TENSORS.
    """
    if t is None:
        fail(Status.BAD_TENSOR, "NULL tensor")
    if data_is_null(t):
        fail(Status.BAD_TENSOR, "NULL data pointer")
    check_tensor_private(t.shape, t.mem_stride, t.rank, t.capacity, t.el_type.size)
    if check_quant:
        check_quant_params(t)


def tensor_is_scalar(t: Tensor | None) -> bool:
    """``mli_tensor_is_scalar``: rank 0, or exactly one element.

    Args:
        t: the tensor or None.

    Returns:
        True for a scalar.
    """
    if t is None:
        return False
    return t.rank == 0 or count_elements(t) == 1


def count_elements(t: Tensor, start: int = 0) -> int:
    """Product of ``shape[start:rank]`` as C reads it (entries past the list are 0).

    Args:
        t: the tensor; start: first dimension counted.

    Returns:
        The element count (1 for an empty product).
    """
    n = 1
    for i in range(start, t.rank):
        n *= shape_at(t, i)
    return n


def check_scalar_tensor(t: Tensor | None) -> None:
    """``mli_chk_scalar_tensor``: rank 0 (value in the struct) or a valid tensor of one element.

    Args:
        t: the tensor (``None`` is NULL).

    Raises:
        MliError: BAD_TENSOR, NOT_ENGH_MEM or SHAPE_MISMATCH.
    """
    if t is None:
        fail(Status.BAD_TENSOR, "NULL tensor")
    if t.rank == 0:
        check_quant_params(t)
        return
    check_tensor(t)
    if count_elements(t) != 1:
        fail(Status.SHAPE_MISMATCH, "a scalar tensor must hold exactly one element")


def tensors_not_overlapped(t1: Tensor, t2: Tensor) -> bool:
    """``mli_chk_tensors_not_overlapped``: the two data containers share no byte.

    Args:
        t1, t2: the tensors (their data buffers and capacities).

    Returns:
        True when the byte ranges are disjoint.
    """
    a1, a2 = address(t1.data), address(t2.data)
    return a1 >= a2 + int(t2.capacity) or a2 >= a1 + int(t1.capacity)


def same_data_pointer(t1: Tensor, t2: Tensor) -> bool:
    """``mli_hlp_tensor_data_ptr_cmp``: same element type, rank > 0 and the same data pointer.

    Args:
        t1, t2: the tensors.

    Returns:
        True when both point at the same first element of a supported container.
    """
    if t1.el_type != t2.el_type or t1.rank == 0 or t2.rank == 0:
        return False
    if not t1.el_type.supported:
        return False
    return address(t1.data) == address(t2.data)


def validate_tensor(t: Tensor) -> Tensor:
    """``mli_chk_tensor`` with the quantisation parameters: what :meth:`Tensor.validate` runs.

    Args:
        t: the tensor to check.

    Returns:
        ``t``.

    Raises:
        MliError: BAD_TENSOR, NOT_ENGH_MEM or INCOMPATEBLE_TENSORS as the checked C build.
    """
    check_tensor(t, check_quant=True)
    return t


def check_lut(lut: Lut, buff_size: int) -> None:
    """``mli_chk_lut``: the table's capacity holds ``buff_size`` bytes.

    Args:
        lut: the LUT; buff_size: bytes the table needs.

    Raises:
        MliError: NOT_ENGH_MEM.
    """
    if lut.capacity < buff_size:
        fail(Status.NOT_ENGH_MEM, f"LUT capacity {lut.capacity} < {buff_size} bytes")


def inner_most_dimension_is_one(t: Tensor) -> bool:
    """``check_inner_most_dimension_is_one``: the innermost mem_stride is 1 (true for scalars).

    Args:
        t: the tensor.

    Returns:
        True when the innermost stride is 1 (or the tensor is a scalar).
    """
    if t.rank == 0:
        return True
    if not 0 < t.rank <= MLI_MAX_RANK:
        return False
    return stride_at(t, t.rank - 1) == 1


def layout_is_contiguous(t: Tensor) -> bool:
    """``check_layout_is_contiguous(shape, mem_stride, rank)``: strides equal the dense ones.

    Args:
        t: the tensor.

    Returns:
        True for a dense layout.
    """
    if t.rank == 0:
        return True
    if not 0 < t.rank <= MLI_MAX_RANK:
        return False
    prev_shape, prev_stride = 1, 1
    ok = True
    for i in range(t.rank - 1, -1, -1):
        ok &= stride_at(t, i) == prev_shape * prev_stride
        prev_shape, prev_stride = shape_at(t, i), stride_at(t, i)
    return ok


def mem_stride_matches(t1: Tensor, t2: Tensor) -> bool:
    """``check_mem_stride_matches``: same rank and same strides except the innermost.

    Args:
        t1, t2: the tensors.

    Returns:
        True when the outer strides agree.
    """
    if t1.rank != t2.rank:
        return False
    return all(stride_at(t1, i) == stride_at(t2, i) for i in range(t1.rank - 1))


def same_shape(t1: Tensor, t2: Tensor) -> bool:
    """``check_same_shape``.

    Args:
        t1, t2: the tensors.

    Returns:
        True for equal rank and shapes.
    """
    return t1.rank == t2.rank and all(shape_at(t1, i) == shape_at(t2, i) for i in range(t1.rank))


def calc_shift_idx(inp: Tensor, w: Tensor, out: Tensor, idx: int = 0) -> int:
    """``mli_prv_calc_shift_idx``: in + weights fractional bits minus out's, for channel ``idx``.

    Args:
        inp, w, out: input, weights and output tensors; idx: the channel of per-axis parameters.

    Returns:
        The shift in bits.
    """
    if inp.el_type in (ElType.FX_8, ElType.FX_16):
        return inp.frac_bits + w.frac_bits - out.frac_bits

    def sfb(t: Tensor) -> int:
        return int(t.quant_vector("scale_frac_bits")[idx if t.dim >= 0 else 0])

    return sfb(inp) + sfb(w) - sfb(out)

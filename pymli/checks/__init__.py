"""The MLI argument checks (``private/src/mli_check.cc``), one module per kernel family.

Every public MLI entry point of :mod:`pymli.capi` runs its checks from here before it computes or
writes anything. Each check raises :class:`~pymli.errors.MliError` with the status the checked C
build (``MLI_DEBUG_MODE = DBG_MODE_RET_CODES``) returns.

Modules:
    entry: the argument normaliser every capi function runs first (C field types, NULLs, NumPy views,
        nothing written on failure) and the memory-budget check :func:`check_budget`.
    tensor: generic tensor-struct checks and predicates (``mli_chk_tensor`` & co), :class:`CheckCache`.
    conv: convolutions, and the fx/sa8 parameter checks of every MAC kernel.
    fc, pooling, eltwise, activation, lut, recurrent, diverse, helpers, move, legacy: one kernel
    family each.

The generic checks are re-exported here (``from pymli.checks import check_tensor``).
"""

from __future__ import annotations

from .entry import check_budget
from .tensor import (
    INT32_MAX,
    CheckCache,
    calc_shift_idx,
    check_lut,
    check_quant_params,
    check_scalar_tensor,
    check_tensor,
    check_tensor_private,
    count_elements,
    data_is_null,
    fail,
    inner_most_dimension_is_one,
    layout_is_contiguous,
    mem_stride_matches,
    same_data_pointer,
    same_shape,
    shape_at,
    stride_at,
    struct_key,
    tensor_is_scalar,
    tensors_not_overlapped,
    validate_tensor,
)

__all__ = [
    "check_budget",
    "CheckCache",
    "check_tensor",
    "check_quant_params",
    "check_scalar_tensor",
    "check_tensor_private",
    "check_lut",
    "validate_tensor",
    "tensor_is_scalar",
    "tensors_not_overlapped",
    "same_shape",
    "layout_is_contiguous",
    "inner_most_dimension_is_one",
    "mem_stride_matches",
]

"""Checks of ``mli_krn_eltwise_*`` (``mli_chk_eltwise*``): one operand may be a scalar."""

from __future__ import annotations

import numpy as np

from ..arith.eltwise import EltOp
from ..errors import Status
from ..formats import ElType
from ..tensor import Tensor, address
from .tensor import (check_quant_params, check_scalar_tensor, check_tensor, fail, inner_most_dimension_is_one,
                     same_shape, tensor_is_scalar)

__all__ = ["check_eltwise"]


def _check_operand(t: Tensor | None) -> None:
    if tensor_is_scalar(t):
        check_scalar_tensor(t)
    else:
        check_tensor(t)


def check_eltwise(fn: str, in1: Tensor, in2: Tensor, out: Tensor, op: EltOp, el_type: ElType) -> None:
    """``mli_chk_eltwise`` followed by the type-specific check of ``fn``.

    Args:
        fn: the MLI function name; in1, in2: operands (one may be a scalar); out: output;
        op: the operation; el_type: the element type of the function.

    Raises:
        MliError: BAD_TENSOR, NOT_ENGH_MEM, NOT_SUPPORTED, INCOMPATEBLE_TENSORS, SHAPE_MISMATCH or
            TYPE_MISMATCH.
    """
    _check_operand(in1)
    _check_operand(in2)
    check_tensor(out)
    if in1.rank == 0 and in2.rank == 0:
        fail(Status.NOT_SUPPORTED, f"{fn}: one operand must be a tensor of rank > 0")
    if out.rank == 0 and out.data is None:
        # C stores the result through out's data pointer, which a rank-0 struct holds as its value.
        fail(Status.BAD_TENSOR, f"{fn}: a rank-0 output has no data buffer to store into")
    s1, s2 = tensor_is_scalar(in1), tensor_is_scalar(in2)
    if ((not s1 and not inner_most_dimension_is_one(in1)) or (not s2 and not inner_most_dimension_is_one(in2))
            or not inner_most_dimension_is_one(out)):
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: innermost mem_stride must be 1")
    if out.el_type != in1.el_type:
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: out {out.el_type.name} != in1 {in1.el_type.name}")
    bad = not s1 and not s2 and not same_shape(in1, in2)
    bad |= not same_shape(in1 if not s1 else in2, out)
    if bad:
        fail(Status.SHAPE_MISMATCH, f"{fn}: shapes in1={in1.shape[:in1.rank]} in2={in2.shape[:in2.rank]} "
                                    f"out={out.shape[:out.rank]}")
    if op in (EltOp.MIN, EltOp.MAX) and not _same_data_format(in1, in2):
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: in1 and in2 must share element type and parameters")
    if in1.el_type != el_type or in2.el_type != el_type:
        fail(Status.TYPE_MISMATCH, f"{fn}: inputs {in1.el_type.name}/{in2.el_type.name}, expected {el_type.name}")
    if el_type is ElType.SA_8:
        for t in (in1, in2, out):
            check_quant_params(t, 7)
        if in1.dim >= 0 or in2.dim >= 0 or out.dim >= 0:
            fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: per-tensor quantisation expected")


def _param_word(t: Tensor, name: str, bits: int) -> int:
    """What C reads from the el_params union member: the value, or a per-axis pointer's low bits."""
    v = getattr(t, name)
    if t.dim >= 0:
        return address(np.asarray(v)) & ((1 << bits) - 1)
    return int(v)


def _same_data_format(t1: Tensor, t2: Tensor) -> bool:
    """``check_same_data_format``: same element type and element parameters."""
    if t1.el_type != t2.el_type:
        return False
    if t1.el_type.is_fx:
        return int(t1.frac_bits) == int(t2.frac_bits)
    if t1.el_type.is_sa:
        return t1.dim == t2.dim and all(
            _param_word(t1, n, b) == _param_word(t2, n, b)
            for n, b in (("zero_point", 16), ("scale", 16), ("scale_frac_bits", 8)))
    return True

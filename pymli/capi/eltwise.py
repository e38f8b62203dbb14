"""Element-wise kernels of ``mli_kernels_api.h``: ``mli_krn_eltwise_{add,sub,mul,min,max}_{fx8,fx16,sa8}``.

Checks follow ``mli_chk_eltwise*`` of ``private/src/mli_check.cc``. One operand may be a scalar:
a rank-0 tensor (value in the struct) or any tensor holding exactly one element; the other operand
and the output then share a shape. Both operands scalar gives a one-element result.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..arith.eltwise import EltOp
from ..checks.eltwise import check_eltwise
from ..checks.tensor import fail, tensor_is_scalar
from ..errors import Status
from ..formats import ElType
from ..kernels.eltwise import eltwise_fx, eltwise_sa8
from ..tensor import Tensor
from ._registry import mli_function

__all__ = [
    "ELTWISE",
    "mli_krn_eltwise_add_fx8",
    "mli_krn_eltwise_add_fx16",
    "mli_krn_eltwise_add_sa8",
    "mli_krn_eltwise_sub_fx8",
    "mli_krn_eltwise_sub_fx16",
    "mli_krn_eltwise_sub_sa8",
    "mli_krn_eltwise_mul_fx8",
    "mli_krn_eltwise_mul_fx16",
    "mli_krn_eltwise_mul_sa8",
    "mli_krn_eltwise_max_fx8",
    "mli_krn_eltwise_max_fx16",
    "mli_krn_eltwise_max_sa8",
    "mli_krn_eltwise_min_fx8",
    "mli_krn_eltwise_min_fx16",
    "mli_krn_eltwise_min_sa8",
]


def scalar_operand(t: Tensor) -> np.ndarray:
    """The operand as MLI reads it: a 0-d array for a scalar (one element), else the strided view."""
    if tensor_is_scalar(t):
        if t.rank != 0 and t.data.shape[0] < 1:
            # capacity claims a buffer the array does not hold: C would read outside it
            fail(Status.NOT_ENGH_MEM, "the scalar operand's data array is empty")
        return np.asarray(t.value if t.rank == 0 else t.data[0], dtype=t.el_type.dtype)
    return t.view()


def _run(fn: str, op: EltOp, el_type: ElType, in1: Tensor, in2: Tensor, out: Tensor) -> Status:
    check_eltwise(fn, in1, in2, out, op, el_type)
    a, b = scalar_operand(in1), scalar_operand(in2)
    if el_type is ElType.SA_8:
        def q(t: Tensor) -> tuple[int, int, int]:
            return int(t.scale), int(t.scale_frac_bits), int(t.zero_point)
        res = eltwise_sa8(op, a, b, q1=q(in1), q2=q(in2), qo=q(out))
    else:
        res = eltwise_fx(op, a, b, frac_bits=(int(in1.frac_bits), int(in2.frac_bits), int(out.frac_bits)),
                         bits=el_type.bits)
    if res.ndim == 0:
        # Both operands scalar: MLI stores the single result at the output's data pointer.
        if out.rank == 0:
            out.data[0] = res
        else:
            out.view()[(0,) * out.rank] = res
    else:
        out.view()[...] = res
    return Status.OK


def _bind(name: str, op: EltOp, el_type: ElType):  # noqa: ANN202
    def fn(in1: Tensor, in2: Tensor, out: Tensor) -> Status:
        return _run(name, op, el_type, in1, in2, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``{name}(in1, in2, out)``: element-wise {op.value} of {el_type.name} tensors "
                  "(one operand may be a scalar).\n\nReturns Status.OK or raises MliError with the status "
                  "of the checked C build.")
    return fn


mli_krn_eltwise_add_fx8 = mli_function("mli_krn_eltwise_add_fx8")(_bind("mli_krn_eltwise_add_fx8", EltOp.ADD, ElType.FX_8))
mli_krn_eltwise_add_fx16 = mli_function("mli_krn_eltwise_add_fx16")(_bind("mli_krn_eltwise_add_fx16", EltOp.ADD, ElType.FX_16))
mli_krn_eltwise_add_sa8 = mli_function("mli_krn_eltwise_add_sa8")(_bind("mli_krn_eltwise_add_sa8", EltOp.ADD, ElType.SA_8))
mli_krn_eltwise_sub_fx8 = mli_function("mli_krn_eltwise_sub_fx8")(_bind("mli_krn_eltwise_sub_fx8", EltOp.SUB, ElType.FX_8))
mli_krn_eltwise_sub_fx16 = mli_function("mli_krn_eltwise_sub_fx16")(_bind("mli_krn_eltwise_sub_fx16", EltOp.SUB, ElType.FX_16))
mli_krn_eltwise_sub_sa8 = mli_function("mli_krn_eltwise_sub_sa8")(_bind("mli_krn_eltwise_sub_sa8", EltOp.SUB, ElType.SA_8))
mli_krn_eltwise_mul_fx8 = mli_function("mli_krn_eltwise_mul_fx8")(_bind("mli_krn_eltwise_mul_fx8", EltOp.MUL, ElType.FX_8))
mli_krn_eltwise_mul_fx16 = mli_function("mli_krn_eltwise_mul_fx16")(_bind("mli_krn_eltwise_mul_fx16", EltOp.MUL, ElType.FX_16))
mli_krn_eltwise_mul_sa8 = mli_function("mli_krn_eltwise_mul_sa8")(_bind("mli_krn_eltwise_mul_sa8", EltOp.MUL, ElType.SA_8))
mli_krn_eltwise_max_fx8 = mli_function("mli_krn_eltwise_max_fx8")(_bind("mli_krn_eltwise_max_fx8", EltOp.MAX, ElType.FX_8))
mli_krn_eltwise_max_fx16 = mli_function("mli_krn_eltwise_max_fx16")(_bind("mli_krn_eltwise_max_fx16", EltOp.MAX, ElType.FX_16))
mli_krn_eltwise_max_sa8 = mli_function("mli_krn_eltwise_max_sa8")(_bind("mli_krn_eltwise_max_sa8", EltOp.MAX, ElType.SA_8))
mli_krn_eltwise_min_fx8 = mli_function("mli_krn_eltwise_min_fx8")(_bind("mli_krn_eltwise_min_fx8", EltOp.MIN, ElType.FX_8))
mli_krn_eltwise_min_fx16 = mli_function("mli_krn_eltwise_min_fx16")(_bind("mli_krn_eltwise_min_fx16", EltOp.MIN, ElType.FX_16))
mli_krn_eltwise_min_sa8 = mli_function("mli_krn_eltwise_min_sa8")(_bind("mli_krn_eltwise_min_sa8", EltOp.MIN, ElType.SA_8))

ELTWISE: dict[tuple[EltOp, ElType], Callable[..., Status]] = {
    (EltOp.ADD, ElType.FX_8): mli_krn_eltwise_add_fx8,
    (EltOp.ADD, ElType.FX_16): mli_krn_eltwise_add_fx16,
    (EltOp.ADD, ElType.SA_8): mli_krn_eltwise_add_sa8,
    (EltOp.SUB, ElType.FX_8): mli_krn_eltwise_sub_fx8,
    (EltOp.SUB, ElType.FX_16): mli_krn_eltwise_sub_fx16,
    (EltOp.SUB, ElType.SA_8): mli_krn_eltwise_sub_sa8,
    (EltOp.MUL, ElType.FX_8): mli_krn_eltwise_mul_fx8,
    (EltOp.MUL, ElType.FX_16): mli_krn_eltwise_mul_fx16,
    (EltOp.MUL, ElType.SA_8): mli_krn_eltwise_mul_sa8,
    (EltOp.MAX, ElType.FX_8): mli_krn_eltwise_max_fx8,
    (EltOp.MAX, ElType.FX_16): mli_krn_eltwise_max_fx16,
    (EltOp.MAX, ElType.SA_8): mli_krn_eltwise_max_sa8,
    (EltOp.MIN, ElType.FX_8): mli_krn_eltwise_min_fx8,
    (EltOp.MIN, ElType.FX_16): mli_krn_eltwise_min_fx16,
    (EltOp.MIN, ElType.SA_8): mli_krn_eltwise_min_sa8,
}
"""The element-wise functions by (operation, element type)."""

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
from ..kernels.eltwise import eltwise_plan
from ..tensor import Tensor
from ._plan import ViewSpec, view, view_spec
from ._registry import c_variant

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


def _check_scalar_data(t: Tensor) -> None:
    if t.rank != 0 and t.data.shape[0] < 1:
        # capacity claims a buffer the array does not hold: C would read outside it
        fail(Status.NOT_ENGH_MEM, "the scalar operand's data array is empty")


def _scalar(t: Tensor) -> np.ndarray:
    return np.asarray(t.value if t.rank == 0 else t.data[0], dtype=t.el_type.dtype)


def _operand(t: Tensor) -> ViewSpec | None:
    """What the runner needs to read an operand: None for a scalar, else its checked view."""
    if tensor_is_scalar(t):
        _check_scalar_data(t)
        return None
    return view_spec(t)


def _run(fn: str, op: EltOp, el_type: ElType, in1: Tensor, in2: Tensor, out: Tensor) -> Callable[..., Status]:
    check_eltwise(fn, in1, in2, out, op, el_type)
    v1, v2 = _operand(in1), _operand(in2)
    if el_type is ElType.SA_8:
        def q(t: Tensor) -> tuple[int, int, int]:
            return int(t.scale), int(t.scale_frac_bits), int(t.zero_point)
        kernel = eltwise_plan(op, bits=8, q=(q(in1), q(in2), q(out)))
    else:
        kernel = eltwise_plan(op, bits=el_type.bits, frac_bits=(int(in1.frac_bits), int(in2.frac_bits),
                                                                 int(out.frac_bits)))
    both_scalar = v1 is None and v2 is None
    vo = None if both_scalar or out.rank == 0 else view_spec(out)
    # The data arrays' dtypes are part of the memo's snapshot: decided once.
    into = vo is not None and out.data.dtype == el_type.dtype

    def run(in1: Tensor, in2: Tensor, out: Tensor) -> Status:
        a = _scalar(in1) if v1 is None else view(in1, v1)
        b = _scalar(in2) if v2 is None else view(in2, v2)
        if into:
            kernel(a, b, view(out, vo))
            return Status.OK
        res = kernel(a, b)
        if res.ndim == 0:
            # Both operands scalar: MLI stores the single result at the output's data pointer.
            if out.rank == 0:
                out.data[0] = res
            else:
                out.view()[(0,) * out.rank] = res
        else:
            view(out, vo)[...] = res
        return Status.OK

    return run


ELTWISE: dict[tuple[EltOp, ElType], Callable[..., Status]] = {}
"""The element-wise functions by (operation, element type)."""


def _make(op: EltOp, el_type: ElType, name: str) -> Callable[..., Status]:
    """Register ``name`` (``op`` on ``el_type`` tensors) and enter it in :data:`ELTWISE`."""
    doc = (f"``{name}(in1, in2, out)``: element-wise {op.value} of {el_type.name} tensors "
           "(one operand may be a scalar).\n\nReturns Status.OK or raises MliError with the status "
           "of the checked C build.")
    ELTWISE[(op, el_type)] = fn = c_variant(name, _run, "in1 in2 out", doc, head=(op, el_type), planned=True)
    return fn


mli_krn_eltwise_add_fx8 = _make(EltOp.ADD, ElType.FX_8, "mli_krn_eltwise_add_fx8")
mli_krn_eltwise_add_fx16 = _make(EltOp.ADD, ElType.FX_16, "mli_krn_eltwise_add_fx16")
mli_krn_eltwise_add_sa8 = _make(EltOp.ADD, ElType.SA_8, "mli_krn_eltwise_add_sa8")
mli_krn_eltwise_sub_fx8 = _make(EltOp.SUB, ElType.FX_8, "mli_krn_eltwise_sub_fx8")
mli_krn_eltwise_sub_fx16 = _make(EltOp.SUB, ElType.FX_16, "mli_krn_eltwise_sub_fx16")
mli_krn_eltwise_sub_sa8 = _make(EltOp.SUB, ElType.SA_8, "mli_krn_eltwise_sub_sa8")
mli_krn_eltwise_mul_fx8 = _make(EltOp.MUL, ElType.FX_8, "mli_krn_eltwise_mul_fx8")
mli_krn_eltwise_mul_fx16 = _make(EltOp.MUL, ElType.FX_16, "mli_krn_eltwise_mul_fx16")
mli_krn_eltwise_mul_sa8 = _make(EltOp.MUL, ElType.SA_8, "mli_krn_eltwise_mul_sa8")
mli_krn_eltwise_max_fx8 = _make(EltOp.MAX, ElType.FX_8, "mli_krn_eltwise_max_fx8")
mli_krn_eltwise_max_fx16 = _make(EltOp.MAX, ElType.FX_16, "mli_krn_eltwise_max_fx16")
mli_krn_eltwise_max_sa8 = _make(EltOp.MAX, ElType.SA_8, "mli_krn_eltwise_max_sa8")
mli_krn_eltwise_min_fx8 = _make(EltOp.MIN, ElType.FX_8, "mli_krn_eltwise_min_fx8")
mli_krn_eltwise_min_fx16 = _make(EltOp.MIN, ElType.FX_16, "mli_krn_eltwise_min_fx16")
mli_krn_eltwise_min_sa8 = _make(EltOp.MIN, ElType.SA_8, "mli_krn_eltwise_min_sa8")

"""Element-wise add, sub, mul, min and max of MLI 2.0 (``kernels/eltwise``).

Operands broadcast as in MLI: both have the output's shape, or one is a scalar (a 0-d array here).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..arith.eltwise import EltOp, fx_eltwise, fx_params, sa8_eltwise, sa8_params

__all__ = ["EltOp", "eltwise_fx", "eltwise_sa8"]


def eltwise_fx(op: EltOp | str, a: npt.ArrayLike, b: npt.ArrayLike, *, frac_bits: tuple[int, int, int],
               bits: int) -> np.ndarray:
    """fx8 / fx16 element-wise operation.

    Args:
        op: operation (:class:`EltOp` or its value, e.g. ``"add"``).
        a, b: int8 / int16 operands of one shape, or one of them a scalar.
        frac_bits: fractional bits of a, b and the output.
        bits: 8 or 16.

    Returns:
        Array of the container type (int8 / int16), saturated.
    """
    op = EltOp(op)
    p = fx_params(op, *frac_bits, bits)
    return fx_eltwise(op, a, b, p, bits).astype(np.int8 if bits == 8 else np.int16)


def eltwise_sa8(op: EltOp | str, a: npt.ArrayLike, b: npt.ArrayLike, *, q1: tuple[int, int, int],
                q2: tuple[int, int, int], qo: tuple[int, int, int]) -> np.ndarray:
    """sa8 element-wise operation with requantisation to the output's parameters.

    Args:
        op: operation.
        a, b: int8 operands (one may be a scalar).
        q1, q2, qo: (scale, scale_frac_bits, zero_point) of a, b and the output.

    Returns:
        int8 array.
    """
    op = EltOp(op)
    p = sa8_params(op, q1, q2, qo)
    return sa8_eltwise(op, a, b, p).astype(np.int8)

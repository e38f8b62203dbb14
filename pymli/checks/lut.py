"""Checks of the LUT-based activations (sigm, tanh, softmax, l2_normalize) and of LUT creation.

Mirrors ``mli_chk_basic_activation_*``, ``mli_chk_softmax_*``, ``mli_chk_l2_normalize_*`` and
``mli_chk_lut``.
"""

from __future__ import annotations

from typing import Any

from ..errors import Status
from ..formats import ElType
from ..tensor import Lut, Tensor
from .tensor import check_lut, check_quant_params, check_tensor, fail, inner_most_dimension_is_one, same_shape

__all__ = ["check_basic_activation", "check_sa8_input", "check_axis_cfg", "check_create_lut"]

_ZP_BYTE_RANGE_BITS = 7  # kZeroPointBitsByteRange: sa8 zero points within [-128, 127]


def check_basic_activation(inp: Tensor, out: Tensor, el_type: ElType, fn: str) -> None:
    """``mli_chk_basic_activation_<type>``: valid tensors of one type and shape, innermost stride 1.

    For SA_8 also the input's quantisation (zero point in int8 range, per-tensor).

    Args:
        inp, out: input and output tensors; el_type: the element type of the function;
        fn: the MLI function name.

    Raises:
        MliError: BAD_TENSOR, NOT_ENGH_MEM, TYPE_MISMATCH, SHAPE_MISMATCH or INCOMPATEBLE_TENSORS.
    """
    check_tensor(inp)
    check_tensor(out)
    if out.el_type != inp.el_type:
        fail(Status.TYPE_MISMATCH, f"{fn}: output type {out.el_type.c_name} != input {inp.el_type.c_name}")
    if not same_shape(inp, out):
        fail(Status.SHAPE_MISMATCH, f"{fn}: output shape {out.shape[:out.rank]} != input {inp.shape[:inp.rank]}")
    if not (inner_most_dimension_is_one(inp) and inner_most_dimension_is_one(out)):
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: innermost mem_stride must be 1")
    if inp.el_type != el_type:
        fail(Status.TYPE_MISMATCH, f"{fn}: input type {inp.el_type.c_name}, expected {el_type.c_name}")


def check_sa8_input(inp: Tensor, fn: str) -> None:
    """sa8 input quantisation of the LUT activations: int8 zero point, per tensor.

    Args:
        inp: the input; fn: the MLI function name.

    Raises:
        MliError: BAD_TENSOR or INCOMPATEBLE_TENSORS.
    """
    check_quant_params(inp, _ZP_BYTE_RANGE_BITS)
    if inp.dim >= 0:
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: per-tensor quantisation expected, got dim {inp.dim}")


def check_axis_cfg(inp: Tensor, cfg: Any, fn: str) -> None:
    """The cfg of softmax / l2_normalize: not NULL, ``axis < rank``.

    Args:
        inp: the input; cfg: the cfg (``None`` is NULL); fn: the MLI function name.

    Raises:
        MliError: BAD_FUNC_CFG.
    """
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, f"{fn}: NULL cfg")
    if not int(cfg.axis) < int(inp.rank):
        fail(Status.BAD_FUNC_CFG, f"{fn}: axis {cfg.axis} >= rank {inp.rank}")


def check_create_lut(lut: Lut, size_bytes: int) -> None:
    """``mli_chk_lut`` of ``mli_krn_*_create_lut``: the table's buffer holds ``size_bytes`` bytes.

    Args:
        lut: the LUT struct to fill; size_bytes: bytes the table needs.

    Raises:
        MliError: NOT_ENGH_MEM when ``lut.capacity`` (or its data buffer) is too small; BAD_TENSOR
            for a NULL data pointer.
    """
    check_lut(lut, size_bytes)
    if lut.data is None:
        fail(Status.BAD_TENSOR, "LUT: NULL data pointer")
    if lut.data.nbytes < size_bytes:
        fail(Status.NOT_ENGH_MEM, f"LUT data buffer holds {lut.data.nbytes} bytes < {size_bytes}")

"""Checks of ``mli_krn_avepool_hwc_*`` / ``mli_krn_maxpool_hwc_*`` (``mli_chk_{ave,max}pool_hwc*``)."""

from __future__ import annotations

from typing import Any

from ..errors import Status
from ..formats import ElType
from ..tensor import Tensor
from .tensor import (check_quant_params, check_tensor, fail, inner_most_dimension_is_one, shape_at,
                     tensors_not_overlapped)

__all__ = ["check_pool_hwc"]

_U8 = 0xFF  # mli_pool_cfg fields are uint8_t


def _cfg(cfg: Any) -> dict[str, int]:
    return {k: int(getattr(cfg, k)) & _U8 for k in (
        "kernel_width", "kernel_height", "stride_width", "stride_height",
        "padding_left", "padding_right", "padding_top", "padding_bottom")}


def check_pool_hwc(fn: str, inp: Tensor, cfg: Any, out: Tensor, el_type: ElType,
                   kernel_size: int = 0, ave: bool = False) -> dict[str, int]:
    """``mli_chk_{ave,max}pool_hwc_<type>``; returns the cfg fields as the C struct holds them.

    Args:
        fn: the MLI function name; inp: HWC input; cfg: ``mli_pool_cfg`` (``None`` is NULL);
        out: HWC output; el_type: the element type of the function;
        kernel_size: kernel size of a specialisation (0: generic); ave: average pooling (sa8 checks
        the zero points).

    Returns:
        The cfg fields as ``uint8_t`` values.

    Raises:
        MliError: BAD_FUNC_CFG, SHAPE_MISMATCH, BAD_TENSOR, NOT_ENGH_MEM, TYPE_MISMATCH or
            INCOMPATEBLE_TENSORS.
    """
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, f"{fn}: NULL cfg")
    c = _cfg(cfg)
    if kernel_size and (c["kernel_height"] != kernel_size or c["kernel_width"] != kernel_size):
        fail(Status.SHAPE_MISMATCH, f"{fn}: kernel {c['kernel_height']}x{c['kernel_width']} "
                                    f"for a {kernel_size}x{kernel_size} specialisation")
    check_tensor(inp)
    check_tensor(out)
    if out.el_type != inp.el_type:
        fail(Status.TYPE_MISMATCH, f"{fn}: out {out.el_type.name} != in {inp.el_type.name}")
    if inp.rank != 3 or out.rank != 3:
        fail(Status.SHAPE_MISMATCH, f"{fn}: ranks in={inp.rank}, out={out.rank}; HWC needs 3")
    if not inner_most_dimension_is_one(inp) or not inner_most_dimension_is_one(out):
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: innermost mem_stride must be 1")
    if (c["padding_left"] >= c["kernel_width"] or c["padding_right"] >= c["kernel_width"]
            or c["padding_top"] >= c["kernel_height"] or c["padding_bottom"] >= c["kernel_height"]
            or c["stride_height"] <= 0 or c["stride_width"] <= 0):
        fail(Status.BAD_FUNC_CFG, f"{fn}: padding must be smaller than the kernel and strides > 0: {c}")
    eff_w = shape_at(inp, 1) + c["padding_left"] + c["padding_right"]
    eff_h = shape_at(inp, 0) + c["padding_top"] + c["padding_bottom"]
    req_w = shape_at(out, 1) * c["stride_width"] + c["kernel_width"] - c["stride_width"]
    req_h = shape_at(out, 0) * c["stride_height"] + c["kernel_height"] - c["stride_height"]
    if req_h > eff_h or req_w > eff_w or shape_at(out, 2) != shape_at(inp, 2):
        fail(Status.BAD_FUNC_CFG, f"{fn}: output {out.shape[:3]} does not fit input {inp.shape[:3]} with {c}")
    if not tensors_not_overlapped(inp, out):
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: in and out buffers overlap")
    if inp.el_type != el_type:
        fail(Status.TYPE_MISMATCH, f"{fn}: input is {inp.el_type.name}, expected {el_type.name}")
    if el_type is ElType.SA_8:
        if inp.dim >= 0 or out.dim >= 0:
            fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: per-tensor quantisation expected")
        if ave:
            check_quant_params(inp, 7)
            check_quant_params(out, 7)
    return c

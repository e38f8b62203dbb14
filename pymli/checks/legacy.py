"""MLI 1.1 checks of the 1.x kernels pymli keeps (``mli_krn_concat_*``, ``mli_krn_padding2d_*``).

In MLI 1.x a tensor whose ``mem_stride`` is all zeros is dense.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import Status
from ..formats import ElType
from ..tensor import MLI_MAX_RANK, Tensor, dense_strides
from .tensor import INT32_MAX, fail

__all__ = [
    "check_concat", "check_padding2d", "MLI_CONCAT_MAX_TENSORS", "check_tensor_v1", "contiguous_v1",
    "out_layout_ok", "check_out_v1", "same_params", "check_type",
]

MLI_CONCAT_MAX_TENSORS = 8
"""Most inputs one concatenation takes (``mli_config.h`` of MLI 1.x)."""

_FMAP = {"chw": (0, 1, 2), "hwc": (2, 0, 1)}  # (C, H, W) dimension indices per layout


def check_tensor_v1(t: Tensor | None, what: str) -> None:
    """MLI 1.1 ``mli_chk_tensor``: zero strides mean dense; capacity covers the data.

    Args:
        t: the tensor; what: its role, for messages.

    Raises:
        MliError: BAD_TENSOR or NOT_ENGH_MEM.
    """
    if t is None:
        fail(Status.BAD_TENSOR, f"{what}: NULL tensor")
    if t.data is None:
        fail(Status.BAD_TENSOR, f"{what}: NULL data pointer")
    rank = int(t.rank)
    if rank > MLI_MAX_RANK or rank < 1:
        fail(Status.BAD_TENSOR, f"{what}: rank {rank} not in 1..{MLI_MAX_RANK}")
    shape = [int(t.shape[i]) if i < len(t.shape) else 0 for i in range(rank)]
    ms = [int(t.mem_stride[i]) if i < len(t.mem_stride) else 0 for i in range(rank)]
    if any(m < 0 for m in ms) or any(not 0 < s <= INT32_MAX for s in shape):
        fail(Status.BAD_TENSOR, f"{what}: bad shape {shape} or mem_stride {ms}")
    if all(m != 0 for m in ms):
        size = 1
        prev = 1
        for i in range(rank - 1, -1, -1):
            if ms[i] < prev:
                fail(Status.BAD_TENSOR, f"{what}: mem_stride {ms} too small for shape {shape}")
            prev = shape[i] * ms[i]
            size += (shape[i] - 1) * ms[i]
    else:
        size = int(np.prod(shape))
    need = size * t.el_type.size
    if int(t.capacity) < need or t.data.nbytes < need:
        fail(Status.NOT_ENGH_MEM, f"{what}: capacity {t.capacity} bytes < {need} needed")


def contiguous_v1(t: Tensor) -> bool:
    """MLI 1.1 ``check_layout_is_contiguous(tensor)``: strides all zero, or exactly dense.

    Args:
        t: the tensor.

    Returns:
        True for a dense (or 1.x unset) layout.
    """
    ms = [int(t.mem_stride[i]) if i < len(t.mem_stride) else 0 for i in range(t.rank)]
    return not all(m != 0 for m in ms) or ms == dense_strides(t.shape[: t.rank])


def out_layout_ok(out: Tensor, out_shape: list[int]) -> bool:
    """The output's strides are unset (1.x), dense for the result, or 1.x's rank-1 stride 1.

    Args:
        out: the output tensor; out_shape: the result's shape.

    Returns:
        True when the result can be written densely.
    """
    rank = len(out_shape)
    ms = [int(out.mem_stride[i]) if i < len(out.mem_stride) else 0 for i in range(rank)]
    return not all(m != 0 for m in ms) or ms == dense_strides(out_shape) or (rank == 1 and ms[0] == 1)


def check_out_v1(out: Tensor | None) -> None:
    """MLI 1.1 output check: a struct with a data pointer.

    Args:
        out: the output tensor.

    Raises:
        MliError: BAD_TENSOR.
    """
    if out is None:
        fail(Status.BAD_TENSOR, "NULL output tensor")
    if out.data is None:
        fail(Status.BAD_TENSOR, "NULL data pointer of the output")


def same_params(a: Tensor, b: Tensor) -> bool:
    """Element parameters equal (FX: frac bits; SA: dim and every quantisation value).

    Args:
        a, b: the tensors.

    Returns:
        True for equal element parameters.
    """
    if a.el_type.is_fx:
        return int(a.frac_bits) == int(b.frac_bits)
    if a.el_type.is_sa:
        if int(a.dim) != int(b.dim):
            return False
        return all(np.array_equal(a.quant_vector(k), b.quant_vector(k))
                   for k in ("zero_point", "scale", "scale_frac_bits"))
    return True


def check_type(t: Tensor, el: ElType) -> None:
    """The element type of the function.

    Args:
        t: the tensor; el: the expected type.

    Raises:
        MliError: TYPE_MISMATCH.
    """
    if t.el_type != el:
        fail(Status.TYPE_MISMATCH, f"input type {t.el_type.c_name}, expected {el.c_name}")


def check_concat(inputs: Any, cfg: Any, out: Tensor, el: ElType) -> tuple[int, int, list[int]]:
    """MLI 1.1 ``mli_chk_concat`` (+ pymli's sa8 and contiguity rules).

    Args:
        inputs: sequence of tensors; cfg: ``mli_concat_cfg`` (``axis``, ``tensors_num``);
        out: output buffer; el: the element type of the function.

    Returns:
        (number of inputs, axis, output shape).

    Raises:
        MliError: BAD_TENSOR, BAD_FUNC_CFG, INCOMPATEBLE_TENSORS, SHAPE_MISMATCH, NOT_ENGH_MEM or
            TYPE_MISMATCH.
    """
    if inputs is None or len(inputs) == 0:
        fail(Status.BAD_TENSOR, "no input tensors")
    first = inputs[0]
    check_tensor_v1(first, "inputs[0]")
    check_out_v1(out)
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "NULL cfg")
    axis, num = int(cfg.axis) & 0xFF, int(cfg.tensors_num) & 0xFF  # uint8_t fields
    if not (axis < first.rank and 0 < num <= MLI_CONCAT_MAX_TENSORS):
        fail(Status.BAD_FUNC_CFG, f"axis {axis} (rank {first.rank}) or tensors_num {num} "
                                  f"(1..{MLI_CONCAT_MAX_TENSORS}) out of range")
    if len(inputs) < num:
        fail(Status.BAD_TENSOR, f"tensors_num {num} but {len(inputs)} inputs given")
    if not contiguous_v1(first):
        fail(Status.INCOMPATEBLE_TENSORS, "inputs[0] is not contiguous")
    rank = int(first.rank)
    total = first.num_elements
    for idx in range(1, num):
        t = inputs[idx]
        check_tensor_v1(t, f"inputs[{idx}]")
        if t.el_type != first.el_type or not same_params(t, first) or t.rank != first.rank or not contiguous_v1(t):
            fail(Status.INCOMPATEBLE_TENSORS, f"inputs[{idx}] differs from inputs[0] in element type, "
                                              f"parameters, rank or layout")
        for d in range(rank):
            if d != axis and int(t.shape[d]) != int(first.shape[d]):
                fail(Status.SHAPE_MISMATCH, f"inputs[{idx}] shape {list(t.shape[:rank])} vs "
                                            f"{list(first.shape[:rank])} outside axis {axis}")
        total += t.num_elements
    if first.el_type.is_sa and first.dim == axis:
        fail(Status.INCOMPATEBLE_TENSORS, "per-axis quantisation along the concatenation axis")
    out_shape = [int(s) for s in first.shape[:rank]]
    out_shape[axis] = sum(int(inputs[i].shape[axis]) for i in range(num))
    if not out_layout_ok(out, out_shape):
        fail(Status.INCOMPATEBLE_TENSORS, f"output mem_stride {list(out.mem_stride)} is not dense")
    need = total * first.el_type.size
    if need > int(out.capacity) or need > out.data.nbytes:
        fail(Status.NOT_ENGH_MEM, f"output capacity {out.capacity} bytes < {need} needed")
    check_type(first, el)
    return num, axis, out_shape


def check_padding2d(inp: Tensor, cfg: Any, out: Tensor, el: ElType,
                    layout: str) -> tuple[tuple[int, int, int, int], list[int], np.ndarray | int]:
    """MLI 1.1 ``mli_chk_padding2d`` (+ pymli's sa8 rules).

    Args:
        inp: rank-3 feature map (CHW or HWC); cfg: ``mli_padding2d_cfg``; out: output buffer;
        el: the element type of the function; layout: ``"chw"`` or ``"hwc"``.

    Returns:
        ((top, bottom, left, right), output shape, padding value: the zero point(s) for sa8, else 0).

    Raises:
        MliError: BAD_TENSOR, SHAPE_MISMATCH, INCOMPATEBLE_TENSORS, BAD_FUNC_CFG, NOT_ENGH_MEM or
            TYPE_MISMATCH.
    """
    check_tensor_v1(inp, "in")
    check_out_v1(out)
    if inp.rank != 3:
        fail(Status.SHAPE_MISMATCH, f"input rank {inp.rank}, a feature map has rank 3")
    if not contiguous_v1(inp):
        fail(Status.INCOMPATEBLE_TENSORS, "input is not contiguous")
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "NULL cfg")
    top, bot = int(cfg.padding_top) & 0xFF, int(cfg.padding_bottom) & 0xFF  # uint8_t fields
    left, right = int(cfg.padding_left) & 0xFF, int(cfg.padding_right) & 0xFF
    c_dim, h_dim, w_dim = _FMAP[layout]
    out_shape = [int(s) for s in inp.shape[:3]]
    out_shape[h_dim] += top + bot
    out_shape[w_dim] += left + right
    if not out_layout_ok(out, out_shape):
        fail(Status.INCOMPATEBLE_TENSORS, f"output mem_stride {list(out.mem_stride)} is not dense")
    need = int(np.prod(out_shape)) * inp.el_type.size
    if need > int(out.capacity) or need > out.data.nbytes:
        fail(Status.NOT_ENGH_MEM, f"output capacity {out.capacity} bytes < {need} needed")
    check_type(inp, el)
    pad_value: np.ndarray | int = 0
    if inp.el_type.is_sa:
        if inp.dim >= 0 and inp.dim != c_dim:
            fail(Status.INCOMPATEBLE_TENSORS, "per-axis quantisation along H or W cannot be padded")
        zp = inp.quant_vector("zero_point")
        info = np.iinfo(inp.el_type.dtype)
        if zp.min() < info.min or zp.max() > info.max:
            fail(Status.INCOMPATEBLE_TENSORS, f"zero point {zp.tolist()} outside the {inp.el_type.dtype} container")
        pad_value = zp if inp.dim >= 0 else int(zp[0])
    return (top, bot, left, right), out_shape, pad_value

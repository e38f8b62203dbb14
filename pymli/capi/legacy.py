"""MLI 1.x data manipulation that MLI 2.0 dropped: ``mli_krn_concat_*`` and ``mli_krn_padding2d_*``.

These follow the MLI 1.1 API (``mli_concat_cfg``, ``mli_padding2d_cfg``) and its argument checks,
on MLI 2.0 :class:`~pymli.Tensor` structs. As in 1.x, a tensor whose ``mem_stride`` is all zeros is
dense, inputs must be contiguous, and the kernel fills the output's rank, shape, element type and
parameters; the output data is written densely from its first element. pymli extensions, beyond
MLI 1.1:

* ``_sa8`` variants. Inputs must share the same quantisation (per tensor, or per axis on another
  axis than the concatenation axis / the H and W axes); padded samples hold the zero point, i.e. the
  real value 0, as the zero padding of the fx variants does.
* The output's ``mem_stride`` may be all zeros (1.x style) or the dense strides of the result, and
  the kernel sets it to the dense strides so that the output is valid for MLI 2.0 kernels.
* Contiguity is checked for every input (MLI 1.1 forgot ``inputs[0]``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..checks import INT32_MAX, fail
from ..errors import Status
from ..formats import ElType
from ..kernels import move as kmove
from ..tensor import MLI_MAX_RANK, Tensor, dense_strides
from ._registry import mli_function
from .types import ConcatCfg, Padding2dCfg

__all__ = [
    "MLI_CONCAT_MAX_TENSORS",
    "mli_krn_concat_fx8", "mli_krn_concat_fx16", "mli_krn_concat_sa8",
    "mli_krn_padding2d_chw_fx8", "mli_krn_padding2d_chw_fx16", "mli_krn_padding2d_chw_sa8",
    "mli_krn_padding2d_hwc_fx8", "mli_krn_padding2d_hwc_fx16", "mli_krn_padding2d_hwc_sa8",
]

MLI_CONCAT_MAX_TENSORS = 8
"""Most inputs one concatenation takes (``mli_config.h`` of MLI 1.x)."""

_FMAP = {"chw": (0, 1, 2), "hwc": (2, 0, 1)}  # (C, H, W) dimension indices per layout


# ---------------------------------------------------------------------------- 1.x checks
def _check_tensor_v1(t: Tensor | None, what: str) -> None:
    """MLI 1.1 ``mli_chk_tensor``: zero strides mean dense; capacity covers the data."""
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


def _contiguous_v1(t: Tensor) -> bool:
    """MLI 1.1 ``check_layout_is_contiguous(tensor)``: strides all zero, or exactly dense."""
    ms = [int(t.mem_stride[i]) if i < len(t.mem_stride) else 0 for i in range(t.rank)]
    return not all(m != 0 for m in ms) or ms == dense_strides(t.shape[: t.rank])


def _out_layout_ok(out: Tensor, out_shape: list[int]) -> bool:
    """The output's strides are unset (1.x), dense for the result, or 1.x's rank-1 stride 1."""
    rank = len(out_shape)
    ms = [int(out.mem_stride[i]) if i < len(out.mem_stride) else 0 for i in range(rank)]
    return not all(m != 0 for m in ms) or ms == dense_strides(out_shape) or (rank == 1 and ms[0] == 1)


def _check_out_v1(out: Tensor | None) -> None:
    if out is None:
        fail(Status.BAD_TENSOR, "NULL output tensor")
    if out.data is None:
        fail(Status.BAD_TENSOR, "NULL data pointer of the output")


def _same_params(a: Tensor, b: Tensor) -> bool:
    """Element parameters equal (FX: frac bits; SA: dim and every quantisation value)."""
    if a.el_type.is_fx:
        return int(a.frac_bits) == int(b.frac_bits)
    if a.el_type.is_sa:
        if int(a.dim) != int(b.dim):
            return False
        return all(np.array_equal(a.quant_vector(k), b.quant_vector(k))
                   for k in ("zero_point", "scale", "scale_frac_bits"))
    return True


def _set_out(out: Tensor, ref: Tensor, shape: list[int], data: np.ndarray) -> None:
    """Write ``data`` densely at the start of ``out`` and fill its struct from ``ref``."""
    flat = data.reshape(-1)
    dst = out.data.reshape(-1)
    if dst.dtype == flat.dtype:
        dst[: flat.size] = flat
    else:  # a buffer of another container type: store the raw bytes, as C's memcpy does
        dst.view(np.uint8)[: flat.nbytes] = flat.view(np.uint8)
    out.rank = len(shape)
    out.shape = list(shape)
    out.mem_stride = dense_strides(shape)
    out.el_type = ref.el_type
    out.frac_bits = ref.frac_bits
    out.dim = ref.dim
    out.zero_point, out.scale, out.scale_frac_bits = ref.zero_point, ref.scale, ref.scale_frac_bits


def _type_check(t: Tensor, el: ElType) -> None:
    if t.el_type != el:
        fail(Status.TYPE_MISMATCH, f"input type {t.el_type.c_name}, expected {el.c_name}")


# ---------------------------------------------------------------------------- concat
def _concat(inputs: Sequence[Tensor], cfg: ConcatCfg, out: Tensor, el: ElType) -> Status:
    if inputs is None or len(inputs) == 0:
        fail(Status.BAD_TENSOR, "no input tensors")
    first = inputs[0]
    _check_tensor_v1(first, "inputs[0]")
    _check_out_v1(out)
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "NULL cfg")
    axis, num = int(cfg.axis) & 0xFF, int(cfg.tensors_num) & 0xFF  # uint8_t fields
    if not (axis < first.rank and 0 < num <= MLI_CONCAT_MAX_TENSORS):
        fail(Status.BAD_FUNC_CFG, f"axis {axis} (rank {first.rank}) or tensors_num {num} "
                                  f"(1..{MLI_CONCAT_MAX_TENSORS}) out of range")
    if len(inputs) < num:
        fail(Status.BAD_TENSOR, f"tensors_num {num} but {len(inputs)} inputs given")
    if not _contiguous_v1(first):
        fail(Status.INCOMPATEBLE_TENSORS, "inputs[0] is not contiguous")
    rank = int(first.rank)
    total = first.num_elements
    for idx in range(1, num):
        t = inputs[idx]
        _check_tensor_v1(t, f"inputs[{idx}]")
        if t.el_type != first.el_type or not _same_params(t, first) or t.rank != first.rank or not _contiguous_v1(t):
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
    if not _out_layout_ok(out, out_shape):
        fail(Status.INCOMPATEBLE_TENSORS, f"output mem_stride {list(out.mem_stride)} is not dense")
    need = total * first.el_type.size
    if need > int(out.capacity) or need > out.data.nbytes:
        fail(Status.NOT_ENGH_MEM, f"output capacity {out.capacity} bytes < {need} needed")
    _type_check(first, el)
    result = kmove.concat([inputs[i].numpy() for i in range(num)], axis)
    _set_out(out, first, out_shape, result)
    return Status.OK


@mli_function()
def mli_krn_concat_fx8(inputs: Sequence[Tensor], cfg: ConcatCfg, out: Tensor) -> Status:
    """Concatenate ``cfg.tensors_num`` fx8 tensors along ``cfg.axis`` (MLI 1.x).

    Args:
        inputs: tensors of one element type and frac_bits, equal shapes except along the axis.
        cfg: ``tensors_num`` (1..8) and ``axis``.
        out: output buffer; its rank, shape, element type and parameters are filled here.

    Raises:
        MliError: BAD_TENSOR, BAD_FUNC_CFG, INCOMPATEBLE_TENSORS, SHAPE_MISMATCH, NOT_ENGH_MEM or
            TYPE_MISMATCH, as MLI 1.1's checks.
    """
    return _concat(inputs, cfg, out, ElType.FX_8)


@mli_function()
def mli_krn_concat_fx16(inputs: Sequence[Tensor], cfg: ConcatCfg, out: Tensor) -> Status:
    """Concatenate fx16 tensors (see :func:`mli_krn_concat_fx8`)."""
    return _concat(inputs, cfg, out, ElType.FX_16)


@mli_function()
def mli_krn_concat_sa8(inputs: Sequence[Tensor], cfg: ConcatCfg, out: Tensor) -> Status:
    """Concatenate sa8 tensors of identical quantisation (pymli extension of the 1.x API)."""
    return _concat(inputs, cfg, out, ElType.SA_8)


# ---------------------------------------------------------------------------- padding2d
def _padding2d(inp: Tensor, cfg: Padding2dCfg, out: Tensor, el: ElType, layout: str) -> Status:
    _check_tensor_v1(inp, "in")
    _check_out_v1(out)
    if inp.rank != 3:
        fail(Status.SHAPE_MISMATCH, f"input rank {inp.rank}, a feature map has rank 3")
    if not _contiguous_v1(inp):
        fail(Status.INCOMPATEBLE_TENSORS, "input is not contiguous")
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "NULL cfg")
    top, bot = int(cfg.padding_top) & 0xFF, int(cfg.padding_bottom) & 0xFF  # uint8_t fields
    left, right = int(cfg.padding_left) & 0xFF, int(cfg.padding_right) & 0xFF
    c_dim, h_dim, w_dim = _FMAP[layout]
    out_shape = [int(s) for s in inp.shape[:3]]
    out_shape[h_dim] += top + bot
    out_shape[w_dim] += left + right
    if not _out_layout_ok(out, out_shape):
        fail(Status.INCOMPATEBLE_TENSORS, f"output mem_stride {list(out.mem_stride)} is not dense")
    need = int(np.prod(out_shape)) * inp.el_type.size
    if need > int(out.capacity) or need > out.data.nbytes:
        fail(Status.NOT_ENGH_MEM, f"output capacity {out.capacity} bytes < {need} needed")
    _type_check(inp, el)
    pad_value: np.ndarray | int = 0
    if inp.el_type.is_sa:
        if inp.dim >= 0 and inp.dim != c_dim:
            fail(Status.INCOMPATEBLE_TENSORS, "per-axis quantisation along H or W cannot be padded")
        zp = inp.quant_vector("zero_point")
        info = np.iinfo(inp.el_type.dtype)
        if zp.min() < info.min or zp.max() > info.max:
            fail(Status.INCOMPATEBLE_TENSORS, f"zero point {zp.tolist()} outside the {inp.el_type.dtype} container")
        pad_value = zp if inp.dim >= 0 else int(zp[0])
    result = kmove.pad2d(inp.numpy(), top, bot, left, right, layout=layout, value=pad_value)
    _set_out(out, inp, out_shape, result)
    return Status.OK


@mli_function()
def mli_krn_padding2d_chw_fx8(inp: Tensor, cfg: Padding2dCfg, out: Tensor) -> Status:
    """Zero-pad the H and W borders of an fx8 CHW feature map (MLI 1.x).

    Args:
        inp: ``[C, H, W]`` fx8 tensor (contiguous).
        cfg: ``padding_left/right/top/bottom``.
        out: output buffer for ``[C, H + top + bottom, W + left + right]``; its struct is filled here.

    Raises:
        MliError: BAD_TENSOR, SHAPE_MISMATCH (rank != 3), INCOMPATEBLE_TENSORS, BAD_FUNC_CFG,
            NOT_ENGH_MEM or TYPE_MISMATCH, as MLI 1.1's checks.
    """
    return _padding2d(inp, cfg, out, ElType.FX_8, "chw")


@mli_function()
def mli_krn_padding2d_chw_fx16(inp: Tensor, cfg: Padding2dCfg, out: Tensor) -> Status:
    """Zero-pad an fx16 CHW feature map (see :func:`mli_krn_padding2d_chw_fx8`)."""
    return _padding2d(inp, cfg, out, ElType.FX_16, "chw")


@mli_function()
def mli_krn_padding2d_chw_sa8(inp: Tensor, cfg: Padding2dCfg, out: Tensor) -> Status:
    """Pad an sa8 CHW feature map with its zero point (pymli extension of the 1.x API)."""
    return _padding2d(inp, cfg, out, ElType.SA_8, "chw")


@mli_function()
def mli_krn_padding2d_hwc_fx8(inp: Tensor, cfg: Padding2dCfg, out: Tensor) -> Status:
    """Zero-pad the H and W borders of an fx8 HWC feature map (MLI 1.x).

    Args:
        inp: ``[H, W, C]`` fx8 tensor (contiguous).
        cfg: ``padding_left/right/top/bottom``.
        out: output buffer for ``[H + top + bottom, W + left + right, C]``; its struct is filled here.

    Raises:
        MliError: as :func:`mli_krn_padding2d_chw_fx8`.
    """
    return _padding2d(inp, cfg, out, ElType.FX_8, "hwc")


@mli_function()
def mli_krn_padding2d_hwc_fx16(inp: Tensor, cfg: Padding2dCfg, out: Tensor) -> Status:
    """Zero-pad an fx16 HWC feature map (see :func:`mli_krn_padding2d_hwc_fx8`)."""
    return _padding2d(inp, cfg, out, ElType.FX_16, "hwc")


@mli_function()
def mli_krn_padding2d_hwc_sa8(inp: Tensor, cfg: Padding2dCfg, out: Tensor) -> Status:
    """Pad an sa8 HWC feature map with its zero point (pymli extension of the 1.x API)."""
    return _padding2d(inp, cfg, out, ElType.SA_8, "hwc")

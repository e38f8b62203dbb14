"""Checks of the helpers: ``mli_hlp_point_to_subtensor``, ``mli_hlp_create_subtensor`` and
``mli_hlp_convert_tensor*`` (``mli_chk_convert_tensor``)."""

from __future__ import annotations

from typing import Any

from ..errors import Status
from ..tensor import MLI_MAX_RANK, Tensor
from .tensor import (check_tensor, fail, inner_most_dimension_is_one, layout_is_contiguous, mem_stride_matches,
                     same_data_pointer, same_shape, shape_at, stride_at)

__all__ = ["check_point_to_subtensor", "check_create_subtensor", "check_convert", "c_array"]

_U32 = 0xFFFFFFFF


def c_array(values: list[int], n: int = MLI_MAX_RANK) -> list[int]:
    """A C fixed-size array argument: the list's entries, then zeros up to ``n``.

    Args:
        values: the entries given; n: the C array length.

    Returns:
        A list of at least ``n`` Python ints.
    """
    vals = [int(v) for v in values]
    return vals + [0] * (n - len(vals)) if len(vals) < n else vals


_pad = c_array


def check_point_to_subtensor(in_: Tensor, cfg: Any, out: Tensor | None) -> None:
    """Checks of ``mli_hlp_point_to_subtensor``: coordinates inside the input, contiguous layouts.

    Args:
        in_: the input tensor; cfg: ``mli_point_to_subtsr_cfg``; out: the output struct.

    Raises:
        MliError: BAD_TENSOR, BAD_FUNC_CFG or INCOMPATEBLE_TENSORS.
    """
    check_tensor(in_)
    if out is None:
        fail(Status.BAD_TENSOR, "point_to_subtensor: NULL output tensor")
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "point_to_subtensor: NULL cfg")
    coord_num = int(cfg.coord_num) & 0xFF
    if coord_num > in_.rank:
        fail(Status.BAD_FUNC_CFG, f"point_to_subtensor: coord_num {coord_num} > rank {in_.rank}")
    if coord_num == 0:
        fail(Status.BAD_FUNC_CFG, "point_to_subtensor: coord_num 0 (C reads start_coord[-1])")
    start = _pad(cfg.start_coord)
    for i in range(coord_num):
        if not (start[i] & _U32) < shape_at(in_, i):
            fail(Status.BAD_FUNC_CFG, f"point_to_subtensor: start_coord[{i}] = {start[i]} >= shape {shape_at(in_, i)}")
    end = (start[coord_num - 1] + (int(cfg.first_out_dim_size) & 0xFF)) & _U32
    if end > shape_at(in_, coord_num - 1):
        fail(Status.BAD_FUNC_CFG, f"point_to_subtensor: subtensor ends at {end} > shape {shape_at(in_, coord_num - 1)}")
    out_rank = in_.rank - (coord_num - 1)
    in_ok = layout_is_contiguous(in_)
    out_ok = out_rank == 0 or (out_rank == 1 and stride_at(out, 0) == 1)
    if not (in_ok and out_ok):
        fail(Status.INCOMPATEBLE_TENSORS, "point_to_subtensor: input and output layouts must be contiguous "
             f"(output rank {out_rank} needs mem_stride[0] == 1 and rank 1)")


def check_create_subtensor(in_: Tensor, cfg: Any, out: Tensor | None) -> None:
    """Checks of ``mli_hlp_create_subtensor``: the window lies inside the input.

    Args:
        in_: the input tensor; cfg: ``mli_sub_tensor_cfg``; out: the output struct.

    Raises:
        MliError: BAD_TENSOR or BAD_FUNC_CFG.
    """
    check_tensor(in_)
    if out is None:
        fail(Status.BAD_TENSOR, "create_subtensor: NULL output tensor")
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "create_subtensor: NULL cfg")
    if (int(cfg.sub_tensor_rank) & _U32) > in_.rank:
        fail(Status.BAD_FUNC_CFG, f"create_subtensor: sub_tensor_rank {cfg.sub_tensor_rank} > rank {in_.rank}")
    off, sz = _pad(cfg.offset), _pad(cfg.size)
    for i in range(in_.rank):
        if not (off[i] & _U32) < shape_at(in_, i):
            fail(Status.BAD_FUNC_CFG, f"create_subtensor: offset[{i}] = {off[i]} >= shape {shape_at(in_, i)}")
        if not ((off[i] + sz[i]) & _U32) <= shape_at(in_, i):
            fail(Status.BAD_FUNC_CFG, f"create_subtensor: offset[{i}] + size[{i}] = {off[i] + sz[i]} > shape {shape_at(in_, i)}")


def check_convert(src: Tensor, dst: Tensor) -> None:
    """``mli_chk_convert_tensor``.

    Args:
        src, dst: source and destination tensors.

    Raises:
        MliError: BAD_TENSOR, NOT_ENGH_MEM, SHAPE_MISMATCH, INCOMPATEBLE_TENSORS or SIZE_MISMATCH.
    """
    check_tensor(src)
    check_tensor(dst)
    if not same_shape(src, dst):
        fail(Status.SHAPE_MISMATCH, f"convert: shapes {src.shape[:src.rank]} and {dst.shape[:dst.rank]} differ")
    if not (inner_most_dimension_is_one(src) and inner_most_dimension_is_one(dst)):
        fail(Status.INCOMPATEBLE_TENSORS, "convert: the innermost mem_stride must be 1")
    if same_data_pointer(src, dst):
        if not (src.el_type.size == dst.el_type.size and mem_stride_matches(src, dst)):
            fail(Status.INCOMPATEBLE_TENSORS, "convert: in-place needs equal containers and mem_stride")
    if src.el_type.is_sa and dst.el_type.is_sa:
        if not (src.dim == dst.dim or src.dim < 0 or dst.dim < 0):
            fail(Status.SIZE_MISMATCH, f"convert: quantisation axes {src.dim} and {dst.dim} differ")

"""Checks of ``mli_krn_permute_*`` and ``mli_krn_argmax_*`` (``mli_chk_permute*``, ``mli_chk_argmax*``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import Status
from ..formats import ElType
from ..tensor import Tensor, address
from .tensor import (check_tensor, fail, inner_most_dimension_is_one, layout_is_contiguous, shape_at,
                     tensors_not_overlapped)

__all__ = ["check_permute", "check_argmax", "permutation", "param_pointer", "QUANT_FIELDS"]

QUANT_FIELDS = (("zero_point", 2), ("scale", 2), ("scale_frac_bits", 1))
"""Per-axis quantisation fields with their C element sizes in bytes."""
_QUANT = QUANT_FIELDS


def param_pointer(v: Any) -> int:
    """The C pointer of a per-axis parameter array (0 for NULL; a per-tensor int fills its low bytes).

    Args:
        v: the field's value.

    Returns:
        The pointer C compares.
    """
    if v is None:
        return 0
    if isinstance(v, np.ndarray):
        return address(v)
    return int(v) & 0xFFFF


def _cap(v: Any) -> int:
    return int(v.nbytes) if isinstance(v, np.ndarray) else 0


def permutation(cfg: Any, rank: int) -> list[int]:
    """``cfg.perm_dim`` as C reads it: ``uint8_t`` entries.

    Args:
        cfg: ``mli_permute_cfg``; rank: the input rank.

    Returns:
        At least ``rank`` entries.
    """
    perm = [int(p) & 0xFF for p in cfg.perm_dim]
    return perm + [0] * max(0, rank - len(perm))


def check_permute(fn: str, el: ElType, inp: Tensor, cfg: Any, out: Tensor) -> None:
    """``mli_chk_permute_<type>``: a permutation of the dimensions matching the shapes.

    For an sa8 input with per-axis parameters, also the input's arrays (dim < rank, shape[dim]
    values each: C would read past them) and the output's (all the input's, all NULL, or all
    separate with room).

    Args:
        fn: the MLI function name; el: its element type.
        inp, out: input and output tensors; cfg: ``mli_permute_cfg``.

    Raises:
        MliError: BAD_TENSOR, TYPE_MISMATCH, BAD_FUNC_CFG, SHAPE_MISMATCH,
            INCOMPATEBLE_TENSORS or SPEC_PARAM_MISMATCH.
    """
    check_tensor(inp)
    check_tensor(out)
    if out.el_type != inp.el_type:
        fail(Status.TYPE_MISMATCH, f"{fn}: out type {out.el_type.c_name} != in type {inp.el_type.c_name}")
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, f"{fn}: NULL cfg")
    perm = permutation(cfg, inp.rank)
    for i in range(inp.rank):
        if not perm[i] < inp.rank:
            fail(Status.BAD_FUNC_CFG, f"{fn}: perm_dim[{i}] = {perm[i]} outside [0, {inp.rank})")
        if perm[i] in perm[i + 1: inp.rank]:
            fail(Status.BAD_FUNC_CFG, f"{fn}: perm_dim {perm[:inp.rank]} repeats {perm[i]}")
        if shape_at(out, i) != shape_at(inp, perm[i]):
            fail(Status.SHAPE_MISMATCH, f"{fn}: out.shape[{i}] = {shape_at(out, i)} != in.shape[{perm[i]}]")
    if not tensors_not_overlapped(inp, out):
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: in and out buffers overlap")
    if inp.el_type != el:
        fail(Status.TYPE_MISMATCH, f"{fn}: {inp.el_type.c_name} input, {el.c_name} expected")
    if el.is_sa and inp.dim >= 0:
        # C would read the input's per-axis arrays out of bounds: refuse (see docs/quirks.md).
        if inp.dim >= inp.rank:
            fail(Status.BAD_TENSOR, f"{fn}: quantisation dim {inp.dim} >= rank {inp.rank}")
        n_in = shape_at(inp, inp.dim)
        for k, size in _QUANT:
            v = getattr(inp, k)
            if not isinstance(v, np.ndarray) or v.size < n_in:
                fail(Status.BAD_TENSOR, f"{fn}: per-axis {k} of in holds fewer than {n_in} values")
        ip = {k: param_pointer(getattr(inp, k)) for k, _ in _QUANT}
        op = {k: param_pointer(getattr(out, k)) for k, _ in _QUANT}
        zp, sc, fb = "zero_point", "scale", "scale_frac_bits"
        bad = False
        if op[zp] == ip[zp]:
            bad |= not (op[sc] == ip[sc] and op[fb] == ip[fb])
        if op[zp] != 0 and op[zp] != ip[zp]:
            bad |= not (op[sc] not in (0, ip[sc]) and op[fb] not in (0, ip[fb]))
        if op[zp] == 0:
            bad |= not (op[sc] == 0 and op[fb] == 0)
        if not bad and op[zp] not in (0, ip[zp]):
            n = shape_at(inp, inp.dim)
            bad |= not all(_cap(getattr(out, k)) >= n * size for k, size in _QUANT)
        if bad:
            fail(Status.SPEC_PARAM_MISMATCH,
                 f"{fn}: out per-axis parameter arrays must all be the input's, all NULL, or all "
                 f"separate with room for in.shape[{inp.dim}] values")


def check_argmax(fn: str, el: ElType, inp: Tensor, cfg: Any, out: Tensor) -> None:
    """``mli_chk_argmax_<type>``: an SA_32 contiguous output of shape (slices, topk).

    Args:
        fn: the MLI function name; el: its element type.
        inp: input; out: SA_32 output; cfg: ``mli_argmax_cfg`` (axis, topk).

    Raises:
        MliError: BAD_TENSOR, TYPE_MISMATCH, INCOMPATEBLE_TENSORS, BAD_FUNC_CFG or
            SHAPE_MISMATCH.
    """
    check_tensor(inp)
    check_tensor(out)
    if out.el_type != ElType.SA_32:
        fail(Status.TYPE_MISMATCH, f"{fn}: out must be MLI_EL_SA_32, not {out.el_type.c_name}")
    if not layout_is_contiguous(out):
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: out must be contiguous (mem_stride {out.mem_stride[:out.rank]})")
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, f"{fn}: NULL cfg")
    axis, topk = int(cfg.axis), int(cfg.topk)
    if axis > inp.rank:
        fail(Status.BAD_FUNC_CFG, f"{fn}: axis {axis} > rank {inp.rank}")
    if not inner_most_dimension_is_one(inp):
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: innermost mem_stride of in must be 1")
    if axis >= inp.rank:
        fail(Status.BAD_FUNC_CFG, f"{fn}: axis {axis} >= rank {inp.rank}")
    size = inp.num_elements
    dim_size = 1
    if axis >= 0:
        dim_size = shape_at(inp, axis)
        if topk > size // dim_size:
            fail(Status.BAD_FUNC_CFG, f"{fn}: topk {topk} > slice size {size // dim_size}")
    elif topk > size:
        fail(Status.BAD_FUNC_CFG, f"{fn}: topk {topk} > {size} elements")
    if shape_at(out, 0) != dim_size or shape_at(out, 1) != topk:
        fail(Status.SHAPE_MISMATCH, f"{fn}: out shape {out.shape[:out.rank]}, [{dim_size}, {topk}] expected")
    if inp.el_type != el:
        fail(Status.TYPE_MISMATCH, f"{fn}: {inp.el_type.c_name} input, {el.c_name} expected")
    if el.is_sa and inp.dim >= 0:
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: in must be quantised per tensor")

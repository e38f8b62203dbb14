"""Pythonic ``permute`` and ``argmax`` over :class:`pymli.Tensor` (``mli_krn_permute_*``, ``mli_krn_argmax_*``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..capi.types import ArgmaxCfg, PermuteCfg
from ..errors import MliError, Status
from ..formats import ElType
from ..graph import args
from ..graph.registry import Op, require
from ..tensor import MLI_MAX_RANK, Tensor

__all__ = ["permute", "argmax"]


def permute(x: Tensor, perm: Sequence[int]) -> Tensor:
    """Reorder the dimensions of ``x``: ``out.shape[k] = x.shape[perm[k]]``.

    Args:
        x: an fx8, fx16 or sa8 tensor; per-axis sa8 parameters follow their dimension.
        perm: a permutation of ``range(x.rank)``.

    Returns:
        A new dense tensor.

    Raises:
        MliError: BAD_TENSOR (not a tensor), TYPE_MISMATCH, BAD_FUNC_CFG (``perm`` not a permutation
            of ``range(x.rank)``) or the status of ``mli_krn_permute_*``.
    """
    args.tensor(x, "x", what="permute")
    fn = require(Op.PERMUTE, x.el_type, what="permute")
    perm = args.int_list(perm, "perm", what="permute")
    if sorted(perm) != list(range(x.rank)):
        raise MliError(Status.BAD_FUNC_CFG, f"permute: {perm} is not a permutation of range({x.rank})")
    shape = [int(x.shape[p]) for p in perm]
    if x.el_type.is_sa and x.dim >= 0:
        # Own parameter arrays for the output (the function copies the values into them).
        q = {k: np.zeros_like(np.asarray(getattr(x, k))) for k in ("zero_point", "scale", "scale_frac_bits")}
        out = Tensor.zeros(shape, x.el_type, dim=perm.index(x.dim), **q)
        out.scale = np.ones_like(out.scale)
    elif x.el_type.is_sa:
        out = Tensor.zeros(shape, x.el_type, zero_point=x.zero_point, scale=x.scale,
                           scale_frac_bits=x.scale_frac_bits)
    else:
        out = Tensor.zeros(shape, x.el_type, frac_bits=x.frac_bits)
    cfg = PermuteCfg(perm + list(range(len(perm), MLI_MAX_RANK)))
    fn(x, cfg, out)
    return out


def argmax(x: Tensor, axis: int = -1, topk: int = 1) -> Tensor:
    """Positions of the ``topk`` largest values of ``x``, largest first.

    Args:
        x: an sa8 or fx16 tensor.
        axis: ``< 0``: over the whole tensor; ``>= 0``: one result row per index of that
            dimension, each over all elements having that index.
        topk: positions per row.

    Returns:
        An ``SA_32`` tensor of shape ``[rows, topk]`` holding element offsets into ``x``'s memory
        (``sum(index * mem_stride)``; the flat row-major index for a dense ``x``). Among equal
        values the order is MLI's.

    Raises:
        MliError: BAD_TENSOR (not a tensor), TYPE_MISMATCH, BAD_FUNC_CFG (``axis`` / ``topk`` not
            int32 integers), NOT_ENGH_MEM (a result over the allocation limit) or the status of
            ``mli_krn_argmax_*`` (e.g. ``axis >= rank``, ``topk`` outside the slice).
    """
    args.tensor(x, "x", what="argmax")
    fn = require(Op.ARGMAX, x.el_type, what="argmax")
    axis = args.integer(axis, "axis", what="argmax", lo=args.INT32[0], hi=args.INT32[1])
    topk = args.integer(topk, "topk", what="argmax", lo=args.INT32[0], hi=args.INT32[1])
    rows = int(x.shape[axis]) if 0 <= axis < x.rank else 1
    shape = [rows, max(topk, 1)]
    args.check_alloc(shape, ElType.SA_32, what="argmax")
    out = Tensor.zeros(shape, ElType.SA_32)
    fn(x, ArgmaxCfg(axis, topk), out)
    return out

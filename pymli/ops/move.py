"""Data movement on tensors: copy, slice, sub-sample, transpose, pad and concatenate.

Every function runs MLI's move engine (:func:`pymli.capi.mli_mov_tensor_sync`) on a freshly
allocated dense output, so it works for every element type and keeps the quantisation (per-axis
parameters are sliced, sub-sampled, permuted or padded along with the data). Padding stores the
raw value 0, as MLI does (for sa types that is the real value ``-zero_point * scale``).

Example:
    >>> import numpy as np, pymli, pymli.ops
    >>> x = pymli.Tensor.from_numpy(np.arange(12).reshape(3, 4), "FX_16")
    >>> pymli.ops.slice_tensor(x, (1, 0), (2, 2)).numpy().tolist()
    [[4, 5], [8, 9]]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..capi.move import MovCfg, mli_mov_tensor_sync
from ..errors import MliError, Status
from ..tensor import MLI_MAX_RANK, Tensor, dense_strides

__all__ = ["move_tensor", "copy", "slice_tensor", "subsample", "transpose", "pad2d", "concat"]


def _four(values: Sequence[int] | None, rank: int, fill: int | None = None, name: str = "") -> list[int]:
    if values is None:
        return [fill if fill is not None else i for i in range(MLI_MAX_RANK)]
    vals = [int(v) for v in values]
    if len(vals) != rank:
        raise MliError(Status.BAD_FUNC_CFG, f"{name} needs {rank} values (one per dimension), got {vals}")
    return vals + [fill if fill is not None else i for i in range(rank, MLI_MAX_RANK)]


def _empty_like_params(x: Tensor, shape: list[int], quant_len: int | None) -> Tensor:
    """A dense output buffer for ``shape`` with room for per-axis parameters if ``x`` has them."""
    n = int(np.prod(shape)) if shape else 1
    data = np.zeros(n, dtype=x.el_type.dtype)
    out = Tensor(data=data, capacity=data.nbytes, shape=[0] * len(shape), mem_stride=[0] * len(shape),
                 rank=len(shape), el_type=x.el_type)
    if x.el_type.is_sa and x.dim >= 0 and quant_len is not None:
        out.zero_point = np.zeros(quant_len, np.int16)
        out.scale = np.ones(quant_len, np.int16)
        out.scale_frac_bits = np.zeros(quant_len, np.int8)
    elif x.el_type.is_sa and x.dim >= 0:
        out.zero_point = out.scale = out.scale_frac_bits = None
    return out


def move_tensor(x: Tensor, *, offset: Sequence[int] | None = None, size: Sequence[int] | None = None,
         step: Sequence[int] | None = None, perm: Sequence[int] | None = None,
         pad_pre: Sequence[int] | None = None, pad_post: Sequence[int] | None = None) -> Tensor:
    """The general MLI move into a new dense tensor.

    Order of the transformations (MLI's): pad the source, crop ``offset`` / ``size``, keep every
    ``step``-th element, then reorder dimensions (``perm[i]`` = source dimension of output dim ``i``).

    Args:
        x: source tensor of rank 1..4.
        offset, size, step, pad_pre, pad_post: one value per source dimension (size 0 = to the end).
        perm: a permutation of ``range(rank)``.

    Returns:
        A new dense tensor with the moved data and the matching quantisation.

    Raises:
        MliError: the checks of ``mli_mov_tensor_sync`` (e.g. BAD_FUNC_CFG for a bad step).
    """
    rank = int(x.rank)
    if not 1 <= rank <= MLI_MAX_RANK:
        raise MliError(Status.BAD_TENSOR, f"rank {rank} not in 1..{MLI_MAX_RANK}")
    cfg = MovCfg(offset=_four(offset, rank, 0, "offset"), size=_four(size, rank, 0, "size"),
                 sub_sample_step=_four(step, rank, 1, "step"), perm_dim=_four(perm, rank, None, "perm"),
                 padding_pre=_four(pad_pre, rank, 0, "pad_pre"), padding_post=_four(pad_post, rank, 0, "pad_post"))
    p = cfg.perm_dim[:rank]
    if sorted(p) != list(range(rank)):
        raise MliError(Status.BAD_FUNC_CFG, f"perm {p} is not a permutation of 0..{rank - 1}")
    if any(s <= 0 for s in cfg.sub_sample_step[:rank]) or any(v < 0 for v in cfg.offset + cfg.size):
        raise MliError(Status.BAD_FUNC_CFG, f"steps must be > 0, offsets and sizes >= 0: {cfg}")
    shape = []
    for q in p:
        n = cfg.size[q] or int(x.shape[q]) - cfg.offset[q] + cfg.padding_pre[q] + cfg.padding_post[q]
        if n <= 0 or cfg.offset[q] + n > int(x.shape[q]) + cfg.padding_pre[q] + cfg.padding_post[q]:
            raise MliError(Status.BAD_FUNC_CFG, f"crop of dim {q} outside the (padded) source")
        shape.append(-(-n // cfg.sub_sample_step[q]))
    quant_len = shape[p.index(x.dim)] if x.el_type.is_sa and 0 <= x.dim < rank else None
    out = _empty_like_params(x, shape, quant_len)
    mli_mov_tensor_sync(x, cfg, out)
    return out


def copy(x: Tensor) -> Tensor:
    """A dense copy of ``x`` (strided sources are compacted)."""
    return move_tensor(x)


def slice_tensor(x: Tensor, offsets: Sequence[int], sizes: Sequence[int]) -> Tensor:
    """``x[offsets[0]:offsets[0]+sizes[0], ...]`` as a new tensor (size 0 = to the end)."""
    return move_tensor(x, offset=offsets, size=sizes)


def subsample(x: Tensor, steps: Sequence[int]) -> Tensor:
    """``x[::steps[0], ::steps[1], ...]`` as a new tensor."""
    return move_tensor(x, step=steps)


def transpose(x: Tensor, perm: Sequence[int]) -> Tensor:
    """``np.transpose(x, perm)`` by data movement (any element type)."""
    return move_tensor(x, perm=perm)


def pad2d(x: Tensor, padding: Sequence[int], layout: str = "hwc") -> Tensor:
    """Pad the H and W borders of a feature map with zeros.

    Args:
        x: rank-3 feature map, ``[H, W, C]`` (``layout="hwc"``) or ``[C, H, W]`` (``"chw"``).
        padding: ``(top, bottom, left, right)``, each 0..255.
        layout: ``"hwc"`` or ``"chw"``.
    """
    if int(x.rank) != 3:
        raise MliError(Status.SHAPE_MISMATCH, f"pad2d needs a rank-3 feature map, got rank {x.rank}")
    top, bottom, left, right = (int(v) for v in padding)
    if not all(0 <= v <= 255 for v in (top, bottom, left, right)):
        raise MliError(Status.BAD_FUNC_CFG, f"padding {tuple(padding)} outside 0..255")
    h, w = {"hwc": (0, 1), "chw": (1, 2)}[layout]
    pre, post = [0, 0, 0], [0, 0, 0]
    pre[h], post[h], pre[w], post[w] = top, bottom, left, right
    return move_tensor(x, pad_pre=pre, pad_post=post)


def concat(tensors: Sequence[Tensor], axis: int) -> Tensor:
    """Join tensors along ``axis`` (equal element type, parameters, rank, and shape elsewhere).

    Per-axis quantisation along ``axis`` is concatenated as well.
    """
    if not tensors:
        raise MliError(Status.BAD_TENSOR, "concat of no tensors")
    first = tensors[0]
    rank = int(first.rank)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise MliError(Status.BAD_FUNC_CFG, f"axis {axis!r} is not an integer")
    if axis < 0:
        axis += rank
    if not 0 <= axis < rank:
        raise MliError(Status.BAD_FUNC_CFG, f"axis {axis} outside rank {rank}")
    for t in tensors[1:]:
        if t.el_type != first.el_type or t.rank != first.rank:
            raise MliError(Status.INCOMPATEBLE_TENSORS, "concat needs one element type and rank")
        if any(d != axis and int(t.shape[d]) != int(first.shape[d]) for d in range(rank)):
            raise MliError(Status.SHAPE_MISMATCH, f"shapes {t.shape} and {first.shape} differ outside axis {axis}")
        same = (t.frac_bits == first.frac_bits if first.el_type.is_fx else
                t.dim == first.dim and (t.dim == axis or all(
                    np.array_equal(t.quant_vector(k), first.quant_vector(k))
                    for k in ("zero_point", "scale", "scale_frac_bits"))))
        if not same:
            raise MliError(Status.INCOMPATEBLE_TENSORS, "concat needs identical quantisation parameters")
    shape = [int(s) for s in first.shape[:rank]]
    shape[axis] = sum(int(t.shape[axis]) for t in tensors)
    per_axis = first.el_type.is_sa and first.dim >= 0
    out = _empty_like_params(first, shape, shape[first.dim] if per_axis else None)
    strides = dense_strides(shape)
    pos = 0
    for t in tensors:
        # Each move places its block at dst_offset inside the final layout (the destination keeps
        # its strides); the struct it rewrites is a scratch copy pointing at the output buffer.
        dst_off = [0] * MLI_MAX_RANK
        dst_off[axis] = pos
        target = Tensor(data=out.data, capacity=out.capacity, shape=list(shape), mem_stride=list(strides),
                        rank=rank, el_type=out.el_type, zero_point=out.zero_point, scale=out.scale,
                        scale_frac_bits=out.scale_frac_bits, dim=out.dim)
        mli_mov_tensor_sync(t, MovCfg(dst_offset=dst_off), target)
        out.frac_bits, out.dim = target.frac_bits, target.dim
        if not per_axis:
            out.zero_point, out.scale, out.scale_frac_bits = target.zero_point, target.scale, target.scale_frac_bits
        pos += int(t.shape[axis])
    out.shape = shape
    out.mem_stride = strides
    return out

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
from ..checks import validate_tensor
from ..errors import MliError, Status
from ..graph import args
from ..tensor import MLI_MAX_RANK, Tensor, dense_strides
from ._doc import sections

__all__ = ["move_tensor", "copy", "slice_tensor", "subsample", "transpose", "pad2d", "concat"]


def _four(values: Sequence[int] | None, rank: int, fill: int | None = None, name: str = "", *, what: str = "move_tensor",
          lo: int = 0) -> list[int]:
    """One int >= ``lo`` per dimension (None: the default), filled up to ``MLI_MAX_RANK`` entries."""
    if values is None:
        return [fill if fill is not None else i for i in range(MLI_MAX_RANK)]
    vals = args.int_list(values, name, what=what, length=rank, lo=lo)
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
        MliError: BAD_TENSOR (not a tensor, rank 0), BAD_FUNC_CFG (a value that is not one int per
            dimension, a negative one, a step of 0, a value beyond its ``uint32_t`` / ``uint8_t`` cfg
            field, a crop outside the padded source), NOT_ENGH_MEM (a result over the allocation
            limit) or the checks of ``mli_mov_tensor_sync``.
    """
    return _move(x, "move_tensor", offset=offset, size=size, step=step, perm=perm, pad_pre=pad_pre,
                 pad_post=pad_post)


def _move(x: Tensor, what: str, *, offset: Sequence[int] | None = None, size: Sequence[int] | None = None,
          step: Sequence[int] | None = None, perm: Sequence[int] | None = None,
          pad_pre: Sequence[int] | None = None, pad_post: Sequence[int] | None = None) -> Tensor:
    args.tensor(x, "x", what=what)
    rank = int(x.rank)
    if not 1 <= rank <= MLI_MAX_RANK:
        raise MliError(Status.BAD_TENSOR, f"{what}: rank {rank} not in 1..{MLI_MAX_RANK}")
    vals = {"offset": _four(offset, rank, 0, "offset", what=what), "size": _four(size, rank, 0, "size", what=what),
            "sub_sample_step": _four(step, rank, 1, "step", what=what, lo=1),
            "perm_dim": _four(perm, rank, None, "perm", what=what),
            "padding_pre": _four(pad_pre, rank, 0, "pad_pre", what=what),
            "padding_post": _four(pad_post, rank, 0, "pad_post", what=what)}
    p = vals["perm_dim"][:rank]
    if sorted(p) != list(range(rank)):
        raise MliError(Status.BAD_FUNC_CFG, f"{what}: perm {p} is not a permutation of 0..{rank - 1}")
    cfg = MovCfg(**vals)
    shape = []
    for q in p:
        n = cfg.size[q] or int(x.shape[q]) - cfg.offset[q] + cfg.padding_pre[q] + cfg.padding_post[q]
        if n <= 0 or cfg.offset[q] + n > int(x.shape[q]) + cfg.padding_pre[q] + cfg.padding_post[q]:
            raise MliError(Status.BAD_FUNC_CFG, f"{what}: crop of dim {q} outside the (padded) source")
        shape.append(-(-n // cfg.sub_sample_step[q]))
    args.check_alloc(shape, x.el_type, what=what)
    for name, hi in (("offset", args.UINT32), ("size", args.UINT32), ("sub_sample_step", args.UINT32),
                     ("padding_pre", args.UINT8[1]), ("padding_post", args.UINT8[1])):
        if max(vals[name]) > hi:
            raise MliError(Status.BAD_FUNC_CFG, f"{what}: {name} {vals[name][:rank]} beyond its cfg field (<= {hi})")
    quant_len = shape[p.index(x.dim)] if x.el_type.is_sa and 0 <= x.dim < rank else None
    out = _empty_like_params(x, shape, quant_len)
    mli_mov_tensor_sync(x, cfg, out)
    return out


_MOVE_SECTIONS = """
Args:
    x: source tensor of rank 1..4, any element type.{args}

Returns:
    A new dense tensor with the moved data and ``x``'s element type and quantisation.

Raises:
    MliError: as :func:`move_tensor`.
"""


@sections(_MOVE_SECTIONS, args="")
def copy(x: Tensor) -> Tensor:
    """A dense copy of ``x`` (strided sources are compacted)."""
    return _move(x, "copy")


@sections(_MOVE_SECTIONS, args="\n    offsets, sizes: one value per dimension of ``x`` (size 0 = to the end).")
def slice_tensor(x: Tensor, offsets: Sequence[int], sizes: Sequence[int]) -> Tensor:
    """``x[offsets[0]:offsets[0]+sizes[0], ...]`` as a new tensor."""
    return _move(x, "slice_tensor", offset=offsets, size=sizes)


@sections(_MOVE_SECTIONS, args="\n    steps: one step (>= 1) per dimension of ``x``.")
def subsample(x: Tensor, steps: Sequence[int]) -> Tensor:
    """``x[::steps[0], ::steps[1], ...]`` as a new tensor."""
    return _move(x, "subsample", step=steps)


@sections(_MOVE_SECTIONS, args="\n    perm: a permutation of ``range(x.rank)``.")
def transpose(x: Tensor, perm: Sequence[int]) -> Tensor:
    """``np.transpose(x, perm)`` by data movement."""
    return _move(x, "transpose", perm=perm)


def pad2d(x: Tensor, padding: Sequence[int], layout: str = "hwc") -> Tensor:
    """Pad the H and W borders of a feature map with zeros.

    Args:
        x: rank-3 feature map, ``[H, W, C]`` (``layout="hwc"``) or ``[C, H, W]`` (``"chw"``).
        padding: ``(top, bottom, left, right)``, each 0..255.
        layout: ``"hwc"`` or ``"chw"`` (any case).

    Returns:
        A new dense tensor with the quantisation of ``x``.

    Raises:
        MliError: BAD_TENSOR (not a tensor), SHAPE_MISMATCH (rank other than 3), BAD_FUNC_CFG (padding
            not four ints in 0..255, an unknown layout), NOT_ENGH_MEM (a result over the allocation limit).
    """
    args.tensor(x, "x", what="pad2d", ranks=(3,))
    top, bottom, left, right = args.int_list(padding, "padding", what="pad2d", length=4, lo=0)
    h, w = args.choice(layout, {"hwc": (0, 1), "chw": (1, 2)}, "layout", what="pad2d")
    pre, post = [0, 0, 0], [0, 0, 0]
    pre[h], post[h], pre[w], post[w] = top, bottom, left, right
    return _move(x, "pad2d", pad_pre=pre, pad_post=post)


def concat(tensors: Sequence[Tensor], axis: int) -> Tensor:
    """Join tensors along ``axis`` (equal element type, parameters, rank, and shape elsewhere).

    Per-axis quantisation along ``axis`` is concatenated as well.

    Args:
        tensors: the tensors (rank 1..4), in order.
        axis: the dimension to join along; negative values count from the end.

    Returns:
        A new dense tensor.

    Raises:
        MliError: BAD_TENSOR (no tensors, a non-tensor or an invalid struct), BAD_FUNC_CFG (``axis``
            not an int in range), INCOMPATEBLE_TENSORS (element types, ranks or parameters differ),
            SHAPE_MISMATCH (shapes differ outside ``axis``), NOT_ENGH_MEM (a result over the limit).
    """
    what = "concat"
    if isinstance(tensors, (list, tuple)) and not tensors:
        raise MliError(Status.BAD_TENSOR, "concat of no tensors")
    tensors = args.tensor_list(tensors, "tensors", what=what)
    for t in tensors:
        validate_tensor(t)
    first = tensors[0]
    rank = int(first.rank)
    if rank == 0:
        raise MliError(Status.BAD_TENSOR, f"{what}: rank-0 tensors have no axis to join along")
    axis = args.integer(axis, "axis", what=what, lo=-rank, hi=rank - 1)
    if axis < 0:
        axis += rank
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
    args.check_alloc(shape, first.el_type, what=what)
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

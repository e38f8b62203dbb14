"""Checks of the data movement functions (``mli_chk_data_movement`` of ``mli_mov.cc``).

The cfg is read with every field in its C type (``uint32_t`` offsets and sizes, ``int32_t``
strides, ``uint8_t`` permutation and padding): :func:`normalised_cfg` gives that view.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..arith.geometry import ceil_div
from ..arith.rounding import wrap_int
from ..errors import Status
from ..tensor import MLI_MAX_RANK, Tensor, address
from .entry import canonical_mov_cfg
from .tensor import check_tensor, fail, tensors_not_overlapped

__all__ = ["check_data_movement", "copy_size", "normalised_cfg", "c_array_field", "array_pointer", "array_nbytes",
           "ZEROS4", "ONES4", "IDENTITY4", "as_u32", "as_i32", "as_u8"]

ZEROS4 = (0, 0, 0, 0)
"""Default of the offset, size, dst_offset, dst_mem_stride and padding arrays."""
ONES4 = (1, 1, 1, 1)
"""Default of ``sub_sample_step``."""
IDENTITY4 = (0, 1, 2, 3)
"""Default of ``perm_dim``."""


def _c_cast(bits: int, signed: bool) -> Callable[[int], int]:
    """The cast of a Python int to C's ``intN_t`` / ``uintN_t`` (a public ``as_*`` function)."""
    ctype = f"{'' if signed else 'u'}int{bits}_t"
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)

    def cast(v: int) -> int:
        # A Python int already in range is its own cast (the common case: no call into arith).
        if type(v) is int and lo <= v <= hi:
            return v
        return wrap_int(v, bits, signed=signed)

    cast.__name__ = cast.__qualname__ = f"as_{'i' if signed else 'u'}{bits}"
    cast.__doc__ = (f"``({ctype})v``.\n\nArgs:\n    v: an integer.\n\nReturns:\n"
                    f"    The value a C ``{ctype}`` holds.\n")
    return cast


as_u32 = _c_cast(32, signed=False)
as_i32 = _c_cast(32, signed=True)
as_u8 = _c_cast(8, signed=False)


def c_array_field(values: Any, n: int, fill: Sequence[int]) -> list[int]:
    """The first ``n`` entries of a C array argument (missing entries from ``fill``).

    Args:
        values: a sequence or array of integers (``None`` is a NULL pointer).
        n: number of entries read; fill: defaults for the entries not given.

    Returns:
        ``n`` Python ints.

    Raises:
        MliError: BAD_FUNC_CFG for a NULL array.
    """
    if values is None:
        fail(Status.BAD_FUNC_CFG, "NULL array argument")
    if type(values) is list and set(map(type, values[:n])) <= _INT:
        vals = values[:n]  # a flat list of Python ints: what the conversion below would give
    else:
        vals = [int(v) for v in np.asarray(values).reshape(-1)[:n]]
    return vals + list(fill[len(vals):n])


def array_pointer(v: Any) -> int:
    """The C pointer of a per-axis quantisation field (0 = NULL, also for a per-tensor value).

    Args:
        v: the field's value (an array for per-axis parameters).

    Returns:
        The array's address, or 0.
    """
    return address(v) if isinstance(v, np.ndarray) else 0


def array_nbytes(v: Any) -> int:
    """Bytes of a per-axis quantisation array (0 for a per-tensor value).

    Args:
        v: the field's value.

    Returns:
        ``v.nbytes`` for an array, else 0.
    """
    return int(v.nbytes) if isinstance(v, np.ndarray) else 0


def check_data_movement(src: Tensor, cfg: Any, dst: Tensor) -> Any:
    """``mli_chk_data_movement``; returns the cfg with its fields in their C types.

    Args:
        src: source tensor; cfg: ``mli_mov_cfg_t`` (``None`` is NULL); dst: destination struct.

    Returns:
        The cfg with its fields in their C types (:func:`normalised_cfg`).

    Raises:
        MliError: BAD_TENSOR, NOT_ENGH_MEM, BAD_FUNC_CFG, SPEC_PARAM_MISMATCH or INCOMPATEBLE_TENSORS.
    """
    check_tensor(src)
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "NULL cfg")
    cfg = normalised_cfg(cfg)
    if dst is None:
        fail(Status.BAD_TENSOR, "NULL destination tensor")
    if src.el_type.is_sa and src.dim != -1:
        _check_per_axis(src, cfg, dst)
    if not tensors_not_overlapped(src, dst):
        fail(Status.INCOMPATEBLE_TENSORS, "source and destination buffers overlap")
    return cfg


def _check_per_axis(src: Tensor, cfg: Any, dst: Tensor) -> None:
    if src.dim < 0 or src.dim >= src.rank:
        fail(Status.BAD_TENSOR, f"per-axis quantisation dim {src.dim} outside rank {src.rank}")
    zp_in, sc_in, fb_in = array_pointer(src.zero_point), array_pointer(src.scale), array_pointer(src.scale_frac_bits)
    zp_out, sc_out, fb_out = array_pointer(dst.zero_point), array_pointer(dst.scale), array_pointer(dst.scale_frac_bits)
    bad = False
    if zp_out == zp_in:
        bad |= not (sc_out == sc_in and fb_out == fb_in)
    if zp_out != 0 and zp_out != zp_in:
        bad |= not (sc_out not in (0, sc_in) and fb_out not in (0, fb_in))
    if zp_out == 0:
        bad |= not (sc_out == 0 and fb_out == 0)
    for i in range(src.rank):
        lhs = as_u32(cfg.size[i] + cfg.offset[i])
        rhs = as_u32(int(src.shape[i]) + cfg.padding_pre[i] + cfg.padding_post[i])
        if lhs > rhs:
            fail(Status.BAD_FUNC_CFG, f"size + offset {lhs} larger than the padded input {rhs} in dim {i}")
        if as_u32(cfg.sub_sample_step[i]) == 0:
            fail(Status.BAD_FUNC_CFG, f"sub_sample_step[{i}] must be > 0")
        if as_u8(cfg.perm_dim[i]) >= src.rank:
            fail(Status.BAD_FUNC_CFG, f"perm_dim[{i}] = {cfg.perm_dim[i]} out of range")
    in_dim = src.dim
    out_dim = next((d for d in range(src.rank) if as_u8(cfg.perm_dim[d]) == in_dim), 0)
    if not bad and (zp_out == 0 or zp_out == zp_in):
        bad |= not (as_u32(cfg.size[in_dim]) in (0, int(src.shape[in_dim])) and cfg.offset[in_dim] == 0
                    and cfg.padding_pre[in_dim] == 0 and cfg.padding_post[in_dim] == 0
                    and cfg.sub_sample_step[in_dim] == 1 and cfg.dst_offset[out_dim] == 0)
    elif not bad:
        n = copy_size(src, cfg, in_dim)
        dst_size = ceil_div(n, as_u32(cfg.sub_sample_step[in_dim])) + as_u32(cfg.dst_offset[out_dim])
        bad |= not (array_nbytes(dst.zero_point) >= 2 * dst_size and array_nbytes(dst.scale) >= 2 * dst_size
                    and array_nbytes(dst.scale_frac_bits) >= dst_size)
    if bad:
        fail(Status.SPEC_PARAM_MISMATCH, "destination per-axis quantisation parameters are inconsistent "
                                         "with the source or too small")


def copy_size(src: Tensor, cfg: Any, d: int) -> int:
    """Elements taken along source dimension ``d`` (uint32 arithmetic, as C).

    Args:
        src: source tensor; cfg: a normalised cfg; d: the source dimension.

    Returns:
        The number of source elements taken (padding included).
    """
    size = as_u32(cfg.size[d])
    if size > 0:
        return size
    return as_u32(int(src.shape[d]) - as_u32(cfg.offset[d]) + as_u8(cfg.padding_pre[d]) + as_u8(cfg.padding_post[d]))


def normalised_cfg(cfg: Any) -> Any:
    """The cfg with every field as its C type holds it (so Python ints behave like the struct).

    Args:
        cfg: a ``mli_mov_cfg_t``.

    Returns:
        ``cfg`` itself when every field already is a list of 4 Python ints within its C type (the
        conversion would change nothing), else a new cfg of the same class with such lists.

    Raises:
        MliError: BAD_FUNC_CFG for a NULL array field.
    """
    if _canonical(cfg):
        return cfg

    def four(vals: Sequence[int], conv: Callable[[int], int], fill: Sequence[int]) -> list[int]:
        return [conv(v) for v in c_array_field(vals, MLI_MAX_RANK, fill)]

    return dataclasses.replace(
        cfg, offset=four(cfg.offset, as_u32, ZEROS4), size=four(cfg.size, as_u32, ZEROS4),
        sub_sample_step=four(cfg.sub_sample_step, as_u32, ONES4), dst_offset=four(cfg.dst_offset, as_u32, ZEROS4),
        dst_mem_stride=four(cfg.dst_mem_stride, as_i32, ZEROS4), perm_dim=four(cfg.perm_dim, as_u8, IDENTITY4),
        padding_pre=four(cfg.padding_pre, as_u8, ZEROS4), padding_post=four(cfg.padding_post, as_u8, ZEROS4))


_U32_FIELDS = operator.attrgetter("offset", "size", "sub_sample_step", "dst_offset")
_U8_FIELDS = operator.attrgetter("perm_dim", "padding_pre", "padding_post")
_INT = {int}


def _canonical(cfg: Any) -> bool:
    """``cfg`` is canonical (:func:`~pymli.checks.entry.canonical_mov_cfg`) with all ``MLI_MAX_RANK``
    entries of every array given."""
    try:
        lists = (*_U32_FIELDS(cfg), *_U8_FIELDS(cfg), cfg.dst_mem_stride)
    except AttributeError:
        return False
    return canonical_mov_cfg(cfg) and all(len(v) == MLI_MAX_RANK for v in lists)

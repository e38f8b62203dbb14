"""``mli_mov_api.h``: data movement (``mli_mov_*``) with MLI's DMA channel pool.

This models the host (no DMA) build: ``mli_mov_prepare`` copies the data at once, ``mli_mov_start``
marks the handle done and runs the completion callback synchronously. The channel pool and the
callback table are module globals, like the C library's statics; :func:`reset_dma_pool` puts them
back in the state of ``mli_mov_set_num_dma_ch(0, 16)`` with no callbacks (the state pymli starts in,
and the state every recorded golden call started from).

Copies are raw memory moves of the source element size: the destination takes the source element
type and parameters, never a conversion. The destination struct is filled as the C function does
(rank, element type, shape, mem_stride, quantisation), before its own validity check.

``mli_mov_tensor_sync`` and ``mli_mov_prepare`` are planned (:mod:`pymli.checks.entry`, "the memo"):
their checks and the destination's new fields are derived once per argument snapshot; a repeated
move with unchanged structs runs only the write (and, for the synchronous move, the pool and the
callback, which are no arguments). ``MovCfg`` and ``MovHandle`` take the guard's fast path: every
function that fills one computes all its fields before it assigns any.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..checks.move import (IDENTITY4, ONES4, ZEROS4, array_pointer, as_i32, as_u8, as_u32, c_array_field,
                           check_data_movement, copy_size)
from ..checks.tensor import check_tensor_private, fail
from ..errors import Status
from ..kernels.move import flat_extent, move_block, raw_elements
from ..tensor import MLI_MAX_RANK, Tensor, dense_strides, touch
from ._registry import c_enum, c_struct, mli_function
from .types import _PREFIX, _CEnum

__all__ = [
    "MovState", "MovHandle", "MovCfg", "MAX_DMA_CHAN", "reset_dma_pool",
    "mli_mov_tensor_sync", "mli_mov_prepare", "mli_mov_registercallback", "mli_mov_start",
    "mli_mov_isdone", "mli_mov_wait", "mli_mov_set_num_dma_ch", "mli_mov_acquire_handle",
    "mli_mov_release_handle", "mli_mov_cfg_for_copy", "mli_mov_cfg_for_slice", "mli_mov_cfg_for_concat",
    "mli_mov_cfg_for_subsample", "mli_mov_cfg_for_permute", "mli_mov_cfg_for_padding2d_chw",
    "mli_mov_cfg_for_padding2d_hwc", "mli_mov_cfg_all",
]

MAX_DMA_CHAN = 16

# Feature-map dimension indices of the padding helpers.
_CHW_H, _CHW_W = 1, 2
_HWC_H, _HWC_W = 0, 1


@c_enum("mli_mov_state")
class MovState(_CEnum):
    """``mli_mov_state``: life cycle of a transfer handle (C names ``MLI_MOV_STATE_*``)."""

    INVALID = 0
    OPEN = 1
    PREPARED = 2
    DMA_CONFIGURED = 3
    DMA_RUNNING = 4
    DONE = 5


_PREFIX[MovState] = "MLI_MOV_STATE_"


@c_struct("mli_mov_handle_t")
@dataclasses.dataclass
class MovHandle:
    """``mli_mov_handle_t``: DMA channels of a transfer and its state."""

    dma_ch: int = 0
    num_ch: int = 0
    state: MovState = MovState.INVALID


def _identity4() -> list[int]:
    return list(IDENTITY4)


def _ones4() -> list[int]:
    return list(ONES4)


def _zeros4() -> list[int]:
    return list(ZEROS4)


@c_struct("mli_mov_cfg_t")
@dataclasses.dataclass
class MovCfg:
    """``mli_mov_cfg_t``. The defaults describe a plain copy (as ``mli_mov_cfg_for_copy`` fills it).

    Attributes:
        offset, size: crop start and size per source dimension (uint32; size 0 = up to the end).
        sub_sample_step: keep every n-th element per source dimension (uint32).
        dst_offset: where the block starts in the destination, per destination dimension (uint32).
        dst_mem_stride: destination strides (int32; 0 = keep the destination's, or dense).
        perm_dim: source dimension of each destination dimension (uint8).
        padding_pre, padding_post: zero padding per source dimension (uint8).
    """

    offset: list[int] = dataclasses.field(default_factory=_zeros4)
    size: list[int] = dataclasses.field(default_factory=_zeros4)
    sub_sample_step: list[int] = dataclasses.field(default_factory=_ones4)
    dst_offset: list[int] = dataclasses.field(default_factory=_zeros4)
    dst_mem_stride: list[int] = dataclasses.field(default_factory=_zeros4)
    perm_dim: list[int] = dataclasses.field(default_factory=_identity4)
    padding_pre: list[int] = dataclasses.field(default_factory=_zeros4)
    padding_post: list[int] = dataclasses.field(default_factory=_zeros4)


# ---------------------------------------------------------------------------- global state
class _Pool:
    """The C library's static DMA channel pool and callback table."""

    NOT_USED, AVAILABLE, IN_USE = 0, 1, 2

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """All channels unused, no pool, no callbacks (the C statics before any call)."""
        self.base_channel = 0
        self.pool_size = 0
        self.status = [self.NOT_USED] * MAX_DMA_CHAN
        self.callbacks: list[tuple[Any, int]] = [(None, 0)] * MAX_DMA_CHAN

    def channel(self, i: int) -> int:
        # C reads past the 16-entry array here; pymli treats such channels as unusable.
        return self.status[i] if 0 <= i < MAX_DMA_CHAN else self.NOT_USED

    def set_channel(self, i: int, value: int) -> None:
        if 0 <= i < MAX_DMA_CHAN:
            self.status[i] = value


_POOL = _Pool()


def reset_dma_pool() -> None:
    """Restore the pool to ``mli_mov_set_num_dma_ch(0, 16)`` with no registered callbacks."""
    _POOL.clear()
    mli_mov_set_num_dma_ch(0, MAX_DMA_CHAN)


def _resets_pool(fn: Callable[..., Any]) -> Callable[..., Any]:
    # The golden runner restores library globals before each recorded call through this hook.
    fn.mli_reset_state = reset_dma_pool  # type: ignore[attr-defined]
    return fn


# ---------------------------------------------------------------------------- transfer
class _Move:
    """One checked move (``mli_mov_prepare`` once its checks have passed): the destination struct's new
    fields and how to write the data and per-axis parameters.

    It holds no data buffer (only the new field values): :meth:`write` reads the arguments' buffers
    when it runs, so a memoised move (see :mod:`pymli.checks.entry`) keeps no buffer alive. The blocks a strided or
    per-axis move computed while checking serve the first write only; later writes recompute them.
    """

    __slots__ = ("fields", "settled", "es", "n", "direct", "whole", "block", "block_args", "base", "write_size",
                 "dst_strides", "quant", "qblocks")

    def __init__(self, fields: dict[str, Any], es: int) -> None:
        self.fields = fields
        self.settled = False  # a write found every field in place (see set_fields)
        self.es = es
        self.n: int | None = None  # element count of the single dense copy, None for a strided move
        # The dense copy between two buffers of the same integer dtype (the element size), with no
        # per-axis writes: the arrays' own elements (the memo's snapshot keeps the same arrays).
        self.direct = False
        self.whole = False  # a direct copy of the whole source array into the whole destination array
        self.block: np.ndarray | None = None
        self.block_args: tuple[Any, ...] = ()
        self.base = 0
        self.write_size: list[int] = []
        self.dst_strides: list[int] = []
        self.quant: list[tuple[str, int, int, tuple[Any, ...]]] = []  # (field, pad value, start, move_block args)
        self.qblocks: list[np.ndarray] | None = None

    def write(self, src: Tensor, dst: Tensor) -> None:
        """Write the data, the per-axis parameters and the struct fields of ``dst`` (no check fails here)."""
        n = self.n
        if self.direct:
            d, s = dst.data, src.data
            if self.whole:
                d[...] = s  # NumPy copies through a temporary if the buffers overlap
            else:
                d[:n] = s[:n]
            self.set_fields(dst)
            return
        es = self.es
        s_el, d_el = _elements(src.data, es), _elements(dst.data, es)
        if s_el.dtype != d_el.dtype:
            s_el = s_el.view(d_el.dtype)  # signed / unsigned views of the same size: the bytes, no cast
        # The per-axis writes come first: the data is read before them (one pass when there are none).
        if n is not None:
            values = np.array(s_el[:n]) if self.quant else s_el[:n]
        else:
            values = self.block if self.block is not None else move_block(s_el, *self.block_args[0],
                                                                             **self.block_args[1])
            self.block = None
        if self.quant:
            qblocks = self.qblocks if self.qblocks is not None else [
                move_block(np.asarray(getattr(src, name)).reshape(-1), *args, bounds_check=True, pad_value=pad)
                for name, pad, _, args in self.quant]
            self.qblocks = None
            for (name, _, start, _), blk in zip(self.quant, qblocks):
                getattr(dst, name).reshape(-1)[start: start + blk.shape[0]] = blk
        if n is not None:
            d_el[:n] = values  # NumPy copies through a temporary if the buffers overlap
        elif values.size:
            it = d_el.itemsize
            view = np.lib.stride_tricks.as_strided(d_el[self.base:], shape=self.write_size,
                                                   strides=[x * it for x in self.dst_strides])
            view[...] = values
        self.set_fields(dst)

    def set_fields(self, dst: Tensor) -> None:
        """Give ``dst`` the new struct fields; a new change counter (:func:`touch`) only when one of them is
        another object than the field holds (a repeated move leaves the struct as the memo saw it).

        A move writes again only as the memo's kept plan, whose snapshot holds ``dst``'s change
        counter from before the first write: once a write found every field in place (the counter
        unchanged), a later write of the same plan finds them in place too, and is skipped.
        """
        if self.settled:
            return
        cur = vars(dst)
        fields = self.fields
        if any(map(operator.is_not, map(cur.get, fields), fields.values())):
            cur.update(fields)
            touch(dst)
        else:
            self.settled = True


def _plan_move(src: Tensor, cfg: MovCfg, dst: Tensor, reuse: bool = False) -> _Move:
    """The checks of ``mli_mov_prepare`` and the move they allow (nothing is written).

    ``reuse``: ``dst`` is the caller's own canonical struct (the guard's planned path): a new
    ``shape`` / ``mem_stride`` equal to the current list keeps that list object, so a repeated move
    leaves the struct as the memo's snapshot saw it.
    """
    cfg = check_data_movement(src, cfg, dst)
    rank = int(src.rank)
    if rank < 1:
        fail(Status.BAD_TENSOR, "data movement needs a tensor of rank >= 1")
    perm = cfg.perm_dim[:rank]
    step = cfg.sub_sample_step
    # C would read past the source struct's arrays (or divide by zero) here: refuse instead.
    if any(p >= rank for p in perm):
        fail(Status.BAD_FUNC_CFG, f"perm_dim {perm} out of range for rank {rank}")
    if any(step[p] == 0 for p in perm):
        fail(Status.BAD_FUNC_CFG, f"sub_sample_step {step[:rank]} has a zero step")

    src_shape = [int(x) for x in src.shape[:rank]]
    src_strides = src.strides()
    write_size = [as_u32(copy_size(src, cfg, p) + step[p] - 1) // step[p] for p in perm]
    dst_offset = cfg.dst_offset
    new_shape = [as_u32(w + dst_offset[i]) for i, w in enumerate(write_size)]
    old_ms = dst.mem_stride
    n_old = len(old_ms)

    # C fills the destination struct, then checks it. pymli collects the new fields and writes
    # nothing (struct, per-axis arrays or data) before every check has passed.
    fields: dict[str, Any] = {"rank": rank, "el_type": src.el_type, "shape": new_shape}
    es = src.el_type.size
    move = _Move(fields, es)
    _fill_quant(src, cfg, dst, move, perm, write_size)
    dms = cfg.dst_mem_stride
    strides = [0] * rank
    for i in range(rank - 1, -1, -1):
        if dms[i] != 0:
            strides[i] = dms[i]
        elif i < n_old and old_ms[i] != 0:
            strides[i] = int(old_ms[i])
        else:
            strides[i] = 1 if i == rank - 1 else as_i32(strides[i + 1] * new_shape[i + 1])
    fields["mem_stride"] = strides
    # check_tensor of the filled struct (its data pointer and capacity are the destination's).
    if dst.data is None:
        fail(Status.BAD_TENSOR, "NULL data pointer")
    check_tensor_private(new_shape, strides, rank, dst.capacity, es)
    _plan_data(move, src, cfg, dst, new_shape, strides, perm, src_shape, src_strides, write_size)
    if reuse:
        cur = vars(dst)
        for k in ("shape", "mem_stride"):
            c = cur.get(k)
            if type(c) is list and c == fields[k] and set(map(type, c)) <= _INT:
                fields[k] = c
    return move


_INT = {int}


def _fill_quant(src: Tensor, cfg: MovCfg, dst: Tensor, move: _Move, perm: list[int], write_size: list[int]) -> None:
    """Element parameters of the destination struct ``dst``, added to ``move.fields`` (per-axis arrays
    moved like the data, C's way), and the writes into the destination's per-axis arrays, made by
    ``move.write`` once every check has passed."""
    fields = move.fields
    if not (src.el_type.is_sa and src.dim != -1):
        fields.update(frac_bits=src.frac_bits, dim=src.dim, zero_point=src.zero_point, scale=src.scale,
                      scale_frac_bits=src.scale_frac_bits)
        return
    dim = dst.dim
    for d, p in enumerate(perm):
        if p == src.dim:
            dim = fields["dim"] = d
            break
    if array_pointer(dst.scale) != array_pointer(src.scale) and array_pointer(dst.scale) != 0:
        if not 0 <= dim < len(write_size):
            fail(Status.SPEC_PARAM_MISMATCH, "the quantisation axis is not a destination dimension")
        qd, qs = dim, src.dim
        n = write_size[qd]
        start = cfg.dst_offset[qd]
        args = ([int(src.shape[qs])], [1], [0], [cfg.offset[qs]], [cfg.sub_sample_step[qs]], [cfg.padding_pre[qs]], [n])
        blocks = []
        for name, pad in (("scale", 1), ("zero_point", 0), ("scale_frac_bits", 0)):
            s = np.asarray(getattr(src, name)).reshape(-1)
            try:
                blk = move_block(s, *args, bounds_check=True, pad_value=pad)
            except IndexError as e:
                fail(Status.BAD_TENSOR, f"per-axis {name}: {e}")
            d = getattr(dst, name)
            if start + n > d.shape[0]:
                fail(Status.NOT_ENGH_MEM, f"destination per-axis {name} holds {d.shape[0]} values, "
                                          f"{start + n} needed")
            blocks.append(blk)
            move.quant.append((name, pad, start, args))
        move.qblocks = blocks
        return
    fields.update(scale=src.scale, zero_point=src.zero_point, scale_frac_bits=src.scale_frac_bits)


def _plan_data(move: _Move, src: Tensor, cfg: MovCfg, dst: Tensor, dst_shape: list[int], dst_strides: list[int],
               perm: list[int], src_shape: list[int], src_strides: list[int], write_size: list[int]) -> None:
    """Check the data copy into ``dst`` (whose new shape and strides are given) and record it in ``move``."""
    rank = len(perm)
    es = move.es
    if es == 0:
        fail(Status.TYPE_MISMATCH, f"{src.el_type.c_name} has no container")
    s_el, d_el = _elements(src.data, es), _elements(dst.data, es)
    pre, post = cfg.padding_pre, cfg.padding_post
    no_padding = not any(pre[:rank]) and not any(post[:rank])
    # The C library moves a dense, unmodified tensor with one memcpy of the source's element
    # count. It tests "same shape" rather than "no offset", so a dst_offset that happens to restore
    # the source shape is ignored on this path: pymli does the same.
    single = no_padding and src_shape == dst_shape and src_strides == dst_strides and perm == _IDENTITY[rank] \
        and cfg.sub_sample_step[:rank] == _ONES[rank] and src_strides == dense_strides(src_shape)
    if single:
        n = math.prod(src_shape)
        if n > s_el.shape[0] or n > d_el.shape[0]:
            fail(Status.NOT_ENGH_MEM, f"copy of {n} elements exceeds a buffer")
        move.n = n
        move.direct = not move.quant and s_el is src.data and d_el is dst.data and s_el.dtype is d_el.dtype
        move.whole = move.direct and n == s_el.shape[0] == d_el.shape[0]
        return
    # Without padding the block is a view of the source, assigned at once (no intermediate copy).
    move.block_args = ((src_shape, src_strides, perm, list(cfg.offset), list(cfg.sub_sample_step), list(pre),
                        write_size), {"bounds_check": not no_padding, "copy": not no_padding or bool(move.quant)})
    if s_el.dtype != d_el.dtype:
        s_el = s_el.view(d_el.dtype)
    try:
        move.block = move_block(s_el, *move.block_args[0], **move.block_args[1])
    except IndexError as e:
        fail(Status.BAD_FUNC_CFG, str(e))
    base = sum(cfg.dst_offset[i] * dst_strides[i] for i in range(rank))
    mn, mx = flat_extent(base, write_size, dst_strides)
    if mn < 0 or mx >= d_el.shape[0]:
        fail(Status.NOT_ENGH_MEM, f"move writes elements {mn}..{mx} outside the destination buffer")
    move.base, move.write_size, move.dst_strides = base, write_size, dst_strides


_IDENTITY = [list(range(r)) for r in range(MLI_MAX_RANK + 1)]
_ONES = [[1] * r for r in range(MLI_MAX_RANK + 1)]


def _elements(buf: np.ndarray, es: int) -> np.ndarray:
    """``buf``'s memory as ``es``-byte raw elements (:func:`raw_elements`); an integer array of that
    element size is its own view (the same bytes, no new view needed)."""
    if type(buf) is np.ndarray and buf.ndim == 1 and buf.dtype.itemsize == es and buf.dtype.kind in "iu" \
            and buf.flags.c_contiguous:
        return buf
    try:
        return raw_elements(buf, es)
    except ValueError as e:
        fail(Status.BAD_TENSOR, str(e))


def _planned(plan: Callable[..., Callable[..., Any]]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a capi function its planner (checks, then the function that writes; see
    :mod:`pymli.checks.entry`, "the memo")."""
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__mli_plan__ = plan  # type: ignore[attr-defined]
        return fn
    return deco


# ---------------------------------------------------------------------------- synchronous API
def _sync_plan(src: Tensor, cfg: MovCfg, dst: Tensor, reuse: bool = True) -> Callable[..., Status]:
    """The checks of ``mli_mov_tensor_sync`` (a free channel block, then ``mli_mov_prepare``'s); returns
    the function of the same arguments that moves (the pool is read again there: it is no argument)."""
    if _free_block(0) is None:
        fail(Status.NOT_ENGH_MEM, "no block of 0 free DMA channels in the pool")
    move = _plan_move(src, cfg, dst, reuse)

    def run(src: Tensor, cfg: MovCfg, dst: Tensor) -> Status:
        # acquire (0 channels: the pool's base channel, none taken), prepare, start, wait, release
        # on a handle of its own, which no one else sees: only the pool and the callback matter.
        ch = _free_block(0)
        if ch is None or not 0 <= ch < MAX_DMA_CHAN:
            move.block = move.qblocks = None  # a kept plan holds no view of the source
        if ch is None:
            fail(Status.NOT_ENGH_MEM, "no block of 0 free DMA channels in the pool")
        if not 0 <= ch < MAX_DMA_CHAN:  # mli_mov_start's check, made before anything is written
            fail(Status.ARGUMENT_ERROR, f"handle channel {ch} outside 0..{MAX_DMA_CHAN - 1}")
        move.write(src, dst)
        cb, cookie = _POOL.callbacks[ch]
        if cb is not None and callable(cb):
            cb(cookie)
        return Status.OK

    if not move.whole:
        return run

    def run_whole(src: Tensor, cfg: MovCfg, dst: Tensor) -> Status:
        # run for the copy of the whole source array into the whole destination array (move.write's
        # first branch), inlined: a pool without the base channel takes run, which fails as it does.
        ch = _POOL.base_channel
        if _POOL.pool_size <= 0 or not 0 <= ch < MAX_DMA_CHAN:
            return run(src, cfg, dst)
        dst.data[...] = src.data  # NumPy copies through a temporary if the buffers overlap
        if not move.settled:
            move.set_fields(dst)
        cb, cookie = _POOL.callbacks[ch]
        if cb is not None and callable(cb):
            cb(cookie)
        return Status.OK
    return run_whole


@_resets_pool
@mli_function()
@_planned(_sync_plan)
def mli_mov_tensor_sync(src: Tensor, cfg: MovCfg, dst: Tensor) -> Status:
    """Copy ``src`` into ``dst`` as ``cfg`` describes and wait for the end (blocking move).

    Args:
        src: source tensor (any element type).
        cfg: the transformation (crop, sub-sampling, permutation, padding, destination placement).
        dst: destination: a data buffer with its capacity; every other field is filled here.

    Returns:
        ``Status.OK``.

    Raises:
        MliError: as the C library's checked build, or NOT_ENGH_MEM when no DMA channel is free.
    """
    return _sync_plan(src, cfg, dst, reuse=False)(src, cfg, dst)


# ---------------------------------------------------------------------------- asynchronous API
def _prepare_plan(h: MovHandle, src: Tensor, cfg: MovCfg, dst: Tensor, reuse: bool = True) -> Callable[..., Status]:
    """The checks of ``mli_mov_prepare``; returns the function of the same arguments that moves."""
    move = _plan_move(src, cfg, dst, reuse)

    def run(h: MovHandle, src: Tensor, cfg: MovCfg, dst: Tensor) -> Status:
        h.state = MovState.PREPARED
        move.write(src, dst)
        return Status.OK
    return run


@_resets_pool
@mli_function()
@_planned(_prepare_plan)
def mli_mov_prepare(h: MovHandle, src: Tensor, cfg: MovCfg, dst: Tensor) -> Status:
    """Prepare (on this host build: perform) the move of ``src`` into ``dst``; ``h`` becomes PREPARED."""
    return _prepare_plan(h, src, cfg, dst, reuse=False)(h, src, cfg, dst)


@_resets_pool
@mli_function()
def mli_mov_registercallback(h: MovHandle, cb: Callable[[int], Any] | None, cookie: int) -> Status:
    """Register ``cb(cookie)`` to run when the transfer on ``h``'s first channel completes.

    ``cb`` may be ``None`` (no callback). It stays registered for that channel, as in C.
    """
    if not 0 <= int(h.dma_ch) < MAX_DMA_CHAN:
        fail(Status.ARGUMENT_ERROR, f"handle channel {h.dma_ch} outside 0..{MAX_DMA_CHAN - 1}")
    _POOL.callbacks[int(h.dma_ch)] = (cb, as_i32(cookie))
    return Status.OK


@_resets_pool
@mli_function()
def mli_mov_start(h: MovHandle, src: Tensor, cfg: MovCfg, dst: Tensor) -> Status:
    """Start the prepared transfer: without DMA it is already done; the callback runs now."""
    _start(h)
    return Status.OK


def _check_channel(h: MovHandle) -> None:
    if not 0 <= int(h.dma_ch) < MAX_DMA_CHAN:
        fail(Status.ARGUMENT_ERROR, f"handle channel {h.dma_ch} outside 0..{MAX_DMA_CHAN - 1}")


def _start(h: MovHandle) -> None:
    """Body of ``mli_mov_start``."""
    _check_channel(h)
    cb, cookie = _POOL.callbacks[int(h.dma_ch)]
    before = h.state
    h.state = MovState.DONE
    if cb is not None and callable(cb):
        try:
            cb(cookie)
        except BaseException:
            h.state = before  # a failing callback fails the call: the handle keeps its state
            raise


@_resets_pool
@mli_function()
def mli_mov_isdone(h: MovHandle) -> bool:
    """True once the transfer on ``h`` has completed."""
    return int(h.state) == MovState.DONE


@_resets_pool
@mli_function()
def mli_mov_wait(h: MovHandle) -> Status:
    """Wait for the transfer on ``h`` to complete.

    Raises:
        MliError: ARGUMENT_ERROR if the transfer was never started (C would wait forever).
    """
    _wait(h)
    return Status.OK


def _wait(h: MovHandle) -> None:
    """Body of ``mli_mov_wait``."""
    if int(h.state) != MovState.DONE:
        fail(Status.ARGUMENT_ERROR, f"transfer in state {MovState(h.state).c_name} never completes without DMA")


# ---------------------------------------------------------------------------- DMA resources
@_resets_pool
@mli_function()
def mli_mov_set_num_dma_ch(ch_offset: int, num_ch: int) -> Status:
    """Give channels ``ch_offset .. ch_offset + num_ch - 1`` to the pool (others keep their status)."""
    _POOL.base_channel = int(ch_offset)
    _POOL.pool_size = int(num_ch)
    for i in range(int(num_ch)):
        _POOL.set_channel(i + int(ch_offset), _Pool.AVAILABLE)
    return Status.OK


@_resets_pool
@mli_function()
def mli_mov_acquire_handle(num_ch: int, h: MovHandle) -> Status:
    """Take the first block of ``num_ch`` adjacent available channels and open ``h`` on it.

    Raises:
        MliError: NOT_ENGH_MEM if no such block starts inside the pool (``h`` is left unchanged).
    """
    _acquire(int(num_ch), h)
    return Status.OK


def _free_block(num_ch: int) -> int | None:
    """First channel of the first block of ``num_ch`` adjacent available channels in the pool, or None."""
    if num_ch == 0:  # the empty block: the base channel of a non-empty pool
        return _POOL.base_channel if _POOL.pool_size > 0 else None
    for i in range(_POOL.base_channel, _POOL.base_channel + _POOL.pool_size):
        if all(_POOL.channel(i + k) == _Pool.AVAILABLE for k in range(num_ch)):
            return i
    return None


def _acquire(num_ch: int, h: MovHandle) -> None:
    """Body of ``mli_mov_acquire_handle``."""
    i = _free_block(num_ch)
    if i is None:
        fail(Status.NOT_ENGH_MEM, f"no block of {num_ch} free DMA channels in the pool")
    h.state = MovState.OPEN
    h.dma_ch = i
    h.num_ch = num_ch
    for k in range(num_ch):
        _POOL.set_channel(i + k, _Pool.IN_USE)


@_resets_pool
@mli_function()
def mli_mov_release_handle(h: MovHandle) -> Status:
    """Return ``h``'s channels to the pool and invalidate it."""
    _release(h)
    return Status.OK


def _release(h: MovHandle) -> None:
    """Body of ``mli_mov_release_handle``."""
    for k in range(int(h.num_ch)):
        _POOL.set_channel(int(h.dma_ch) + k, _Pool.AVAILABLE)
    h.state = MovState.INVALID
    h.dma_ch = 0
    h.num_ch = 0


# ---------------------------------------------------------------------------- cfg builders
# Each builder computes every field before it assigns any: a failure (a NULL array) leaves the
# caller's cfg untouched whether or not the entry guard gave the function a shadow.
def _four(values: Any, conv: Callable[[int], int], fill: Sequence[int]) -> list[int]:
    return [conv(v) for v in c_array_field(values, MLI_MAX_RANK, fill)]


def _fill(cfg: MovCfg, **fields: list[int]) -> None:
    """Assign the fields of a freshly built cfg: the plain-copy defaults, then ``fields``."""
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "NULL cfg")
    new = {"offset": _zeros4(), "size": _zeros4(), "sub_sample_step": _ones4(), "dst_offset": _zeros4(),
           "dst_mem_stride": _zeros4(), "perm_dim": _identity4(), "padding_pre": _zeros4(), "padding_post": _zeros4()}
    new.update(fields)
    for k, v in new.items():
        setattr(cfg, k, v)


def _pad2d(h_dim: int, w_dim: int, padleft: int, padright: int, padtop: int,
           padbot: int) -> dict[str, list[int]]:
    pre, post = _zeros4(), _zeros4()
    pre[w_dim], post[w_dim], pre[h_dim], post[h_dim] = as_u8(padleft), as_u8(padright), as_u8(padtop), as_u8(padbot)
    return {"padding_pre": pre, "padding_post": post}


@_resets_pool
@mli_function()
def mli_mov_cfg_for_copy(cfg: MovCfg) -> Status:
    """Fill ``cfg`` for a plain copy."""
    _fill(cfg)
    return Status.OK


@_resets_pool
@mli_function()
def mli_mov_cfg_for_slice(cfg: MovCfg, offsets: Sequence[int], sizes: Sequence[int],
                          dst_mem_stride: Sequence[int]) -> Status:
    """Fill ``cfg`` to copy the block ``offsets .. offsets + sizes`` (size 0: to the end)."""
    _fill(cfg, offset=_four(offsets, as_u32, ZEROS4), size=_four(sizes, as_u32, ZEROS4),
          dst_mem_stride=_four(dst_mem_stride, as_i32, ZEROS4))
    return Status.OK


@_resets_pool
@mli_function()
def mli_mov_cfg_for_concat(cfg: MovCfg, dst_offsets: Sequence[int], dst_mem_stride: Sequence[int]) -> Status:
    """Fill ``cfg`` to copy a whole tensor to position ``dst_offsets`` of a larger one."""
    _fill(cfg, dst_offset=_four(dst_offsets, as_u32, ZEROS4), dst_mem_stride=_four(dst_mem_stride, as_i32, ZEROS4))
    return Status.OK


@_resets_pool
@mli_function()
def mli_mov_cfg_for_subsample(cfg: MovCfg, sub_sample_step: Sequence[int], dst_mem_stride: Sequence[int]) -> Status:
    """Fill ``cfg`` to keep every ``sub_sample_step[d]``-th element of each dimension."""
    _fill(cfg, sub_sample_step=_four(sub_sample_step, as_u32, ONES4),
          dst_mem_stride=_four(dst_mem_stride, as_i32, ZEROS4))
    return Status.OK


@_resets_pool
@mli_function()
def mli_mov_cfg_for_permute(cfg: MovCfg, perm_dim: Sequence[int]) -> Status:
    """Fill ``cfg`` to reorder dimensions (``perm_dim[i]`` = source dimension of output dimension i)."""
    _fill(cfg, perm_dim=_four(perm_dim, as_u8, IDENTITY4))
    return Status.OK


def _cfg_for_padding2d(name: str, h: int, w: int, layout: str) -> Callable[..., Status]:
    """``mli_mov_cfg_for_padding2d_<layout>``: the padding goes to dimensions ``h`` and ``w``."""

    def fill(cfg: MovCfg, padleft: int, padright: int, padtop: int, padbot: int,
             dst_mem_stride: Sequence[int]) -> Status:
        _fill(cfg, dst_mem_stride=_four(dst_mem_stride, as_i32, ZEROS4), **_pad2d(h, w, padleft, padright, padtop, padbot))
        return Status.OK

    fill.__name__ = fill.__qualname__ = name
    fill.__doc__ = f"Fill ``cfg`` to zero-pad a feature map in {layout} layout (H = dim {h}, W = dim {w})."
    return _resets_pool(mli_function(name)(fill))


mli_mov_cfg_for_padding2d_chw = _cfg_for_padding2d("mli_mov_cfg_for_padding2d_chw", _CHW_H, _CHW_W, "CHW")
mli_mov_cfg_for_padding2d_hwc = _cfg_for_padding2d("mli_mov_cfg_for_padding2d_hwc", _HWC_H, _HWC_W, "HWC")


@_resets_pool
@mli_function()
def mli_mov_cfg_all(cfg: MovCfg, offsets: Sequence[int], sizes: Sequence[int], subsample_step: Sequence[int],
                    dst_offsets: Sequence[int], dst_mem_stride: Sequence[int], perm_dim: Sequence[int],
                    padleft: int, padright: int, padtop: int, padbot: int) -> Status:
    """Fill every field of ``cfg``; the padding goes to the H/W dimensions of an HWC map (0 and 1)."""
    _fill(cfg, offset=_four(offsets, as_u32, ZEROS4), size=_four(sizes, as_u32, ZEROS4),
          dst_mem_stride=_four(dst_mem_stride, as_i32, ZEROS4), dst_offset=_four(dst_offsets, as_u32, ZEROS4),
          sub_sample_step=_four(subsample_step, as_u32, ONES4), perm_dim=_four(perm_dim, as_u8, IDENTITY4),
          **_pad2d(_HWC_H, _HWC_W, padleft, padright, padtop, padbot))
    return Status.OK


reset_dma_pool()

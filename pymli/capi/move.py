"""``mli_mov_api.h``: data movement (``mli_mov_*``) with MLI's DMA channel pool.

This models the host (no DMA) build: ``mli_mov_prepare`` copies the data at once, ``mli_mov_start``
marks the handle done and runs the completion callback synchronously. The channel pool and the
callback table are module globals, like the C library's statics; :func:`reset_dma_pool` puts them
back in the state of ``mli_mov_set_num_dma_ch(0, 16)`` with no callbacks (the state pymli starts in,
and the state every recorded golden call started from).

Copies are raw memory moves of the source element size: the destination takes the source element
type and parameters, never a conversion. The destination struct is filled as the C function does
(rank, element type, shape, mem_stride, quantisation), before its own validity check.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..checks.move import (IDENTITY4, ONES4, ZEROS4, array_pointer, as_i32, as_u8, as_u32, c_array_field,
                           check_data_movement, copy_size)
from ..checks.tensor import check_tensor, fail
from ..errors import Status
from ..kernels.move import flat_extent, move_block, raw_elements
from ..tensor import MLI_MAX_RANK, Tensor
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


# ---------------------------------------------------------------------------- helpers
def _at(lst: Sequence[int], i: int) -> int:
    return int(lst[i]) if i < len(lst) else 0


# ---------------------------------------------------------------------------- checks


# ---------------------------------------------------------------------------- transfer
_TENSOR_FIELDS = tuple(f.name for f in dataclasses.fields(Tensor))


def _prepare(h: MovHandle, src: Tensor, cfg: MovCfg, dst: Tensor) -> None:
    """Body of ``mli_mov_prepare``: checks, fill the destination struct, copy the data."""
    cfg = check_data_movement(src, cfg, dst)
    rank = int(src.rank)
    if rank < 1:
        fail(Status.BAD_TENSOR, "data movement needs a tensor of rank >= 1")
    perm = cfg.perm_dim[:rank]
    # C would read past the source struct's arrays (or divide by zero) here: refuse instead.
    if any(p >= rank for p in perm):
        fail(Status.BAD_FUNC_CFG, f"perm_dim {perm} out of range for rank {rank}")
    if any(cfg.sub_sample_step[p] == 0 for p in perm):
        fail(Status.BAD_FUNC_CFG, f"sub_sample_step {cfg.sub_sample_step[:rank]} has a zero step")

    src_shape = [int(s) for s in src.shape[:rank]]
    src_strides = [int(s) for s in src.strides()]
    sizes = [copy_size(src, cfg, p) for p in perm]
    write_size = [as_u32(n + cfg.sub_sample_step[p] - 1) // cfg.sub_sample_step[p] for n, p in zip(sizes, perm)]
    new_shape = [as_u32(w + cfg.dst_offset[i]) for i, w in enumerate(write_size)]
    old_strides = [_at(dst.mem_stride, i) for i in range(rank)]

    # C fills the destination struct, then checks it. pymli fills a copy and writes nothing (struct,
    # per-axis arrays or data) before every check has passed.
    new = dataclasses.replace(dst)
    new.rank = rank
    new.el_type = src.el_type
    new.shape = new_shape
    quant_writes = _fill_quant(src, cfg, new, perm, write_size)
    strides = [0] * rank
    for i in range(rank - 1, -1, -1):
        if cfg.dst_mem_stride[i] != 0:
            strides[i] = cfg.dst_mem_stride[i]
        elif old_strides[i] != 0:
            strides[i] = old_strides[i]
        else:
            strides[i] = 1 if i == rank - 1 else as_i32(strides[i + 1] * new_shape[i + 1])
    new.mem_stride = strides
    check_tensor(new)
    write_data = _copy_data(src, cfg, new, perm, src_shape, src_strides, write_size, snapshot=bool(quant_writes))
    h.state = MovState.PREPARED
    for arr, start, blk in quant_writes:
        arr.reshape(-1)[start: start + blk.shape[0]] = blk
    write_data()
    for name in _TENSOR_FIELDS:
        setattr(dst, name, getattr(new, name))


def _fill_quant(src: Tensor, cfg: MovCfg, dst: Tensor, perm: list[int],
                write_size: list[int]) -> list[tuple[np.ndarray, int, np.ndarray]]:
    """Element parameters of the destination struct ``dst`` (per-axis arrays moved like the data,
    C's way). Returns the writes into the destination's per-axis arrays (array, start, values),
    to be made once every check has passed."""
    if not (src.el_type.is_sa and src.dim != -1):
        dst.frac_bits = src.frac_bits
        dst.dim = src.dim
        dst.zero_point, dst.scale, dst.scale_frac_bits = src.zero_point, src.scale, src.scale_frac_bits
        return []
    for d, p in enumerate(perm):
        if p == src.dim:
            dst.dim = d
            break
    if array_pointer(dst.scale) != array_pointer(src.scale) and array_pointer(dst.scale) != 0:
        if not 0 <= dst.dim < len(write_size):
            fail(Status.SPEC_PARAM_MISMATCH, "the quantisation axis is not a destination dimension")
        qd, qs = dst.dim, src.dim
        n = write_size[qd]
        blocks = []
        for name, pad in (("scale", 1), ("zero_point", 0), ("scale_frac_bits", 0)):
            s = np.asarray(getattr(src, name)).reshape(-1)
            try:
                blk = move_block(s, [int(src.shape[qs])], [1], [0], [cfg.offset[qs]], [cfg.sub_sample_step[qs]],
                                 [cfg.padding_pre[qs]], [n], bounds_check=True, pad_value=pad)
            except IndexError as e:
                fail(Status.BAD_TENSOR, f"per-axis {name}: {e}")
            d = getattr(dst, name)
            if cfg.dst_offset[qd] + n > d.shape[0]:
                fail(Status.NOT_ENGH_MEM, f"destination per-axis {name} holds {d.shape[0]} values, "
                                          f"{cfg.dst_offset[qd] + n} needed")
            blocks.append((d, cfg.dst_offset[qd], blk))
        return blocks
    dst.scale, dst.zero_point, dst.scale_frac_bits = src.scale, src.zero_point, src.scale_frac_bits
    return []


def _copy_data(src: Tensor, cfg: MovCfg, dst: Tensor, perm: list[int], src_shape: list[int],
               src_strides: list[int], write_size: list[int], *, snapshot: bool) -> Callable[[], None]:
    """Check and plan the data copy into ``dst``; returns the function that performs it.

    ``snapshot``: other writes (the per-axis parameters) come first, so the dense copy reads the
    source now; otherwise it reads it when it writes (one pass over the data, not two).
    """
    rank = len(perm)
    es = src.el_type.size
    if es == 0:
        fail(Status.TYPE_MISMATCH, f"{src.el_type.c_name} has no container")
    try:
        s_el = raw_elements(src.data, es)
        d_el = raw_elements(dst.data, es)
    except ValueError as e:
        fail(Status.BAD_TENSOR, str(e))
    no_padding = all(cfg.padding_pre[i] == 0 and cfg.padding_post[i] == 0 for i in range(rank))
    # The C library moves a dense, unmodified tensor with one memcpy of the source's element
    # count. It tests "same shape" rather than "no offset", so a dst_offset that happens to restore
    # the source shape is ignored on this path: pymli does the same.
    dense = 1
    single = True
    for i in range(rank - 1, -1, -1):
        single &= src_strides[i] == dense and dst.mem_stride[i] == dense and src_shape[i] == dst.shape[i]
        single &= no_padding and perm[i] == i and cfg.sub_sample_step[i] == 1
        dense *= src_shape[i]
    if single:
        n = math.prod(src_shape)
        if n > s_el.shape[0] or n > d_el.shape[0]:
            fail(Status.NOT_ENGH_MEM, f"copy of {n} elements exceeds a buffer")
        values = np.array(s_el[:n]) if snapshot else s_el[:n]

        def write_dense() -> None:
            d_el[:n] = values  # NumPy copies through a temporary if the buffers overlap
        return write_dense
    try:
        block = move_block(s_el, src_shape, src_strides, perm, cfg.offset, cfg.sub_sample_step, cfg.padding_pre,
                           write_size, bounds_check=not no_padding)
    except IndexError as e:
        fail(Status.BAD_FUNC_CFG, str(e))
    dst_strides = [int(s) for s in dst.mem_stride[:rank]]
    base = sum(cfg.dst_offset[i] * dst_strides[i] for i in range(rank))
    mn, mx = flat_extent(base, write_size, dst_strides)
    if mn < 0 or mx >= d_el.shape[0]:
        fail(Status.NOT_ENGH_MEM, f"move writes elements {mn}..{mx} outside the destination buffer")

    def write_block() -> None:
        if block.size:
            it = d_el.itemsize
            view = np.lib.stride_tricks.as_strided(d_el[base:], shape=write_size, strides=[s * it for s in dst_strides])
            view[...] = block
    return write_block


# ---------------------------------------------------------------------------- synchronous API
@_resets_pool
@mli_function()
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
    # The arguments are normalised once, here: the steps run the public functions' bodies directly.
    h = MovHandle()
    _acquire(0, h)
    try:
        _prepare(h, src, cfg, dst)
        _start(h)
        _wait(h)
    finally:
        _release(h)
    return Status.OK


# ---------------------------------------------------------------------------- asynchronous API
@_resets_pool
@mli_function()
def mli_mov_prepare(h: MovHandle, src: Tensor, cfg: MovCfg, dst: Tensor) -> Status:
    """Prepare (on this host build: perform) the move of ``src`` into ``dst``; ``h`` becomes PREPARED."""
    _prepare(h, src, cfg, dst)
    return Status.OK


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


def _start(h: MovHandle) -> None:
    """Body of ``mli_mov_start``."""
    if not 0 <= int(h.dma_ch) < MAX_DMA_CHAN:
        fail(Status.ARGUMENT_ERROR, f"handle channel {h.dma_ch} outside 0..{MAX_DMA_CHAN - 1}")
    h.state = MovState.DONE
    cb, cookie = _POOL.callbacks[int(h.dma_ch)]
    if cb is not None and callable(cb):
        cb(cookie)


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


def _acquire(num_ch: int, h: MovHandle) -> None:
    """Body of ``mli_mov_acquire_handle``."""
    for i in range(_POOL.base_channel, _POOL.base_channel + _POOL.pool_size):
        if all(_POOL.channel(i + k) == _Pool.AVAILABLE for k in range(num_ch)):
            h.state = MovState.OPEN
            h.dma_ch = i
            h.num_ch = num_ch
            for k in range(num_ch):
                _POOL.set_channel(i + k, _Pool.IN_USE)
            return
    fail(Status.NOT_ENGH_MEM, f"no block of {num_ch} free DMA channels in the pool")


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
def _reset_cfg(cfg: MovCfg, perm: Sequence[int] | None = None) -> None:
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "NULL cfg")
    cfg.offset, cfg.size, cfg.dst_offset, cfg.dst_mem_stride = _zeros4(), _zeros4(), _zeros4(), _zeros4()
    cfg.sub_sample_step = _ones4()
    cfg.perm_dim = _identity4() if perm is None else [as_u8(v) for v in c_array_field(perm, MLI_MAX_RANK, _identity4())]
    cfg.padding_pre, cfg.padding_post = _zeros4(), _zeros4()


def _set(cfg: MovCfg, name: str, values: Any, conv: Callable[[int], int], fill: Sequence[int]) -> None:
    setattr(cfg, name, [conv(v) for v in c_array_field(values, MLI_MAX_RANK, fill)])


def _set_pad2d(cfg: MovCfg, h_dim: int, w_dim: int, padleft: int, padright: int, padtop: int, padbot: int) -> None:
    cfg.padding_pre[w_dim] = as_u8(padleft)
    cfg.padding_post[w_dim] = as_u8(padright)
    cfg.padding_pre[h_dim] = as_u8(padtop)
    cfg.padding_post[h_dim] = as_u8(padbot)


@_resets_pool
@mli_function()
def mli_mov_cfg_for_copy(cfg: MovCfg) -> Status:
    """Fill ``cfg`` for a plain copy."""
    _reset_cfg(cfg)
    return Status.OK


@_resets_pool
@mli_function()
def mli_mov_cfg_for_slice(cfg: MovCfg, offsets: Sequence[int], sizes: Sequence[int],
                          dst_mem_stride: Sequence[int]) -> Status:
    """Fill ``cfg`` to copy the block ``offsets .. offsets + sizes`` (size 0: to the end)."""
    _reset_cfg(cfg)
    _set(cfg, "offset", offsets, as_u32, _zeros4())
    _set(cfg, "size", sizes, as_u32, _zeros4())
    _set(cfg, "dst_mem_stride", dst_mem_stride, as_i32, _zeros4())
    return Status.OK


@_resets_pool
@mli_function()
def mli_mov_cfg_for_concat(cfg: MovCfg, dst_offsets: Sequence[int], dst_mem_stride: Sequence[int]) -> Status:
    """Fill ``cfg`` to copy a whole tensor to position ``dst_offsets`` of a larger one."""
    _reset_cfg(cfg)
    _set(cfg, "dst_offset", dst_offsets, as_u32, _zeros4())
    _set(cfg, "dst_mem_stride", dst_mem_stride, as_i32, _zeros4())
    return Status.OK


@_resets_pool
@mli_function()
def mli_mov_cfg_for_subsample(cfg: MovCfg, sub_sample_step: Sequence[int], dst_mem_stride: Sequence[int]) -> Status:
    """Fill ``cfg`` to keep every ``sub_sample_step[d]``-th element of each dimension."""
    _reset_cfg(cfg)
    _set(cfg, "sub_sample_step", sub_sample_step, as_u32, _ones4())
    _set(cfg, "dst_mem_stride", dst_mem_stride, as_i32, _zeros4())
    return Status.OK


@_resets_pool
@mli_function()
def mli_mov_cfg_for_permute(cfg: MovCfg, perm_dim: Sequence[int]) -> Status:
    """Fill ``cfg`` to reorder dimensions (``perm_dim[i]`` = source dimension of output dimension i)."""
    _reset_cfg(cfg, perm_dim)
    return Status.OK


@_resets_pool
@mli_function()
def mli_mov_cfg_for_padding2d_chw(cfg: MovCfg, padleft: int, padright: int, padtop: int, padbot: int,
                                  dst_mem_stride: Sequence[int]) -> Status:
    """Fill ``cfg`` to zero-pad a CHW feature map (H = dim 1, W = dim 2)."""
    _reset_cfg(cfg)
    _set(cfg, "dst_mem_stride", dst_mem_stride, as_i32, _zeros4())
    _set_pad2d(cfg, _CHW_H, _CHW_W, padleft, padright, padtop, padbot)
    return Status.OK


@_resets_pool
@mli_function()
def mli_mov_cfg_for_padding2d_hwc(cfg: MovCfg, padleft: int, padright: int, padtop: int, padbot: int,
                                  dst_mem_stride: Sequence[int]) -> Status:
    """Fill ``cfg`` to zero-pad an HWC feature map (H = dim 0, W = dim 1)."""
    _reset_cfg(cfg)
    _set(cfg, "dst_mem_stride", dst_mem_stride, as_i32, _zeros4())
    _set_pad2d(cfg, _HWC_H, _HWC_W, padleft, padright, padtop, padbot)
    return Status.OK


@_resets_pool
@mli_function()
def mli_mov_cfg_all(cfg: MovCfg, offsets: Sequence[int], sizes: Sequence[int], subsample_step: Sequence[int],
                    dst_offsets: Sequence[int], dst_mem_stride: Sequence[int], perm_dim: Sequence[int],
                    padleft: int, padright: int, padtop: int, padbot: int) -> Status:
    """Fill every field of ``cfg``; the padding goes to the H/W dimensions of an HWC map (0 and 1)."""
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "NULL cfg")
    cfg.padding_pre, cfg.padding_post = _zeros4(), _zeros4()
    _set(cfg, "offset", offsets, as_u32, _zeros4())
    _set(cfg, "size", sizes, as_u32, _zeros4())
    _set(cfg, "dst_mem_stride", dst_mem_stride, as_i32, _zeros4())
    _set(cfg, "dst_offset", dst_offsets, as_u32, _zeros4())
    _set(cfg, "sub_sample_step", subsample_step, as_u32, _ones4())
    _set(cfg, "perm_dim", perm_dim, as_u8, _identity4())
    _set_pad2d(cfg, _HWC_H, _HWC_W, padleft, padright, padtop, padbot)
    return Status.OK


reset_dma_pool()

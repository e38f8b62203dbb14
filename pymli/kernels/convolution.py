"""2-D convolutions of MLI (HWC feature maps, HWCN / HW1N weights) as pure NumPy functions.

Covers ``conv2d``, ``depthwise_conv2d``, ``group_conv2d`` and ``transpose_conv2d`` of
``kernels/convolution`` for the three type combinations (fx16, fx16 x fx8 weights, sa8 x sa8 + sa32
bias). Every output is the C reference's value bit for bit:

* Only the taps that fall on input pixels are accumulated (MLI computes a "valid area" for each
  output position instead of reading padded values). The input is centred on its zero point and
  padded with zeros, which gives exactly the C sum ``sum_valid((x - in_zp) * w)``.
* Dot products are computed as an im2col matrix product in float32 or float64 when the bound
  ``K * max|x| * max|w|`` (K = taps x channels) proves every partial sum is an integer below
  2**24 (float32) or 2**53 (float64), whatever the BLAS summation order; otherwise in int64.
  A product that needs float64 is cut along K into exact float32 products when each holds at
  least :data:`F32_CHUNK_MIN` terms (float64 runs at half the rate). A 3x3 stride-1 conv2d with
  enough channels takes Winograd F(2x2, 3x3) instead (16 float32 products, 2.25x fewer
  multiply-adds) when the weights' transformed sums prove every partial sum exact in float32
  (:func:`_winograd_blocks`).
* With the optional JIT on an x86 CPU with VNNI, AVX-512 or AVX2, conv2d, group conv2d and
  transpose conv2d take the integer products of :mod:`pymli.kernels._jit_conv` instead (``vpdpbusd``
  or ``vpmaddwd`` straight from the padded input, no im2col copy; sa8 with VNNI at ~4x the float32
  GEMM's rate; fx16 x fx8, and fx16 with its weights split into bytes), see :func:`_int_applies`
  and :func:`_conv_int`.
* The accumulator width of the C kernel (32-bit wrap for sa8 and fx16 x fx8, int64 for fx16)
  and the bias / requantisation steps come from :mod:`pymli.arith.requant`.
* Every kernel also takes a batch, x of shape (B, H, W, C): one padded array and one pass for all
  samples, each sample's output bit-identical to a call on it alone.
* Large calls are cut into blocks of output rows, each block's matrix product (depthwise: one
  ``einsum``) followed by its output stage; the blocks run on the calling thread and the pool of
  :mod:`pymli.kernels._parallel` (BLAS on one thread inside each block).

Weights zero points (rejected by the checked build, but honoured by a release build) are modelled
with the additive terms of the C code, including its count of ``rows * columns`` (not times the
input channels) for the ``in_zp * w_zp`` term of conv2d / group conv2d, and its ``in_additive``
of dilated conv2d / group conv2d, which sums the input with undilated steps.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..arith.requant import (
    Sa8FloatCast,
    add_bias,
    fx_bias,
    fx_result_cast,
    sa8_bias_bound,
    sa8_out_params,
    sa8_float_cast,
    sa8_result_cast,
    wrap_acc,
)
from ..arith.geometry import conv_out_size as out_size
from ..arith.geometry import transpose_out_size
from ..arith.rounding import wrap_int
from ..config import get_platform
from ..formats import RoundMode
from . import _jit
from ._blas import SMALL_PRODUCT, blas_single_thread
from . import _parallel
from ._parallel import get_threads, parts_for, pool_pays, record_time, row_blocks, run_parts

__all__ = [
    "FxQuant",
    "Sa8Quant",
    "conv2d_hwcn",
    "conv_accumulate",
    "depthwise_accumulate",
    "depthwise_conv2d_hwcn",
    "exact_matmul",
    "finish",
    "group_conv2d_hwcn",
    "out_size",
    "transpose_accumulate",
    "transpose_conv2d_hwcn",
    "transpose_out_size",
]

I64 = np.int64
_F32_EXACT = 1 << 24
_F64_EXACT = 1 << 53


# ------------------------------------------------------------------------------ parameters
@dataclass(frozen=True)
class FxQuant:
    """MLI_FX parameters of a MAC kernel.

    Attributes:
        in_frac, w_frac, b_frac, out_frac: fractional bits of input, weights, bias, output.
        acc_bits: 40 for fx16 x fx16 (``mli_acc40_t``), 32 for fx16 x fx8 and fx8 x fx8.
        out_bits: output container bits (16, or 8 for fully_connected_fx8).
    """

    in_frac: int
    w_frac: int
    b_frac: int
    out_frac: int
    acc_bits: int = 40
    out_bits: int = 16

    @property
    def bias_shift(self) -> int:
        """Left shift of the bias onto the accumulator: in + weights - bias fractional bits."""
        return self.in_frac + self.w_frac - self.b_frac

    @property
    def out_shift(self) -> int:
        """Right shift of the accumulator onto the output: in + weights - out fractional bits."""
        return self.in_frac + self.w_frac - self.out_frac


@dataclass(frozen=True, eq=False)
class Sa8Quant:
    """s8asym parameters of a MAC kernel (input/output per tensor, weights per tensor or per channel).

    Attributes:
        in_zp, in_scale, in_frac: input zero point, scale, scale_frac_bits.
        w_zp: weights zero point used by C (per-axis weights: the first channel's).
        w_scales, w_fracs: weights scales and frac bits (int64 arrays of length 1 or the number of
            output channels).
        out_zp, out_scale, out_frac: output parameters.
        memo: per-platform results derived from these parameters (output multipliers, float
            output-stage plans) and working copies of read-only weights (which the kernels take as
            constant while this object is used), so that a prepared step's repeated calls derive
            them once.
    """

    in_zp: int
    in_scale: int
    in_frac: int
    w_zp: int
    w_scales: np.ndarray
    w_fracs: np.ndarray
    out_zp: int
    out_scale: int
    out_frac: int
    memo: dict = field(default_factory=dict, init=False, repr=False)

    acc_bits = 32

    def out_params(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-channel (multiplier, shift) for the current platform."""
        key = ("out", get_platform())
        r = self.memo.get(key)
        if r is None:
            r = self.memo[key] = sa8_out_params(self.in_scale, self.in_frac, self.out_scale, self.out_frac,
                                                self.w_scales, self.w_fracs)
        return r

    def float_cast(self, bias: np.ndarray, bounds: tuple[int, int], acc_bound: int) -> Sa8FloatCast | None:
        """:func:`pymli.arith.requant.sa8_float_cast` of this call for the current platform (memoised)."""
        key = ("cast", get_platform(), np.asarray(bias).tobytes(), tuple(bounds), acc_bound)
        r = self.memo.get(key, False)
        if r is False:
            mul, sh = self.out_params()
            r = self.memo[key] = sa8_float_cast(bias, mul, sh, self.out_zp, acc_bound, clamp=bounds)
        return r


Quant = FxQuant | Sa8Quant


# ------------------------------------------------------------------------------ exact dot products
def _max_abs(a: np.ndarray) -> int:
    if a.size == 0:
        return 0
    return int(max(abs(int(a.max())), abs(int(a.min()))))


def _work_dtype(k: int, amax: int, bmax: int) -> np.dtype:
    """Narrowest exact dtype for sums of ``k`` products bounded by ``amax * bmax``."""
    bound = k * amax * bmax
    if bound < _F32_EXACT:
        return np.dtype(np.float32)
    if bound < _F64_EXACT:
        return np.dtype(np.float64)
    return np.dtype(np.int64)


def _to_int(r: np.ndarray, bound: int) -> np.ndarray:
    """Exact integer sums held in float/int arrays -> int32 when ``bound < 2**31``, else int64."""
    return r.astype(np.int32 if bound < (1 << 31) else I64, copy=False)


def exact_matmul(a: np.ndarray, b: np.ndarray, amax: int | None = None,
                 bmax: int | None = None) -> tuple[np.ndarray, int]:
    """``a @ b`` of integer arrays, exact (float BLAS only within the exactness bound).

    Args:
        a: (..., K) integers; b: (K, M) integers.
        amax, bmax: bounds on ``|a|`` and ``|b|`` (scanned when omitted).

    Returns:
        (product, bound): int32 when the bound ``K * amax * bmax`` on every sum is below 2**31,
        int64 otherwise; and that bound. When float32 cannot hold the whole sum but can hold sums
        of at least 128 products, K is cut into such chunks (each an exact float32 product) and
        the chunk results are added as integers.
    """
    amax = _max_abs(a) if amax is None else amax
    bmax = _max_abs(b) if bmax is None else bmax
    k = a.shape[-1]
    bound = k * amax * bmax
    dt = _work_dtype(k, amax, bmax)
    per = amax * bmax
    chunk = (_F32_EXACT - 1) // per if per else k
    with blas_single_thread(a.size * b.shape[-1]):
        if dt != np.float32 and 128 <= chunk < k:
            it = np.int32 if bound < (1 << 31) else I64
            total = None
            for k0 in range(0, k, chunk):
                part = np.matmul(a[..., k0:k0 + chunk].astype(np.float32), b[k0:k0 + chunk].astype(np.float32))
                part = part.astype(it)
                total = part if total is None else total + part
            return total, bound
        r = np.matmul(a.astype(dt, copy=False), b.astype(dt, copy=False))
    return _to_int(r, bound), bound


def container_bound(a: np.ndarray, offset: int = 0) -> int:
    """Bound on ``|a - offset|`` from the integer container of ``a`` (no scan of the values)."""
    return _container_bound(a.dtype.char, int(offset))


@functools.lru_cache(maxsize=64)
def _container_bound(char: str, offset: int) -> int:
    info = np.iinfo(np.dtype(char))
    return max(abs(int(info.min) - offset), abs(int(info.max) - offset))


_SCRATCH = threading.local()
_SCRATCH_MAX = 24
_SCRATCH_MAX_BYTES = 1 << 24
_SMALL_BYTES = 1 << 14  # arrays up to this size: plain NumPy calls beat the scratch machinery
GIL_LIGHT_ELEMS = 1 << 15  # blocks with this many outputs run the integer output stage on the workers
FLAT_TAPS_CHANNELS = 32  # depthwise convolutions with at most this many channels ...
FLAT_TAPS_OUTPUTS = 1 << 13  # ... and at least this many outputs: row multiply-adds (see _depthwise_blocks)


def _scratch(key: tuple) -> np.ndarray:
    """A reusable uninitialised buffer ``np.empty(key[1], key[2])`` private to this thread.

    Only for temporaries that never leave the function using them: large temporaries freed after
    every call cost a page fault per 4 kB page on the next one. At most ``_SCRATCH_MAX`` buffers
    are kept per thread (the oldest is dropped first), none above ``_SCRATCH_MAX_BYTES`` (a large
    batch's buffers are not kept alive after the call).
    """
    cache = getattr(_SCRATCH, "buffers", None)
    if cache is None:
        cache = _SCRATCH.buffers = {}
    buf = cache.get(key)
    if buf is None and int(np.prod(key[1])) * np.dtype(key[2]).itemsize > _SCRATCH_MAX_BYTES:
        return np.empty(key[1], dtype=key[2])
    if buf is None:
        if len(cache) >= _SCRATCH_MAX:
            cache.pop(next(iter(cache)))
        buf = cache[key] = np.empty(key[1], dtype=key[2])
    return buf


def _scratch_forget(buf: np.ndarray) -> None:
    """Drop ``buf`` from this thread's scratch buffers (it is not handed out again)."""
    cache = getattr(_SCRATCH, "buffers", {})
    for key in [k for k, v in cache.items() if v is buf]:
        del cache[key]


def _padded_scratch(x: np.ndarray, top: int, left: int, hp: int, wp: int, dtype: np.dtype,
                    offset: int = 0) -> np.ndarray:
    """``x - offset`` (N, H, W, C) placed at (top, left) in a zero (N, hp, wp, C) scratch buffer.

    Rows / columns beyond the buffer are cut; the border is zeroed on every call.
    """
    n, h, w, c = x.shape
    out = _scratch(("padded", (n, hp, wp, c), dtype))
    r0, c0 = max(top, 0), max(left, 0)
    r1, c1 = min(top + h, hp), min(left + w, wp)
    if r1 <= r0 or c1 <= c0 or out.nbytes <= _SMALL_BYTES:
        out.fill(0)  # one call instead of four border slices (their overhead dominates small arrays)
        if r1 <= r0 or c1 <= c0:
            return out
    else:
        out[:, :r0] = 0
        out[:, r1:] = 0
        out[:, r0:r1, :c0] = 0
        out[:, r0:r1, c1:] = 0
    inner = out[:, r0:r1, c0:c1]
    src = x[:, r0 - top:r1 - top, c0 - left:c1 - left]
    if offset:
        np.subtract(src, dtype.type(offset), out=inner, dtype=dtype, casting="unsafe")
    else:
        inner[...] = src
    return out


def _windows(xp: np.ndarray, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, ho: int, wo: int) -> np.ndarray:
    """(N, ho, wo, kh, kw, C) strided view of the windows of a C-contiguous padded (N, Hp, Wp, C) array."""
    sn, s0, s1, s2 = xp.strides
    shape = (xp.shape[0], ho, wo, kh, kw, xp.shape[3])
    strides = (sn, s0 * sh, s1 * sw, s0 * dh, s1 * dw, s2)
    # The ndarray constructor (bounds-checked against the buffer) is the cheap view.
    v = np.ndarray(shape, dtype=xp.dtype, buffer=xp, strides=strides)
    v.flags.writeable = False
    return v


def _geometry(k_hw: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int],
              out_hw: tuple[int, int]) -> tuple[int, int]:
    """Height and width of the padded input the output windows read."""
    ho, wo = out_hw
    hp = (ho - 1) * stride[0] + (k_hw[0] - 1) * dilation[0] + 1
    wp = (wo - 1) * stride[1] + (k_hw[1] - 1) * dilation[1] + 1
    return hp, wp


def _batch(x: np.ndarray) -> np.ndarray:
    """(H, W, C) or (N, H, W, C) -> (N, H, W, C) view."""
    x = np.asarray(x)
    return x if x.ndim == 4 else x.reshape(1, *x.shape)


def _unbatch(r: np.ndarray, ndim: int) -> np.ndarray:
    """Drop the batch axis :func:`_batch` added to a 3-D input."""
    return r if ndim == 4 else r[0]


_WEIGHTS_MEMO: dict = {}
_WEIGHTS_MEMO_MAX = 32  # entries of _WEIGHTS_MEMO (all are dropped beyond)


def _const_weights(w: np.ndarray, post: _OutputStage | None, tag: tuple, make: Callable[[], np.ndarray]) -> np.ndarray:
    """``make()``, a working copy of the weights ``w`` (``tag`` names everything else it depends on),
    memoised when ``w`` is read-only (a prepared step's constant weights: converting 512 x 512 weights
    to float32 on every call costs ~100 us): in the call's ``Sa8Quant.memo``, or for MLI_FX
    parameters (no memo) in a small module-level one. Writeable weights convert every time."""
    if w.flags.writeable:
        return make()
    memo = getattr(post.q, "memo", None) if post is not None else None
    if memo is None:
        memo = _WEIGHTS_MEMO
        if len(memo) >= _WEIGHTS_MEMO_MAX:
            memo.clear()
    key = (*tag, id(w))
    hit = memo.get(key)
    if hit is None or hit[0] is not w:  # the entry keeps ``w`` alive: its id is not reused meanwhile
        hit = memo[key] = (w, make())
    return hit[1]


def _run_blocks(block: Callable[[tuple[int, int, int, int]], np.ndarray], n: int, ho: int, wo: int, ch: int,
                macs: int, wide: bool, shared: np.ndarray, post: _OutputStage | _StagedStage | None,
                bound: int, blas: bool = True, tile: int = 1,
                arrange: Callable[[tuple[int, int, int, int], np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """Output (n, ho, wo, ch) of ``block`` over row blocks, on several threads when ``macs`` is large.

    ``block((n0, n1, r0, r1))`` returns the exact sums of the (n1 - n0, r1 - r0, wo, ch) piece
    (integers, or integer-valued floats; fresh arrays); the BLAS calls inside run on one thread
    each (see :mod:`pymli.kernels._parallel`). Each piece is then converted to integers, or
    finished by ``post`` (the output stage). ``wide``: the output stage works in int64 (else
    int32), which sizes the blocks. ``shared``: the scratch buffer the blocks read (the padded
    input), dropped from the scratch buffers when a block abandoned on a worker may still be
    reading it. ``blas``: the blocks call BLAS (else no BLAS thread pin is taken). ``tile``: the
    blocks' first rows are multiples of it (their row counts too, except the last block's).
    ``arrange(blk, values)``: the block's finished values in its output layout, when ``block``
    returns its sums in another (channels last, the output stage works on any layout).

    A call large enough for the pool runs on it or on this thread alone, whichever has been the
    faster for this kernel and shape lately (:func:`pymli.kernels._parallel.pool_pays`).
    """
    threads = get_threads()
    if threads == 1 or macs < _parallel.PARALLEL_WORK:
        return _run_blocks_on(block, n, ho, wo, ch, macs, wide, shared, post, bound, blas, threads, tile, arrange)
    site = (block.__code__, post is None, n, ho, wo, ch, macs)
    if not pool_pays(site):
        threads = 1
    t0 = time.perf_counter()
    out = _run_blocks_on(block, n, ho, wo, ch, macs, wide, shared, post, bound, blas, threads, tile, arrange)
    record_time(site, threads > 1, time.perf_counter() - t0)
    return out


def _run_blocks_on(block: Callable[[tuple[int, int, int, int]], np.ndarray], n: int, ho: int, wo: int, ch: int,
                   macs: int, wide: bool, shared: np.ndarray, post: _OutputStage | _StagedStage | None,
                   bound: int, blas: bool, threads: int, tile: int = 1,
                   arrange: Callable[[tuple[int, int, int, int], np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """:func:`_run_blocks` on at most ``threads`` threads."""
    # One block per thread when the blocks are BLAS products (measured, idle 2-core machine: conv2d sa8
    # 32x32x32 3x3 -> 64 took 0.51-0.52 ms in four blocks on two threads, 0.375-0.38 ms in two).
    units = -(-ho // tile)  # blocks are cut in units of ``tile`` rows
    blocks = row_blocks(n, units, parts_for(macs, n * ho * wo * ch * (8 if wide else 4), n * units, threads,
                                            per_thread=1 if blas else None))
    if tile > 1:
        blocks = [(n0, n1, r0 * tile, min(r1 * tile, ho)) for n0, n1, r0, r1 in blocks]

    def finished(blk: tuple[int, int, int, int], sums: np.ndarray) -> np.ndarray:
        r = _to_int(sums, bound) if post is None else post(sums, bound, overwrite=True)
        return r if arrange is None else arrange(blk, r)

    if len(blocks) == 1:
        if macs < SMALL_PRODUCT or not blas:
            return finished(blocks[0], block(blocks[0]))  # a small call: no BLAS thread switch, no pool
        with blas_single_thread(macs):
            return finished(blocks[0], block(blocks[0]))
    # The output stage runs on the caller's thread, block after block, when it is many short NumPy
    # calls on small blocks: on two threads those calls fight for the GIL (measured: conv2d sa8
    # 32x32x32 -> 64 in four blocks took 0.84 ms on two threads with it inside the blocks, 0.66 ms
    # on one thread; 0.65-0.75 ms on two with it outside).
    inside = post is None or post.gil_light(n * ho * wo * ch // len(blocks), bound)
    with blas_single_thread(macs if blas else 0):
        parts = run_parts((lambda i: finished(blocks[i], block(blocks[i]))) if inside else (lambda i: block(blocks[i])),
                          len(blocks), lambda: _scratch_forget(shared), threads)
    if not inside:
        parts = [finished(blk, p) for blk, p in zip(blocks, parts)]
    if len(parts) == 1:
        return parts[0]
    # Finished values fit the output container: the assembled output is held in it (a large int64
    # array would be fresh pages, see _parallel.parts_for).
    out = np.empty((n, ho, wo, ch), dtype=np.result_type(*parts) if post is None else post.dtype)
    for (n0, n1, r0, r1), p in zip(blocks, parts):
        out[n0:n1, r0:r1] = p
    return out


def _conv_blocks(x: np.ndarray, w: np.ndarray, *, stride: tuple[int, int], dilation: tuple[int, int],
                 pad: tuple[int, int], out_hw: tuple[int, int], groups: int, x_bound: int, w_bound: int,
                 x_offset: int = 0, post: _OutputStage | None = None, wide: bool = False) -> tuple[np.ndarray, int]:
    """Exact sums of a (grouped) convolution of ``x - x_offset`` (N, H, W, C), optionally finished.

    The padded input is built once for the whole batch (a scratch buffer); each row block copies
    its windows once (im2col: one (rows, K) matrix, or one per group) and multiplies them with the
    weights in one BLAS call, then converts the exact float sums to integers and, when given,
    applies ``post(sums, bound)`` (the output stage) to the block. ``wide``: the output stage works
    in int64 (40-bit accumulators), which sizes the blocks.

    Returns:
        ((N, Ho, Wo, N_out) sums or ``post`` values, bound on the sums' magnitude).
    """
    kh, kw, cg, nout = w.shape
    nb, ho, wo = x.shape[0], out_hw[0], out_hw[1]
    k = kh * kw * cg
    bound = k * x_bound * w_bound
    dt = _work_dtype(k, x_bound, w_bound)
    hp, wp = _geometry((kh, kw), stride, dilation, out_hw)
    # A float GEMM's padded input is held as int16 when that is exact (one third of float32's padding
    # time): the im2col copy converts it (measured 32x32x32 3x3: pad + im2col 38 us against 48 us).
    narrow = dt.kind == "f" and x_bound < 1 << 15 and groups == 1
    if narrow and _winograd_applies(w.shape, stride, dilation, x_bound, w_bound, nb * ho * wo):
        wino = _const_weights(w, post, ("winograd",), lambda: _winograd_weights(w))
        if _winograd_exact(wino, x_bound):
            # also when im2col's bound needs float64: the weights' own sums may prove float32 exact,
            # and they bound the sums more tightly (which can give the output stage its float32 form)
            bound = min(bound, int(2 * x_bound * wino.z_sum))
            fold = None if post is None else post.first_stage(bound)
            if fold is not None and _winograd_exact(wino, x_bound, fold):
                scale = fold[0]
                if scale is not None:
                    wino = _const_weights(w, post, ("winograd", scale.tobytes()),
                                          lambda: _Winograd(wino.u * scale, wino.m_sum, wino.z_sum))
                return _winograd_blocks(x, wino, pad=pad, out_hw=out_hw, x_offset=x_offset, post=_StagedStage(post),
                                        wide=wide, bound=bound, fold_add=fold[1]), bound
            return _winograd_blocks(x, wino, pad=pad, out_hw=out_hw, x_offset=x_offset, post=post, wide=wide,
                                    bound=bound), bound
    xp = _padded_scratch(x, pad[0], pad[1], hp, wp, np.dtype(np.int16) if narrow else dt, x_offset)
    win = _windows(xp, kh, kw, stride[0], stride[1], dilation[0], dilation[1], ho, wo)
    ng = nout // groups
    # A float64 product runs at half float32's rate: when float32 holds the sums of at least
    # F32_CHUNK_MIN products, K is cut into (equal) chunks of at most that many, one exact float32
    # product each, their integer results added in int32 (int64 from 2**31).
    per = x_bound * w_bound
    most = (_F32_EXACT - 1) // per if per else k
    chunks = -(-k // most) if narrow and dt != np.float32 and F32_CHUNK_MIN <= most < k else 1
    step = -(-k // chunks)
    gdt = np.dtype(np.float32) if chunks > 1 else dt
    it = np.int32 if bound < 1 << 31 else I64
    if groups == 1:
        wm = _const_weights(w, post, ("gemm", gdt.char), lambda: w.astype(gdt).reshape(k, nout))
    else:
        wm = w.astype(dt).reshape(kh, kw, cg, groups, ng).transpose(3, 0, 1, 2, 4).reshape(groups, k, ng)
    # float products are exact (bound); int64 products (beyond 2**53) go through NumPy's own loop.

    def block(blk: tuple[int, int, int, int]) -> np.ndarray:
        n0, n1, r0, r1 = blk
        v = win[n0:n1, r0:r1]
        lead = v.shape[:3]
        p = lead[0] * lead[1] * lead[2]
        # im2col: the one copy of the windows, a fresh array (measured no slower than a scratch
        # buffer: the allocator hands the same memory back call after call)
        if narrow:
            cols = np.empty((p, k), gdt)
            np.copyto(cols.reshape(v.shape), v, casting="unsafe")  # int16 -> float: exact
            if chunks == 1:
                return (cols @ wm).reshape(*lead, nout)
            r = (cols[:, :step] @ wm[:step]).astype(it)
            for k0 in range(step, k, step):
                r += (cols[:, k0:k0 + step] @ wm[k0:k0 + step]).astype(it)
            return r.reshape(*lead, nout)
        elif groups == 1:
            r = (v.reshape(p, k) @ wm).reshape(*lead, nout)
        else:
            cols = np.moveaxis(v.reshape(*v.shape[:5], groups, cg), 5, 0).reshape(groups, p, k)
            r = np.moveaxis(np.matmul(cols, wm).reshape(groups, *lead, ng), 0, 3).reshape(*lead, nout)
        return r

    macs = nb * ho * wo * k * ng
    return _run_blocks(block, nb, ho, wo, nout, macs, wide or bound >= 1 << 31, xp, post, bound), bound


F32_CHUNK_MIN = 128
"""Fewest products per float32 chunk of an im2col product whose whole sums need float64 (see
:func:`_conv_blocks`; fewer: one float64 product)."""

WINOGRAD_MIN_CHANNELS = 16
"""Winograd F(2x2, 3x3) (:func:`_winograd_blocks`) needs this many input and output channels, ..."""
WINOGRAD_MIN_PRODUCT = 2048
"""... input times output channels (multiply-adds per output pixel and tap) ..."""
WINOGRAD_MIN_PIXELS = 64
"""... and output pixels: its transforms cost some 20 passes over the input and output (measured one
core, sa8 'same', against im2col: 8x8x32 -> 32 0.67x, 32x32x16 -> 16 in a batch of 4 0.98x,
16x16x64 -> 64 1.28x, 32x32x32 -> 64 1.25x, 56x56x64 -> 64 1.51x)."""

_WG32 = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float32)  # F(2, 3)'s G


@dataclass(frozen=True)
class _Winograd:
    """The transformed weights of :func:`_winograd_blocks` and the sums that bound its partial sums.

    Attributes:
        u: (16, C, N) float32 ``G g G^T`` per (row, column) of the 4 x 4 tile (multiples of 1/4).
        m_sum: largest ``sum_c |u|`` over three consecutive tile rows (either output row's terms),
            any tile column and output channel.
        z_sum: largest ``sum_{kernel row, c} |G g_row|`` over three consecutive tile columns, any
            output channel (``G g_row``: a kernel row transformed along the width).
    """

    u: np.ndarray
    m_sum: float
    z_sum: float


def _winograd_applies(w_shape: tuple[int, ...], stride: tuple[int, int], dilation: tuple[int, int], x_bound: int,
                      w_bound: int, pixels: int) -> bool:
    """A 3x3 stride-1 undilated conv2d with enough channels and outputs, its centred input below 2**13
    (the input transform's int16 passes: ``|B^T d B| <= 4 x_bound``) and ``K w_bound`` below 2**24
    (the float32 sums of :func:`_winograd_weights`)."""
    kh, kw, cg, nout = w_shape
    return ((kh, kw) == (3, 3) and tuple(stride) == (1, 1) and tuple(dilation) == (1, 1) and x_bound < 1 << 13
            and 9 * cg * w_bound < _F32_EXACT and min(cg, nout) >= WINOGRAD_MIN_CHANNELS
            and cg * nout >= WINOGRAD_MIN_PRODUCT and pixels >= WINOGRAD_MIN_PIXELS)


def _winograd_weights(w: np.ndarray) -> _Winograd:
    """:class:`_Winograd` of (3, 3, C, N) HWCN weights (callers: ``9 C w_bound < 2**24``).

    Every value is exact in float32: ``G g G^T`` are multiples of 1/4 below ``2.25 w_bound``, the
    width-transformed rows ``G g_row`` multiples of 1/2 below ``1.5 w_bound``; the sums over the
    channels (and kernel rows) stay below ``2.25 C w_bound`` (``4.5 C w_bound``): ``9 C w_bound``
    quarters (halves), below 2**24. The sums of three are taken in float64.
    """
    kh, kw, c, n = w.shape
    g = w.astype(np.float32).reshape(kh, kw, c * n)
    gw = np.matmul(_WG32, g)  # (kernel row, tile column, C * N): each kernel row along the width
    u = np.matmul(_WG32, gw.reshape(kh, 4 * c * n)).reshape(16, c, n)
    ones = np.ones(c, np.float32)
    su = np.matmul(ones, np.abs(u)).reshape(4, 4, n).astype(np.float64)  # sum over the channels
    sz = np.matmul(ones, np.add.reduce(np.abs(gw), axis=0).reshape(4, c, n)).astype(np.float64)
    m_sum = max(float((su[0] + su[1] + su[2]).max()), float((su[1] + su[2] + su[3]).max()))
    z_sum = max(float((sz[0] + sz[1] + sz[2]).max()), float((sz[1] + sz[2] + sz[3]).max()))
    return _Winograd(u, m_sum, z_sum)


def _winograd_exact(wino: _Winograd, x_bound: int,
                    fold: tuple[np.ndarray | None, np.ndarray] | None = None) -> bool:
    """Every partial sum of :func:`_winograd_blocks` is exact in float32 for inputs bounded by ``x_bound``.

    Tile values ``B^T d B`` are sums of four inputs (``|v| <= 4 x_bound``): a tile product sum and
    its partial sums, and those of the first output-transform pass (adding three of them), are
    multiples of 1/4 below ``4 x_bound m_sum``; the second pass adds three of the first pass's
    results, each the exact 1-D (height) convolution of width-transformed kernel rows with
    width-transformed input rows (``|d B| <= 2 x_bound``): multiples of 1/2 below
    ``2 x_bound z_sum``. Exact when those counts of quarters / halves stay below 2**24.

    With ``fold = (scale, additive)`` (the output stage's float32 first pass, see
    :func:`_winograd_blocks`) every value is scaled by the channel's power of two ``s`` (the counts
    are unchanged) and the additive (a multiple of ``s / 4``: ``bias * s + 1/2 [+ 2**15]``) joins
    the tile products at one tile position, whose terms reach every output with the sign +1: the
    counts grow by ``4 |additive| / s`` quarters and ``2 |additive| / s`` halves.
    """
    extra = 0.0
    if fold is not None:
        scale, add = fold
        extra = float(np.max(np.abs(np.asarray(add, np.float64)) / (1.0 if scale is None else scale)))
    return 16 * x_bound * wino.m_sum + 4 * extra < _F32_EXACT and 4 * x_bound * wino.z_sum + 2 * extra < _F32_EXACT


def _winograd_blocks(x: np.ndarray, wino: _Winograd, *, pad: tuple[int, int], out_hw: tuple[int, int],
                     x_offset: int, post: _OutputStage | _StagedStage | None, wide: bool, bound: int,
                     fold_add: np.ndarray | None = None) -> np.ndarray:
    """:func:`_conv_blocks` of a 3x3 stride-1 conv2d by Winograd F(2x2, 3x3) in float32.

    Each 2 x 2 block of outputs is ``A^T [(G g G^T) . (B^T d B)] A`` for the 4 x 4 input tile ``d``
    under it: the products of all tiles and channels are 16 matrix products (tiles x C) @ (C x N),
    2.25 times fewer multiply-adds than the im2col product (measured 32x32x32 -> 64: 153 us
    against 376 us on one core), plus a few passes of input and output transforms. Every value is
    exact (:func:`_winograd_exact`), so the sums equal the im2col product's bit for bit. The
    padded input (int16, ``x - x_offset``) covers whole tiles (an odd output height or width
    computes one more row / column of zeros' sums, dropped). Row blocks of whole tiles run as in
    :func:`_run_blocks`.

    ``fold_add``: the output stage's float32 first pass ``sums * scale + additive`` is folded in
    (``post`` is then a :class:`_StagedStage`): the weights come scaled (``wino``), and the
    additive joins the products at tile position (1, 1), which reaches all four outputs of a
    tile with the sign +1 (``A^T`` has ones in its column 1): one pass over a sixteenth of the
    products instead of two over the sums (measured ~20 us on 32x32x32 -> 64).
    """
    nb = x.shape[0]
    ho, wo = out_hw
    th, tw = -(-ho // 2), -(-wo // 2)
    c, n = wino.u.shape[1:]
    xp = _padded_scratch(x, pad[0], pad[1], 2 * th + 2, 2 * tw + 2, np.dtype(np.int16), x_offset)
    u = wino.u

    def block(blk: tuple[int, int, int, int]) -> np.ndarray:
        n0, n1, r0, r1 = blk
        t0, t1 = r0 // 2, -(-r1 // 2)
        nt, rt = n1 - n0, t1 - t0
        p = xp[n0:n1, 2 * t0:2 * t1 + 2]
        # B^T d B, along the width then the height, in int16 (|values| <= 4 x_bound < 2**15; the
        # height pass casts its results to float32). The even and odd padded columns are first
        # copied apart: the width pass then reads contiguous runs of tw * C values (measured 24 us
        # with the copy against 33 us on the interleaved columns, 32x32x32)
        d = np.empty((2, nt, 2 * rt + 2, tw + 1, c), np.int16)
        np.copyto(d.transpose(1, 2, 3, 0, 4), p.reshape(nt, 2 * rt + 2, tw + 1, 2, c))
        even, odd = d[0], d[1]
        t = np.empty((4, nt, 2 * rt + 2, tw, c), np.int16)
        np.subtract(even[:, :, :tw], even[:, :, 1:], out=t[0])
        np.add(odd[:, :, :tw], even[:, :, 1:], out=t[1])
        np.subtract(even[:, :, 1:], odd[:, :, :tw], out=t[2])
        np.subtract(odd[:, :, :tw], odd[:, :, 1:], out=t[3])
        v = np.empty((4, 4, nt, rt, tw, c), np.float32)
        f = 2 * rt
        np.subtract(t[:, :, 0:f:2], t[:, :, 2:f + 2:2], out=v[0])
        np.add(t[:, :, 1:f + 1:2], t[:, :, 2:f + 2:2], out=v[1])
        np.subtract(t[:, :, 2:f + 2:2], t[:, :, 1:f + 1:2], out=v[2])
        np.subtract(t[:, :, 1:f + 1:2], t[:, :, 3:f + 3:2], out=v[3])
        m = np.matmul(v.reshape(16, -1, c), u).reshape(4, 4, -1, n)
        if fold_add is not None:
            m[1, 1] += fold_add
        # A^T m A: along the height (rows i of the tile), then the width: y[i, j] is the output at
        # (2 t + i, 2 s + j) of tile (t, s), put in place by arrange (after the output stage: 4x
        # fewer bytes than the float32 sums, and contiguous passes here)
        z = np.empty((2, 4, m.shape[2], n), np.float32)
        np.add(m[0], m[1], out=z[0])
        z[0] += m[2]
        np.subtract(m[1], m[2], out=z[1])
        z[1] -= m[3]
        y = np.empty((2, 2, nt, rt, tw, n), np.float32)
        zr = z.reshape(2, 4, nt, rt, tw, n)
        np.add(zr[:, 0], zr[:, 1], out=y[:, 0])
        y[:, 0] += zr[:, 2]
        np.subtract(zr[:, 1], zr[:, 2], out=y[:, 1])
        y[:, 1] -= zr[:, 3]
        return y

    def arrange(blk: tuple[int, int, int, int], r: np.ndarray) -> np.ndarray:
        n0, n1, r0, r1 = blk
        nt, rt = r.shape[2:4]
        o = np.empty((nt, rt, 2, tw, 2, n), r.dtype)
        np.copyto(o.transpose(2, 4, 0, 1, 3, 5), r)
        o = o.reshape(nt, 2 * rt, 2 * tw, n)
        return o if (2 * rt, 2 * tw) == (r1 - r0, wo) else np.ascontiguousarray(o[:, :r1 - r0, :wo])

    macs = nb * th * tw * 16 * c * n
    return _run_blocks(block, nb, ho, wo, n, macs, wide or bound >= 1 << 31, xp, post, bound, tile=2, arrange=arrange)


def _int_product(int16: bool = False):  # type: ignore[no-untyped-def]
    """(the compiled module :mod:`pymli.kernels._jit_conv`, the product conv2d takes) or None: JIT off,
    numba missing, or a CPU with none of the products (:data:`INT_PRODUCT` chooses among them; ``int16``:
    one of int16 inputs) that passes its self-test (:func:`pymli.kernels._jit_conv.checked`)."""
    mod = _jit.compiled("_jit_conv")
    if mod is None or not mod.PRODUCTS:
        return None
    for prod in mod.PRODUCTS:
        if ((INT_PRODUCT is None or prod.name == INT_PRODUCT) and (not int16 or prod.per_group == 2)
                and mod.checked(prod)):
            return mod, prod
    return None


INT_PRODUCT: str | None = None
"""The integer product conv2d takes (:data:`pymli.kernels._jit_conv.PRODUCTS`): None for the fastest
this CPU has, or a name (``u8x16``, ``u8x8``, ``s16x8``; another one's name: none), for the tests."""

VNNI_MAX_K = ((1 << 31) - 1) // (2 * 255 * 128)
"""Most taps x (padded) channels of the uint8 products whose int32 lanes hold every partial sum exactly
(needed only without a wrapping 32-bit accumulator)."""


def _int_applies(x: np.ndarray, w: np.ndarray, groups: int, x_offset: int, acc_bits: int = 32) -> tuple | None:
    """(module, product, split) of :func:`_conv_int` for a conv2d / group conv2d, or None. It takes, with
    the JIT on and a CPU with a product that passes its self-test, int8 or int16 inputs with
    ``x - x_offset`` within int16 and:

    * int8 weights: with a 32-bit accumulator (``acc_bits``: sa8, fx16 x fx8) the int32 lanes wrap
      exactly as it does, whatever ``K``; else every sum must stay below 2**31. The uint8 products
      take int8 inputs with an offset in -128..127 (the padding byte ``x_offset + 128`` is a uint8),
      ``s16x8`` any of them.
    * int16 weights (fx16, 40-bit accumulator): ``s16x8`` with ``split``: each weight is
      ``256 * hi + lo`` with ``lo`` in -128..127 and ``hi`` in -128..128, two products whose sums stay
      below 2**31 (``K * 32768 * 128``: ``K`` below 512), added in int64: the exact sum.
    """
    kh, kw, cg, _ = w.shape
    if kh * kw * cg == 0 or groups < 1 or x.dtype not in (np.int8, np.int16) or w.dtype not in (np.int8, np.int16):
        return None
    info = np.iinfo(x.dtype)
    if not -(1 << 15) <= int(info.min) - x_offset <= int(info.max) - x_offset < 1 << 15:
        return None  # x - x_offset beyond int16
    split = w.dtype == np.int16
    found = _int_product(int16=x.dtype == np.int16 or split)
    if found is None:
        return None
    k, xb = kh * kw * cg, container_bound(x, x_offset)
    if found[1].per_group == 4 and not -128 <= x_offset <= 127:
        return None
    # the uint8 products' partial sums also hold the initial value: 2 * K * 255 * 128 (VNNI_MAX_K)
    exact = kh * kw * (-(-cg // 4) * 4) <= VNNI_MAX_K if found[1].per_group == 4 else k * xb * 128 < 1 << 31
    return (*found, split) if exact or (acc_bits == 32 and not split) else None


def _int_weights(w: np.ndarray, x_offset: int, prod,  # type: ignore[no-untyped-def]
                 groups: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """HWCN int8 weights packed for the product ``prod`` of :mod:`pymli.kernels._jit_conv`, per group:
    (packed values, chunks, initial values). A group's input channels are padded to a multiple of the
    values per 4-byte group and its output channels to a multiple of the lanes, with zero weights.
    The uint8 products start from ``-(x_offset + 128) * sum_k w[k, n]`` (see :func:`_conv_int`),
    ``s16x8`` from 0 (int16 weights)."""
    kh, kw, cg, n = w.shape
    ng = n // groups
    per, lanes = prod.per_group, prod.lanes
    cgp, npad = -(-cg // per) * per, -(-ng // lanes) * lanes
    k = kh * kw * cgp
    res = []
    for g in range(groups):
        wq = np.zeros((kh, kw, cgp, npad), np.int8 if per == 4 else np.int16)
        wq[:, :, :cg, :ng] = w[..., g * ng:(g + 1) * ng]
        wk = wq.reshape(k, npad)
        packed, chunks, off = [], [], 0
        for c0 in range(0, npad, lanes * prod.max_nb):
            nb = min(prod.max_nb, (npad - c0) // lanes)
            # (K / per, lanes * nb, per): the weights of a lane for `per` consecutive taps side by side
            cols = wk[:, c0:c0 + lanes * nb]
            packed.append(np.ascontiguousarray(cols.reshape(k // per, per, lanes * nb).transpose(0, 2, 1)).ravel())
            chunks.append((c0, nb, off))
            off += packed[-1].nbytes
        if per == 4:
            init = (-(x_offset + 128) * wk.sum(axis=0, dtype=I64)).astype(np.int32)
        else:
            init = np.zeros(npad, np.int32)
        res.append((np.concatenate(packed), np.array(chunks, dtype=I64), init))
    return res


@functools.lru_cache(maxsize=64)
def _int_geometry(ho: int, wo: int, wp: int, groups: int, cgp: int, size: int, kh: int, kw: int, sh: int, sw: int,
                  dh: int, dw: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(pixel byte offsets (ho, wo) in one image, segment byte offsets (groups, S), 4-byte groups per
    segment) of a padded (hp, wp, groups * cgp) image of ``size``-byte values: one segment per kernel
    row (``kw * cgp`` values) for one group and an undilated kernel width, else one per tap (``cgp``
    values of the group)."""
    row = groups * cgp * size  # bytes per padded pixel
    offs = (np.arange(ho)[:, None] * (sh * wp) + np.arange(wo)[None, :] * sw) * row
    if groups == 1 and (dw == 1 or kw == 1):
        roff, l4 = (np.arange(kh) * (dh * wp * row))[None], kw * row // 4
    else:
        taps = ((np.arange(kh)[:, None] * (dh * wp) + np.arange(kw)[None, :] * dw) * row).ravel()
        roff, l4 = taps[None, :] + (np.arange(groups) * (cgp * size))[:, None], cgp * size // 4
    offs, roff = offs.astype(I64), np.ascontiguousarray(roff, dtype=I64)
    offs.flags.writeable = roff.flags.writeable = False
    return offs, roff, l4


def _split16(w: np.ndarray, groups: int) -> np.ndarray:
    """int16 HWCN weights as ``256 * hi + lo`` (``lo`` in -128..127, ``hi`` in -128..128): (Kh, Kw, C, 2N)
    int16, each group's ``lo`` columns followed by its ``hi`` columns."""
    kh, kw, cg, n = w.shape
    v = w.astype(np.int32).reshape(kh, kw, cg, groups, n // groups)
    lo = (v + 128) % 256 - 128
    return np.concatenate([lo, (v - lo) >> 8], axis=-1).astype(np.int16).reshape(kh, kw, cg, 2 * n)


def _conv_int(x: np.ndarray, w: np.ndarray, found: tuple, *, stride: tuple[int, int], dilation: tuple[int, int],
              pad: tuple[int, int], out_hw: tuple[int, int], groups: int, x_offset: int, post: _OutputStage,
              wide: bool = False) -> np.ndarray:
    """conv2d / group conv2d of integer ``x - x_offset`` (N, H, W, C) with HWCN weights, finished by
    ``post``: the exact sums from an integer product of :mod:`pymli.kernels._jit_conv` (``found``: the
    module, the product and whether the weights are split, from :func:`_int_applies`), no im2col copy;
    one product per group. ``wide``: the output stage works in int64 (sizes the blocks).

    ``vpdpbusd`` (the uint8 products) multiplies unsigned with signed bytes, so the input is stored as
    ``u = x + 128`` (``x ^ 0x80`` as uint8) in a padded buffer whose padding holds ``x_offset + 128``:
    every tap then reads ``u - (x_offset + 128) = x - x_offset`` on input pixels and 0 on padding, and
    ``sum_k (u_k - x_offset - 128) * w_k = sum_k u_k * w_k - (x_offset + 128) * sum_k w_k``, whose last
    term starts each accumulator (:func:`_int_weights`). ``s16x8`` reads ``x - x_offset`` as int16 with
    zero padding. No instruction saturates (``vpdpbusd``; ``vpmaddwd``'s pairs of products of int8-range
    weights stay below 2**24), so each int32 lane holds its sum modulo 2**32: the exact sum when every
    partial sum is provably below 2**31 (:func:`_int_applies`), else exactly what the C 32-bit
    accumulator wraps to. Split int16 weights (:func:`_split16`) give two sums per output, each below
    2**31, combined as ``256 * hi_sum + lo_sum`` in int64. Rows are cut into blocks as in
    :func:`_conv_blocks`.
    """
    mod, prod, split = found
    product = getattr(mod, f"conv_{prod.name}")
    kh, kw, cg, n = w.shape
    nw = 2 * n if split else n  # the product's output columns
    ng = nw // groups
    nb, ho, wo = x.shape[0], out_hw[0], out_hw[1]
    u8 = prod.per_group == 4
    cgp, npad = -(-cg // prod.per_group) * prod.per_group, -(-ng // prod.lanes) * prod.lanes
    hp, wp = _geometry((kh, kw), stride, dilation, out_hw)
    dt = np.dtype(np.uint8 if u8 else np.int16)
    xp = _scratch(("int product", (nb, hp, wp, groups, cgp), dt))
    top, left = pad
    h, wd = x.shape[1:3]
    r0, c0 = max(top, 0), max(left, 0)
    r1, c1 = min(top + h, hp), min(left + wd, wp)
    xp.fill(x_offset + 128 if u8 else 0)  # the padding (and the channels beyond cg, whose weights are 0)
    if r0 < r1 and c0 < c1:
        src = x[:, r0 - top:r1 - top, c0 - left:c1 - left]
        src, dst = src.reshape(*src.shape[:3], groups, cg), xp[:, r0:r1, c0:c1, :, :cg]
        if u8:
            np.bitwise_xor(src.view(np.uint8), np.uint8(0x80), out=dst)
        else:
            np.subtract(src, np.int16(x_offset), out=dst, dtype=np.int16)
    packs = _const_weights(w, post, ("int product", x_offset, prod.name, groups),
                           lambda: _int_weights(_split16(w, groups) if split else w, x_offset, prod, groups))
    offs, roff, l4 = _int_geometry(ho, wo, wp, groups, cgp, dt.itemsize, kh, kw, stride[0], stride[1], dilation[0],
                                   dilation[1])
    image = hp * wp * groups * cgp * dt.itemsize  # bytes per padded image
    bound = kh * kw * cg * container_bound(x, x_offset) * container_bound(w)

    def block(blk: tuple[int, int, int, int]) -> np.ndarray:
        n0, n1, r0, r1 = blk
        o = offs[r0:r1].reshape(-1)  # contiguous rows of the image's table
        if n1 - n0 != 1 or n0:  # other samples than the first alone (none: an empty batch)
            o = (o[None, :] + np.arange(n0, n1, dtype=I64)[:, None] * image).reshape(-1)
        acc = np.empty((o.size, npad), np.int32)
        if groups == 1:
            product(xp, o, roff[0], l4, *packs[0], acc)
            r = acc if npad == nw else acc[:, :nw]
        else:
            r = np.empty((o.size, nw), np.int32)
            for g, pack in enumerate(packs):
                product(xp, o, roff[g], l4, *pack, acc)
                r[:, g * ng:(g + 1) * ng] = acc[:, :ng]
        if split:  # per group: lo sums, then hi sums
            r = r.reshape(o.size, groups, 2, ng // 2)
            r = (r[:, :, 1].astype(I64) << 8) + r[:, :, 0]
        return r.reshape(n1 - n0, r1 - r0, wo, n)

    # the products run 2-4x the float32 GEMM's multiply-adds per second (split: half that): sized as
    # such for the threads
    work = nb * ho * wo * kh * kw * cg * ng // (2 if split else 4)
    return _run_blocks(block, nb, ho, wo, n, work, wide or bound >= 1 << 31, xp, post, bound, blas=False)


def conv_accumulate(x: np.ndarray, w: np.ndarray, *, stride: tuple[int, int] = (1, 1),
                    dilation: tuple[int, int] = (1, 1), pad: tuple[int, int] = (0, 0),
                    out_hw: tuple[int, int], groups: int = 1, x_bound: int | None = None,
                    w_bound: int | None = None) -> tuple[np.ndarray, int]:
    """Exact ``sum_valid(x * w)`` of a (grouped) convolution, (Ho, Wo, N) or (B, Ho, Wo, N).

    Dot products are an im2col matrix product in float32 / float64 when the bound proves them
    exact (see the module docstring), else in int64.

    Args:
        x: (H, W, C) integer input (already centred on its zero point), or (B, H, W, C): a batch of
            independent inputs computed in one pass.
        w: (Kh, Kw, C // groups, N) integer HWCN weights; output channel ``n`` belongs to group
            ``n // (N // groups)``.
        stride, dilation: (height, width).
        pad: (top, left) padding; bottom/right follow from ``out_hw``.
        out_hw: output (height, width).
        groups: number of groups.
        x_bound, w_bound: bounds on ``|x|`` and ``|w|`` (scanned when omitted).

    Returns:
        (sums, bound): int32 sums when the bound ``K * max|x| * max|w|`` on their magnitude is below
        2**31, int64 otherwise.
    """
    xb = _batch(x)
    r, bound = _conv_blocks(xb, w, stride=stride, dilation=dilation, pad=pad, out_hw=out_hw, groups=groups,
                            x_bound=_max_abs(xb) if x_bound is None else x_bound,
                            w_bound=_max_abs(w) if w_bound is None else w_bound)
    return _unbatch(r, np.ndim(x)), bound


def _depthwise_dtype(bound: int) -> np.dtype:
    """int32 / float64 products and sums are exact below their bounds; int64 otherwise."""
    if bound < (1 << 31):
        return np.dtype(np.int32)
    return np.dtype(np.float64) if bound < _F64_EXACT else np.dtype(I64)


def _depthwise_blocks(x: np.ndarray, w: np.ndarray, *, stride: tuple[int, int], dilation: tuple[int, int],
                      pad: tuple[int, int], out_hw: tuple[int, int], x_bound: int, w_bound: int,
                      x_offset: int = 0, post: _OutputStage | None = None,
                      wide: bool = False) -> tuple[np.ndarray, int]:
    """Exact per-channel sums of ``x - x_offset`` (N, H, W, C), optionally finished.

    Each row block is one ``einsum`` over its windows (a strided view of the padded input): a
    single pass with no product temporaries (measured ~1.6x faster than tap-by-tap multiply-adds
    on strided windows). With few channels (at most :data:`FLAT_TAPS_CHANNELS`) and enough outputs
    (:data:`FLAT_TAPS_OUTPUTS`: each tap costs two NumPy calls), the taps are multiply-adds on rows
    instead: a row of ``Wo`` outputs of one tap is a contiguous run of ``Wo * C`` padded inputs
    (with a horizontal stride ``s``, of one of ``s`` column phases copied once), multiplied by the
    tap's weights repeated ``Wo`` times. einsum's inner loop over a handful of channels is slow:
    measured 48x48x8 3x3 68 us against 350 us, 24x24x32 72 us against 112 us, 48x48x16 stride 2
    in a batch of 2 189 us against 293 us; at 64 channels or below ~8k outputs einsum wins.
    ``wide`` as in :func:`_conv_blocks`.

    Returns:
        ((N, Ho, Wo, C) sums or ``post`` values, bound on the sums' magnitude).
    """
    kh, kw, _, c = w.shape
    nb, ho, wo = x.shape[0], out_hw[0], out_hw[1]
    bound = kh * kw * x_bound * w_bound
    dt = _depthwise_dtype(bound)
    hp, wp = _geometry((kh, kw), stride, dilation, out_hw)
    xp = _padded_scratch(x, pad[0], pad[1], hp, wp, dt, x_offset)
    wd = _const_weights(w, post, ("dw", dt.char), lambda: w.reshape(kh, kw, c).astype(dt))

    if c <= FLAT_TAPS_CHANNELS and nb * ho * wo * c >= FLAT_TAPS_OUTPUTS:
        sh, sw, dh, span = stride[0], stride[1], dilation[0], wo * c
        # Column phases: phase p holds the padded columns p, p + sw, ... (contiguous rows), so that
        # the tap in kernel column j reads a contiguous run of phase (j * dw) % sw.
        rows = [xp.reshape(nb, hp, wp * c)] if sw == 1 else \
            [np.ascontiguousarray(xp[:, :, p::sw]).reshape(nb, hp, -1) for p in range(sw)]
        # (kh, kw, wo * c): each tap's weights for a row of outputs
        wrow = _const_weights(w, post, ("dw rows", dt.char, wo), lambda: np.tile(wd, (1, 1, wo)))

        def block(blk: tuple[int, int, int, int]) -> np.ndarray:
            n0, n1, r0, r1 = blk
            # every product and partial sum is bounded by ``bound``: exact in ``dt``
            acc = tmp = None
            for i in range(kh):
                for j in range(kw):
                    col = j * dilation[1]
                    first = (col // sw) * c
                    tap = rows[col % sw][n0:n1, r0 * sh + i * dh:(r1 - 1) * sh + i * dh + 1:sh, first:first + span]
                    if acc is None:
                        acc = np.multiply(tap, wrow[i, j])
                        tmp = np.empty_like(acc)
                    else:
                        np.multiply(tap, wrow[i, j], out=tmp)
                        acc += tmp
            return acc.reshape(n1 - n0, r1 - r0, wo, c)
    else:
        win = _windows(xp, kh, kw, stride[0], stride[1], dilation[0], dilation[1], ho, wo)

        def block(blk: tuple[int, int, int, int]) -> np.ndarray:
            n0, n1, r0, r1 = blk
            return np.einsum("nhwijc,ijc->nhwc", win[n0:n1, r0:r1], wd)

    return _run_blocks(block, nb, ho, wo, c, nb * ho * wo * c * kh * kw, wide or bound >= 1 << 31, xp, post,
                       bound, blas=False), bound


def depthwise_accumulate(x: np.ndarray, w: np.ndarray, *, stride: tuple[int, int] = (1, 1),
                         dilation: tuple[int, int] = (1, 1), pad: tuple[int, int] = (0, 0),
                         out_hw: tuple[int, int], x_bound: int | None = None,
                         w_bound: int | None = None, x_offset: int = 0) -> tuple[np.ndarray, int]:
    """Exact ``sum_valid((x - x_offset) * w)`` per channel.

    Args:
        x: (H, W, C) integer input, or (B, H, W, C): a batch computed in one pass.
        w: (Kh, Kw, 1, C) integer weights.
        stride, dilation, pad, out_hw: as :func:`conv_accumulate`.
        x_bound: bound on ``|x - x_offset|`` (scanned when omitted); w_bound: on ``|w|``.
        x_offset: subtracted from ``x`` while it is padded (no centred copy).

    Returns:
        ((Ho, Wo, C) or (B, Ho, Wo, C) sums, bound): int32 below 2**31, else int64.
    """
    xb = _batch(x)
    xm = _max_abs(xb.astype(I64) - x_offset) if x_bound is None else x_bound
    r, bound = _depthwise_blocks(xb, w, stride=stride, dilation=dilation, pad=pad, out_hw=out_hw, x_bound=xm,
                                 w_bound=_max_abs(w) if w_bound is None else w_bound, x_offset=x_offset)
    return _unbatch(r, np.ndim(x)), bound


def _zero_inserted(x: np.ndarray, stride: tuple[int, int], fill: int = 0) -> np.ndarray:
    """(..., H, W, C) -> (..., (H - 1) * sh + 1, (W - 1) * sw + 1, C) with ``fill`` (the centred zero)
    between the pixels."""
    h, wd, c = x.shape[-3:]
    sh, sw = stride
    xd = np.full((*x.shape[:-3], (h - 1) * sh + 1, (wd - 1) * sw + 1, c), fill, dtype=x.dtype)
    xd[..., ::sh, ::sw, :] = x
    return xd


def transpose_accumulate(x: np.ndarray, w: np.ndarray, *, stride: tuple[int, int], pad: tuple[int, int],
                         out_hw: tuple[int, int]) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """Exact transpose-convolution sums: ``out[oy, ox] += x[iy, ix] * w[ky, kx]`` for
    ``oy = iy * stride + ky - pad_top`` (same for x).

    Computed as a stride-1 convolution of the zero-inserted input with the mirrored kernel.

    Args:
        x: (H, W, C) integer input, or (B, H, W, C): a batch computed in one pass.
        w: (Kh, Kw, C, N) weights.
        stride, pad: (height, width) stride and (top, left) padding of the transpose convolution.
        out_hw: output (height, width).

    Returns:
        (acc, bound, x_dilated, pads): the sums ((Ho, Wo, N) or (B, Ho, Wo, N)) and their bound, the
        zero-inserted input and the (top, left) padding of the equivalent direct convolution (for
        the zero-point terms).
    """
    kh, kw = w.shape[:2]
    xd = _zero_inserted(np.asarray(x), stride)
    pads = (kh - 1 - pad[0], kw - 1 - pad[1])
    acc, bound = conv_accumulate(xd, w[::-1, ::-1], pad=pads, out_hw=out_hw)
    return acc, bound, xd, np.asarray(pads)


# ------------------------------------------------------------------------------ zero points
def _wzp_terms(xc: np.ndarray, mask: np.ndarray, kh: int, kw: int, *, stride: tuple[int, int],
               dilation: tuple[int, int], pad: tuple[int, int], out_hw: tuple[int, int], groups: int,
               depthwise: bool, a: int, b: int, in_zp: int, w_zp: int, cg: int, n: int) -> np.ndarray:
    """C's weights-zero-point additives: ``-b * in_sum + in_zp * w_zp * taps``.

    ``xc`` is the centred input (``x - a``), ``mask`` 1 on real pixels; ``a``/``b`` the effective
    offsets of the C MACs (``-(int16)(-zp)``); ``taps`` counts the valid kernel taps (rows x
    columns, not times the input channels). ``in_sum`` is the sum of the raw input over the valid
    taps, except for dilated conv2d / group conv2d: there the C ``in_additive`` walks the input
    with undilated steps (see :func:`_undilated_in_sums`).
    """
    kw_ones = np.ones((kh, kw, 1, 1), dtype=I64)
    taps = conv_accumulate(mask[..., None], kw_ones, stride=stride, dilation=dilation, pad=pad, out_hw=out_hw)[0]
    taps = taps.astype(I64)
    if depthwise:
        ones = np.ones((kh, kw, 1, xc.shape[-1]), dtype=I64)
        sx = depthwise_accumulate(xc, ones, stride=stride, dilation=dilation, pad=pad, out_hw=out_hw)[0].astype(I64)
        sum_x = sx + a * taps
    elif dilation != (1, 1):
        sx = _undilated_in_sums(xc.astype(I64) + a, kh, kw, stride=stride, dilation=dilation, pad=pad,
                                out_hw=out_hw, groups=groups)
        sum_x = np.repeat(sx, n // groups, axis=-1)
    else:
        ones = np.ones((kh, kw, cg, groups), dtype=I64)
        sx = conv_accumulate(xc, ones, stride=stride, dilation=dilation, pad=pad, out_hw=out_hw, groups=groups)[0]
        sx = sx.astype(I64)
        sum_x = np.repeat(sx, n // groups, axis=-1) + a * taps * cg
    return -b * sum_x + in_zp * w_zp * taps


def _valid_taps(n_out: int, size: int, k: int, stride: int, dil: int, pad: int) -> tuple[np.ndarray, np.ndarray]:
    """Per output index along one axis: (input index of the first valid tap, number of valid taps)."""
    pos = np.arange(n_out, dtype=I64) * stride - pad
    kmin = np.where(pos < 0, (-pos + dil - 1) // dil, 0)
    kmax = np.minimum((size - 1 - pos) // dil, k - 1)
    cnt = np.maximum(kmax - kmin + 1, 0)
    first = np.clip(pos + kmin * dil, 0, size)
    return first, cnt


def _undilated_in_sums(x: np.ndarray, kh: int, kw: int, *, stride: tuple[int, int], dilation: tuple[int, int],
                       pad: tuple[int, int], out_hw: tuple[int, int], groups: int) -> np.ndarray:
    """Input sums of the C ``in_additive`` of conv2d / group conv2d, (..., Ho, Wo, groups) int64.

    C sums the raw input over a ``rows x columns`` block (the numbers of valid taps) that starts at
    the first valid tap but steps by one pixel instead of by the dilation, over the group's input
    channels. Computed with a 2-D prefix sum of the per-group channel sums.
    """
    lead, (h, w, c) = x.shape[:-3], x.shape[-3:]
    g = x.reshape(*lead, h, w, groups, c // groups).sum(axis=-1, dtype=I64)
    ps = np.zeros((*lead, h + 1, w + 1, groups), dtype=I64)
    ps[..., 1:, 1:, :] = g.cumsum(axis=-3).cumsum(axis=-2)
    r0, nr = _valid_taps(out_hw[0], h, kh, stride[0], dilation[0], pad[0])
    c0, nc = _valid_taps(out_hw[1], w, kw, stride[1], dilation[1], pad[1])
    r1 = np.minimum(r0 + nr, h)[:, None]
    c1 = np.minimum(c0 + nc, w)[None, :]
    r0, c0 = r0[:, None], c0[None, :]
    return ps[..., r1, c1, :] - ps[..., r0, c1, :] - ps[..., r1, c0, :] + ps[..., r0, c0, :]


def _eff_offset(zp: int) -> int:
    """The offset a C MAC really applies: ``-(int16_t)(-zp)``."""
    return -wrap_int(-int(zp), 16)


# ------------------------------------------------------------------------------ output stage
def finish(acc: np.ndarray, bias: np.ndarray, q: Quant, bounds: tuple[int, int],
           acc_bound: int | None = None) -> np.ndarray:
    """Accumulator (exact sum, channels last) -> output values: wrap, bias, requantise, ReLU clamp.

    Args:
        acc: exact sums (int32 or int64).
        bias: (N,) bias values.
        q: quantisation parameters.
        bounds: fused-ReLU clamp, inside the output container range.
        acc_bound: optional bound on ``|acc|``; lets the arithmetic skip wrap-arounds and
            saturations that provably cannot happen and stay in int32.

    Returns:
        int32 or int64 values in the output container range.
    """
    if acc_bound is None or acc_bound >= 1 << 31:
        acc = wrap_acc(acc, q.acc_bits)
        acc_bound = (1 << 31) if q.acc_bits <= 32 else None
    if isinstance(q, FxQuant):
        b = fx_bias(bias, q.bias_shift, q.acc_bits)
        acc = add_bias(acc, b, q.acc_bits, acc_bound)
        nb = None if acc_bound is None else acc_bound + (int(np.abs(b).max()) if b.size else 0)
        out = fx_result_cast(acc, q.out_shift, q.acc_bits, q.out_bits, acc_bound=nb)
        return np.clip(out, bounds[0], bounds[1])
    b, bmax = sa8_bias_bound(bias)
    acc = add_bias(acc, b, 32, acc_bound, bmax)
    nb = None if acc_bound is None else acc_bound + bmax
    mul, sh = q.out_params()
    return sa8_result_cast(acc, mul, sh, q.out_zp, clamp=bounds, acc_bound=nb)


def _centre(x: np.ndarray, q: Quant) -> tuple[np.ndarray, int, int, int]:
    """Input minus the (effective) zero point in the narrowest exact dtype: (xc, a, b, bound on |xc|)."""
    x = np.asarray(x)
    if isinstance(q, Sa8Quant):
        a = _eff_offset(q.in_zp)
        xb = container_bound(x, a)
        if not a:
            return x, 0, _eff_offset(q.w_zp), xb
        dt = np.int16 if xb < (1 << 15) else np.int32
        return x.astype(dt) - dt(a), a, _eff_offset(q.w_zp), xb
    return x, 0, 0, container_bound(x)


# ------------------------------------------------------------------------------ kernels
def _offsets(q: Quant) -> tuple[int, int]:
    """Effective (input, weights) offsets of the C MACs (0, 0 for MLI_FX)."""
    if isinstance(q, Sa8Quant):
        return _eff_offset(q.in_zp), _eff_offset(q.w_zp)
    return 0, 0


def _wide(q: Quant) -> bool:
    """The output stage works in int64 (40-bit accumulator)."""
    return q.acc_bits > 32


class _OutputStage:
    """:func:`finish` with one call's parameters, for the row blocks of :func:`_conv_blocks` & co.

    Called with a block's exact sums (integers, or integer-valued floats) and their bound, and
    ``overwrite=True`` when the sums are a temporary the stage may overwrite. ``dtype`` is the
    output container (int8 or int16), which holds every finished value.

    The FX output stage of a 40-bit accumulator (fx16) runs on float64 sums directly when it is
    exact there: ``v = sum + bias`` is an integer below 2**53, ``v * 2**-s`` is exact (a power of
    two), and so is ``v * 2**-s + 0.5`` (``(v + 2**(s-1)) * 2**-s``, an integer below 2**53 times a
    power of two). ROUND_UP's ``(v + 2**(s-1)) >> s`` is then ``floor(v * 2**-s + 0.5)`` and
    ROUND_CONVERGENT's shift (ties to even) is ``rint(v * 2**-s)``; the output container's
    saturation and the ReLU clamp are one clip (the clamp lies inside the container). That is five
    passes instead of the int64 path's conversion plus seven (measured ~3x faster).

    The sa8 output stage (bias add, requantisation with its two roundings, zero point, clamp) runs
    in float64 too whenever :func:`pymli.arith.requant.sa8_float_cast` proves it exact for the
    call's parameters and sum bound (the plan is made once per bound, with the current rounding).

    With the optional JIT (:mod:`pymli.kernels._jit`) either stage is one compiled pass over the
    block instead (the integer stage of :func:`finish`, element by element, straight into the
    output container), its constants derived once per platform.

    A product may apply the sa8 stage's float32 first pass itself (:meth:`first_stage`; the
    Winograd product folds it in) and then hands the sums over with ``staged=True``.
    """

    def __init__(self, bias: np.ndarray, q: Quant, bounds: tuple[int, int]) -> None:
        self.bias, self.q, self.bounds = bias, q, bounds
        self.dtype = np.dtype(np.int16 if isinstance(q, FxQuant) and q.out_bits > 8 else np.int8)
        self.float_limit = 0  # sums bounded below this take the float64 path
        if isinstance(q, FxQuant) and q.acc_bits > 32 and 0 <= q.out_shift <= 52:
            lo, hi = -(1 << (q.out_bits - 1)), (1 << (q.out_bits - 1)) - 1
            if lo <= bounds[0] <= bounds[1] <= hi:
                b = fx_bias(bias, q.bias_shift, q.acc_bits)
                self.float_bias = b.astype(np.float64)
                self.float_limit = _F64_EXACT - (int(np.abs(b).max()) if b.size else 0) - ((1 << q.out_shift) >> 1)
        self._jit: dict[object, _jit.DepthwiseStage | None] = {}  # platform -> the JIT's constants

    def jit_stage(self) -> _jit.DepthwiseStage | None:
        """The JIT's constants of this stage for the current platform, or None (JIT off, or a shift
        the compiled stage leaves to NumPy)."""
        if not _jit.enabled():
            return None
        key = get_platform()
        if key not in self._jit:
            self._jit[key] = _jit_stage(self.bias, self.q, self.bounds)
        return self._jit[key]

    def sa8_plan(self, bound: int) -> Sa8FloatCast | None:
        """The float64 sa8 output stage for sums bounded by ``bound``, or None (FX, or not exact)."""
        return self.q.float_cast(self.bias, self.bounds, bound) if isinstance(self.q, Sa8Quant) else None

    def first_stage(self, bound: int) -> tuple[np.ndarray | None, np.ndarray] | None:
        """The float32 first pass ``(scale or None, additive)`` of the sa8 stage for sums bounded by
        ``bound`` (:meth:`pymli.arith.requant.Sa8FloatCast.first_stage`), which a product may apply
        itself (then ``staged=True``); None without one, or when the JIT's compiled stage runs."""
        if self.jit_stage() is not None:
            return None
        plan = self.sa8_plan(bound)
        return None if plan is None else plan.first_stage()

    def gil_light(self, block_elems: int, bound: int) -> bool:
        """Run the stage inside the blocks (on the workers): a float64 stage (a few large NumPy
        calls) or a block large enough that its NumPy calls outweigh the Python between them."""
        return (self.float_limit > 0 or block_elems >= GIL_LIGHT_ELEMS or self.sa8_plan(bound) is not None
                or self.jit_stage() is not None)

    def __call__(self, acc: np.ndarray, bound: int, overwrite: bool = False, staged: bool = False) -> np.ndarray:
        if staged:  # float32 sums with the first pass of first_stage(bound) applied
            return self.sa8_plan(bound)(acc, overwrite, staged=True)  # type: ignore[misc]
        out = _jit.finish(acc, bound, self.jit_stage())
        if out is not None:
            return out
        if acc.dtype == np.float64 and bound < self.float_limit:
            v = np.add(acc, self.float_bias, out=acc if overwrite else None)
            sh = self.q.out_shift
            if sh:
                v *= 2.0 ** -sh
                if get_platform().round_mode is RoundMode.UP:
                    v += 0.5
                    np.floor(v, out=v)
                else:
                    np.rint(v, out=v)
            np.clip(v, self.bounds[0], self.bounds[1], out=v)
            return v.astype(self.dtype)
        plan = self.sa8_plan(bound)
        if plan is not None:
            return plan(acc, overwrite)
        return finish(_to_int(acc, bound), self.bias, self.q, self.bounds, bound)


class _StagedStage:
    """``post`` for sums to which the product applied the float32 first pass of
    ``post.first_stage(bound)`` (the interface :func:`_run_blocks` uses)."""

    def __init__(self, post: _OutputStage) -> None:
        self.post, self.dtype = post, post.dtype

    def gil_light(self, block_elems: int, bound: int) -> bool:
        """Always: the float32 stage (a few large NumPy calls)."""
        return True

    def __call__(self, acc: np.ndarray, bound: int, overwrite: bool = False) -> np.ndarray:
        return self.post(acc, bound, overwrite, staged=True)


def conv2d_hwcn(x: np.ndarray, w: np.ndarray, bias: np.ndarray, q: Quant, *, stride: tuple[int, int] = (1, 1),
                dilation: tuple[int, int] = (1, 1), pad: tuple[int, int] = (0, 0), out_hw: tuple[int, int],
                bounds: tuple[int, int], groups: int = 1) -> np.ndarray:
    """``mli_krn_conv2d_hwcn_*`` / ``mli_krn_group_conv2d_hwcn_*``.

    Without a weights zero point the input is centred while it is padded and the output stage
    runs on each row block right after its matrix product (on the block's thread).

    Args:
        x: (H, W, C) input values (container integers), or (B, H, W, C): a batch of B independent
            inputs computed in one pass (one padded array, one im2col matrix and matrix product
            for all samples, cut into row blocks for the threads); each sample's output equals a
            call on that sample alone, bit for bit.
        w: (Kh, Kw, C // groups, N) HWCN weights.
        bias: (N,) bias values.
        q: :class:`FxQuant` or :class:`Sa8Quant`.
        stride, dilation: (height, width).
        pad: (top, left) padding (bottom / right follow from ``out_hw``).
        out_hw: output (height, width).
        bounds: fused-ReLU clamp (:func:`pymli.arith.requant.relu_bounds`).
        groups: group count (1 for conv2d).

    Returns:
        (Ho, Wo, N) output values, or (B, Ho, Wo, N) for a batch: integers in the output container
        range (dtype int32 or int64, or the container's when the call was cut into blocks).
    """
    x = np.asarray(x)
    xb = _batch(x)
    geo = {"stride": stride, "dilation": dilation, "pad": pad, "out_hw": out_hw}
    a, b = _offsets(q)
    if not b:
        post = _OutputStage(bias, q, bounds)
        found = _int_applies(xb, w, groups, a, q.acc_bits)
        if found is not None:
            return _unbatch(_conv_int(xb, w, found, **geo, groups=groups, x_offset=a, post=post, wide=_wide(q)),
                            x.ndim)
        out, _ = _conv_blocks(xb, w, **geo, groups=groups, x_bound=container_bound(x, a), w_bound=container_bound(w),
                              x_offset=a, post=post, wide=_wide(q))
        return _unbatch(out, x.ndim)
    xc, a, b, xbnd = _centre(xb, q)
    acc, bound = _conv_blocks(xc, w, **geo, groups=groups, x_bound=xbnd, w_bound=container_bound(w))
    out = _finish_centred(acc, bound, xc, w.shape, bias, q, bounds, a, b, groups=groups, depthwise=False,
                          cg=w.shape[2], **geo)
    return _unbatch(out, x.ndim)


def _finish_centred(acc: np.ndarray, bound, xc: np.ndarray,  # type: ignore[no-untyped-def]
                    w_shape: tuple[int, ...], bias: np.ndarray, q: Quant, bounds: tuple[int, int], a, b, *,
                    groups: int, depthwise: bool, cg: int, **geo) -> np.ndarray:
    """Add the weight-zero-point terms (when ``b``) to a centred (N, Ho, Wo, C) accumulation, then :func:`finish`."""
    if b:
        mask = np.ones(xc.shape[-3:-1], dtype=I64)
        bound = None
        acc = acc.astype(I64) + _wzp_terms(xc, mask, w_shape[0], w_shape[1], **geo, groups=groups, depthwise=depthwise,
                                           a=a, b=b, in_zp=q.in_zp, w_zp=q.w_zp, cg=cg, n=w_shape[3])
    return finish(acc, bias, q, bounds, bound)


def group_conv2d_hwcn(x: np.ndarray, w: np.ndarray, bias: np.ndarray, q: Quant, **kw: object) -> np.ndarray:
    """``mli_krn_group_conv2d_hwcn_*``: :func:`conv2d_hwcn` with ``groups = C // w.shape[2]``.

    ``x`` is (H, W, C) or a batch (B, H, W, C), as in :func:`conv2d_hwcn`.
    """
    return conv2d_hwcn(x, w, bias, q, groups=np.shape(x)[-1] // w.shape[2], **kw)  # type: ignore[arg-type]


def _jit_stage(bias: np.ndarray, q: Quant, bounds: tuple[int, int]) -> _jit.DepthwiseStage | None:
    """The output stage of :func:`finish` as constants of the JIT loop nest (:mod:`pymli.kernels._jit`)."""
    if isinstance(q, Sa8Quant):
        mul, sh = q.out_params()
        return _jit.sa8_stage(bias, mul, sh, q.out_zp, bounds)
    return _jit.fx_stage(bias, q.bias_shift, q.out_shift, q.acc_bits, q.out_bits, bounds)


def depthwise_conv2d_hwcn(x: np.ndarray, w: np.ndarray, bias: np.ndarray, q: Quant, *,
                          stride: tuple[int, int] = (1, 1), dilation: tuple[int, int] = (1, 1),
                          pad: tuple[int, int] = (0, 0), out_hw: tuple[int, int],
                          bounds: tuple[int, int]) -> np.ndarray:
    """``mli_krn_depthwise_conv2d_hwcn_*``.

    Args:
        x: (H, W, C) input values, or (B, H, W, C): a batch computed in one pass (one padded array,
            row blocks over the threads), each sample's output bit-identical to a call on it alone.
        w: (Kh, Kw, 1, C) weights; bias: (C,).
        q, stride, dilation, pad, out_hw, bounds: as :func:`conv2d_hwcn`.

    Returns:
        (Ho, Wo, C) output values, or (B, Ho, Wo, C) for a batch (dtype as :func:`conv2d_hwcn`).
    """
    x = np.asarray(x)
    xb = _batch(x)
    geo = {"stride": stride, "dilation": dilation, "pad": pad, "out_hw": out_hw}
    a, b = _offsets(q)
    if not b and _jit.enabled():
        out = _jit.depthwise(xb, w, a, _jit_stage(bias, q, bounds), **geo)
        if out is not None:
            return _unbatch(out, x.ndim)
    if not b:
        # The input is centred while it is padded (no centred copy); the output stage runs per block.
        out, _ = _depthwise_blocks(xb, w, **geo, x_bound=container_bound(x, a), w_bound=container_bound(w),
                                   x_offset=a, post=_OutputStage(bias, q, bounds), wide=_wide(q))
        return _unbatch(out, x.ndim)
    xc, a, b, xbnd = _centre(xb, q)
    acc, bound = _depthwise_blocks(xc, w, **geo, x_bound=xbnd, w_bound=container_bound(w))
    out = _finish_centred(acc, bound, xc, w.shape, bias, q, bounds, a, b, groups=w.shape[3], depthwise=True, cg=1,
                          **geo)
    return _unbatch(out, x.ndim)


def transpose_conv2d_hwcn(x: np.ndarray, w: np.ndarray, bias: np.ndarray, q: Quant, *,
                          stride: tuple[int, int], pad: tuple[int, int], out_hw: tuple[int, int],
                          bounds: tuple[int, int]) -> np.ndarray:
    """``mli_krn_transpose_conv2d_hwcn_*``.

    Args:
        x: (H, W, C) input values, or (B, H, W, C): a batch computed in one pass.
        w: (Kh, Kw, C, N) weights; bias: (N,).
        q, bounds: as :func:`conv2d_hwcn`.
        stride: (height, width); pad: (top, left); out_hw: output (height, width).

    Returns:
        (Ho, Wo, N) output values, or (B, Ho, Wo, N) for a batch (dtype as :func:`conv2d_hwcn`).
    """
    x = np.asarray(x)
    a, b = _offsets(q)
    if not b:
        kh, kw = w.shape[:2]
        post = _OutputStage(bias, q, bounds)

        def mirrored() -> np.ndarray:
            # a copy as read-only as ``w``: only a constant one is memoised again by the kernels (a
            # fresh view of ``w`` per call would add a memo entry per call)
            m = np.ascontiguousarray(w[::-1, ::-1])
            m.flags.writeable = w.flags.writeable
            return m

        wm = _const_weights(w, post, ("mirrored",), mirrored)
        geo = {"stride": (1, 1), "dilation": (1, 1), "pad": (kh - 1 - pad[0], kw - 1 - pad[1]), "out_hw": out_hw}
        xb = _batch(x)
        found = _int_applies(xb, w, 1, a, q.acc_bits) if -128 <= a <= 127 else None
        if found is not None:  # the raw input, the zero point (a centred 0) between its pixels
            return _unbatch(_conv_int(_zero_inserted(xb, stride, a), wm, found, **geo, groups=1, x_offset=a,
                                      post=post, wide=_wide(q)), x.ndim)
        xd = _zero_inserted(_centre(xb, q)[0], stride)
        out, _ = _conv_blocks(xd, wm, **geo, groups=1, x_bound=_max_abs(xd), w_bound=_max_abs(w), post=post,
                              wide=_wide(q))
        return _unbatch(out, x.ndim)
    xc = _centre(_batch(x), q)[0]
    acc, bound, xd, pads = transpose_accumulate(xc, w, stride=stride, pad=pad, out_hw=out_hw)
    kh, kw, cg, n = w.shape
    mask = np.zeros(xd.shape[-3:-1], dtype=I64)
    mask[::stride[0], ::stride[1]] = 1
    acc = acc.astype(I64) + _wzp_terms(xd, mask, kh, kw, stride=(1, 1), dilation=(1, 1),
                                       pad=(int(pads[0]), int(pads[1])), out_hw=out_hw, groups=1, depthwise=False,
                                       a=a, b=b, in_zp=q.in_zp, w_zp=q.w_zp, cg=cg, n=n)
    return _unbatch(finish(acc, bias, q, bounds, None), x.ndim)

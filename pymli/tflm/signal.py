"""TFLite Micro signal-library CUSTOM operators (the micro_speech audio front end), bit-exact.

The kernels mirror ``signal/src/*.cc`` and ``signal/micro/kernels/*.cc`` of tflite-micro (and the
kiss_fft v130 those wrap, fixed point and float): one pure NumPy function per operator, vectorised,
exact integer arithmetic in int64 / uint64 with every C narrowing (``int16_t`` store, ``uint32_t``
product, ``int32_t`` sum) modelled by an explicit wrap; float32 in the C operation order. Below
them, one handler per operator with the signature of :mod:`pymli.tflm.handlers`
(``handler(graph, op, inputs) -> outputs``), registered in :data:`HANDLERS` under
``"CUSTOM:" + custom_code`` (``CUSTOM:SignalWindow``, ...).

Options are the operator's flexbuffer map; TFLM reads them by position in the key-sorted map
(``FlexbufferWrapper::ElementAsInt32(index)``), and so do we.

State: SpectralSubtraction (noise estimate), Delay, Framer, Stacker and OverlapAdd keep state in
persistent buffers (not tensors) that TFLM sets at Prepare and at ``Reset``. The handlers keep it in
the mapping ``graph.extra["op_state"]`` (key ``("signal", op.index)``) when the runner provides one
(the :func:`pymli.testing.tflm_golden.run_graph` state dict: a new dict is a reset interpreter,
passing the same dict again carries the state over as successive Invokes do); without one every call
starts from the reset state.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import numpy.typing as npt
from flatbuffers import flexbuffers

from ..arith.rounding import wrap
from ..errors import MliError, Status

__all__ = [
    "HANDLERS",
    "custom_options",
    "window",
    "fft_auto_scale",
    "rfft",
    "energy",
    "filter_bank",
    "filter_bank_square_root",
    "filter_bank_spectral_subtraction",
    "SpectralSubtractionConfig",
    "pcan",
    "filter_bank_log",
    "irfft",
    "delay",
    "framer",
    "stacker",
    "overlap_add",
    "max_abs16",
    "msb32",
    "sqrt64",
    "log32",
]

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
_M32 = np.int64(0xFFFFFFFF)


def _bad(msg: str) -> MliError:
    return MliError(Status.BAD_TENSOR, msg)


# --------------------------------------------------------------------------------------------------
# small integer helpers (signal/src/msb_32.cc, max_abs.cc, square_root_64.cc, log.cc)
# --------------------------------------------------------------------------------------------------

def msb32(x: npt.ArrayLike) -> I64:
    """``MostSignificantBit32`` (GCC build): the 1-based position of the highest set bit, 32 for 0.

    Args:
        x: uint32 values (any integer dtype; taken modulo 2**32).

    Returns:
        int64 array, 1..32.
    """
    v = np.asarray(x).astype(np.int64) & _M32
    # frexp is exact for every integer below 2**53: v = m * 2**e with 0.5 <= m < 1, so e = bit length
    e = np.frexp(v.astype(np.float64))[1].astype(np.int64)
    return np.where(v == 0, 32, e)


def max_abs16(x: npt.ArrayLike) -> int:
    """``MaxAbs16`` (portable C): the running ``max`` over ``|x|`` kept in an ``int16_t``.

    ``-(-32768)`` stored to the int16 ``max`` wraps back to -32768, after which the scan takes
    ``v`` while it rises and ``-v`` otherwise; this follows the C loop exactly without iterating:
    after the last -32768 the running value is negative only while the values rise strictly and stay
    negative, and from the first element that breaks that run on it is the plain maximum of ``|v|``.

    Args:
        x: int16 values, 1-D.

    Returns:
        the int16 value the C function returns (negative only after a -32768).
    """
    v = np.asarray(x).astype(np.int64).ravel()
    hit = np.flatnonzero(v == -32768)
    if hit.size == 0:
        return int(np.max(np.abs(v), initial=0))
    s = v[hit[-1] + 1:]
    if s.size == 0:
        return -32768
    brk = s >= 0
    brk[1:] |= s[1:] <= s[:-1]
    k = np.flatnonzero(brk)
    if k.size == 0:
        return int(s[-1])
    return int(np.max(np.abs(s[k[0]:])))


def _isqrt_floor(n: U64) -> U64:
    """Exact ``floor(sqrt(n))`` for uint64 ``n``: a float64 estimate (within 1 of the root for every
    n < 2**64) corrected by exact uint64 comparisons."""
    r = np.minimum(np.floor(np.sqrt(n.astype(np.float64))), 4294967295.0).astype(np.uint64)
    over = r * r > n  # r <= 2**32 - 1, so r*r does not overflow
    r = np.where(over, r - np.uint64(1), r)
    r1 = r + np.uint64(1)
    under = (r < np.uint64(4294967295)) & (r1 * r1 <= n)
    return np.where(under, r1, r)


def sqrt64(x: npt.ArrayLike) -> U64:
    """``Sqrt64`` (and ``Sqrt32`` below 2**32): the digit-by-digit integer root rounded to nearest
    (remainder > root increments it), except at the type's maximum (0xFFFF for the 32-bit path,
    0xFFFFFFFF for the 64-bit path).

    Args:
        x: uint64 values.

    Returns:
        uint64 array of the uint32 results.
    """
    n = np.asarray(x).astype(np.uint64)
    r = _isqrt_floor(n)
    rem = n - r * r
    cap = np.where(n >> np.uint64(32) == 0, np.uint64(0xFFFF), np.uint64(0xFFFFFFFF))
    return np.where((rem > r) & (r != cap), r + np.uint64(1), r)


_LOG_LUT = np.array([
    0, 224, 442, 654, 861, 1063, 1259, 1450, 1636, 1817, 1992, 2163, 2329, 2490, 2646, 2797, 2944,
    3087, 3224, 3358, 3487, 3611, 3732, 3848, 3960, 4068, 4172, 4272, 4368, 4460, 4549, 4633, 4714,
    4791, 4864, 4934, 5001, 5063, 5123, 5178, 5231, 5280, 5326, 5368, 5408, 5444, 5477, 5507, 5533,
    5557, 5578, 5595, 5610, 5622, 5631, 5637, 5640, 5641, 5638, 5633, 5626, 5615, 5602, 5586, 5568,
    5547, 5524, 5498, 5470, 5439, 5406, 5370, 5332, 5291, 5249, 5203, 5156, 5106, 5054, 5000, 4944,
    4885, 4825, 4762, 4697, 4630, 4561, 4490, 4416, 4341, 4264, 4184, 4103, 4020, 3935, 3848, 3759,
    3668, 3575, 3481, 3384, 3286, 3186, 3084, 2981, 2875, 2768, 2659, 2549, 2437, 2323, 2207, 2090,
    1971, 1851, 1729, 1605, 1480, 1353, 1224, 1094, 963, 830, 695, 559, 421, 282, 142, 0, 0],
    np.int64)  # log2(1 + x) - x on 128 segments of [0, 1), Q16 (signal/src/log.cc kLogLut)


def log32(x: npt.ArrayLike, out_scale: int) -> I64:
    """``Log32``: ``round(ln(x) * out_scale)`` in TFLM's fixed point (Q16 log2 with a 128-segment
    linear-interpolated correction table, times ln 2 = 45426 / 65536), uint32 arithmetic.

    Args:
        x: uint32 values, each > 1.
        out_scale: the output scale (uint32).

    Returns:
        int64 array of the uint32 results.
    """
    v = np.asarray(x).astype(np.int64) & _M32
    integer = msb32(v) - 1
    frac = v - (np.int64(1) << integer)  # < 2**31: fits the C int32_t
    frac = np.where(integer < 16, frac << np.maximum(16 - integer, 0), frac >> np.maximum(integer - 16, 0))
    seg = frac >> 9
    c0, c1 = _LOG_LUT[seg], _LOG_LUT[seg + 1]
    rel = ((c1 - c0) * (frac - (seg << 9))) >> 16  # int32 product, arithmetic shift (floor)
    fraction = (frac + c0 + rel) & _M32
    log2 = ((integer << 16) + fraction) & _M32
    loge = ((np.uint64(45426) * log2.astype(np.uint64) + np.uint64(32768)) >> np.uint64(16)).astype(
        np.int64) & _M32
    scaled = ((np.int64(out_scale) & _M32) * loge) & _M32  # uint32 product: wraps
    return ((scaled + 32768) & _M32) >> 16


# --------------------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------------------

def window(x: np.ndarray, weights: np.ndarray, shift: int) -> np.ndarray:
    """``SignalWindow``: ``sat16((int32(x) * w) >> shift)`` over consecutive frames of ``len(w)``.

    Args:
        x: int16, any shape whose element count is a multiple of ``len(weights)``.
        weights: int16, 1-D (the window, typically Q``shift``).
        shift: right shift (arithmetic), 0..31.

    Returns:
        int16 array in the shape of ``x``.
    """
    w = np.asarray(weights).astype(np.int64)
    xs = np.asarray(x).astype(np.int64).reshape(-1, w.size)
    raw = (xs * w) >> shift
    return np.clip(raw, -32768, 32767).astype(np.int16).reshape(np.shape(x))


def fft_auto_scale(x: np.ndarray) -> tuple[np.ndarray, int]:
    """``SignalFftAutoScale``: shift the frame left so its largest magnitude fills 15 bits.

    ``scale_bits = max(0, 15 - MostSignificantBit32(MaxAbs16(x)))``; ``out = int16(x << scale_bits)``.

    Args:
        x: int16, 1-D.

    Returns:
        ``(int16 array, scale_bits)``.
    """
    v = np.asarray(x).astype(np.int64)
    m = max_abs16(v)
    sb = max(0, 16 - int(msb32(m)) - 1)
    return wrap(v << sb, 16).astype(np.int16), sb


# kiss_fft v130 scalar arithmetic. FIXED_POINT 16 / 32: every stage divides by its radix (C_FIXDIV)
# and rounds products with sround(x) = (x + 2**(B-2)) >> (B-1) in the SAMPPROD type (int32 / int64);
# each store into a kiss_fft_scalar wraps to B bits (wraps are exact modulo 2**B, so one wrap after a
# sum of promoted ints is the C result). Float: float32 operations in the C order (no FMA contraction:
# the x86-64 build has none), no C_FIXDIV, HALF_OF(x) = x * 0.5f.

class _Arith:
    """kiss_fft's scalar operations for ``bits`` 16 or 32 (fixed point) or 0 (float32)."""

    def __init__(self, bits: int) -> None:
        self.bits = bits
        self.fixed = bits > 0

    def w(self, x: Any) -> Any:
        return wrap(x, self.bits) if self.fixed else x

    def add(self, a: Any, b: Any) -> Any:
        return self.w(a + b)

    def sub(self, a: Any, b: Any) -> Any:
        return self.w(a - b)

    def neg(self, a: Any) -> Any:
        return self.w(-a)

    def sum3(self, a: Any, b: Any, c: Any) -> Any:
        return self.w(a + b + c)  # C: ((a + b) + c), rounded per step in float32

    def sround(self, x: Any) -> Any:
        b = self.bits
        return wrap(wrap(x + (1 << (b - 2)), 2 * b) >> (b - 1), b)

    def smul(self, a: Any, b: Any) -> Any:
        """``S_MUL`` / ``C_MULBYSCALAR``."""
        return self.sround(a * b) if self.fixed else a * b

    def cmul(self, ar: Any, ai: Any, br: Any, bi: Any) -> tuple[Any, Any]:
        if self.fixed:
            return self.sround(ar * br - ai * bi), self.sround(ar * bi + ai * br)
        return ar * br - ai * bi, ar * bi + ai * br

    def fixdiv(self, r: Any, i: Any, div: int) -> tuple[Any, Any]:
        if not self.fixed:
            return r, i
        k = ((1 << (self.bits - 1)) - 1) // div  # SAMP_MAX / div
        return self.sround(r * k), self.sround(i * k)

    def half(self, x: Any) -> Any:
        """``HALF_OF`` of an already stored scalar."""
        return x >> 1 if self.fixed else x * np.float32(0.5)

    def half_sum(self, a: Any, b: Any) -> Any:
        """``HALF_OF(a + b)`` stored: the promoted int sum is halved before the store wraps it."""
        return self.w((a + b) >> 1) if self.fixed else (a + b) * np.float32(0.5)

    def half_diff(self, a: Any, b: Any) -> Any:
        return self.w((a - b) >> 1) if self.fixed else (a - b) * np.float32(0.5)

    def table(self, ph: list[float]) -> tuple[np.ndarray, np.ndarray]:
        """``kf_cexp`` of each phase (libm ``cos``/``sin`` as ``math.cos``/``math.sin``, once per
        length): ``floor(.5 + SAMP_MAX * cos)`` in fixed point, ``(float)cos`` in float."""
        if not self.fixed:
            return (np.array([math.cos(p) for p in ph], np.float64).astype(np.float32),
                    np.array([math.sin(p) for p in ph], np.float64).astype(np.float32))
        smax = (1 << (self.bits - 1)) - 1
        return (np.array([math.floor(.5 + smax * math.cos(p)) for p in ph], np.int64),
                np.array([math.floor(.5 + smax * math.sin(p)) for p in ph], np.int64))

    def dtype(self) -> Any:
        return np.int64 if self.fixed else np.float32


def _kf_factor(n: int) -> list[tuple[int, int]]:
    """``kf_factor``: radix 4 first, then 2, then odd numbers; ``(p, m)`` per stage."""
    out, p = [], 4
    floor_sqrt = math.floor(math.sqrt(n))
    while True:
        while n % p:
            p = 2 if p == 4 else 3 if p == 2 else p + 2
            if p > floor_sqrt:
                p = n
        n //= p
        out.append((p, n))
        if n <= 1:
            return out


@functools.lru_cache(maxsize=None)
def _twiddles(n: int, bits: int, inverse: bool) -> tuple[np.ndarray, np.ndarray]:
    """``kiss_fft_alloc`` twiddles: phase ``-2 pi i / n`` (negated for the inverse)."""
    pi = 3.141592653589793238462643383279502884197169399375105820974944
    return _Arith(bits).table([(-2 * pi * i / n) * (-1 if inverse else 1) for i in range(n)])


@functools.lru_cache(maxsize=None)
def _super_twiddles(ncfft: int, bits: int, inverse: bool) -> tuple[np.ndarray, np.ndarray]:
    """``kiss_fftr_alloc`` super twiddles: phase ``-pi * ((i + 1) / ncfft + .5)``."""
    return _Arith(bits).table([-3.14159265358979323846264338327 * ((i + 1) / ncfft + .5)
                               * (-1 if inverse else 1) for i in range(ncfft // 2)])


@functools.lru_cache(maxsize=None)
def _input_order(factors: tuple[tuple[int, int], ...]) -> I64:
    """Where ``kf_work``'s recursion reads each element of the stage-0 buffer from."""
    order = np.zeros(1, np.int64)
    stride = int(np.prod([p for p, _ in factors]))
    for p, _ in reversed(factors):
        stride //= p
        order = (np.arange(p, dtype=np.int64)[:, None] * stride + order[None, :]).ravel()
    return order


def _stage(re: Any, im: Any, p: int, m: int, s: int, n: int, twr: Any, twi: Any, A: _Arith,
           inverse: bool) -> tuple[Any, Any]:
    """One ``kf_bfly{2,3,4,5,_generic}`` over every group: ``re``/``im`` shaped ``(..., p, m)``."""
    u = np.arange(m, dtype=np.int64)
    fr, fi = A.fixdiv(re, im, p)
    F = [(fr[..., q, :], fi[..., q, :]) for q in range(p)]

    def tw(q: int) -> tuple[Any, Any]:
        k = q * u * s
        return twr[k], twi[k]

    def cadd(a: tuple, b: tuple) -> tuple:
        return A.add(a[0], b[0]), A.add(a[1], b[1])

    def csub(a: tuple, b: tuple) -> tuple:
        return A.sub(a[0], b[0]), A.sub(a[1], b[1])

    if p == 2:
        t = A.cmul(*F[1], *tw(1))
        outs = [cadd(F[0], t), csub(F[0], t)]
    elif p == 4:
        s0, s1, s2 = (A.cmul(*F[q], *tw(q)) for q in (1, 2, 3))
        s5 = csub(F[0], s1)
        f0 = cadd(F[0], s1)
        s3, s4 = cadd(s0, s2), csub(s0, s2)
        o2, o0 = csub(f0, s3), cadd(f0, s3)
        if inverse:
            o1 = (A.sub(s5[0], s4[1]), A.add(s5[1], s4[0]))
            o3 = (A.add(s5[0], s4[1]), A.sub(s5[1], s4[0]))
        else:
            o1 = (A.add(s5[0], s4[1]), A.sub(s5[1], s4[0]))
            o3 = (A.sub(s5[0], s4[1]), A.add(s5[1], s4[0]))
        outs = [o0, o1, o2, o3]
    elif p == 3:
        epi = twi[s * m]  # epi3 = tw[n/3]: kf_bfly3 uses only its imaginary part
        s1, s2 = A.cmul(*F[1], *tw(1)), A.cmul(*F[2], *tw(2))
        s3, s0 = cadd(s1, s2), csub(s1, s2)
        o1 = (A.sub(F[0][0], A.half(s3[0])), A.sub(F[0][1], A.half(s3[1])))
        s0 = (A.smul(s0[0], epi), A.smul(s0[1], epi))
        o0 = cadd(F[0], s3)
        o2 = (A.add(o1[0], s0[1]), A.sub(o1[1], s0[0]))
        o1 = (A.sub(o1[0], s0[1]), A.add(o1[1], s0[0]))
        outs = [o0, o1, o2]
    elif p == 5:
        yar, yai = twr[s * m], twi[s * m]
        ybr, ybi = twr[2 * s * m], twi[2 * s * m]
        s0 = F[0]
        s1, s2, s3, s4 = (A.cmul(*F[q], *tw(q)) for q in (1, 2, 3, 4))
        s7, s10 = cadd(s1, s4), csub(s1, s4)
        s8, s9 = cadd(s2, s3), csub(s2, s3)
        sm = A.smul
        o0 = (A.w(s0[0] + A.w(s7[0] + s8[0])), A.w(s0[1] + A.w(s7[1] + s8[1])))  # F0 += s7 + s8
        s5 = (A.sum3(s0[0], sm(s7[0], yar), sm(s8[0], ybr)), A.sum3(s0[1], sm(s7[1], yar), sm(s8[1], ybr)))
        s6 = (A.add(sm(s10[1], yai), sm(s9[1], ybi)), A.sub(-sm(s10[0], yai), sm(s9[0], ybi)))
        s11 = (A.sum3(s0[0], sm(s7[0], ybr), sm(s8[0], yar)),
               A.sum3(s0[1], sm(s7[1], ybr), sm(s8[1], yar)))
        s12 = (A.add(-sm(s10[1], ybi), sm(s9[1], yai)), A.sub(sm(s10[0], ybi), sm(s9[0], yai)))
        outs = [o0, csub(s5, s6), cadd(s11, s12), csub(s11, s12), cadd(s5, s6)]
    else:  # kf_bfly_generic (unreachable from rfft/irfft, which refuse it as TFLM cannot run it;
        # kept as the specification): output q1 sums scratch[q] * tw[(q * s * k) mod n] over q
        outs = []
        for q1 in range(p):
            k = u + q1 * m
            acc = F[0]
            for q in range(1, p):
                idx = (q * s * k) % n
                acc = cadd(acc, A.cmul(*F[q], twr[idx], twi[idx]))
            outs.append(acc)
    return (np.stack([o[0] for o in outs], axis=-2), np.stack([o[1] for o in outs], axis=-2))


def _kiss_fft(re: Any, im: Any, A: _Arith, inverse: bool = False) -> tuple[Any, Any]:
    """``kiss_fft`` of complex rows ``re + i im`` (int64 or float32 arrays, shape (..., n))."""
    n = re.shape[-1]
    factors = tuple(_kf_factor(n))
    twr, twi = _twiddles(n, A.bits, inverse)
    order = _input_order(factors)
    re, im = re[..., order], im[..., order]
    lead = re.shape[:-1]
    for st in range(len(factors) - 1, -1, -1):
        p, m = factors[st]
        s = int(np.prod([f[0] for f in factors[:st]], dtype=np.int64))
        shp = lead + (n // (p * m), p, m)
        re, im = _stage(re.reshape(shp), im.reshape(shp), p, m, s, n, twr, twi, A, inverse)
        re, im = re.reshape(lead + (n,)), im.reshape(lead + (n,))
    return re, im


_FFT_TYPES = {np.dtype(np.int16): 16, np.dtype(np.int32): 32, np.dtype(np.float32): 0}


def _check_radices(name: str, fft_length: int) -> None:
    """TFLM patches kiss_fft's allocator to return NULL, so a radix other than 2..5 (a prime above 5,
    or the single radix-1 stage of fft_length 2) runs ``kf_bfly_generic``, whose scratch buffer is
    that null pointer: the device crashes, we refuse."""
    bad = [p for p, _ in _kf_factor(fft_length // 2) if p not in (2, 3, 4, 5)]
    if bad:
        raise MliError(Status.NOT_SUPPORTED,
                       f"{name}: fft_length {fft_length} needs kiss_fft radix {bad[0]}, which TFLM's "
                       f"kiss_fft (no allocator) cannot run; use lengths 2 * 2^a 3^b 5^c >= 4")


def _fft_arith(name: str, dtype: Any, fft_length: int) -> _Arith:
    dt = np.dtype(dtype)
    if dt not in _FFT_TYPES:
        raise MliError(Status.NOT_SUPPORTED, f"{name}: {dt} (int16, int32 or float32)")
    if fft_length < 2 or fft_length % 2:
        raise _bad(f"{name}: fft_length {fft_length} must be even and >= 2")
    _check_radices(name, fft_length)
    return _Arith(_FFT_TYPES[dt])


def rfft(x: np.ndarray, fft_length: int) -> np.ndarray:
    """``SignalRfft``: kiss_fftr of each frame zero-padded to ``fft_length`` (int16 / int32 fixed
    point, or float32).

    In fixed point the real FFT of length N runs as a complex FFT of N/2 points (every stage divided
    by its radix) followed by kiss_fftr's split, itself halving: the result is the DFT divided by N.
    In float32 it is the plain DFT.

    Args:
        x: int16, int32 or float32, shape (..., L) with L <= fft_length.
        fft_length: even FFT length N.

    Returns:
        array of ``x``'s dtype, shape (..., N + 2): ``N/2 + 1`` interleaved (real, imag) pairs.

    Raises:
        MliError: odd ``fft_length``, frames longer than it, another dtype, or a length with a
            factor kiss_fft runs generically (NOT_SUPPORTED: TFLM crashes there).
    """
    xa = np.asarray(x)
    A = _fft_arith("SignalRfft", xa.dtype, fft_length)
    if xa.shape[-1] > fft_length:
        raise _bad(f"SignalRfft: frame length {xa.shape[-1]} exceeds fft_length {fft_length}")
    lead = xa.shape[:-1]
    buf = np.zeros(lead + (fft_length,), A.dtype())
    buf[..., :xa.shape[-1]] = xa
    nc = fft_length // 2
    tr, ti = _kiss_fft(buf[..., 0::2], buf[..., 1::2], A)
    out_r = np.zeros(lead + (nc + 1,), A.dtype())
    out_i = np.zeros(lead + (nc + 1,), A.dtype())
    dr, di = A.fixdiv(tr[..., 0], ti[..., 0], 2)
    out_r[..., 0] = A.add(dr, di)
    out_r[..., nc] = A.sub(dr, di)
    k = np.arange(1, nc // 2 + 1)
    if k.size:
        str_, sti = _super_twiddles(nc, A.bits, False)
        fk = A.fixdiv(tr[..., k], ti[..., k], 2)
        fnk = A.fixdiv(tr[..., nc - k], A.neg(ti[..., nc - k]), 2)
        f1r, f1i = A.add(fk[0], fnk[0]), A.add(fk[1], fnk[1])
        f2r, f2i = A.sub(fk[0], fnk[0]), A.sub(fk[1], fnk[1])
        twr, twi = A.cmul(f2r, f2i, str_[k - 1], sti[k - 1])
        out_r[..., k] = A.half_sum(f1r, twr)
        out_i[..., k] = A.half_sum(f1i, twi)
        # k == nc/2 writes the same bin twice; the second store wins, as in the C loop
        out_r[..., nc - k] = A.half_diff(f1r, twr)
        out_i[..., nc - k] = A.half_diff(twi, f1i)
    out = np.stack([out_r, out_i], axis=-1).reshape(lead + (2 * (nc + 1),))
    return out.astype(xa.dtype)


def energy(spectrum: np.ndarray, start_index: int, end_index: int, out_length: int) -> np.ndarray:
    """``SignalEnergy``: ``re**2 + im**2`` (int32 sum stored as uint32) of bins [start, end).

    TFLM writes only those bins; the others keep what the output buffer held (we return 0 there).

    Args:
        spectrum: int16, 1-D interleaved (real, imag) pairs.
        start_index: first bin.
        end_index: one past the last bin.
        out_length: the output tensor's length (>= end_index).

    Returns:
        uint32 array of ``out_length``.

    Raises:
        MliError: bins outside the spectrum or the output.
    """
    c = np.asarray(spectrum).astype(np.int64).reshape(-1, 2)
    if not 0 <= start_index <= end_index <= min(c.shape[0], out_length):
        raise _bad(f"SignalEnergy: bins [{start_index}, {end_index}) outside the spectrum "
                   f"({c.shape[0]} bins) or the output ({out_length})")
    out = np.zeros(out_length, np.int64)
    b = c[start_index:end_index]
    out[start_index:end_index] = (b[:, 0] * b[:, 0] + b[:, 1] * b[:, 1]) & _M32
    return out.astype(np.uint32)


def filter_bank(x: np.ndarray, weights: np.ndarray, unweights: np.ndarray, freq_starts: np.ndarray,
                weight_starts: np.ndarray, widths: np.ndarray, num_channels: int) -> np.ndarray:
    """``SignalFilterBank``: triangular mel channels accumulated in uint64.

    Channel ``i`` (0..num_channels) sums ``weights * x`` over its band and passes its ``unweights * x``
    sum on to channel ``i + 1``; the output drops channel 0 (the band below the first channel).

    Args:
        x: uint32 energies, 1-D.
        weights, unweights: int16 (Q12 typically), 1-D.
        freq_starts, weight_starts, widths: int16, ``num_channels + 1`` each.
        num_channels: number of output channels.

    Returns:
        uint64 array of ``num_channels``.

    Raises:
        MliError: a band outside ``x`` or the weight tables.
    """
    nc1 = num_channels + 1
    fs, ws, wd = (np.asarray(a).astype(np.int64).ravel() for a in (freq_starts, weight_starts, widths))
    if min(fs.size, ws.size, wd.size) < nc1 or num_channels < 0:
        raise _bad(f"SignalFilterBank: channel tables shorter than num_channels + 1 = {nc1}")
    fs, ws, wd = fs[:nc1], ws[:nc1], wd[:nc1]
    xv = np.asarray(x).astype(np.uint64).ravel()
    wv = np.asarray(weights).astype(np.int64).ravel()
    uv = np.asarray(unweights).astype(np.int64).ravel()
    if (wd < 0).any() or (fs < 0).any() or (ws < 0).any() or (fs + wd > xv.size).any() \
            or (ws + wd > min(wv.size, uv.size)).any():
        raise _bad("SignalFilterBank: a channel's band lies outside the input or the weights")
    ch = np.repeat(np.arange(nc1), wd)
    j = np.arange(ch.size) - np.repeat(np.cumsum(wd) - wd, wd)
    xi = xv[fs[ch] + j]
    # int16 weight converted to uint64 (C's usual conversion: negative wraps), products mod 2**64
    wacc = np.zeros(nc1, np.uint64)
    uacc = np.zeros(nc1, np.uint64)
    np.add.at(wacc, ch, wv[ws[ch] + j].astype(np.uint64) * xi)
    np.add.at(uacc, ch, uv[ws[ch] + j].astype(np.uint64) * xi)
    full = wacc.copy()
    full[1:] += uacc[:-1]
    return full[1:]


def filter_bank_square_root(x: np.ndarray, scale_bits: int) -> np.ndarray:
    """``SignalFilterBankSquareRoot``: ``Sqrt64(x) >> scale_bits``.

    Args:
        x: uint64, 1-D.
        scale_bits: right shift, 0..31.

    Returns:
        uint32 array.

    Raises:
        MliError: ``scale_bits`` outside 0..31 (a C shift by it is undefined).
    """
    if not 0 <= scale_bits <= 31:
        raise _bad(f"SignalFilterBankSquareRoot: scale_bits {scale_bits} outside 0..31")
    return (sqrt64(x) >> np.uint64(scale_bits)).astype(np.uint32)


@dataclass(frozen=True)
class SpectralSubtractionConfig:
    """``SpectralSubtractionConfig`` (every field as the uint32 TFLM stores, clamping a bool)."""

    num_channels: int
    smoothing: int
    one_minus_smoothing: int
    alternate_smoothing: int
    alternate_one_minus_smoothing: int
    min_signal_remaining: int
    smoothing_bits: int
    spectral_subtraction_bits: int
    clamping: bool


def filter_bank_spectral_subtraction(x: np.ndarray, noise_estimate: np.ndarray,
                                     cfg: SpectralSubtractionConfig) -> tuple[np.ndarray, np.ndarray]:
    """``SignalFilterBankSpectralSubtraction``: one step of the noise estimator and the subtraction.

    Even channels smooth with ``smoothing``, odd ones with ``alternate_smoothing`` (Q``ssb``).

    Args:
        x: uint32, ``num_channels``.
        noise_estimate: uint32 state before the step, ``num_channels``.
        cfg: the configuration.

    Returns:
        ``(output uint32, new noise estimate uint32)``.

    Raises:
        MliError: shifts outside 0..31 or fewer than ``num_channels`` values.
    """
    n = cfg.num_channels
    sb, ssb = cfg.smoothing_bits, cfg.spectral_subtraction_bits
    if not (0 <= sb <= 31 and 0 <= ssb <= 63):
        raise _bad(f"SignalFilterBankSpectralSubtraction: shifts {sb}, {ssb} out of range")
    xv = np.asarray(x).astype(np.uint64).ravel()
    ne = np.asarray(noise_estimate).astype(np.uint64).ravel()
    if xv.size < n or ne.size < n:
        raise _bad(f"SignalFilterBankSpectralSubtraction: {xv.size} inputs for {n} channels")
    xv, ne = xv[:n], ne[:n]
    m32 = np.uint64(0xFFFFFFFF)
    odd = (np.arange(n) & 1).astype(bool)
    sm = np.where(odd, cfg.alternate_smoothing, cfg.smoothing).astype(np.uint64) & m32
    oms = np.where(odd, cfg.alternate_one_minus_smoothing, cfg.one_minus_smoothing).astype(np.uint64) & m32
    up = (xv << np.uint64(sb)) & m32
    ne = ((up * sm + ne * oms) >> np.uint64(ssb)) & m32  # uint64 sum wraps as in C
    est = np.minimum(ne, up)
    if cfg.clamping:
        ne = est
    floor = ((xv * np.uint64(cfg.min_signal_remaining & 0xFFFFFFFF)) >> np.uint64(ssb)) & m32
    sub = (up - est) >> np.uint64(sb)
    return np.maximum(sub, floor).astype(np.uint32), ne.astype(np.uint32)


_PCAN_SNR_BITS, _PCAN_OUTPUT_BITS = 12, 6


def pcan(x: np.ndarray, noise_estimate: np.ndarray, gain_lut: np.ndarray, snr_shift: int) -> np.ndarray:
    """``SignalPCAN``: per-channel automatic gain control (``ApplyPcanAutoGainControlFixed``).

    ``gain = WideDynamicFunction(noise, lut)`` (a piecewise-quadratic LUT over the noise's octave),
    ``snr = (x * gain) >> snr_shift``, then ``PcanShrink``: ``snr**2 >> 20`` below 2**13, else
    ``(snr >> 6) - 64``.

    Args:
        x: uint32 filter-bank energies, 1-D.
        noise_estimate: uint32, at least ``len(x)``.
        gain_lut: int16, 125 entries (3 + 4 per octave).
        snr_shift: right shift, 0..63.

    Returns:
        uint32 array of ``len(x)``.

    Raises:
        MliError: a LUT too short for the noise values or a bad shift.
    """
    xv = np.asarray(x).astype(np.uint64).ravel()
    nv = np.asarray(noise_estimate).astype(np.int64).ravel()[:xv.size] & _M32
    lut = np.asarray(gain_lut).astype(np.int64).ravel()
    if nv.size < xv.size:
        raise _bad(f"SignalPCAN: {nv.size} noise values for {xv.size} channels")
    if not 0 <= snr_shift <= 63:
        raise _bad(f"SignalPCAN: snr_shift {snr_shift} outside 0..63")
    interval = msb32(nv)
    base = 4 * interval - 6
    if lut.size < 3 or (base[nv > 2] + 2 >= lut.size).any():
        raise _bad(f"SignalPCAN: gain LUT of {lut.size} entries too short for the noise estimate")
    small = nv <= 2
    base = np.where(small, 0, base)
    fr = np.where(interval < 11, nv << np.maximum(11 - interval, 0), nv >> np.maximum(interval - 11, 0))
    fr = fr & 0x3FF
    r = (lut[base + 2] * fr) >> 5
    r = wrap(r + lut[base + 1] * 32, 32)
    r = wrap(r * fr, 32)
    r = wrap(r + (1 << 14), 32) >> 15
    r = wrap(r + lut[base], 16)  # int16_t return
    gain = np.where(small, lut[np.minimum(nv, 2)], r) & _M32  # int16 -> uint32 (sign-extends)
    snr = ((xv * gain.astype(np.uint64)) >> np.uint64(snr_shift)) & np.uint64(0xFFFFFFFF)
    snr = snr.astype(np.int64)
    lo = (snr * snr) >> (2 + 2 * _PCAN_SNR_BITS - _PCAN_OUTPUT_BITS)
    hi = (snr >> (_PCAN_SNR_BITS - _PCAN_OUTPUT_BITS)) - (1 << _PCAN_OUTPUT_BITS)
    return (np.where(snr < (2 << _PCAN_SNR_BITS), lo, hi) & _M32).astype(np.uint32)


def filter_bank_log(x: np.ndarray, output_scale: int, correction_bits: int) -> np.ndarray:
    """``SignalFilterBankLog``: ``min(Log32(x << correction_bits, output_scale), 32767)``, 0 where the
    shifted value is 0 or 1.

    Args:
        x: uint32, 1-D.
        output_scale: the log scale (uint32).
        correction_bits: left shift, 0..31.

    Returns:
        int16 array.

    Raises:
        MliError: ``correction_bits`` outside 0..31.
    """
    if not 0 <= correction_bits <= 31:
        raise _bad(f"SignalFilterBankLog: input_correction_bits {correction_bits} outside 0..31")
    sc = (np.asarray(x).astype(np.int64) << correction_bits) & _M32
    big = sc > 1
    lv = log32(np.where(big, sc, 2), output_scale)
    return np.where(big, np.minimum(lv, 32767), 0).astype(np.int16)


def irfft(x: np.ndarray, fft_length: int) -> np.ndarray:
    """``SignalIrfft``: kiss_fftri of each frame of ``fft_length/2 + 1`` bins (int16 / int32 fixed
    point, or float32).

    kiss_fftri undoes kiss_fftr's split and runs the inverse complex FFT of N/2 points: in fixed
    point every step divides (the inverse DFT without its 1/N, divided by N); in float32 TFLM divides
    kiss_fftri's result by N, giving the inverse DFT.

    Args:
        x: int16, int32 or float32, shape (..., 2K) interleaved (real, imag) with K >= fft_length/2 + 1
            (bins past fft_length/2 are not read).
        fft_length: even FFT length N.

    Returns:
        array of ``x``'s dtype, shape (..., N).

    Raises:
        MliError: odd ``fft_length``, too few bins, another dtype, or a length with a factor kiss_fft
            runs generically (NOT_SUPPORTED: TFLM crashes there).
    """
    xa = np.asarray(x)
    A = _fft_arith("SignalIrfft", xa.dtype, fft_length)
    nc = fft_length // 2
    if xa.shape[-1] < 2 * (nc + 1):
        raise _bad(f"SignalIrfft: {xa.shape[-1] // 2} bins, fft_length {fft_length} needs {nc + 1}")
    v = xa.astype(A.dtype())
    fr, fi = v[..., 0:2 * (nc + 1):2], v[..., 1:2 * (nc + 1):2]
    lead = v.shape[:-1]
    tr = np.zeros(lead + (nc,), A.dtype())
    ti = np.zeros(lead + (nc,), A.dtype())
    tr[..., 0], ti[..., 0] = A.fixdiv(A.add(fr[..., 0], fr[..., nc]), A.sub(fr[..., 0], fr[..., nc]), 2)
    k = np.arange(1, nc // 2 + 1)
    if k.size:
        str_, sti = _super_twiddles(nc, A.bits, True)
        fkr, fki = A.fixdiv(fr[..., k], fi[..., k], 2)
        fnr, fni = A.fixdiv(fr[..., nc - k], A.neg(fi[..., nc - k]), 2)
        ekr, eki = A.add(fkr, fnr), A.add(fki, fni)
        okr, oki = A.cmul(A.sub(fkr, fnr), A.sub(fki, fni), str_[k - 1], sti[k - 1])
        tr[..., k], ti[..., k] = A.add(ekr, okr), A.add(eki, oki)
        # k == nc/2 is stored twice; the second store (imaginary part negated) wins, as in the C loop
        tr[..., nc - k], ti[..., nc - k] = A.sub(ekr, okr), A.neg(A.sub(eki, oki))
    yr, yi = _kiss_fft(tr, ti, A, inverse=True)
    y = np.stack([yr, yi], axis=-1).reshape(lead + (fft_length,))
    if not A.fixed:
        y = y / np.float32(fft_length)  # IrfftFloatApply: output[i] /= fft_length, in float32
    return y.astype(xa.dtype)


def delay(x: np.ndarray, line: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``SignalDelay``: each row of ``x`` delayed by ``delay_length`` samples.

    Args:
        x: int16, shape (..., F).
        line: int16 delay line, shape (rows, delay_length): the last samples of the previous call
            (zeros after Prepare / Reset).

    Returns:
        ``(output int16 in the shape of x, new delay line)``.
    """
    v = np.asarray(x)
    rows = np.concatenate([line, v.reshape(line.shape[0], -1)], axis=1)
    f = v.shape[-1] if v.ndim else 1
    return rows[:, :f].reshape(v.shape).astype(np.int16), rows[:, f:].astype(np.int16)


def framer(x: np.ndarray, queue: np.ndarray, frame_size: int, frame_step: int
           ) -> tuple[np.ndarray, bool, np.ndarray]:
    """``SignalFramer``: cut each row's sample stream into frames of ``frame_size`` every ``frame_step``.

    Per row, TFLM's circular buffer holds the samples not yet consumed; each of the ``n = F / step``
    steps appends ``step`` samples and, once ``frame_size`` are held, emits them and drops ``step``.

    Args:
        x: int16, shape (..., F) with F a multiple of ``frame_step``.
        queue: int16, shape (rows, Q): the samples held (``frame_size - frame_step`` zeros after
            Prepare / Reset with ``prefill``, none without).
        frame_size: samples per frame.
        frame_step: hop.

    Returns:
        ``(frames int16 (..., n, frame_size), valid, new queue)``; a frame not yet complete is left 0
        (TFLM leaves that part of the output untouched) and ``valid`` is False.
    """
    v = np.asarray(x)
    nf = v.shape[-1] // frame_step
    rows = queue.shape[0]
    buf = np.concatenate([queue, v.reshape(rows, -1)], axis=1).astype(np.int16)
    q = queue.shape[1]
    f0 = max(0, -(-(frame_size - q) // frame_step) - 1)  # first frame with frame_size samples held
    out = np.zeros((rows, nf, frame_size), np.int16)
    if f0 < nf:
        win = np.lib.stride_tricks.sliding_window_view(buf, frame_size, axis=1)[:, ::frame_step]
        out[:, f0:] = win[:, :nf - f0]
        buf = buf[:, (nf - f0) * frame_step:]
    return out.reshape(v.shape[:-1] + (nf, frame_size)), f0 == 0, buf


def stacker(x: np.ndarray, queue: np.ndarray, started: bool, left: int, right: int, step: int
            ) -> tuple[np.ndarray, bool, np.ndarray]:
    """``SignalStacker``: stack ``left + 1 + right`` successive frames, emitting every ``step`` frames.

    The first frame is also repeated ``left`` times (``CircularBufferExtend``), so the first output
    comes after ``right + 1`` frames.

    Args:
        x: int16, 1-D frame of ``num_channels``.
        queue: int16, 1-D: values held (empty after Prepare / Reset).
        started: whether a first frame was seen.
        left, right, step: the stacker options.

    Returns:
        ``(output int16 of (left + right + 1) * num_channels, valid, new queue)``; an invalid output
        is 0 (TFLM leaves it untouched).
    """
    v = np.asarray(x).astype(np.int16).ravel()
    nc = v.size
    size = nc * (left + right + 1)
    q = np.concatenate([queue, v] + ([] if started else [np.tile(v, max(left, 0))]))
    if q.size >= size:
        return q[:size].copy(), True, q[nc * step:]
    return np.zeros(size, np.int16), False, q


def overlap_add(x: np.ndarray, acc: np.ndarray, frame_step: int) -> tuple[np.ndarray, np.ndarray]:
    """``SignalOverlapAdd`` (int16 saturating, or float32): overlap-add frames, hop ``frame_step``.

    Args:
        x: int16 or float32, shape (..., n, frame_size).
        acc: the running sum per row, shape (rows, frame_size) (zeros after Prepare / Reset).
        frame_step: hop (<= frame_size).

    Returns:
        ``(output (..., n * frame_step), new accumulator)``.
    """
    v = np.asarray(x)
    fs, nf = v.shape[-1], v.shape[-2]
    fr = v.reshape(acc.shape[0], nf, fs)
    outs = []
    for f in range(nf):  # frames in order: each one adds to what the previous ones left
        if v.dtype == np.float32:
            acc = (acc + fr[:, f]).astype(np.float32)
        else:
            acc = np.clip(acc.astype(np.int64) + fr[:, f], -32768, 32767).astype(np.int16)
        outs.append(acc[:, :frame_step])
        acc = np.concatenate([acc[:, frame_step:], np.zeros_like(acc[:, :frame_step])], axis=1)
    out = np.concatenate(outs, axis=1) if outs else np.zeros((acc.shape[0], 0), v.dtype)
    return out.reshape(v.shape[:-2] + (nf * frame_step,)).astype(v.dtype), acc


# --------------------------------------------------------------------------------------------------
# options and handlers
# --------------------------------------------------------------------------------------------------

def custom_options(op: Any) -> list[Any]:
    """The operator's flexbuffer map as TFLM's ``FlexbufferWrapper`` sees it: values in key order.

    Args:
        op: the operator (``.custom_options`` bytes).

    Returns:
        the values (int, bool, ...), ordered by key (bytewise, as flexbuffers stores them).
    """
    raw = bytes(getattr(op, "custom_options", b"") or b"")
    if not raw:
        return []
    m = flexbuffers.Loads(raw)
    if not isinstance(m, dict):
        raise _bad(f"{op.name}: custom options are not a flexbuffer map")
    return [m[k] for k in sorted(m, key=lambda s: s.encode())]


def _opt(op: Any, index: int, name: str) -> Any:
    vals = custom_options(op)
    if index >= len(vals):
        raise _bad(f"{op.name}: option {index} ('{name}') missing from the custom options")
    return vals[index]


def _i32(v: Any) -> int:
    """``ElementAsInt32``: the value truncated to int32."""
    return int(wrap(np.int64(int(v)), 32))


def _shape(graph: Any, i: int) -> tuple[int, ...]:
    return tuple(graph.tensors[i].shape)


def _check(cond: bool, op: Any, msg: str) -> None:
    if not cond:
        raise _bad(f"{op.name}: {msg}")


def _types(graph: Any, op: Any, ins: tuple, outs: tuple) -> None:
    for pos, (idx, want) in enumerate([(i, t) for i, t in zip(op.inputs, ins)]):
        got = graph.tensors[idx].dtype
        _check(got == np.dtype(want), op, f"input {pos} is {got}, TFLM requires {np.dtype(want)}")
    for pos, (idx, want) in enumerate([(i, t) for i, t in zip(op.outputs, outs)]):
        got = graph.tensors[idx].dtype
        _check(got == np.dtype(want), op, f"output {pos} is {got}, TFLM requires {np.dtype(want)}")
    _check(len(op.inputs) == len(ins) and len(op.outputs) == len(outs), op,
           f"{len(op.inputs)} inputs / {len(op.outputs)} outputs, TFLM requires {len(ins)} / {len(outs)}")


Handler = Callable[[Any, Any, list], list]
HANDLERS: dict[str, Handler] = {}


def _reg(code: str) -> Callable[[Handler], Handler]:
    def deco(f: Handler) -> Handler:
        HANDLERS["CUSTOM:" + code] = f
        return f
    return deco


@_reg("SignalWindow")
def _window(graph: Any, op: Any, ins: list) -> list:
    _types(graph, op, (np.int16, np.int16), (np.int16,))
    shift = _i32(_opt(op, 0, "shift"))
    w = np.asarray(ins[1])
    _check(w.ndim == 1 and w.size > 0 and np.size(ins[0]) % w.size == 0, op,
           f"input of {np.size(ins[0])} values is not a whole number of {w.size}-sample windows")
    _check(0 <= shift <= 31, op, f"shift {shift} outside 0..31")
    return [window(ins[0], w, shift)]


@_reg("SignalFftAutoScale")
def _fft_auto_scale(graph: Any, op: Any, ins: list) -> list:
    _types(graph, op, (np.int16,), (np.int16, np.int32))
    _check(len(_shape(graph, op.inputs[0])) == 1, op, "input must be 1-D")
    y, sb = fft_auto_scale(np.asarray(ins[0]).ravel())
    return [y, np.array(sb, np.int32)]


def _fft_io(graph: Any, op: Any) -> tuple[np.dtype, int, tuple, tuple]:
    """SignalRfft / SignalIrfft: the element type (one for input and output), ``fft_length`` and both shapes."""
    dt = graph.tensors[op.inputs[0]].dtype
    _types(graph, op, (dt,), (dt,))
    return dt, _i32(_opt(op, 1, "fft_length")), _shape(graph, op.inputs[0]), _shape(graph, op.outputs[0])


@_reg("SignalRfft")
def _rfft(graph: Any, op: Any, ins: list) -> list:
    dt, n, ish, osh = _fft_io(graph, op)
    _check(len(ish) == len(osh) and len(ish) >= 1, op, "input and output ranks differ")
    _check(osh[-1] == n + 2 and ish[:-1] == osh[:-1], op,
           f"output shape {osh} does not hold fft_length/2 + 1 complex bins per frame of {ish}")
    return [rfft(np.asarray(ins[0]).reshape(ish).astype(dt), n)]


@_reg("SignalEnergy")
def _energy(graph: Any, op: Any, ins: list) -> list:
    _types(graph, op, (np.int16,), (np.uint32,))
    end, start = _i32(_opt(op, 0, "end_index")), _i32(_opt(op, 1, "start_index"))
    osh = _shape(graph, op.outputs[0])
    _check(len(osh) == 1 and len(_shape(graph, op.inputs[0])) == 1, op, "input and output must be 1-D")
    return [energy(ins[0], start, end, osh[0])]


@_reg("SignalFilterBank")
def _filter_bank(graph: Any, op: Any, ins: list) -> list:
    _types(graph, op, (np.uint32,) + (np.int16,) * 5, (np.uint64,))
    nch = _i32(_opt(op, 0, "num_channels"))
    osz = int(np.prod(_shape(graph, op.outputs[0])))
    _check(osz <= nch, op, f"output of {osz} values, more than num_channels {nch}")
    return [filter_bank(*ins[:6], nch)[:osz]]


@_reg("SignalFilterBankSquareRoot")
def _filter_bank_sqrt(graph: Any, op: Any, ins: list) -> list:
    _types(graph, op, (np.uint64, np.int32), (np.uint32,))
    return [filter_bank_square_root(ins[0], int(np.asarray(ins[1]).ravel()[0]))]


def _state_store(graph: Any) -> dict | None:
    st = getattr(graph, "extra", {}).get("op_state")
    return st if isinstance(st, dict) else None


def _get_state(graph: Any, op: Any, init: Callable[[], Any]) -> Any:
    """The operator's persistent state from the runner's store, or ``init()`` (Prepare / Reset)."""
    store = _state_store(graph)
    prev = store.get(("signal", op.index)) if store is not None else None
    return init() if prev is None else prev


def _put_state(graph: Any, op: Any, value: Any) -> None:
    store = _state_store(graph)
    if store is not None:
        store[("signal", op.index)] = value


@_reg("SignalFilterBankSpectralSubtraction")
def _spectral_subtraction(graph: Any, op: Any, ins: list) -> list:
    _types(graph, op, (np.uint32,), (np.uint32, np.uint32))
    v = custom_options(op)
    _check(len(v) >= 9, op, f"{len(v)} options, 9 required")
    u = [_i32(a) & 0xFFFFFFFF for a in v]
    cfg = SpectralSubtractionConfig(
        alternate_one_minus_smoothing=u[0], alternate_smoothing=u[1], clamping=bool(v[2]),
        min_signal_remaining=u[3], num_channels=_i32(v[4]), one_minus_smoothing=u[5], smoothing=u[6],
        smoothing_bits=u[7], spectral_subtraction_bits=u[8])
    _check(int(np.prod(_shape(graph, op.outputs[1]))) == cfg.num_channels, op,
           "noise estimate output length differs from num_channels")
    prev = _get_state(graph, op, lambda: np.zeros(cfg.num_channels, np.uint32))  # zeroed at Prepare
    y, ne = filter_bank_spectral_subtraction(ins[0], prev, cfg)
    _put_state(graph, op, ne)
    return [y, ne.copy()]


@_reg("SignalPCAN")
def _pcan(graph: Any, op: Any, ins: list) -> list:
    _types(graph, op, (np.uint32, np.uint32, np.int16), (np.uint32,))
    ish = _shape(graph, op.inputs[0])
    _check(len(ish) == 1 and _shape(graph, op.outputs[0]) == ish, op,
           "input and output must be 1-D of the same length")
    return [pcan(ins[0], ins[1], ins[2], _i32(_opt(op, 0, "snr_shift")))]


@_reg("SignalFilterBankLog")
def _filter_bank_log(graph: Any, op: Any, ins: list) -> list:
    _types(graph, op, (np.uint32,), (np.int16,))
    cb = _i32(_opt(op, 0, "input_correction_bits"))
    scale = _i32(_opt(op, 1, "output_scale")) & 0xFFFFFFFF
    return [filter_bank_log(ins[0], scale, cb)]


@_reg("SignalIrfft")
def _irfft(graph: Any, op: Any, ins: list) -> list:
    dt, n, ish, osh = _fft_io(graph, op)
    _check(len(ish) == len(osh) and len(ish) >= 1 and ish[:-1] == osh[:-1], op,
           "input and output shapes differ outside the last axis")
    _check(osh[-1] == n, op, f"output frames of {osh[-1]} samples, fft_length is {n}")
    return [irfft(np.asarray(ins[0]).reshape(ish).astype(dt), n)]


@_reg("SignalDelay")
def _delay(graph: Any, op: Any, ins: list) -> list:
    _types(graph, op, (np.int16,), (np.int16,))
    d = _i32(_opt(op, 0, "delay_length"))
    _check(d >= 0, op, f"delay_length {d} is negative")
    ish = _shape(graph, op.inputs[0])
    rows = int(np.prod(ish[:-1], dtype=np.int64)) if ish else 1
    line = _get_state(graph, op, lambda: np.zeros((rows, d), np.int16))
    y, line = delay(np.asarray(ins[0]).reshape(ish), line)
    _put_state(graph, op, line)
    return [y]


@_reg("SignalFramer")
def _framer(graph: Any, op: Any, ins: list) -> list:
    _types(graph, op, (np.int16,), (np.int16, np.bool_))
    size, step = _i32(_opt(op, 0, "frame_size")), _i32(_opt(op, 1, "frame_step"))
    prefill = bool(_opt(op, 2, "prefill"))
    ish, osh = _shape(graph, op.inputs[0]), _shape(graph, op.outputs[0])
    _check(len(osh) == len(ish) + 1 and len(ish) >= 1, op, "output rank must be the input rank + 1")
    _check(0 < step <= ish[-1] and ish[-1] % step == 0 and size >= step, op,
           f"frame_step {step} must divide the input length {ish[-1]} and not exceed frame_size {size}")
    _check(osh[-2:] == (ish[-1] // step, size), op, f"output shape {osh} is not (..., frames, {size})")
    rows = int(np.prod(ish[:-1], dtype=np.int64))
    q = _get_state(graph, op, lambda: np.zeros((rows, size - step if prefill else 0), np.int16))
    y, valid, q = framer(np.asarray(ins[0]).reshape(ish), q, size, step)
    _put_state(graph, op, q)
    return [y, np.array(valid)]


@_reg("SignalStacker")
def _stacker(graph: Any, op: Any, ins: list) -> list:
    _types(graph, op, (np.int16,), (np.int16, np.bool_))
    nc, left, right, step = (_i32(_opt(op, i, k)) for i, k in enumerate(
        ("num_channels", "stacker_left_context", "stacker_right_context", "stacker_step")))
    size = nc * (left + right + 1)
    _check(min(left, right) >= 0 and step >= 1 and np.size(ins[0]) == nc, op,
           f"input of {np.size(ins[0])} values for num_channels {nc}, contexts {left}/{right}, step {step}")
    _check(int(np.prod(_shape(graph, op.outputs[0]))) == size, op, f"output must hold {size} values")
    q, started = _get_state(graph, op, lambda: (np.zeros(0, np.int16), False))
    y, valid, q = stacker(ins[0], q, started, left, right, step)
    _put_state(graph, op, (q, True))
    return [y, np.array(valid)]


@_reg("SignalOverlapAdd")
def _overlap_add(graph: Any, op: Any, ins: list) -> list:
    dt = graph.tensors[op.inputs[0]].dtype
    _check(dt in (np.dtype(np.int16), np.dtype(np.float32)), op, f"{dt}: int16 or float32 only")
    _types(graph, op, (dt,), (dt,))
    step = _i32(_opt(op, 1, "frame_step"))
    ish, osh = _shape(graph, op.inputs[0]), _shape(graph, op.outputs[0])
    _check(len(ish) >= 2 and len(ish) == len(osh) + 1, op, "input rank must be the output rank + 1 (>= 2)")
    _check(0 < step <= ish[-1] and osh[-1] == ish[-2] * step, op,
           f"frame_step {step}: output length {osh[-1]} must be frames {ish[-2]} x step")
    rows = int(np.prod(ish[:-2], dtype=np.int64))
    acc = _get_state(graph, op, lambda: np.zeros((rows, ish[-1]), dt))
    y, acc = overlap_add(np.asarray(ins[0]).reshape(ish), acc, step)
    _put_state(graph, op, acc)
    return [y]

"""Slow scalar model of MLI's C integer maths (pal/ref/mli_math.h), one Python int at a time.

Shared by the per-area oracles in tests/*/ (they add their own kernel-specific pieces on top).
Written from the C semantics for a signed C integer of ``bits`` bits, with plain Python ints and no
NumPy: it deliberately shares no code with :mod:`pymli.arith`, so a test comparing the two can fail.

``mode`` (rounding) is ``"up"`` / ``"convergent"``, or a bool meaning "round up".
Inputs are expected to fit in ``bits`` bits, as the C arguments do.
"""

from __future__ import annotations

UP, CONV = "up", "convergent"


def _up(mode: str | bool) -> bool:
    if isinstance(mode, bool):
        return mode
    if mode not in (UP, CONV):
        raise ValueError(f"unknown rounding mode {mode!r}")
    return mode == UP


def lim(bits: int) -> tuple[int, int]:
    """(min, max) of a signed ``bits``-bit integer."""
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def sat(x: int, bits: int) -> int:
    """Clamp to the signed ``bits``-bit range (mli_math_sat_fx / min-max bounds)."""
    lo, hi = lim(bits)
    return lo if x < lo else hi if x > hi else x


def wrap(x: int, bits: int) -> int:
    """Two's-complement wrap-around of a store into a ``bits``-bit integer."""
    m = 1 << bits
    x &= m - 1
    return x - m if x >= m >> 1 else x


def add_sat(a: int, b: int, bits: int = 32) -> int:
    """mli_math_add_fx: saturating addition."""
    return sat(a + b, bits)


def sub_sat(a: int, b: int, bits: int = 32) -> int:
    """mli_math_sub_fx: saturating subtraction."""
    return sat(a - b, bits)


def asr(x: int, n: int, bits: int = 32) -> int:
    """mli_math_asr_fx: arithmetic shift right; a negative ``n`` shifts left (saturating)."""
    if n < 0:
        return asl(x, -n, bits)
    if n > bits - 1:
        return -1 if x < 0 else 0
    return x >> n


def asl(x: int, n: int, bits: int = 32) -> int:
    """mli_math_asl_fx: saturating shift left; a negative ``n`` shifts right."""
    if n < 0:
        return asr(x, -n, bits)
    if n > bits - 1:
        return 0 if x == 0 else sat(x * (1 << bits), bits)
    return sat(x << n, bits)


def asr_rnd(x: int, n: int, bits: int, mode: str | bool) -> int:
    """mli_math_asr_rnd_fx: shift right with rounding (half up, or half to even)."""
    if n < 0:
        return asl(x, -n, bits)
    if n == 0:
        return x
    if n > bits - 1:
        return 0
    half = 1 << (n - 1)
    if _up(mode):
        return add_sat(x, half, bits) >> n
    r = x >> n
    if (x & half) and ((r & 1) or (x & (half - 1))):
        r = add_sat(r, 1, bits)
    return r


def sat_fx(x: int, nbits: int, bits: int) -> int:
    """mli_math_sat_fx: saturate to ``bits - nbits`` bits by a saturating left then right shift."""
    return asr(asl(x, nbits, bits), nbits, bits)


def norm(x: int, bits: int = 32) -> int:
    """mli_math_norm_fx: how far ``x`` can be shifted left without overflow (``bits - 1`` for 0)."""
    if x == 0:
        return bits - 1
    return bits - 1 - (~x if x < 0 else x).bit_length()


def cast_fx(x: int, shift: int, in_bits: int, out_bits: int, mode: str | bool) -> int:
    """mli_math_cast_fx<in, out>: rounding shift in ``in_bits`` bits, then saturation to ``out_bits``."""
    t = asr_rnd(x, shift, in_bits, mode)
    return sat_fx(t, in_bits - out_bits, in_bits) if out_bits < in_bits else t


def norm_cast(x: int, in_bits: int, out_bits: int, mode: str | bool) -> tuple[int, int]:
    """mli_math_norm_cast_fx: (normalised cast of ``x`` to ``out_bits`` bits, the shift it used)."""
    shift = (in_bits - out_bits) - norm(x, in_bits)
    return cast_fx(x, shift, in_bits, out_bits, mode), shift


def cdiv(a: int, b: int) -> int:
    """C integer division (truncates towards zero)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q

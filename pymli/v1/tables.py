"""MLI 1.0's built-in tables, regenerated from the formulas that reproduce them exactly.

* The three int16 lookup tables of ``mli_prv_lut.cc`` (sigmoid, tanh, exp(-x)): Q15 outputs of the
  function sampled at ``(i - offset) / 2^frac_bits``, rounded half up, saturated to int16. A test
  compares them with ``../shared/golden_v1/_luts.npz`` (recorded from the C library).
* The average-pooling reciprocal: ``multiplier_lut`` / ``shift_lut`` for divisors below 32 and the
  ``calc_mul`` formula beyond.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

__all__ = ["Lut1", "SIGMOID_LUT", "TANH_LUT", "EXPNEG_LUT", "avepool_mul_shift", "DIV_LUT_THRESHOLD"]

DIV_LUT_THRESHOLD = 32


@dataclasses.dataclass(frozen=True)
class Lut1:
    """An MLI 1.0 ``mli_lut``: int16 Q15 ``data``, input ``frac_bits``, index ``offset`` of input 0."""

    name: str
    data: np.ndarray
    frac_bits: int
    offset: int

    @property
    def length(self) -> int:
        return int(self.data.size)


def _table(func, length: int, frac_bits: int, offset: int) -> np.ndarray:
    x = (np.arange(length, dtype=np.float64) - offset) / float(1 << frac_bits)
    v = func(x) * 32768.0
    # round half up then saturate: how the tables were generated (checked against the recordings)
    return np.clip(np.floor(v + 0.5), -32768, 32767).astype(np.int16)


SIGMOID_LUT = Lut1("sigmoid_lut_fx16", _table(lambda x: 1.0 / (1.0 + np.exp(-x)), 180, 3, 90), 3, 90)
TANH_LUT = Lut1("tanh_lut_fx16", _table(np.tanh, 178, 4, 89), 4, 89)
EXPNEG_LUT = Lut1("expneg_lut_fx16", _table(np.exp, 181, 4, 179), 4, 179)


@functools.lru_cache(maxsize=4096)
def avepool_mul_shift(div: int, max_div: int) -> tuple[int, int]:
    """``get_mul_shift_value``: the multiplier and shift with ``x / div ~= x * mul >> shift``.

    Below 32 (``div`` or ``max_div``) MLI 1.0 uses a table: powers of two are ``(1, log2 div)``,
    others ``(floor(2^s / div), s)`` with ``s = 14 + bit_length(div)``. Otherwise ``calc_mul``:
    ``val = 2^31 // div`` normalised into a 16-bit multiplier.

    Args:
        div: number of elements in the window (1..).
        max_div: kernel size (width x height).

    Returns:
        tuple[int, int]: (mul, shift).
    """
    if max_div < DIV_LUT_THRESHOLD or div < DIV_LUT_THRESHOLD:
        if div <= 0:
            return 0, 0
        if div & (div - 1) == 0:
            return 1, div.bit_length() - 1
        s = 14 + div.bit_length()
        return (1 << s) // div, s
    val = (1 << 31) // div
    norm = 31 - val.bit_length()  # _norm of a positive 32-bit value
    mul = val >> (16 - norm) if norm <= 16 else val << (norm - 16)
    mul = ((mul + 0x8000) & 0xFFFF) - 0x8000  # (int16_t) cast
    return mul, norm + 15

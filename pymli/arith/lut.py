"""Look-up-table activations of MLI 2.0 (``private/mli_prv_activation_lut.*``, ``bricks/mli_prv_lut*``).

MLI evaluates sigmoid, tanh, exp(-x) (softmax) and 1/sqrt(x) (L2 normalisation) through a table of
Q15 (or Q17) int16 samples taken at a fixed input step of ``2**-in_frac_bits``, plus linear
interpolation between neighbouring samples when the input is finer than the table. This module
builds those tables (bit-exact with the constant arrays of the C library, regenerated here with
NumPy) and models the reference lookup of ``mli_prv_lut_ref.h`` element for element:

* :func:`lut_interpolate` - ``activation_lut_one_elem_interpolate`` without conversions: table index,
  fraction, and the rounded correction ``(lut[i] - lut[i+1]) * frac >> shift``.
* :func:`lut_nearest` - ``activation_lut_one_elem_no_interpolate``: the input is coarser than
  the table; its value is scaled up (saturating) to a table index.
* :func:`lut_lookup` - the choice made by ``compute_activation_lut`` between the two.
* :func:`activation_fx` / :func:`activation_sa8` - the complete ``mli_krn_sigm_*`` /
  ``mli_krn_tanh_*`` element transform (fx8 / fx16 / sa8 in and out).
* :func:`sa8_to_lut_input`, :func:`fx16_to_sa8` - ``mli_prv_convert_sa8_fx16`` (shift flavour) and
  ``mli_prv_convert_fx16_sa8`` as used around the lookup.

Public API (stable; the recurrent-cell kernels rely on it)::

    create_lut(kind, lut=None) -> Lut          # kind: "sigm" | "tanh" | "softmax" | "l2_normalize"
    lut_size(kind) -> int                       # bytes, mli_krn_<kind>_get_lut_size()
    lut_table(kind) -> np.ndarray               # read-only int16 samples
    LUT_SPECS[kind]                             # LutSpec: length, in/out frac bits, input_offset
    lut_lookup(x, lut, in_frac_bits) -> int16 values in Q(lut.out_frac_bits)
    activation_fx(x, lut, in_frac_bits, out_bits) -> int8/int16 values (Q7 / Q15)
    activation_sa8(x, lut, in_zp, in_scale, in_shift, out_zp, out_shift) -> int8 values

Every function takes and returns integer NumPy arrays (any shape; int64 inside) and rounds through
:mod:`pymli.arith.rounding`, hence under the current platform's rounding mode.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ..formats import ElType, RoundMode
from ..tensor import Lut
from .rounding import add_sat, asl, asr, asr_rnd, round_mode, sat, sub_sat, wrap

__all__ = [
    "LutSpec",
    "LUT_SPECS",
    "LUT_KINDS",
    "lut_table",
    "lut_size",
    "create_lut",
    "lut_data",
    "lut_interpolate",
    "lut_nearest",
    "lut_lookup",
    "activation_fx",
    "activation_sa8",
    "sa8_lut_in_frac_bits",
    "sa8_to_lut_input",
    "fx16_to_sa8",
    "MAX_FRAC_BITS_FX16",
    "MAX_FRAC_BITS_FX8",
    "code_table",
    "fx_activation_codes",
    "fx_exp_codes",
    "scale_round_sat",
    "asr_rnd_int32",
    "take_codes8",
]

MAX_FRAC_BITS_FX16 = 15
MAX_FRAC_BITS_FX8 = 7


def _sigm(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _invsqrt(x: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(x)


@dataclasses.dataclass(frozen=True)
class LutSpec:
    """How MLI's constant table for one activation is laid out.

    Entry ``i`` holds ``func((i - input_offset) / 2**in_frac_bits)`` in Q(out_frac_bits), rounded to
    nearest and saturated to int16.

    Attributes:
        kind: ``"sigm"``, ``"tanh"``, ``"softmax"`` (exp of a non-positive input) or ``"l2_normalize"``.
        length: number of int16 entries.
        in_frac_bits: fractional bits of the table input (sample step ``2**-in_frac_bits``).
        out_frac_bits: fractional bits of the entries.
        input_offset: index of the entry for input 0 (may lie outside the table).
        output_offset: always 0 in MLI 2.0.2.
        func: the real function sampled.
    """

    kind: str
    length: int
    in_frac_bits: int
    out_frac_bits: int
    input_offset: int
    func: Callable[[np.ndarray], np.ndarray]
    output_offset: int = 0

    @property
    def size_bytes(self) -> int:
        """Bytes of the table: ``length`` int16 entries."""
        return self.length * 2


# Layouts of MLI 2.0.2's tables: sigmoid Q11.4 -> Q15 centred on 320 entries; tanh Q10.5 -> Q15
# centred on 344 entries; exp Q10.5 -> Q15 with input 0 at the second-to-last of 358 entries;
# 1/sqrt Q7.0 -> Q17 covering inputs 32..128.
LUT_SPECS: dict[str, LutSpec] = {
    "sigm": LutSpec("sigm", 320, 4, 15, 160, _sigm),
    "tanh": LutSpec("tanh", 344, 5, 15, 172, np.tanh),
    "softmax": LutSpec("softmax", 358, 5, 15, 356, np.exp),
    "l2_normalize": LutSpec("l2_normalize", 97, 0, 17, -32, _invsqrt),
}
LUT_KINDS = tuple(LUT_SPECS)


@functools.cache
def lut_table(kind: str) -> np.ndarray:
    """The int16 table of ``kind`` exactly as MLI 2.0.2 stores it (read-only array).

    Samples are computed in float64 and rounded half away from zero; every entry of the four MLI
    tables lies at least 8e-4 LSB away from a rounding tie, so float64 reproduces them exactly.

    Args:
        kind: ``"sigm"``, ``"tanh"``, ``"softmax"`` or ``"l2_normalize"`` (a key of ``LUT_SPECS``).

    Returns:
        Read-only int16 array of the table's ``length`` entries.

    Raises:
        KeyError: an unknown ``kind``.
    """
    spec = LUT_SPECS[kind]
    x = (np.arange(spec.length, dtype=np.float64) - spec.input_offset) / float(1 << spec.in_frac_bits)
    v = spec.func(x) * float(1 << spec.out_frac_bits)
    q = np.sign(v) * np.floor(np.abs(v) + 0.5)
    t = np.clip(q, -32768, 32767).astype(np.int16)
    t.setflags(write=False)
    return t


def lut_size(kind: str) -> int:
    """``mli_krn_<kind>_get_lut_size``: bytes of the table.

    Args:
        kind: a key of ``LUT_SPECS``.

    Returns:
        The size in bytes.

    Raises:
        KeyError: an unknown ``kind``.
    """
    return LUT_SPECS[kind].size_bytes


def create_lut(kind: str, lut: Lut | None = None) -> Lut:
    """Fill ``lut`` (or a new :class:`Lut`) with the table of ``kind`` and its format fields.

    No capacity check here (the facade's ``mli_krn_*_create_lut`` does it). With ``lut`` given, its
    ``data`` buffer is written in place and must hold ``length`` int16 entries.

    Args:
        kind: a key of ``LUT_SPECS``.
        lut: the LUT to fill, or None for a new one.

    Returns:
        The filled LUT (``lut`` itself when given).

    Raises:
        ValueError: ``lut`` has no data buffer or one smaller than the table.
        KeyError: an unknown ``kind``.
    """
    spec = LUT_SPECS[kind]
    table = lut_table(kind)
    if lut is None:
        lut = Lut(data=table.copy(), capacity=spec.size_bytes)
    else:
        if lut.data is None or lut.data.nbytes < spec.size_bytes:
            raise ValueError(f"create_lut({kind!r}): LUT buffer holds fewer than {spec.size_bytes} bytes")
        lut.data.view(np.int16)[: spec.length] = table
    lut.type = ElType.FX_16
    lut.length = spec.length
    lut.in_frac_bits = spec.in_frac_bits
    lut.out_frac_bits = spec.out_frac_bits
    lut.input_offset = spec.input_offset
    lut.output_offset = spec.output_offset
    return lut


def lut_data(lut: Lut) -> np.ndarray:
    """The first ``lut.length`` int16 entries of ``lut`` as int64 (C reads ``data.mem.pi16``).

    Args:
        lut: the LUT; its ``data`` is viewed as int16 when of another dtype.

    Returns:
        int64 array of ``lut.length`` entries.

    Raises:
        ValueError: a NULL data pointer, or a length below 2 or beyond the buffer.
    """
    if lut.data is None:
        raise ValueError("LUT has a NULL data pointer")
    d = np.asarray(lut.data)
    if d.dtype != np.int16:
        d = np.ascontiguousarray(d).view(np.int16)
    n = int(lut.length)
    if n < 2 or d.shape[0] < n:
        raise ValueError(f"LUT length {n} invalid for a buffer of {d.shape[0]} int16 entries")
    return d[:n].astype(np.int64)


def lut_interpolate(x: npt.ArrayLike, lut: Lut, in_frac_bits: int) -> np.ndarray:
    """Interpolated lookup of ``activation_lut_one_elem_interpolate`` (no input/output conversion).

    Args:
        x: int32-range input values in Q(in_frac_bits) (already offset / converted).
        lut: the table; ``in_frac_bits`` must exceed ``lut.in_frac_bits`` (else see :func:`lut_nearest`).
        in_frac_bits: fractional bits of ``x``.

    Returns:
        int64 array of int16 results in Q(lut.out_frac_bits):
        ``lut[i] - rnd((lut[i] - lut[i+1]) * frac, shift)`` with ``i = (x >> shift) + input_offset``
        clamped to ``[0, length - 2]`` and ``frac`` the low ``shift`` bits of ``x``.
    """
    r = _lut_interpolate16(x, lut, in_frac_bits)
    if r is None:
        return _lut_interpolate64(x, lut, in_frac_bits)
    return r.astype(np.int64)


def asr_rnd_int32(x: np.ndarray, n: npt.ArrayLike, mode: RoundMode | None = None) -> np.ndarray:
    """``asr_rnd(x, n, bits)`` in place on an int32 array, for ``1 <= n <= 31`` (scalar or broadcasting).

    The caller guarantees that ``x + 2**(n - 1)`` stays within int32: then C's saturating add
    never saturates (for any accumulator width ``bits >= 32``), the int32 sums below never
    overflow, and the result is exactly the rounded shift.

    Args:
        x: int32 array, modified in place.
        n: shift(s), an int or an array broadcasting against ``x``.
        mode: the rounding mode (default: the current platform's).

    Returns:
        ``x`` (use the return value).
    """
    if isinstance(n, (int, np.integer)):
        half = np.int32(1 << (int(n) - 1))  # Python ints: no ufunc call for a scalar shift
        n = np.int32(n)
    else:
        n = np.asarray(n, dtype=np.int32) if np.ndim(n) else np.int32(n)
        half = np.left_shift(np.int32(1), n - 1)
    if (round_mode() if mode is None else mode) is RoundMode.UP:
        x += half
    else:
        odd = np.right_shift(x, n)
        odd &= 1
        x += half - 1
        x += odd
    x >>= n
    return x


def _lut_tables16(lut: Lut) -> tuple[np.ndarray, np.ndarray]:
    """The LUT entries as int16 and the int16 (wrapping) differences ``lut[i] - lut[i+1]``."""
    t = lut_data(lut).astype(np.int16)
    return t, (t[:-1] - t[1:]).astype(np.int16)


def _lut_interpolate16(x: npt.ArrayLike, lut: Lut, in_frac_bits: int) -> np.ndarray | None:
    """:func:`lut_interpolate` computed in int32, returning int16; None if its bounds do not hold.

    Needs ``x`` within int32, ``1 <= shift <= 15`` and ``|input_offset| <= 2**16``. Bounds: the
    index ``(x >> shift) + offset`` is below ``2**30 + 2**16`` in magnitude; the correction
    ``diff * frac`` is below ``2**15 * 2**15 = 2**30`` and its rounding adds at most ``2**14``.
    """
    xa = np.asarray(x)
    shift_in = int(in_frac_bits) - int(lut.in_frac_bits)
    off = int(lut.input_offset)
    if shift_in < 1 or abs(off) > 1 << 16 or xa.dtype.kind not in "iu":
        return None
    wide = xa.dtype.itemsize > 4 or xa.dtype == np.uint32
    if wide and xa.size and (int(xa.min()) < -(1 << 31) or int(xa.max()) >= 1 << 31):
        return None
    table, diff = _lut_tables16(lut)
    preshift = min(max(shift_in - MAX_FRAC_BITS_FX16, 0), 15)
    shift_in = min(shift_in, MAX_FRAC_BITS_FX16)
    shape = xa.shape
    xs = xa.astype(np.int32).reshape(-1)
    if preshift:
        xs >>= preshift
    idx = xs >> shift_in
    idx += off
    np.clip(idx, 0, table.shape[0] - 2, out=idx)
    xs &= (1 << shift_in) - 1                     # frac: Q(shift_in) in [0, 1)
    corr = np.take(diff, idx).astype(np.int32)
    corr *= xs
    corr = asr_rnd_int32(corr, shift_in)
    np.clip(corr, -(1 << 15), (1 << 15) - 1, out=corr)
    res = np.take(table, idx).astype(np.int32)
    res -= corr
    return res.astype(np.int16).reshape(shape)    # C's int16 cast wraps


def _lut_interpolate64(x: npt.ArrayLike, lut: Lut, in_frac_bits: int) -> np.ndarray:
    """:func:`lut_interpolate` in int64 for any input (the general path of the int32 fast one)."""
    table = lut_data(lut)
    shift_in = int(in_frac_bits) - int(lut.in_frac_bits)
    if shift_in < 0:
        raise ValueError(f"interpolation needs input frac bits {in_frac_bits} >= LUT's {lut.in_frac_bits}")
    # Very fine inputs are pre-shifted so that the interpolation shift stays <= 15.
    preshift = min(max(shift_in - MAX_FRAC_BITS_FX16, 0), 15)
    shift_in = min(shift_in, MAX_FRAC_BITS_FX16)
    mask = (1 << shift_in) - 1
    xs = asr(x, preshift, 32)
    idx = add_sat(asr(xs, shift_in, 32), int(lut.input_offset), 32)
    idx = np.clip(idx, 0, table.shape[0] - 2)
    frac = xs & mask                              # Q(shift_in) in [0, 1)
    lo = table[idx]
    diff = wrap(lo - table[idx + 1], 16)          # int16 difference of neighbours
    corr = sat(asr_rnd(diff * frac, shift_in, 32), 16)
    return wrap(lo - corr, 16)


def lut_nearest(x: npt.ArrayLike, lut: Lut, in_frac_bits: int) -> np.ndarray:
    """Lookup without interpolation (``activation_lut_one_elem_no_interpolate``, fx input).

    For inputs no finer than the table (``in_frac_bits <= lut.in_frac_bits``): the index is
    ``(x << (lut.in_frac_bits - in_frac_bits)) + input_offset`` (32-bit saturating shift), clamped
    to ``[0, length - 1]``.

    Args:
        x: int input values in Q(in_frac_bits), any shape.
        lut: the table.
        in_frac_bits: fractional bits of ``x``.

    Returns:
        int64 array of the int16 entries, shape of ``x``.
    """
    table = lut_data(lut)
    shift_in = min(int(in_frac_bits) - int(lut.in_frac_bits), MAX_FRAC_BITS_FX16)
    idx = add_sat(asl(x, -shift_in, 32), int(lut.input_offset), 32)
    idx = np.clip(idx, 0, table.shape[0] - 1)
    return table[idx]


def lut_lookup(x: npt.ArrayLike, lut: Lut, in_frac_bits: int) -> np.ndarray:
    """``compute_activation_lut``'s choice: interpolate if the input is finer than the table.

    Args:
        x: int input values in Q(in_frac_bits), any shape.
        lut: the table.
        in_frac_bits: fractional bits of ``x``.

    Returns:
        int64 array of int16 results in Q(lut.out_frac_bits), shape of ``x``.
    """
    if min(int(in_frac_bits) - int(lut.in_frac_bits), MAX_FRAC_BITS_FX16) > 0:
        return lut_interpolate(x, lut, in_frac_bits)
    return lut_nearest(x, lut, in_frac_bits)


def _cast_out_fx(res: np.ndarray, out_bits: int) -> np.ndarray:
    """``mli_math_cast_fx<int16_t, out_T>(res, 16 - out_bits)``: Q15 -> Q7 for 8-bit outputs."""
    if out_bits == 16:
        return res
    return sat(asr_rnd(res, 16 - out_bits, 16), out_bits)


def activation_fx(x: npt.ArrayLike, lut: Lut, in_frac_bits: int, out_bits: int = 16,
                  in_offset: npt.ArrayLike | None = None) -> np.ndarray:
    """Element transform of ``mli_krn_sigm_fx*`` / ``mli_krn_tanh_fx*`` (``activation_lut<T, false>``).

    Args:
        x: fx8 or fx16 input values in Q(in_frac_bits).
        lut: the activation's table.
        in_frac_bits: the input tensor's frac_bits (an int8 in C).
        out_bits: 8 or 16: the output container; the result is Q(out_bits - 1) when the table is Q15.
        in_offset: if given, ``x - in_offset`` (32-bit saturating) is looked up instead (softmax
            subtracts the maximum this way); an int or an array broadcasting against ``x``.

    Returns:
        int64 array of values in the output container range.
    """
    xv = np.asarray(x, dtype=np.int64)
    if in_offset is not None:
        xv = sub_sat(xv, np.asarray(in_offset, dtype=np.int64), 32)
    res = lut_lookup(xv, lut, wrap(int(in_frac_bits), 8).item())
    return _cast_out_fx(res, out_bits)


def sa8_lut_in_frac_bits(lut: Lut) -> int:
    """Fractional bits of the fx16 value an sa8 input is converted to before the lookup.

    The sa8 range is mapped onto 16 bits keeping the table's integer bits: ``15 - (7 - lut_in_frac)``.

    Args:
        lut: the table.

    Returns:
        The fractional bits.
    """
    return MAX_FRAC_BITS_FX16 - (MAX_FRAC_BITS_FX8 - int(lut.in_frac_bits))


def sa8_to_lut_input(x: npt.ArrayLike, zero_point: npt.ArrayLike, scale: int, scale_frac_bits: int,
                     frac_bits: int) -> np.ndarray:
    """``mli_prv_convert_sa8_fx16<int8_t, int32_t>(x, zp, scale, shift)``: sa8 to a Q(frac_bits) int32.

    ``(int16)(x - zp) * scale`` rounded-shifted right by ``scale_frac_bits - frac_bits`` (a
    saturating left shift if negative) in 32 bits.

    Args:
        x: int8 values, any shape.
        zero_point: an int or an array broadcasting against ``x`` (softmax passes the per-slice
            maximum there).
        scale, scale_frac_bits: the input's scale and scale_frac_bits.
        frac_bits: fractional bits of the result.

    Returns:
        int64 array of int32-range values, the broadcast shape.
    """
    t = wrap(np.asarray(x, dtype=np.int64) - np.asarray(zero_point, dtype=np.int64), 16)
    return asr_rnd(t * int(scale), int(scale_frac_bits) - int(frac_bits), 32)


def fx16_to_sa8(x: npt.ArrayLike, zero_point: int, shift: npt.ArrayLike) -> np.ndarray:
    """``mli_prv_convert_fx16_sa8<acc, int8_t>(x, zp, shift)``: rounding shift, add zp, saturate to int8.

    Args:
        x: int values, any shape.
        zero_point: output zero point.
        shift: an int or an array broadcasting against ``x``.

    Returns:
        int64 array of int8 values, the broadcast shape.
    """
    sh = int(shift) if np.ndim(shift) == 0 else np.asarray(shift, dtype=np.int64)
    v = asr_rnd(x, sh, 32) + int(zero_point)
    return sat(wrap(v, 32), 8)


def activation_sa8(x: npt.ArrayLike, lut: Lut, in_zp: int, in_scale: int, in_shift: int,
                   out_zp: int, out_shift: int) -> np.ndarray:
    """Element transform of ``mli_krn_sigm_sa8`` / ``mli_krn_tanh_sa8`` (``activation_lut<int8_t, true>``).

    Args:
        x: sa8 input values.
        lut: the activation's table (Q15 output).
        in_zp, in_scale, in_shift: the input's zero point, scale and scale_frac_bits.
        out_zp, out_shift: the output's zero point and scale_frac_bits (scale is 1): sigmoid uses
            (-128, 8), tanh (0, 7).

    Returns:
        int64 array of int8 output values.
    """
    fb = sa8_lut_in_frac_bits(lut)
    xin = sa8_to_lut_input(x, in_zp, in_scale, wrap(int(in_shift), 16).item(), fb)
    # The sa8 input always lands 8 bits finer than the table, so the lookup interpolates.
    res = lut_lookup(xin, lut, fb)
    return fx16_to_sa8(res, out_zp, int(lut.out_frac_bits) - int(out_shift))


# ---------------------------------------------------------------------------------------- fast paths
# Per-call tables of every possible result, cached per (LUT contents, parameters, rounding mode).
# A table holds exactly what the element functions above return for each code, so a gather from it
# is bit-identical to evaluating them element by element.
_CODE_TABLES: dict[tuple, np.ndarray] = {}
_CODE_TABLES_MAX = 32  # at most 32 x 128 KiB


def _lut_key(lut: Lut) -> tuple | None:
    """Everything of ``lut`` the lookups read (None if the LUT is unusable: no caching then)."""
    try:
        d = lut_data(lut)
    except ValueError:
        return None
    return (d.astype(np.int16).tobytes(), int(lut.length), int(lut.in_frac_bits), int(lut.out_frac_bits),
            int(lut.input_offset), int(lut.output_offset))


def code_table(lut: Lut, tag: tuple, build: Callable[[], np.ndarray]) -> np.ndarray:
    """``build()`` (a table of results depending on ``lut``, ``tag`` and the rounding mode), cached.

    Args:
        lut: the LUT the table depends on (not cached when it has no stable key).
        tag: the rest of the cache key (what the table computes).
        build: makes the table.

    Returns:
        The table: a read-only array shared between calls.
    """
    key = _lut_key(lut)
    if key is None:
        return build()
    full = (key, tag, round_mode())
    table = _CODE_TABLES.get(full)
    if table is None:
        table = build()
        table.setflags(write=False)
        if len(_CODE_TABLES) >= _CODE_TABLES_MAX:
            _CODE_TABLES.pop(next(iter(_CODE_TABLES)))
        _CODE_TABLES[full] = table
    return table


def _activation_codes(lut: Lut, tag: str, x: Callable[[], np.ndarray], in_frac_bits: int, out_bits: int,
                      in_bits: int) -> np.ndarray:
    """:func:`activation_fx` of the inputs ``x()`` in the output container dtype, cached by :func:`code_table`."""
    def build() -> np.ndarray:
        return activation_fx(x(), lut, in_frac_bits, out_bits).astype(np.int8 if out_bits == 8 else np.int16)

    return code_table(lut, (tag, int(in_frac_bits), int(out_bits), int(in_bits)), build)


def fx_activation_codes(lut: Lut, in_frac_bits: int, out_bits: int, in_bits: int) -> np.ndarray:
    """:func:`activation_fx` of every ``in_bits``-bit code, indexed by the code's unsigned bit pattern.

    Args:
        lut: the table.
        in_frac_bits: fractional bits of the input.
        out_bits: output container bits (8 or 16).
        in_bits: input container bits (8 or 16).

    Returns:
        A (cached, read-only) array of ``2**in_bits`` values of the output container dtype.
    """
    def codes() -> np.ndarray:
        c = np.arange(1 << in_bits, dtype=np.int64)
        return np.where(c >= 1 << (in_bits - 1), c - (1 << in_bits), c)

    return _activation_codes(lut, "fx", codes, in_frac_bits, out_bits, in_bits)


def fx_exp_codes(lut: Lut, in_frac_bits: int, out_bits: int, in_bits: int) -> np.ndarray:
    """:func:`activation_fx` of ``x - max`` for every difference ``-k``, ``k`` in ``[0, 2**in_bits)``.

    Softmax looks up ``x - max`` with ``x, max`` two ``in_bits``-bit values, ``max >= x``: the
    difference is ``-k`` where ``k = (max - x) mod 2**in_bits`` (exact in an unsigned type of
    ``in_bits`` bits).

    Args:
        lut, in_frac_bits, out_bits, in_bits: as :func:`fx_activation_codes`.

    Returns:
        A (cached, read-only) array indexed by ``k``, of the output container dtype.
    """
    return _activation_codes(lut, "exp", lambda: -np.arange(1 << in_bits, dtype=np.int64), in_frac_bits, out_bits,
                             in_bits)


def scale_round_sat(e: np.ndarray, recip: npt.ArrayLike, shift: npt.ArrayLike, zero_point: int,
                    out_bits: int, out: np.ndarray | None = None) -> np.ndarray:
    """``sat(asr_rnd(recip * e, shift, 32) + zero_point, out_bits)`` for 16-bit ``e`` and ``recip``.

    The final step of softmax (``mli_math_acc_cast_fx`` / ``mli_prv_convert_fx16_sa8`` of a
    ``mli_math_mul_fx<int16_t, int32_t>`` product).

    Computed in int32 when every shift is >= 1: ``|recip * e| <= 2**15 * 2**15 = 2**30``, and the
    rounding adds at most ``2**29`` (shift <= 30), so no int32 operation overflows (and C's
    saturating add never saturates). A shift of 31 or more always gives 0 for ``|x| <= 2**30``
    (``x + 2**30`` saturates below ``2**31`` under ROUND_UP; ties go to 0 under ROUND_CONVERGENT),
    which the int32 path gets by zeroing ``recip``. Other shifts use the generic int64 model.
    Per-slice shifts ``n`` become one shift ``N = max(n)`` with factors ``recip * 2**(N - n)``
    (the same rational, so the same rounding in both modes) when ``|e| * |factor| + 2**(N - 1)``
    stays below ``2**31``, or, for non-negative ``e`` and factors, below ``2**32`` (in uint32).

    Args:
        e: int16-range values, any shape.
        recip, shift: one value per slice, broadcasting against ``e``.
        zero_point: output zero point.
        out_bits: output container bits (8 or 16).
        out: optional destination of the broadcast shape (any integer dtype holding the values,
            any strides); written (after every input is read) and returned instead of a new array.

    Returns:
        Array of the ``out_bits``-bit container dtype, the broadcast shape (``out`` when given).
    """
    out_dt = np.int8 if out_bits == 8 else np.int16
    e = np.asarray(e)
    recip = np.asarray(recip, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    lo, hi = -(1 << (out_bits - 1)), (1 << (out_bits - 1)) - 1
    fast = e.dtype in (np.int8, np.int16) and (shift.size == 0 or int(shift.min()) >= 1) and (
        recip.size == 0 or (int(recip.min()) >= -(1 << 15) and int(recip.max()) < 1 << 15))
    if not fast:
        x = recip * np.asarray(e, dtype=np.int64)
        v = wrap(asr_rnd(x, shift, 32) + int(zero_point), 32)
        return _store(sat(v, out_bits), out_dt, out)
    r = np.where(shift >= 31, 0, recip)
    n = np.minimum(shift, 30)
    x = None
    if n.size > 1 and e.size:
        # One shift for every slice (scalar operands run NumPy's fastest loops): the largest,
        # with each factor scaled up to it, when the products still fit (see above).
        top = int(n.max())
        folded = r << (top - n)
        e_lo, e_hi = int(e.min()), int(e.max())
        if int(np.abs(folded).max()) * max(-e_lo, e_hi) + (1 << (top - 1)) < 1 << 31:
            r, n = folded, top
        elif e_lo >= 0 and int(folded.min()) >= 0 and int(folded.max()) * e_hi + (1 << (top - 1)) < 1 << 32:
            x = _folded_uint32(e, folded, top)
    if x is None:
        x = np.empty(np.broadcast_shapes(e.shape, r.shape), dtype=np.int32)
        x[...] = e  # then an int32 in-place product: faster than a mixed-type multiply
        x *= r.astype(np.int32)
        x = asr_rnd_int32(x, n)
    if zero_point:
        x += np.int32(zero_point)
    np.clip(x, lo, hi, out=x)
    return _store(x, out_dt, out)


def _folded_uint32(e: np.ndarray, folded: np.ndarray, top: int) -> np.ndarray:
    """``asr_rnd(e * folded, top)`` for non-negative products below ``2**32 - 2**(top - 1)``.

    :func:`scale_round_sat`'s folded form when it does not fit int32 but the values are not
    negative (softmax's exponentials and reciprocals): uint32 products, rounding as
    :func:`asr_rnd_int32` with one scalar shift (logical = arithmetic on these values).

    Returns:
        An int32 view of the results (below ``2**(32 - top)``).
    """
    u = np.empty(np.broadcast_shapes(e.shape, folded.shape), dtype=np.uint32)
    u[...] = e
    u *= folded.astype(np.uint32)
    half, n = np.uint32(1 << (top - 1)), np.uint32(top)
    if round_mode() is RoundMode.UP:
        u += half
    else:
        odd = u >> n
        odd &= np.uint32(1)
        u += half - np.uint32(1)
        u += odd
    u >>= n
    return u.view(np.int32)


def _store(x: np.ndarray, dtype: npt.DTypeLike, out: np.ndarray | None) -> np.ndarray:
    """``x`` (values within ``dtype``) as a new ``dtype`` array, or written into ``out``."""
    if out is None:
        return x.astype(dtype)
    out[...] = x
    return out


# Below this many codes a direct gather beats building the table of code pairs.
_PAIR_GATHER_MIN = 1 << 12


def take_codes8(table: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``table[code]`` for every 8-bit code of ``x`` (its bytes read as unsigned): a 256-entry gather.

    A C-contiguous ``x`` with an even number of codes (at least :data:`_PAIR_GATHER_MIN`) is read
    as 16-bit pairs of codes and gathered from the 65536 pairs of results, half the gathers.
    The pair table is laid out so that each 16-bit entry holds the two 8-bit results in the
    memory order of the two codes, on either byte order.

    Args:
        table: 256 one-byte results (int8 or uint8), indexed by the unsigned code.
        x: int8 / uint8 array.

    Returns:
        Array of ``x``'s shape and ``table``'s dtype.
    """
    codes = x.view(np.uint8)
    if not x.flags.c_contiguous or x.size % 2 or x.size < _PAIR_GATHER_MIN:
        return np.take(table, codes)
    t = table.view(np.uint8).astype(np.uint16)
    # pairs[hi, lo] = t[hi] * 256 + t[lo], the entry of code pair hi * 256 + lo: on either byte order
    # its two bytes are the results of the two codes, in their memory order.
    pairs = (t[:, None] << 8) | t[None, :]
    return np.take(pairs.reshape(-1), codes.reshape(-1).view(np.uint16)).view(table.dtype).reshape(x.shape)

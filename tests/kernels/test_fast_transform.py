"""The fast paths of the transform / diverse kernels equal their plain paths on randomised operands.

Large slices (many screening blocks of :func:`pymli.kernels.diverse.argmax`, the benchmark's
64x64x32 shapes, softmax's short slices along the last axis), odd sizes, ties, extreme values, strides and both
rounding platforms; every output is compared whole with ``np.array_equal`` against the plain
path: ``argmax_reference``, ``l2_normalize_reference``, softmax slice by slice (each small
enough for the direct evaluation), the int64 model of ``scale_round_sat``, a direct gather.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymli.arith.lut import create_lut, scale_round_sat, take_codes8
from pymli.arith.rnn import RoundShift, eltwise_fx, eltwise_sa8, fx_addsub_plan
from pymli.arith.rounding import asr_rnd, sat
from pymli.config import EM, VPX, use_platform
from pymli.kernels import diverse as KD
from pymli.kernels import transform as KT
from ._shared import assert_argmax_matches_heap_replay, assert_l2_normalize_matches_reference

DTYPES = {8: np.int8, 16: np.int16}
PATTERNS = ["uniform", "narrow", "ascending", "descending", "plateau", "late_max", "extremes"]


def _values(rng: np.random.Generator, shape: tuple[int, ...], bits: int, pattern: str) -> np.ndarray:
    """Container values with the tie / order structure ``pattern`` (in C order over the tensor)."""
    info = np.iinfo(DTYPES[bits])
    lo, hi = int(info.min), int(info.max)
    n = int(np.prod(shape))
    if pattern == "uniform":
        v = rng.integers(lo, hi + 1, n)
    elif pattern == "narrow":
        v = rng.integers(-3, 3, n)
    elif pattern == "ascending":  # every element enters the heap
        v = np.sort(rng.integers(lo, hi + 1, n))
    elif pattern == "descending":
        v = np.sort(rng.integers(lo, hi + 1, n))[::-1]
    elif pattern == "plateau":  # long runs of equal values, the maximum among them
        v = np.repeat(rng.integers(lo, hi + 1, max(n // 50, 1)), 50)[:n]
        v = np.concatenate([v, np.full(n - v.size, lo)])
    elif pattern == "late_max":  # the maxima only at the very end
        v = rng.integers(lo, 0, n)
        v[-rng.integers(1, min(n, 5) + 1):] = hi
    else:  # extremes only
        v = rng.choice([lo, hi, lo + 1, hi - 1], n)
    return v.astype(DTYPES[bits]).reshape(shape)


big_shapes = st.sampled_from([(64, 64, 32), (4097,), (129, 3), (3, 1000), (5, 77, 9), (130, 2, 65), (64, 1)])


# ---------------------------------------------------------------------------------------- argmax
@settings(max_examples=120, deadline=None)
@given(big_shapes, st.sampled_from([8, 16]), st.integers(-1, 2), st.sampled_from([1, 2, 3, 5, 8, 12]),
       st.sampled_from(PATTERNS), st.booleans(), st.integers(0, 2**32 - 1))
def test_argmax_equals_heap_replay_on_large_slices(shape, bits, axis, k, pattern, strided, seed) -> None:
    x = _values(np.random.default_rng(seed), shape, bits, pattern)
    assert_argmax_matches_heap_replay(x, axis, k, (2, 1) if strided else None)


@pytest.mark.parametrize("bits", [8, 16])
@pytest.mark.parametrize("axis, k", [(-1, 1), (-1, 5), (2, 3), (0, 4), (1, 2)])
def test_argmax_benchmark_shapes(bits: int, axis: int, k: int) -> None:
    x = _values(np.random.default_rng(bits * 10 + k), (64, 64, 32), bits, "uniform")
    assert np.array_equal(KD.argmax(x, axis, k), KD.argmax_reference(x, axis, k))


def test_argmax_non_contiguous_input() -> None:
    base = _values(np.random.default_rng(5), (40, 70, 12), 8, "narrow")
    x = base[::2, 3:, ::-1]  # a strided, reversed view: the kernel reads it like any array
    for axis, k in [(-1, 4), (0, 3), (2, 2), (1, 1)]:
        assert np.array_equal(KD.argmax(x, axis, k), KD.argmax_reference(x, axis, k))


@pytest.mark.parametrize("k", [2, 3, 7])
def test_heap_topk_whole_range_of_k(k: int) -> None:
    rng = np.random.default_rng(k)
    for pattern in PATTERNS:
        v = _values(rng, (3000,), 16, pattern)
        assert np.array_equal(KD.heap_topk(v, k), KD.argmax_reference(v, -1, k)[0])
    with pytest.raises(ValueError):
        KD.heap_topk(np.zeros(3, np.int8), 4)


def test_screen_keeps_every_element_that_enters_the_heap() -> None:
    """The screen's mask holds every element the heap takes (replayed element by element)."""
    rng = np.random.default_rng(11)
    for pattern in PATTERNS:
        cols = _values(rng, (3000, 3), 8, pattern)
        for k in (2, 5):
            mask, final = KD._screen(cols, k)
            for c in range(cols.shape[1]):
                v = cols[:, c].tolist()
                heap = sorted(v[:k])
                for i in range(k, len(v)):
                    if v[i] >= heap[0]:
                        assert mask[i, c]
                        heap[0] = v[i]
                        heap.sort()
                assert final[c] <= heap[0]


# ---------------------------------------------------------------------------------- LUT kernels
MODES = {"up": VPX, "convergent": EM}
short_last_shapes = st.sampled_from([(64, 64, 32), (33, 7), (600, 5), (3, 170, 64), (2, 300, 17), (1000, 2)])


def _per_slice(fn, x: np.ndarray, **kw) -> np.ndarray:
    """``fn`` applied to each slice along the last axis on its own (small: the plain path)."""
    flat = x.reshape(-1, x.shape[-1])
    return np.stack([fn(row, axis=0, **kw) for row in flat]).reshape(x.shape)


@settings(max_examples=30, deadline=None)
@given(short_last_shapes, st.sampled_from([8, 16]), st.sampled_from(["uniform", "narrow", "extremes", "plateau"]),
       st.integers(0, 15), st.sampled_from(list(MODES)), st.integers(0, 2**32 - 1))
def test_softmax_fx_short_slices_equal_per_slice(shape, bits, pattern, fb, mode, seed) -> None:
    x = _values(np.random.default_rng(seed), shape, bits, pattern)
    lut = create_lut("softmax")
    with use_platform(MODES[mode]):
        got = KT.softmax_fx(x, lut, in_frac_bits=min(fb, bits - 1), bits=bits, axis=x.ndim - 1)
        want = _per_slice(KT.softmax_fx, x, lut=lut, in_frac_bits=min(fb, bits - 1), bits=bits)
    assert got.dtype == want.dtype
    assert np.array_equal(got, want)


@settings(max_examples=30, deadline=None)
@given(short_last_shapes, st.sampled_from(["uniform", "narrow", "extremes", "plateau"]),
       st.integers(1, 32767), st.integers(8, 30), st.sampled_from(list(MODES)), st.integers(0, 2**32 - 1))
def test_softmax_sa8_short_slices_equal_per_slice(shape, pattern, scale, shift, mode, seed) -> None:
    x = _values(np.random.default_rng(seed), shape, 8, pattern)
    lut = create_lut("softmax")
    with use_platform(MODES[mode]):
        got = KT.softmax_sa8(x, lut, in_scale=scale, in_shift=shift, axis=x.ndim - 1)
        want = _per_slice(KT.softmax_sa8, x, lut=lut, in_scale=scale, in_shift=shift)
    assert np.array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([(64, 64, 32), (4097,), (129, 3), (5, 77, 9), (2, 1, 6000)]), st.sampled_from([8, 16]),
       st.integers(-1, 2), st.sampled_from(PATTERNS), st.integers(-128, 127), st.booleans(),
       st.sampled_from(list(MODES)), st.integers(0, 2**32 - 1))
def test_l2_normalize_equals_reference_on_large_tensors(shape, bits, axis, pattern, zp, spread, mode, seed) -> None:
    rng = np.random.default_rng(seed)
    x = _values(rng, shape, bits, pattern)
    if spread:  # slices of very different magnitudes: different shifts per slice
        x = (x.astype(np.int64) >> rng.integers(0, bits - 1, x.shape[:-1] + (1,))).astype(x.dtype)
    assert_l2_normalize_matches_reference(x, bits, axis, zp, MODES[mode])


def test_l2_normalize_fast_path_taken_on_benchmark_shapes() -> None:
    lut = create_lut("l2_normalize")
    rng = np.random.default_rng(2)
    for bits, kw in ((8, dict(bits=8, out_shift=7, in_zp=-7)), (16, dict(bits=16, out_shift=15, in_zp=None))):
        x = _values(rng, (64, 64, 32), bits, "uniform")
        for axis in (-1, 2):
            fast = KT._l2_normalize_fast(x, lut, axis=axis, **kw)
            assert fast is not None
            assert np.array_equal(fast, KT.l2_normalize_reference(x, lut, axis=axis, **kw))


@pytest.mark.parametrize("shape", [(64, 64, 32), (4096,), (4097,), (5000, 3), (10,), (0,)])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_take_codes8_equals_direct_gather(shape, dtype) -> None:
    rng = np.random.default_rng(len(shape))
    x = rng.integers(0, 256, shape).astype(np.uint8).view(dtype)
    for table in (rng.integers(-128, 128, 256).astype(np.int8), rng.integers(0, 256, 256).astype(np.uint8)):
        got = take_codes8(table, x)
        assert got.dtype == table.dtype and got.shape == x.shape
        assert np.array_equal(got, table[x.view(np.uint8)])
        if x.ndim > 1:  # a strided view: the direct gather
            assert np.array_equal(take_codes8(table, x[:, ::2]), table[x[:, ::2].view(np.uint8)])


@pytest.mark.parametrize("mode", list(MODES))
def test_scale_round_sat_uniform_and_mixed_shifts(mode: str) -> None:
    rng = np.random.default_rng(4)
    e = rng.integers(-32768, 32768, (300, 40)).astype(np.int16)
    recip = rng.integers(-32768, 32768, (300, 1))
    small = (e >> 6).astype(np.int16)  # products small enough for one folded shift
    ties = np.arange(-20, 20, dtype=np.int16).repeat(30).reshape(40, 30)  # exact halves on every shift
    for x, r, shifts in ((e, recip, (np.full((300, 1), 17), rng.integers(1, 33, (300, 1)), np.full((300, 1), 31))),
                         (small, recip, (rng.integers(12, 16, (300, 1)), rng.integers(1, 33, (300, 1)))),
                         (ties, np.ones((40, 1), np.int64), (rng.integers(1, 4, (40, 1)),))):
        for shift in shifts:
            with use_platform(MODES[mode]):
                got = scale_round_sat(x, r, shift, 3, 16)
                want = sat(asr_rnd(r * x.astype(np.int64), shift, 32) + 3, 16)
            assert np.array_equal(got, want)


# ---------------------------------------------------------------------------------- recurrent
@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["add", "sub"]), st.integers(0, 18), st.integers(0, 18), st.integers(0, 18),
       st.sampled_from([8, 16]), st.sampled_from(list(MODES)), st.integers(0, 2**32 - 1))
def test_fx_addsub_plan_equals_eltwise_fx(op, fa, fb, fo, io_bits, mode, seed) -> None:
    rng = np.random.default_rng(seed)
    lim = 1 << (io_bits - 1)
    a = rng.integers(-lim, lim, (3, 50))
    b = rng.integers(-lim, lim, (3, 50))
    a[0, :4], b[0, :4] = [-lim, lim - 1, -lim, 0], [lim - 1, -lim, -lim, 0]  # the extremes
    with use_platform(MODES[mode]):
        plan = fx_addsub_plan(op, fa, fb, fo, io_bits)
        assert np.array_equal(plan(a, b), eltwise_fx(op, a, b, fa, fb, fo, io_bits))
        assert np.array_equal(plan(lim - 1, b), eltwise_fx(op, lim - 1, b, fa, fb, fo, io_bits))  # a scalar


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("qh", [(0, 16384, 21), (-5, 30000, 17), (7, 1, 8)])
def test_sa8_product_is_symmetric(mode: str, qh: tuple[int, int, int]) -> None:
    """The GRU multiplies r * h and h * z through one table: the sa8 product commutes with its parameters."""
    codes = np.arange(-128, 128)
    a, b = np.repeat(codes, 256), np.tile(codes, 256)
    qs = (-128, 1, 8)
    with use_platform(MODES[mode]):
        assert np.array_equal(eltwise_sa8("mul", a, b, qs, qh, qh), eltwise_sa8("mul", b, a, qh, qs, qh))


# --------------------------------------------------------------------------------------- permute
@settings(max_examples=60, deadline=None)
@given(st.sampled_from([(64, 64, 32), (3, 100, 200), (70, 3, 5, 40), (1, 300, 300), (300, 301), (33, 2, 700)]),
       st.sampled_from([np.int8, np.int16, np.int32]), st.data(), st.sampled_from(["new", "out", "wider"]),
       st.integers(0, 2**32 - 1))
def test_blocked_permute_equals_transpose(shape, dtype, data, dest, seed) -> None:
    x = np.random.default_rng(seed).integers(-100, 100, shape).astype(dtype)
    perm = data.draw(st.permutations(list(range(len(shape)))))
    want = np.ascontiguousarray(np.transpose(x, perm))
    if dest == "new":
        got = KD.permute(x, perm)
    else:
        got = np.zeros(want.shape, dtype if dest == "out" else np.int64)
        assert KD.permute(x, perm, out=got) is got
    assert np.array_equal(got, want)


def test_blocked_permute_of_a_strided_view_into_a_strided_out() -> None:
    base = np.random.default_rng(9).integers(-100, 100, (80, 90, 40)).astype(np.int16)
    x = base[::2, 5:, ::-1]
    out = np.zeros((80, 40, 85), np.int16)[::2, :, ::-1]
    assert np.array_equal(KD.permute(x, [2, 0, 1], out=out), np.transpose(x, [2, 0, 1]))


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("bits", [32, 64])
def test_round_shift_plan_equals_asr_rnd(mode: str, bits: int) -> None:
    """The per-slice shifts of softmax's sum normalisation (32 bits) and l2_normalize's (64 bits)."""
    rng = np.random.default_rng(bits)
    lim = 1 << (bits - 1) if bits == 32 else 1 << 53  # int32 sums; l2's float-exact sums
    x = np.concatenate([rng.integers(-lim, lim, 20000), np.arange(-70000, 70000), [lim - 1, -lim, 0, 1, -1]])
    if bits == 64:
        x = np.abs(x)  # sums of squares
    n = np.concatenate([rng.integers(-8, bits + 2, x.size - 5), [1, bits - 1, 0, -3, bits]])
    for shifts in (n, np.full(x.size, 5), np.clip(n, 1, bits - 1)):
        with use_platform(MODES[mode]):
            got = RoundShift(shifts, bits, int(np.abs(x).max()))(x)
            assert np.array_equal(got, asr_rnd(x, shifts, bits))

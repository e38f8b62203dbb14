"""The speed paths of the kernels equal their plain paths on randomised operands.

Each fast path (typed ``np.clip`` ReLU, eltwise max/min without a shift, l2_normalize in int32 /
float64, argmax on the winners only with the heap shortcut, average pooling's float
requantisation, depthwise scratch buffers) is compared with the plain computation it replaces:
an int64 model, the kernel's reference path, or a different kernel with the same C semantics.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymli.arith import activation as act
from pymli.arith.eltwise import EltOp, fx_eltwise, fx_params
from pymli.arith.lut import create_lut
from pymli.arith.pool import requant_params
from pymli.arith.requant import relu_bounds
from pymli.config import EM, VPX, Platform, use_platform
from pymli.kernels import activation as KA
from pymli.kernels import convolution as KC
from pymli.kernels import diverse as KD
from pymli.kernels import pooling as KP
from pymli.kernels import transform as KT
from pymli.kernels.eltwise import eltwise_fx
from ._shared import assert_argmax_matches_heap_replay, assert_l2_normalize_matches_reference, pool_case

MODES = {"up": VPX, "convergent": EM}
DTYPES = {8: np.int8, 16: np.int16}


def _ints(rng: np.random.Generator, shape: tuple[int, ...], bits: int, narrow: bool = False) -> np.ndarray:
    """Random container values; ``narrow`` draws from a few values so that ties are frequent."""
    if narrow:
        return rng.integers(-3, 3, shape).astype(DTYPES[bits])
    info = np.iinfo(DTYPES[bits])
    return rng.integers(int(info.min), int(info.max) + 1, shape).astype(DTYPES[bits])


shapes = st.lists(st.integers(1, 7), min_size=1, max_size=4).map(tuple)


# ------------------------------------------------------------------------------------------ ReLU
@settings(max_examples=60, deadline=None)
@given(shapes, st.sampled_from([8, 16]), st.integers(0, 3), st.integers(-200, 200),
       st.integers(1, 32767) | st.integers(-32768, -1),  # an int16 scale; 0 divides by zero in C too
       st.integers(-8, 31), st.booleans(), st.integers(0, 2**32 - 1))
def test_relu_clip_equals_max_then_min(shape, bits, kind, zero, scale, shift, in_place, seed) -> None:
    x = _ints(np.random.default_rng(seed), shape, bits)
    lo, hi = act.relu_limits(kind, bits, zero, scale, shift)
    want = np.minimum(np.maximum(x.astype(np.int64), lo), hi)  # C: max first, then min (lo > hi gives hi)
    if in_place:
        buf = x.copy()
        got = KA.relu(buf, kind, zero=zero, scale=scale, shift=shift, out=buf)
        assert got is buf
    else:
        got = KA.relu(x, kind, zero=zero, scale=scale, shift=shift)
    assert got.dtype == x.dtype
    assert np.array_equal(got, want)


def test_relu_bounds_above_each_other_give_the_upper_bound() -> None:
    x = np.arange(-128, 128, dtype=np.int8)
    # RELU_1 with a zero point of 127 and a large scale: lo = 127 > hi happens for odd params.
    for zero, scale, shift in [(127, 32767, 0), (120, 1, -3), (-128, 30000, 40)]:
        lo, hi = act.relu_limits(2, 8, zero, scale, shift)
        got = KA.relu(x, 2, zero=zero, scale=scale, shift=shift)
        assert np.array_equal(got, np.minimum(np.maximum(x.astype(np.int64), lo), hi))


def test_relu_into_another_dtype_casts_like_an_assignment() -> None:
    x = np.arange(-128, 128, dtype=np.int8)
    out = np.zeros(x.shape, np.uint16)
    want = out.copy()
    want[...] = np.clip(x, -5, 127)  # GEN: from the zero point up
    assert KA.relu(x, 1, zero=-5, out=out) is out
    assert np.array_equal(out, want)


# --------------------------------------------------------------------------------------- eltwise
@settings(max_examples=60, deadline=None)
@given(shapes, st.sampled_from([8, 16]), st.sampled_from(["max", "min"]), st.integers(-2, 17),
       st.sampled_from([None, "a", "b"]), st.sampled_from(list(MODES)), st.integers(0, 2**32 - 1))
def test_eltwise_fx_min_max_equals_plain(shape, bits, op, fb, scalar, mode, seed) -> None:
    rng = np.random.default_rng(seed)
    a, b = _ints(rng, shape, bits), _ints(rng, shape, bits)
    if scalar == "a":
        a = a.reshape(-1)[0].reshape(())
    elif scalar == "b":
        b = b.reshape(-1)[0].reshape(())
    for fb_out in (fb, fb - 1, fb + 2):  # no shift (the fast path), a right and a left shift
        with use_platform(MODES[mode]):
            got = eltwise_fx(op, a, b, frac_bits=(fb, fb, fb_out), bits=bits)
            p = fx_params(EltOp(op), fb, fb, fb_out, bits)
            want = fx_eltwise(EltOp(op), a.astype(np.int64), b.astype(np.int64), p, bits)
        assert got.dtype == DTYPES[bits]
        assert np.array_equal(got, np.broadcast_to(want, got.shape))


# ---------------------------------------------------------------------------------- l2_normalize
@settings(max_examples=60, deadline=None)
@given(shapes, st.sampled_from([8, 16]), st.integers(-1, 3), st.integers(-128, 127), st.booleans(),
       st.sampled_from(list(MODES)), st.integers(0, 2**32 - 1))
def test_l2_normalize_fast_equals_reference(shape, bits, axis, zp, spread, mode, seed) -> None:
    rng = np.random.default_rng(seed)
    x = _ints(rng, shape, bits)
    if spread and x.ndim > 1:
        # Slices of very different magnitudes: different shifts per slice (the float64 branch).
        x = (x.astype(np.int64) >> rng.integers(0, bits - 1, shape[:1] + (1,) * (x.ndim - 1))).astype(x.dtype)
    assert_l2_normalize_matches_reference(x, bits, axis, zp, MODES[mode])


def test_l2_normalize_fast_paths_are_taken() -> None:
    rng = np.random.default_rng(3)
    lut = create_lut("l2_normalize")
    x16 = _ints(rng, (9, 8, 16), 16)
    x8 = _ints(rng, (9, 8, 16), 8)
    spread = (x16.astype(np.int64) >> np.arange(9).reshape(9, 1, 1)).astype(np.int16)
    for x, kw, axis in [(x16, dict(bits=16, out_shift=15, in_zp=None), -1),
                        (x16, dict(bits=16, out_shift=15, in_zp=None), 2),
                        (spread, dict(bits=16, out_shift=15, in_zp=None), 1),
                        (x8, dict(bits=8, out_shift=7, in_zp=-5), -1),
                        (x8, dict(bits=8, out_shift=7, in_zp=-5), 0)]:
        fast = KT._l2_normalize_fast(x, lut, axis=axis, **kw)
        assert fast is not None
        assert np.array_equal(fast, KT.l2_normalize_reference(x, lut, axis=axis, **kw))


# ---------------------------------------------------------------------------------------- argmax
@settings(max_examples=80, deadline=None)
@given(shapes, st.sampled_from([8, 16]), st.integers(-1, 3), st.integers(1, 12), st.booleans(), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_argmax_equals_heap_replay(shape, bits, axis, k, narrow, strided, seed) -> None:
    x = _ints(np.random.default_rng(seed), shape, bits, narrow)
    assert_argmax_matches_heap_replay(x, axis, k, (3, 0) if strided else None)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
def test_heap_shortcut_with_many_maxima(k: int) -> None:
    rng = np.random.default_rng(k)
    for _ in range(20):
        v = rng.integers(-128, 128, 3000).astype(np.int8)
        v[rng.integers(0, 3000, 40)] = 127  # the maximum fills the heap early, then keeps coming
        want = KD.argmax_reference(v, -1, k)[0]
        assert np.array_equal(KD.heap_topk(v, k), want)


# --------------------------------------------------------------------------------------- avepool
@settings(max_examples=100, deadline=None)
@given(pool_case(), st.sampled_from(list(MODES)), st.booleans(), st.integers(0, 2**32 - 1))
def test_avepool_float_requant_equals_integer_path(case, mode, mul16, seed) -> None:
    bits, shape, geo, arith = case
    geo = {**geo, **arith}
    if geo["out_hw"][0] < 1 or geo["out_hw"][1] < 1:
        return  # no output (the facade rejects such a cfg)
    x = _ints(np.random.default_rng(seed), shape, bits)
    platform = Platform(round_mode=MODES[mode].round_mode, avepool_16bit_mul=mul16)
    with use_platform(platform):
        got = KP.avepool_hwc(x, mul16=mul16, **geo)
        saved = KP._avepool_output_float
        KP._avepool_output_float = lambda *a, **k: None  # the integer path (arith.pool.avepool_output)
        try:
            want = KP.avepool_hwc(x, mul16=mul16, **geo)
        finally:
            KP._avepool_output_float = saved
    assert got.dtype == x.dtype
    assert np.array_equal(got, want)


def test_avepool_float_path_is_taken_for_the_benchmark_shape() -> None:
    x = _ints(np.random.default_rng(0), (32, 32, 64), 8)
    rq = requant_params(20000, 20, -3, 20000, 20, -3)
    rows = KP._runs(KP.valid_counts(32, 32, 3, 1, 1))
    cols = KP._runs(KP.valid_counts(32, 32, 3, 1, 1))
    for mode in MODES.values():
        with use_platform(mode):
            assert KP._window_params(rows, cols, rq.shift, rq.scale, rq.offset, False, 32, 8, mode.round_up) is not None
            assert KP.avepool_hwc(x, kernel=(3, 3), stride=(1, 1), pad=(1, 1), out_hw=(32, 32), base_shift=0,
                                  requant=rq).shape == (32, 32, 64)


# ------------------------------------------------------------------------------------- depthwise
@st.composite
def depthwise_case(draw):
    kind = draw(st.sampled_from(["sa8", "fx16"]))
    h, w, c = draw(st.integers(1, 8)), draw(st.integers(1, 8)), draw(st.integers(1, 5))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sh, sw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    pt, pl = draw(st.integers(0, kh - 1)), draw(st.integers(0, kw - 1))
    pb, pr = draw(st.integers(0, kh - 1)), draw(st.integers(0, kw - 1))
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (w + pl + pr - (kw - 1) * dw - 1) // sw + 1
    return kind, (h, w, c), (kh, kw), dict(stride=(sh, sw), dilation=(dh, dw), pad=(pt, pl), out_hw=(oh, ow))


def _depthwise_quant(kind: str, c: int, rng: np.random.Generator):  # type: ignore[no-untyped-def]
    if kind == "sa8":
        return KC.Sa8Quant(int(rng.integers(-128, 128)), 20000, 20, 0, rng.integers(8192, 32767, c),
                           np.full(c, 20), int(rng.integers(-64, 64)), 23000, 14)
    return KC.FxQuant(12, 15, 14, 10, 40, 16)


@settings(max_examples=60, deadline=None)
@given(depthwise_case(), st.sampled_from(list(MODES)), st.integers(0, 2**32 - 1))
def test_depthwise_scratch_path_equals_group_conv(case, mode, seed) -> None:
    kind, (h, w, c), (kh, kw), geo = case
    if geo["out_hw"][0] < 1 or geo["out_hw"][1] < 1:
        return  # no output
    rng = np.random.default_rng(seed)
    bits = 8 if kind == "sa8" else 16
    x = _ints(rng, (h, w, c), bits)
    wt = _ints(rng, (kh, kw, 1, c), bits)
    bias = rng.integers(-5000, 5000, c)
    q = _depthwise_quant(kind, c, rng)
    bounds = relu_bounds(0, bits)
    with use_platform(MODES[mode]):
        got = KC.depthwise_conv2d_hwcn(x, wt, bias, q, bounds=bounds, **geo)
        # the same sums through the grouped im2col product (one group per channel)
        want = KC.conv2d_hwcn(x, wt, bias, q, bounds=bounds, groups=c, **geo)
        # a call of another shape in between must not disturb the scratch buffers' users
        KC.depthwise_conv2d_hwcn(_ints(rng, (h + 1, w + 2, c), bits), wt, bias, q, bounds=bounds, **geo)
        again = KC.depthwise_conv2d_hwcn(x, wt, bias, q, bounds=bounds, **geo)
    assert np.array_equal(got, want)
    assert np.array_equal(again, want)


def test_depthwise_results_do_not_alias_scratch() -> None:
    rng = np.random.default_rng(1)
    q = _depthwise_quant("sa8", 4, rng)
    wt = _ints(rng, (3, 3, 1, 4), 8)
    bias = np.zeros(4, np.int64)
    geo = dict(stride=(1, 1), dilation=(1, 1), pad=(1, 1), out_hw=(6, 6), bounds=(-128, 127))
    x1, x2 = _ints(rng, (6, 6, 4), 8), _ints(rng, (6, 6, 4), 8)
    r1 = KC.depthwise_conv2d_hwcn(x1, wt, bias, q, **geo)
    keep = r1.copy()
    KC.depthwise_conv2d_hwcn(x2, wt, bias, q, **geo)
    assert np.array_equal(r1, keep)


# --------------------------------------------------------------------------------------- permute
@settings(max_examples=40, deadline=None)
@given(shapes, st.data(), st.integers(0, 2**32 - 1))
def test_permute_into_out_equals_copy(shape, data, seed) -> None:
    x = _ints(np.random.default_rng(seed), shape, 16)
    perm = data.draw(st.permutations(range(x.ndim)))
    want = KD.permute(x, perm)
    assert want.flags.c_contiguous and np.array_equal(want, np.transpose(x, perm))
    out = np.empty(want.shape, x.dtype)
    assert KD.permute(x, perm, out=out) is out
    assert np.array_equal(out, want)


@pytest.mark.parametrize("perm", [[2, 0, 1], [1, 0, 2], [2, 1, 0]])
def test_permute_in_place(perm: list[int]) -> None:
    x = _ints(np.random.default_rng(7), (5, 5, 5), 8)
    buf = x.copy()
    KD.permute(buf, perm, out=buf)  # output overlaps the input completely
    assert np.array_equal(buf, np.transpose(x, perm))

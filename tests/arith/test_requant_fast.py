"""``arith.requant.sa8_float_cast`` (the float64 bias add + s8asym output stage) against the integer path.

Every plan the function returns must give, on every sum within its bound, exactly what
``add_bias`` followed by ``sa8_result_cast`` gives (which the golden C calls pin down). The sums
include the bound's extremes and the values where rounding ties (multiples of half a step).
"""

from __future__ import annotations

import numpy as np
import pytest

from pymli.arith.requant import add_bias, sa8_bias_bound, sa8_float_cast, sa8_out_params, sa8_result_cast
from pymli.config import EM, VPX, Platform, use_platform
from pymli.formats import RoundMode

PLATFORMS = [VPX, EM, Platform(RoundMode.UP, True), Platform(RoundMode.CONVERGENT, True)]


def _reference(acc: np.ndarray, bias: np.ndarray, mul: np.ndarray, sh: np.ndarray, zp: int,
               clamp: tuple[int, int]) -> np.ndarray:
    b, bmax = sa8_bias_bound(bias)
    v = add_bias(acc.astype(np.int64), b, 32, None, bmax)
    return sa8_result_cast(v, mul, sh, zp, clamp=clamp)


def _sums(rng: np.random.Generator, bound: int, n: int, ch: int) -> np.ndarray:
    """Random sums, the bound's extremes, small sums, and multiples of powers of two (rounding ties)."""
    acc = rng.integers(-bound, bound + 1, size=(n, ch), dtype=np.int64)
    small = rng.integers(-(1 << 12), (1 << 12) + 1, size=(n, ch), dtype=np.int64)
    acc[: n // 4] = small[: n // 4]
    acc[0], acc[1] = bound, -bound
    # ties: multiples of 2**(k-1) for a few k
    k = rng.integers(1, 20, size=(n // 4, ch))
    acc[n // 4: n // 2] = np.clip(rng.integers(-64, 65, size=(n // 4, ch)) << (k - 1), -bound, bound)
    return acc


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: f"{p.round_mode.name}-{p.full_accu}")
@pytest.mark.parametrize("seed", range(40))
def test_float_cast_equals_integer_path(platform: Platform, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ch = int(rng.choice([1, 3, 8, 17]))
    per_channel = bool(rng.integers(0, 2))
    with use_platform(platform):
        in_scale = int(rng.integers(1, 1 << 15))
        out_scale = int(rng.integers(1, 1 << 15))
        in_frac, out_frac = int(rng.integers(8, 24)), int(rng.integers(8, 24))
        nw = ch if per_channel else 1
        w_scales = rng.integers(1, 1 << 15, size=nw)
        w_fracs = rng.integers(8, 30, size=nw)
        mul, sh = sa8_out_params(in_scale, in_frac, out_scale, out_frac, w_scales, w_fracs)
        zp = int(rng.integers(-128, 128))
        clamp = (int(rng.integers(-128, 0)), int(rng.integers(0, 128))) if rng.integers(0, 2) else (-128, 127)
        bias = rng.integers(-(1 << 31), 1 << 31, size=ch, dtype=np.int64) >> int(rng.integers(0, 31))
        bound = int(rng.choice([1 << 10, 1 << 20, 255 * 127 * 288, (1 << 31) - 1]))
        acc = _sums(rng, bound, 512, ch)
        plan = sa8_float_cast(bias, mul, sh, zp, bound, clamp=clamp)
        if plan is None:
            # only FULL_ACCU's 31-bit multiplier times a large biased sum leaves float64's exact range here
            assert platform.full_accu
            return
        got = plan(acc.astype(np.float64))
        want = _reference(acc, bias, mul, sh, zp, clamp)
        assert got.dtype == np.int8
        assert np.array_equal(got, want)
        # float32 / int32 sums (the kernels' matrix-product and depthwise dtypes) take the same path
        if bound < (1 << 24):
            assert np.array_equal(plan(acc.astype(np.float32)), want)
        assert np.array_equal(plan(acc.astype(np.int32)), want)


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: f"{p.round_mode.name}-{p.full_accu}")
def test_float_cast_every_sum_of_a_small_range(platform: Platform) -> None:
    """All sums in [-2**17, 2**17] with a multiplier that makes every step round (ties included)."""
    with use_platform(platform):
        mul, sh = sa8_out_params(12345, 15, 23456, 10, np.array([20000, 30001]), np.array([20, 21]))
        bias = np.array([1000003, -77777], dtype=np.int64)
        acc = np.arange(-(1 << 17), (1 << 17) + 1, dtype=np.int64)
        acc = np.stack([acc, acc[::-1]], axis=-1)
        plan = sa8_float_cast(bias, mul, sh, -5, 1 << 17, clamp=(-100, 120))
        assert plan is not None  # this case is meant for the float path
        assert np.array_equal(plan(acc), _reference(acc, bias, mul, sh, -5, (-100, 120)))


def test_float_cast_covers_common_parameters() -> None:
    """Typical MobileNet-like parameters (no FULL_ACCU) take the float path on both platforms."""
    for platform in (VPX, EM):
        with use_platform(platform):
            mul, sh = sa8_out_params(16384, 21, 20000, 17, np.full(8, 25000), np.full(8, 20))
            assert sa8_float_cast(np.arange(8) * 1000, mul, sh, -3, 288 * 255 * 127, clamp=(-128, 127)) is not None


def test_float_cast_refuses_wrapping_sums() -> None:
    """A bound at 2**31 or beyond needs the 32-bit wrap: no float plan."""
    with use_platform(VPX):
        mul, sh = sa8_out_params(16384, 21, 20000, 17, np.full(2, 25000), np.full(2, 20))
        assert sa8_float_cast(np.zeros(2), mul, sh, 0, 1 << 31) is None


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: f"{p.round_mode.name}-{p.full_accu}")
def test_float_cast_float32_stage(platform: Platform) -> None:
    """Float32 sums with a bound just inside the float32 stage's limit: the plans that take that
    stage (checked to be many, with and without pre-shifts, with the int32 second stage on
    ROUND_UP) equal the integer path on every tie, the extremes, and random sums, in place
    (``overwrite``) or not."""
    rng = np.random.default_rng(7)
    taken = 0
    pres, i32 = set(), set()
    for _ in range(60):
        ch = int(rng.choice([1, 5, 16]))
        in_scale, out_scale = int(rng.integers(1, 1 << 15)), int(rng.integers(1, 1 << 15))
        in_frac, out_frac = int(rng.integers(8, 24)), int(rng.integers(8, 24))
        w_scales, w_fracs = rng.integers(1, 1 << 15, size=ch), rng.integers(8, 30, size=ch)
        with use_platform(platform):
            mul, sh = sa8_out_params(in_scale, in_frac, out_scale, out_frac, w_scales, w_fracs)
            zp = int(rng.integers(-128, 128))
            clamp = (int(rng.integers(-128, 0)), int(rng.integers(0, 128)))
            bias = rng.integers(-(1 << 16), 1 << 16, size=ch, dtype=np.int64)
            bmax = int(sa8_bias_bound(bias)[1])
            bound = ((1 << 23) - 256 - 2 * bmax) // 2 if rng.integers(0, 2) else int(rng.integers(1, 1 << 20))
            plan = sa8_float_cast(bias, mul, sh, zp, bound, clamp=clamp)
            if plan is None or plan.f32 is None:
                continue
            taken += 1
            pres.add(plan.f32[0] is None)
            i32.add(plan.i32 is not None)
            acc = _sums(rng, bound, 256, ch)
            k = np.arange(1, 10)  # multiples of 2**k (ties of the shifts) next to both extremes
            edges = np.concatenate([bound >> k << k, -(bound >> k << k), (bound >> k << k) - (1 << (k - 1))])
            acc = np.concatenate([acc, edges[:, None] + np.zeros((1, ch), dtype=np.int64)])
            want = _reference(acc, bias, mul, sh, zp, clamp)
            a32 = acc.astype(np.float32)
            assert np.array_equal(a32.astype(np.int64), acc)
            assert np.array_equal(plan(a32), want)
            assert np.array_equal(a32.astype(np.int64), acc)  # not overwritten
            assert np.array_equal(plan(a32, overwrite=True), want)
    assert taken >= 20
    # plans without a pre-shift (always with FULL_ACCU), and with one (only without FULL_ACCU)
    assert pres == ({True} if platform.full_accu else {False, True})
    # the int32 second stage: ROUND_UP without FULL_ACCU only
    assert (True in i32) == (platform.round_mode is RoundMode.UP and not platform.full_accu)


def _stage_case(rng: np.random.Generator) -> tuple | None:
    """Random parameters of an output stage (current platform), with extreme biases, zero points,
    scales and bounds; None when the sums' bound leaves no room for the bias."""
    ch = int(rng.choice([1, 4, 16, 64]))
    nw = 1 if rng.integers(0, 3) == 0 else ch
    in_scale, out_scale = int(rng.integers(1, 1 << 15)), int(rng.integers(1, 1 << 15))
    in_frac, out_frac = int(rng.integers(8, 24)), int(rng.integers(8, 24))
    if rng.integers(0, 2):
        w_scales = rng.choice([1, 2, (1 << 15) - 1, int(rng.integers(1, 1 << 15))], size=nw)
    else:  # scales of one magnitude: often one shift for all channels
        w_scales = (1 << 14) + rng.integers(0, 1 << 12, size=nw)
    # one frac for all channels (with the above: a scalar shift, per-channel multipliers) or one each
    w_fracs = np.full(nw, int(rng.integers(8, 30))) if rng.integers(0, 2) else rng.integers(8, 30, size=nw)
    mul, sh = sa8_out_params(in_scale, in_frac, out_scale, out_frac, w_scales, w_fracs)
    zp = int(rng.choice([-128, 127, -32768 // 2, 30000, int(rng.integers(-128, 128))]))
    lo, hi = sorted(int(v) for v in rng.integers(-128, 128, size=2))
    bias = rng.choice([-(1 << 31), (1 << 31) - 1, 0, int(rng.integers(-(1 << 20), 1 << 20))], size=ch)
    bias = bias.astype(np.int64) >> int(rng.integers(0, 16))
    bmax = int(sa8_bias_bound(bias)[1])
    bound = int(rng.choice([(1 << 22) - bmax, ((1 << 23) - 256 - 2 * bmax) // 2, 1 << 12]))
    if bound <= 0:
        return None
    return ch, mul, sh, zp, (lo, hi), bias, bound


def _forms(plan) -> set:  # type: ignore[no-untyped-def]
    st = plan.i32
    return {("offset", st.offset > 0), ("zero point folded", st.zp8 == 0), ("scalar mul", np.ndim(st.mul) == 0),
            ("scalar shift", np.ndim(st.sh) == 0)}


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: f"{p.round_mode.name}-{p.full_accu}")
@pytest.mark.parametrize("seed", range(12))
def test_int32_stage_forms(platform: Platform, seed: int) -> None:
    """The int32 second stage (ROUND_UP without FULL_ACCU only) in each of its forms (with and
    without the 2**15 offset of the first stage, the zero point folded into the shift's additive
    or added after the int8 cast, scalar or per-channel multipliers and shifts) equals the integer
    path on random sums, sums at the bound and every tie, in place or not."""
    rng = np.random.default_rng(1000 + seed)
    planned = 0
    with use_platform(platform):
        for _ in range(40):
            case = _stage_case(rng)
            if case is None:
                continue
            ch, mul, sh, zp, clamp, bias, bound = case
            plan = sa8_float_cast(bias, mul, sh, zp, bound, clamp=clamp)
            if plan is None or plan.i32 is None:
                continue
            planned += 1
            acc = _sums(rng, bound, 256, ch)
            k = np.arange(1, 24)
            edges = np.concatenate([bound >> k << k, -(bound >> k << k), (bound >> k << k) - (1 << (k - 1))])
            edges = edges[np.abs(edges) <= bound]
            acc = np.concatenate([acc, edges[:, None] + np.zeros((1, ch), dtype=np.int64)])
            want = _reference(acc, bias, mul, sh, zp, clamp)
            a32 = acc.astype(np.float32)
            assert np.array_equal(plan(a32), want)
            assert np.array_equal(a32, acc.astype(np.float32))  # not overwritten
            assert np.array_equal(plan(a32.reshape(-1, 1, ch), overwrite=True), want.reshape(-1, 1, ch))
    assert (planned > 0) == (platform.round_mode is RoundMode.UP and not platform.full_accu)


def test_int32_stage_reaches_every_form() -> None:
    """The cases of :func:`test_int32_stage_forms` plan every form of the int32 stage."""
    seen = set()
    with use_platform(VPX):
        for seed in range(12):
            rng = np.random.default_rng(1000 + seed)
            for _ in range(40):
                case = _stage_case(rng)
                if case is not None:
                    _, mul, sh, zp, clamp, bias, bound = case
                    plan = sa8_float_cast(bias, mul, sh, zp, bound, clamp=clamp)
                    if plan is not None and plan.i32 is not None:
                        seen |= _forms(plan)
    assert len(seen) == 8, seen


def test_int32_stage_every_int16_value() -> None:
    """Sums whose pre-shifted value ``floor(u)`` takes every int16 value (and a few beyond, which
    saturate): every multiplier product, rounding add and clamp of the int32 stage is checked."""
    rng = np.random.default_rng(77)
    checked = set()
    a = np.arange(-(1 << 15) - 2, (1 << 15) + 2, dtype=np.int64)
    with use_platform(VPX):
        for _ in range(60):
            case = _stage_case(rng)
            if case is None:
                continue
            ch, mul, sh, zp, clamp, bias, _ = case
            b, bmax = sa8_bias_bound(bias)
            plan = sa8_float_cast(bias, mul, sh, zp, 1 << 12, clamp=clamp)
            if plan is None or plan.i32 is None:
                continue
            pre = np.zeros(ch, np.int64) if plan.f32[0] is None else -np.log2(plan.f32[0]).astype(np.int64)
            pre = np.broadcast_to(pre, (ch,))
            bound = (((1 << 15) + 2) << int(pre.max())) + bmax
            plan = sa8_float_cast(bias, mul, sh, zp, bound, clamp=clamp)
            if plan is None or plan.i32 is None:
                continue
            checked |= _forms(plan)
            acc = (a[:, None] << pre[None, :]) - np.broadcast_to(b, (ch,))[None, :]  # u = a (+ 0.5 with a pre-shift)
            assert np.abs(acc).max() <= bound
            assert np.array_equal(plan(acc.astype(np.float32)), _reference(acc, bias, mul, sh, zp, clamp))
        # odd 16-bit multipliers and shifts of 1..15 (no pre-shift): a * m + 2**(sh-1) takes every
        # residue modulo 2**sh, so every rounding boundary of the shift is crossed
        m16 = np.array([16385, 32767, 20001, 24577, 16387, 30001], dtype=np.int64)
        for shifts in ([1, 5, 9, 12, 14, 15], [15] * 6, [8] * 6):
            mul, sh = m16 << 16, np.array(shifts, dtype=np.int64) + 16
            bias = np.array([0, 1 << 20, -(1 << 20), 12345, -1, 7], dtype=np.int64)
            for zp, clamp in ((0, (-128, 127)), (-128, (-128, 127)), (20000, (-3, 90))):
                acc = a[:, None] - sa8_bias_bound(bias)[0][None, :]
                plan = sa8_float_cast(bias, mul, sh, zp, int(np.abs(acc).max()), clamp=clamp)
                assert plan is not None and plan.i32 is not None
                checked |= _forms(plan)
                assert np.array_equal(plan(acc.astype(np.float32)), _reference(acc, bias, mul, sh, zp, clamp))
    assert len(checked) >= 6, checked


def test_staged_needs_a_float32_first_stage() -> None:
    """``staged`` sums skip the first pass of ``first_stage()``; without one (float64 sums, or a
    plan without the float32 stage) the call refuses rather than finishing unstaged values."""
    with use_platform(VPX):
        mul, sh = sa8_out_params(16384, 21, 20000, 17, np.full(4, 25000), np.full(4, 20))
        bias = np.arange(4) * 1000
        plan = sa8_float_cast(bias, mul, sh, -3, 1 << 20, clamp=(-128, 127))
        scale, add = plan.first_stage()
        acc = np.random.default_rng(0).integers(-(1 << 20), 1 << 20, (64, 4))
        staged = acc.astype(np.float32) * (1 if scale is None else scale) + add
        assert np.array_equal(plan(staged, staged=True), plan(acc.astype(np.float32)))
        with pytest.raises(ValueError):
            plan(acc.astype(np.float64), staged=True)
        wide = sa8_float_cast(bias, mul, sh, -3, (1 << 31) - 1 - (1 << 20), clamp=(-128, 127))
        assert wide is not None and wide.first_stage() is None
        with pytest.raises(ValueError):
            wide(acc.astype(np.float32), staged=True)

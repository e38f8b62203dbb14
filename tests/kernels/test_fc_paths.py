"""The prepared fully connected layer (:func:`pymli.kernels.fully_connected.prepare_fc`) against the
plain kernel: seeded random layers of every weights type (sa8 per tensor / per axis / ext_bias with
weights zero points, fx16, fx16 x fx8, fx8), every platform, batches, strided weights, extreme
values, accumulators that wrap and shifts outside the fast path's range. Whole outputs are compared
with ``np.array_equal``."""

from __future__ import annotations

import numpy as np
import pytest

from pymli import ElType, Platform, RoundMode, Tensor, capi, use_platform
from pymli.capi.types import FullyConnectedCfg, ReluCfg, ReluType
from pymli.config import PRESETS
from pymli.kernels import convolution as K
from pymli.kernels.fully_connected import PreparedFc, fully_connected, prepare_fc, prepare_pointwise
from ._shared import assert_repeated_calls_follow_rewrites

PLATFORMS = [*PRESETS.values(), Platform(RoundMode.CONVERGENT, True, False, "em-full-accu")]
KINDS = ["sa8", "sa8_axis", "sa8_ext", "sa8_wzp", "fx16", "fx16_fx8_fx8", "fx8"]


def _ints(rng: np.random.Generator, shape: tuple[int, ...], dtype: type, extreme: bool) -> np.ndarray:
    info = np.iinfo(dtype)
    if extreme:  # only the container limits (and a few zeros): saturations and largest sums
        return rng.choice(np.array([info.min, info.max, 0, info.min, info.max]), size=shape).astype(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)


def _layer(rng: np.random.Generator, kind: str, n: int, m: int, extreme: bool = False):
    """Random (w, bias, q, bounds, x dtype) of one kind; output parameters spread the results."""
    if kind.startswith("sa8"):
        nw = m if kind == "sa8_axis" else 1
        in_frac = int(rng.integers(10, 24))
        wf = int(rng.integers(10, 24)) + rng.integers(0, 2, nw)
        e = int(rng.integers(14, 30))
        q = K.Sa8Quant(0 if kind == "sa8_ext" else int(rng.integers(-128, 128)), int(rng.integers(1, 32768)), in_frac,
                       int(rng.integers(-3, 4)) if kind == "sa8_wzp" else 0, rng.integers(1, 32768, nw), wf,
                       int(rng.integers(-128, 128)), int(rng.integers(1, 32768)), in_frac + int(wf[0]) - e)
        w, b = _ints(rng, (n, m), np.int8, extreme), _ints(rng, (m,), np.int32, extreme)
        if not extreme:
            b = (b >> int(rng.integers(8, 24))).astype(np.int32)
        zp = q.out_zp
        lo, hi = sorted(int(v) for v in rng.integers(-128, 128, 2)) if rng.random() < 0.3 else (-128, 127)
        return w, b, q, (lo, hi) if rng.random() < 0.5 else (max(zp, -128), 127), np.int8
    wt, xt, acc, ob = {"fx16": (np.int16, np.int16, 40, 16), "fx16_fx8_fx8": (np.int8, np.int16, 32, 16),
                       "fx8": (np.int8, np.int8, 32, 8)}[kind]
    wbits = np.iinfo(wt).bits
    in_frac, w_frac = int(rng.integers(0, np.iinfo(xt).bits)), int(rng.integers(0, wbits))
    q = K.FxQuant(in_frac, w_frac, int(rng.integers(in_frac + w_frac - 12, in_frac + w_frac + 3)),
                  in_frac + w_frac - int(rng.integers(-1, 34)), acc, ob)
    w, b = _ints(rng, (n, m), wt, extreme), _ints(rng, (m,), wt, extreme)
    lim = (1 << (ob - 1))
    bounds = (0, lim - 1) if rng.random() < 0.3 else (-lim, lim - 1)
    return w, b, q, bounds, xt


def _ordinary(q, w_bits: int = 8):
    """``q`` with output parameters of a trained layer: results spread, shifts inside the fast range."""
    if isinstance(q, K.FxQuant):
        shift = (8 if q.out_bits == 8 else 16) + w_bits - q.out_bits + 1
        return K.FxQuant(q.in_frac, q.w_frac, q.b_frac, q.in_frac + q.w_frac - shift, q.acc_bits, q.out_bits)
    return K.Sa8Quant(q.in_zp, 20000, 20, 0, np.full(q.w_scales.size, 20000), np.full(q.w_fracs.size, 20),
                      q.out_zp, 23000, 16)


def _check(prep: PreparedFc, x: np.ndarray, w: np.ndarray, b: np.ndarray, q, bounds, dtype) -> None:
    want = fully_connected(x, w, b, q, bounds).astype(dtype)
    got = prep(x)
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    assert np.array_equal(got, want), (q, bounds, np.flatnonzero(got != want)[:5])
    into = np.full(want.shape, 99, want.dtype)
    assert prep(x, into) is into and np.array_equal(into, want)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(12))
def test_prepared_matches_plain(kind: str, seed: int) -> None:
    rng = np.random.default_rng(hash((kind, seed)) & 0xFFFFFFFF)
    n, m = int(rng.integers(1, 80)), int(rng.integers(1, 40))
    extreme = seed % 4 == 3
    w, b, q, bounds, xt = _layer(rng, kind, n, m, extreme)
    if seed % 3 == 1:  # weights seen through a strided view, as capi hands them over
        big = np.zeros((n, 2 * m + 1), w.dtype)
        big[:, ::2][:, :m] = w
        w = big[:, ::2][:, :m]
    dtype = np.int64 if seed % 2 else xt
    prep = prepare_fc(w, b, q, bounds, dtype)
    for plat in PLATFORMS:
        with use_platform(plat):
            for shape in ((n,), (1, n), (5, n), (2, 3, n)):
                _check(prep, _ints(rng, shape, xt, extreme or rng.random() < 0.2), w, b, q, bounds, dtype)


@pytest.mark.parametrize("kind", ["sa8", "fx16", "fx16_fx8_fx8", "fx8"])
def test_platform_switch_between_calls(kind: str) -> None:
    """One prepared layer called under alternating platforms follows each (no rounding baked in)."""
    rng = np.random.default_rng(7)
    w, b, q, bounds, xt = _layer(rng, kind, 24, 9)
    q, bounds = _ordinary(q, w.itemsize * 8), (-(1 << 15), (1 << 15) - 1)
    x = _ints(rng, (64, 24), xt, False)
    if isinstance(q, K.FxQuant):  # even sums shifted by 2: half of them are ties, which the modes round apart
        half = 1 << (q.out_bits - 1)
        q, bounds = K.FxQuant(8, 8, 8, 14, q.acc_bits, q.out_bits), (-half, half - 1)
        w = (w >> (w.itemsize * 8 - 3)).astype(w.dtype)
        b = (b >> (b.itemsize * 8 - 2)).astype(b.dtype)
        x = ((x >> (x.itemsize * 8 - 6)) * 2).astype(xt)
    prep = prepare_fc(w, b, q, bounds)
    outs = {}
    for plat in PLATFORMS * 2:
        with use_platform(plat):
            _check(prep, x, w, b, q, bounds, np.int64)
            outs.setdefault(plat.name, prep(x))
    # the platforms do differ on this layer: a prepared path ignoring them would have failed above
    assert len({o.tobytes() for o in outs.values()}) > 1


def test_fast_path_taken_for_ordinary_layers() -> None:
    """Typical layers run the float path (not the plain-kernel fallback) on every platform."""
    rng = np.random.default_rng(3)
    for kind in ("sa8", "sa8_axis", "sa8_ext", "fx16", "fx16_fx8_fx8", "fx8"):
        w, b, q, bounds, xt = _layer(rng, kind, 64, 32)
        q = _ordinary(q, w.itemsize * 8)
        prep = prepare_fc(w, b, q, bounds)
        x = _ints(rng, (3, 64), xt, False)
        for plat in PLATFORMS:
            with use_platform(plat):
                _check(prep, x, w, b, q, bounds, np.int64)
        stages = [fn for _, fn in prep._stages.values()]
        assert len(stages) == len(PLATFORMS)
        assert all(getattr(fn, "__func__", None) is not PreparedFc._plain for fn in stages), kind


def test_wrapping_accumulator_and_extremes() -> None:
    """Long layers of extreme values: 32-bit accumulators wrap (fallback), 40-bit ones do not."""
    rng = np.random.default_rng(11)
    for kind, n in (("sa8", 70000), ("fx16_fx8_fx8", 3000), ("fx8", 140000), ("fx16", 5000)):
        w, b, q, bounds, xt = _layer(rng, kind, n, 3, extreme=True)
        w[:] = np.iinfo(w.dtype).min
        prep = prepare_fc(w, b, q, bounds)
        for plat in PLATFORMS:
            with use_platform(plat):
                x = np.full((2, n), np.iinfo(xt).min, xt)
                x[1, ::2] = np.iinfo(xt).max
                _check(prep, x, w, b, q, bounds, np.int64)


def test_saturating_bias_and_relu_bounds() -> None:
    """Bias at the int32 limits (sa8 saturating add) and fx shifts of 0 / 31 with tight ReLU bounds."""
    rng = np.random.default_rng(5)
    n, m = 200, 6
    w = np.full((n, m), 127, np.int8)
    w[:, 1::2] = -128
    b = np.array([2**31 - 1, -2**31, 2**31 - 1, -2**31, 0, 12345], np.int32)
    for in_scale, out_frac in ((32767, 5), (1, 40), (20000, 20)):
        q = K.Sa8Quant(-128, in_scale, 15, 0, np.array([32767]), np.array([15]), 100, 1, out_frac)
        for bounds in ((-128, 127), (0, 6), (100, 100)):
            prep = prepare_fc(w, b, q, bounds, np.int8)
            for plat in PLATFORMS:
                with use_platform(plat):
                    x = rng.choice(np.array([-128, 127], np.int8), (4, n))
                    _check(prep, x, w, b, q, bounds, np.int8)
    for acc, wt in ((32, np.int8), (40, np.int16)):
        wx = _ints(rng, (50, 4), wt, True)
        bx = _ints(rng, (4,), wt, True)
        for shift in (-2, 0, 1, 31, 33, 60):
            q = K.FxQuant(15, 7, 0, 22 - shift, acc, 16)
            for bounds in ((-32768, 32767), (0, 32767), (-5, 5)):
                prep = prepare_fc(wx, bx, q, bounds)
                for plat in PLATFORMS:
                    with use_platform(plat):
                        _check(prep, _ints(rng, (3, 50), np.int16, True), wx, bx, q, bounds, np.int64)


def test_prepared_copies_its_operands() -> None:
    """Writing the caller's weights / bias after preparing does not change the prepared layer."""
    rng = np.random.default_rng(2)
    w, b, q, bounds, xt = _layer(rng, "sa8", 16, 16)
    w0, b0 = w.copy(), b.copy()
    prep = prepare_fc(w, b, q, bounds)
    x = _ints(rng, (16,), xt, False)
    before = prep(x)
    w[:] = 0
    b[:] = 0
    assert np.array_equal(prep(x), before)
    assert np.array_equal(before, fully_connected(x, w0, b0, q, bounds))


@pytest.mark.parametrize("kind", ["sa8", "sa8_axis", "fx8"])
def test_large_layer_float32_product(kind: str) -> None:
    """Weights large enough for the float32 product (64K elements and more), batches of rows."""
    rng = np.random.default_rng(13)
    w, b, q, bounds, xt = _layer(rng, kind, 1024, 96)
    q = _ordinary(q, 8)
    prep = prepare_fc(w, b, q, bounds, xt)
    for plat in PLATFORMS:
        with use_platform(plat):
            for rows in (1, 70):
                _check(prep, _ints(rng, (rows, 1024), xt, False), w, b, q, bounds, xt)


def _capi_case(rng: np.random.Generator, kind: str, n: int, m: int):
    """(function name, in, weights, bias, cfg, out) of a valid capi call."""
    relu = ReluCfg(ReluType.NONE)
    if kind.startswith("sa8"):
        ws = rng.integers(1, 300, m)
        x = Tensor.from_numpy(rng.integers(-128, 128, n), ElType.SA_8, zero_point=0 if kind == "sa8_ext" else -3,
                              scale=77, scale_frac_bits=10)
        w = Tensor.from_numpy(rng.integers(-128, 128, (n, m)), ElType.SA_8, zero_point=[0] * m, scale=list(ws),
                              scale_frac_bits=[9] * m, dim=1)
        b = Tensor.from_numpy(rng.integers(-30000, 30000, m), ElType.SA_32, zero_point=[0] * m, scale=list(77 * ws),
                              scale_frac_bits=[19] * m, dim=0)
        out = Tensor.zeros((m,), ElType.SA_8, zero_point=4, scale=2900, scale_frac_bits=8)
        name = "mli_krn_fully_connected_sa8_sa8_sa32" + ("_ext_bias" if kind == "sa8_ext" else "")
        return name, x, w, b, FullyConnectedCfg(relu), out
    et_x, et_w = {"fx16": (ElType.FX_16, ElType.FX_16), "fx16_fx8_fx8": (ElType.FX_16, ElType.FX_8),
                  "fx8": (ElType.FX_8, ElType.FX_8)}[kind]
    hx, hw = (1 << (et_x.bits - 1)), (1 << (et_w.bits - 1))
    x = Tensor.from_numpy(rng.integers(-hx, hx, n), et_x, frac_bits=et_x.bits - 4)
    w = Tensor.from_numpy(rng.integers(-hw, hw, (n, m)), et_w, frac_bits=et_w.bits - 2)
    b = Tensor.from_numpy(rng.integers(-hw, hw, m), et_w, frac_bits=et_w.bits - 3)
    out = Tensor.zeros((m,), et_x, frac_bits=et_x.bits - 9)
    return f"mli_krn_fully_connected_{kind}", x, w, b, FullyConnectedCfg(relu), out


@pytest.mark.parametrize("kind", ["sa8", "sa8_ext", "fx16", "fx16_fx8_fx8", "fx8"])
def test_capi_repeated_calls_follow_rewritten_buffers(kind: str) -> None:
    """capi's planned FC (memo on: the prepared layer from the second call) equals the unplanned call
    (memo off: plain kernel), on both platforms, also after the weights / bias / input are rewritten
    in place between calls with unchanged structs."""
    rng = np.random.default_rng(17)
    name, x, w, b, cfg, out = _capi_case(rng, kind, 40, 12)
    fn = capi.FUNCTIONS[name]

    assert_repeated_calls_follow_rewrites(fn, x, w, b, cfg, out, lambda: Tensor.zeros((12,), out.el_type, **_qkw(out)),
                                          PLATFORMS)


def _qkw(t: Tensor) -> dict:
    if t.el_type.is_sa:
        return {"zero_point": int(t.zero_point), "scale": int(t.scale), "scale_frac_bits": int(t.scale_frac_bits)}
    return {"frac_bits": int(t.frac_bits)}


def test_fresh_platform_objects_and_empty_layers() -> None:
    """Platforms built afresh for every call (a bounded cache, still right) and layers without inputs
    or outputs."""
    rng = np.random.default_rng(19)
    w, b, q, bounds, xt = _layer(rng, "sa8", 20, 7)
    prep = prepare_fc(w, b, q, bounds)
    x = _ints(rng, (4, 20), xt, False)
    for k in range(40):
        with use_platform(Platform(RoundMode.UP if k % 2 else RoundMode.CONVERGENT, k % 3 == 0)):
            _check(prep, x, w, b, q, bounds, np.int64)
    assert len(prep._stages) <= 16
    for n, m in ((0, 4), (5, 0)):
        for kind in ("sa8", "fx16"):
            w, b, q, bounds, xt = _layer(rng, kind, max(n, 1), max(m, 1))
            w, b = w[:n, :m], b[:m]
            for plat in PLATFORMS:
                with use_platform(plat):
                    for shape in ((2, n), (2, 3, n)):
                        _check(prepare_fc(w, b, q, bounds), np.zeros(shape, xt), w, b, q, bounds, np.int64)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(4))
def test_small_weights_large_calls_float32_product(kind: str, seed: int) -> None:
    """Weights below 64K elements: calls from 32K multiply-adds take the float32 product where it is
    exact, smaller calls the float64 one; both give the plain kernel's values (the same layer called
    with small and large batches in turns, odd shapes, container extremes)."""
    rng = np.random.default_rng(seed + 100)
    n, m = int(rng.integers(20, 200)), int(rng.integers(3, 70))
    extreme = seed == 3
    w, b, q, bounds, xt = _layer(rng, kind, n, m, extreme)
    if seed % 2:
        q = _ordinary(q, w.itemsize * 8)
    prep = prepare_fc(w, b, q, bounds, xt)
    rows_big = -(-(1 << 15) // (n * m)) + int(rng.integers(0, 5))
    for plat in PLATFORMS:
        with use_platform(plat):
            for shape in ((1, n), (rows_big, n), (2, rows_big, n), (n,), (rows_big + 7, n)):
                _check(prep, _ints(rng, shape, xt, extreme or rng.random() < 0.2), w, b, q, bounds, xt)


def test_input_dtypes_in_turns() -> None:
    """One prepared layer called with inputs of other dtypes in turns (the last stage kept per dtype)."""
    rng = np.random.default_rng(5)
    w, b, q, bounds, _ = _layer(rng, "fx16", 30, 7)
    q = _ordinary(q, 16)
    prep = prepare_fc(w, b, q, bounds)
    for k in range(6):
        xt = (np.int16, np.int8, np.int32)[k % 3]
        with use_platform(PLATFORMS[k % 2]):
            _check(prep, _ints(rng, (3, 30), xt, False), w, b, q, bounds, np.int64)


@pytest.mark.parametrize("kind", ["sa8", "sa8_axis", "fx16"])
def test_many_batch_sizes_tiled_and_broadcast_constants(kind: str) -> None:
    """Row counts changing from call to call (more than the tiles kept per layer) and a product
    beyond the tiled size (broadcast constants): every call equals the plain kernel."""
    rng = np.random.default_rng(21)
    w, b, q, bounds, xt = _layer(rng, kind, 12, 40)
    q = _ordinary(q, w.itemsize * 8)
    prep = prepare_fc(w, b, q, bounds, xt)
    for plat in PLATFORMS[:2]:
        with use_platform(plat):
            for rows in (3, 1, 17, 2, 5, 9, 4, 6, 7, 8, 3, 1700, 11, 1700, 2):
                _check(prep, _ints(rng, (rows, 12), xt, rows == 9), w, b, q, bounds, xt)


@pytest.mark.parametrize("kind", ["sa8", "sa8_axis", "sa8_ext"])
@pytest.mark.parametrize("n", [8, 64, 300, 1000])
def test_int32_output_stage_up_to_its_bounds(kind: str, n: int) -> None:
    """sa8 calls large enough for the float32 product (where ROUND_UP takes the int32 output stage):
    short and long rows, trained-like and random output parameters, container extremes, on every
    platform, against the plain kernel."""
    rng = np.random.default_rng(n + len(kind))
    m = int(rng.integers(3, 50))
    rows = -(-(1 << 15) // (n * m)) + 3
    for trained in (True, False):
        w, b, q, bounds, xt = _layer(rng, kind, n, m, extreme=not trained)
        if trained:
            q = _ordinary(q, 8)
        prep = prepare_fc(w, b, q, bounds, xt)
        for plat in PLATFORMS:
            with use_platform(plat):
                for extreme in (False, True):
                    _check(prep, _ints(rng, (rows, n), xt, extreme), w, b, q, bounds, xt)


@pytest.mark.parametrize("kind", ["sa8", "sa8_axis", "fx16", "fx16_fx8_fx8", "fx8"])
@pytest.mark.parametrize("seed", range(3))
def test_pointwise_equals_the_convolution_kernel(kind: str, seed: int) -> None:
    """``prepare_pointwise`` (1x1, stride 1, no padding) against ``conv2d_hwcn``: odd maps, a batch
    axis, maps beyond the prepared convolution's size limit, container extremes, every platform."""
    rng = np.random.default_rng(seed + 40)
    c, n = int(rng.integers(1, 70)), int(rng.integers(1, 90))
    w, b, q, bounds, xt = _layer(rng, kind, c, n, extreme=seed == 2)
    if seed == 1:
        q = _ordinary(q, w.itemsize * 8)
    w4 = w.reshape(1, 1, c, n)
    pw = prepare_pointwise(w4, b, q, bounds, xt)
    assert pw is not None
    big = int(np.ceil(np.sqrt((1 << 21) / max(c * n, 1)))) + 1  # beyond PREPARED_MAX_MACS
    shapes = [(5, 7, c), (2, 3, 4, c), (big, big + 1, c)]
    for plat in PLATFORMS:
        with use_platform(plat):
            for shape in shapes:
                x = _ints(rng, shape, xt, seed == 2 or rng.random() < 0.2)
                want = K.conv2d_hwcn(x, w4, b, q, out_hw=shape[-3:-1], bounds=bounds).astype(xt)
                got = pw(x)
                assert got.dtype == want.dtype and got.shape == want.shape
                assert np.array_equal(got, want), (kind, shape)


def test_pointwise_declines_other_weights() -> None:
    """Not 1x1, or weights with a zero point (the convolution's offset differs): no prepared layer."""
    rng = np.random.default_rng(3)
    w, b, q, bounds, _ = _layer(rng, "sa8", 8, 4)
    assert prepare_pointwise(w.reshape(2, 1, 4, 4), b, q, bounds) is None
    assert prepare_pointwise(w, b, q, bounds) is None
    qz = K.Sa8Quant(q.in_zp, q.in_scale, q.in_frac, 3, q.w_scales, q.w_fracs, q.out_zp, q.out_scale, q.out_frac)
    assert prepare_pointwise(w.reshape(1, 1, 8, 4), b, qz, bounds) is None

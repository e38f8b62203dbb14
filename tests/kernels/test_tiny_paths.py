"""The planned small-call paths (issue 14 item 3) against the plain kernels and the scalar oracles.

Every plan is called several times with new values in the same buffers, as a memoised capi call
is: its first call computes directly, later ones read the tables it builds (per scalar operand,
slope or LUT contents, which may change between calls). Each result is compared, whole, with the
plain kernel (its large-input path where it has one) and with the slow scalar oracle, under both
rounding platforms, for every element type, with the extreme values of the type included.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from pymli import EM, VPX, ElType, Lut, RoundMode, Tensor, capi, use_platform
from pymli.arith import activation as A
from pymli.arith import lut as L
from pymli.arith.pool import requant_params
from pymli.capi.types import PoolCfg, ReluCfg, ReluType
from pymli.checks import entry
from pymli.config import Platform
from pymli.errors import Status
from pymli.kernels import _jit
from pymli.kernels import activation as KA
from pymli.kernels import convolution as KC
from pymli.kernels import eltwise as KE
from pymli.kernels import fully_connected as KF
from pymli.kernels import pooling as KP
from pymli.kernels import transform as KT
from pymli.kernels.conv_prepared import FusedLayer, prepare_conv

from ..oracles import activation as OA
from ..oracles import pooling as OP
from .test_tiny_fused import _conv_case as _tiny_conv_case

PLATFORMS = [VPX, EM]
OPS = ["add", "sub", "mul", "max", "min"]
ELS = [ElType.SA_8, ElType.FX_8, ElType.FX_16]


def _values(rng: np.random.Generator, dtype: type, shape: tuple[int, ...]) -> np.ndarray:
    """Random values of ``dtype`` with the type's extremes and neighbours of zero mixed in."""
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=shape, endpoint=True)
    flat = x.reshape(-1)
    edge = np.array([info.min, info.max, 0, -1, 1, info.min + 1, info.max - 1])
    k = min(flat.size, edge.size)
    flat[rng.permutation(flat.size)[:k]] = rng.permutation(edge)[:k]
    return x.astype(dtype)


def _eltwise_params(rng: np.random.Generator, op: str, el: ElType) -> dict:
    if el is ElType.SA_8:
        q = [(int(rng.integers(1, 32768)), int(rng.integers(-4, 31)), int(rng.integers(-128, 128)))
             for _ in range(3)]
        if op in ("max", "min"):
            q[1] = q[0]
        return dict(q=tuple(q))
    f = [int(v) for v in rng.integers(-2, el.bits + 2, 3)]
    if op in ("max", "min"):
        f[1] = f[0]
    return dict(frac_bits=tuple(f))


@pytest.mark.parametrize("platform", PLATFORMS, ids=["up", "conv"])
@pytest.mark.parametrize("el", ELS, ids=lambda e: e.name)
@pytest.mark.parametrize("op", OPS)
def test_eltwise_plan_matches_plain_kernel_and_oracle(platform: Platform, el: ElType, op: str) -> None:
    rng = np.random.default_rng([OPS.index(op), ELS.index(el), PLATFORMS.index(platform)])
    dt = el.dtype.type
    up = platform is VPX
    for _ in range(6):
        params = _eltwise_params(rng, op, el)
        form = rng.integers(3)  # two tensors, scalar first, scalar second
        shape = (int(rng.integers(1, 6)), int(rng.integers(1, 9)))
        with use_platform(platform):
            plan = KE.eltwise_plan(op, bits=el.bits, **params)
            for call in range(4):
                a = _values(rng, dt, shape if form != 1 else ())
                b = _values(rng, dt, shape if form != 2 else ())
                if call == 3 and form == 0:
                    a = _values(rng, dt, (shape[0], 2 * shape[1]))[:, ::2]  # a strided view
                got = plan(a, b)
                into = np.full(got.shape, 7, dt)
                assert plan(a, b, into) is into and np.array_equal(into, got), (params, form, call)
                if el is ElType.SA_8:
                    plain = KE.eltwise_sa8(op, a, b, q1=params["q"][0], q2=params["q"][1], qo=params["q"][2])
                else:
                    plain = KE.eltwise_fx(op, a, b, frac_bits=params["frac_bits"], bits=el.bits)
        assert got.dtype == dt and np.array_equal(got, plain), (params, form, call)
        aa, bb = np.broadcast_arrays(a, b)
        want = [OP.eltwise_c(op, int(x), int(y), bits=el.bits, up=up,
                             **({"q": params["q"]} if el is ElType.SA_8 else {"fb": params["frac_bits"]}))
                for x, y in zip(aa.reshape(-1), bb.reshape(-1))]
        assert np.array_equal(got.reshape(-1), want), (params, form)


@pytest.mark.parametrize("platform", PLATFORMS, ids=["up", "conv"])
@pytest.mark.parametrize("el", ELS, ids=lambda e: e.name)
def test_leaky_plan_matches_plain_kernel_and_oracle(platform: Platform, el: ElType) -> None:
    rng = np.random.default_rng([ELS.index(el), PLATFORMS.index(platform), 7])
    dt = el.dtype.type
    info = np.iinfo(dt)
    up = platform is VPX
    for _ in range(4):
        if el is ElType.SA_8:
            q = dict(in_zp=int(rng.integers(-128, 128)), in_scale=int(rng.integers(1, 32768)),
                     in_sfb=int(rng.integers(0, 31)), out_zp=int(rng.integers(-128, 128)),
                     out_scale=int(rng.integers(1, 32768)), out_sfb=int(rng.integers(0, 31)),
                     slope_zp=int(rng.integers(-128, 128)), slope_scale=int(rng.integers(1, 32768)),
                     slope_sfb=int(rng.integers(0, 31)))
            kw: dict = dict(sa8=q)
        else:
            kw = dict(shift=int(rng.integers(-3, 2 * el.bits)), normalise=el is ElType.FX_16)
        slopes = [int(v) for v in rng.integers(info.min, info.max, 3, endpoint=True)] + [info.min, info.max]
        with use_platform(platform):
            plan = KA.leaky_plan(dt, **kw)
            for slope in slopes + slopes + slopes[:2]:  # repeats: the plan's tables
                x = _values(rng, dt, (int(rng.integers(1, 40)),))
                got = plan(x, slope)
                if el is ElType.SA_8:
                    plain = KA.leaky_relu_sa8(x, slope, **q)
                else:
                    plain = KA.leaky_relu_fx(x, slope, kw["shift"], normalise=kw["normalise"])
                assert got.dtype == dt and np.array_equal(got, plain), (kw, slope)
                if el is ElType.SA_8:
                    ident, alpha = OA.sa8_params(q["in_scale"], q["in_sfb"], q["out_scale"], q["out_sfb"], q["out_zp"],
                                                 slope, q["slope_zp"], q["slope_scale"], q["slope_sfb"], up)
                    want = [OA.leaky_sa8(int(v), q["in_zp"], ident, alpha, up) for v in x]
                else:
                    want = [OA.leaky_fx(int(v), slope, kw["shift"], el.bits, kw["normalise"], up) for v in x]
                assert got.tolist() == want, (kw, slope)


@pytest.mark.parametrize("platform", PLATFORMS, ids=["up", "conv"])
@pytest.mark.parametrize("kind", ["sigm", "tanh"])
@pytest.mark.parametrize("el", ELS, ids=lambda e: e.name)
def test_lut_plan_follows_lut_contents(platform: Platform, kind: str, el: ElType) -> None:
    rng = np.random.default_rng([ELS.index(el), PLATFORMS.index(platform), len(kind)])
    dt = el.dtype.type
    lut = L.create_lut(kind)
    original = lut.data.copy()
    with use_platform(platform):
        if el is ElType.SA_8:
            sa8 = (int(rng.integers(-128, 128)), int(rng.integers(1, 32768)), int(rng.integers(8, 24)),
                   *(KT.SIGM_SA8_OUT if kind == "sigm" else KT.TANH_SA8_OUT))
            plan = KT.lut_activation_plan(dt, sa8=sa8)
        else:
            fx = (int(rng.integers(0, el.bits + 4)), el.bits)
            plan = KT.lut_activation_plan(dt, fx=fx)
        for call in range(7):
            if call == 4:
                lut.data[::3] = rng.integers(-32768, 32768, lut.data[::3].size)  # new contents, same LUT
            if call == 6:
                lut.data[...] = original
            x = _values(rng, dt, (int(rng.integers(1, 30)),))
            got = plan(x, lut)
            big = np.resize(x, 20000)  # the plain kernel's table path
            if el is ElType.SA_8:
                zp, scale, shift, out_zp, out_shift = sa8
                direct = L.activation_sa8(x.astype(np.int64), lut, zp, scale, shift, out_zp, out_shift)
                table = KT.lut_activation_sa8(big, lut, in_zp=zp, in_scale=scale, in_shift=shift, out_zp=out_zp,
                                              out_shift=out_shift)
            else:
                direct = L.activation_fx(x, lut, fx[0], fx[1])
                table = KT.lut_activation_fx(big, lut, in_frac_bits=fx[0], out_bits=fx[1])
            assert np.array_equal(got, direct), call
            assert np.array_equal(got, table[:x.size]), call


@pytest.mark.parametrize("platform", PLATFORMS, ids=["up", "conv"])
@pytest.mark.parametrize("el", ELS, ids=lambda e: e.name)
@pytest.mark.parametrize("kind", ["max", "ave"])
def test_pool_plan_matches_plain_kernel_and_oracle(platform: Platform, el: ElType, kind: str) -> None:
    rng = np.random.default_rng([ELS.index(el), PLATFORMS.index(platform), len(kind)])
    dt = el.dtype.type
    up = platform is VPX
    done = 0
    while done < 8:
        kh, kw, sh, sw = (int(v) for v in rng.integers(1, 4, 4))
        h, w, c = int(rng.integers(kh, 7)), int(rng.integers(kw, 7)), int(rng.integers(1, 4))
        pt, pl = int(rng.integers(0, kh)), int(rng.integers(0, kw))
        oh = (h + pt + int(rng.integers(0, kh)) - kh) // sh + 1
        ow = (w + pl + int(rng.integers(0, kw)) - kw) // sw + 1
        pads = (pt, max((oh - 1) * sh + kh - h - pt, 0), pl, max((ow - 1) * sw + kw - w - pl, 0))
        if KP.degenerate(h, w, (kh, kw), (sh, sw), pads, (oh, ow)) or pads[1] >= kh or pads[3] >= kw:
            continue
        geo = dict(kernel=(kh, kw), stride=(sh, sw), pad=(pt, pl), out_hw=(oh, ow))
        arith: dict = {}
        oracle_kw: dict = dict(up=up)
        if kind == "ave" and el is ElType.SA_8:
            sa = ((int(rng.integers(1, 32768)), int(rng.integers(8, 24)), int(rng.integers(-128, 128))),
                  (int(rng.integers(1, 32768)), int(rng.integers(8, 24)), int(rng.integers(-128, 128))))
            with use_platform(platform):
                arith = dict(base_shift=0, requant=requant_params(*sa[0], *sa[1]), mul16=False)
            oracle_kw["sa"] = sa
        elif kind == "ave":
            arith = dict(base_shift=int(rng.integers(-3, 6)))
            oracle_kw["fx_shift"] = arith["base_shift"]
        with use_platform(platform):
            plan = KP.pool_plan(kind, (h, w, c), dt, **geo, **arith)
            for _ in range(3):
                x = _values(rng, dt, (h, w, c))
                got = plan(x)
                plain = KP.maxpool_hwc(x, **geo) if kind == "max" else KP.avepool_hwc(x, **geo, **arith)
                assert got.dtype == dt and np.array_equal(got, plain), geo
                into = np.full(plain.shape, 99, dt)
                assert plan(x, into) is into and np.array_equal(into, plain), geo
        want = OP.pool_c(x, kind, (kh, kw), (sh, sw), pads, (oh, ow), **oracle_kw)
        assert np.array_equal(got, want), geo
        done += 1


@pytest.mark.parametrize("n", [0, 1, 7, 512, 513, 3000])
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.float64])
def test_clamp_is_clip(n: int, dtype: type) -> None:
    rng = np.random.default_rng(n)
    x = rng.integers(-128, 128, n).astype(dtype)
    for lo, hi in ((-5, 9), (3, -2), (-128, 127)):
        t = np.dtype(dtype).type
        want = np.minimum(np.maximum(x, t(lo)), t(hi))
        assert np.array_equal(A.clamp(x, t(lo), t(hi)), want)
        y = x.copy()
        assert A.clamp(y, t(lo), t(hi), out=y) is y and np.array_equal(y, want)


def _fresh(fn: Callable[..., Status], args: tuple) -> Status:
    """The call with the memo off: checks, parameters and a fresh plan."""
    was = entry.memo_enabled(False)
    try:
        return fn(*args)
    finally:
        entry.memo_enabled(was)


@pytest.mark.parametrize("platform", PLATFORMS, ids=["up", "conv"])
def test_memoised_capi_calls_follow_changed_values(platform: Platform) -> None:
    """Memoised calls whose data changes in place (scalar operand, slope, LUT) equal fresh calls."""
    rng = np.random.default_rng(PLATFORMS.index(platform))
    x8 = Tensor.from_numpy(rng.integers(-128, 128, 9), ElType.SA_8, zero_point=1, scale=3, scale_frac_bits=4)
    s8 = Tensor.from_numpy(np.array([20]), ElType.SA_8, zero_point=-3, scale=5, scale_frac_bits=7)
    xf = Tensor.from_numpy(rng.integers(-32768, 32768, 9), ElType.FX_16, frac_bits=9)
    sf = Tensor.from_numpy(np.array([20]), ElType.FX_16, frac_bits=7)
    size = capi.mli_krn_tanh_get_lut_size()
    lut = Lut(data=np.zeros(size // 2, np.int16), capacity=size)
    capi.mli_krn_tanh_create_lut(lut)
    pin = Tensor.from_numpy(rng.integers(-32768, 32768, (5, 4, 3)), ElType.FX_16, frac_bits=8)
    calls = [
        (capi.mli_krn_eltwise_add_sa8, (x8, s8), (9,), dict(zero_point=0, scale=7, scale_frac_bits=5)),
        (capi.mli_krn_eltwise_mul_fx16, (sf, xf), (9,), dict(frac_bits=10)),
        (capi.mli_krn_eltwise_sub_sa8, (x8, x8), (9,), dict(zero_point=2, scale=9, scale_frac_bits=6)),
        (capi.mli_krn_leaky_relu_sa8, (x8, s8), (9,), dict(zero_point=-1, scale=11, scale_frac_bits=5)),
        (capi.mli_krn_leaky_relu_fx16, (xf, sf), (9,), dict(frac_bits=9)),
        (capi.mli_krn_tanh_fx16, (xf, lut), (9,), dict(frac_bits=15)),
        (capi.mli_krn_relu_sa8, (x8, ReluCfg(ReluType.RELU_6)), (9,), dict(zero_point=0, scale=1, scale_frac_bits=0)),
        (capi.mli_krn_avepool_hwc_fx16, (pin, PoolCfg(kernel_width=2, kernel_height=2, stride_width=1, stride_height=1,
                                                      padding_left=1, padding_top=1)), (5, 4, 3), dict(frac_bits=6)),
        (capi.mli_krn_maxpool_hwc_fx16, (pin, PoolCfg(kernel_width=2, kernel_height=3, stride_width=2,
                                                      stride_height=2)), (2, 2, 3), dict(frac_bits=8)),
    ]
    with use_platform(platform):
        for fn, ins, shape, q in calls:
            el = ins[0].el_type if fn is not capi.mli_krn_eltwise_mul_fx16 else ElType.FX_16
            out = Tensor.zeros(shape, el, **q)
            ref = Tensor.zeros(shape, el, **q)
            for _ in range(4):
                for t in (x8, s8, xf, sf, pin):
                    t.data[...] = _values(rng, t.data.dtype.type, t.data.shape)
                if rng.integers(2):
                    lut.data[::5] = rng.integers(-32768, 32768, lut.data[::5].size)
                fn(*ins, out)
                _fresh(fn, (*ins, ref))
                assert np.array_equal(out.data, ref.data), fn.__name__


@pytest.mark.parametrize("platform", PLATFORMS, ids=["up", "conv"])
@pytest.mark.parametrize("el", [ElType.SA_8, ElType.FX_16], ids=lambda e: e.name)
@pytest.mark.parametrize("axis", [-1, 0, 2])
def test_l2_normalize_into_out_equals_new_array(platform: Platform, el: ElType, axis: int) -> None:
    """``out=`` (also the input itself, strided views) gives the values of a fresh result."""
    rng = np.random.default_rng([axis + 1, el.bits])
    lut = L.create_lut("l2_normalize")
    kw = dict(bits=el.bits, out_shift=7 if el is ElType.SA_8 else 15, axis=axis,
              in_zp=int(rng.integers(-128, 128)) if el is ElType.SA_8 else None)
    with use_platform(platform):
        for shape in ((3, 5, 4), (1, 1, 9), (6, 2, 33)):
            x = _values(rng, el.dtype.type, shape)
            want = KT.l2_normalize(x, lut, **kw)
            out = np.zeros((shape[0], shape[1], 2 * shape[2]), el.dtype)[:, :, ::2]
            res = KT.l2_normalize(x, lut, **kw, out=out)
            if res is not out:
                out[...] = res
            assert np.array_equal(out, want)
            y = x.copy()
            res = KT.l2_normalize(y, lut, **kw, out=y)
            if res is not y:
                y[...] = res
            assert np.array_equal(y, want)


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Wrap the compiled tiny-layer function ``name`` (taken by layers built from now on) with a call counter."""
    jf = pytest.importorskip("pymli.kernels._jit_fused", reason="numba (the optional JIT) is not installed")
    calls = [0]
    inner = getattr(jf, name)

    def counted(*args: object) -> None:
        calls[0] += 1
        inner(*args)
    monkeypatch.setattr(jf, name, counted)
    return calls


@pytest.mark.parametrize("platform", [VPX, EM, Platform(RoundMode.UP, True, False, "vpx-fa"),
                                      Platform(RoundMode.CONVERGENT, True, False, "em-fa")], ids=lambda p: p.name)
def test_fused_layer_compiled_form_equals_numpy_form(platform: Platform, monkeypatch: pytest.MonkeyPatch) -> None:
    """FusedLayer's compiled form (:mod:`pymli.kernels._jit_fused`, flat input and output) writes the
    NumPy form's values, and both the plain kernel's: seeded sa8 conv2d (paddings, strides, dilations,
    extreme values, 16-bit saturation cases, ReLU bounds) and sa8 / MLI_FX fully connected layers."""
    calls = _counting(monkeypatch, "fused_sa8")
    fx_calls = _counting(monkeypatch, "fused_fx")
    was = _jit.set_enabled(True)
    try:
        for seed in range(80):
            x, wt, bias, q, geo = _tiny_conv_case(seed)
            with use_platform(platform):
                want = KC.conv2d_hwcn(x, wt, bias, q, **geo).astype(np.int8).reshape(-1)
                fused = prepare_conv(wt, bias, q, **geo, out_dtype=np.int8).fused(x.shape)
                if fused is None:
                    continue
                got = np.full(want.size, 99, np.int8)
                _jit.set_enabled(False)
                ref = np.full(want.size, 99, np.int8)
                ran = fused(x.reshape(-1), ref)
                _jit.set_enabled(True)
                assert fused(x.reshape(-1), got) == ran, seed
                if ran:
                    assert np.array_equal(got, ref) and np.array_equal(got, want), seed
                    out3 = np.full(geo["out_hw"] + (wt.shape[3],), 99, np.int8)  # (Ho, Wo, N), the input (H, W, C)
                    assert fused(x, out3) and np.array_equal(out3.reshape(-1), want), seed
            rng = np.random.default_rng(500 + seed)
            k, m = int(rng.integers(1, 40)), int(rng.integers(1, 20))
            xf = rng.integers(-32768, 32768, k).astype(np.int16)
            wf = rng.integers(-32768, 32768, (k, m)).astype(np.int16)
            bf = rng.integers(-32768, 32768, m).astype(np.int16)
            qf = KC.FxQuant(*(int(v) for v in rng.integers(0, 16, 4)), 40, 16)
            with use_platform(platform):
                layer = FusedLayer(wf, bf, qf, (-32768, 32767))
                _jit.set_enabled(False)
                ref = np.full(m, 99, np.int16)
                ran = layer(xf, ref)
                _jit.set_enabled(True)
                got = np.full(m, 99, np.int16)
                assert layer(xf, got) == ran, seed
                if ran:
                    assert np.array_equal(got, ref), seed
                    plain = KF.fully_connected(xf, wf, bf, qf, (-32768, 32767)).astype(np.int16)
                    assert np.array_equal(got, plain), seed
    finally:
        _jit.set_enabled(was)
    assert calls[0] >= 80 and fx_calls[0] >= 20  # the compiled forms ran, not only the NumPy ones


def test_fused_layer_compiled_form_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outputs the compiled form does not take (byte-swapped, not in C order) and the JIT switched off
    after the form was built: the NumPy form writes the same values."""
    calls = _counting(monkeypatch, "fused_sa8")
    was = _jit.set_enabled(True)
    try:
        _falls_back(calls)
    finally:
        _jit.set_enabled(was)


def _falls_back(calls: list[int]) -> None:
    """The body of :func:`test_fused_layer_compiled_form_falls_back`, with the JIT switched on."""
    x, wt, bias, q, geo = _tiny_conv_case(3)
    fused = prepare_conv(wt, bias, q, **geo, out_dtype=np.int8).fused(x.shape)
    assert fused is not None
    want = KC.conv2d_hwcn(x, wt, bias, q, **geo).astype(np.int8)
    swapped = np.zeros(want.size, np.dtype(np.int16).newbyteorder())
    assert fused(x.reshape(-1), swapped) and np.array_equal(swapped, want.reshape(-1))
    out3 = np.zeros(want.shape, np.int8)
    assert fused(x, out3) and np.array_equal(out3, want)
    strided = np.zeros(want.shape[:2] + (2 * want.shape[2],), np.int8)[:, :, ::2]  # not in C order
    assert fused(x, strided) and np.array_equal(strided, want)
    _jit.set_enabled(False)
    flat = np.zeros(want.size, np.int8)
    assert fused(x.reshape(-1), flat) and np.array_equal(flat, want.reshape(-1))
    _jit.set_enabled(True)
    # the byte-swapped output (its form, of flat inputs, is then dropped) and the (H, W, C) input's form
    # into out3 (a form of its own); not the strided output, nor with the JIT off
    assert calls[0] == 2
    good = np.zeros(want.size, np.int8)
    assert fused(x.reshape(-1), good) and np.array_equal(good, want.reshape(-1))
    assert calls[0] == 2  # dropped
    assert fused(x, good) and np.array_equal(good, want.reshape(-1))
    assert calls[0] == 3

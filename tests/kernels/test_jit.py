"""The optional numba JIT of the depthwise convolution (pymli/kernels/_jit.py) against the NumPy path
and the element-by-element oracle: whole outputs compared bit for bit, on random shapes, strides,
dilations, paddings (also beyond the kernel), batches, extreme values and both rounding platforms.

Skipped with a reason when numba is not installed (the pure-NumPy path is then the only one, and the
other kernel tests cover it); the switch tests at the end run either way.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from pymli import EM, VPX, VPX_FULL_ACCU, Platform, RoundMode, use_platform
from pymli.arith.requant import relu_bounds
from pymli.kernels import _jit, _parallel
from pymli.kernels import convolution as K
from pymli.kernels.conv_prepared import prepare_conv
from pymli.kernels.diverse import argmax

from ..oracles import convolution as oracle
from ._shared import TakenCounter, conv_geometry, fx_quant, numpy_path

needs_numba = pytest.mark.skipif(not _jit.available(),
                                 reason="numba is not installed: the optional JIT (pip install '.[jit]') is not tested")

PLATFORMS = [VPX, VPX_FULL_ACCU, EM, Platform(RoundMode.CONVERGENT, True)]
KINDS = ["sa8", "fx16", "fx16_fx8_fx8"]


@pytest.fixture
def jit_on() -> Iterator[None]:
    prev = _jit.set_enabled(True)
    yield
    _jit.set_enabled(prev)




def _Counter(monkeypatch: pytest.MonkeyPatch) -> TakenCounter:
    """Counts the calls :func:`pymli.kernels._jit.depthwise` took (did not hand back to NumPy)."""
    return TakenCounter(monkeypatch, _jit, "depthwise")


def _params(rng: np.random.Generator, kind: str, c: int) -> tuple[K.FxQuant | K.Sa8Quant, dict, tuple]:
    """Random parameters (pymli quant, oracle dict, dtypes of x / w / bias), outputs spread over the range."""
    if kind == "sa8":
        nw = c if rng.integers(2) else 1
        ws = rng.integers(8192, 32768, nw)
        in_frac = int(rng.integers(12, 25))
        wf = int(rng.integers(12, 25)) + rng.integers(0, 2, nw)
        p = {"kind": "sa8", "in_zp": int(rng.integers(-128, 128)), "in_scale": int(rng.integers(8192, 32768)),
             "in_frac": in_frac, "w_scales": [int(v) for v in ws], "w_fracs": [int(v) for v in wf],
             "out_zp": int(rng.integers(-64, 64)), "out_scale": int(rng.integers(8192, 32768))}
        p["out_frac"] = max(-128, min(127, in_frac + int(wf[0]) - int(rng.integers(14, 28))))
        q = K.Sa8Quant(p["in_zp"], p["in_scale"], p["in_frac"], 0, ws, wf, p["out_zp"], p["out_scale"], p["out_frac"])
        return q, p, (np.int8, np.int8, np.int32)
    return fx_quant(rng, kind)


def _values(rng: np.random.Generator, shape: tuple, dtype: type, extreme: bool) -> np.ndarray:
    info = np.iinfo(dtype)
    if extreme:  # the container limits only (largest products, sums and saturations)
        return rng.choice(np.array([info.min, info.max, info.min + 1, 0], dtype=np.int64), shape).astype(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def _case(rng: np.random.Generator, kind: str, extreme: bool = False) -> tuple:
    kh, kw, s, d, pad, pad_b, h, w, ho, wo = conv_geometry(rng)
    c = int(rng.choice([1, 2, 3, 7, 8, 16, 17, 33, 64]))
    batch = [None, 1, 3][int(rng.integers(3))]
    q, p, (tx, tw, tb) = _params(rng, kind, c)
    x = _values(rng, (h, w, c) if batch is None else (batch, h, w, c), tx, extreme)
    wt = _values(rng, (kh, kw, 1, c), tw, extreme)
    if kind == "sa8":
        if extreme:  # the int32 limits: the saturating bias add saturates
            b = rng.choice(np.array([-(1 << 31), (1 << 31) - 1, -(1 << 30), 0]), c)
        else:
            b = rng.integers(-20000, 20000, c)
        b = b.astype(tb)
        bnd = relu_bounds(int(rng.integers(4)), 8, zero_point=p["out_zp"], scale=p["out_scale"],
                          frac_bits=p["out_frac"])
    else:
        b = _values(rng, (c,), tb, extreme)
        bnd = relu_bounds(int(rng.integers(4)), 16, frac_bits=p["out_frac"])
    geo = {"stride": s, "dilation": d, "pad": pad, "out_hw": (ho, wo), "bounds": bnd}
    return x, wt, b, q, p, geo


@needs_numba
@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: p.name or repr(p))
@pytest.mark.parametrize("kind", KINDS)
def test_jit_matchesnumpy_path(kind: str, plat: Platform, jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    counter = _Counter(monkeypatch)
    rng = np.random.default_rng([KINDS.index(kind), PLATFORMS.index(plat)])
    cases = 40
    for i in range(cases):
        x, wt, b, q, _, geo = _case(rng, kind, extreme=i % 4 == 3)
        with use_platform(plat):
            got = K.depthwise_conv2d_hwcn(x, wt, b, q, **geo)
            want = numpy_path(K.depthwise_conv2d_hwcn, x, wt, b, q, **geo)
        assert got.shape == want.shape
        assert np.array_equal(got.astype(np.int64), want.astype(np.int64)), (i, x.shape, wt.shape, geo)
    assert counter.taken == cases  # every case ran the compiled loop nest


@needs_numba
@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: p.name or repr(p))
@pytest.mark.parametrize("kind", KINDS)
def test_jit_matches_oracle(kind: str, plat: Platform, jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    counter = _Counter(monkeypatch)
    rng = np.random.default_rng([7, KINDS.index(kind), PLATFORMS.index(plat)])
    for i in range(6):
        x, wt, b, q, p, geo = _case(rng, kind, extreme=i == 5)
        x = x if x.ndim == 3 else x[0]
        x = x[:6, :6]  # the oracle is one Python int at a time
        h, w = x.shape[:2]
        (kh, kw), (sh, sw), (dh, dw), (pt, pl) = wt.shape[:2], geo["stride"], geo["dilation"], geo["pad"]
        ho = K.out_size(h, kh, sh, pt, 0, dh)
        wo = K.out_size(w, kw, sw, pl, 0, dw)
        if ho < 1 or wo < 1:
            continue
        geo = {**geo, "out_hw": (ho, wo)}
        with use_platform(plat):
            got = K.depthwise_conv2d_hwcn(x, wt, b, q, **geo)
        want = oracle.conv2d(x, wt, b, p, stride=geo["stride"], dilation=geo["dilation"], pad=geo["pad"],
                             out_hw=(ho, wo), groups=x.shape[-1], depthwise=True, bounds=geo["bounds"],
                             up=plat.round_up, full=plat.full_accu)
        np.testing.assert_array_equal(got, want)
    assert counter.taken > 0


@needs_numba
def test_bench_shape_and_threads(jit_on: None) -> None:
    """The benchmark's shape (large enough for the row blocks over the threads), both platforms."""
    rng = np.random.default_rng(3)
    x = rng.integers(-32768, 32768, (56, 56, 64)).astype(np.int16)
    w = rng.integers(-32768, 32768, (3, 3, 1, 64)).astype(np.int16)
    b = rng.integers(-32768, 32768, 64).astype(np.int16)
    q = K.FxQuant(12, 15, 14, 10)
    xs = rng.integers(-128, 128, (2, 56, 56, 64)).astype(np.int8)
    ws = rng.integers(-128, 128, (3, 3, 1, 64)).astype(np.int8)
    qs = K.Sa8Quant(7, 16384, 20, 0, rng.integers(8192, 32767, 64), np.full(64, 20), 5, 20000, 14)
    geo = {"pad": (1, 1), "out_hw": (56, 56)}
    for plat in (VPX, EM):
        for threads in (1, 2):
            with use_platform(plat), _parallel.threads_limit(threads):
                for args in ((x, w, b, q, (-32768, 32767)), (xs, ws, rng.integers(-9000, 9000, 64), qs, (-128, 127))):
                    got = K.depthwise_conv2d_hwcn(*args[:4], **geo, bounds=args[4])
                    want = numpy_path(K.depthwise_conv2d_hwcn, *args[:4], **geo, bounds=args[4])
                    assert np.array_equal(got.astype(np.int64), want.astype(np.int64))


@needs_numba
@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: p.name or repr(p))
def test_accumulator_corners(plat: Platform, jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """fx16 x fx8 (32-bit accumulator): sums that wrap (23x23 taps of -32768 * -128), a bias add that
    saturates at INT32_MAX followed by ROUND_UP's saturating rounding add (shift 22); sa8: bias at the
    int32 limits."""
    counter = _Counter(monkeypatch)
    x = np.full((23, 23, 2), -32768, dtype=np.int16)
    x[5, 7, 1] = 32767
    w = np.full((23, 23, 1, 2), -128, dtype=np.int8)
    b = np.array([127, -128], dtype=np.int8)
    cases = [(x, w, K.FxQuant(15, 7, 15, 12, 32, 16), (0, 0), (1, 1)),  # sums of 529 * 2**22: they wrap
             # bias 127 << 25 saturates (INT32_MAX), so does the add; then the rounding add of shift 22
             (np.ones((3, 3, 2), np.int16), w[:3, :3] * 0 + 1, K.FxQuant(15, 10, 0, 3, 32, 16), (1, 1), (3, 3))]
    for xi, wi, q, pad, out_hw in cases:
        geo = {"pad": pad, "out_hw": out_hw, "bounds": (-32768, 32767)}
        with use_platform(plat):
            got = K.depthwise_conv2d_hwcn(xi, wi, b, q, **geo)
            want = numpy_path(K.depthwise_conv2d_hwcn, xi, wi, b, q, **geo)
        assert np.array_equal(got.astype(np.int64), want.astype(np.int64))
    assert counter.taken == len(cases)


class _RunnerCounter:
    """Counts the compiled runners :func:`pymli.kernels._jit._rows_runner` built, and the calls they ran."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.built = self.ran = 0
        real = _jit._rows_runner

        def counted(*a, **k):  # type: ignore[no-untyped-def]
            run = real(*a, **k)
            if run is None:
                return None
            self.built += 1

            def counted_run(*ra):  # type: ignore[no-untyped-def]
                self.ran += 1
                return run(*ra)
            return counted_run

        monkeypatch.setattr(_jit, "_rows_runner", counted)


def _no_plain_jit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the plain kernel's JIT entry fail: a prepared call must not go through it."""
    def refuse(*a, **k):  # type: ignore[no-untyped-def]
        raise AssertionError("the prepared depthwise layer went through the plain kernel")

    monkeypatch.setattr(_jit, "depthwise", refuse)


@needs_numba
def test_prepared_depthwise_takes_the_jit(jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A prepared depthwise layer (capi's repeated calls, TFLite steps) runs its own compiled plan, built
    once per (platform, input shape, dtype): later calls with that key build nothing."""
    rng = np.random.default_rng(13)
    for kind in KINDS:
        x, wt, b, q, _, geo = _case(rng, kind)
        layer = prepare_conv(wt, b, q, **geo, depthwise=True, out_dtype=np.int16)
        wants = {}
        for plat in (VPX, EM):
            with use_platform(plat):
                wants[plat] = numpy_path(layer, x)
        with monkeypatch.context() as m:
            counter = _RunnerCounter(m)
            _no_plain_jit(m)
            for rep in range(3):
                for plat in (VPX, EM):
                    with use_platform(plat):
                        got = layer(x)
                    assert got.dtype == wants[plat].dtype and np.array_equal(got, wants[plat]), (kind, plat, rep)
            assert (counter.built, counter.ran) == (2, 6), kind


@needs_numba
@pytest.mark.parametrize("kind", KINDS)
def test_prepared_depthwise_matches_plain_kernel(kind: str, jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random layers (shapes, strides, dilations, paddings, batches, extreme values): one prepared layer
    called under every platform in turn (switched between calls), with a batch, the unbatched sample and a
    non-contiguous copy, against the plain kernel with the JIT on and off."""
    rng = np.random.default_rng([31, KINDS.index(kind)])
    counter = _RunnerCounter(monkeypatch)
    for i in range(16):
        x, wt, b, q, _, geo = _case(rng, kind, extreme=i % 4 == 3)
        layer = prepare_conv(wt, b, q, **geo, depthwise=True, out_dtype=np.int64)
        xb = x if x.ndim == 4 else x[None]
        strided = np.concatenate([xb, xb], axis=-1)[..., ::2]  # same values, not C-contiguous
        swapped = xb.astype(xb.dtype.newbyteorder())  # same values and shape, other byte order (NumPy path)
        inputs = [xb, xb[0], strided, np.concatenate([xb, xb[:1]]), swapped]
        for plat in PLATFORMS + PLATFORMS[::-1]:
            for xi in inputs:
                with use_platform(plat):
                    got = layer(xi)
                    want = numpy_path(K.depthwise_conv2d_hwcn, xi, wt, b, q, **geo)
                    plain = K.depthwise_conv2d_hwcn(xi, wt, b, q, **geo)
                assert got.dtype == np.int64 and got.shape == want.shape, (i, xi.shape)
                assert np.array_equal(got, want.astype(np.int64)), (i, plat, xi.shape, wt.shape, geo)
                assert np.array_equal(got, plain.astype(np.int64)), (i, plat, xi.shape)
    assert counter.ran >= 16 * 2 * len(PLATFORMS) * (len(inputs) - 1)  # the prepared calls ran compiled plans


@needs_numba
def test_prepared_depthwise_large_call_takes_the_plan(jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls of at least JIT_PARALLEL_WORK multiply-adds take the plan too (row blocks over the threads,
    or one thread), with the same values, as a small input on the same layer does; the plain kernel's
    JIT glue is not called."""
    counter = _Counter(monkeypatch)
    blocks = []
    real_parts = _jit.run_parts
    monkeypatch.setattr(_jit, "run_parts", lambda fn, n: blocks.append(n) or real_parts(fn, n))
    monkeypatch.setattr(_jit, "pool_pays", lambda site: True)
    rng = np.random.default_rng(41)
    x = rng.integers(-128, 128, (4, 24, 24, 64)).astype(np.int8)  # 4 * 24 * 24 * 64 * 9 >= 2**20
    w = rng.integers(-128, 128, (3, 3, 1, 64)).astype(np.int8)
    b = rng.integers(-9000, 9000, 64)
    q = K.Sa8Quant(7, 16384, 20, 0, rng.integers(8192, 32767, 64), np.full(64, 20), 5, 20000, 14)
    geo = {"pad": (1, 1), "out_hw": (24, 24), "bounds": (-128, 127)}
    layer = prepare_conv(w, b, q, **geo, depthwise=True, out_dtype=np.int8)
    for plat in (VPX, EM):
        for threads in (1, 2):
            with use_platform(plat), _parallel.threads_limit(threads):
                for xi in (x, x[0]):
                    got = layer(xi)
                    want = numpy_path(K.depthwise_conv2d_hwcn, xi, w, b, q, **geo)
                    assert got.dtype == np.int8 and np.array_equal(got, want)
    assert counter.taken == 0
    assert len(blocks) == 2  # the batch of 4 on two threads, both platforms


@needs_numba
def test_prepared_depthwise_jit_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """A prepared layer whose plan is built keeps following the switch: JIT off, NumPy (same values)."""
    rng = np.random.default_rng(43)
    x, wt, b, q, _, geo = _case(rng, "sa8")
    layer = prepare_conv(wt, b, q, **geo, depthwise=True, out_dtype=np.int8)
    prev = _jit.set_enabled(True)
    try:
        on = layer(x)
        counter = _RunnerCounter(monkeypatch)
        _jit.set_enabled(False)
        off = layer(x)
    finally:
        _jit.set_enabled(prev)
    assert counter.ran == 0 and np.array_equal(on, off)


@needs_numba
def test_calls_the_jit_does_not_take(jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Weights zero points, other dtypes, shifts outside 0..62, empty outputs: NumPy, same values."""
    counter = _Counter(monkeypatch)
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (5, 6, 4)).astype(np.int8)
    w = rng.integers(-128, 128, (3, 3, 1, 4)).astype(np.int8)
    b = rng.integers(-5000, 5000, 4)
    geo = {"pad": (1, 1), "out_hw": (5, 6), "bounds": (-128, 127)}
    q_wzp = K.Sa8Quant(3, 16384, 20, 2, np.full(4, 16384), np.full(4, 20), 0, 20000, 14)
    q_far = K.Sa8Quant(3, 16384, 20, 0, np.full(4, 16384), np.full(4, 20), 0, 20000, -100)  # shift beyond 62
    q_fx = K.FxQuant(8, 8, 8, 30, 40, 16)  # negative output shift
    cases = [(x, w, q_wzp), (x.astype(np.int32), w, K.Sa8Quant(3, 16384, 20, 0, np.full(4, 16384), np.full(4, 20),
                                                              0, 20000, 14)),
             (x, w, q_far), (x.astype(np.int16), w.astype(np.int16), q_fx)]
    for xi, wi, q in cases:
        for plat in (VPX, EM):
            with use_platform(plat):
                got = K.depthwise_conv2d_hwcn(xi, wi, b if isinstance(q, K.Sa8Quant) else b // 64, q, **geo)
                want = numpy_path(K.depthwise_conv2d_hwcn, xi, wi, b if isinstance(q, K.Sa8Quant) else b // 64,
                                   q, **geo)
            assert np.array_equal(got, want)
    assert counter.taken == 0


def test_numpy_path_runs_with_the_jit_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the switch off the compiled loop nests are never reached, and the kernel still computes."""
    def refuse(*a, **k):  # type: ignore[no-untyped-def]
        raise AssertionError("the JIT ran while switched off")

    monkeypatch.setattr(_jit, "_module", refuse)
    prev = _jit.set_enabled(False)
    try:
        assert not _jit.enabled()
        rng = np.random.default_rng(11)
        x, wt, b, q, p, geo = _case(rng, "sa8")
        x = (x if x.ndim == 3 else x[0])[:5, :5]
        geo["out_hw"] = (K.out_size(5, wt.shape[0], geo["stride"][0], geo["pad"][0], 0, geo["dilation"][0]),
                         K.out_size(5, wt.shape[1], geo["stride"][1], geo["pad"][1], 0, geo["dilation"][1]))
        if min(geo["out_hw"]) >= 1:
            with use_platform(VPX):
                got = K.depthwise_conv2d_hwcn(x, wt, b, q, **geo)
            want = oracle.conv2d(x, wt, b, p, stride=geo["stride"], dilation=geo["dilation"], pad=geo["pad"],
                                 out_hw=geo["out_hw"], groups=x.shape[-1], depthwise=True, bounds=geo["bounds"],
                                 up=True, full=False)
            np.testing.assert_array_equal(got, want)
        assert _jit.depthwise(x[None], wt, 0, None, stride=(1, 1), dilation=(1, 1), pad=(0, 0), out_hw=(1, 1)) is None
    finally:
        _jit.set_enabled(prev)


def test_without_numba(monkeypatch: pytest.MonkeyPatch) -> None:
    """numba not importable: ``available()`` says so and the kernels run NumPy (same values)."""
    rng = np.random.default_rng(17)
    x, wt, b, q, _, geo = _case(rng, "fx16")
    with use_platform(EM):
        want = numpy_path(K.depthwise_conv2d_hwcn, x, wt, b, q, **geo)
    monkeypatch.setitem(_jit._STATE, "tried", True)
    monkeypatch.setitem(_jit._STATE, "module", None)
    monkeypatch.setitem(_jit._STATE, "on", True)
    assert not _jit.available() and not _jit.enabled()
    with use_platform(EM):
        got = K.depthwise_conv2d_hwcn(x, wt, b, q, **geo)
    assert np.array_equal(got.astype(np.int64), want.astype(np.int64))


def test_environment_switch() -> None:
    """``PYMLI_JIT=0`` turns the JIT off for the process (numba is then not even imported)."""
    code = ("import sys; from pymli.kernels import _jit, convolution; "
            "print(_jit.enabled(), 'numba' in sys.modules)")
    env = {**os.environ, "PYMLI_JIT": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_set_enabled_returns_the_previous_setting() -> None:
    prev = _jit.set_enabled(False)
    try:
        assert _jit.set_enabled(True) is False
        assert _jit.set_enabled(False) is True
    finally:
        _jit.set_enabled(prev)


def _record_fx3_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the fx16 3x3 loop nests called from now on (``depthwise_fx3_rows`` /
    ``depthwise_fx3_pairs``), one entry per call, in the list returned."""
    mod = _jit._module()
    taken: list[str] = []
    for name in ("depthwise_fx3_rows", "depthwise_fx3_pairs"):
        real = getattr(mod, name)
        monkeypatch.setattr(mod, name, lambda *a, real=real, name=name: taken.append(name) or real(*a))
    return taken


@needs_numba
@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: p.name or repr(p))
def test_fx16_3x3_float_sums(plat: Platform, jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """fx16 3x3 (the float64 sums of ``depthwise_fx3_rows``: interior pixel pairs, single interior
    pixels, border pixels) against the NumPy path: random strides, dilations, paddings, widths (odd
    and even interior runs), batches, channel counts, extremes, shifts from 0 (no rounding) up."""
    taken = _record_fx3_calls(monkeypatch)
    rng = np.random.default_rng([11, PLATFORMS.index(plat)])
    cases = 48
    for i in range(cases):
        s = (int(rng.integers(1, 3)), 1 if i % 2 == 0 else int(rng.integers(1, 4)))
        d = (int(rng.integers(1, 3)), 1 if i % 3 else int(rng.integers(1, 3)))
        pad = (int(rng.integers(0, 2 * d[0] + 2)), int(rng.integers(0, 2 * d[1] + 2)))
        h, w = int(rng.integers(1, 12)), int(rng.integers(1, 15))
        ho = K.out_size(h, 3, s[0], pad[0], int(rng.integers(0, 2 * d[0] + 1)), d[0])
        wo = K.out_size(w, 3, s[1], pad[1], int(rng.integers(0, 2 * d[1] + 1)), d[1])
        if ho < 1 or wo < 1:
            continue
        c = int(rng.choice([1, 3, 8, 17, 64, 130]))  # 130: beyond RING_CHANNELS
        batch = [None, 2][int(rng.integers(2))]
        extreme = i % 4 == 3
        in_frac, w_frac = int(rng.integers(0, 16)), int(rng.integers(0, 16))
        q = K.FxQuant(in_frac, w_frac, int(rng.integers(0, in_frac + w_frac + 1)),
                      int(rng.integers(in_frac + w_frac - 12, in_frac + w_frac + 1)))
        x = _values(rng, (h, w, c) if batch is None else (batch, h, w, c), np.int16, extreme)
        wt = _values(rng, (3, 3, 1, c), np.int16, extreme)
        b = _values(rng, (c,), np.int16, extreme)
        bnd = relu_bounds(int(rng.integers(4)), 16, frac_bits=q.out_frac)
        geo = {"stride": s, "dilation": d, "pad": pad, "out_hw": (ho, wo), "bounds": bnd}
        with use_platform(plat):
            got = K.depthwise_conv2d_hwcn(x, wt, b, q, **geo)
            want = numpy_path(K.depthwise_conv2d_hwcn, x, wt, b, q, **geo)
        assert np.array_equal(got.astype(np.int64), want.astype(np.int64)), (i, x.shape, q, geo)
    assert len(taken) > cases // 2 and set(taken) == {"depthwise_fx3_rows", "depthwise_fx3_pairs"}


def _FinishCounter(monkeypatch: pytest.MonkeyPatch) -> TakenCounter:
    """Counts the blocks :func:`pymli.kernels._jit.finish` finished (did not hand back to NumPy)."""
    return TakenCounter(monkeypatch, _jit, "finish")


@needs_numba
@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: p.name or repr(p))
@pytest.mark.parametrize("kind", KINDS)
def test_conv_output_stage(kind: str, plat: Platform, jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """conv2d / group conv / transpose conv: the compiled output stage of the row blocks (float32,
    float64 or int64 sums) against the NumPy path, random shapes, batches, extremes, ReLU bounds."""
    counter = _FinishCounter(monkeypatch)
    rng = np.random.default_rng([21, KINDS.index(kind), PLATFORMS.index(plat)])
    cases = 24
    for i in range(cases):
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        groups = int(rng.choice([1, 1, 2, 3]))
        cg, ng = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        s = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        pad = (int(rng.integers(0, kh)), int(rng.integers(0, kw)))
        h, w = int(rng.integers(kh, 10)), int(rng.integers(kw, 10))
        ho, wo = K.out_size(h, kh, s[0], pad[0], 0, 1), K.out_size(w, kw, s[1], pad[1], 0, 1)
        q, p, (tx, tw, tb) = _params(rng, kind, groups * ng)
        batch = [None, 2][int(rng.integers(2))]
        extreme = i % 4 == 3
        x = _values(rng, (h, w, groups * cg) if batch is None else (batch, h, w, groups * cg), tx, extreme)
        wt = _values(rng, (kh, kw, cg, groups * ng), tw, extreme)
        if kind == "sa8":
            b = (rng.choice(np.array([-(1 << 31), (1 << 31) - 1, 0]), groups * ng) if extreme
                 else rng.integers(-20000, 20000, groups * ng)).astype(tb)
            bnd = relu_bounds(int(rng.integers(4)), 8, zero_point=p["out_zp"], scale=p["out_scale"],
                              frac_bits=p["out_frac"])
        else:
            b = _values(rng, (groups * ng,), tb, extreme)
            bnd = relu_bounds(int(rng.integers(4)), 16, frac_bits=p["out_frac"])
        with use_platform(plat):
            if i % 5 == 4 and groups == 1:  # transpose convolution (HWCN weights of the same shape)
                geo = {"stride": s, "pad": (kh - 1, kw - 1), "out_hw": ((h - 1) * s[0] + 1, (w - 1) * s[1] + 1),
                       "bounds": bnd}
                fn = K.transpose_conv2d_hwcn
            else:
                geo = {"stride": s, "pad": pad, "out_hw": (ho, wo), "bounds": bnd, "groups": groups}
                fn = K.conv2d_hwcn
            got = fn(x, wt, b, q, **geo)
            want = numpy_path(fn, x, wt, b, q, **geo)
        assert got.shape == want.shape
        assert np.array_equal(np.asarray(got, np.int64), np.asarray(want, np.int64)), (i, x.shape, wt.shape, geo)
    assert counter.taken >= cases


@needs_numba
@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: p.name or repr(p))
@pytest.mark.parametrize("kind", KINDS)
def test_output_stage_wide_sums(kind: str, plat: Platform, jit_on: None) -> None:
    """The compiled stage on int64 sums up to 2**50 (sa8 and 32-bit FX wrap them to int32 first; the
    40-bit stage adds the bias in int64) and int32 sums at the limits, against :func:`K.finish`."""
    rng = np.random.default_rng([31, KINDS.index(kind), PLATFORMS.index(plat)])
    for i in range(6):
        c = int(rng.choice([1, 5, 64]))
        q, p, (_, _, tb) = _params(rng, kind, c)
        b = _values(rng, (c,), tb, i % 2 == 1)
        if kind == "sa8":
            bnd = relu_bounds(int(rng.integers(4)), 8, zero_point=p["out_zp"], scale=p["out_scale"],
                              frac_bits=p["out_frac"])
        else:
            bnd = relu_bounds(int(rng.integers(4)), 16, frac_bits=p["out_frac"])
        post = K._OutputStage(b, q, bnd)
        wide = rng.integers(-(1 << 50), 1 << 50, (7, c))
        lims = rng.choice(np.array([-(1 << 31), (1 << 31) - 1, -1, 0, 1]), (5, c)).astype(np.int32)
        with use_platform(plat):
            for acc, bound in ((wide, 1 << 50), (lims, 1 << 31)):
                got = post(acc, bound)
                want = K.finish(acc, b, q, bnd, bound)
                assert got.dtype == post.dtype
                assert np.array_equal(got.astype(np.int64), np.asarray(want, np.int64)), (i, bound)
                assert post.jit_stage() is None or _jit.finish(acc, bound, post.jit_stage()) is not None


@needs_numba
def test_output_stage_follows_the_platform(jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """One output stage used across calls (prepared layers keep theirs): the compiled stage's constants
    are derived per platform (rounding, FULL_ACCU), so switching platforms between calls stays exact."""
    counter = _FinishCounter(monkeypatch)
    rng = np.random.default_rng(17)
    for kind in KINDS:
        q, p, (_, _, tb) = _params(rng, kind, 6)
        b = _values(rng, (6,), tb, False) if kind != "sa8" else rng.integers(-20000, 20000, 6).astype(tb)
        post = K._OutputStage(b, q, (-128, 127) if kind == "sa8" else (-32768, 32767))
        # small values times powers of two: many ties for both roundings
        acc = (rng.integers(-7, 8, (400, 6)) << rng.integers(0, 19, (400, 6))).astype(np.float32)
        for plat in PLATFORMS + PLATFORMS[::-1]:
            with use_platform(plat):
                got = post(acc, 1 << 22)
                want = K.finish(acc.astype(np.int64), b, q, post.bounds, 1 << 22)
            assert np.array_equal(got.astype(np.int64), np.asarray(want, np.int64)), (kind, plat)
    assert counter.taken == 2 * len(PLATFORMS) * len(KINDS)


# ------------------------------------------------------------------ fx16 3x3: the float64 row ring
@needs_numba
@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: p.name or repr(p))
def test_fx3_ring_rounding_and_blocks(plat: Platform, jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """``depthwise_fx3_rows`` (scaled float64 sums, floor / rint stage, four-row blocks and the rows
    left over, batches; vertical dilations 2-3: ``depthwise_fx3_pairs``) against the NumPy path: every
    output shift from 0 to 24, so that ties of the rounding shift are common (small shifts, small
    values), also with the largest products and biases, and row blocks starting mid-sample."""
    taken = _record_fx3_calls(monkeypatch)
    rng = np.random.default_rng([12, PLATFORMS.index(plat)])
    for i, s_out in enumerate(range(25)):
        dh = 1 + i % 3
        w_, c = 1 + i % 11, int(rng.choice([1, 5, 8, 16, 24]))
        h, batch = 2 * dh + 1 + i % 4, 1 + i % 2
        small = i % 3 == 0  # small values: many ties
        lim = 8 if small else 32768
        x = rng.integers(-lim, lim, (batch, h, w_, c)).astype(np.int16)
        wt = rng.integers(-lim, lim, (3, 3, 1, c)).astype(np.int16)
        if i % 5 == 4:
            x[...], wt[...] = -32768, -32768  # the largest sums
        b = rng.integers(-32768, 32768, c).astype(np.int16)
        in_frac, w_frac = 15, 15
        q = K.FxQuant(in_frac, w_frac, int(rng.integers(0, 31)), in_frac + w_frac - s_out)
        pad = (dh, 1)
        ho, wo = K.out_size(h, 3, 1, dh, dh, dh), K.out_size(w_, 3, 1, 1, 1, 1)
        bnd = relu_bounds(int(rng.integers(4)), 16, frac_bits=q.out_frac)
        geo = {"stride": (1, 1), "dilation": (dh, 1), "pad": pad, "out_hw": (ho, wo), "bounds": bnd}
        with use_platform(plat):
            want = numpy_path(K.depthwise_conv2d_hwcn, x, wt, b, q, **geo)
            got = K.depthwise_conv2d_hwcn(x, wt, b, q, **geo)
            assert np.array_equal(got.astype(np.int64), want.astype(np.int64)), (i, x.shape, q, geo)
            # row blocks as the threads run them: rows of all samples from any first row on
            stage = K._jit_stage(b, q, bnd)
            run = _jit._rows_runner(x.shape, x.dtype, wt, 0, stage, (1, 1), (dh, 1), pad, (ho, wo))
            rows = batch * ho
            r0 = int(rng.integers(0, rows))
            part = run(np.ascontiguousarray(x), r0, rows)
            assert np.array_equal(part, want.reshape(rows, wo, c)[r0:])
    # the ring without vertical dilation (2 calls a case), the pairs with it (_jit._ring_pays)
    assert taken.count("depthwise_fx3_rows") == 2 * 9 and taken.count("depthwise_fx3_pairs") == 2 * 16


@needs_numba
@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: p.name or repr(p))
def test_sa8_3x3_float32_sums(plat: Platform, jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """``depthwise_sa8_3_rows`` (float32 sums of ``x - zero point`` on the ring, four-row blocks and the
    rows left over, strides, dilations, paddings, batches, extremes; vertical strides and dilations
    above 1: ``depthwise_sa8_rows``) against the NumPy path, and row blocks starting mid-sample."""
    mod = _jit._module()
    taken = []
    real = mod.depthwise_sa8_3_rows
    monkeypatch.setattr(mod, "depthwise_sa8_3_rows", lambda *a: taken.append(1) or real(*a))
    monkeypatch.setattr(_jit, "FLAT_OUTPUTS", 0)  # tiny maps too: the ring (test_sa8_3x3_flat)
    monkeypatch.setattr(_jit, "_RUNNERS", {})
    rng = np.random.default_rng([13, PLATFORMS.index(plat)])
    cases, ring = 24, 0
    for i in range(cases):
        x, wt, b, q, p, geo = _case(rng, "sa8", extreme=i % 4 == 3)
        wt = _values(rng, (3, 3, 1, x.shape[-1]), np.int8, i % 4 == 3)
        s, d, pad = (1, 1) if i % 2 else geo["stride"], (1, 1) if i % 3 else geo["dilation"], geo["pad"]
        h, w = x.shape[-3:-1]
        ho, wo = K.out_size(h, 3, s[0], pad[0], 0, d[0]), K.out_size(w, 3, s[1], pad[1], 0, d[1])
        if ho < 1 or wo < 1:
            continue
        geo = {**geo, "stride": s, "dilation": d, "out_hw": (ho, wo)}
        ring += 2 * (s[0] == 1 and d[0] == 1)
        with use_platform(plat):
            want = numpy_path(K.depthwise_conv2d_hwcn, x, wt, b, q, **geo)
            got = K.depthwise_conv2d_hwcn(x, wt, b, q, **geo)
            assert np.array_equal(got.astype(np.int64), want.astype(np.int64)), (i, x.shape, geo)
            xb = x if x.ndim == 4 else x[None]
            run = _jit._rows_runner(xb.shape, xb.dtype, wt, K._offsets(q)[0], K._jit_stage(b, q, geo["bounds"]), s, d,
                                    pad, (ho, wo))
            rows = xb.shape[0] * ho
            r0 = int(rng.integers(0, rows))
            assert np.array_equal(run(np.ascontiguousarray(xb), r0, rows), want.reshape(rows, wo, -1)[r0:])
    assert len(taken) == ring > cases // 2


@needs_numba
@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: p.name or repr(p))
def test_sa8_3x3_flat(plat: Platform, jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """``depthwise_sa8_3_flat`` (tiny maps: loops over whole output rows, the input converted into a
    zero-padded copy split by column phase) against the NumPy path: random tiny maps, strides 1-3,
    dilations, paddings (also wider than the kernel reach), batches, channel counts, extremes, both
    rounding platforms, and row blocks starting mid-sample; larger maps keep the other loop nests."""
    mod = _jit._module()
    taken = []
    real = mod.depthwise_sa8_3_flat
    monkeypatch.setattr(mod, "depthwise_sa8_3_flat", lambda *a: taken.append(a[4].shape) or real(*a))
    monkeypatch.setattr(_jit, "_RUNNERS", {})
    rng = np.random.default_rng([29, PLATFORMS.index(plat)])
    cases = 0
    for i in range(60):
        extreme = i % 4 == 3
        c = int(rng.choice([1, 2, 3, 5, 8, 12, 16, 17]))
        h, w = (int(v) for v in rng.integers(1, 12, 2))
        s = tuple(int(v) for v in rng.integers(1, 4, 2))
        d = tuple(int(v) for v in rng.integers(1, 3, 2)) if i % 3 == 0 else (1, 1)
        pad = tuple(int(v) for v in rng.integers(0, 4, 2))
        ho, wo = K.out_size(h, 3, s[0], pad[0], pad[0], d[0]), K.out_size(w, 3, s[1], pad[1], pad[1], d[1])
        if ho < 1 or wo < 1:
            continue
        batch = [None, 1, 2][i % 3]
        q, p, (tx, tw, _) = _params(rng, "sa8", c)
        x = _values(rng, (h, w, c) if batch is None else (batch, h, w, c), tx, extreme)
        wt = _values(rng, (3, 3, 1, c), tw, extreme)
        b = (rng.choice(np.array([-(1 << 31), (1 << 31) - 1, 0]), c) if extreme
             else rng.integers(-20000, 20000, c)).astype(np.int32)
        bnd = relu_bounds(int(rng.integers(4)), 8, zero_point=p["out_zp"], scale=p["out_scale"],
                          frac_bits=p["out_frac"])
        geo = {"stride": s, "dilation": d, "pad": pad, "out_hw": (ho, wo), "bounds": bnd}
        cases += 1
        with use_platform(plat):
            want = numpy_path(K.depthwise_conv2d_hwcn, x, wt, b, q, **geo)
            got = K.depthwise_conv2d_hwcn(x, wt, b, q, **geo)
            assert np.array_equal(got.astype(np.int64), want.astype(np.int64)), (i, x.shape, geo)
            xb = x if x.ndim == 4 else x[None]
            run = _jit._rows_runner(xb.shape, xb.dtype, wt, K._offsets(q)[0], K._jit_stage(b, q, bnd), s, d,
                                    pad, (ho, wo))
            rows = xb.shape[0] * ho
            r0 = int(rng.integers(0, rows))
            assert np.array_equal(run(np.ascontiguousarray(xb), r0, rows), want.reshape(rows, wo, c)[r0:])
    assert cases > 30 and len(taken) == 2 * cases  # every call of these tiny maps took the flat loop nest
    # above FLAT_OUTPUTS: the other loop nests
    x = _values(rng, (1, 24, 24, 8), np.int8, False)
    wt = _values(rng, (3, 3, 1, 8), np.int8, False)
    q, p, _ = _params(rng, "sa8", 8)
    geo = {"stride": (1, 1), "dilation": (1, 1), "pad": (1, 1), "out_hw": (24, 24), "bounds": (-128, 127)}
    with use_platform(plat):
        K.depthwise_conv2d_hwcn(x, wt, np.zeros(8, np.int32), q, **geo)
    assert len(taken) == 2 * cases and 24 * 24 * 8 > _jit.FLAT_OUTPUTS


@needs_numba
def test_fx3_operands_bound(jit_on: None) -> None:
    """Sums that may leave float64's exact integers (a bias near 2**53) take the int64 loop nest."""
    wk = np.ones((3, 3, 2), dtype=np.int16)
    with use_platform(VPX):  # ROUND_UP
        small = _jit.fx_stage(np.array([5, -5]), 0, 10, 40, 16, (-32768, 32767))
    big = (1 << 53) - (1 << 33)  # with 9 * 2**30 (the largest sums) beyond 2**53
    huge = _jit.DepthwiseStage(sa8=False, chan=np.array([big, -big]), par=small.par, out_dtype=small.out_dtype)
    assert _jit._fx3_operands(small, wk, 32768, 32768) is not None
    assert _jit._fx3_operands(huge, wk, 32768, 32768) is None
    x = np.full((1, 4, 4, 2), 3, dtype=np.int16)
    x[0, 1, 2] = -7
    w = np.ones((3, 3, 1, 2), dtype=np.int16)
    geo = {"stride": (1, 1), "dilation": (1, 1), "pad": (1, 1), "out_hw": (4, 4)}
    sums = K.depthwise_accumulate(x, w, **geo)[0].astype(np.int64)
    assert _jit._fx3_operands(huge, wk, 3, 1) is not None  # small inputs: exact
    for stage, bias in ((huge, [big, -big]), (small, [5, -5])):
        want = np.clip((sums + np.array(bias) + 512) >> 10, -32768, 32767)
        out = _jit.depthwise(x, w, 0, stage, **geo)
        assert out is not None and np.array_equal(out.astype(np.int64), want)


# ------------------------------------------------------------------ an interrupted first compile
_CUT = RuntimeError("no compiled object yet for <Library 'depthwise_fx3_rows' at 0x0>")


def _cut_once(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[int]:
    """Replace ``module.name`` by a function whose first call fails as numba's interrupted first
    compile does, later calls run the real one; returns the list of calls (0: cut, 1: ran)."""
    real = getattr(module, name)
    calls: list[int] = []

    def cut(*args: object) -> object:
        if not calls:
            calls.append(0)
            raise _CUT
        calls.append(1)
        return real(*args)
    monkeypatch.setattr(module, name, cut)
    return calls


@needs_numba
def test_compile_cut_takes_numpy_then_retries(jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A depthwise call whose loop nest's first compile is cut short gives the NumPy path's values; the
    next call takes the JIT. The same for the conv output stage (:func:`_jit.finish`) and a prepared
    depthwise layer (None: its caller runs the plain kernel)."""
    rng = np.random.default_rng(41)
    cut0 = int(_jit._STATE.get("cut", 0))
    x = rng.integers(-32768, 32768, (6, 7, 8)).astype(np.int16)
    w = rng.integers(-32768, 32768, (3, 3, 1, 8)).astype(np.int16)
    b = rng.integers(-32768, 32768, 8).astype(np.int16)
    q = K.FxQuant(12, 15, 14, 10)
    geo = {"pad": (1, 1), "out_hw": (6, 7), "bounds": (-32768, 32767)}
    want = numpy_path(K.depthwise_conv2d_hwcn, x, w, b, q, **geo)
    calls = _cut_once(monkeypatch, _jit._module(), "depthwise_fx3_rows")
    for n in (1, 2):
        assert np.array_equal(K.depthwise_conv2d_hwcn(x, w, b, q, **geo), want)
        assert calls == [0, 1][:n]
    assert _jit._STATE["cut"] == cut0 + 1

    stage = K._jit_stage(b, q, (-32768, 32767))
    acc = rng.integers(-(1 << 30), 1 << 30, (5, 8)).astype(np.int64)
    calls = _cut_once(monkeypatch, _jit._module(), "finish_fx")
    assert _jit.finish(acc, 1 << 30, stage) is None
    assert np.array_equal(_jit.finish(acc, 1 << 30, stage), K.finish(acc, b, q, (-32768, 32767), None))
    assert calls == [0, 1]

    layer = _jit.PreparedDepthwise(w, 0, lambda: stage, stride=(1, 1), dilation=(1, 1), pad=(1, 1), out_hw=(6, 7))
    calls = _cut_once(monkeypatch, _jit._module(), "depthwise_fx3_rows")
    assert layer(x) is None
    assert np.array_equal(layer(x), want) and calls == [0, 1]


class _FakeKernels:
    """A compiled-kernel module stand-in for :class:`_jit._Guarded`."""

    __all__ = ["add_into"]
    size = 3

    @staticmethod
    def add_into(a: np.ndarray, out: np.ndarray) -> int:
        out += a
        return int(out.sum())


def test_guarded_module_calls_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The modules of :func:`_jit.compiled`: a call whose first compile was cut short is made once
    more (its result returned); other errors propagate; other attributes are the module's."""
    fake = _FakeKernels()
    guarded = _jit._Guarded(fake)  # type: ignore[arg-type]
    calls = _cut_once(monkeypatch, fake, "add_into")
    out = np.zeros(3, dtype=np.int64)
    assert guarded.add_into(np.arange(3), out) == 3 and calls == [0, 1]
    assert np.array_equal(out, [0, 1, 2])
    assert guarded.size == 3 and guarded.__all__ == ["add_into"]

    def broken(*args: object) -> None:
        raise RuntimeError("something else")
    monkeypatch.setattr(fake, "add_into", broken)
    with pytest.raises(RuntimeError, match="something else"):
        guarded.add_into(np.arange(3), out)


@needs_numba
def test_compiled_module_is_guarded(jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """``compiled("_jit_reduce")`` hands out the guarded module (one object): argmax with a cut first
    compile gives the positions of the NumPy path."""
    mod = _jit.compiled("_jit_reduce")
    _jit_reduce = importlib.import_module("pymli.kernels._jit_reduce")  # needs numba: not at the top
    assert isinstance(mod, _jit._Guarded) and _jit.compiled("_jit_reduce") is mod
    x = np.random.default_rng(5).integers(-100, 100, (40, 3)).astype(np.int16)
    calls = _cut_once(monkeypatch, _jit_reduce, "argmax_heaps")
    got = argmax(x, 1, 4)  # three slices of 40
    want = numpy_path(argmax, x, 1, 4)
    assert np.array_equal(got, want) and calls == [0, 1]


def test_interrupted_import_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """An interrupt while numba loads propagates and leaves the JIT to be loaded on the next call (only
    an ImportError turns it off for the process)."""
    monkeypatch.setitem(_jit._STATE, "tried", False)
    monkeypatch.setitem(_jit._STATE, "module", None)
    real = _jit.importlib.import_module
    seen = []

    def interrupted(name: str) -> object:
        if not seen:
            seen.append(name)
            raise KeyboardInterrupt
        return real(name)
    monkeypatch.setattr(_jit.importlib, "import_module", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _jit.available()
    assert _jit._STATE["tried"] is False
    has_numba = importlib.util.find_spec("numba") is not None
    assert _jit.available() is has_numba and _jit._STATE["tried"] is True


_REAL_CUT = r"""
import numpy as np
from numba.core.registry import cpu_target
from pymli.kernels import _jit

try:  # numba's execution engine and its object-cache hook (internals: checked by the test)
    ee = cpu_target.target_context.codegen()._engine._ee
    notify = ee._object_cache_notify
except AttributeError:
    print("no hook")
    raise SystemExit(0)

def interrupted(module, buf):
    # a signal while LLVM hands finish_fx's object code to numba's cache hook (a ctypes callback)
    if module.name == "finish_fx" and not getattr(interrupted, "done", False):
        interrupted.done = True
        raise KeyboardInterrupt
    return notify(module, buf)

ee._object_cache_notify = interrupted
stage = _jit.fx_stage(np.array([3, -3]), 0, 4, 40, 16, (-32768, 32767))
acc = np.array([[100, -100], [7, 8]], dtype=np.int64)
first = _jit.finish(acc, 100, stage)
second = _jit.finish(acc, 100, stage)
print(first is None, _jit._STATE.get("cut"), second.tolist())
"""


@needs_numba
def test_real_interrupted_compile(tmp_path: object) -> None:
    """numba itself: an interrupt in its object-cache hook during the first compile (fresh cache) cuts
    that compile short ("no compiled object yet"); the glue takes the NumPy path for that call, the
    next call runs the compiled function."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "PYMLI_JIT": "1"}
    r = subprocess.run([sys.executable, "-c", _REAL_CUT], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    if r.stdout.strip() == "no hook":
        pytest.skip("this numba has no ExecutionEngine._object_cache_notify hook to interrupt")
    # (100 + 3 + 8) >> 4 = 6, (-100 - 3 + 8) >> 4 = -6, (7 + 3 + 8) >> 4 = 1, (8 - 3 + 8) >> 4 = 0
    assert r.stdout.split("\n")[-2] == "True 1 [[6, -6], [1, 0]]", r.stdout + r.stderr[-3000:]


# ------------------------------------------------------------------ warm-up
@needs_numba
def test_warm_up_covers_the_kernels(jit_on: None) -> None:
    """After :func:`_jit.warm_up`, depthwise calls of every kind (3x3 and 5x5, batches) and the conv
    output stage of every kind compile nothing new: the warm-up has every argument type combination."""
    done = _jit.warm_up()
    assert "pymli.kernels._jit_numba" in done
    mod = _jit._module()
    funcs = [getattr(mod, n) for n in mod.__all__]
    before = [len(f.signatures) for f in funcs]
    rng = np.random.default_rng(8)
    for kind in KINDS:
        for k in (3, 5):
            x, wt, b, q, _, geo = _case(rng, kind)
            wt = _values(rng, (k, k, 1, x.shape[-1]), wt.dtype.type, False)
            geo = {**geo, "stride": (1, 1), "dilation": (1, 1), "pad": (k // 2, k // 2), "out_hw": x.shape[-3:-1]}
            K.depthwise_conv2d_hwcn(x, wt, b, q, **geo)
            wc = _values(rng, (k, k, x.shape[-1], x.shape[-1]), wt.dtype.type, False)
            K.conv2d_hwcn(x, wc, b, q, **geo)
    after = [len(f.signatures) for f in funcs]
    new = {f.__name__: f.signatures[n:] for f, n in zip(funcs, before) if len(f.signatures) > n}
    assert after == before, f"compiled after the warm-up: {new}"


@needs_numba
def test_kept_runner_owns_its_weights(jit_on: None) -> None:
    """:func:`_jit.depthwise` keeps runners by the weights' values: rewriting the array of an earlier
    call's weights does not change what a later call with those values computes."""
    rng = np.random.default_rng(17)
    x = rng.integers(-128, 128, (1, 6, 6, 8)).astype(np.int8)
    w = rng.integers(-128, 128, (3, 3, 1, 8)).astype(np.int8)
    b = rng.integers(-5000, 5000, 8)
    q = K.Sa8Quant(3, 16384, 20, 0, rng.integers(8192, 32767, 8), np.full(8, 20), 5, 20000, 14)
    geo = {"stride": (1, 1), "dilation": (1, 1), "pad": (1, 1), "out_hw": (6, 6)}
    for kh in (3, 2):  # the float32 loop nest and the int32 one
        wk = w[:kh, :kh].copy()
        stage = K._jit_stage(b, q, (-128, 127))
        first = _jit.depthwise(x, wk, 3, stage, **geo)
        same = wk.copy()
        wk[...] = 0  # the first call's array rewritten
        again = _jit.depthwise(x, same, 3, stage, **geo)
        assert first is not None and np.array_equal(again, first)


@needs_numba
@pytest.mark.parametrize("kind", KINDS)
def test_prepared_depthwise_single_shape(kind: str, jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """``PreparedConv.single`` of a depthwise layer (the compiled plan of one input shape, a model's step)
    equals the plain kernel on its shape; other shapes, a non-contiguous input, another platform and the
    JIT switched off go to the layer itself, with the same values."""
    rng = np.random.default_rng([53, KINDS.index(kind)])
    made = 0
    for i in range(10):
        x, wt, b, q, _, geo = _case(rng, kind, extreme=i % 4 == 3)
        for out_dtype in (np.int8 if kind == "sa8" else np.int16, np.int64):
            layer = prepare_conv(wt, b, q, **geo, depthwise=True, out_dtype=out_dtype)
            with use_platform(VPX):
                f = layer.single(x.shape, x.dtype)
            if out_dtype is np.int64:
                assert f is None  # the stage's container is not the layer's dtype
                continue
            if f is None:
                continue
            made += 1
            xb = x if x.ndim == 4 else x[None]
            strided = np.concatenate([xb, xb], axis=-1)[..., ::2]
            for plat in (VPX, EM, VPX_FULL_ACCU):
                for xi in (x, xb, strided):
                    with use_platform(plat):
                        got = f(xi)
                        want = K.depthwise_conv2d_hwcn(xi, wt, b, q, **geo).astype(out_dtype)
                    assert got.dtype == want.dtype and np.array_equal(got, want), (i, plat, xi.shape)
            _jit.set_enabled(False)
            try:
                with use_platform(VPX):
                    assert np.array_equal(f(x), K.depthwise_conv2d_hwcn(x, wt, b, q, **geo).astype(out_dtype))
            finally:
                _jit.set_enabled(True)
    assert made, "no single-shape depthwise layer was made"
    with _parallel.threads_limit(2):
        big = np.zeros((4, 24, 24, 64), np.int8)  # a call of >= JIT_PARALLEL_WORK: may go over threads
        w = np.ones((3, 3, 1, 64), np.int8)
        q = K.Sa8Quant(7, 16384, 20, 0, np.full(64, 16384), np.full(64, 20), 5, 20000, 14)
        layer = prepare_conv(w, np.zeros(64, np.int32), q, pad=(1, 1), out_hw=(24, 24), bounds=(-128, 127),
                             depthwise=True, out_dtype=np.int8)
        assert layer.single(big.shape, big.dtype) is None

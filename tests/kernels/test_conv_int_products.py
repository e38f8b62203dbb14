"""The int8 conv2d through the compiled integer products (``kernels/_jit_conv.py``: VNNI on 512 and 256
bits, AVX2; ``convolution._conv_int``) against the NumPy path (JIT off) and the element-by-element
oracle: whole outputs compared bit for bit on random shapes (channels and filters not multiples of 4 /
16, more than 64 filters), strides, dilations, paddings (also beyond the kernel), batches, strided
inputs, zero points at the int8 limits, extreme values, sums at the int32 lanes' limit, and all
rounding platforms; the row blocks on one and two threads; the products' self-test; and the calls the
path must leave to NumPy. Also: the transpose convolution's weights memo stays bounded.

Each product this CPU lacks is skipped with a reason (all of them without numba: the NumPy path, which
the other conv tests cover, is then the only one); the test of the calls left to NumPy runs either way.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import numpy as np
import pytest

from pymli import EM, VPX, VPX_FULL_ACCU, Platform, RoundMode, use_platform
from pymli.arith.requant import relu_bounds
from pymli.kernels import _jit, _parallel
from pymli.kernels import convolution as K

from ..oracles import convolution as oracle
from ._shared import conv_geometry, fx_quant, numpy_path

PLATFORMS = [VPX, VPX_FULL_ACCU, EM, Platform(RoundMode.CONVERGENT, True)]


def _products_here() -> list[str]:
    prev = _jit.set_enabled(True)
    try:
        mod = _jit.compiled("_jit_conv") if _jit.available() else None
        return [p.name for p in mod.PRODUCTS] if mod is not None else []
    finally:
        _jit.set_enabled(prev)


HERE = _products_here()
needs_products = pytest.mark.skipif(not HERE, reason="numba missing, or an x86 CPU with neither VNNI nor AVX2: "
                                                 "the integer conv2d products cannot run here")


@pytest.fixture
def jit_on() -> Iterator[None]:
    prev = _jit.set_enabled(True)
    yield
    _jit.set_enabled(prev)


@pytest.fixture(params=["u8x16", "u8x8", "s16x16", "s16x8"])
def product(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each integer product this CPU has (the others are skipped with a reason)."""
    if request.param not in HERE:
        pytest.skip(f"no {request.param} product on this CPU")
    monkeypatch.setattr(K, "INT_PRODUCT", request.param)
    return request.param


class _Taken:
    """Counts the calls of the compiled integer products (when the JIT module can be loaded); their
    self-tests run before (not counted)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        mod = _jit.compiled("_jit_conv") if _jit.available() else None
        if mod is not None:
            for prod in mod.PRODUCTS:
                mod.checked(prod)
            for name in ("conv_u8x16", "conv_u8x8", "conv_s16x16", "conv_s16x8"):
                monkeypatch.setattr(mod, name, self._counted(getattr(mod, name)))

    def _counted(self, real):  # type: ignore[no-untyped-def]
        def counted(*a):  # type: ignore[no-untyped-def]
            self.calls += 1
            return real(*a)

        return counted


def _quant(rng: np.random.Generator, n: int, in_zp: int) -> tuple[K.Sa8Quant, dict]:
    """Random sa8 parameters (per-tensor or per-channel weights), outputs spread over the range."""
    nw = n if rng.integers(2) else 1
    ws = rng.integers(8192, 32768, nw)
    in_frac = int(rng.integers(12, 25))
    wf = int(rng.integers(12, 25)) + rng.integers(0, 2, nw)
    p = {"kind": "sa8", "in_zp": in_zp, "in_scale": int(rng.integers(8192, 32768)), "in_frac": in_frac,
         "w_scales": [int(v) for v in ws], "w_fracs": [int(v) for v in wf],
         "out_zp": int(rng.integers(-64, 64)), "out_scale": int(rng.integers(8192, 32768))}
    p["out_frac"] = max(-128, min(127, in_frac + int(wf[0]) - int(rng.integers(16, 26))))
    q = K.Sa8Quant(in_zp, p["in_scale"], in_frac, 0, ws, wf, p["out_zp"], p["out_scale"], p["out_frac"])
    return q, p


def _values(rng: np.random.Generator, shape: tuple, extreme: bool) -> np.ndarray:
    if extreme:  # the container limits only (largest products and sums)
        return rng.choice(np.array([-128, 127, -127, 0]), shape).astype(np.int8)
    return rng.integers(-128, 128, shape).astype(np.int8)


def _case(rng: np.random.Generator, extreme: bool = False, small: bool = False) -> tuple:
    kh, kw, s, d, pad, pad_b, h, w, ho, wo = conv_geometry(rng, 6 if small else 14)
    groups = int(rng.choice([1, 1, 2, 3]))  # group conv2d: C and N split in equal groups
    cg = int(rng.choice([1, 3, 4, 5, 8, 17, 32] if groups == 1 else [1, 3, 4, 6, 8]))
    ng = int(rng.choice([1, 5, 16, 17, 48, 64, 65, 130] if groups == 1 else [1, 5, 16, 17]))
    if small:
        ng = int(rng.choice([1, 7, 16, 17])) if groups == 1 else int(rng.choice([1, 5, 16]))
    c, n = groups * cg, groups * ng
    batch = None if small else [None, 1, 3][int(rng.integers(3))]
    in_zp = int(rng.choice([-128, 127, 0, int(rng.integers(-128, 128))]))
    q, p = _quant(rng, n, in_zp)
    x = _values(rng, (h, w, c) if batch is None else (batch, h, w, c), extreme)
    wt = _values(rng, (kh, kw, cg, n), extreme)
    if extreme:  # the int32 limits: the saturating bias add saturates
        b = rng.choice(np.array([-(1 << 31), (1 << 31) - 1, -(1 << 30), 0]), n)
    else:
        b = rng.integers(-20000, 20000, n)
    bnd = relu_bounds(int(rng.integers(4)), 8, zero_point=p["out_zp"], scale=p["out_scale"], frac_bits=p["out_frac"])
    geo = {"stride": s, "dilation": d, "pad": pad, "out_hw": (ho, wo), "bounds": bnd, "groups": groups}
    return x, wt, b.astype(np.int32), q, p, geo


@needs_products
@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: p.name or repr(p))
def test_int_matches_numpy_path(plat: Platform, product: str, jit_on: None,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    taken = _Taken(monkeypatch)
    rng = np.random.default_rng([11, PLATFORMS.index(plat)])
    cases = 40
    for i in range(cases):
        x, wt, b, q, _, geo = _case(rng, extreme=i % 4 == 3)
        if i % 5 == 4:  # a strided (non-contiguous) input view
            x = np.repeat(x, 2, axis=-1)[..., ::2]
        with use_platform(plat):
            got = K.conv2d_hwcn(x, wt, b, q, **geo)
            want = numpy_path(K.conv2d_hwcn, x, wt, b, q, **geo)
        assert got.shape == want.shape
        assert np.array_equal(got.astype(np.int64), want.astype(np.int64)), (i, x.shape, wt.shape, geo)
    assert taken.calls >= cases  # every case ran the integer product


def _assert_oracle(x: np.ndarray, wt: np.ndarray, b: np.ndarray, q: object, p: dict, geo: dict,
                   plat: Platform) -> None:
    """conv2d_hwcn on ``plat`` equals the scalar oracle."""
    with use_platform(plat):
        got = K.conv2d_hwcn(x, wt, b, q, **geo)
    want = oracle.conv2d(x, wt, b, p, stride=geo["stride"], dilation=geo["dilation"], pad=geo["pad"],
                         out_hw=geo["out_hw"], groups=geo["groups"], depthwise=False, bounds=geo["bounds"],
                         up=plat.round_up, full=plat.full_accu)
    np.testing.assert_array_equal(got, want)


def _fx(rng: np.random.Generator, case: tuple, kind: str) -> tuple:
    """``case`` (from :func:`_case`) with MLI_FX operands: int16 inputs, int8 (fx16 x fx8: 32-bit
    accumulator) or int16 (fx16: 40-bit) weights and bias, outputs spread over the range."""
    x, wt, _, _, _, geo = case
    q, p, (_, wt_t, _) = fx_quant(rng, kind)
    extreme = bool(rng.integers(4) == 0)
    if extreme:  # the container limits only
        xi = rng.choice(np.array([-32768, 32767, 0, -32767]), x.shape).astype(np.int16)
        info = np.iinfo(wt_t)
        wi = rng.choice(np.array([info.min, info.max, 0, info.min + 1]), wt.shape).astype(wt_t)
    else:
        xi = rng.integers(-32768, 32768, x.shape).astype(np.int16)
        wi = rng.integers(np.iinfo(wt_t).min, np.iinfo(wt_t).max + 1, wt.shape).astype(wt_t)
    b = rng.integers(np.iinfo(wt_t).min, np.iinfo(wt_t).max + 1, wt.shape[3]).astype(wt_t)
    geo = {**geo, "bounds": relu_bounds(int(rng.integers(4)), 16, frac_bits=p["out_frac"])}
    return xi, wi, b, q, p, geo


@needs_products
@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: p.name or repr(p))
@pytest.mark.parametrize("kind", ["fx16", "fx16_fx8_fx8"])
def test_int_fx_matches_numpy_path(kind: str, plat: Platform, product: str, jit_on: None,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """MLI_FX conv2d / group conv2d through the s16 products (fx16: split weights, K below 512; fx16 x
    fx8: the 32-bit accumulator's wrap in the lanes) against the NumPy path; the uint8 ones take none."""
    taken = _Taken(monkeypatch)
    rng = np.random.default_rng([18, PLATFORMS.index(plat), kind == "fx16"])
    expect = 0
    for i in range(30):
        x, wt, b, q, _, geo = _fx(rng, _case(rng), kind)
        kh, kw, cg, _ = wt.shape
        expect += product.startswith("s16") and (kind != "fx16" or kh * kw * cg < 512)
        with use_platform(plat):
            got = K.conv2d_hwcn(x, wt, b, q, **geo)
            want = numpy_path(K.conv2d_hwcn, x, wt, b, q, **geo)
        assert np.array_equal(got.astype(np.int64), want.astype(np.int64)), (i, x.shape, wt.shape, geo)
    assert (taken.calls > 0) == (expect > 0) and (not product.startswith("s16") or expect > 0)


@needs_products
@pytest.mark.parametrize("kind", ["fx16", "fx16_fx8_fx8"])
def test_int_fx_matches_oracle(kind: str, product: str, jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    taken = _Taken(monkeypatch)
    rng = np.random.default_rng([19, kind == "fx16"])
    for plat in (VPX, EM):
        for _ in range(4):
            x, wt, b, q, p, geo = _fx(rng, _case(rng, small=True), kind)
            _assert_oracle(x, wt, b, q, p, geo, plat)
    assert (taken.calls > 0) == product.startswith("s16")


@needs_products
@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: p.name or repr(p))
def test_int_transpose_matches_numpy_path(plat: Platform, product: str, jit_on: None,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """transpose_conv2d: the zero-inserted raw input (the zero point between the pixels) through the
    integer product, against the NumPy path (the centred, zero-inserted input's float GEMM)."""
    taken = _Taken(monkeypatch)
    rng = np.random.default_rng([17, PLATFORMS.index(plat)])
    cases = 24
    for i in range(cases):
        kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        s = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        pad = (int(rng.integers(0, kh)), int(rng.integers(0, kw)))
        h, wd = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        out_hw = (K.transpose_out_size(h, kh, s[0], pad[0], int(rng.integers(0, kh))),
                  K.transpose_out_size(wd, kw, s[1], pad[1], int(rng.integers(0, kw))))
        c, n = int(rng.choice([1, 3, 8, 17])), int(rng.choice([1, 16, 17, 40]))
        if min(out_hw) < 1:
            continue
        q, p = _quant(rng, n, int(rng.choice([-128, 127, int(rng.integers(-128, 128))])))
        batch = () if rng.integers(2) else (2,)
        x = _values(rng, (*batch, h, wd, c), i % 4 == 3)
        w = _values(rng, (kh, kw, c, n), i % 4 == 3)
        b = rng.integers(-20000, 20000, n).astype(np.int32)
        bnd = relu_bounds(int(rng.integers(4)), 8, zero_point=p["out_zp"], scale=p["out_scale"],
                          frac_bits=p["out_frac"])
        geo = {"stride": s, "pad": pad, "out_hw": out_hw, "bounds": bnd}
        with use_platform(plat):
            got = K.transpose_conv2d_hwcn(x, w, b, q, **geo)
            want = numpy_path(K.transpose_conv2d_hwcn, x, w, b, q, **geo)
        assert np.array_equal(got.astype(np.int64), want.astype(np.int64)), (i, x.shape, w.shape, geo)
    assert taken.calls > 0


@needs_products
@pytest.mark.parametrize("plat", [VPX, EM], ids=lambda p: p.name)
def test_int_matches_oracle(plat: Platform, product: str, jit_on: None,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    taken = _Taken(monkeypatch)
    rng = np.random.default_rng([12, PLATFORMS.index(plat)])
    for i in range(8):
        x, wt, b, q, p, geo = _case(rng, extreme=i == 7, small=True)
        _assert_oracle(x, wt, b, q, p, geo, plat)
    assert taken.calls >= 8


@needs_products
def test_int_widest_sums(product: str, jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every product +-255 * 128 of one sign: K at the uint8 lanes' exact limit (:data:`VNNI_MAX_K`:
    the initial value and the running sums both reach ``K * 32640``), and K beyond 2**31 / 32640, where
    the int32 lanes wrap as the C 32-bit accumulator does (then left to NumPy without one)."""
    taken = _Taken(monkeypatch)
    for c in (K.VNNI_MAX_K // 4 * 4, 65800):
        for zp, xv in ((-128, 127), (127, -128)):
            q = K.Sa8Quant(zp, 16384, 30, 0, np.array([16384]), np.array([30]), 0, 16384, 2)
            x = np.full((2, 1, c), xv, np.int8)
            x[1, 0, ::3] = 0
            w = np.full((1, 1, c, 2), -128, np.int8)
            w[..., 1] = 127
            geo = {"out_hw": (2, 1), "bounds": (-128, 127)}
            got = K.conv2d_hwcn(x, w, np.array([5, -5], np.int32), q, **geo)
            want = numpy_path(K.conv2d_hwcn, x, w, np.array([5, -5], np.int32), q, **geo)
            assert np.array_equal(got.astype(np.int64), want.astype(np.int64)), (c, zp)
    assert taken.calls == 4

    def applies(k: int, zp: int, acc_bits: int = 32) -> bool:
        return K._int_applies(np.zeros((1, 1, 1, k), np.int8), np.zeros((1, 1, k, 1), np.int8), 1, zp,
                              acc_bits) is not None

    c = K.VNNI_MAX_K // 4 * 4
    assert applies(65800, 0) and applies(65800, 127)  # a wrapping 32-bit accumulator: any K
    if product.startswith("s16"):  # bound K * |x - zp| * 128: 65793 * 255 * 128 < 2**31 <= 65794 * 255 * 128
        assert applies(65793, 127, 40) and not applies(65794, 127, 40) and applies(65794, 0, 40)
        assert applies(1, -32767 + 127) and not applies(1, -32768 + 127) and not applies(1, 32768)  # int16
        q = K.Sa8Quant(-32640, 16384, 30, 0, np.array([16384]), np.array([30]), 0, 16384, 18)
        x, w = np.array([[[-128, 127, 0]]], np.int8), np.array([[[[-128], [127], [-128]]]], np.int8)
        geo = {"out_hw": (1, 1), "bounds": (-128, 127)}
        got = K.conv2d_hwcn(x, w, np.array([0], np.int32), q, **geo)  # |x - zp| up to 32767
        assert np.array_equal(got, numpy_path(K.conv2d_hwcn, x, w, np.array([0], np.int32), q, **geo))
        assert taken.calls == 5
    else:
        assert applies(c, 0, 40) and not applies(c + 4, 0, 40)


@needs_products
@pytest.mark.parametrize("plat", [VPX, EM], ids=lambda p: p.name)
def test_int_bench_shape_threads(plat: Platform, product: str, jit_on: None,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's shape (32x32x32 3x3 -> 64, same), and a batch of 3: one thread, the pool as
    chosen, and the pool forced (row blocks on two threads)."""
    taken = _Taken(monkeypatch)
    rng = np.random.default_rng(13)
    q, _ = _quant(rng, 64, -3)
    w = rng.integers(-128, 128, (3, 3, 32, 64)).astype(np.int8)
    b = rng.integers(-9000, 9000, 64).astype(np.int32)
    geo = {"pad": (1, 1), "out_hw": (32, 32), "bounds": (-128, 127)}
    for shape in ((32, 32, 32), (3, 32, 32, 32)):
        x = rng.integers(-128, 128, shape).astype(np.int8)
        with use_platform(plat):
            want = numpy_path(K.conv2d_hwcn, x, w, b, q, **geo)
            for threads, adapt in ((1, True), (2, True), (2, False)):
                monkeypatch.setattr(_parallel, "ADAPT", adapt)
                with _parallel.threads_limit(threads):
                    got = K.conv2d_hwcn(x, w, b, q, **geo)
                assert np.array_equal(got.astype(np.int64), want.astype(np.int64)), (shape, threads, adapt)
    assert taken.calls >= 6


@needs_products
def test_int_empty_batch_and_outputs(product: str, jit_on: None) -> None:
    """An empty batch, and outputs of no rows or columns: the NumPy path's (empty) results."""
    q = K.Sa8Quant(1, 16384, 20, 0, np.full(4, 16384), np.full(4, 20), 0, 16384, 14)
    w = np.ones((3, 3, 8, 4), np.int8)
    for shape, out_hw in (((0, 5, 5, 8), (5, 5)), ((1, 5, 5, 8), (0, 5)), ((5, 5, 8), (5, 0)), ((2, 0, 5, 8), (0, 5))):
        x = np.zeros(shape, np.int8)
        geo = {"pad": (1, 1), "out_hw": out_hw, "bounds": (-128, 127)}
        got = K.conv2d_hwcn(x, w, np.zeros(4, np.int32), q, **geo)
        want = numpy_path(K.conv2d_hwcn, x, w, np.zeros(4, np.int32), q, **geo)
        assert got.shape == want.shape and got.size == 0


@pytest.mark.parametrize("product", ["u8x16", "u8x8", "s16x16", "s16x8"])
def test_calls_left_to_numpy(product: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A weights zero point (conv2d and group conv2d), int16 inputs, an input zero point outside int8
    (for the uint8 products: their padding byte is no uint8), and the JIT off: no integer product is
    called, the results are the NumPy path's. Runs whatever the CPU (where it has none, nothing is
    taken)."""
    monkeypatch.setattr(K, "INT_PRODUCT", product)
    prev = _jit.set_enabled(True)
    try:
        taken = _Taken(monkeypatch)
        rng = np.random.default_rng(14)
        x = rng.integers(-128, 128, (5, 6, 8)).astype(np.int8)
        w = rng.integers(-128, 128, (3, 3, 8, 4)).astype(np.int8)
        b = rng.integers(-999, 999, 4).astype(np.int32)
        geo = {"pad": (1, 1), "out_hw": (5, 6), "bounds": (-128, 127)}
        q_wide, _ = _quant(rng, 4, 200)
        q_wzp = K.Sa8Quant(3, 16384, 20, 2, np.array([16384]), np.array([20]), 0, 16384, 14)
        q, _ = _quant(rng, 4, 3)
        calls = [(K.conv2d_hwcn, (x, w, b, q_wzp), geo), (K.group_conv2d_hwcn, (x, w[:, :, :4], b, q_wzp), geo),
                 (K.conv2d_hwcn, (x.astype(np.int16), w, b, q), geo)]
        if not product.startswith("s16"):  # the s16 products read x - 200 as int16
            calls.append((K.conv2d_hwcn, (x, w, b, q_wide), geo))
        for fn, args, kw in calls:
            got = fn(*args, **kw)
            want = numpy_path(fn, *args, **kw)
            assert np.array_equal(got.astype(np.int64), want.astype(np.int64))
        assert taken.calls == 0
        _jit.set_enabled(False)
        K.conv2d_hwcn(x, w, b, q, **geo)
        assert taken.calls == 0
    finally:
        _jit.set_enabled(prev)


@needs_products
def test_self_test_guards_the_path(product: str, jit_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each product here passes its self-test; a product that computes wrong sums fails it, and conv2d
    then leaves it for the next product or NumPy (and still computes the NumPy path's values)."""
    # the module itself, not compiled()'s guarded proxy: checked() reads the module's own globals
    mod = importlib.import_module("pymli.kernels._jit_conv")
    prod = next(p for p in mod.PRODUCTS if p.name == product)
    assert mod._self_test(prod)
    real = getattr(mod, f"conv_{product}")

    def off_by_one(*a):  # type: ignore[no-untyped-def]
        real(*a)
        a[-1][0, 0] += 1

    monkeypatch.setattr(mod, f"conv_{product}", off_by_one)
    monkeypatch.setattr(mod, "_CHECKED", {})
    assert not mod.checked(prod)
    x = np.ones((4, 4, 8), np.int8)
    w = np.ones((3, 3, 8, 16), np.int8)
    q, _ = _quant(np.random.default_rng(15), 16, 1)
    geo = {"pad": (1, 1), "out_hw": (4, 4), "bounds": (-128, 127)}
    found = K._int_applies(x[None], w, 1, 1)
    assert found is None or found[1].name != product
    got = K.conv2d_hwcn(x, w, np.zeros(16, np.int32), q, **geo)
    assert np.array_equal(got, numpy_path(K.conv2d_hwcn, x, w, np.zeros(16, np.int32), q, **geo))


@pytest.mark.parametrize("writeable", [True, False])
def test_transpose_weights_memo_stays_bounded(writeable: bool) -> None:
    """Repeated transpose convolutions with the same (read-only: memoised) weights add no memo entry
    per call, and compute what a fresh call with fresh parameters computes."""
    rng = np.random.default_rng(16)
    x = rng.integers(-128, 128, (4, 4, 8)).astype(np.int8)
    w = rng.integers(-128, 128, (3, 3, 8, 4)).astype(np.int8)

    def quant() -> K.Sa8Quant:
        return K.Sa8Quant(1, 16384, 20, 0, np.full(4, 20000), np.full(4, 20), 3, 16384, 16)

    geo = {"stride": (2, 2), "pad": (1, 1), "out_hw": (7, 7), "bounds": (-128, 127)}
    want = K.transpose_conv2d_hwcn(x, w.copy(), np.arange(4, dtype=np.int32), quant(), **geo)
    w.flags.writeable = writeable
    q = quant()
    sizes = []
    for _ in range(4):
        assert np.array_equal(K.transpose_conv2d_hwcn(x, w, np.arange(4, dtype=np.int32), q, **geo), want)
        sizes.append(len(q.memo))
    assert sizes[1:] == sizes[:-1]

"""The prepared fully connected / pointwise layers through the compiled integer products
(``PreparedFc._int_rows``: ``kernels/_jit_conv.py``, VNNI on 512 and 256 bits, AVX-512 BW / AVX2 int16)
against the plain kernel and the convolution kernel: seeded random int8 x int8 layers (sa8 per tensor /
per axis / ext_bias, fx8) with input lengths not a multiple of 4, outputs not a multiple of 16 and above
64, 1 to 700 rows, extreme values, zero points at the int8 limits, sums beyond float32's exact range,
every platform, each product forced (``convolution.INT_PRODUCT``), the JIT switched off and on between
calls, row blocks on the pool; and the calls the integer path must leave to the float product.

Each product this CPU lacks is skipped with a reason (all of them without numba); the test of the calls
left to the float product runs whenever numba is installed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

from pymli import use_platform
from pymli.kernels import _jit, _parallel
from pymli.kernels import convolution as K
from pymli.kernels import fully_connected as F
from pymli.kernels.fully_connected import fully_connected, prepare_fc, prepare_pointwise

from ._shared import assert_pointwise_equals_conv, pointwise_sa8_case
from .test_fc_paths import PLATFORMS, _layer, _ordinary

pytestmark = pytest.mark.skipif(not _jit.available(), reason="numba (the jit extra) is not installed")

INT8_KINDS = ["sa8", "sa8_axis", "sa8_ext", "fx8"]


def _products_here() -> list[str]:
    if not _jit.available():
        return []
    prev = _jit.set_enabled(True)
    try:
        mod = _jit.compiled("_jit_conv")
        return [p.name for p in mod.PRODUCTS if mod.checked(p)] if mod is not None else []
    finally:
        _jit.set_enabled(prev)


HERE = _products_here()


@pytest.fixture(autouse=True)
def _jit_on() -> Iterator[None]:
    prev = _jit.set_enabled(True)
    yield
    _jit.set_enabled(prev)


class _Counted:
    """Forces the product ``name`` (``convolution.INT_PRODUCT``) and counts the calls of every compiled
    integer product (the layers resolve the product when their stage is derived: make them after)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, name: str | None) -> None:
        self.calls = 0
        monkeypatch.setattr(K, "INT_PRODUCT", name)
        mod = _jit.compiled("_jit_conv")
        if mod is not None:
            for prod in mod.PRODUCTS:
                mod.checked(prod)  # the self-tests call the products: before the counting
            for p in ("u8x16", "u8x8", "s16x16", "s16x8"):
                monkeypatch.setattr(mod, f"conv_{p}", self._counted(getattr(mod, f"conv_{p}")))

    def _counted(self, real):  # type: ignore[no-untyped-def]
        def counted(*a):  # type: ignore[no-untyped-def]
            self.calls += 1
            return real(*a)

        return counted


@pytest.fixture(params=["u8x16", "u8x8", "s16x16", "s16x8"])
def product(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> _Counted:
    """Each integer product this CPU has (the others are skipped with a reason), forced and counted."""
    if request.param not in HERE:
        pytest.skip(f"no {request.param} product on this CPU (or numba missing)")
    return _Counted(monkeypatch, request.param)


def _x(rng: np.random.Generator, shape: tuple[int, ...], extreme: bool) -> np.ndarray:
    if extreme:
        return rng.choice(np.array([-128, 127, 0, -128, 127], np.int8), size=shape)
    return rng.integers(-128, 128, size=shape).astype(np.int8)


def _check(prep: F.PreparedFc, x: np.ndarray, w: np.ndarray, b: np.ndarray, q: K.Sa8Quant | K.FxQuant,
           bounds: tuple[int, int], dtype: type, msg: object) -> None:
    want = fully_connected(x, w, b, q, bounds).astype(dtype)
    got = prep(x)
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape, msg
    assert np.array_equal(got, want), msg


@pytest.mark.parametrize("kind", INT8_KINDS)
@pytest.mark.parametrize("seed", range(6))
def test_int_product_matches_plain(product: _Counted, kind: str, seed: int) -> None:
    rng = np.random.default_rng((INT8_KINDS.index(kind), seed))
    n = int(rng.integers(1, 300)) | (1 if seed % 2 else 0)  # odd lengths: K not a multiple of 4
    m = int(rng.integers(1, 200))
    if seed == 1:
        m = 16 * 5 + 3  # more than one chunk of 64 outputs, not a multiple of 16
    extreme = seed % 3 == 0
    w, b, q, bounds, xt = _layer(rng, kind, n, m, extreme)
    assert xt is np.int8 and w.dtype == np.int8
    if seed % 2:
        q = _ordinary(q)  # results spread over the output range
    taken = 0
    for plat in PLATFORMS:
        with use_platform(plat):
            for out_dtype in (np.int64, np.int8):
                prep = prepare_fc(w, b, q, bounds, out_dtype)
                for rows in (1, 5, 6, 7, 13, int(rng.integers(1, 700)), 700):
                    x = _x(rng, (rows, n), extreme)
                    before = product.calls
                    _check(prep, x, w, b, q, bounds, out_dtype, (kind, plat, rows))
                    taken += product.calls > before
                x = _x(rng, (2, 3, n), extreme)  # a leading batch
                _check(prep, x, w, b, q, bounds, out_dtype, (kind, plat, x.shape))
                x = _x(rng, (700, n), extreme)[::2]  # strided rows
                _check(prep, x, w, b, q, bounds, out_dtype, (kind, plat, "strided"))
    assert taken, "the integer product never ran"


@pytest.mark.parametrize("zps", [(-128, -128), (127, 127), (-128, 127), (127, -128)])
def test_limits(product: _Counted, zps: tuple[int, int]) -> None:
    """Inputs and weights at -128 / 127 only, zero points at the int8 limits, sums beyond 2**24 (float32
    could not hold them: the integer path must) and long inputs (20003 values).
    """
    rng = np.random.default_rng((zps[0] + 128, zps[1] + 128))
    for n, m in ((1501, 19), (4099, 33), (20003, 5)):
        w = rng.choice(np.array([-128, 127], np.int8), size=(n, m))
        w[:, 0] = -128  # the largest column sum with inputs of -128
        b = rng.integers(-(1 << 20), 1 << 20, m).astype(np.int32)
        q = K.Sa8Quant(zps[0], 16384, 14, 0, rng.integers(1, 32768, m), np.full(m, 30), zps[1], 16384, 14)
        for bounds in ((-128, 127), (max(zps[1], -128), 127)):
            for plat in PLATFORMS:
                with use_platform(plat):
                    prep = prepare_fc(w, b, q, bounds, np.int8)
                    for x in (np.full((7, n), -128, np.int8), np.full((7, n), 127, np.int8), _x(rng, (7, n), True)):
                        before = product.calls
                        _check(prep, x, w, b, q, bounds, np.int8, (n, m, zps, plat))
                        assert product.calls > before


def test_jit_switch_and_the_float_path(product: _Counted) -> None:
    """One prepared layer: the integer product with the JIT on, the NumPy stage with it off, the integer
    product again on; with no product (``INT_PRODUCT`` naming none) the float product, same values."""
    rng = np.random.default_rng(3)
    w, b, q, bounds, _ = _layer(rng, "sa8_axis", 77, 45)
    q = _ordinary(q)
    prep = prepare_fc(w, b, q, bounds, np.int8)
    x = _x(rng, (31, 77), False)
    want = fully_connected(x, w, b, q, bounds).astype(np.int8)
    for on in (True, False, True):
        _jit.set_enabled(on)
        before = product.calls
        assert np.array_equal(prep(x), want), on
        assert (product.calls > before) == on
    K.INT_PRODUCT = "none"
    before = product.calls
    prep2 = prepare_fc(w, b, q, bounds, np.int8)
    assert np.array_equal(prep2(x), want)
    assert product.calls == before


@pytest.mark.parametrize("seed", range(4))
def test_pointwise_equals_the_convolution_kernel(product: _Counted, seed: int) -> None:
    rng = np.random.default_rng(seed + 300)
    h, wd, cin, q, w, b, bounds = pointwise_sa8_case(rng, seed, min_hw=3)
    x = _x(rng, (2, h, wd, cin), seed == 0)
    assert_pointwise_equals_conv(prepare_pointwise, x, w, b, q, bounds, PLATFORMS)
    if 2 * h * wd * cin * w.shape[3] >= F._INT_MIN_MACS:
        assert product.calls


@pytest.mark.parametrize("threads", [1, 2])
def test_row_blocks_on_the_pool(product: _Counted, threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Products of >= PARALLEL_WORK multiply-adds in row blocks on the pool (forced: ADAPT off) and on one
    thread equal the plain kernel, for row counts that do not split evenly (each block its thread's
    scratch buffers)."""
    monkeypatch.setattr(_parallel, "ADAPT", False)
    rng = np.random.default_rng(22)
    w, b, q, bounds, _ = _layer(rng, "sa8", 130, 70)
    q = _ordinary(q)
    prep = prepare_fc(w, b, q, bounds, np.int64)
    for rows in (_parallel.PARALLEL_WORK // (130 * 70) + 1, 513):
        x = _x(rng, (rows, 130), False)
        want = fully_connected(x, w, b, q, bounds)
        assert np.unique(want).size > 8  # outputs spread: a misplaced block shows
        with _parallel.threads_limit(threads):
            before = product.calls
            assert np.array_equal(prep(x), want), rows
            assert product.calls > before
            for _ in range(5):  # fresh layers: the blocks of the first large call grow the row offsets together
                fresh = prepare_fc(w, b, q, bounds, np.int64)
                fresh(x[:1])
                assert np.array_equal(fresh(x), want), rows


def test_calls_left_to_the_float_product(monkeypatch: pytest.MonkeyPatch) -> None:
    """int16 inputs, int16 weights, weights beyond int8 in a wider container, weights zero points, sums
    that may reach 2**31 and calls below _INT_MIN_MACS take no integer product (same values)."""
    counted = _Counted(monkeypatch, None)
    rng = np.random.default_rng(5)
    cases = []
    for kind in ("fx16", "fx16_fx8_fx8", "sa8_wzp"):
        w, b, q, bounds, xt = _layer(rng, kind, 120, 40)
        cases.append((w, b, q, bounds, rng.integers(-128, 128, (50, 120)).astype(xt)))
    w, b, q, bounds, _ = _layer(rng, "sa8", 120, 40)
    cases.append((w.astype(np.int16) * 2, b, q, bounds, _x(rng, (50, 120), False)))  # weights beyond int8
    cases.append((w, b, q, bounds, _x(rng, (1, 120), False)))  # 4800 multiply-adds
    big = np.full((140000, 3), -128, np.int8)  # |sum| up to 140000 * 2**14 > 2**31
    cases.append((big, np.zeros(3, np.int32), K.FxQuant(7, 7, 7, 0, 40, 8), (-128, 127),
                  np.full((1, 140000), -128, np.int8)))
    for w, b, q, bounds, x in cases:
        prep = prepare_fc(w, b, q, bounds, np.int64)
        assert np.array_equal(prep(x), fully_connected(x, w, b, q, bounds))
    assert counted.calls == 0


def test_kept_buffers_across_calls(product: _Counted) -> None:
    """One layer called with new inputs of more row counts than it keeps buffers for, each twice, in
    turns: every call equals the plain kernel (no stale rows from a kept buffer)."""
    rng = np.random.default_rng(11)
    w, b, q, bounds, _ = _layer(rng, "sa8", 90, 21)
    q = _ordinary(q)
    prep = prepare_fc(w, b, q, bounds, np.int8)
    counts = [int(c) for c in rng.permutation(np.arange(9, 9 + 3 * (F._MAX_TILES + 3), 3))]
    for rows in counts + counts[::-1]:
        x = _x(rng, (rows, 90), False)
        _check(prep, x, w, b, q, bounds, np.int8, rows)
    assert product.calls == 2 * len(counts)


@pytest.mark.parametrize("kind", INT8_KINDS)
@pytest.mark.parametrize("seed", range(3))
def test_single_shape_calls(product: _Counted, kind: str, seed: int) -> None:
    """``PreparedFc.single`` (one input shape, fused product and stage on its own buffers) equals the plain
    kernel: inputs of several shapes (rows not a multiple of the tiles, K not a multiple of 4, outputs
    not a multiple of 16), strided inputs, extreme values; calls under another platform, with the JIT
    off, on another shape or dtype go to the layer itself; overlapping calls on two threads."""
    rng = np.random.default_rng((INT8_KINDS.index(kind), seed, 7))
    n, m = int(rng.integers(5, 150)) | 1, int(rng.integers(3, 120))
    w, b, q, bounds, _ = _layer(rng, kind, n, m, seed == 0)
    if seed % 2:
        q = _ordinary(q)
    made = 0
    for plat in PLATFORMS:
        with use_platform(plat):
            prep = prepare_fc(w, b, q, bounds, np.int8)
            assert prepare_fc(w, b, q, bounds, np.int64).single((200, n)) is None  # another container
            for shape in ((200, n), (1, 7, 9, n), (3, 300, n), (1, n), (1, 1, n)):  # down to one row
                f = prep.single(shape)
                if int(np.prod(shape[:-1])) * n * m >= _parallel.PARALLEL_WORK:
                    assert f is None, shape  # a call that may go over threads
                if f is None:
                    continue
                made += 1
                for _ in range(3):
                    x = _x(rng, shape, seed == 0)
                    want = fully_connected(x, w, b, q, bounds).astype(np.int8)
                    got = f(x)
                    assert got.shape == want.shape and got.dtype == np.int8 and np.array_equal(got, want), shape
                xs = _x(rng, shape[:-1] + (2 * n,), False)[..., ::2]  # strided
                assert np.array_equal(f(xs), fully_connected(xs, w, b, q, bounds).astype(np.int8))
                other = _x(rng, (5, n), True)  # another shape: the layer itself
                assert np.array_equal(f(other), fully_connected(other, w, b, q, bounds).astype(np.int8))
                x16 = x.astype(np.int16)  # another dtype: the layer itself
                assert np.array_equal(f(x16), fully_connected(x16, w, b, q, bounds).astype(np.int8))
                for p2 in PLATFORMS:  # another platform: its own stage
                    with use_platform(p2):
                        assert np.array_equal(f(x), fully_connected(x, w, b, q, bounds).astype(np.int8)), p2
                _jit.set_enabled(False)
                try:
                    assert np.array_equal(f(x), want)
                finally:
                    _jit.set_enabled(True)
    assert made, "no single-shape layer was made"


def test_single_on_two_threads(product: _Counted) -> None:
    """Calls of one ``single`` layer overlapping on two threads (the second one takes the layer itself
    while the first holds the buffers) each return their own input's values."""
    rng = np.random.default_rng(41)
    w, b, q, bounds, _ = _layer(rng, "sa8_axis", 96, 40)
    q = _ordinary(q)
    prep = prepare_fc(w, b, q, bounds, np.int8)
    f = prep.single((36, 96))
    assert f is not None
    xs = [_x(rng, (36, 96), False) for _ in range(8)]
    wants = [fully_connected(x, w, b, q, bounds).astype(np.int8) for x in xs]
    bad: list[int] = []

    def work(k: int) -> None:
        for r in range(300):
            j = (k + r) % len(xs)
            if not np.array_equal(f(xs[j]), wants[j]):
                bad.append(j)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad

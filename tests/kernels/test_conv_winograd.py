"""The Winograd F(2x2, 3x3) product of the NumPy conv2d (``convolution._winograd_blocks``), and
its im2col product in float32 chunks where the whole sums need float64.

It must give the im2col product's sums bit for bit wherever it is taken (odd and even output
sizes, paddings, batches, input zero points, row blocks over threads), take it only where its
float32 partial sums are provably exact (extreme weights fall back), and the finished sa8 conv2d
must equal the element-by-element oracle on both rounding platforms with FULL_ACCU on and off.
"""

from __future__ import annotations

import numpy as np
import pytest

from pymli.config import Platform, use_platform
from pymli.formats import RoundMode
from pymli.kernels import _parallel
from pymli.kernels import convolution as K

from ..oracles import convolution as oracle
from ._shared import numpy_path

PLATFORMS = [Platform(RoundMode.UP, False), Platform(RoundMode.CONVERGENT, False), Platform(RoundMode.UP, True),
             Platform(RoundMode.CONVERGENT, True)]


class _Taken:
    """Counts the calls of ``convolution._winograd_blocks``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = K._winograd_blocks

        def counted(*a, **k):  # type: ignore[no-untyped-def]
            self.calls += 1
            return real(*a, **k)

        monkeypatch.setattr(K, "_winograd_blocks", counted)


def _im2col(fn, *args, **kw):  # type: ignore[no-untyped-def]
    """``fn`` with the Winograd product switched off (the plain im2col path)."""
    saved = K.WINOGRAD_MIN_CHANNELS
    K.WINOGRAD_MIN_CHANNELS = 1 << 30
    try:
        return numpy_path(fn, *args, **kw)
    finally:
        K.WINOGRAD_MIN_CHANNELS = saved


def _sa8_case(rng: np.random.Generator, c: int, n: int, per_axis: bool) -> tuple:
    nw = n if per_axis else 1
    q = K.Sa8Quant(int(rng.integers(-128, 128)), int(rng.integers(8192, 32768)), int(rng.integers(14, 22)), 0,
                   rng.integers(8192, 32768, nw), rng.integers(14, 22, nw), int(rng.integers(-64, 64)),
                   int(rng.integers(8192, 32768)), int(rng.integers(8, 14)))
    b = rng.integers(-(1 << 20), 1 << 20, n).astype(np.int32)
    return q, b


def _geometry(rng: np.random.Generator) -> tuple:
    """Odd / even output sizes, paddings 0-2 on each side (the 3x3 stride-1 kernel's reach)."""
    pt, pl, pb, pr = (int(v) for v in rng.integers(0, 3, 4))
    h = int(rng.integers(max(1, 3 - pt - pb), 12))
    w = int(rng.integers(max(1, 3 - pl - pr), 12))
    return (pt, pl), (K.out_size(h, 3, 1, pt, pb, 1), K.out_size(w, 3, 1, pl, pr, 1)), h, w


@pytest.mark.parametrize("seed", range(24))
def test_winograd_sums_equal_im2col(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """conv_accumulate (no output stage) and conv2d (sa8, finished) equal the im2col path: random
    geometries, batches of 1-3, channels around the threshold, one or two threads."""
    rng = np.random.default_rng(seed)
    taken = _Taken(monkeypatch)
    pad, out_hw, h, w = _geometry(rng)
    nb = int(rng.integers(1, 4))
    c, n = int(rng.choice([16, 17, 24, 40, 64])), int(rng.choice([16, 19, 32, 64]))
    x = rng.integers(-128, 128, (nb, h, w, c)).astype(np.int8)
    wt = rng.integers(-40, 41, (3, 3, c, n)).astype(np.int8)  # moderate weights: the exact bound holds
    geo = {"stride": (1, 1), "dilation": (1, 1), "pad": pad, "out_hw": out_hw}
    applies = K._winograd_applies(wt.shape, (1, 1), (1, 1), 128, 40, nb * out_hw[0] * out_hw[1])
    assert applies == (c * n >= K.WINOGRAD_MIN_PRODUCT and nb * out_hw[0] * out_hw[1] >= K.WINOGRAD_MIN_PIXELS)
    assert K._winograd_exact(K._winograd_weights(wt), 128)
    with _parallel.threads_limit(int(rng.integers(1, 3))):
        want = _im2col(K.conv_accumulate, x, wt, **geo)
        before = taken.calls
        got = numpy_path(K.conv_accumulate, x, wt, **geo)
        assert taken.calls - before == applies
        # the weights' own sums may bound the sums more tightly than im2col's K * max|x| * max|w|
        assert int(np.abs(want[0]).max(initial=0)) <= got[1] <= want[1]
        assert np.array_equal(got[0], want[0])
        q, b = _sa8_case(rng, c, n, bool(seed % 2))
        bounds = (-128, 127) if seed % 3 else (int(q.out_zp), 127)
        for plat in PLATFORMS[seed % 2::2]:
            with use_platform(plat):
                want = _im2col(K.conv2d_hwcn, x, wt, b, q, **geo, bounds=bounds)
                got = numpy_path(K.conv2d_hwcn, x, wt, b, q, **geo, bounds=bounds)
            assert np.array_equal(got, want), plat


def test_winograd_is_taken_on_the_benchmark_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    """32x32x32 3x3 -> 64 'same' with full-range int8 weights and input (zero point -3, as in
    benchmarks/bench_vs_c.py): exact, taken, equal; on every platform the output stage's float32
    first pass is folded into the product (a _StagedStage finishes the sums)."""
    rng = np.random.default_rng(5)
    taken = _Taken(monkeypatch)
    staged = []
    real = K._StagedStage.__call__
    monkeypatch.setattr(K._StagedStage, "__call__", lambda self, *a, **k: staged.append(1) or real(self, *a, **k))
    x = rng.integers(-128, 128, (32, 32, 32)).astype(np.int8)
    wt = rng.integers(-128, 128, (3, 3, 32, 64)).astype(np.int8)
    q = K.Sa8Quant(-3, 16384, 20, 0, rng.integers(12000, 32000, 64), np.full(64, 20), 5, 20000, 14)
    b = rng.integers(-5000, 5000, 64).astype(np.int32)
    geo = {"stride": (1, 1), "dilation": (1, 1), "pad": (1, 1), "out_hw": (32, 32), "bounds": (-128, 127)}
    for plat in PLATFORMS:
        with use_platform(plat), _parallel.threads_limit(1):  # one block: one stage call
            got = numpy_path(K.conv2d_hwcn, x, wt, b, q, **geo)
            assert np.array_equal(got, _im2col(K.conv2d_hwcn, x, wt, b, q, **geo)), plat
    assert taken.calls == len(PLATFORMS)
    assert len(staged) == len(PLATFORMS)


@pytest.mark.parametrize("seed", range(8))
def test_folded_first_stage_equals_unfolded(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The output stage's first pass folded into the Winograd product (scaled weights, the
    additive at tile position (1, 1)) against the same product unfolded: large biases and every
    platform, odd output sizes, batches, two threads."""
    rng = np.random.default_rng(500 + seed)
    pad, out_hw, h, w = _geometry(rng)
    nb = int(rng.integers(1, 3))
    x = rng.integers(-128, 128, (nb, h + 8, w + 8, 32)).astype(np.int8)
    out_hw = (out_hw[0] + 8, out_hw[1] + 8)
    wt = rng.integers(-50, 51, (3, 3, 32, 64)).astype(np.int8)
    q, _ = _sa8_case(rng, 32, 64, bool(seed % 2))
    b = rng.integers(-(1 << 22), 1 << 22, 64).astype(np.int32)
    geo = {"stride": (1, 1), "dilation": (1, 1), "pad": pad, "out_hw": out_hw, "bounds": (-128, 127)}
    plat = PLATFORMS[seed % len(PLATFORMS)]
    with use_platform(plat), _parallel.threads_limit(1 + seed % 2):
        folded = numpy_path(K.conv2d_hwcn, x, wt, b, q, **geo)
        monkeypatch.setattr(K._OutputStage, "first_stage", lambda self, bound: None)
        plain = numpy_path(K.conv2d_hwcn, x, wt, b, q, **geo)
        assert np.array_equal(folded, plain)
        assert np.array_equal(plain, _im2col(K.conv2d_hwcn, x, wt, b, q, **geo))


@pytest.mark.parametrize("extreme", ["all max", "alternating", "one channel"])
def test_winograd_falls_back_beyond_the_exact_bound(extreme: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Weights whose transformed sums could round in float32 (every weight at -128, or +-128 in the
    pattern that maximises the middle tile terms, or one such output channel) take the im2col
    product; the results equal it (and the inputs at the container's extremes)."""
    taken = _Taken(monkeypatch)
    c, n = 64, 32
    assert K._winograd_applies((3, 3, c, n), (1, 1), (1, 1), 255, 128, 90)
    if extreme == "all max":
        wt = np.full((3, 3, c, n), -128, np.int8)
    else:
        sign = np.array([[1, 1, 1], [1, 1, 1], [1, 1, 1]]) if extreme == "one channel" else \
            np.array([[1, -1, 1], [-1, 1, -1], [1, -1, 1]])
        wt = np.zeros((3, 3, c, n), np.int8)
        wt[..., 3] = np.where(sign[..., None] > 0, 127, -128)
        if extreme == "alternating":
            wt[:] = wt[..., 3:4]
    assert not K._winograd_exact(K._winograd_weights(wt), 255)
    x = np.where(np.random.default_rng(1).integers(0, 2, (2, 10, 9, c)) > 0, 127, -128).astype(np.int8)
    q = K.Sa8Quant(-128, 16384, 20, 0, np.array([20000]), np.array([20]), 0, 20000, 8)
    b = np.arange(n, dtype=np.int32) * 1000
    geo = {"stride": (1, 1), "dilation": (1, 1), "pad": (1, 1), "out_hw": (10, 9)}
    want = _im2col(K.conv_accumulate, x.astype(np.int16) + 128, wt, **geo)
    got = numpy_path(K.conv_accumulate, x.astype(np.int16) + 128, wt, **geo)
    assert np.array_equal(got[0], want[0])
    got = numpy_path(K.conv2d_hwcn, x, wt, b, q, **geo, bounds=(-128, 127))
    assert np.array_equal(got, _im2col(K.conv2d_hwcn, x, wt, b, q, **geo, bounds=(-128, 127)))
    assert taken.calls == 0


def test_winograd_bound_is_the_largest_partial_sum() -> None:
    """The planned sums bound what the tiles can reach: inputs at +-x_bound with the signs of each
    transformed weight make a tile product sum meet ``4 x_bound sum_c |u|`` exactly."""
    rng = np.random.default_rng(3)
    wt = rng.integers(-128, 128, (3, 3, 16, 16)).astype(np.int8)
    wino = K._winograd_weights(wt)
    u = wino.u.reshape(4, 4, 16, 16).astype(np.float64)
    su = np.abs(u).sum(axis=2)
    assert wino.m_sum == max((su[0] + su[1] + su[2]).max(), (su[1] + su[2] + su[3]).max())
    # a middle tile entry (1, 1) takes 4 inputs with signs +-1: v = 4 * x_bound * sign(u) is reachable
    xb = 100
    v = 4 * xb * np.sign(u[1, 1, :, 0])
    assert float(np.dot(v, u[1, 1, :, 0])) == 4 * xb * su[1, 1, 0]


@pytest.mark.parametrize("seed", range(3))
def test_winograd_conv2d_matches_oracle(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The finished sa8 conv2d on the Winograd path against the element-by-element oracle."""
    rng = np.random.default_rng(100 + seed)
    taken = _Taken(monkeypatch)
    monkeypatch.setattr(K, "WINOGRAD_MIN_PRODUCT", 256)  # a small case for the Python oracle
    c, n = 16, 16
    pad, out_hw, h, w = (1, 1), (9, 8), 9, 8
    x = rng.integers(-128, 128, (h, w, c)).astype(np.int8)
    wt = rng.integers(-60, 61, (3, 3, c, n)).astype(np.int8)
    per_axis = bool(seed % 2)
    nw = n if per_axis else 1
    p = {"kind": "sa8", "in_zp": int(rng.integers(-128, 128)), "in_scale": int(rng.integers(8192, 32768)),
         "in_frac": 18, "w_scales": [int(v) for v in rng.integers(8192, 32768, nw)],
         "w_fracs": [int(v) for v in rng.integers(16, 20, nw)], "out_zp": int(rng.integers(-64, 64)),
         "out_scale": int(rng.integers(8192, 32768)), "out_frac": 12}
    q = K.Sa8Quant(p["in_zp"], p["in_scale"], p["in_frac"], 0, np.asarray(p["w_scales"]), np.asarray(p["w_fracs"]),
                   p["out_zp"], p["out_scale"], p["out_frac"])
    b = rng.integers(-(1 << 16), 1 << 16, n).astype(np.int32)
    bounds = (-128, 127) if seed != 1 else (int(p["out_zp"]), 127)
    plat = PLATFORMS[seed % len(PLATFORMS)]
    with use_platform(plat):
        got = numpy_path(K.conv2d_hwcn, x, wt, b, q, stride=(1, 1), dilation=(1, 1), pad=pad, out_hw=out_hw,
                         bounds=bounds)
    want = oracle.conv2d(x, wt, b, p, stride=(1, 1), dilation=(1, 1), pad=pad, out_hw=out_hw, groups=1,
                         depthwise=False, bounds=bounds, up=plat.round_up, full=plat.full_accu)
    assert taken.calls == 1
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", range(6))
def test_float32_chunks_equal_float64(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """An im2col product whose whole sums need float64 (K * 255 * 128 >= 2**24: input zero point
    -128, full-range weights) cut into float32 chunks equals the float64 product: sums (int32) and
    finished sa8 outputs, kernels 1x1 / 3x3 (Winograd off: its bound fails on such weights) / 2x3
    strided, in one block or several."""
    rng = np.random.default_rng(300 + seed)
    kh, kw, stride = [(3, 3, (1, 1)), (1, 1, (1, 1)), (2, 3, (2, 1))][seed % 3]
    c = int(rng.choice([520, 600])) if kh == 1 else int(rng.choice([90, 130]))
    n = int(rng.choice([8, 33]))
    h, w = int(rng.integers(kh, 9)), int(rng.integers(kw, 9))
    x = rng.integers(-128, 128, (int(rng.integers(1, 3)), h, w, c)).astype(np.int8)
    wt = np.where(rng.integers(0, 2, (kh, kw, c, n)) > 0, 127, -128).astype(np.int8)
    k = kh * kw * c
    assert k * 255 * 128 >= 1 << 24 and (1 << 24) // (255 * 128) >= K.F32_CHUNK_MIN
    out_hw = (K.out_size(h, kh, stride[0], 0, 0, 1), K.out_size(w, kw, stride[1], 0, 0, 1))
    geo = {"stride": stride, "dilation": (1, 1), "pad": (0, 0), "out_hw": out_hw}
    q = K.Sa8Quant(-128, 16384, 20, 0, rng.integers(12000, 32000, n), np.full(n, 20), 5, 20000, 14)
    b = rng.integers(-5000, 5000, n).astype(np.int32)
    with _parallel.threads_limit(int(rng.integers(1, 3))):
        got = numpy_path(K.conv_accumulate, x.astype(np.int16) + 128, wt, **geo)
        got_out = numpy_path(K.conv2d_hwcn, x, wt, b, q, **geo, bounds=(-128, 127))
        monkeypatch.setattr(K, "F32_CHUNK_MIN", 1 << 30)  # one float64 product
        want = numpy_path(K.conv_accumulate, x.astype(np.int16) + 128, wt, **geo)
        want_out = numpy_path(K.conv2d_hwcn, x, wt, b, q, **geo, bounds=(-128, 127))
    assert got[1] == want[1] and np.array_equal(got[0], want[0])
    assert np.array_equal(got_out, want_out)
    # the sums reach beyond one float32 chunk's exact range (the chunks matter)
    assert int(np.abs(want[0]).max()) >= 1 << 24 or k > (1 << 24) // (255 * 128)


def test_winograd_input_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The input transform runs in int16 (four inputs summed): inputs up to 8191 take Winograd,
    larger ones (whose tile values could wrap) im2col; both equal im2col on inputs at the bound."""
    taken = _Taken(monkeypatch)
    rng = np.random.default_rng(9)
    wt = rng.integers(-2, 3, (3, 3, 32, 64)).astype(np.int8)
    geo = {"stride": (1, 1), "dilation": (1, 1), "pad": (1, 1), "out_hw": (9, 9)}
    for xb in (8191, 8192, 16383):
        x = (np.where(rng.integers(0, 2, (1, 9, 9, 32)) > 0, xb, -xb)).astype(np.int16)
        x[0, ::2, ::2] = xb  # tiles of four equal extreme inputs
        before = taken.calls
        got = numpy_path(K.conv_accumulate, x, wt, **geo)
        assert (taken.calls - before == 1) == (xb < 1 << 13)
        assert np.array_equal(got[0], _im2col(K.conv_accumulate, x, wt, **geo)[0])

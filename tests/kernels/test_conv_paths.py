"""Fast paths of kernels.convolution against plain paths: row blocks, threads, batches, float GEMMs.

The plain reference here is written apart from the kernels: int64 sums tap by tap (``einsum`` on
zero-padded, centred inputs; the scatter definition for transpose convolutions), then the shared
output stage :func:`pymli.kernels.convolution.finish` with no bound (every wrap and saturation
applied). Every kernel call is made three ways -- one block on one thread, many tiny blocks on
two threads, and the default plan -- and with a batch axis, whose samples must equal the calls on
each sample alone. Weights zero points (release builds) are covered against the scalar oracle.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymli.arith.requant import relu_bounds
from pymli.config import EM, VPX, Platform, get_platform, use_platform
from pymli.formats import RoundMode
from pymli.kernels import _parallel as P
from pymli.kernels import convolution as K

from ..oracles import convolution as oracle

KINDS = ["sa8", "fx16", "fx16_fx8_fx8"]
BITS = {"sa8": (8, 8, 32), "fx16": (16, 16, 16), "fx16_fx8_fx8": (16, 8, 8)}
PLATFORMS = [VPX, EM, Platform(RoundMode.UP, True), Platform(RoundMode.CONVERGENT, True)]


# ------------------------------------------------------------------------------ execution plans
@contextlib.contextmanager
def plan(name: str) -> Iterator[None]:
    """'plain': one block on one thread; 'blocks': blocks of a few outputs on two threads; 'default'."""
    saved = P.BLOCK_BYTES, P.PARALLEL_WORK, P.ADAPT
    threads = {"plain": 1, "blocks": 2, "default": None}[name]
    try:
        if name == "plain":
            P.BLOCK_BYTES = 1 << 62
        elif name == "blocks":
            P.BLOCK_BYTES, P.PARALLEL_WORK, P.ADAPT = 5, 0, False  # always the pool
        with P.threads_limit(threads):
            yield
    finally:
        P.BLOCK_BYTES, P.PARALLEL_WORK, P.ADAPT = saved


PLANS = ["plain", "blocks", "default"]


# ------------------------------------------------------------------------------ plain references
def _naive_sums(xc: np.ndarray, w: np.ndarray, *, stride, dilation, pad, out_hw, groups: int) -> np.ndarray:
    """int64 sums of a grouped convolution of the centred (N, H, W, C) input, tap by tap."""
    nb, h, wd, c = xc.shape
    kh, kw, cg, n = w.shape
    ho, wo = out_hw
    (sh, sw), (dh, dw), (pt, pl) = stride, dilation, pad
    hp, wp = (ho - 1) * sh + (kh - 1) * dh + 1, (wo - 1) * sw + (kw - 1) * dw + 1
    big = np.zeros((nb, max(hp, pt + h), max(wp, pl + wd), c), np.int64)
    big[:, pt:pt + h, pl:pl + wd] = xc
    acc = np.zeros((nb, ho, wo, groups, n // groups), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            tap = big[:, ky * dh:ky * dh + (ho - 1) * sh + 1:sh, kx * dw:kx * dw + (wo - 1) * sw + 1:sw]
            wk = w[ky, kx].astype(np.int64).reshape(cg, groups, n // groups)
            acc += np.einsum("nhwgc,cgo->nhwgo", tap.reshape(nb, ho, wo, groups, cg), wk)
    return acc.reshape(nb, ho, wo, n)


def _naive_transpose_sums(xc: np.ndarray, w: np.ndarray, *, stride, pad, out_hw) -> np.ndarray:
    """int64 sums by the scatter definition ``out[iy * s + ky - pad] += x[iy] * w[ky]``."""
    nb, h, wd, _ = xc.shape
    kh, kw, _, n = w.shape
    (sh, sw), (pt, pl), (ho, wo) = stride, pad, out_hw
    full = np.zeros((nb, (h - 1) * sh + kh + ho + pt, (wd - 1) * sw + kw + wo + pl, n), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            full[:, ky:ky + (h - 1) * sh + 1:sh, kx:kx + (wd - 1) * sw + 1:sw] += np.einsum(
                "nhwc,co->nhwo", xc.astype(np.int64), w[ky, kx].astype(np.int64))
    return full[:, pt:pt + ho, pl:pl + wo]


# ------------------------------------------------------------------------------ random cases
def _values(rng: np.random.Generator, shape: tuple[int, ...], bits: int, style: str) -> np.ndarray:
    dt = {8: np.int8, 16: np.int16, 32: np.int32}[bits]
    info = np.iinfo(dt)
    if style == "min":
        return np.full(shape, info.min, dt)
    if style == "max":
        return np.full(shape, info.max, dt)
    lo, hi = (-3000, 3000) if bits == 32 else (int(info.min), int(info.max))
    return rng.integers(lo, hi, shape, endpoint=True).astype(dt)


def _quant(kind: str, n: int, rng: np.random.Generator, w_zp: int = 0) -> tuple[K.Quant, tuple[int, int], dict]:
    """(quant, relu bounds, oracle parameters) with outputs spread over the range (not all saturated)."""
    if kind == "sa8":
        nw = n if rng.integers(2) else 1
        in_frac = int(rng.integers(12, 24))
        ws = rng.integers(8192, 32767, nw)
        wf = int(rng.integers(12, 24)) + rng.integers(0, 2, nw)
        p = {"kind": "sa8", "in_zp": int(rng.integers(-128, 128)), "in_scale": int(rng.integers(8192, 32767)),
             "in_frac": in_frac, "w_scales": ws.tolist(), "w_fracs": wf.tolist(), "w_zp": w_zp,
             "out_zp": int(rng.integers(-64, 64)), "out_scale": int(rng.integers(8192, 32767)),
             "out_frac": max(-128, min(127, in_frac + int(wf[0]) - int(rng.integers(16, 27))))}
        q = K.Sa8Quant(p["in_zp"], p["in_scale"], p["in_frac"], w_zp, ws, wf, p["out_zp"], p["out_scale"],
                       p["out_frac"])
        relu = int(rng.integers(4))
        return q, relu_bounds(relu, 8, zero_point=p["out_zp"], scale=p["out_scale"], frac_bits=p["out_frac"]), p
    wbits = BITS[kind][1]
    in_frac, w_frac = int(rng.integers(8, 16)), int(rng.integers(wbits // 2, wbits))
    out_frac = max(0, in_frac + w_frac - int(rng.integers(12, 21)))
    acc_bits = 40 if kind == "fx16" else 32
    p = {"kind": "fx", "in_frac": in_frac, "w_frac": w_frac, "b_frac": int(rng.integers(0, in_frac + w_frac + 1)),
         "out_frac": out_frac, "acc_bits": acc_bits, "out_bits": 16}
    q = K.FxQuant(in_frac, w_frac, p["b_frac"], out_frac, acc_bits, 16)
    return q, relu_bounds(int(rng.integers(4)), 16, frac_bits=out_frac), p


@st.composite
def conv_cases(draw, transpose: bool = False):  # type: ignore[no-untyped-def]
    """(kind, op, batch or None, x shape, w shape, geometry, groups, value style, seed)."""
    kind = draw(st.sampled_from(KINDS))
    batch = draw(st.sampled_from([None, 1, 2, 3]))
    style = draw(st.sampled_from(["random"] * 4 + ["min", "max"]))
    seed = draw(st.integers(0, 2**32 - 1))
    if transpose:
        kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        s = (draw(st.integers(1, kh)), draw(st.integers(1, kw)))
        h, wd = draw(st.integers(1, 6)), draw(st.integers(1, 6))
        pt, pb = draw(st.integers(0, kh - 1)), draw(st.integers(0, kh - 1))
        pl, pr = draw(st.integers(0, kw - 1)), draw(st.integers(0, kw - 1))
        ho, wo = K.transpose_out_size(h, kh, s[0], pt, pb), K.transpose_out_size(wd, kw, s[1], pl, pr)
        c, n = draw(st.integers(1, 5)), draw(st.integers(1, 5))
        geo = {"stride": s, "pad": (pt, pl), "out_hw": (ho, wo)}
        return kind, "transpose", batch, (h, wd, c), (kh, kw, c, n), geo, 1, style, seed
    op = draw(st.sampled_from(["conv", "group", "depthwise"]))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    ekh, ekw = (kh - 1) * d[0] + 1, (kw - 1) * d[1] + 1
    pt, pb = draw(st.integers(0, ekh - 1)), draw(st.integers(0, ekh - 1))
    pl, pr = draw(st.integers(0, ekw - 1)), draw(st.integers(0, ekw - 1))
    h = draw(st.integers(max(1, ekh - pt - pb), 11))
    wd = draw(st.integers(max(1, ekw - pl - pr), 11))
    ho, wo = K.out_size(h, kh, s[0], pt, pb, d[0]), K.out_size(wd, kw, s[1], pl, pr, d[1])
    if op == "depthwise":
        c = n = groups = draw(st.integers(1, 7))
        wshape = (kh, kw, 1, c)
    else:
        groups = draw(st.integers(2, 3)) if op == "group" else 1
        cg, ng = draw(st.integers(1, 5)), draw(st.integers(1, 5))
        c, n = cg * groups, ng * groups
        wshape = (kh, kw, cg, n)
    geo = {"stride": s, "dilation": d, "pad": (pt, pl), "out_hw": (ho, wo)}
    return kind, op, batch, (h, wd, c), wshape, geo, groups, style, seed


def _operands(case, w_zp: int = 0):  # type: ignore[no-untyped-def]
    kind, _op, batch, xshape, wshape, _geo, _groups, style, seed = case
    rng = np.random.default_rng(seed)
    xbits, wbits, bbits = BITS[kind]
    shape = xshape if batch is None else (batch, *xshape)
    x = _values(rng, shape, xbits, style)
    w = _values(rng, wshape, wbits, style)
    b = _values(rng, (wshape[3],), bbits, "random")
    q, bounds, p = _quant(kind, wshape[3], rng, w_zp)
    return x, w, b, q, bounds, p


def _kernel(op: str, x, w, b, q, bounds, geo, groups):  # type: ignore[no-untyped-def]
    if op == "depthwise":
        return K.depthwise_conv2d_hwcn(x, w, b, q, bounds=bounds, **geo)
    if op == "group":
        return K.group_conv2d_hwcn(x, w, b, q, bounds=bounds, **geo)
    if op == "transpose":
        return K.transpose_conv2d_hwcn(x, w, b, q, bounds=bounds, **geo)
    return K.conv2d_hwcn(x, w, b, q, bounds=bounds, groups=groups, **geo)


def _reference(op: str, x, w, b, q, bounds, geo, groups):  # type: ignore[no-untyped-def]
    """Plain int64 sums + the output stage with every wrap and saturation applied."""
    x4 = x if x.ndim == 4 else x[None]
    zp = q.in_zp if isinstance(q, K.Sa8Quant) else 0
    xc = x4.astype(np.int64) - zp
    if op == "transpose":
        acc = _naive_transpose_sums(xc, w, **geo)
    else:
        acc = _naive_sums(xc, w, groups=groups, **geo)
    out = K.finish(acc, b, q, bounds)
    return out if x.ndim == 4 else out[0]


# ------------------------------------------------------------------------------ tests
def _check_case(case, plat: Platform) -> None:  # type: ignore[no-untyped-def]
    kind, op, batch, _xs, _ws, geo, groups, _style, _seed = case
    if min(geo["out_hw"]) < 1:
        return  # no output
    x, w, b, q, bounds, _p = _operands(case)
    with use_platform(plat):
        want = _reference(op, x, w, b, q, bounds, geo, groups)
        for name in PLANS:
            with plan(name):
                got = _kernel(op, x, w, b, q, bounds, geo, groups)
            assert got.shape == want.shape, (name, got.shape, want.shape)
            assert np.array_equal(got, want), name
        if batch is not None:
            with plan("plain"):
                alone = np.stack([_kernel(op, xi, w, b, q, bounds, geo, groups) for xi in x])
            assert np.array_equal(alone, want)


@settings(max_examples=120, deadline=None)
@given(conv_cases(), st.sampled_from(PLATFORMS))
def test_conv_paths_equal_plain_int64(case, plat) -> None:
    _check_case(case, plat)


@settings(max_examples=50, deadline=None)
@given(conv_cases(transpose=True), st.sampled_from(PLATFORMS))
def test_transpose_paths_equal_plain_int64(case, plat) -> None:
    _check_case(case, plat)


@settings(max_examples=30, deadline=None)
@given(conv_cases(), st.integers(-20, 20).filter(bool), st.sampled_from(PLATFORMS))
def test_weights_zero_point_paths_and_batch(case, w_zp, plat) -> None:
    """Release-build weights zero points: every plan and the batch axis against the scalar oracle."""
    kind, op, batch, xs, ws, geo, groups, style, seed = case
    case = ("sa8", op, batch if batch is not None else 2, xs, ws, geo, groups, style, seed)
    if min(geo["out_hw"]) < 1:
        return
    x, w, b, q, bounds, p = _operands(case, w_zp)
    with use_platform(plat):
        want = np.stack([oracle.conv2d(xi, w, b, p, groups=groups, depthwise=op == "depthwise", bounds=bounds,
                                       up=plat.round_up, full=plat.full_accu, **geo) for xi in x])
        for name in PLANS:
            with plan(name):
                got = _kernel(op, x, w, b, q, bounds, geo, groups)
                assert np.array_equal(got, want), name
                assert np.array_equal(_kernel(op, x[0], w, b, q, bounds, geo, groups), want[0]), name


@pytest.mark.parametrize("kind", ["sa8", "fx16_fx8_fx8"])
@pytest.mark.parametrize("name", PLANS)
def test_accumulator_wraps_at_32_bits_in_every_plan(kind: str, name: str) -> None:
    """Sums beyond int32 (float64 GEMM) wrap as the C int32 accumulator does, block by block."""
    c = 150_000 if kind == "sa8" else 640  # 150000 * 128 * 128 and 9 * 640 * 32768 * 128 exceed 2**31
    k = 1 if kind == "sa8" else 3
    rng = np.random.default_rng(5)
    xbits, wbits, bbits = BITS[kind]
    x = _values(rng, (2, 3, 3, c), xbits, "min")
    x[1] = _values(rng, (3, 3, c), xbits, "random")
    w = np.concatenate([_values(rng, (k, k, c, 1), wbits, "min"), _values(rng, (k, k, c, 1), wbits, "random")], axis=3)
    b = _values(rng, (2,), bbits, "random")
    q, bounds, _ = _quant(kind, 2, rng)
    if kind == "sa8":
        q = dataclasses.replace(q, in_zp=0)  # x - zp = -128 everywhere in sample 0
    geo = {"stride": (1, 1), "dilation": (1, 1), "pad": (k // 2, k // 2), "out_hw": (3, 3)}
    for plat in PLATFORMS:
        with use_platform(plat):
            want = _reference("conv", x, w, b, q, bounds, geo, 1)
            with plan(name):
                got = K.conv2d_hwcn(x, w, b, q, bounds=bounds, **geo)
            assert np.array_equal(got, want)
    acc = _naive_sums(x.astype(np.int64) - (q.in_zp if kind == "sa8" else 0), w, groups=1, **geo)
    assert np.abs(acc).max() >= 1 << 31  # the case does wrap


def test_results_do_not_alias_scratch() -> None:
    rng = np.random.default_rng(3)
    x1, x2 = _values(rng, (2, 9, 9, 8), 8, "random"), _values(rng, (2, 9, 9, 8), 8, "random")
    w = _values(rng, (3, 3, 8, 6), 8, "random")
    wd = _values(rng, (3, 3, 1, 8), 8, "random")
    q, bounds, _ = _quant("sa8", 8, rng)
    q6, bounds6, _ = _quant("sa8", 6, rng)
    geo = {"stride": (1, 1), "dilation": (1, 1), "pad": (1, 1), "out_hw": (9, 9)}
    for name in PLANS:
        with plan(name):
            r1 = K.conv2d_hwcn(x1, w, np.zeros(6, np.int32), q6, bounds=bounds6, **geo)
            d1 = K.depthwise_conv2d_hwcn(x1, wd, np.zeros(8, np.int32), q, bounds=bounds, **geo)
            s1 = K.depthwise_accumulate(x1, wd, **geo)[0]
            keep = r1.copy(), d1.copy(), s1.copy()
            K.conv2d_hwcn(x2, w, np.zeros(6, np.int32), q6, bounds=bounds6, **geo)
            K.depthwise_conv2d_hwcn(x2, wd, np.zeros(8, np.int32), q, bounds=bounds, **geo)
            K.depthwise_accumulate(x2, wd, **geo)
        assert all(np.array_equal(a, k) for a, k in zip((r1, d1, s1), keep))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.sampled_from([(1, 1), (2, 1), (1, 2), (2, 2)]), st.integers(0, 2**32 - 1))
def test_accumulate_functions_take_a_batch(n, stride, seed) -> None:
    rng = np.random.default_rng(seed)
    x = _values(rng, (n, 7, 6, 4), 16, "random")
    w = _values(rng, (3, 2, 4, 3), 16, "random")
    wd = _values(rng, (3, 2, 1, 4), 16, "random")
    geo = {"stride": stride, "dilation": (1, 1), "pad": (1, 0),
           "out_hw": (K.out_size(7, 3, stride[0], 1, 1, 1), K.out_size(6, 2, stride[1], 0, 0, 1))}
    acc, bound = K.conv_accumulate(x, w, **geo)
    dacc, dbound = K.depthwise_accumulate(x, wd, **geo)
    tacc = K.transpose_accumulate(x, w, stride=stride, pad=(1, 0), out_hw=(7, 6))[0]
    for i in range(n):
        assert np.array_equal(acc[i], K.conv_accumulate(x[i], w, **geo)[0])
        assert np.array_equal(dacc[i], K.depthwise_accumulate(x[i], wd, **geo)[0])
        assert np.array_equal(tacc[i], K.transpose_accumulate(x[i], w, stride=stride, pad=(1, 0), out_hw=(7, 6))[0])
    assert np.array_equal(acc, _naive_sums(x.astype(np.int64), w, groups=1, **geo))
    assert np.abs(acc).max() <= bound and np.abs(dacc).max() <= dbound


# ------------------------------------------------------------------------------ the pool
@settings(max_examples=100, deadline=None)
@given(st.integers(1, 5), st.integers(1, 9), st.integers(1, 20))
def test_row_blocks_partition_the_output(n, rows, parts) -> None:
    blocks = P.row_blocks(n, rows, parts)
    seen = np.zeros((n, rows), int)
    for n0, n1, r0, r1 in blocks:
        assert n0 < n1 and r0 < r1
        assert n1 - n0 == 1 or (r0, r1) == (0, rows)  # a block never spans samples partially
        seen[n0:n1, r0:r1] += 1
    assert (seen == 1).all()
    assert len(blocks) <= max(1, parts) or len(blocks) <= n * rows


def test_parts_for_memory_and_threads() -> None:
    with P.threads_limit(1):
        assert P.parts_for(1 << 30, 10 * P.BLOCK_BYTES, 1000) == 10  # memory alone
        assert P.parts_for(1 << 30, 10 * P.BLOCK_BYTES + 1, 1000) == 11
        assert P.parts_for(1 << 30, 10, 1000) == 1
    with P.threads_limit(2):
        assert P.parts_for(P.PARALLEL_WORK, 10, 1000) == 2 * P.PARTS_PER_THREAD
        assert P.parts_for(P.PARALLEL_WORK - 1, 10, 1000) == 1  # small call: one thread
        assert P.parts_for(P.PARALLEL_WORK, 10, 3) == 3  # never more blocks than rows


def test_run_parts_uses_two_threads_and_keeps_order() -> None:
    barrier = threading.Barrier(2, timeout=30)
    seen: set[int] = set()

    def fn(i: int) -> int:
        seen.add(threading.get_ident())
        if i < 2:
            barrier.wait()  # blocks 0 and 1 must run at the same time: on two threads
        return i * i

    with P.threads_limit(2):
        assert P.run_parts(fn, 7) == [i * i for i in range(7)]
    assert len(seen) == 2


def test_run_parts_nested_and_single_thread_run_inline() -> None:
    me = threading.get_ident()
    with P.threads_limit(1):
        assert P.run_parts(lambda i: threading.get_ident() == me, 4) == [True] * 4
    with P.threads_limit(2):
        inner = P.run_parts(lambda i: P.run_parts(lambda j: threading.get_ident(), 3), 4)
    assert all(len(set(r)) == 1 for r in inner)  # each nested call stayed on its block's thread


@pytest.mark.parametrize("bad", [0, 1, 5])
def test_run_parts_raises_a_blocks_exception(bad: int) -> None:
    def fn(i: int) -> int:
        if i == bad:
            raise ValueError(f"block {bad}")
        time.sleep(0.002)
        return i

    with P.threads_limit(2), pytest.raises(ValueError, match=f"block {bad}"):
        P.run_parts(fn, 6)


def test_run_parts_does_not_wait_for_a_stalled_worker() -> None:
    """A worker that gets no core: the caller computes its block itself and drops the late result."""
    main = threading.get_ident()
    release = threading.Event()
    stalled: list[int] = []
    abandoned: list[bool] = []

    worker_in = threading.Event()

    def fn(i: int) -> int:
        if threading.get_ident() != main and not stalled:
            stalled.append(i)
            worker_in.set()
            release.wait(30)  # this worker "gets no core" until released
            return -1  # a late result that must be dropped
        worker_in.wait(30)  # the worker has claimed a block before the caller runs out of blocks
        return i * 10

    try:
        with P.threads_limit(2):
            t0 = time.perf_counter()
            got = P.run_parts(fn, 6, abandon=lambda: abandoned.append(True))
            took = time.perf_counter() - t0
    finally:
        release.set()
    assert got == [i * 10 for i in range(6)]
    assert took < 10  # did not wait for the release (30 s)
    assert stalled and abandoned == [True]


def test_pool_pays_follows_the_faster_way_and_explores() -> None:
    """A new site tries the pool, then one thread; then the faster way, except every
    ADAPT_EXPLORE-th call; a faster time counts at once, slower ones step by step (one stall
    does not hide a way for long); ADAPT off always takes the pool."""
    site = ("test site", object())
    assert P.pool_pays(site)
    P.record_time(site, True, 2.0)
    assert not P.pool_pays(site)
    P.record_time(site, False, 1.0)
    ways = [P.pool_pays(site) for _ in range(4 * P.ADAPT_EXPLORE)]
    assert ways.count(True) == 4  # one-thread site: the pool once in ADAPT_EXPLORE calls
    P.record_time(site, True, 0.5)  # the pool became faster: counted at once
    ways = [P.pool_pays(site) for _ in range(4 * P.ADAPT_EXPLORE)]
    assert ways.count(False) == 4
    P.record_time(site, True, 100.0)  # one stall: counted as twice the recent time
    assert P.pool_pays(site)  # 0.625 s on the pool, still below 1 s on one thread
    for _ in range(3):
        P.record_time(site, True, 3.0)  # a lasting slowdown is followed in a few calls
    assert not P.pool_pays(site)
    saved = P.ADAPT
    try:
        P.ADAPT = False
        P.record_time(site, True, 9.0)
        assert all(P.pool_pays(site) for _ in range(2 * P.ADAPT_EXPLORE))
    finally:
        P.ADAPT = saved


def test_large_calls_take_the_faster_way_with_equal_results(monkeypatch) -> None:
    """A conv2d large enough for the pool: its site's calls alternate between the two ways as
    their times say, each time with the one-block result."""
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (20, 20, 16), dtype=np.int8)
    w = rng.integers(-128, 128, (3, 3, 16, 48), dtype=np.int8)
    bias = rng.integers(-5000, 5000, 48)
    q = K.Sa8Quant(-3, 16384, 20, 0, np.full(48, 16384), np.full(48, 20), 5, 20000, 14)
    geo = {"pad": (1, 1), "out_hw": (20, 20), "bounds": (-128, 127)}
    with plan("plain"):
        want = K.conv2d_hwcn(x, w, bias, q, **geo)
    ways: list[bool] = []
    real = P.record_time
    monkeypatch.setattr(P, "PARALLEL_WORK", 1 << 10)
    monkeypatch.setattr(K, "record_time", lambda site, pooled, s: (ways.append(pooled), real(site, pooled, s)))
    with P.threads_limit(2):
        for _ in range(3 * P.ADAPT_EXPLORE):
            assert np.array_equal(K.conv2d_hwcn(x, w, bias, q, **geo), want)
    assert ways[:2] == [True, False]  # the pool, then one thread, then the faster (and the other at times)
    assert ways.count(True) >= 2 and ways.count(False) >= 2


def test_thread_settings() -> None:
    with pytest.raises(ValueError):
        P.set_threads(0)
    before = P.get_threads()
    with P.threads_limit(3):
        assert P.get_threads() == 3
    assert P.get_threads() == before


def test_workers_see_the_callers_platform() -> None:
    barrier = threading.Barrier(2, timeout=30)

    def fn(i: int) -> Platform:
        barrier.wait()  # two blocks at once: one of them on a worker
        return get_platform()

    for plat in PLATFORMS:
        with use_platform(plat), P.threads_limit(2):
            assert P.run_parts(fn, 2) == [plat, plat]


def test_forgotten_scratch_is_not_handed_out_again() -> None:
    x = np.ones((1, 4, 4, 2), np.int8)
    a = K._padded_scratch(x, 1, 1, 6, 6, np.dtype(np.float32))
    assert K._padded_scratch(x, 1, 1, 6, 6, np.dtype(np.float32)) is a  # reused while nothing reads it
    K._scratch_forget(a)
    b = K._padded_scratch(x, 1, 1, 6, 6, np.dtype(np.float32))
    assert b is not a and np.array_equal(a, b)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 52), st.integers(-20, 30), st.sampled_from([8, 16]), st.integers(0, 3),
       st.sampled_from(PLATFORMS), st.integers(0, 2**32 - 1))
def test_float_output_stage_equals_integer_one(shift, bias_shift, out_bits, relu, plat, seed) -> None:
    """fx16's output stage on float64 sums (see _OutputStage) against finish on the int64 sums."""
    rng = np.random.default_rng(seed)
    in_frac, w_frac = 15, 15
    q = K.FxQuant(in_frac, w_frac, in_frac + w_frac - bias_shift, in_frac + w_frac - shift, 40, out_bits)
    bounds = relu_bounds(relu, out_bits, frac_bits=max(0, q.out_frac))
    bias = rng.integers(-32768, 32768, 6)
    stage = K._OutputStage(bias, q, bounds)
    limit = stage.float_limit
    assert limit > 0  # the float path applies
    bound = int(rng.integers(1, limit)) if rng.integers(2) else limit - 1
    acc = rng.integers(-bound, bound, (5, 6), endpoint=True)
    acc[0, :2] = bound, -bound
    half = (1 << shift) >> 1
    if shift:  # exact ties and their neighbours
        acc[1] = (rng.integers(-(bound >> shift), (bound >> shift) + 1, 6) << shift) + half
        acc[2] = np.clip(acc[1] - 1, -bound, bound)
        acc[1] = np.clip(acc[1], -bound, bound)
    with use_platform(plat):
        got = stage(acc.astype(np.float64), bound)
        want = K.finish(acc, bias, q, bounds, bound)
    assert got.dtype == stage.dtype
    assert np.array_equal(got, want)


def test_large_scratch_is_not_kept() -> None:
    big = (K._SCRATCH_MAX_BYTES // 4 + 1,)
    assert K._scratch(("test big", big, np.float32)) is not K._scratch(("test big", big, np.float32))
    small = (16,)
    assert K._scratch(("test small", small, np.float32)) is K._scratch(("test small", small, np.float32))


# ------------------------------------------------------------------------------ MobileNet-class paths
@contextlib.contextmanager
def row_taps(outputs: int) -> Iterator[None]:
    """Depthwise convolutions of at least ``outputs`` outputs (and few channels) take the row multiply-adds."""
    saved = K.FLAT_TAPS_OUTPUTS
    K.FLAT_TAPS_OUTPUTS = outputs
    try:
        yield
    finally:
        K.FLAT_TAPS_OUTPUTS = saved


@settings(max_examples=80, deadline=None)
@given(conv_cases().filter(lambda c: c[1] == "depthwise"), st.sampled_from(PLATFORMS))
def test_depthwise_row_taps_equal_plain_int64(case, plat) -> None:
    """Every small depthwise case through the row multiply-adds (any stride, dilation, padding, batch)."""
    with row_taps(0):
        _check_case(case, plat)


@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: f"{p.round_mode.name}-{p.full_accu}")
@pytest.mark.parametrize(("h", "c", "k", "s", "op"), [
    (48, 8, 3, 1, "depthwise"), (47, 16, 3, 2, "depthwise"), (24, 32, 3, 2, "depthwise"), (12, 64, 3, 1, "depthwise"),
    (6, 128, 3, 1, "depthwise"), (48, 8, 1, 1, "conv"), (12, 64, 1, 1, "conv"), (25, 3, 3, 2, "conv"),
    (32, 32, 3, 1, "conv")])
def test_mobilenet_layers_equal_plain_int64(h: int, c: int, k: int, s: int, op: str, plat: Platform) -> None:
    """MobileNet-sized layers (row multiply-adds, float64 sa8 output stage, blocks) on a batch of 2."""
    rng = np.random.default_rng(h * 1000 + c * 10 + s)
    n = c if op == "depthwise" else 2 * c
    ho = -(-h // s)
    pad = max(0, ((ho - 1) * s + k - h) // 2)
    geo = {"stride": (s, s), "dilation": (1, 1), "pad": (pad, pad), "out_hw": (ho, ho)}
    x = rng.integers(-128, 128, (2, h, h, c)).astype(np.int8)
    w = rng.integers(-127, 128, (k, k, 1, c) if op == "depthwise" else (k, k, c, n)).astype(np.int8)
    b = rng.integers(-(1 << 14), 1 << 14, n).astype(np.int32)
    taps = k * k * (1 if op == "depthwise" else c)
    q = K.Sa8Quant(int(rng.integers(-128, 128)), 20000, 19, 0, rng.integers(8192, 32767, n), np.full(n, 20),
                   int(rng.integers(-20, 20)), 25000, 18 - int(np.log2(taps)) // 2)
    bounds = relu_bounds(h % 2, 8, zero_point=q.out_zp, scale=q.out_scale, frac_bits=q.out_frac)
    groups = c if op == "depthwise" else 1
    with use_platform(plat):
        want = _reference(op, x, w, b, q, bounds, geo, groups)
        assert 10 < len(np.unique(want))  # outputs spread over the range, not all clamped
        for name in PLANS:
            with plan(name):
                assert np.array_equal(_kernel(op, x, w, b, q, bounds, geo, groups), want), name
        if not plat.full_accu:  # the float64 output stage applies to these parameters
            assert q.float_cast(b, bounds, 255 * 127 * taps) is not None


@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: f"{p.round_mode.name}-{p.full_accu}")
@pytest.mark.parametrize("style", ["max", "min", "mixed"])
def test_float32_output_stage_at_extreme_sums(plat: Platform, style: str) -> None:
    """conv2d sa8 with inputs at the container's ends, weights of one sign per output channel and
    biases up to 2**20: sums near the float32 output stage's limit (which the call's plan takes),
    every plan equal to the plain int64 path, odd shape, batch of 2."""
    rng = np.random.default_rng(len(style))
    c, n, h = 32, 24, 9
    x = _values(rng, (2, h, h + 2, c), 8, style if style != "mixed" else "any")
    if style == "mixed":
        x = np.where(rng.integers(0, 2, x.shape) == 1, 127, -128).astype(np.int8)
    sign = np.where(np.arange(n) % 2 == 0, 1, -1)
    w = (np.where(rng.integers(0, 4, (3, 3, c, n)) > 0, -128, 127) * sign).clip(-128, 127).astype(np.int8)
    b = rng.integers(-(1 << 20), 1 << 20, n).astype(np.int32)
    q = K.Sa8Quant(-3, 20000, 19, 0, rng.integers(8192, 32767, n), np.full(n, 20), 3, 25000, 12)
    geo = {"stride": (1, 1), "dilation": (1, 1), "pad": (1, 1), "out_hw": (h, h + 2)}
    bounds = (-128, 127)
    with use_platform(plat):
        stage = K._OutputStage(b, q, bounds)
        plan_ = stage.sa8_plan(9 * c * K.container_bound(x, K._eff_offset(q.in_zp)) * 128)
        if not plat.full_accu:  # FULL_ACCU's 31-bit multipliers leave float64 at these sums: integer path
            assert plan_ is not None and plan_.f32 is not None
        want = _reference("conv", x, w, b, q, bounds, geo, 1)
        assert len(np.unique(want)) > 2
        for name in PLANS:
            with plan(name):
                assert np.array_equal(K.conv2d_hwcn(x, w, b, q, **geo, bounds=bounds), want), name

"""Fast paths of the memory-bound kernels against their plain models (seeded, many ties).

argmax over long slices (the heap-of-3 rule of ``_top3_of_max`` and the exact screen with the
heap replay for the other slices, the closed form of the heap of 3 ``_top3_events``) against the
element-by-element heap replay; the int32 fx16 leaky ReLU against
the int64 arithmetic of :mod:`pymli.arith.activation`; softmax's float64 reciprocal and
l2_normalize's float64 factors against the integer paths.
"""

from __future__ import annotations

import numpy as np
import pytest

from pymli import EM, VPX, use_platform
from pymli.arith import activation as act
from pymli.arith.lut import create_lut
from pymli.kernels import activation as KA
from pymli.kernels import diverse as K
from pymli.kernels import _jit
from pymli.kernels import transform as T


def _tied_int8(rng: np.random.Generator, n: int, s: int) -> np.ndarray:
    """(n, s) int8 values with ties at the top: few distinct values, maxima often among the seeds."""
    hi = int(rng.choice([1, 2, 3, 10, 100, 127]))
    x = rng.integers(-hi, hi + 1, (n, s)).astype(np.int8)
    mode = rng.random()
    if mode < 0.3:
        x[rng.integers(0, 3, 2), :] = hi
    elif mode < 0.5:
        x[:3, rng.integers(0, s)] = hi
    elif mode < 0.6:
        x[:, rng.integers(0, s)] = -128  # a constant slice
    return x


@pytest.mark.parametrize("seed", range(6))
def test_argmax_long_slices_equal_heap_replay(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n, s = int(rng.integers(190, 420)), int(rng.integers(2, 6))
        k = int(rng.choice([2, 3, 3, 3, 4, 5]))
        x = _tied_int8(rng, n, s)
        if rng.random() < 0.3:
            x = (x.astype(np.int16) * int(rng.choice([1, 257]))).astype(np.int16)
        assert np.array_equal(K.argmax(x, 1, k), K.argmax_reference(x, 1, k))


@pytest.mark.parametrize("seed", range(3))
def test_argmax_long_slices_any_axis_and_strides(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    for _ in range(12):
        shape = (int(rng.integers(7, 14)), int(rng.integers(7, 14)), int(rng.integers(2, 5)))
        x = rng.integers(-3, 4, shape).astype(np.int8)
        axis = int(rng.integers(0, 3))
        strides = [shape[1] * (shape[2] + 2), shape[2] + 2, 1]
        k = int(rng.choice([3, 4]))
        assert np.array_equal(K.argmax(x, axis, k, strides), K.argmax_reference(x, axis, k, strides))


def test_top3_rule_is_used_and_exact() -> None:
    """The heap-of-3 rule settles most int8 slices of random data, each as the replay does."""
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (4096, 8)).astype(np.int8)
    x[[0, 2], 0] = 127  # maxima among the seeds
    x[1, 1] = 127
    x[:3, 2] = 127  # three: not for this rule
    idx, ok = K._top3_of_max(x)
    assert ok.sum() >= 5 and ok[0] and ok[1] and not ok[2]
    ref = K.argmax_reference(x, 1, 3)  # offsets: position * 8 + slice
    assert np.array_equal((idx * 8 + np.arange(8)[:, None])[ok], ref[ok])
    assert np.array_equal(K.argmax(x, 1, 3), ref)


def test_argmax_fallback_slices_equal_heap_replay() -> None:
    """Long int16 slices whose top values tie go through the exact screen and the replay."""
    rng = np.random.default_rng(11)
    x = rng.integers(-300, 300, (1024, 6)).astype(np.int16)
    for k in (3, 4, 5):
        assert np.array_equal(K.argmax(x, 1, k), K.argmax_reference(x, 1, k))


@pytest.mark.parametrize("platform", [VPX, EM], ids=["vpx", "em"])
def test_leaky_fx16_int32_path_equals_arith(platform) -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(-32768, 32768, (65, 33, 31)).astype(np.int16)  # > 65536 values: the int32 path
    x.reshape(-1)[:6] = [-32768, 32767, 0, -1, 1, -2]
    with use_platform(platform):
        for slope in (3277, -3277, 32767, -32768, 1, 0, -1, 16384, -16385, 12345):
            for shift in (0, 1, 5, 15, 16, 25, 30, 31, 40, -3):
                for normalise in (True, False):
                    s, sh = act.leaky_fx_slope(slope, shift, 16, normalise)
                    ref = act.leaky_relu_fx(x, s, sh, 16)
                    got = KA.leaky_relu_fx(x, slope, shift, normalise=normalise)
                    assert got.dtype == np.int16
                    assert np.array_equal(got, ref), (slope, shift, normalise)


@pytest.mark.parametrize("platform", [VPX, EM], ids=["vpx", "em"])
def test_recip_of_sum_float64_equals_integer_path(platform, monkeypatch) -> None:
    rng = np.random.default_rng(9)
    tot = np.concatenate([
        rng.integers(1, 1 << 31, 3000), rng.integers(1, 1 << 16, 3000), np.arange(1, 3000),
        1 << np.arange(31), (1 << np.arange(1, 31)) - 1, (1 << np.arange(1, 31)) + 1,
        [2**31 - 1, 2**31 - 2**15, 2**31 - 2**15 - 1, 3 << 14, (3 << 14) + 1],
        # ties of the rounding shift: odd multiples of half an LSB
        (2 * rng.integers(1 << 14, 1 << 15, 2000) + 1) << rng.integers(0, 16, 2000),
    ]).astype(np.int64)
    tot = tot[(tot > 0) & (tot < 1 << 31)]
    with use_platform(platform):
        fast = T._recip_of_sum_f64(tot)
        monkeypatch.setattr(T, "_RECIP_F64_MIN", 1 << 62)
        ref = T._recip_of_sum(tot, 16)
    assert np.array_equal(fast[0], ref[0]) and np.array_equal(fast[1], ref[1])


@pytest.mark.parametrize("platform", [VPX, EM], ids=["vpx", "em"])
def test_l2_factors_float64_equal_integer_path(platform) -> None:
    lut = create_lut("l2_normalize")
    rng = np.random.default_rng(13)
    tot = np.concatenate([
        rng.integers(0, 1 << 40, 3000), rng.integers(0, 1 << 16, 3000), np.arange(3000),
        1 << np.arange(53), (1 << np.arange(1, 53)) - 1,
        (2 * rng.integers(1 << 13, 1 << 15, 2000) + 1) << rng.integers(0, 36, 2000),  # rounding ties
    ]).astype(np.int64)
    tot = tot[tot < 1 << 53]
    wide = np.append(tot, 1 << 60)  # a sum beyond float64's integers: the integer path for all
    with use_platform(platform):
        inv, shift = T._l2_factors(tot, lut, 15)
        ref_inv, ref_shift = T._l2_factors(wide, lut, 15)
    assert np.array_equal(inv, ref_inv[:-1]) and np.array_equal(shift, ref_shift[:-1])


@pytest.fixture
def numpy_only():
    """The optional JIT switched off for the test (the NumPy paths under test)."""
    prev = _jit.set_enabled(False)
    yield
    _jit.set_enabled(prev)


@pytest.mark.usefixtures("numpy_only")
@pytest.mark.parametrize("platform", [VPX, EM], ids=["round_up", "convergent"])
@pytest.mark.parametrize("seed", range(12))
def test_l2_rows_path_equals_reference(platform, seed) -> None:
    """``transform._l2_rows`` (the contiguous last-axis / whole-tensor path: int32 for one int16 row,
    float64 for several, float32 for int8) is taken and equals the plain reference, with rows of one
    value (saturation), zero rows, tiny rows, rows of very different magnitudes and extreme codes."""
    rng = np.random.default_rng(seed)
    lut = create_lut("l2_normalize")
    shape = [(64, 64, 32), (7, 512), (1, 3), (300, 5), (2, 768), (4099,), (1, 1)][seed % 7]
    taken = 0
    for bits in (8, 16):
        lo, hi = -(1 << (bits - 1)), 1 << (bits - 1)
        x = rng.integers(lo, hi, shape)
        flat = x.reshape(-1, shape[-1])
        kind = rng.integers(0, 4, flat.shape[0])
        flat[kind == 1] = 0                                   # zero rows
        flat[kind == 2, 1:] = 0                               # one value: output saturates
        flat[kind == 3] >>= rng.integers(0, bits - 1)         # tiny / varied rows
        if seed % 3 == 0:
            flat[: flat.shape[0] // 2] = rng.choice([lo, hi - 1], flat[: flat.shape[0] // 2].shape)
        x = x.astype(np.int8 if bits == 8 else np.int16)
        zp = int(rng.choice([-128, -7, 0, 5, 127]))
        kw = dict(bits=8, out_shift=7, in_zp=zp) if bits == 8 else dict(bits=16, out_shift=15, in_zp=None)
        for axis in (-1, x.ndim - 1):
            with use_platform(platform):
                n = x.size if axis < 0 else x.shape[-1]
                got = T._l2_rows(x.reshape(-1, n), lut, bits=bits, out_shift=kw["out_shift"], zp=zp if bits == 8 else 0)
                want = T.l2_normalize_reference(x, lut, axis=axis, **kw)
                full = T.l2_normalize(x, lut, axis=axis, out=np.empty_like(x), **kw)
            if got is not None:
                taken += 1
                assert np.array_equal(got.reshape(x.shape), want)
            assert np.array_equal(full, want)
    assert taken >= 2  # the saturating, zero and varied rows keep the path's bounds (not the tiny ones)


@pytest.mark.usefixtures("numpy_only")
@pytest.mark.parametrize("seed", range(8))
def test_argmax_block_rule_and_row_replays_equal_heap_replay(seed: int) -> None:
    """Many long slices (a multiple of the block length): the slices whose top values are distinct
    come from the block maxima (``_topk_of_blocks``), the few others are replayed along rows
    (``_topk_replay_rows``); ties injected at the top, at the ``k``-th value, among the seeds."""
    rng = np.random.default_rng(200 + seed)
    n, s = 32 * int(rng.integers(6, 40)), int(rng.integers(8, 40))
    x = rng.integers(-32768, 32768, (n, s)).astype(np.int16)
    k = int(rng.choice([2, 3, 4, 5]))
    hard = rng.choice(s, max(1, s // 5), replace=False)
    for c in hard:
        col = x[:, c]
        order = np.argsort(col)[::-1]
        j = int(rng.integers(0, k))
        col[order[j + 1]] = col[order[j]]  # a tie among the k largest, or of the k-th and the next
        if rng.random() < 0.3:
            col[int(rng.integers(0, k))] = col[order[0]]  # and one among the seeds
    idx, ok = K._topk_of_blocks(x, k)
    assert ok.any() and not ok[hard].any()
    ref = K.argmax_reference(x, 1, k)  # offsets: position * s + slice
    assert np.array_equal((idx * s + np.arange(s)[:, None])[ok], ref[ok])
    rows = K._topk_replay_rows(np.ascontiguousarray(x[:, hard].T), k)
    assert np.array_equal(rows * s + hard[:, None], ref[hard])
    assert np.array_equal(K.argmax(x, 1, k), ref)


@pytest.mark.usefixtures("numpy_only")
@pytest.mark.parametrize("out_dtype", [np.int16, np.int32, np.int64])
def test_l2_rows_path_into_wider_out(out_dtype) -> None:
    """The rows path writes the values (not the float64 patterns it rounds with) into an ``out`` of
    any integer dtype, and into ``x`` itself."""
    rng = np.random.default_rng(5)
    lut = create_lut("l2_normalize")
    x = rng.integers(-32768, 32768, (50, 32)).astype(np.int16)
    want = T.l2_normalize_reference(x, lut, bits=16, out_shift=15, axis=1)
    out = np.zeros(x.shape, dtype=out_dtype)
    assert np.array_equal(T.l2_normalize(x, lut, bits=16, out_shift=15, axis=1, out=out), want)
    assert np.array_equal(out, want)
    same = x.copy()
    assert np.array_equal(T.l2_normalize(same, lut, bits=16, out_shift=15, axis=1, out=same), want)


@pytest.mark.usefixtures("numpy_only")
@pytest.mark.parametrize("platform", [VPX, EM], ids=["round_up", "convergent"])
def test_l2_rows_one_shift_int32_and_float64_paths(platform, monkeypatch) -> None:
    """Rows of similar magnitude (shifts one apart) take the int32 path with one folded shift; rows
    of very different magnitudes the float64 path; both equal the reference, ties included."""
    calls = []
    real = T.asr_rnd_int32
    monkeypatch.setattr(T, "asr_rnd_int32", lambda *a, **k: calls.append(1) or real(*a, **k))
    lut = create_lut("l2_normalize")
    rng = np.random.default_rng(9)
    similar = rng.integers(-32768, 32768, (700, 32)).astype(np.int16)
    similar[::7] = rng.choice([-32768, -16384, -8192, 8192, 16384, 24576], (100, 32))  # many ties
    varied = (similar.astype(np.int64) >> rng.integers(0, 15, (700, 1))).astype(np.int16)
    for x, int_path in ((similar, True), (varied, False)):
        calls.clear()
        with use_platform(platform):
            got = T.l2_normalize(x, lut, bits=16, out_shift=15, axis=1)
            want = T.l2_normalize_reference(x, lut, bits=16, out_shift=15, axis=1)
        assert bool(calls) == int_path
        assert np.array_equal(got, want)


@pytest.mark.usefixtures("numpy_only")
def test_argmax_wide_values_skip_the_block_rule() -> None:
    """int32 values (wider than the block rule's keys) still give the heap's positions."""
    rng = np.random.default_rng(3)
    x = rng.integers(-(2 ** 31), 2 ** 31, (512, 9)).astype(np.int32)
    x[rng.integers(0, 512, 9), np.arange(9)] = 2 ** 31 - 1
    assert np.array_equal(K.argmax(x, 1, 3), K.argmax_reference(x, 1, 3))


@pytest.mark.parametrize("seed", range(10))
def test_top3_rule_random_prefixes_equal_heap_replay(seed: int) -> None:
    """The heap-of-3 rule against the replay: maxima first reached early or late (long prefixes
    with records and ties before them), among the seeds or not, int8 and int16 values."""
    rng = np.random.default_rng(300 + seed)
    n, s = int(rng.choice([64, 300, 2048, 4096])), int(rng.integers(2, 40))
    hi = int(rng.choice([3, 20, 127]))
    x = rng.integers(-hi, hi, (n, s))  # the maximum hi is placed below
    for c in range(s):
        first = int(rng.integers(0, n - 3)) if rng.random() < 0.8 else int(rng.integers(0, 3))
        at = np.unique(np.concatenate([[first], rng.integers(first, n, int(rng.integers(2, 6)))]))
        x[at, c] = hi
    x = x.astype(np.int8 if seed % 2 else np.int16)
    idx, ok = K._top3_of_max(x)
    ref = K.argmax_reference(x, 1, 3)
    assert ok.sum() >= s // 2
    assert np.array_equal((idx * s + np.arange(s)[:, None])[ok], ref[ok])


def _levels(rng: np.random.Generator, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """Values of ``dtype`` drawn from 1-4 distinct levels (extremes included now and then): heavy ties."""
    info = np.iinfo(dtype)
    pool = np.array([info.min, info.max, 0, -1, 1], dtype=np.int64)
    levels = np.where(rng.random(4) < 0.3, rng.choice(pool, 4), rng.integers(info.min, int(info.max) + 1, 4))
    return rng.choice(levels[: int(rng.integers(1, 5))], shape).astype(dtype)


@pytest.mark.parametrize("seed", range(8))
def test_top3_events_equal_heap_replay(seed: int) -> None:
    """The closed form of the heap of 3 against the replay, slice by slice: every element a
    candidate, and only the seeds plus a random superset of the elements not below the running
    third largest (the candidates a screen may give); 2-4 levels, int8 / int16 / int32, short and
    long slices (seeds only, n = 3)."""
    rng = np.random.default_rng(400 + seed)
    for _ in range(30):
        n, s = int(rng.choice([3, 4, 5, 7, 16, 61, 300])), int(rng.integers(1, 12))
        dtype = [np.int8, np.int16, np.int32][seed % 3]
        x = _levels(rng, (s, n), dtype) if rng.random() < 0.8 else rng.integers(-3, 3, (s, n)).astype(dtype)
        ref = K.argmax_reference(x, 0, 3) if s == 1 else np.concatenate(
            [K.argmax_reference(x[i], -1, 3) for i in range(s)])
        vals = x.astype(np.int64)
        kth = np.full((s, n), np.iinfo(np.int64).min)
        for i in range(s):  # the running third largest before every element
            for p in range(3, n):
                kth[i, p] = np.sort(vals[i, :p])[-3]
        must = (vals >= kth) | (np.arange(n) < 3)
        for mask in (np.ones((s, n), bool), must | (rng.random((s, n)) < 0.2)):
            sl, pos = np.nonzero(mask)
            got = K._top3_events(pos, sl, vals[sl, pos], s)
            assert np.array_equal(got, ref)


@pytest.mark.usefixtures("numpy_only")
@pytest.mark.parametrize("seed", range(6))
def test_argmax_top3_closed_form_paths(seed: int, monkeypatch) -> None:
    """``argmax`` with the closed form of the heap of 3 taken however few the candidates (both the
    row replays and the exact screen's fallback), against the replay: heavy ties, both axes, the
    whole tensor, strides, every k of a short slice."""
    monkeypatch.setattr(K, "_EVENTS_MIN", 0)
    calls = []
    real = K._top3_events
    monkeypatch.setattr(K, "_top3_events", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(500 + seed)
    dtype = [np.int8, np.int16, np.int32][seed % 3]
    for _ in range(6):
        n, s = 32 * int(rng.integers(4, 20)), int(rng.integers(3, 24))
        x = _levels(rng, (n, s), dtype)
        if rng.random() < 0.5:  # a few slices of distinct values among tied ones
            x[:, rng.integers(0, s, 2)] = rng.integers(-100, 100, (n, 2))
        for axis in (0, 1, -1):
            assert np.array_equal(K.argmax(x, axis, 3), K.argmax_reference(x, axis, 3))
        big = np.zeros((n, 2 * s), dtype=dtype)[:, ::2]
        big[...] = x
        st = [2 * s, 2]
        assert np.array_equal(K.argmax(big, 1, 3, st), K.argmax_reference(big, 1, 3, st))
    x = _levels(rng, (6, 5), dtype)
    for k in range(1, 6):  # every k of the 5-element slices
        assert np.array_equal(K.argmax(x, 0, k), K.argmax_reference(x, 0, k))
        assert np.array_equal(K.argmax(x.T, 1, k), K.argmax_reference(x.T, 1, k))
    assert calls

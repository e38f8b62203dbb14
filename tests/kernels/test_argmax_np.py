"""The NumPy argmax paths of pymli/kernels/diverse.py against the element-by-element heap replay
(``argmax_reference``) and against each other: the heaps of three and five in local variables, one
long slice screened from its segment maxima, the heap-of-3 rule with agreeing and disagreeing
slice maxima, the row replays with their short head segments; seeded random values with many ties,
all-equal and extreme values, sorted runs (every element enters), odd lengths, strides, every axis.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from pymli.kernels import _jit
from pymli.kernels import diverse as K


@pytest.fixture(autouse=True)
def numpy_only() -> Iterator[None]:
    prev = _jit.set_enabled(False)
    yield
    _jit.set_enabled(prev)


def _values(rng: np.random.Generator, n: int, dtype: type) -> np.ndarray:
    """One of: the full range, a few levels (many ties), all equal, only the extremes, sorted up,
    sorted down."""
    info = np.iinfo(dtype)
    kind = int(rng.integers(6))
    if kind == 0:
        v = rng.integers(info.min, int(info.max) + 1, n)
    elif kind == 1:
        v = rng.choice(rng.integers(info.min, int(info.max) + 1, int(rng.integers(1, 6))), n)
    elif kind == 2:
        v = np.full(n, int(rng.integers(info.min, int(info.max) + 1)))
    elif kind == 3:
        v = rng.choice(np.array([info.min, info.max, info.max - 1]), n)
    else:
        v = np.sort(rng.integers(-50, 50, n))
        v = v if kind == 4 else v[::-1]
    return v.astype(dtype)


def _subset(rng: np.random.Generator, v: list[int], k: int) -> tuple[list[int], list[int]]:
    """Positions and values of the seeds, every element not below the running k-th largest before
    it (those that can enter), and a random part of the others: the candidates a screen may give."""
    keep = []
    for p, x in enumerate(v):
        kth = sorted(v[:p])[-k] if p >= k else None
        if kth is None or x >= kth or rng.random() < 0.3:
            keep.append(p)
    return keep, [v[p] for p in keep]


@pytest.mark.parametrize("k", [3, 5])
def test_small_heaps_equal_reference(k: int) -> None:
    """:func:`K._replay` (``_replay3``, ``_Heap._feed5``) on every element and on a screen's subset."""
    rng = np.random.default_rng(10 + k)
    for _ in range(400):
        n = int(rng.integers(k, 80))
        v = _values(rng, n, np.int16 if rng.random() < 0.5 else np.int8)
        want = K.argmax_reference(v, -1, k)[0].tolist()
        assert K._replay(list(range(n)), v.tolist(), k) == want
        pos, val = _subset(rng, v.tolist(), k)
        assert K._replay(pos, val, k) == want


@pytest.mark.parametrize("seed", range(6))
def test_one_long_slice_equal_reference(seed: int) -> None:
    """Whole-tensor argmax (one slice) of 16-bit values through the segment screen: lengths below,
    across and beyond the fine segments, with and without a short last segment, every small k and
    k close to n; 8-bit values through the growing blocks."""
    rng = np.random.default_rng(100 + seed)
    for n in (5, 9, 63, 64, 65, 200, 1023, 1024, 1025, 2048 + 37, 3 * 1024):
        for _ in range(3):
            dtype = np.int16 if rng.random() < 0.75 else np.int8
            v = _values(rng, n, dtype)
            for k in sorted({2, 3, 5, int(rng.integers(2, n)), n - 1} - {0, 1}):
                if k >= n:
                    continue
                assert np.array_equal(K.argmax(v, -1, k), K.argmax_reference(v, -1, k)), (n, k)


@pytest.mark.parametrize("seed", range(4))
def test_segment_screen_equals_growing_blocks(seed: int) -> None:
    """Long slices (beyond the reference's reach): the segment screen against the independent
    growing-block screen, 16-bit and 32-bit values (``heap_topk``)."""
    rng = np.random.default_rng(200 + seed)
    for _ in range(12):
        n = int(rng.integers(4096, 150000))
        v = _values(rng, n, np.int16)
        if rng.random() < 0.3:
            v = v.astype(np.int32) * 65536 + rng.integers(0, 3, n)
        for k in (2, 3, 5, int(rng.integers(6, 40))):
            got = K._topk_1d_segments(v, k)
            assert got == K._topk_1d_growing(v, k), (n, k)
            assert K.heap_topk(v, k).tolist() == got


def test_segments_cover_the_slice() -> None:
    """Segment starts: increasing from 0, the fine ones inside the first 1024, coarse ones after."""
    for n in (1, 7, 8, 63, 64, 65, 100, 1023, 1024, 1025, 4096, 5000):
        st, lengths, f, nc = K._segments(n)
        assert st[0] == 0 and (np.diff(st) > 0).all() and st[-1] < n
        assert f == min(n, 1024) and lengths.sum() == f and (lengths > 0).all()
        assert st.size == lengths.size + nc + (1 if f + nc * 1024 < n else 0)


@pytest.mark.parametrize("seed", range(6))
def test_top3_rule_agreeing_and_other_maxima(seed: int) -> None:
    """8-bit axis argmax top3 of long slices: all slice maxima equal (one scalar compare) or not,
    maxima among the seeds, strided inputs, every axis."""
    rng = np.random.default_rng(300 + seed)
    for _ in range(4):
        n, s = int(rng.integers(192, 1200)), int(rng.integers(2, 40))
        x = rng.integers(-128, 128, (n, s)).astype(np.int8)
        if rng.random() < 0.5:
            x[:, : s // 2] = np.minimum(x[:, : s // 2], int(rng.integers(-20, 127)))  # other maxima
        if rng.random() < 0.3:
            x[:3, rng.integers(0, s, 3)] = 127  # maxima among the seeds
        ref = np.concatenate([K.argmax_reference(x[:, i], -1, 3) for i in range(s)])
        assert np.array_equal(K.argmax(x, 1, 3) - np.arange(s)[:, None], ref * s), (n, s)
        for axis in (0, 1):
            assert np.array_equal(K.argmax(x, axis, 3), K.argmax_reference(x, axis, 3))
        big = np.zeros((n, 3 * s), dtype=np.int8)[:, ::3]
        big[...] = x
        st = [3 * s, 3]
        assert np.array_equal(K.argmax(big, 1, 3, st), K.argmax_reference(big, 1, 3, st))


@pytest.mark.parametrize("k", [2, 3, 4, 5, 7])
def test_row_replays_equal_reference(k: int) -> None:
    """:func:`K._topk_replay_rows` with blocks of 32 (a length not a multiple of 64) and of 64."""
    rng = np.random.default_rng(400 + k)
    for n in (32 * (k + 1), 32 * (2 * k + 3), 64 * (k + 2), 1024, 32 * 41):
        for _ in range(3):
            t = np.stack([_values(rng, n, np.int16) for _ in range(int(rng.integers(1, 6)))])
            want = np.concatenate([K.argmax_reference(row, -1, k) for row in t])
            assert np.array_equal(K._topk_replay_rows(t, k), want), (n, k)


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_benchmark_shapes_equal_reference(dtype: type) -> None:
    """64x64x32 whole top5 and axis 2 top3 (issue 14's rows), random full-range values."""
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, int(info.max) + 1, (64, 64, 32)).astype(dtype)
    assert np.array_equal(K.argmax(x, 2, 3), K.argmax_reference(x, 2, 3))
    v = x.reshape(-1)
    assert K._topk_1d(v, 5) == (K._topk_1d_growing(v, 5) if dtype == np.int16 else K._topk_1d_segments(v, 5))


@pytest.mark.parametrize("seed", range(3))
def test_top3_rule_on_tied_16bit_slices(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """16-bit slices of few levels (the block rule leaves most of them): the heap-of-3 rule takes
    those whose maximum repeats, the screen the others; every axis of a 3-D tensor too."""
    calls = []
    real = K._top3_of_max
    monkeypatch.setattr(K, "_top3_of_max", lambda c: calls.append(c.shape) or real(c))
    rng = np.random.default_rng(600 + seed)
    for _ in range(3):
        n, s = 32 * int(rng.integers(6, 40)), int(rng.integers(4, 30))
        x = rng.integers(-20, 20, (n, s)).astype(np.int16)
        x[:, rng.integers(0, s, 2)] = rng.integers(-30000, 30000, (n, 2))  # two slices the block rule settles
        if rng.random() < 0.5:
            x[:3, 0] = 19  # the maximum among the seeds of one slice
        assert np.array_equal(K.argmax(x, 1, 3), K.argmax_reference(x, 1, 3)), (n, s)
    assert calls
    x = rng.integers(-4, 4, (12, 32, 16)).astype(np.int16)
    for axis in (0, 1, 2, -1):
        assert np.array_equal(K.argmax(x, axis, 3), K.argmax_reference(x, axis, 3))

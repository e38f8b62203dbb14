"""The fast paths of the transform / diverse kernels equal their plain paths on randomised operands.

Large slices (many screening blocks of :func:`pymli.kernels.diverse.argmax`, the benchmark's
64x64x32 shapes), odd sizes, ties, extreme values, strides and both rounding platforms; every
output is compared whole with ``np.array_equal`` against the element-by-element reference
(``argmax_reference``, ``l2_normalize_reference``, the int64 LUT model of
:func:`pymli.arith.lut.activation_fx`).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymli.kernels import diverse as KD

DTYPES = {8: np.int8, 16: np.int16}
PATTERNS = ["uniform", "narrow", "ascending", "descending", "plateau", "late_max", "extremes"]


def _values(rng: np.random.Generator, shape: tuple[int, ...], bits: int, pattern: str) -> np.ndarray:
    """Container values with the tie / order structure ``pattern`` (in C order over the tensor)."""
    info = np.iinfo(DTYPES[bits])
    lo, hi = int(info.min), int(info.max)
    n = int(np.prod(shape))
    if pattern == "uniform":
        v = rng.integers(lo, hi + 1, n)
    elif pattern == "narrow":
        v = rng.integers(-3, 3, n)
    elif pattern == "ascending":  # every element enters the heap
        v = np.sort(rng.integers(lo, hi + 1, n))
    elif pattern == "descending":
        v = np.sort(rng.integers(lo, hi + 1, n))[::-1]
    elif pattern == "plateau":  # long runs of equal values, the maximum among them
        v = np.repeat(rng.integers(lo, hi + 1, max(n // 50, 1)), 50)[:n]
        v = np.concatenate([v, np.full(n - v.size, lo)])
    elif pattern == "late_max":  # the maxima only at the very end
        v = rng.integers(lo, 0, n)
        v[-rng.integers(1, min(n, 5) + 1):] = hi
    else:  # extremes only
        v = rng.choice([lo, hi, lo + 1, hi - 1], n)
    return v.astype(DTYPES[bits]).reshape(shape)


big_shapes = st.sampled_from([(64, 64, 32), (4097,), (129, 3), (3, 1000), (5, 77, 9), (130, 2, 65), (64, 1)])


# ---------------------------------------------------------------------------------------- argmax
@settings(max_examples=120, deadline=None)
@given(big_shapes, st.sampled_from([8, 16]), st.integers(-1, 2), st.sampled_from([1, 2, 3, 5, 8, 12]),
       st.sampled_from(PATTERNS), st.booleans(), st.integers(0, 2**32 - 1))
def test_argmax_equals_heap_replay_on_large_slices(shape, bits, axis, k, pattern, strided, seed) -> None:
    rng = np.random.default_rng(seed)
    x = _values(rng, shape, bits, pattern)
    axis = min(axis, x.ndim - 1)
    n = x.size if axis < 0 else x.size // x.shape[axis]
    k = min(k, n)
    strides = [int(s) * 2 + 1 for s in np.asarray(x.strides) // x.itemsize] if strided else None
    assert np.array_equal(KD.argmax(x, axis, k, strides), KD.argmax_reference(x, axis, k, strides))


@pytest.mark.parametrize("bits", [8, 16])
@pytest.mark.parametrize("axis, k", [(-1, 1), (-1, 5), (2, 3), (0, 4), (1, 2)])
def test_argmax_benchmark_shapes(bits: int, axis: int, k: int) -> None:
    x = _values(np.random.default_rng(bits * 10 + k), (64, 64, 32), bits, "uniform")
    assert np.array_equal(KD.argmax(x, axis, k), KD.argmax_reference(x, axis, k))


def test_argmax_non_contiguous_input() -> None:
    base = _values(np.random.default_rng(5), (40, 70, 12), 8, "narrow")
    x = base[::2, 3:, ::-1]  # a strided, reversed view: the kernel reads it like any array
    for axis, k in [(-1, 4), (0, 3), (2, 2), (1, 1)]:
        assert np.array_equal(KD.argmax(x, axis, k), KD.argmax_reference(x, axis, k))


@pytest.mark.parametrize("k", [2, 3, 7])
def test_heap_topk_whole_range_of_k(k: int) -> None:
    rng = np.random.default_rng(k)
    for pattern in PATTERNS:
        v = _values(rng, (3000,), 16, pattern)
        assert np.array_equal(KD.heap_topk(v, k), KD.argmax_reference(v, -1, k)[0])
    with pytest.raises(ValueError):
        KD.heap_topk(np.zeros(3, np.int8), 4)


def test_screen_keeps_every_element_that_enters_the_heap() -> None:
    """The screen's mask holds every element the heap takes (replayed element by element)."""
    rng = np.random.default_rng(11)
    for pattern in PATTERNS:
        cols = _values(rng, (3000, 3), 8, pattern)
        for k in (2, 5):
            mask, final = KD._screen(cols, k)
            for c in range(cols.shape[1]):
                v = cols[:, c].tolist()
                heap = sorted(v[:k])
                for i in range(k, len(v)):
                    if v[i] >= heap[0]:
                        assert mask[i, c]
                        heap[0] = v[i]
                        heap.sort()
                assert final[c] <= heap[0]

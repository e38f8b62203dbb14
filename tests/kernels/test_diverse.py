"""Permute and argmax kernels: properties and the vectorised argmax against the heap replay."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pymli.kernels import diverse as K


@st.composite
def arrays_and_perm(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, max_side=5))
    x = draw(hnp.arrays(np.int16, shape))
    perm = draw(st.permutations(range(len(shape))))
    return x, list(perm)


@given(arrays_and_perm())
def test_permute_then_inverse_is_identity(case) -> None:
    x, perm = case
    y = K.permute(x, perm)
    assert y.shape == tuple(x.shape[p] for p in perm)
    assert np.array_equal(K.permute(y, list(np.argsort(perm))), x)


@st.composite
def argmax_cases(draw, max_value: int = 3):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, max_side=5))
    # few distinct values: many ties, the hard part of MLI's ordering
    x = draw(hnp.arrays(np.int8, shape, elements=st.integers(-max_value, max_value)))
    axis = draw(st.integers(-1, len(shape) - 1))
    n = x.size if axis < 0 else x.size // shape[axis]
    topk = draw(st.integers(1, n))
    pad = draw(st.lists(st.integers(0, 2), min_size=len(shape), max_size=len(shape)))
    strides, acc = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= shape[i] + (pad[i] if i < len(shape) - 1 else 0)
    return x, axis, topk, strides


@given(argmax_cases())
def test_argmax_vectorised_equals_heap_replay(case) -> None:
    x, axis, topk, strides = case
    assert np.array_equal(K.argmax(x, axis, topk, strides), K.argmax_reference(x, axis, topk, strides))


@given(argmax_cases(max_value=127))
def test_argmax_vectorised_equals_heap_replay_wide(case) -> None:
    x, axis, topk, strides = case
    assert np.array_equal(K.argmax(x, axis, topk, strides), K.argmax_reference(x, axis, topk, strides))


@given(argmax_cases(max_value=5))
def test_argmax_points_at_the_largest(case) -> None:
    x, axis, topk, strides = case
    res = K.argmax(x, axis, topk, strides)
    offs = K.element_offsets(x.shape, strides)
    value_at = dict(zip(offs.reshape(-1).tolist(), x.reshape(-1).tolist()))
    slices = [x.reshape(-1)] if axis < 0 else [np.take(x, i, axis=axis).reshape(-1) for i in range(x.shape[axis])]
    assert res.shape == (len(slices), topk)
    for row, sl in zip(res.tolist(), slices):
        got = [value_at[o] for o in row]
        assert len(set(row)) == topk
        assert got == sorted(sl.tolist(), reverse=True)[:topk]


def test_argmax_topk1_is_last_maximum() -> None:
    x = np.array([3, 7, 1, 7, 2, 7, 0], np.int8)
    assert K.argmax(x, -1, 1).tolist() == [[5]]


def test_heap_topk_long_run_of_ties() -> None:
    rng = np.random.default_rng(1)
    v = rng.integers(-3, 4, 5000).astype(np.int8)
    assert np.array_equal(K.argmax(v, -1, 7), K.argmax_reference(v, -1, 7))

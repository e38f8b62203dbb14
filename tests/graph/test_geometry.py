"""Output geometry and padding: the formulas of :mod:`pymli.graph.geometry` and what the ops produce."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pymli
from pymli.graph.geometry import (
    conv_out_size,
    pad4,
    pair,
    resolve_padding,
    same_padding,
    transpose_out_size,
    transpose_padding_for_output,
    transpose_same_padding,
)

sizes = st.integers(1, 40)
kernels = st.integers(1, 7)
strides = st.integers(1, 4)
dilations = st.integers(1, 3)


def _window_count(n: int, k: int, s: int, a: int, b: int, d: int) -> int:
    """Positions of a dilated window fully inside the padded axis, counted one by one."""
    eff = (k - 1) * d + 1
    return sum(1 for p in range(0, n + a + b) if p % s == 0 and p + eff <= n + a + b)


@given(sizes, kernels, strides, st.integers(0, 3), st.integers(0, 3), dilations)
def test_conv_out_size_counts_the_window_positions(n: int, k: int, s: int, a: int, b: int, d: int) -> None:
    assert max(conv_out_size(n, k, s, a, b, d), 0) == _window_count(n, k, s, a, b, d)


@given(sizes, kernels, strides, dilations)
def test_same_padding_gives_ceil_in_over_stride(n: int, k: int, s: int, d: int) -> None:
    a, b = same_padding(n, k, s, d)
    assert a >= 0 and b - a in (0, 1)
    assert conv_out_size(n, k, s, a, b, d) == -(-n // s)


@given(sizes, sizes, kernels, kernels, strides, strides)
def test_resolve_padding_forms(h: int, w: int, kh: int, kw: int, sh: int, sw: int) -> None:
    assert resolve_padding("valid", (h, w), (kh, kw), (sh, sw)) == (0, 0, 0, 0)
    t, b, l, r = resolve_padding("SAME", (h, w), (kh, kw), (sh, sw))
    assert (t, b) == same_padding(h, kh, sh) and (l, r) == same_padding(w, kw, sw)
    assert resolve_padding(2, (h, w), (kh, kw), (sh, sw)) == (2, 2, 2, 2)
    assert resolve_padding((1, 3), (h, w), (kh, kw), (sh, sw)) == (1, 1, 3, 3)
    assert resolve_padding([1, 2, 3, 4], (h, w), (kh, kw), (sh, sw)) == (1, 2, 3, 4)


def test_bad_padding_and_pairs_are_refused() -> None:
    with pytest.raises(ValueError):
        resolve_padding("full", (4, 4), (3, 3), (1, 1))
    with pytest.raises(ValueError):
        pad4((1, 2, 3))
    with pytest.raises(ValueError):
        pair((1, 2, 3))
    assert pair(3) == (3, 3) and pair([2, 5]) == (2, 5)


@given(sizes, kernels, strides)
def test_transpose_same_padding_multiplies_by_the_stride(n: int, k: int, s: int) -> None:
    a, b = transpose_same_padding(k, s)
    if k >= s:
        assert transpose_out_size(n, k, s, a, b) == n * s
    assert a >= 0 and b - a in (0, 1)


@given(sizes, kernels, strides, st.booleans())
def test_tflite_transpose_padding_reproduces_the_output_size(n: int, k: int, s: int, same: bool) -> None:
    out = n * s if same else (n - 1) * s + k
    a, b = transpose_padding_for_output(n, out, k, s, same)
    assert transpose_out_size(n, k, s, a, b) == out
    if not same:
        assert (a, b) == (0, 0)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 4), st.integers(1, 3), st.integers(1, 3),
       st.sampled_from(["same", "valid", 0, 1, (1, 0, 2, 1)]), st.integers(1, 2))
def test_conv2d_output_shape_follows_the_padding_formula(h: int, w: int, k: int, s: int, d: int, padding: object,
                                                         cout: int) -> None:
    rng = np.random.default_rng(h * 100 + w)
    x = pymli.quantize(rng.normal(size=(h, w, 2)), "SA_8")
    wt = pymli.quantize(rng.normal(size=(k, k, 2, cout)), "SA_8", dim=3, symmetric=True)
    t, b, l, r = resolve_padding(padding, (h, w), (k, k), (s, s), (d, d))
    ho, wo = conv_out_size(h, k, s, t, b, d), conv_out_size(w, k, s, l, r, d)
    if ho <= 0 or wo <= 0 or max(t, b, l, r) >= k:
        return  # MLI refuses these (padding must be smaller than the kernel)
    y = pymli.conv2d(x, wt, None, stride=s, padding=padding, dilation=d)
    assert y.shape == [ho, wo, cout]


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 3), st.integers(1, 3), st.sampled_from(["same", "valid", 0, 1]))
def test_maxpool_output_shape_follows_the_padding_formula(h: int, w: int, k: int, s: int, padding: object) -> None:
    x = pymli.Tensor.from_numpy(np.arange(h * w * 2, dtype=np.int8).reshape(h, w, 2) % 100, "FX_8", frac_bits=0)
    t, b, l, r = resolve_padding(padding, (h, w), (k, k), (s, s))
    ho, wo = conv_out_size(h, k, s, t, b), conv_out_size(w, k, s, l, r)
    if ho <= 0 or wo <= 0 or max(t, b, l, r) >= k:
        return
    y = pymli.ops.maxpool(x, k, stride=s, padding=padding)
    assert y.shape == [ho, wo, 2]

"""Hypothesis properties of the move engine against NumPy slicing."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pymli import Tensor
from pymli.capi import mli_mov_tensor_sync
from pymli.capi.move import MovCfg
from pymli.ops.move import concat, move_tensor

_TYPES = ["FX_8", "FX_16", "SA_8", "SA_32"]


@st.composite
def tensors(draw, min_rank: int = 1, max_rank: int = 4):
    """A random tensor, sometimes strided (a view into a larger buffer with gaps)."""
    rank = draw(st.integers(min_rank, max_rank))
    shape = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    el = draw(st.sampled_from(_TYPES))
    dt = Tensor.zeros([1], el).el_type.dtype
    gaps = draw(st.lists(st.integers(0, 2), min_size=rank, max_size=rank))
    strides = [0] * rank
    acc = 1
    for i in range(rank - 1, -1, -1):
        strides[i] = acc + (gaps[i] if i < rank - 1 else 0)
        acc = strides[i] * shape[i]
    span = 1 + sum((s - 1) * m for s, m in zip(shape, strides))
    seed = draw(st.integers(0, 2**31))
    info = np.iinfo(dt)
    buf = np.random.default_rng(seed).integers(info.min, info.max, size=span, endpoint=True).astype(dt)
    kw = dict(zero_point=3, scale=5, scale_frac_bits=4) if el.startswith("SA") else dict(frac_bits=5)
    t = Tensor(data=buf, capacity=buf.nbytes, shape=shape, mem_stride=strides, rank=rank,
               el_type=Tensor.zeros([1], el).el_type, **kw)
    return t


def _sync(src: Tensor, cfg: MovCfg, n: int) -> Tensor:
    data = np.full(max(n, 1), 7, dtype=src.el_type.dtype)
    dst = Tensor(data=data, capacity=data.nbytes, shape=[0] * src.rank, mem_stride=[0] * src.rank, rank=src.rank)
    mli_mov_tensor_sync(src, cfg, dst)
    return dst


@given(tensors(), st.data())
def test_sub_tensor_equals_numpy_slicing(t, data):
    offs, sizes = [], []
    for s in t.shape:
        o = data.draw(st.integers(0, s - 1))
        offs.append(o)
        sizes.append(data.draw(st.integers(0, s - o)))  # 0 = up to the end
    cfg = MovCfg(offset=offs + [0] * (4 - t.rank), size=sizes + [0] * (4 - t.rank))
    want = t.numpy()[tuple(slice(o, o + z if z else None) for o, z in zip(offs, sizes))]
    got = _sync(t, cfg, want.size)
    assert got.shape == list(want.shape)
    assert np.array_equal(got.numpy(), want)


@given(tensors(), st.data())
def test_subsampling_equals_strided_slicing(t, data):
    steps = [data.draw(st.integers(1, 3)) for _ in range(t.rank)]
    want = t.numpy()[tuple(slice(None, None, k) for k in steps)]
    got = _sync(t, MovCfg(sub_sample_step=steps + [1] * (4 - t.rank)), want.size)
    assert np.array_equal(got.numpy(), want)


@given(tensors(), st.data())
def test_permutation_equals_transpose(t, data):
    perm = data.draw(st.permutations(range(t.rank)))
    want = np.transpose(t.numpy(), perm)
    got = _sync(t, MovCfg(perm_dim=list(perm) + list(range(t.rank, 4))), want.size)
    assert np.array_equal(got.numpy(), want)


@given(tensors(), st.data())
def test_padding_then_cropping_is_identity(t, data):
    pre = [data.draw(st.integers(0, 3)) for _ in range(t.rank)]
    post = [data.draw(st.integers(0, 3)) for _ in range(t.rank)]
    padded = move_tensor(t, pad_pre=pre, pad_post=post)
    want_pad = np.pad(t.numpy(), list(zip(pre, post)))
    assert np.array_equal(padded.numpy(), want_pad)
    back = move_tensor(padded, offset=pre, size=list(t.shape[: t.rank]))
    assert np.array_equal(back.numpy(), t.numpy())


@given(tensors(max_rank=3), st.data())
def test_concat_places_blocks_like_numpy(t, data):
    axis = data.draw(st.integers(0, t.rank - 1))
    u = move_tensor(t, step=[1] * t.rank)
    assert np.array_equal(concat([t, u, t], axis).numpy(),
                          np.concatenate([t.numpy(), u.numpy(), t.numpy()], axis))

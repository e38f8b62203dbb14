"""The vectorised move agrees with an element-by-element model of the C reference loops."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pymli import Tensor
from pymli.capi import mli_mov_tensor_sync
from pymli.capi.move import MovCfg

from .test_move_props import tensors


def _oracle(src: Tensor, cfg: MovCfg, dst_data: np.ndarray, dst_strides: list[int]) -> tuple[list[int], np.ndarray]:
    """Slow model of mli_mov_prepare on a dense-strided destination; returns (shape, buffer)."""
    rank = src.rank
    shape = [int(s) for s in src.shape[:rank]]
    ms = src.strides()
    p = cfg.perm_dim[:rank]
    sizes = [cfg.size[q] or shape[q] - cfg.offset[q] + cfg.padding_pre[q] + cfg.padding_post[q] for q in p]
    write = [-(-n // cfg.sub_sample_step[q]) for n, q in zip(sizes, p)]
    out_shape = [w + cfg.dst_offset[i] for i, w in enumerate(write)]
    buf = dst_data.copy()
    flat = src.data
    no_pad = not any(cfg.padding_pre[:rank]) and not any(cfg.padding_post[:rank])
    dense = [1] * rank
    for i in range(rank - 2, -1, -1):
        dense[i] = dense[i + 1] * shape[i + 1]
    if (no_pad and p == list(range(rank)) and all(cfg.sub_sample_step[i] == 1 for i in range(rank))
            and ms == dense and dst_strides == dense and out_shape == shape):
        n = int(np.prod(shape))
        buf[:n] = flat[:n]
        return out_shape, buf
    for d in itertools.product(*[range(w) for w in write]):
        s = [d[i] * cfg.sub_sample_step[q] + cfg.offset[q] - cfg.padding_pre[q] for i, q in enumerate(p)]
        pos = sum((d[i] + cfg.dst_offset[i]) * dst_strides[i] for i in range(rank))
        if not no_pad and any(not 0 <= s[i] < shape[q] for i, q in enumerate(p)):
            buf[pos] = 0
        else:
            buf[pos] = flat[sum(s[i] * ms[q] for i, q in enumerate(p))]
    return out_shape, buf


@given(tensors(max_rank=3), st.data())
def test_move_matches_slow_model(t, data):
    rank = t.rank
    perm = list(data.draw(st.permutations(range(rank))))
    pre = [data.draw(st.integers(0, 2)) for _ in range(rank)]
    post = [data.draw(st.integers(0, 2)) for _ in range(rank)]
    if data.draw(st.booleans()):
        pre, post = [0] * rank, [0] * rank
    offset, size = [], []
    for q in range(rank):
        padded = int(t.shape[q]) + pre[q] + post[q]
        o = data.draw(st.integers(0, padded - 1))
        offset.append(o)
        size.append(data.draw(st.integers(0, padded - o)))
    step = [data.draw(st.integers(1, 3)) for _ in range(rank)]
    dst_off = [data.draw(st.integers(0, 2)) for _ in range(rank)]
    fill = lambda v, f: v + [f] * (4 - rank)  # noqa: E731
    cfg = MovCfg(offset=fill(offset, 0), size=fill(size, 0), sub_sample_step=fill(step, 1),
                 dst_offset=fill(dst_off, 0), perm_dim=fill(perm, 0), padding_pre=fill(pre, 0),
                 padding_post=fill(post, 0))
    cfg.perm_dim[rank:] = list(range(rank, 4))
    sizes = [cfg.size[q] or int(t.shape[q]) - offset[q] + pre[q] + post[q] for q in perm]
    out_shape = [-(-n // step[q]) + dst_off[i] for i, (n, q) in enumerate(zip(sizes, perm))]
    dense = [1] * rank
    for i in range(rank - 2, -1, -1):
        dense[i] = dense[i + 1] * out_shape[i + 1]
    n = int(np.prod(out_shape))
    init = np.arange(n, dtype=np.int64).astype(t.el_type.dtype)
    want_shape, want = _oracle(t, cfg, init, dense)
    dst = Tensor(data=init.copy(), capacity=init.nbytes, shape=[0] * rank, mem_stride=[0] * rank, rank=rank)
    mli_mov_tensor_sync(t, cfg, dst)
    assert dst.shape == want_shape == out_shape
    assert dst.mem_stride == dense
    assert np.array_equal(dst.data, want)

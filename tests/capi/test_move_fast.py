"""The fast paths of the data movement functions agree with the plain path, bit for bit.

Three ways through ``mli_mov_tensor_sync`` / ``mli_mov_prepare``: canonical arguments on the guard's
fast path and its memo (planned once, later calls replay the plan), the same arguments with the memo
off, and non-canonical arguments (cfg arrays as tuples of NumPy ints) through the entry normaliser.
Every case (seeded random shapes, strides, element types, per-axis parameters, crops, steps,
permutations, padding, destination placement, and invalid ones) must give the same status, the same
destination buffer (whole) and struct, and write nothing when it fails.
"""

from __future__ import annotations

import numpy as np
import pytest

from pymli import capi
from pymli.capi.move import MovCfg, MovHandle, MovState, reset_dma_pool
from pymli.checks.entry import memo_enabled
from pymli.config import use_platform
from pymli.errors import MliError, Status
from pymli.formats import ElType
from pymli.tensor import Tensor, dense_strides

from .test_move_oracle import _oracle

_TYPES = (ElType.FX_8, ElType.FX_16, ElType.SA_8, ElType.SA_32)
_FIELDS = ("shape", "mem_stride", "rank", "el_type", "frac_bits", "zero_point", "scale", "scale_frac_bits", "dim")


def _case(seed: int) -> tuple[Tensor, dict[str, list[int]], Tensor]:
    """A random move (built afresh from ``seed`` each time: the paths never share an object)."""
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 5))
    shape = [int(rng.integers(1, 5)) for _ in range(rank)]
    el = _TYPES[int(rng.integers(len(_TYPES)))]
    info = np.iinfo(el.dtype)
    # source strides: dense, or over a larger (padded) layout
    extra = [int(rng.integers(0, 3)) if rng.random() < 0.3 else 0 for _ in range(rank)]
    outer = [s + e for s, e in zip(shape, extra)]
    strides = [1] * rank
    for i in range(rank - 2, -1, -1):
        strides[i] = strides[i + 1] * outer[i + 1]
    n = strides[0] * outer[0]
    data = rng.integers(info.min, info.max, n, endpoint=True).astype(el.dtype)
    src = Tensor(data=data, capacity=data.nbytes, shape=shape, mem_stride=strides, rank=rank, el_type=el,
                 frac_bits=int(rng.integers(-3, 8)))
    per_axis = el.is_sa and rng.random() < 0.4
    if el.is_sa:
        if per_axis:
            src.dim = int(rng.integers(rank))
            q = shape[src.dim]
            src.zero_point = rng.integers(-5, 5, q).astype(np.int16)
            src.scale = rng.integers(1, 30000, q).astype(np.int16)
            src.scale_frac_bits = rng.integers(0, 20, q).astype(np.int8)
        else:
            src.zero_point, src.scale, src.scale_frac_bits = int(rng.integers(-5, 5)), int(rng.integers(1, 30000)), 9
    perm = [int(p) for p in rng.permutation(rank)] if rng.random() < 0.5 else list(range(rank))
    pre = [int(rng.integers(0, 3)) if rng.random() < 0.3 else 0 for _ in range(rank)]
    post = [int(rng.integers(0, 3)) if rng.random() < 0.3 else 0 for _ in range(rank)]
    offset, size, step = [], [], []
    for q in range(rank):
        padded = shape[q] + pre[q] + post[q]
        o = int(rng.integers(0, padded)) if rng.random() < 0.3 else 0
        offset.append(o)
        size.append(int(rng.integers(1, padded - o + 1)) if rng.random() < 0.3 else 0)
        step.append(int(rng.integers(1, 4)) if rng.random() < 0.3 else 1)
    dst_offset = [int(rng.integers(0, 2)) if rng.random() < 0.2 else 0 for _ in range(rank)]
    cfg = {"offset": offset, "size": size, "sub_sample_step": step, "dst_offset": dst_offset,
           "dst_mem_stride": [0] * rank, "perm_dim": perm, "padding_pre": pre, "padding_post": post}
    bad = rng.random()
    if bad < 0.05:
        cfg["perm_dim"] = [rank + 2] + perm[1:]
    elif bad < 0.1:
        cfg["sub_sample_step"] = [0] + step[1:]
    elif bad < 0.15:
        cfg["offset"] = [shape[0] + pre[0] + post[0] + 3] + offset[1:]
    for k, v in cfg.items():  # the C arrays' unused entries as the cfg helpers leave them
        v += [i if k == "perm_dim" else int(k == "sub_sample_step") for i in range(len(v), 4)]
    room = int(np.prod([s + 2 for s in shape])) * (1 if rng.random() < 0.85 else 0) + int(rng.integers(0, 4))
    buf = rng.integers(info.min, info.max, room, endpoint=True).astype(el.dtype)
    dst = Tensor(data=buf, capacity=buf.nbytes, shape=[0] * rank, mem_stride=[0] * rank, rank=rank, el_type=el)
    if per_axis:
        if rng.random() < 0.5:
            dst.zero_point = np.zeros(8, np.int16)
            dst.scale = np.ones(8, np.int16)
            dst.scale_frac_bits = np.zeros(8, np.int8)
        else:
            dst.zero_point = dst.scale = dst.scale_frac_bits = None
    return src, cfg, dst


def _state(dst: Tensor) -> tuple:
    def plain(v):
        return v.tobytes() if isinstance(v, np.ndarray) else v
    return (dst.data.tobytes(),) + tuple(plain(getattr(dst, k)) for k in _FIELDS)


def _outcome(call, dst: Tensor) -> tuple:
    before = _state(dst)
    try:
        call()
    except MliError as e:
        assert _state(dst) == before, "a failing move wrote into its destination"
        return (e.status,)
    return (Status.OK,) + _state(dst)


def _plain(seed: int, fn: str) -> tuple:
    """The normaliser's path: cfg arrays as tuples of NumPy ints, memo off."""
    src, cfg, dst = _case(seed)
    c = MovCfg(**{k: tuple(np.int64(x) for x in v) for k, v in cfg.items()})
    initial = dst.data.copy()
    was = memo_enabled(False)
    try:
        if fn == "sync":
            out = _outcome(lambda: capi.mli_mov_tensor_sync(src, c, dst), dst)
        else:
            h = MovHandle(dma_ch=np.int32(0), num_ch=0, state=MovState.OPEN)
            out = _outcome(lambda: capi.mli_mov_prepare(h, src, c, dst), dst)
    finally:
        memo_enabled(was)
    if out[0] is Status.OK:  # the data against the element-by-element model of the C loops
        shape, buf = _oracle(src, MovCfg(**cfg), initial, dense_strides(dst.shape))
        assert shape == dst.shape and np.array_equal(buf, dst.data), seed
    return out


def _args(fn: str, src: Tensor, cfg: dict[str, list[int]], dst: Tensor) -> tuple:
    if fn == "sync":
        return src, MovCfg(**cfg), dst
    return MovHandle(state=MovState.OPEN), src, MovCfg(**cfg), dst


@pytest.mark.parametrize("platform", ["vpx", "em"])
@pytest.mark.parametrize("fn", ["sync", "prepare"])
def test_fast_and_memo_paths_match_the_normaliser(platform: str, fn: str) -> None:
    reset_dma_pool()
    func = capi.mli_mov_tensor_sync if fn == "sync" else capi.mli_mov_prepare
    hits = 0
    with use_platform(platform):
        for seed in range(150):
            want = _plain(seed, fn)
            # the fast path without the memo
            src, cfg, dst = _case(seed)
            args = _args(fn, src, cfg, dst)
            was = memo_enabled(False)
            try:
                assert _outcome(lambda: func(*args), dst) == want, seed
            finally:
                memo_enabled(was)
            # the memo: the destination's buffer is restored before each call, its struct is left
            # as the previous call wrote it (the second call plans again, the third replays)
            src, cfg, dst = _case(seed)
            args = _args(fn, src, cfg, dst)
            initial = dst.data.copy()
            key = tuple(map(id, args))
            runs = []
            for _ in range(3):
                np.copyto(dst.data, initial)
                if fn == "prepare":
                    args[0].state = MovState.OPEN
                assert _outcome(lambda: func(*args), dst) == want, seed
                runs.append(func.memo.get(key, (None,) * 4)[3])
            if want[0] is Status.OK:
                assert runs[2] is not None and runs[2] is runs[1], f"{seed}: the third call was not a memo hit"
                hits += 1
    assert hits > 50


def test_memo_sees_every_changed_field() -> None:
    reset_dma_pool()
    src = Tensor.from_numpy(np.arange(24, dtype=np.int16).reshape(2, 3, 4), "FX_16")
    cfg = MovCfg()
    buf = np.zeros(64, np.int16)
    dst = Tensor(data=buf, capacity=buf.nbytes, shape=[0, 0, 0], mem_stride=[0, 0, 0], rank=3)
    for _ in range(3):
        capi.mli_mov_tensor_sync(src, cfg, dst)
    assert dst.shape == [2, 3, 4] and buf[:24].tolist() == list(range(24))
    cfg.offset[2] = 1  # in place: a new plan
    capi.mli_mov_tensor_sync(src, cfg, dst)
    assert dst.shape == [2, 3, 3] and dst.mem_stride == [12, 4, 1]
    assert buf[:24].reshape(2, 3, 4)[:, :, :3].tolist() == (np.arange(24).reshape(2, 3, 4)[:, :, 1:]).tolist()
    dst.mem_stride[0] = 10  # a changed destination stride is read again
    with pytest.raises(MliError) as e:
        capi.mli_mov_tensor_sync(src, cfg, dst)
    assert e.value.status is Status.BAD_TENSOR and dst.mem_stride == [10, 4, 1]
    cfg.offset[2] = 0
    dst.mem_stride = [0, 0, 0]
    src.shape[0] = 1  # the source struct too
    capi.mli_mov_tensor_sync(src, cfg, dst)
    assert dst.shape == [1, 3, 4]
    src.shape[0] = 2.0  # not an integer: refused whatever the memo holds
    with pytest.raises(MliError) as e:
        capi.mli_mov_tensor_sync(src, cfg, dst)
    assert e.value.status is Status.BAD_TENSOR


def test_pool_and_channel_checked_on_every_replay() -> None:
    reset_dma_pool()
    src = Tensor.from_numpy(np.arange(8, dtype=np.int8), "FX_8")
    dst = Tensor.zeros((8,), "FX_8")
    cfg = MovCfg()
    for _ in range(3):
        capi.mli_mov_tensor_sync(src, cfg, dst)
    dst.data[:] = 0
    capi.mli_mov_set_num_dma_ch(0, 0)  # an empty pool: no channel for the move
    with pytest.raises(MliError) as e:
        capi.mli_mov_tensor_sync(src, cfg, dst)
    assert e.value.status is Status.NOT_ENGH_MEM and not dst.data.any()
    capi.mli_mov_set_num_dma_ch(20, 1)  # base channel outside the callback table
    with pytest.raises(MliError) as e:
        capi.mli_mov_tensor_sync(src, cfg, dst)
    assert e.value.status is Status.ARGUMENT_ERROR and not dst.data.any()
    reset_dma_pool()
    seen = []
    capi.mli_mov_registercallback(MovHandle(dma_ch=0), seen.append, 7)
    capi.mli_mov_tensor_sync(src, cfg, dst)
    assert seen == [7] and dst.data.tolist() == list(range(8))
    reset_dma_pool()


def test_builders_on_the_fast_path_write_nothing_on_failure() -> None:
    cfg = MovCfg(offset=[1, 2, 3, 4], padding_pre=[1, 0, 0, 0])
    before = MovCfg(**{k: list(v) for k, v in vars(cfg).items()})
    for call in (lambda: capi.mli_mov_cfg_for_slice(cfg, [0, 1], None, [0]),
                 lambda: capi.mli_mov_cfg_for_permute(cfg, None),
                 lambda: capi.mli_mov_cfg_for_concat(cfg, [1], None),
                 lambda: capi.mli_mov_cfg_all(cfg, [0], [0], [1], [0], [0], None, 1, 1, 1, 1)):
        with pytest.raises(MliError) as e:
            call()
        assert e.value.status is Status.BAD_FUNC_CFG and cfg == before
    capi.mli_mov_cfg_for_padding2d_hwc(cfg, 1, 2, 3, 4, [0])
    assert cfg.padding_pre == [3, 1, 0, 0] and cfg.padding_post == [4, 2, 0, 0] and cfg.offset == [0, 0, 0, 0]


def test_failing_callback_leaves_the_handle() -> None:
    reset_dma_pool()
    h = MovHandle()
    capi.mli_mov_acquire_handle(1, h)

    def boom(cookie: int) -> None:
        raise RuntimeError(cookie)

    capi.mli_mov_registercallback(h, boom, 3)
    src = Tensor.from_numpy(np.arange(4, dtype=np.int8), "FX_8")
    dst = Tensor.zeros((4,), "FX_8")
    capi.mli_mov_prepare(h, src, MovCfg(), dst)
    with pytest.raises(RuntimeError):
        capi.mli_mov_start(h, src, MovCfg(), dst)
    assert h.state is MovState.PREPARED
    capi.mli_mov_registercallback(h, None, 0)
    capi.mli_mov_start(h, src, MovCfg(), dst)
    assert capi.mli_mov_isdone(h)
    capi.mli_mov_release_handle(h)
    reset_dma_pool()


@pytest.mark.parametrize("el", _TYPES)
def test_whole_buffer_copy_replays_the_inlined_run(el: ElType) -> None:
    # A dense move of the whole source buffer into a whole destination buffer of the same length keeps
    # the inlined plan (run_whole); every replay copies the current data and runs the callback.
    reset_dma_pool()
    rng = np.random.default_rng(int(el))
    info = np.iinfo(el.dtype)
    shape = [3, 5, 7]
    src = Tensor.from_numpy(rng.integers(info.min, info.max, shape, endpoint=True), el)
    dst = Tensor.zeros(shape, el)
    fn = capi.mli_mov_tensor_sync
    fn.memo.clear()
    cfg = MovCfg()
    seen: list[int] = []
    capi.mli_mov_registercallback(MovHandle(dma_ch=0), seen.append, 3)
    for _ in range(4):
        src.data[:] = rng.integers(info.min, info.max, src.data.shape[0], endpoint=True)
        src.data[:2] = (info.min, info.max)
        assert fn(src, cfg, dst) is Status.OK
        assert np.array_equal(dst.data, src.data) and dst.shape == shape and dst.el_type is el
    assert seen == [3] * 4
    assert fn.memo[(id(src), id(cfg), id(dst))][3].__name__ == "run_whole"
    reset_dma_pool()

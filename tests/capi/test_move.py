"""mli_mov_* facade: cfg builders, DMA pool and handle states, move semantics and checks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pymli import MliError, Status, Tensor
from pymli import capi
from pymli.capi.move import MovCfg, MovHandle, MovState, reset_dma_pool


@pytest.fixture(autouse=True)
def _fresh_pool():
    reset_dma_pool()
    yield
    reset_dma_pool()


def _dst(n: int, dtype=np.int16, rank: int = 1) -> Tensor:
    data = np.full(n, 99, dtype=dtype)
    return Tensor(data=data, capacity=data.nbytes, shape=[0] * rank, mem_stride=[0] * rank, rank=rank)


# ------------------------------------------------------------------ cfg builders
def test_cfg_for_copy_resets_everything():
    cfg = MovCfg(offset=[1, 2, 3, 4], size=[5, 5, 5, 5], sub_sample_step=[2, 2, 2, 2], perm_dim=[3, 2, 1, 0],
                 padding_pre=[1, 1, 1, 1])
    assert capi.mli_mov_cfg_for_copy(cfg) is Status.OK
    assert cfg == MovCfg(sub_sample_step=[1, 1, 1, 1], perm_dim=[0, 1, 2, 3])


def test_cfg_builders_fill_their_fields():
    cfg = MovCfg()
    capi.mli_mov_cfg_for_slice(cfg, [1, 2, 0, 0], [3, 4, 0, 0], [40, 8, 1, 0])
    assert (cfg.offset, cfg.size, cfg.dst_mem_stride) == ([1, 2, 0, 0], [3, 4, 0, 0], [40, 8, 1, 0])
    capi.mli_mov_cfg_for_concat(cfg, [0, 5, 0, 0], [0, 0, 0, 0])
    assert cfg.dst_offset == [0, 5, 0, 0] and cfg.offset == [0, 0, 0, 0]
    capi.mli_mov_cfg_for_subsample(cfg, [2, 3, 1, 1], [0, 0, 0, 0])
    assert cfg.sub_sample_step == [2, 3, 1, 1]
    capi.mli_mov_cfg_for_permute(cfg, np.array([2, 0, 1, 3], np.uint8))
    assert cfg.perm_dim == [2, 0, 1, 3] and cfg.sub_sample_step == [1, 1, 1, 1]


def test_cfg_padding_helpers_use_layout_dims():
    cfg = MovCfg()
    capi.mli_mov_cfg_for_padding2d_hwc(cfg, 1, 2, 3, 4, [0, 0, 0, 0])
    assert cfg.padding_pre == [3, 1, 0, 0] and cfg.padding_post == [4, 2, 0, 0]
    capi.mli_mov_cfg_for_padding2d_chw(cfg, 1, 2, 3, 4, [0, 0, 0, 0])
    assert cfg.padding_pre == [0, 3, 1, 0] and cfg.padding_post == [0, 4, 2, 0]


def test_cfg_all_wraps_to_c_types():
    # int arguments land in uint32 / int32 cfg fields as C converts them
    cfg = MovCfg()
    capi.mli_mov_cfg_all(cfg, [-1, 0, 0, 0], [0] * 4, [1] * 4, [0] * 4, [-5, 0, 0, 0], [3, 1, 2, 0], 255, 0, 0, 0)
    assert cfg.offset[0] == 2**32 - 1
    assert cfg.dst_mem_stride[0] == -5
    assert cfg.perm_dim[0] == 3
    assert cfg.padding_pre[1] == 255


@pytest.mark.parametrize("perm, pad", [([256, 1, 2, 3], 0), ([0, 1, 2, 3], 300), ([0, 1, 2, 3], -1)])
def test_cfg_all_refuses_values_outside_uint8(perm, pad):
    # perm_dim is a uint8_t array and the paddings uint8_t arguments: no C caller can pass 256 or 300
    cfg = MovCfg()
    before = dataclasses.replace(cfg)
    with pytest.raises(MliError) as e:
        capi.mli_mov_cfg_all(cfg, [0] * 4, [0] * 4, [1] * 4, [0] * 4, [0] * 4, perm, pad, 0, 0, 0)
    assert e.value.status is Status.BAD_FUNC_CFG
    assert cfg == before


# ------------------------------------------------------------------ pool and handles
def test_acquire_release_cycle():
    h1, h2 = MovHandle(), MovHandle()
    capi.mli_mov_acquire_handle(2, h1)
    capi.mli_mov_acquire_handle(1, h2)
    assert (h1.dma_ch, h1.num_ch, h1.state) == (0, 2, MovState.OPEN)
    assert h2.dma_ch == 2
    capi.mli_mov_release_handle(h1)
    assert (h1.dma_ch, h1.num_ch, h1.state) == (0, 0, MovState.INVALID)
    h3 = MovHandle()
    capi.mli_mov_acquire_handle(2, h3)
    assert h3.dma_ch == 0


def test_pool_exhaustion_and_set_num_dma_ch():
    capi.mli_mov_set_num_dma_ch(4, 2)
    h = MovHandle()
    capi.mli_mov_acquire_handle(2, h)
    assert h.dma_ch == 4
    before = MovHandle()
    with pytest.raises(MliError) as e:
        capi.mli_mov_acquire_handle(1, before)
    assert e.value.status is Status.NOT_ENGH_MEM
    assert before == MovHandle()
    capi.mli_mov_set_num_dma_ch(0, 0)
    with pytest.raises(MliError):  # an empty pool has no channel for the synchronous move either
        capi.mli_mov_tensor_sync(Tensor.from_numpy(np.arange(3), "FX_8"), MovCfg(), _dst(3, np.int8))


def test_async_flow_runs_callback_once_started():
    src = Tensor.from_numpy(np.arange(6, dtype=np.int16).reshape(2, 3), "FX_16", frac_bits=4)
    dst = _dst(6, rank=2)
    seen = []
    h = MovHandle()
    capi.mli_mov_acquire_handle(1, h)
    capi.mli_mov_registercallback(h, seen.append, 42)
    capi.mli_mov_prepare(h, src, MovCfg(), dst)
    assert h.state is MovState.PREPARED and not capi.mli_mov_isdone(h) and seen == []
    assert dst.data.tolist() == list(range(6))  # host build: the copy happens in prepare
    capi.mli_mov_start(h, src, MovCfg(), dst)
    assert seen == [42] and capi.mli_mov_isdone(h)
    assert capi.mli_mov_wait(h) is Status.OK
    capi.mli_mov_release_handle(h)


def test_wait_on_unstarted_transfer_raises():
    with pytest.raises(MliError):
        capi.mli_mov_wait(MovHandle(state=MovState.PREPARED))


# ------------------------------------------------------------------ semantics
def test_dst_struct_is_filled_from_src():
    src = Tensor.from_numpy(np.arange(12, dtype=np.int8).reshape(3, 4) - 6, "SA_8", zero_point=-3, scale=77,
                            scale_frac_bits=9)
    dst = _dst(12, np.int8, rank=2)
    capi.mli_mov_tensor_sync(src, MovCfg(), dst)
    assert (dst.el_type, dst.shape, dst.mem_stride, dst.rank) == (src.el_type, [3, 4], [4, 1], 2)
    assert (dst.zero_point, dst.scale, dst.scale_frac_bits, dst.dim) == (-3, 77, 9, -1)


def test_dst_keeps_its_own_strides_and_cfg_overrides_them():
    src = Tensor.from_numpy(np.arange(6, dtype=np.int16).reshape(2, 3), "FX_16")
    dst = _dst(20, rank=2)
    dst.mem_stride = [5, 1]
    capi.mli_mov_tensor_sync(src, MovCfg(), dst)
    assert dst.mem_stride == [5, 1]
    assert dst.data[:8].tolist() == [0, 1, 2, 99, 99, 3, 4, 5]
    dst2 = _dst(20, rank=2)
    capi.mli_mov_tensor_sync(src, MovCfg(dst_mem_stride=[4, 1, 0, 0]), dst2)
    assert dst2.mem_stride == [4, 1] and dst2.data[:7].tolist() == [0, 1, 2, 99, 3, 4, 5]


def test_padding_writes_raw_zero_and_padding_precedes_crop():
    src = Tensor.from_numpy(np.array([5, 6, 7], np.int8), "SA_8", zero_point=10, scale=1, scale_frac_bits=0)
    dst = _dst(6, np.int8)
    cfg = MovCfg(offset=[1, 0, 0, 0], padding_pre=[2, 0, 0, 0], padding_post=[1, 0, 0, 0])
    capi.mli_mov_tensor_sync(src, cfg, dst)
    # padded source [0 0 5 6 7 0], cropped from 1: [0 5 6 7 0]
    assert dst.shape == [5] and dst.data.tolist() == [0, 5, 6, 7, 0, 99]


def test_dst_offset_leaves_the_rest_untouched():
    src = Tensor.from_numpy(np.array([[1, 2], [3, 4]], np.int16), "FX_16")
    dst = _dst(16, rank=2)
    dst.mem_stride = [4, 1]
    capi.mli_mov_tensor_sync(src, MovCfg(dst_offset=[1, 2, 0, 0]), dst)
    assert dst.shape == [3, 4]
    assert dst.data.reshape(4, 4).tolist() == [[99] * 4, [99, 99, 1, 2], [99, 99, 3, 4], [99] * 4]


def test_single_memcpy_path_ignores_dst_offset_like_c():
    # src [4] with offset 1 and dst_offset 1 gives a dst of the same shape, so the C library copies the
    # whole source with one memcpy: the offsets have no effect.
    src = Tensor.from_numpy(np.array([1, 2, 3, 4], np.int16), "FX_16")
    dst = _dst(4)
    capi.mli_mov_tensor_sync(src, MovCfg(offset=[1, 0, 0, 0], dst_offset=[1, 0, 0, 0]), dst)
    assert dst.data.tolist() == [1, 2, 3, 4]
    dst2 = _dst(4)
    capi.mli_mov_tensor_sync(src, MovCfg(offset=[2, 0, 0, 0], dst_offset=[1, 0, 0, 0]), dst2)
    assert dst2.data.tolist() == [99, 3, 4, 99]


def test_per_axis_params_are_moved_into_dst_buffers():
    src = Tensor.from_numpy(np.arange(8, dtype=np.int8).reshape(2, 4), "SA_8", zero_point=[1, 2, 3, 4],
                            scale=[10, 20, 30, 40], scale_frac_bits=[5, 6, 7, 8], dim=1)
    dst = _dst(8, np.int8, rank=2)
    dst.el_type = src.el_type
    dst.zero_point, dst.scale, dst.scale_frac_bits = np.zeros(4, np.int16), np.zeros(4, np.int16), np.zeros(4, np.int8)
    zp_buf = dst.zero_point
    cfg = MovCfg(sub_sample_step=[1, 2, 1, 1], perm_dim=[1, 0, 2, 3], padding_pre=[0, 1, 0, 0])
    capi.mli_mov_tensor_sync(src, cfg, dst)
    # along axis 1: padded [pad, c0, c1, c2, c3] stepped by 2 -> [pad, c1, c3]; the axis becomes dim 0
    assert dst.dim == 0 and dst.shape == [3, 2]
    assert dst.zero_point is zp_buf and zp_buf[:3].tolist() == [0, 2, 4]
    assert dst.scale[:3].tolist() == [1, 20, 40] and dst.scale_frac_bits[:3].tolist() == [0, 6, 8]
    assert dst.numpy().tolist() == [[0, 0], [1, 5], [3, 7]]


def test_per_axis_shared_params_need_an_untouched_axis():
    src = Tensor.from_numpy(np.zeros((2, 4), np.int8), "SA_8", zero_point=[0] * 4, scale=[1] * 4,
                            scale_frac_bits=[0] * 4, dim=1)
    dst = _dst(8, np.int8, rank=2)
    dst.zero_point = dst.scale = dst.scale_frac_bits = None
    capi.mli_mov_tensor_sync(src, MovCfg(offset=[1, 0, 0, 0]), dst)  # slicing another axis: shared
    assert dst.scale is src.scale
    dst2 = _dst(8, np.int8, rank=2)
    dst2.zero_point = dst2.scale = dst2.scale_frac_bits = None
    with pytest.raises(MliError) as e:
        capi.mli_mov_tensor_sync(src, MovCfg(offset=[0, 1, 0, 0]), dst2)
    assert e.value.status is Status.SPEC_PARAM_MISMATCH


def test_raw_bytes_are_moved_whatever_the_buffer_dtype():
    src = Tensor(data=np.array([0x04030201, 0x08070605], np.int32), capacity=8, shape=[4], mem_stride=[1], rank=1,
                 el_type=Tensor.zeros([1], "FX_8").el_type)
    dst = Tensor(data=np.zeros(2, np.int32), capacity=8, shape=[0], mem_stride=[0], rank=1)
    capi.mli_mov_tensor_sync(src, MovCfg(), dst)
    assert dst.data.tolist() == [0x04030201, 0]


@pytest.mark.parametrize("mutate, status", [
    (lambda s, d, c: setattr(s, "capacity", 2), Status.NOT_ENGH_MEM),
    (lambda s, d, c: setattr(s, "data", None), Status.BAD_TENSOR),
    (lambda s, d, c: setattr(d, "capacity", 4), Status.NOT_ENGH_MEM),
    (lambda s, d, c: setattr(d, "data", s.data), Status.INCOMPATEBLE_TENSORS),
    (lambda s, d, c: c.offset.__setitem__(0, 40), Status.BAD_TENSOR),
])
def test_checks_report_c_status_and_write_nothing(mutate, status):
    src = Tensor.from_numpy(np.arange(6, dtype=np.int16).reshape(2, 3), "FX_16")
    dst = _dst(6, rank=2)
    cfg = MovCfg()
    mutate(src, dst, cfg)
    before = None if dst.data is src.data else dst.data.copy()
    with pytest.raises(MliError) as e:
        capi.mli_mov_tensor_sync(src, cfg, dst)
    assert e.value.status is status
    if before is not None:
        assert np.array_equal(dst.data, before)


def test_structs_round_trip_golden_json():
    h = capi.STRUCTS["mli_mov_handle_t"].from_dict({"dma_ch": 3, "num_ch": 1, "state": "MLI_MOV_STATE_DMA_RUNNING"})
    assert h.state is MovState.DMA_RUNNING
    assert h.to_dict() == {"dma_ch": 3, "num_ch": 1, "state": "MLI_MOV_STATE_DMA_RUNNING"}
    assert capi.STRUCTS["mli_mov_handle_t"].from_dict({"dma_ch": 0, "num_ch": 0, "state": 0}).state is MovState.INVALID
    d = {"offset": [1, 0, 0, 0], "size": [2, 0, 0, 0], "sub_sample_step": [1, 2, 1, 1], "dst_offset": [0, 1, 0, 0],
         "dst_mem_stride": [9, 1, 0, 0], "perm_dim": [1, 0, 2, 3], "padding_pre": [0, 0, 1, 0],
         "padding_post": [0, 2, 0, 0]}
    assert capi.STRUCTS["mli_mov_cfg_t"].from_dict(d).to_dict() == d

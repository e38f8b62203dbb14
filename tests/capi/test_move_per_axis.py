"""Per-axis SA moves that place the block at a dst_offset on the quantisation axis.

The public goldens have no such move; the expected values below follow the C loops by hand
(mli_mov_prepare moves the per-axis arrays with the same offset / step / padding / dst_offset
as the data along that axis) and were checked against the C library.
"""

from __future__ import annotations

import numpy as np

from pymli import Tensor, capi
from pymli.capi.move import MovCfg, reset_dma_pool


def _src() -> Tensor:
    return Tensor.from_numpy(np.arange(1, 9, dtype=np.int8).reshape(2, 4), "SA_8", zero_point=[1, 2, 3, 4],
                             scale=[10, 20, 30, 40], scale_frac_bits=[4, 5, 6, 7], dim=1)


def _dst(src: Tensor, n_params: int) -> Tensor:
    dst = Tensor(data=np.full(12, 99, np.int8), capacity=12, shape=[0, 0], mem_stride=[0, 0], rank=2,
                 el_type=src.el_type)
    dst.dim = 0
    dst.zero_point = np.full(n_params, 7, np.int16)
    dst.scale = np.full(n_params, 7, np.int16)
    dst.scale_frac_bits = np.full(n_params, 7, np.int8)
    return dst


def test_slice_with_step_lands_at_dst_offset_on_the_quant_axis():
    reset_dma_pool()
    src = _src()
    dst = _dst(src, 5)
    # axis 1: [c0 c1 c2 c3 | pad] from offset 1, step 2 -> c1, c3 (the pad is never reached); placed
    # from column 2 of rows of 5 elements
    cfg = MovCfg(offset=[0, 1, 0, 0], sub_sample_step=[1, 2, 1, 1], dst_offset=[0, 2, 0, 0],
                 dst_mem_stride=[5, 1, 0, 0], padding_post=[0, 1, 0, 0])
    capi.mli_mov_tensor_sync(src, cfg, dst)
    assert (dst.rank, dst.shape, dst.mem_stride, dst.dim) == (2, [2, 4], [5, 1], 1)
    assert dst.data.tolist() == [99, 99, 2, 4, 99, 99, 99, 6, 8, 99, 99, 99]
    assert dst.zero_point.tolist() == [7, 7, 2, 4, 7]
    assert dst.scale.tolist() == [7, 7, 20, 40, 7]
    assert dst.scale_frac_bits.tolist() == [7, 7, 5, 7, 7]


def test_padding_on_the_quant_axis_writes_neutral_params_after_dst_offset():
    reset_dma_pool()
    src = _src()
    dst = _dst(src, 7)
    dst.data = np.full(14, 99, np.int8)
    dst.capacity = 14
    # axis 1 padded by one in front: [pad c0 c1 c2 c3], dst_offset 1 -> 6 columns, params [7, pad, p0..p3]
    cfg = MovCfg(dst_offset=[0, 1, 0, 0], padding_pre=[0, 1, 0, 0])
    capi.mli_mov_tensor_sync(src, cfg, dst)
    assert (dst.shape, dst.mem_stride, dst.dim) == ([2, 6], [6, 1], 1)
    assert dst.data.tolist() == [99, 0, 1, 2, 3, 4, 99, 0, 5, 6, 7, 8, 99, 99]
    assert dst.zero_point.tolist() == [7, 0, 1, 2, 3, 4, 7]
    assert dst.scale.tolist() == [7, 1, 10, 20, 30, 40, 7]
    assert dst.scale_frac_bits.tolist() == [7, 0, 4, 5, 6, 7, 7]

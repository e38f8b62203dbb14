"""The mli_hlp_* query and sub-tensor helpers."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pymli import ElType, MliError, Platform, Status, Tensor, use_platform
from pymli.capi import helpers as H
from pymli.capi.types import PointToSubtsrCfg, SubTensorCfg
from pymli.tensor import address

CHECKED = Platform(name="chk", debug_mode="DBG_MODE_RET_CODES")


def fx8(shape=(2, 3, 4)) -> Tensor:
    return Tensor.from_numpy(np.arange(np.prod(shape), dtype=np.int8).reshape(shape), ElType.FX_8, frac_bits=5)


def sa8_axis(shape=(2, 3, 4), dim=2) -> Tensor:
    n = shape[dim]
    return Tensor.from_numpy(np.arange(np.prod(shape), dtype=np.int8).reshape(shape), ElType.SA_8, dim=dim,
                             zero_point=np.arange(n) - 1, scale=100 + np.arange(n), scale_frac_bits=10 + np.arange(n))


def test_count_elem_num() -> None:
    t = fx8()
    assert [H.mli_hlp_count_elem_num(t, d) for d in range(3)] == [24, 12, 4]
    assert H.mli_hlp_count_elem_num(Tensor.from_numpy(np.int8(3), ElType.FX_8), 0) == 1
    assert H.mli_hlp_count_elem_num(dataclasses.replace(t, rank=5), 0) == 0
    # start_dim == rank: 0 in a checked build, an empty product in a release build
    with use_platform(CHECKED):
        assert H.mli_hlp_count_elem_num(t, 3) == 0
    assert H.mli_hlp_count_elem_num(t, 3) == 1


def test_element_size_and_params() -> None:
    sizes = {ElType.FX_8: 1, ElType.FX_16: 2, ElType.SA_8: 1, ElType.SA_32: 4, ElType.FP_32: 4, ElType.FX_4: 0,
             ElType.FP_16: 0}
    for el, n in sizes.items():
        assert H.mli_hlp_tensor_element_size(Tensor(el_type=el)) == n
    t = fx8()
    assert (H.mli_hlp_tensor_scale(t, 0), H.mli_hlp_tensor_scale_shift(t, 0), H.mli_hlp_tensor_zero_offset(t, 0)) == (1, 5, 0)
    f = Tensor(el_type=ElType.FP_32)
    assert (H.mli_hlp_tensor_scale(f, 3), H.mli_hlp_tensor_scale_shift(f, 3), H.mli_hlp_tensor_zero_offset(f, 3)) == (1, 0, 0)
    s = sa8_axis()
    assert [H.mli_hlp_tensor_scale(s, i) for i in range(4)] == [100, 101, 102, 103]
    assert [H.mli_hlp_tensor_scale_shift(s, i) for i in range(4)] == [10, 11, 12, 13]
    assert [H.mli_hlp_tensor_zero_offset(s, i) for i in range(4)] == [-1, 0, 1, 2]
    p = Tensor.from_numpy(np.zeros(3, np.int32), ElType.SA_32, zero_point=-7, scale=99, scale_frac_bits=-3)
    assert (H.mli_hlp_tensor_scale(p, 5), H.mli_hlp_tensor_scale_shift(p, 5), H.mli_hlp_tensor_zero_offset(p, 5)) == (99, -3, -7)
    assert H.mli_hlp_tensor_scale(Tensor(el_type=ElType.FX_4), 0) == 0


def test_data_ptr_cmp() -> None:
    a = fx8()
    assert H.mli_hlp_tensor_data_ptr_cmp(a, dataclasses.replace(a))
    assert not H.mli_hlp_tensor_data_ptr_cmp(a, fx8())
    assert not H.mli_hlp_tensor_data_ptr_cmp(a, dataclasses.replace(a, el_type=ElType.SA_8))
    assert not H.mli_hlp_tensor_data_ptr_cmp(a, dataclasses.replace(a, rank=0))


def test_guard_bits() -> None:
    assert (H.mli_hlp_accu_guard_bits_sa8_sa8(), H.mli_hlp_accu_guard_bits_fx16_fx16(),
            H.mli_hlp_accu_guard_bits_fx16_fx8()) == (16, 32, 8)


def test_set_tensor_mem_strides() -> None:
    t = dataclasses.replace(fx8(), mem_stride=[0, 0, 0])
    H.mli_hlp_set_tensor_mem_strides(t)
    assert t.mem_stride[:3] == [12, 4, 1]
    # rank 5: mem_stride[4] is shape[0] and shape[4] is rank in the C struct
    r5 = Tensor(data=np.zeros(4, np.int32), capacity=8, shape=[2], mem_stride=[1], rank=5, el_type=ElType.SA_32)
    H.mli_hlp_set_tensor_mem_strides(r5)
    assert (r5.shape, r5.mem_stride, r5.rank) == ([1, 0, 0, 0], [0, 0, 0, 5], 5)


def test_point_to_subtensor() -> None:
    t = fx8()
    out = Tensor(el_type=ElType.FX_8, shape=[0], mem_stride=[1], rank=1)
    H.mli_hlp_point_to_subtensor(t, PointToSubtsrCfg(start_coord=[1, 2, 1, 0], coord_num=3, first_out_dim_size=2), out)
    assert (out.rank, out.shape[:1], out.capacity, out.frac_bits) == (1, [2], 2, 5)
    assert address(out.data) == address(t.data) + 12 + 8 + 1
    out.view()[...] = [-1, -2]  # writes land in the input buffer
    assert t.numpy()[1, 2, 1:3].tolist() == [-1, -2]
    flat = Tensor.from_numpy(np.arange(10, dtype=np.int16), ElType.FX_16, frac_bits=3)
    out2 = Tensor(el_type=ElType.SA_8, shape=[0], mem_stride=[1], rank=1)
    H.mli_hlp_point_to_subtensor(flat, PointToSubtsrCfg(start_coord=[4, 0, 0, 0], coord_num=1, first_out_dim_size=5), out2)
    assert (out2.el_type, out2.rank, out2.shape[:1], out2.capacity, out2.numpy().tolist()) == \
        (ElType.FX_16, 1, [5], 10, [4, 5, 6, 7, 8])


@pytest.mark.parametrize("cfg,out_ms,want", [
    (PointToSubtsrCfg([0, 0, 0, 0], 4, 1), [1], Status.BAD_FUNC_CFG),           # more coordinates than rank
    (PointToSubtsrCfg([2, 0, 0, 0], 1, 1), [1], Status.BAD_FUNC_CFG),           # start outside
    (PointToSubtsrCfg([1, 2, 3, 0], 3, 2), [1], Status.BAD_FUNC_CFG),           # end outside
    (PointToSubtsrCfg([1, 2, 0, 0], 3, 2), [2], Status.INCOMPATEBLE_TENSORS),   # out layout not contiguous
    (PointToSubtsrCfg([1, 0, 0, 0], 1, 1), [1], Status.INCOMPATEBLE_TENSORS),   # out rank 3 is not "contiguous"
])
def test_point_to_subtensor_checks(cfg, out_ms, want) -> None:
    out = Tensor(el_type=ElType.FX_8, shape=[0], mem_stride=out_ms, rank=1)
    with pytest.raises(MliError) as e:
        H.mli_hlp_point_to_subtensor(fx8(), cfg, out)
    assert e.value.status is want
    assert out.data is None


def test_create_subtensor_strided_and_per_axis() -> None:
    s = sa8_axis()
    out = Tensor()
    H.mli_hlp_create_subtensor(s, SubTensorCfg(offset=[1, 0, 1, 0], size=[1, 3, 2, 0], sub_tensor_rank=2), out)
    assert (out.rank, out.shape[:2], out.mem_stride[:2]) == (2, [3, 2], [4, 1])
    assert out.capacity == s.capacity - (12 + 1)
    assert out.dim == 1 and out.scale.tolist()[:2] == [101, 102] and out.zero_point.tolist()[:2] == [0, 1]
    assert np.array_equal(out.numpy(), s.numpy()[1, :, 1:3])
    out.view()[...] = 0
    assert np.all(s.numpy()[1, :, 1:3] == 0)
    # the quantised axis dropped (size 1): per-tensor values of the selected index
    out2 = Tensor()
    H.mli_hlp_create_subtensor(s, SubTensorCfg(offset=[0, 1, 3, 0], size=[2, 1, 1, 0], sub_tensor_rank=1), out2)
    assert (out2.rank, out2.shape[:1], out2.mem_stride[:1], out2.dim) == (1, [2], [12], -1)
    assert (out2.scale, out2.zero_point, out2.scale_frac_bits) == (103, 2, 13)


def test_create_subtensor_checks_and_fp32() -> None:
    t = fx8()
    for cfg in (SubTensorCfg([0, 0, 0, 0], [1, 1, 1, 0], 4), SubTensorCfg([0, 3, 0, 0], [1, 1, 1, 0], 3),
                SubTensorCfg([0, 1, 0, 0], [1, 3, 1, 0], 3)):
        with pytest.raises(MliError) as e:
            H.mli_hlp_create_subtensor(t, cfg, Tensor())
        assert e.value.status is Status.BAD_FUNC_CFG
    f = Tensor.from_numpy(np.zeros((2, 2), np.float32), ElType.FP_32)
    with pytest.raises(MliError) as e:
        H.mli_hlp_create_subtensor(f, SubTensorCfg([0, 0, 0, 0], [1, 1, 0, 0], 2), Tensor())
    assert e.value.status is Status.NOT_SUPPORTED

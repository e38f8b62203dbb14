"""The entry normaliser every capi function runs first (:mod:`pymli.checks.entry`, issue 13 items 1-4)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pymli import ElType, Lut, MliError, Status, Tensor, capi
from pymli.capi.move import MovCfg, MovHandle, reset_dma_pool
from pymli.capi.types import Conv2dCfg, PermuteCfg, PoolCfg, ReluCfg, ReluType, RnnCellCfg, SubTensorCfg
from pymli.checks.entry import check_budget
from pymli.config import DEFAULT_MEMORY_BUDGET, get_memory_budget, set_memory_budget

SENT = 0x5A


def _fx16(vals, fb=4) -> Tensor:
    return Tensor.from_numpy(np.asarray(vals, np.int16), ElType.FX_16, frac_bits=fb)


def _in_base(vals: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """``vals`` as a view of ``kind`` inside a sentinel-filled base; returns (view, base)."""
    n = vals.shape[0]
    base = np.full(8 * n + 32, SENT, np.uint8)
    body = base[16: 16 + 6 * n * vals.itemsize].view(vals.dtype)
    if kind == "negative":
        v = body[:n][::-1]
    elif kind == "step2":
        v = body[::2][:n]
    elif kind == "step3":
        v = body[::3][:n]
    else:
        raise ValueError(kind)
    v[...] = vals
    return v, base


def _relu(x: Tensor) -> Tensor:
    out = Tensor.zeros(x.shape[: x.rank], x.el_type, frac_bits=x.frac_bits)
    capi.mli_krn_relu_fx16(x, ReluCfg(ReluType.GEN), out)
    return out


# ---------------------------------------------------------------------------------------------- views
@pytest.mark.parametrize("kind", ["negative", "step2", "step3"])
def test_input_view_is_read_through_its_strides(kind: str) -> None:
    vals = np.arange(-6, 6, dtype=np.int16)
    dense = _relu(_fx16(vals.reshape(3, 4)))
    view, base = _in_base(vals, kind)
    before = base.copy()
    x = Tensor(data=view, capacity=view.nbytes, shape=[3, 4], mem_stride=[4, 1], rank=2, el_type=ElType.FX_16,
               frac_bits=4)
    assert np.array_equal(_relu(x).numpy(), dense.numpy())
    assert np.array_equal(base, before)  # an input is never written
    assert x.data is view  # the caller's struct keeps its view


def test_zero_stride_input_reads_one_value_everywhere() -> None:
    one = np.array([7], np.int16)
    view = np.lib.stride_tricks.as_strided(one, shape=(6,), strides=(0,))
    x = Tensor(data=view, capacity=12, shape=[6], mem_stride=[1], rank=1, el_type=ElType.FX_16, frac_bits=0)
    assert _relu(x).numpy().tolist() == [7] * 6


@pytest.mark.parametrize("kind", ["negative", "step2"])
def test_output_view_written_only_through_the_view(kind: str) -> None:
    vals = np.arange(-4, 4, dtype=np.int16)
    x = _fx16(vals)
    view, base = _in_base(np.zeros(8, np.int16), kind)
    out = Tensor(data=view, capacity=view.nbytes, shape=[8], mem_stride=[1], rank=1, el_type=ElType.FX_16,
                 frac_bits=4)
    mask = np.zeros(base.shape[0], bool)
    start = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    for i in range(8):
        mask[start + i * view.strides[0]: start + i * view.strides[0] + 2] = True
    before = base.copy()
    capi.mli_krn_relu_fx16(x, ReluCfg(ReluType.GEN), out)
    assert view.tolist() == np.maximum(vals, 0).tolist()
    assert np.array_equal(base[~mask], before[~mask])
    assert out.data is view


def test_read_only_output_refused_and_untouched() -> None:
    data = np.full(4, 3, np.int16)
    data.flags.writeable = False
    out = Tensor(data=data, capacity=8, shape=[4], mem_stride=[1], rank=1, el_type=ElType.FX_16, frac_bits=4)
    with pytest.raises(MliError) as e:
        capi.mli_krn_relu_fx16(_fx16([1, -2, 3, -4]), ReluCfg(ReluType.GEN), out)
    assert e.value.status is Status.BAD_TENSOR
    assert data.tolist() == [3] * 4


def test_failing_call_through_a_view_writes_nothing() -> None:
    view, base = _in_base(np.zeros(4, np.int16), "negative")
    before = base.copy()
    out = Tensor(data=view, capacity=8, shape=[4], mem_stride=[1], rank=1, el_type=ElType.FX_16, frac_bits=4)
    with pytest.raises(MliError):
        capi.mli_krn_relu_fx16(_fx16([1, 2, 3, 4, 5, 6]), ReluCfg(ReluType.GEN), out)
    assert np.array_equal(base, before)


def test_point_to_subtensor_keeps_the_callers_view() -> None:
    vals = np.arange(10, dtype=np.int16)
    view, _ = _in_base(vals, "step2")
    x = Tensor(data=view, capacity=view.nbytes, shape=[10], mem_stride=[1], rank=1, el_type=ElType.FX_16)
    out = Tensor(el_type=ElType.FX_16, shape=[0], mem_stride=[1], rank=1)
    capi.mli_hlp_point_to_subtensor(x, capi.PointToSubtsrCfg(start_coord=[4, 0, 0, 0], coord_num=1,
                                                             first_out_dim_size=5), out)
    assert np.shares_memory(out.data, view) and out.numpy().tolist() == [4, 5, 6, 7, 8]
    assert _relu(out).numpy().tolist() == [4, 5, 6, 7, 8]  # a kernel reads the strided sub-view


# ---------------------------------------------------------------------------------------------- containers
@pytest.mark.parametrize("data", [[1, 2, 3, 4], b"\x00" * 8, np.zeros((2, 2), np.int16), np.asarray(3, np.int16),
                                  np.zeros(4, object)], ids=["list", "bytes", "2d", "0d", "object"])
def test_data_that_is_no_c_buffer_is_refused(data) -> None:
    x = Tensor(data=data, capacity=8, shape=[4], mem_stride=[1], rank=1, el_type=ElType.FX_16)
    with pytest.raises(MliError) as e:
        capi.mli_krn_relu_fx16(x, ReluCfg(), Tensor.zeros((4,), "FX_16"))
    assert e.value.status is Status.BAD_TENSOR


def test_input_of_another_dtype_is_read_as_its_bytes() -> None:
    vals = np.array([1, -2, 300, -400], np.int16)
    x = Tensor(data=vals.view(np.int8), capacity=8, shape=[4], mem_stride=[1], rank=1, el_type=ElType.FX_16)
    assert _relu(x).numpy().tolist() == [1, 0, 300, 0]


@pytest.mark.parametrize("arg", ["in_", "cfg", "out"])
def test_none_is_refused(arg: str) -> None:
    args = dict(in_=_fx16([1, 2]), cfg=ReluCfg(), out=Tensor.zeros((2,), "FX_16"))
    args[arg] = None
    with pytest.raises(MliError) as e:
        capi.mli_krn_relu_fx16(**args)
    assert e.value.status is (Status.BAD_FUNC_CFG if arg == "cfg" else Status.BAD_TENSOR)


# ---------------------------------------------------------------------------------------------- fields
@pytest.mark.parametrize("field, value", [
    ("rank", 2**64 - 1), ("rank", -1), ("rank", 5), ("rank", 2.0), ("rank", None), ("rank", True),
    ("shape", [2**32]), ("shape", [-1]), ("shape", [1.5]), ("shape", [1, 1, 1, 1, 1]), ("shape", "ab"),
    ("mem_stride", [2**31]), ("mem_stride", [float("nan")]), ("capacity", -1), ("capacity", 2**32),
    ("capacity", float("inf")), ("el_type", 999), ("el_type", "FX_16"), ("frac_bits", 128), ("frac_bits", -129),
    ("frac_bits", 0.5), ("dim", 2**31), ("zero_point", 2**15), ("scale", [1, 2]),
])
def test_fields_outside_their_c_type_are_refused(field: str, value) -> None:
    x = _fx16([1, -2, 3, -4])
    setattr(x, field, value)
    out = Tensor.zeros((4,), "FX_16")
    before = out.data.copy()
    with pytest.raises(MliError) as e:
        capi.mli_krn_relu_fx16(x, ReluCfg(ReluType.GEN), out)
    assert e.value.status is Status.BAD_TENSOR
    assert np.array_equal(out.data, before)


def test_numpy_integer_fields_are_converted_on_a_shadow() -> None:
    x = _fx16([1, -2, 3, -4])
    x.rank, x.shape, x.frac_bits = np.int64(1), [np.uint32(4)], np.int8(4)
    out = Tensor.zeros((4,), "FX_16", frac_bits=4)
    capi.mli_krn_relu_fx16(x, ReluCfg(ReluType.GEN), out)
    assert out.numpy().tolist() == [1, 0, 3, 0]
    assert type(x.rank) is np.int64 and type(x.shape[0]) is np.uint32  # the caller's struct untouched


def test_sa_per_tensor_array_refused_before_anything_is_written() -> None:
    # F11: permute read the parameters after writing the first byte
    x = Tensor.from_numpy(np.arange(6).reshape(1, 2, 3), "SA_8", zero_point=0, scale=1, scale_frac_bits=0)
    x.scale_frac_bits = np.asarray([-191, 155, 47])
    out = Tensor.zeros((3, 2, 1), "SA_8", zero_point=0, scale=1, scale_frac_bits=0)
    before = out.data.copy()
    with pytest.raises(MliError) as e:
        capi.mli_krn_permute_sa8(x, PermuteCfg([2, 1, 0, 3]), out)
    assert e.value.status is Status.BAD_TENSOR
    assert np.array_equal(out.data, before)


# ---------------------------------------------------------------------------------------------- cfg structs
@pytest.mark.parametrize("field, value", [("stride_width", 256), ("stride_width", -1), ("padding_top", 2**31),
                                          ("dilation_width", float("nan")), ("stride_height", "1"),
                                          ("relu", None)])
def test_conv_cfg_fields_outside_uint8_are_refused(field: str, value) -> None:
    cfg = Conv2dCfg()
    object.__setattr__(cfg, field, value)
    x = Tensor.from_numpy(np.ones((3, 3, 1), np.int16), "FX_16", frac_bits=0)
    w = Tensor.from_numpy(np.ones((1, 1, 1, 1), np.int16), "FX_16", frac_bits=0)
    b = Tensor.from_numpy(np.zeros(1, np.int16), "FX_16", frac_bits=0)
    out = Tensor.zeros((3, 3, 1), "FX_16")
    with pytest.raises(MliError) as e:
        capi.mli_krn_conv2d_hwcn_fx16(x, w, b, cfg, out)
    assert e.value.status is Status.BAD_FUNC_CFG


@pytest.mark.parametrize("value", [7, -1, 2**31, "MLI_BOGUS", 1.0, None])
def test_enum_values_outside_the_c_enum_are_refused(value) -> None:
    cfg = ReluCfg()
    object.__setattr__(cfg, "type", value)
    with pytest.raises(MliError) as e:
        capi.mli_krn_relu_fx16(_fx16([1]), cfg, Tensor.zeros((1,), "FX_16"))
    assert e.value.status is Status.BAD_FUNC_CFG


@pytest.mark.parametrize("value", [1, "MLI_RELU_GEN", ReluType.GEN])
def test_enum_members_by_value_or_c_name(value) -> None:
    cfg = ReluCfg()
    object.__setattr__(cfg, "type", value)
    out = Tensor.zeros((2,), "FX_16", frac_bits=4)
    capi.mli_krn_relu_fx16(_fx16([5, -5]), cfg, out)
    assert out.numpy().tolist() == [5, 0]
    assert cfg.type == value  # the caller's cfg is not rewritten


def test_rnn_cell_cfg_enum_field_refused() -> None:
    cfg = RnnCellCfg()
    object.__setattr__(cfg, "results", {"a": 1})
    with pytest.raises(MliError) as e:
        capi.mli_krn_gru_cell_fx16(*[_fx16([1])] * 5, Lut(), Lut(), cfg, _fx16([1]))
    assert e.value.status is Status.BAD_FUNC_CFG


def test_out_cfg_and_handle_filled_only_on_success() -> None:
    reset_dma_pool()
    cfg = MovCfg(offset=[1, 2, 3, 4])
    snapshot = dataclasses.replace(cfg)
    with pytest.raises(MliError):
        capi.mli_mov_cfg_for_slice(cfg, [0, 0, 0, 0], [0, 0, 0, 0], [2**31, 0, 0, 0])
    assert cfg == snapshot
    capi.mli_mov_cfg_for_slice(cfg, [0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0])
    assert cfg.offset == [0, 1, 0, 0]
    h = MovHandle()
    with pytest.raises(MliError):
        capi.mli_mov_acquire_handle(2.5, h)
    assert h == MovHandle()


def test_scalar_arguments_checked_against_their_c_type() -> None:
    x = _fx16([1, 2, 3])
    assert capi.mli_hlp_count_elem_num(x, 0) == 3
    for bad in (-1, 2**32, 0.0, None, "0"):
        with pytest.raises(MliError) as e:
            capi.mli_hlp_count_elem_num(x, bad)
        assert e.value.status is Status.BAD_FUNC_CFG


def test_sub_tensor_cfg_arrays_longer_than_the_c_array_refused() -> None:
    x = _fx16([1, 2, 3])
    with pytest.raises(MliError) as e:
        capi.mli_hlp_create_subtensor(x, SubTensorCfg(offset=[0] * 5, size=[1, 0, 0, 0], sub_tensor_rank=1), Tensor())
    assert e.value.status is Status.BAD_FUNC_CFG


def test_pool_cfg_kernel_beyond_uint8_refused() -> None:
    x = Tensor.from_numpy(np.ones((3, 3, 1), np.int16), "FX_16")
    with pytest.raises(MliError) as e:
        capi.mli_krn_maxpool_hwc_fx16(x, PoolCfg(kernel_width=2**20, kernel_height=1), Tensor.zeros((3, 3, 1), "FX_16"))
    assert e.value.status is Status.BAD_FUNC_CFG


# ---------------------------------------------------------------------------------------------- budget
def test_tensor_zeros_beyond_the_budget_refused_before_allocating() -> None:
    with pytest.raises(MliError) as e:
        Tensor.zeros((2**20, 2**20), "FX_16")
    assert e.value.status is Status.NOT_ENGH_MEM


def test_budget_is_configurable() -> None:
    assert get_memory_budget() == DEFAULT_MEMORY_BUDGET
    try:
        set_memory_budget(1024)
        with pytest.raises(MliError) as e:
            Tensor.zeros((600,), "FX_16")
        assert e.value.status is Status.NOT_ENGH_MEM
        assert Tensor.zeros((512,), "FX_16").capacity == 1024
        with pytest.raises(MliError):
            check_budget(1025)
    finally:
        set_memory_budget(DEFAULT_MEMORY_BUDGET)
    with pytest.raises(ValueError):
        set_memory_budget(0)


def test_fast_path_and_full_path_agree() -> None:
    # the same call with canonical fields (fast path) and NumPy-integer fields (full path)
    vals = np.array([3, -1, 4, -1, 5, -9], np.int16)
    a = _relu(_fx16(vals))
    x = _fx16(vals)
    x.capacity = np.int32(x.capacity)
    assert np.array_equal(_relu(x).numpy(), a.numpy())

"""Tensor validation (mli_tensor rules of the MLI 2.0 spec) with the statuses of the checked C build."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pymli import ElType, MliError, Status, Tensor
from pymli.capi.helpers import mli_hlp_convert_tensor
from pymli.checks import check_quant_params, check_scalar_tensor, check_tensor, tensor_is_scalar


def fx16(**kw) -> Tensor:
    """A valid dense 2x3x4 FX_16 tensor with the fields in ``kw`` replaced."""
    t = Tensor.from_numpy(np.arange(24, dtype=np.int16).reshape(2, 3, 4), ElType.FX_16, frac_bits=8)
    return dataclasses.replace(t, **kw)


def sa8_per_axis(n=3) -> Tensor:
    return Tensor.from_numpy(np.zeros((2, n), np.int8), ElType.SA_8, dim=1, zero_point=np.zeros(n),
                             scale=np.full(n, 16384), scale_frac_bits=np.full(n, 14))


def status(t: Tensor, **kw) -> Status:
    try:
        check_tensor(t, **kw)
    except MliError as e:
        return e.status
    return Status.OK


def test_valid_tensors_pass() -> None:
    assert status(fx16()) is Status.OK
    assert status(sa8_per_axis(), check_quant=True) is Status.OK
    # a strided view with gaps is valid when its capacity covers the span
    base = np.zeros(100, np.int16)
    t = Tensor(data=base, capacity=200, shape=[3, 4], mem_stride=[10, 2], rank=2, el_type=ElType.FX_16)
    assert status(t) is Status.OK
    assert fx16().validate() is not None


@pytest.mark.parametrize("kw,want", [
    (dict(capacity=47), Status.NOT_ENGH_MEM),                      # shape needs 48 bytes
    (dict(shape=[2, 3, 5]), Status.BAD_TENSOR),                    # dims grow past the strides
    (dict(rank=5, shape=[1, 2, 3, 4, 1], mem_stride=[24, 12, 4, 1, 1]), Status.BAD_TENSOR),
    (dict(data=None), Status.BAD_TENSOR),                          # NULL data
    (dict(shape=[2, 0, 4]), Status.BAD_TENSOR),                    # empty tensor
    (dict(mem_stride=[12, 4, 0]), Status.BAD_TENSOR),              # zero stride
    (dict(mem_stride=[12, -4, 1]), Status.BAD_TENSOR),             # negative stride
    (dict(mem_stride=[11, 4, 1]), Status.BAD_TENSOR),              # stride smaller than the dense one
    (dict(mem_stride=[12, 3, 1]), Status.BAD_TENSOR),
    (dict(capacity=2**31), Status.BAD_TENSOR),                     # capacity above INT32_MAX
    (dict(shape=[2, 3, 4], mem_stride=[0, 0, 0]), Status.BAD_TENSOR),  # "dense" zeros are for helpers only
])
def test_tensor_conflicts(kw: dict, want: Status) -> None:
    assert status(fx16(**kw)) is want


def test_capacity_is_checked_against_the_strided_span() -> None:
    base = np.zeros(100, np.int16)
    t = Tensor(data=base, capacity=2 * (1 + 2 * 10 + 3 * 2) - 1, shape=[3, 4], mem_stride=[10, 2], rank=2,
               el_type=ElType.FX_16)
    assert status(t) is Status.NOT_ENGH_MEM
    assert status(dataclasses.replace(t, capacity=t.capacity + 1)) is Status.OK


def test_span_wraps_like_c_int() -> None:
    # (65536-1)*65536 + 65535 + 1 = 2**32 elements: C's int span wraps to 0 and the check passes
    # (as does any span of 2**31 elements or more: it wraps negative).
    t = Tensor(data=np.zeros(1, np.int8), capacity=1, shape=[65536, 65536], mem_stride=[65536, 1], rank=2,
               el_type=ElType.FX_8)
    assert status(t) is Status.OK
    assert status(dataclasses.replace(t, shape=[32768, 65536])) is Status.OK
    assert status(dataclasses.replace(t, shape=[16384, 65536])) is Status.NOT_ENGH_MEM


def test_per_axis_arrays_of_wrong_length() -> None:
    t = sa8_per_axis(3)
    for name in ("scale", "zero_point", "scale_frac_bits"):
        bad = dataclasses.replace(t, **{name: np.asarray(getattr(t, name))[:2]})
        assert status(bad, check_quant=True) is Status.BAD_TENSOR, name
        assert status(bad) is Status.OK  # quantisation is not checked unless asked
    longer = dataclasses.replace(t, scale=np.full(5, 100, np.int16))
    assert status(longer, check_quant=True) is Status.OK


def test_quant_dim_and_scales() -> None:
    t = sa8_per_axis(3)
    assert status(dataclasses.replace(t, dim=2), check_quant=True) is Status.BAD_TENSOR
    assert status(dataclasses.replace(t, scale=np.array([1, 0, 1], np.int16)), check_quant=True) is Status.BAD_TENSOR
    assert status(dataclasses.replace(t, scale=np.array([1, -3, 1], np.int16)), check_quant=True) is Status.BAD_TENSOR
    per_tensor = Tensor.from_numpy(np.zeros(4, np.int8), ElType.SA_8, scale=0)
    assert status(per_tensor, check_quant=True) is Status.BAD_TENSOR
    assert status(dataclasses.replace(per_tensor, scale=-1), check_quant=True) is Status.BAD_TENSOR
    assert status(dataclasses.replace(per_tensor, scale=7), check_quant=True) is Status.OK


def test_zero_point_ranges() -> None:
    t = Tensor.from_numpy(np.zeros(4, np.int8), ElType.SA_8, scale=1, zero_point=200)
    check_quant_params(t)  # the full 16-bit range is the default
    with pytest.raises(MliError) as e:
        check_quant_params(t, zp_used_bits=7)
    assert e.value.status is Status.INCOMPATEBLE_TENSORS
    with pytest.raises(MliError) as e:
        check_quant_params(dataclasses.replace(t, zero_point=1), zp_used_bits=0)
    assert e.value.status is Status.INCOMPATEBLE_TENSORS
    # a scale error is reported before a zero-point error of the same index
    with pytest.raises(MliError) as e:
        check_quant_params(dataclasses.replace(t, scale=0), zp_used_bits=7)
    assert e.value.status is Status.BAD_TENSOR


def test_scalar_tensors() -> None:
    s = Tensor.from_numpy(np.int16(5), ElType.FX_16)
    assert s.rank == 0 and tensor_is_scalar(s)
    check_scalar_tensor(s)
    # mli_chk_tensor reads the value as the data pointer: 0 is NULL, anything else lacks capacity
    assert status(s) is Status.NOT_ENGH_MEM
    assert status(dataclasses.replace(s, value=0)) is Status.BAD_TENSOR
    one = Tensor.from_numpy(np.ones((1, 1), np.int8), ElType.FX_8)
    assert tensor_is_scalar(one)
    check_scalar_tensor(one)
    with pytest.raises(MliError) as e:
        check_scalar_tensor(Tensor.from_numpy(np.ones(2, np.int8), ElType.FX_8))
    assert e.value.status is Status.SHAPE_MISMATCH


def test_a_function_reports_the_check_status() -> None:
    src = fx16(capacity=10)
    dst = fx16()
    before = dst.data.copy()
    with pytest.raises(MliError) as e:
        mli_hlp_convert_tensor(src, dst)
    assert e.value.status is Status.NOT_ENGH_MEM
    assert np.array_equal(dst.data, before)

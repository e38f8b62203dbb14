"""pymli.checks.tensor: each generic struct check raises the status of the checked C build."""

from __future__ import annotations

import numpy as np
import pytest

from pymli import MliError, Status, Tensor
from pymli.checks import tensor as T
from pymli.checks.lut import check_create_lut
from pymli.tensor import Lut


def _t(shape=(2, 3), el="FX_16", **kw) -> Tensor:
    return Tensor.from_numpy(np.zeros(shape, Tensor.zeros((1,), el).el_type.dtype), el, **kw)


def _status(fn, *args, **kw) -> Status:
    with pytest.raises(MliError) as e:
        fn(*args, **kw)
    return e.value.status


def test_valid_tensor_passes_and_validate_delegates() -> None:
    t = _t()
    T.check_tensor(t)
    assert t.validate() is t and T.validate_tensor(t) is t


@pytest.mark.parametrize("change, status", [
    (lambda t: setattr(t, "data", None), Status.BAD_TENSOR),
    (lambda t: setattr(t, "rank", 5), Status.BAD_TENSOR),
    (lambda t: setattr(t, "mem_stride", [3, 0]), Status.BAD_TENSOR),
    (lambda t: setattr(t, "mem_stride", [2, 1]), Status.BAD_TENSOR),  # rows overlap
    (lambda t: setattr(t, "shape", [2, 0]), Status.BAD_TENSOR),
    (lambda t: setattr(t, "capacity", 11), Status.NOT_ENGH_MEM),
])
def test_check_tensor_statuses(change, status) -> None:
    t = _t()
    change(t)
    assert _status(T.check_tensor, t) is status


def test_null_tensor() -> None:
    assert _status(T.check_tensor, None) is Status.BAD_TENSOR
    assert _status(T.check_scalar_tensor, None) is Status.BAD_TENSOR


def test_quant_params() -> None:
    t = _t(el="SA_8", zero_point=0, scale=1, scale_frac_bits=0)
    T.check_quant_params(t)
    t.scale = 0
    assert _status(T.check_quant_params, t) is Status.BAD_TENSOR
    t.scale, t.zero_point = 1, 200
    assert _status(T.check_quant_params, t, 7) is Status.INCOMPATEBLE_TENSORS
    p = _t(el="SA_8", zero_point=[0, 0, 0], scale=[1, 1, 1], scale_frac_bits=[0, 0, 0], dim=1)
    T.check_quant_params(p)
    p.dim = 2
    assert _status(T.check_quant_params, p) is Status.BAD_TENSOR
    p.dim, p.scale = 1, np.array([1, 1], np.int16)
    assert _status(T.check_quant_params, p) is Status.BAD_TENSOR


def test_scalar_tensor() -> None:
    T.check_scalar_tensor(Tensor.from_numpy(np.int16(3), "FX_16"))
    T.check_scalar_tensor(_t(shape=(1,)))
    assert _status(T.check_scalar_tensor, _t(shape=(2,))) is Status.SHAPE_MISMATCH


def test_rank0_value_is_the_data_pointer() -> None:
    t = Tensor.from_numpy(np.int16(0), "FX_16")
    t.capacity = 2
    assert T.data_is_null(t)
    assert _status(T.check_tensor, t) is Status.BAD_TENSOR
    t.value = 7
    assert not T.data_is_null(t)
    T.check_tensor(t)


def test_predicates() -> None:
    a, b = _t(), _t()
    assert T.same_shape(a, b) and T.layout_is_contiguous(a) and T.inner_most_dimension_is_one(a)
    assert T.tensors_not_overlapped(a, b) and not T.tensors_not_overlapped(a, a)
    assert T.same_data_pointer(a, a) and not T.same_data_pointer(a, b)
    assert T.count_elements(a) == 6 and T.count_elements(a, 1) == 3
    a.mem_stride = [4, 1]
    assert not T.layout_is_contiguous(a) and T.mem_stride_matches(a, a)


def test_lut_checks() -> None:
    assert _status(T.check_lut, Lut(capacity=10), 20) is Status.NOT_ENGH_MEM
    assert _status(check_create_lut, Lut(data=None, capacity=2000), 640) is Status.BAD_TENSOR
    assert _status(check_create_lut, Lut(data=np.zeros(10, np.int16), capacity=2000), 640) is Status.NOT_ENGH_MEM

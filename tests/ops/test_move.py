"""pymli.ops data movement helpers."""

from __future__ import annotations

import numpy as np
import pytest

import pymli
import pymli.ops
from pymli import MliError, Status, Tensor


def _t(shape, el="FX_16"):
    return Tensor.from_numpy(np.arange(int(np.prod(shape))).reshape(shape) % 100, el)


def test_exported():
    for name in ("copy", "slice_tensor", "subsample", "transpose", "pad2d", "concat", "move_tensor"):
        assert callable(getattr(pymli.ops, name))


def test_copy_compacts_strided_source():
    buf = np.arange(12, dtype=np.int16)
    x = Tensor(data=buf, capacity=24, shape=[2, 3], mem_stride=[6, 2], rank=2, el_type=_t([1]).el_type)
    y = pymli.ops.copy(x)
    assert y.mem_stride == [3, 1] and y.numpy().tolist() == [[0, 2, 4], [6, 8, 10]]
    assert not np.shares_memory(y.data, buf)


def test_pad2d_layouts():
    x = _t([2, 3, 1])
    y = pymli.ops.pad2d(x, (1, 0, 0, 2), layout="hwc")
    assert np.array_equal(y.numpy(), np.pad(x.numpy(), [(1, 0), (0, 2), (0, 0)]))
    z = pymli.ops.pad2d(x, (0, 1, 1, 0), layout="chw")
    assert np.array_equal(z.numpy(), np.pad(x.numpy(), [(0, 0), (0, 1), (1, 0)]))


def test_concat_negative_axis_and_mismatch():
    a, b = _t([2, 3]), _t([2, 1])
    assert np.array_equal(pymli.ops.concat([a, b], -1).numpy(), np.concatenate([a.numpy(), b.numpy()], -1))
    with pytest.raises(MliError) as e:
        pymli.ops.concat([a, b], 0)
    assert e.value.status is Status.SHAPE_MISMATCH
    with pytest.raises(MliError) as e:
        pymli.ops.concat([a, _t([2, 1], "FX_8")], 1)
    assert e.value.status is Status.INCOMPATEBLE_TENSORS


def test_concat_per_axis_along_the_quant_axis():
    q1 = dict(zero_point=[1, 2], scale=[3, 4], scale_frac_bits=[5, 6], dim=1)
    q2 = dict(zero_point=[7], scale=[8], scale_frac_bits=[9], dim=1)
    a = Tensor.from_numpy([[1, 2]], "SA_8", **q1)
    b = Tensor.from_numpy([[3]], "SA_8", **q2)
    c = pymli.ops.concat([a, b], 1)
    assert c.numpy().tolist() == [[1, 2, 3]]
    assert c.zero_point.tolist() == [1, 2, 7] and c.scale.tolist() == [3, 4, 8]
    assert c.scale_frac_bits.tolist() == [5, 6, 9]


def test_bad_arguments():
    x = _t([2, 2])
    with pytest.raises(MliError):
        pymli.ops.transpose(x, (0, 0))
    with pytest.raises(MliError):
        pymli.ops.subsample(x, (0, 1))
    with pytest.raises(MliError):
        pymli.ops.slice_tensor(x, (1, 0), (2, 1))
    with pytest.raises(MliError):
        pymli.ops.pad2d(x, (1, 1, 1, 1))

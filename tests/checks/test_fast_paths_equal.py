"""The faster forms of ``check_tensor_private``, ``check_quant_params`` and ``Tensor.view`` against
plain transcriptions (seeded random structs, extreme values, every data layout)."""

from __future__ import annotations

import numpy as np
import pytest

from pymli import MliError, Status, Tensor
from pymli.arith.rounding import wrap_int
from pymli.checks.tensor import check_quant_params, check_tensor_private
from pymli.tensor import MLI_MAX_RANK, dense_strides


def _plain_check_tensor_private(shape, mem_stride, rank, capacity, element_size) -> None:
    """The C function with a 32-bit wrap after every operation."""
    if rank > MLI_MAX_RANK or capacity > 2**31 - 1:
        raise MliError(Status.BAD_TENSOR, "")
    sh = [int(shape[i]) if i < len(shape) else 0 for i in range(rank)]
    ms = [int(mem_stride[i]) if i < len(mem_stride) else 0 for i in range(rank)]
    for i in range(rank):
        if ms[i] <= 0 or not (0 < sh[i] <= 2**31 - 1):
            raise MliError(Status.BAD_TENSOR, "")
    size, prev_shape, prev_stride, bad = 1, 1, 1, False
    for i in range(rank - 1, -1, -1):
        bad |= ms[i] < wrap_int(prev_shape * prev_stride, 32)
        prev_shape, prev_stride = sh[i], ms[i]
        size = wrap_int(size + wrap_int((prev_shape - 1) * prev_stride, 32), 32)
    if bad:
        raise MliError(Status.BAD_TENSOR, "")
    if capacity < wrap_int(size * element_size, 32):
        raise MliError(Status.NOT_ENGH_MEM, "")


def _status(f, *a):
    try:
        f(*a)
    except MliError as e:
        return e.status
    return Status.OK


def _dim(rng) -> int:
    return int(rng.choice([1, 2, 3, 7, 255, 65535, 2**16 + 1, 2**20, 2**30, 2**31 - 1, 2**31, 2**32 - 1]))


@pytest.mark.parametrize("seed", range(4))
def test_check_tensor_private_equals_plain(seed) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(3000):
        rank = int(rng.integers(0, 6))
        shape = [_dim(rng) if rng.random() < 0.3 else int(rng.integers(-1, 9)) for _ in range(rng.integers(0, 5))]
        if rng.random() < 0.5:
            ms = dense_strides([max(s, 1) for s in shape])
            if rng.random() < 0.5 and ms:
                ms[int(rng.integers(0, len(ms)))] = _dim(rng)
        else:
            ms = [_dim(rng) if rng.random() < 0.3 else int(rng.integers(-2, 40)) for _ in range(rng.integers(0, 5))]
        capacity = _dim(rng) if rng.random() < 0.5 else int(rng.integers(0, 5000))
        es = int(rng.choice([1, 2, 4]))
        args = (shape, ms, rank, capacity, es)
        assert _status(check_tensor_private, *args) == _status(_plain_check_tensor_private, *args), args


@pytest.mark.parametrize("seed", range(3))
def test_check_quant_params_per_tensor_equals_quant_vector_form(seed) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(2000):
        zp = int(rng.integers(-(2**15), 2**15))
        sc = int(rng.integers(-3, 3)) if rng.random() < 0.5 else int(rng.integers(-(2**15), 2**15))
        t = Tensor.from_numpy(np.zeros(3, np.int8), "SA_8", zero_point=zp, scale=1, scale_frac_bits=0)
        t.scale = sc
        bits = int(rng.choice([0, 7, 14, 15]))
        want = Status.OK
        if sc <= 0:
            want = Status.BAD_TENSOR
        elif not ((0 if bits == 0 else -(1 << bits)) <= zp <= (0 if bits == 0 else (1 << bits) - 1)):
            want = Status.INCOMPATEBLE_TENSORS
        assert _status(check_quant_params, t, bits) == want


def _plain_view(t: Tensor) -> np.ndarray:
    """Tensor.view as it was: checks, then as_strided over data's own stride."""
    if t.rank == 0 or t.data is None or not isinstance(t.data, np.ndarray) or t.data.ndim != 1:
        raise MliError(Status.BAD_TENSOR, "")
    shape = [int(s) for s in t.shape[: t.rank]]
    ms = [int(s) for s in t.mem_stride[: t.rank]]
    if all(s == 0 for s in ms):
        ms = dense_strides(shape)
    if any(s <= 0 for s in shape) or any(m < 0 for m in ms):
        raise MliError(Status.BAD_TENSOR, "")
    span = 1 + sum((s - 1) * m for s, m in zip(shape, ms))
    if span > t.data.shape[0]:
        raise MliError(Status.NOT_ENGH_MEM, "")
    step = t.data.strides[0]
    return np.lib.stride_tricks.as_strided(t.data, shape=shape, strides=[m * step for m in ms])


def _data(rng) -> np.ndarray:
    base = rng.integers(-100, 100, int(rng.integers(1, 80))).astype(rng.choice([np.int8, np.int16, np.int32]))
    k = int(rng.integers(0, 5))
    if k == 0:
        return base
    if k == 1:
        return base[:: int(rng.integers(2, 4))]
    if k == 2:
        return base[::-1]
    if k == 3:
        return np.lib.stride_tricks.as_strided(base, shape=(int(rng.integers(1, 9)),), strides=(0,))
    return base[1:][: max(1, base.size // 2)]


@pytest.mark.parametrize("seed", range(4))
def test_view_equals_as_strided_view(seed) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(1500):
        d = _data(rng)
        rank = int(rng.integers(0, 5))
        shape = [int(rng.integers(-1, 5)) for _ in range(int(rng.integers(0, 5)))]
        ms = [int(rng.integers(-1, 12)) for _ in range(int(rng.integers(0, 5)))]
        if rng.random() < 0.3:
            ms = [0] * len(ms)
        t = Tensor(data=d, capacity=d.nbytes, shape=shape, mem_stride=ms, rank=rank)
        try:
            want = _plain_view(t)
        except MliError as e:
            with pytest.raises(MliError) as got:
                t.view()
            assert got.value.status is e.status
            continue
        except ValueError:  # shape and mem_stride lists of different lengths: no view either way
            with pytest.raises(ValueError):
                t.view()
            continue
        got_v = t.view()
        assert got_v.shape == want.shape and got_v.strides == want.strides and got_v.dtype == want.dtype
        assert np.array_equal(got_v, want)
        assert got_v.flags.writeable == want.flags.writeable
        assert np.shares_memory(got_v, d) or got_v.size == 0 or d.strides[0] == 0 or np.may_share_memory(got_v, d)
        if got_v.flags.writeable:
            got_v[...] = 7  # writes land in d's elements
            assert np.array_equal(want, np.full(want.shape, 7, want.dtype))

"""Element-wise kernels: vectorised arithmetic against a scalar model, properties, facade checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymli import capi, ops
from pymli.config import EM, VPX, use_platform
from pymli.errors import MliError, Status
from pymli.formats import ElType
from pymli.kernels.eltwise import eltwise_fx, eltwise_sa8
from pymli.tensor import Tensor

from ..oracles import pooling as oracle

OPS = ["add", "sub", "mul", "min", "max"]
quant = st.tuples(st.integers(1, 32767), st.integers(-4, 30), st.integers(-128, 127))


def _pairs(rng: np.random.Generator, bits: int, n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    edge = np.array([lo, lo + 1, -1, 0, 1, hi - 1, hi])
    a = np.concatenate([np.repeat(edge, len(edge)), rng.integers(lo, hi, n, endpoint=True)])
    b = np.concatenate([np.tile(edge, len(edge)), rng.integers(lo, hi, n, endpoint=True)])
    return a, b


@given(st.sampled_from(OPS), quant, quant, quant, st.booleans(), st.integers(0, 2**32 - 1))
def test_sa8_matches_scalar_model(op: str, q1: tuple, q2: tuple, qo: tuple, up: bool, seed: int) -> None:
    if op in ("min", "max"):
        q2 = q1
    a, b = _pairs(np.random.default_rng(seed), 8)
    with use_platform(VPX if up else EM):
        got = eltwise_sa8(op, a.astype(np.int8), b.astype(np.int8), q1=q1, q2=q2, qo=qo)
    want = [oracle.eltwise_c(op, int(x), int(y), bits=8, q=(q1, q2, qo), up=up) for x, y in zip(a, b)]
    np.testing.assert_array_equal(got, want)


@given(st.sampled_from(OPS), st.sampled_from([8, 16]), st.integers(-2, 17), st.integers(-2, 17),
       st.integers(-4, 33), st.booleans(), st.integers(0, 2**32 - 1))
def test_fx_matches_scalar_model(op: str, bits: int, f1: int, f2: int, fo: int, up: bool, seed: int) -> None:
    if op in ("min", "max"):
        f2 = f1
    a, b = _pairs(np.random.default_rng(seed), bits)
    dt = np.int8 if bits == 8 else np.int16
    with use_platform(VPX if up else EM):
        got = eltwise_fx(op, a.astype(dt), b.astype(dt), frac_bits=(f1, f2, fo), bits=bits)
    want = [oracle.eltwise_c(op, int(x), int(y), bits=bits, fb=(f1, f2, fo), up=up) for x, y in zip(a, b)]
    np.testing.assert_array_equal(got, want)


@given(st.sampled_from(["min", "max"]), st.sampled_from(["FX_8", "FX_16", "SA_8"]), quant,
       st.integers(0, 2**32 - 1))
def test_min_max_commute(op: str, el: str, q: tuple, seed: int) -> None:
    rng = np.random.default_rng(seed)
    dt = np.int16 if el == "FX_16" else np.int8
    info = np.iinfo(dt)
    shape = tuple(rng.integers(1, 5, size=rng.integers(1, 5)))
    kw = dict(frac_bits=q[1] % 16) if el != "SA_8" else dict(scale=q[0], scale_frac_bits=q[1], zero_point=q[2])
    x = Tensor.from_numpy(rng.integers(info.min, info.max, shape, endpoint=True).astype(dt), el, **kw)
    y = Tensor.from_numpy(rng.integers(info.min, info.max, shape, endpoint=True).astype(dt), el, **kw)
    f = ops.minimum if op == "min" else ops.maximum
    np.testing.assert_array_equal(f(x, y).numpy(), f(y, x).numpy())
    if el != "SA_8":  # same format in and out: plain NumPy min/max
        ref = np.minimum if op == "min" else np.maximum
        np.testing.assert_array_equal(f(x, y).numpy(), ref(x.numpy(), y.numpy()))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("el", ["FX_16", "SA_8"])
def test_scalar_operand_forms_agree(op: str, el: str) -> None:
    rng = np.random.default_rng(3)
    dt = np.int16 if el == "FX_16" else np.int8
    kw = dict(frac_bits=9) if el == "FX_16" else dict(scale=21000, scale_frac_bits=20, zero_point=-5)
    okw = dict(frac_bits=8) if el == "FX_16" else dict(scale=30000, scale_frac_bits=19, zero_point=4)
    if op in ("min", "max"):
        okw = kw
    x = Tensor.from_numpy(rng.integers(-100, 100, (3, 4)).astype(dt), el, **kw)
    full = Tensor.from_numpy(np.full((3, 4), 37, dt), el, **kw)
    forms = [Tensor.from_numpy(np.array(37, dt), el, **kw), Tensor.from_numpy(np.full((1, 1, 1), 37, dt), el, **kw)]
    fn = getattr(capi, f"mli_krn_eltwise_{op}_{el.lower().replace('_', '')}")
    for left in (True, False):
        want = Tensor.zeros((3, 4), el, **okw)
        fn(*((x, full) if left else (full, x)), want)
        for s in forms:
            out = Tensor.zeros((3, 4), el, **okw)
            assert fn(*((x, s) if left else (s, x)), out) is Status.OK
            np.testing.assert_array_equal(out.numpy(), want.numpy())


def test_strided_operands_and_gaps() -> None:
    rng = np.random.default_rng(5)
    vals = rng.integers(-128, 128, (4, 5)).astype(np.int8)
    buf = np.full(4 * 8, 99, np.int8)
    x = Tensor(data=buf, capacity=buf.nbytes, shape=[4, 5], mem_stride=[8, 1], rank=2, el_type=ElType.SA_8,
               zero_point=3, scale=20000, scale_frac_bits=18)
    x.write(vals)
    y = Tensor.from_numpy(vals[::-1].copy(), "SA_8", zero_point=-3, scale=25000, scale_frac_bits=18)
    obuf = np.full(4 * 7, 55, np.int8)
    out = Tensor(data=obuf, capacity=obuf.nbytes, shape=[4, 5], mem_stride=[7, 1], rank=2, el_type=x.el_type,
                 zero_point=1, scale=30000, scale_frac_bits=18)
    capi.mli_krn_eltwise_add_sa8(x, y, out)
    dense = Tensor.zeros((4, 5), "SA_8", zero_point=1, scale=30000, scale_frac_bits=18)
    capi.mli_krn_eltwise_add_sa8(Tensor.from_numpy(vals, "SA_8", zero_point=3, scale=20000, scale_frac_bits=18), y, dense)
    np.testing.assert_array_equal(out.numpy(), dense.numpy())
    assert (obuf.reshape(4, 7)[:, 5:] == 55).all()


def test_checks() -> None:
    a = Tensor.from_numpy(np.ones((2, 3), np.int16), "FX_16", frac_bits=3)
    s0 = Tensor.from_numpy(np.array(2, np.int16), "FX_16", frac_bits=3)
    out = Tensor.zeros((2, 3), "FX_16", frac_bits=3)

    def status(fn, *args) -> Status:  # noqa: ANN001
        try:
            return fn(*args)
        except MliError as e:
            return e.status

    assert status(capi.mli_krn_eltwise_add_fx16, s0, s0, out) is Status.NOT_SUPPORTED
    assert status(capi.mli_krn_eltwise_add_fx16, a, Tensor.zeros((3, 2), "FX_16"), out) is Status.SHAPE_MISMATCH
    assert status(capi.mli_krn_eltwise_add_fx16, a, a, Tensor.zeros((3, 2), "FX_16")) is Status.SHAPE_MISMATCH
    other = Tensor.from_numpy(np.ones((2, 3), np.int16), "FX_16", frac_bits=4)
    assert status(capi.mli_krn_eltwise_max_fx16, a, other, out) is Status.INCOMPATEBLE_TENSORS
    assert status(capi.mli_krn_eltwise_add_fx16, a, other, out) is Status.OK
    assert status(capi.mli_krn_eltwise_add_fx8, a, a, out) is Status.TYPE_MISMATCH
    assert status(capi.mli_krn_eltwise_add_fx16, a, a, Tensor.zeros((2, 3), "FX_8")) is Status.INCOMPATEBLE_TENSORS
    sa = Tensor.from_numpy(np.ones((2, 3), np.int8), "SA_8", zero_point=-130, scale=3)
    assert status(capi.mli_krn_eltwise_add_sa8, sa, sa, Tensor.zeros((2, 3), "SA_8", scale=1)) is Status.INCOMPATEBLE_TENSORS
    before = out.data.copy()
    bad = Tensor.from_numpy(np.ones((2, 3), np.int16), "FX_16", frac_bits=3)
    bad.capacity = 2
    assert status(capi.mli_krn_eltwise_sub_fx16, a, bad, out) is Status.NOT_ENGH_MEM
    np.testing.assert_array_equal(out.data, before)


def test_fx_saturation() -> None:
    a = Tensor.from_numpy(np.array([32767, -32768, 20000], np.int16), "FX_16", frac_bits=0)
    np.testing.assert_array_equal(ops.add(a, a, frac_bits=0).numpy(), [32767, -32768, 32767])
    np.testing.assert_array_equal(ops.sub(a, a, frac_bits=0).numpy(), [0, 0, 0])
    np.testing.assert_array_equal(ops.mul(a, a, frac_bits=0).numpy(), [32767, 32767, 32767])


def test_calibrated_output_is_close_to_float() -> None:
    rng = np.random.default_rng(11)
    x = Tensor.from_numpy(rng.integers(-128, 128, 50).astype(np.int8), "SA_8", zero_point=10, scale=20000, scale_frac_bits=20)
    y = Tensor.from_numpy(rng.integers(-128, 128, 50).astype(np.int8), "SA_8", zero_point=-7, scale=30000, scale_frac_bits=21)

    def f(t: Tensor) -> np.ndarray:
        return (t.numpy().astype(float) - t.zero_point) * t.scale / 2.0 ** t.scale_frac_bits

    for fn, ref in ((ops.add, np.add), (ops.sub, np.subtract), (ops.mul, np.multiply)):
        r = fn(x, y)
        step = r.scale / 2.0 ** r.scale_frac_bits
        assert np.max(np.abs(f(r) - ref(f(x), f(y)))) <= 1.5 * step


@pytest.mark.parametrize("op", OPS)
def test_table_paths_equal_direct_arithmetic(op: str) -> None:
    from pymli.arith.eltwise import EltOp, fx_eltwise, fx_params, sa8_eltwise, sa8_params

    rng = np.random.default_rng(17)
    a = rng.integers(-128, 128, (40, 30, 40)).astype(np.int8)  # above the table threshold
    b = rng.integers(-128, 128, (40, 30, 40)).astype(np.int8)
    q1, q2, qo = (23000, 19, -4), (23000, 19, -4) if op in ("min", "max") else (15000, 21, 9), (30000, 20, 3)
    p = sa8_params(EltOp(op), q1, q2, qo)
    for x, y in ((a, b), (a, np.asarray(np.int8(-77))), (np.asarray(np.int8(101)), b)):
        got = eltwise_sa8(op, x, y, q1=q1, q2=q2, qo=qo)
        np.testing.assert_array_equal(got, sa8_eltwise(EltOp(op), x, y, p))
    fp = fx_params(EltOp(op), 5, 5 if op in ("min", "max") else 3, 4, 8)
    got = eltwise_fx(op, a, b, frac_bits=(5, 5 if op in ("min", "max") else 3, 4), bits=8)
    np.testing.assert_array_equal(got, fx_eltwise(EltOp(op), a, b, fp, 8))
    a16 = rng.integers(-32768, 32768, (300, 500)).astype(np.int16)
    fp = fx_params(EltOp(op), 9, 9 if op in ("min", "max") else 12, 8, 16)
    for x, y in ((a16, a16[::-1]), (a16, np.asarray(np.int16(-1234)))):
        got = eltwise_fx(op, x, y, frac_bits=(9, 9 if op in ("min", "max") else 12, 8), bits=16)
        np.testing.assert_array_equal(got, fx_eltwise(EltOp(op), x, y, fp, 16))


def test_ops_two_scalars_follow_mli_shape_rule() -> None:
    one = Tensor.from_numpy(np.array([5], np.int16), "FX_16", frac_bits=2)
    zero_d = Tensor.from_numpy(np.int16(3), "FX_16", frac_bits=2)
    r = ops.sub(one, zero_d, frac_bits=2)  # in1 scalar -> out takes in2's (rank-0) shape
    assert r.rank == 0 and r.value == 2
    r = ops.sub(zero_d, one, frac_bits=2)
    assert r.shape == [1] and r.numpy().tolist() == [-2]

"""Pooling: vectorised kernels against the C loop structure, properties, facade checks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import pymli
from pymli import capi, ops
from pymli.arith.pool import reciprocal, requant_params
from pymli.capi.types import PoolCfg
from pymli.config import EM, VPX, Platform, use_platform
from pymli.errors import MliError, Status
from pymli.formats import ElType, RoundMode
from pymli.kernels.pooling import avepool_hwc, degenerate, maxpool_hwc, out_size
from pymli.tensor import Tensor

from ..oracles import pooling as oracle

DT = {ElType.FX_8: np.int8, ElType.FX_16: np.int16, ElType.SA_8: np.int8}


@st.composite
def pool_case(draw: st.DrawFn) -> dict:
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    pads = tuple(draw(st.integers(0, k - 1)) for k in (kh, kh, kw, kw))
    h = draw(st.integers(max(1, kh - pads[0] - pads[1]), 7))
    w = draw(st.integers(max(1, kw - pads[2] - pads[3]), 7))
    c = draw(st.integers(1, 3))
    oh_max, ow_max = out_size(h, kh, sh, pads[0], pads[1]), out_size(w, kw, sw, pads[2], pads[3])
    oh, ow = draw(st.integers(1, oh_max)), draw(st.integers(1, ow_max))
    assume(not degenerate(h, w, (kh, kw), (sh, sw), pads, (oh, ow)))
    el = draw(st.sampled_from(list(DT)))
    info = np.iinfo(DT[el])
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    extreme = draw(st.booleans())
    lo, hi = (info.min, info.max) if extreme else (info.min // 8, info.max // 8)
    x = rng.integers(lo, hi, size=(h, w, c), endpoint=True).astype(DT[el])
    return dict(x=x, el=el, kernel=(kh, kw), stride=(sh, sw), pads=pads, out_hw=(oh, ow),
                up=draw(st.booleans()), mul16=draw(st.booleans()),
                fb=(draw(st.integers(0, 15)), draw(st.integers(-3, 18))),
                sa=((draw(st.integers(1, 32767)), draw(st.integers(8, 24)), draw(st.integers(-128, 127))),
                    (draw(st.integers(1, 32767)), draw(st.integers(8, 24)), draw(st.integers(-128, 127)))))


@given(pool_case())
def test_avepool_matches_c_loop_structure(case: dict) -> None:
    x, el = case["x"], case["el"]
    geo = dict(kernel=case["kernel"], stride=case["stride"], pad=(case["pads"][0], case["pads"][2]),
               out_hw=case["out_hw"])
    plat = Platform(RoundMode.UP if case["up"] else RoundMode.CONVERGENT)
    if el is ElType.SA_8:
        (si, fi, zi), (so, fo, zo) = case["sa"]
        with use_platform(plat):
            rq = requant_params(si, fi, zi, so, fo, zo)
            got = avepool_hwc(x, **geo, base_shift=0, requant=rq, mul16=case["mul16"])
        want = oracle.pool_c(x, "ave", case["kernel"], case["stride"], case["pads"], case["out_hw"],
                             sa=case["sa"], up=case["up"], mul16=case["mul16"])
    else:
        shift = case["fb"][0] - case["fb"][1]
        with use_platform(plat):
            got = avepool_hwc(x, **geo, base_shift=shift)
        want = oracle.pool_c(x, "ave", case["kernel"], case["stride"], case["pads"], case["out_hw"],
                             fx_shift=shift, up=case["up"])
    np.testing.assert_array_equal(got, want)


@given(pool_case())
def test_maxpool_matches_c_loop_structure(case: dict) -> None:
    x = case["x"]
    got = maxpool_hwc(x, kernel=case["kernel"], stride=case["stride"], pad=(case["pads"][0], case["pads"][2]),
                      out_hw=case["out_hw"])
    want = oracle.pool_c(x, "max", case["kernel"], case["stride"], case["pads"], case["out_hw"])
    np.testing.assert_array_equal(got, want)


@given(pool_case())
def test_maxpool_output_is_the_window_max(case: dict) -> None:
    x = case["x"]
    (kh, kw), (sh, sw), (pt, _, pl, _), (oh, ow) = case["kernel"], case["stride"], case["pads"], case["out_hw"]
    got = maxpool_hwc(x, kernel=(kh, kw), stride=(sh, sw), pad=(pt, pl), out_hw=(oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * sh - pt, j * sw - pl
            win = x[max(r0, 0):r0 + kh, max(c0, 0):c0 + kw]
            np.testing.assert_array_equal(got[i, j], win.max(axis=(0, 1)))


@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 5), st.integers(1, 5), st.integers(1, 3),
       st.integers(1, 3), st.data())
def test_output_shape_follows_padding_formula(h: int, w: int, kh: int, kw: int, sh: int, sw: int,
                                              data: st.DataObject) -> None:
    pads = tuple(data.draw(st.integers(0, k - 1)) for k in (kh, kh, kw, kw))
    oh, ow = (h + pads[0] + pads[1] - kh) // sh + 1, (w + pads[2] + pads[3] - kw) // sw + 1
    x = Tensor.from_numpy(np.ones((h, w, 2), np.int8), "FX_8", frac_bits=3)
    if oh <= 0 or ow <= 0:
        with pytest.raises(MliError):
            ops.avepool(x, (kh, kw), (sh, sw), pads)
        return
    for fn in (ops.avepool, ops.maxpool):
        y = fn(x, (kh, kw), (sh, sw), pads)
        assert y.shape == [oh, ow, 2] and y.frac_bits == 3


@given(st.sampled_from(list(DT)), st.integers(1, 4), st.integers(1, 4), st.integers(0, 2**31), st.booleans())
def test_avepool_of_a_constant_is_that_constant(el: ElType, kh: int, kw: int, seed: int, pad: bool) -> None:
    rng = np.random.default_rng(seed)
    info = np.iinfo(DT[el])
    c = int(rng.integers(info.min, info.max, endpoint=True))
    q = dict(frac_bits=5) if el.is_fx else dict(zero_point=int(rng.integers(-128, 128)), scale=20000,
                                                scale_frac_bits=18)
    x = Tensor.from_numpy(np.full((5, 6, 2), c, DT[el]), el, **q)
    y = ops.avepool(x, (kh, kw), 1, ((kh - 1) // 2, kh // 2, (kw - 1) // 2, kw // 2) if pad else 0)
    err = np.abs(y.numpy().astype(np.int64) - c)
    # The reciprocal 2**s / n is truncated (Q15, or Q7 for sa8): exact for fx8, within 2 LSB else.
    assert err.max() <= (0 if el is ElType.FX_8 else 2)
    if el is ElType.FX_8:
        assert (y.numpy() == c).all()


def test_reciprocal_table_values() -> None:
    # Spot values of MLI's multiplier table (mul, shift) for small window sizes.
    assert reciprocal(1) == (0x4000, 14)
    assert reciprocal(3) == (0x5555, 16)
    assert reciprocal(7) == (0x4924, 17)
    assert reciprocal(9) == (0x71C7, 18)
    assert reciprocal(25) == (0x51EB, 19)
    for n in range(1, 600):
        mul, s = reciprocal(n)
        assert 0x4000 <= mul <= 0x7FFF and mul * n <= 1 << s < (mul + 1) * n


def _strided(arr: np.ndarray, el: ElType, pad_w: int = 3, **q: object) -> Tensor:
    h, w, c = arr.shape
    buf = np.full(h * (w * c + pad_w), 77, arr.dtype)
    t = Tensor(data=buf, capacity=buf.nbytes, shape=[h, w, c], mem_stride=[w * c + pad_w, c, 1], rank=3,
               el_type=el, **q)
    t.write(arr)
    return t


@pytest.mark.parametrize("name", ["mli_krn_avepool_hwc_sa8", "mli_krn_maxpool_hwc_fx16", "mli_krn_avepool_hwc_fx8_k3x3"])
def test_facade_strided_tensors_keep_gaps(name: str) -> None:
    rng = np.random.default_rng(1)
    el = {"sa8": ElType.SA_8, "fx16": ElType.FX_16}.get(name.split("_")[4], ElType.FX_8)
    q = dict(zero_point=-3, scale=30000, scale_frac_bits=20) if el.is_sa else dict(frac_bits=4)
    x = rng.integers(-100, 100, size=(6, 7, 3)).astype(DT[el])
    cfg = PoolCfg(kernel_width=3, kernel_height=3, stride_width=2, stride_height=1, padding_left=1,
                  padding_right=1, padding_top=1, padding_bottom=1)
    inp, out = _strided(x, el, **q), _strided(np.zeros((6, 4, 3), DT[el]), el, 5, **q)
    before = out.data.copy()
    assert getattr(capi, name)(inp, cfg, out) is Status.OK
    dense_in = Tensor.from_numpy(x, el, **q)
    dense_out = Tensor.zeros((6, 4, 3), el, **q)
    getattr(capi, name)(dense_in, cfg, dense_out)
    np.testing.assert_array_equal(out.numpy(), dense_out.numpy())
    gaps = np.ones(out.data.shape, bool)
    idx = (np.indices((6, 4, 3)) * np.array(out.mem_stride)[:, None, None, None]).sum(0).ravel()
    gaps[idx] = False
    np.testing.assert_array_equal(out.data[gaps], before[gaps])


def _valid_args(el: ElType = ElType.FX_8) -> tuple[Tensor, PoolCfg, Tensor]:
    x = Tensor.from_numpy(np.arange(48).reshape(4, 4, 3).astype(DT[el]), el, frac_bits=2)
    if el.is_sa:
        x = Tensor.from_numpy(np.arange(48).reshape(4, 4, 3).astype(np.int8), el, zero_point=0, scale=1,
                              scale_frac_bits=0)
    cfg = PoolCfg(kernel_width=3, kernel_height=3, stride_width=1, stride_height=1)
    out = Tensor.zeros((2, 2, 3), el, **({"frac_bits": 2} if el.is_fx else {"scale": 1}))
    return x, cfg, out


@pytest.mark.parametrize("mutate, fn, status", [
    (lambda x, c, o: None, "mli_krn_avepool_hwc_fx8_k2x2", Status.SHAPE_MISMATCH),
    (lambda x, c, o: dataclasses.replace(c, padding_left=3), "mli_krn_avepool_hwc_fx8", Status.BAD_FUNC_CFG),
    (lambda x, c, o: dataclasses.replace(c, stride_width=0), "mli_krn_maxpool_hwc_fx8", Status.BAD_FUNC_CFG),
    (lambda x, c, o: setattr(o, "shape", [3, 2, 3]), "mli_krn_maxpool_hwc_fx8", Status.NOT_ENGH_MEM),
    (lambda x, c, o: setattr(o, "el_type", ElType.SA_8), "mli_krn_avepool_hwc_fx8", Status.TYPE_MISMATCH),
    (lambda x, c, o: None, "mli_krn_avepool_hwc_fx16", Status.TYPE_MISMATCH),
    (lambda x, c, o: setattr(x, "mem_stride", [12, 3, 2]), "mli_krn_avepool_hwc_fx8", Status.BAD_TENSOR),
    (lambda x, c, o: (setattr(o, "shape", [2, 1, 3]), setattr(o, "mem_stride", [3, 3, 1])),
     "mli_krn_avepool_hwc_fx8", Status.OK),
    (lambda x, c, o: setattr(o, "data", x.data), "mli_krn_maxpool_hwc_fx8", Status.INCOMPATEBLE_TENSORS),
])
def test_facade_checks(mutate, fn: str, status: Status) -> None:  # noqa: ANN001
    x, cfg, out = _valid_args()
    changed = mutate(x, cfg, out)
    cfg = changed if isinstance(changed, PoolCfg) else cfg  # cfgs are frozen: a mutation returns a new one
    before = None if out.data is None else out.data.copy()
    if status is Status.OK:
        assert getattr(capi, fn)(x, cfg, out) is Status.OK
        return
    with pytest.raises(MliError) as e:
        getattr(capi, fn)(x, cfg, out)
    assert e.value.status is status
    np.testing.assert_array_equal(out.data, before)


def test_sa8_checks_quantisation() -> None:
    x, cfg, out = _valid_args(ElType.SA_8)
    out.zero_point = 200
    with pytest.raises(MliError) as e:
        capi.mli_krn_avepool_hwc_sa8(x, cfg, out)
    assert e.value.status is Status.INCOMPATEBLE_TENSORS
    x, cfg, out = _valid_args(ElType.SA_8)
    capi.mli_krn_maxpool_hwc_sa8(x, cfg, dataclasses.replace(out, zero_point=200))  # maxpool: no zp check
    x.dim = 2
    with pytest.raises(MliError) as e:
        capi.mli_krn_maxpool_hwc_sa8(x, cfg, out)
    assert e.value.status is Status.INCOMPATEBLE_TENSORS


def test_maxpool_copies_quantisation_to_out() -> None:
    x = Tensor.from_numpy(np.ones((3, 3, 1), np.int8), "SA_8", zero_point=5, scale=123, scale_frac_bits=9)
    out = Tensor.zeros((1, 1, 1), "SA_8", zero_point=0, scale=1, scale_frac_bits=0)
    capi.mli_krn_maxpool_hwc_sa8(x, PoolCfg(kernel_width=3, kernel_height=3), out)
    assert (out.zero_point, out.scale, out.scale_frac_bits) == (5, 123, 9)


def test_avepool_16bit_mul_build_option() -> None:
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, size=(9, 9, 4)).astype(np.int8)
    q_in, q_out = (31000, 20, 3), (17000, 19, -7)
    res = {}
    for mul16 in (False, True):
        plat = dataclasses.replace(VPX, avepool_16bit_mul=mul16)
        t_in = Tensor.from_numpy(x, "SA_8", scale=q_in[0], scale_frac_bits=q_in[1], zero_point=q_in[2])
        t_out = Tensor.zeros((5, 5, 4), "SA_8", scale=q_out[0], scale_frac_bits=q_out[1], zero_point=q_out[2])
        with use_platform(plat):
            capi.mli_krn_avepool_hwc_sa8(t_in, PoolCfg(kernel_width=3, kernel_height=3, stride_width=2,
                                                        stride_height=2, padding_left=1, padding_right=1,
                                                        padding_top=1, padding_bottom=1), t_out)
        res[mul16] = t_out.numpy()
        want = oracle.pool_c(x, "ave", (3, 3), (2, 2), (1, 1, 1, 1), (5, 5), sa=(q_in, q_out), mul16=mul16)
        np.testing.assert_array_equal(res[mul16], want)
    assert not np.array_equal(res[False], res[True])


def test_convergent_rounding_is_used() -> None:
    x = Tensor.from_numpy(np.array([[[1], [2]]], np.int8), "FX_8", frac_bits=0)
    with use_platform(VPX):
        up = ops.avepool(x, (1, 2)).numpy().item()
    with use_platform(EM):
        conv = ops.avepool(x, (1, 2)).numpy().item()
    assert (up, conv) == (2, 2)
    x = Tensor.from_numpy(np.array([[[1], [4]]], np.int8), "FX_8", frac_bits=0)
    with use_platform(EM):
        assert ops.avepool(x, (1, 2)).numpy().item() == 2  # 2.5 -> even
    assert ops.avepool(x, (1, 2)).numpy().item() == 3
    assert isinstance(pymli.ops.maxpool(x, 1), Tensor)


@st.composite
def degenerate_case(draw: st.DrawFn) -> dict:
    kh, kw = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    pads = tuple(draw(st.integers(0, k - 1)) for k in (kh, kh, kw, kw))
    h = draw(st.integers(max(1, kh - pads[0] - pads[1]), max(1, kh - pads[0] - pads[1]) + 2))
    w = draw(st.integers(max(1, kw - pads[2] - pads[3]), max(1, kw - pads[2] - pads[3]) + 2))
    oh_max, ow_max = out_size(h, kh, sh, pads[0], pads[1]), out_size(w, kw, sw, pads[2], pads[3])
    oh, ow = draw(st.integers(1, oh_max)), draw(st.integers(1, ow_max))
    assume(degenerate(h, w, (kh, kw), (sh, sw), pads, (oh, ow)))
    return dict(h=h, w=w, c=draw(st.integers(1, 3)), kernel=(kh, kw), stride=(sh, sw), pads=pads, out_hw=(oh, ow),
                el=draw(st.sampled_from(list(DT))), seed=draw(st.integers(0, 2**32 - 1)),
                kind=draw(st.sampled_from(["ave", "max"])), gap=draw(st.integers(0, 3)), tail=draw(st.integers(0, 40)),
                special=kh == kw and kh in (2, 3) and draw(st.booleans()))


@settings(suppress_health_check=[HealthCheck.filter_too_much], deadline=None)
@given(degenerate_case())
def test_degenerate_geometry_replays_c_stores(case: dict) -> None:
    """Kernels wider than the input: MLI's border passes store past the output; the buffer shows it."""
    rng = np.random.default_rng(case["seed"])
    el, ch = case["el"], case["c"]
    info = np.iinfo(DT[el])
    x = rng.integers(info.min, info.max, (case["h"], case["w"], ch), endpoint=True).astype(DT[el])
    oh, ow = case["out_hw"]
    q = dict(frac_bits=3) if el.is_fx else dict(zero_point=-9, scale=25000, scale_frac_bits=19)
    qo = dict(frac_bits=2) if el.is_fx else dict(zero_point=4, scale=17000, scale_frac_bits=18)
    row_stride = ow * ch + case["gap"]
    buf = np.full(oh * row_stride + case["tail"], 33, DT[el])
    out = Tensor(data=buf, capacity=buf.nbytes, shape=[oh, ow, ch], mem_stride=[row_stride, ch, 1], rank=3,
                 el_type=el, **qo)
    inp = Tensor.from_numpy(x, el, **q)
    kh, kw = case["kernel"]
    pt, pb, pl, pr = case["pads"]
    cfg = PoolCfg(kernel_width=kw, kernel_height=kh, stride_width=case["stride"][1], stride_height=case["stride"][0],
                  padding_left=pl, padding_right=pr, padding_top=pt, padding_bottom=pb)
    suffix = {ElType.FX_8: "fx8", ElType.FX_16: "fx16", ElType.SA_8: "sa8"}[el]
    fixed = kh if case["special"] else 0
    name = f"mli_krn_{case['kind']}pool_hwc_{suffix}" + (f"_k{kh}x{kh}" if fixed else "")
    getattr(capi, name)(inp, cfg, out)
    want = np.full_like(buf, 33)
    sa = ((25000, 19, -9), (17000, 18, 4)) if el.is_sa else None
    oracle.pool_c(x, case["kind"], case["kernel"], case["stride"], case["pads"], case["out_hw"], fx_shift=1, sa=sa,
                  out_buf=want, out_strides=(row_stride, ch), fixed=fixed)
    np.testing.assert_array_equal(buf, want)

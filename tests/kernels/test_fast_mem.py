"""The memory-bound fast paths equal their plain paths on randomised operands.

* pooling of a batch ``[N, H, W, C]`` in one pass equals pooling every sample alone (max and
  average, average on both its float and integer requantisation paths), and its temporaries
  (scratch buffers reused across calls) never leak into a result;
* the byte-pair gather of the 8-bit tables (activations, eltwise with a scalar operand) equals the
  one-byte gather and the plain element arithmetic (odd sizes, strided views, both rounding
  platforms);
* the cached parameter derivations (sa8 eltwise, sa8 pooling requantisation, ReLU bounds) equal
  a fresh derivation on each rounding platform;
* ``mli_mov_tensor_sync`` (which runs the step bodies directly, and copies a dense tensor in one
  pass) equals the five public steps it stands for, data buffer and destination struct.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymli import Tensor
from pymli.arith import activation as act
from pymli.arith.pool import _requant_params, requant_params
from pymli.capi import move as M
from pymli.config import EM, VPX, Platform, use_platform
from pymli.arith.eltwise import EltOp, _sa8_params, sa8_eltwise, sa8_params
from pymli.kernels import activation as KA
from pymli.kernels import eltwise as KE
from pymli.kernels._gather import pair_table, take_pairs
from pymli.kernels import pooling as KP
from pymli.kernels._scratch import scratch
from ._shared import pool_case

PLATFORMS = {"up": VPX, "convergent": EM}
DTYPES = {8: np.int8, 16: np.int16}


def _ints(rng: np.random.Generator, shape: tuple[int, ...], bits: int, extreme: str = "") -> np.ndarray:
    """Random container values; ``extreme`` = "min" / "max" / "ends" fills with the type's limits."""
    info = np.iinfo(DTYPES[bits])
    if extreme == "min":
        return np.full(shape, info.min, DTYPES[bits])
    if extreme == "max":
        return np.full(shape, info.max, DTYPES[bits])
    if extreme == "ends":
        return rng.choice(np.array([info.min, info.max], DTYPES[bits]), shape)
    return rng.integers(int(info.min), int(info.max) + 1, shape).astype(DTYPES[bits])


def _strided(rng: np.random.Generator, x: np.ndarray, layout: str) -> np.ndarray:
    """``x`` (values unchanged) as a C-contiguous array, a view with gaps, or a reversed-axis view."""
    if layout == "gaps":
        big = _ints(rng, tuple(2 * n + 1 for n in x.shape), x.dtype.itemsize * 8)
        view = big[tuple(slice(1, 1 + 2 * n, 2) for n in x.shape)]
        view[...] = x
        return view
    if layout == "reversed":
        buf = np.ascontiguousarray(x[..., ::-1])
        return buf[..., ::-1]
    return np.ascontiguousarray(x)


# ------------------------------------------------------------------------------- batched pooling
@settings(max_examples=150, deadline=None)
@given(pool_case(batch=True, max_channels=5), st.sampled_from(list(PLATFORMS)), st.booleans(), st.sampled_from(["", "min", "max", "ends"]),
       st.sampled_from(["dense", "gaps", "reversed"]), st.booleans(), st.integers(0, 2**32 - 1))
def test_batched_pooling_equals_each_sample_alone(case, platform, mul16, extreme, layout, integer_path,
                                                  seed) -> None:
    bits, shape, geo, arith = case
    if geo["out_hw"][0] < 1 or geo["out_hw"][1] < 1:
        return  # no output (the facade rejects such a cfg)
    rng = np.random.default_rng(seed)
    x = _strided(rng, _ints(rng, shape, bits, extreme), layout)
    with use_platform(Platform(round_mode=PLATFORMS[platform].round_mode, avepool_16bit_mul=mul16)):
        saved = KP._avepool_output_float
        if integer_path:
            KP._avepool_output_float = lambda *a, **k: None  # the integer path (arith.pool.avepool_output)
        try:
            ave = KP.avepool_hwc(x, mul16=mul16, **geo, **arith)
            ave_each = [KP.avepool_hwc(np.ascontiguousarray(s), mul16=mul16, **geo, **arith) for s in x]
        finally:
            KP._avepool_output_float = saved
        mx = KP.maxpool_hwc(x, **geo)
        mx_each = [KP.maxpool_hwc(np.ascontiguousarray(s), **geo) for s in x]
    out_shape = (shape[0], *geo["out_hw"], shape[3])
    for got, each in ((ave, ave_each), (mx, mx_each)):
        assert got.shape == out_shape
        assert got.dtype == x.dtype
        assert np.array_equal(got, np.stack(each))


def test_batched_pooling_of_the_benchmark_shape_takes_the_float_path() -> None:
    rng = np.random.default_rng(7)
    x = _ints(rng, (3, 32, 32, 64), 8)
    rq = requant_params(20000, 20, -3, 20000, 20, -3)
    geo = dict(kernel=(3, 3), stride=(2, 2), pad=(0, 0), out_hw=(15, 15))
    calls = []
    saved = KP._avepool_output_float

    def spy(*a, **k):
        calls.append(a[0].shape)
        return saved(*a, **k)

    KP._avepool_output_float = spy
    try:
        got = KP.avepool_hwc(x, base_shift=0, requant=rq, **geo)
    finally:
        KP._avepool_output_float = saved
    assert calls == [(3, 15, 15, 64)]  # one pass for the whole batch
    assert np.array_equal(got, np.stack([KP.avepool_hwc(s, base_shift=0, requant=rq, **geo) for s in x]))


@pytest.mark.parametrize("shape", [(4, 4), (1, 2, 3, 3, 2), ()])
def test_pooling_refuses_other_ranks(shape) -> None:
    x = np.zeros(shape, np.int8)
    geo = dict(kernel=(1, 1), stride=(1, 1), pad=(0, 0), out_hw=(1, 1))
    with pytest.raises(ValueError, match="must be"):
        KP.maxpool_hwc(x, **geo)
    with pytest.raises(ValueError, match="must be"):
        KP.avepool_hwc(x, base_shift=0, **geo)


@pytest.mark.parametrize("geo", [dict(kernel=(3, 3), stride=(1, 1), pad=(1, 1), out_hw=(6, 5)),
                                 dict(kernel=(1, 1), stride=(1, 1), pad=(0, 0), out_hw=(6, 5)),
                                 dict(kernel=(2, 3), stride=(2, 2), pad=(0, 0), out_hw=(3, 2))])
def test_pooling_results_are_fresh_arrays(geo) -> None:
    # The temporaries live in scratch buffers: a result must never be one, nor a view of the input.
    rng = np.random.default_rng(11)
    for bits in (8, 16):
        x1, x2 = _ints(rng, (2, 6, 5, 3), bits), _ints(rng, (2, 6, 5, 3), bits)
        for kernel in (KP.maxpool_hwc, lambda x, **g: KP.avepool_hwc(x, base_shift=1, **g)):
            r1 = kernel(x1, **geo)
            kept = r1.copy()
            r2 = kernel(x2, **geo)
            assert np.array_equal(r1, kept)
            assert not np.shares_memory(r1, r2) and not np.shares_memory(r1, x1)
            r1[...] = 0
            assert np.array_equal(kernel(x2, **geo), r2)


def test_scratch_buffers_are_kept_per_name_shape_and_dtype() -> None:
    a = scratch("test a", (3, 4), np.int16)
    assert scratch("test a", (3, 4), np.int16) is a
    assert scratch("test b", (3, 4), np.int16) is not a
    assert scratch("test a", (4, 3), np.int16) is not a
    assert scratch("test a", (3, 4), np.int32).dtype == np.int32


# --------------------------------------------------------------------------- byte-pair gathers
@settings(max_examples=40, deadline=None)
@given(st.sampled_from([1 << 16, (1 << 16) + 1, 3 * (1 << 15) + 7]), st.sampled_from(["dense", "gaps", "reversed"]),
       st.sampled_from(list(PLATFORMS)), st.sampled_from(["", "min", "max", "ends"]), st.integers(-128, 127),
       st.integers(-128, 127), st.integers(1, 32767), st.integers(0, 24), st.integers(-128, 127),
       st.integers(1, 32767), st.integers(0, 24), st.integers(0, 2**32 - 1))
def test_leaky_sa8_pair_gather_equals_plain_arithmetic(size, layout, platform, extreme, slope, in_zp, in_scale,
                                                       in_sfb, out_zp, out_scale, out_sfb, seed) -> None:
    rng = np.random.default_rng(seed)
    x = _strided(rng, _ints(rng, (size,), 8, extreme).reshape(-1, 1), layout)
    kw = dict(in_zp=in_zp, in_scale=in_scale, in_sfb=in_sfb, out_zp=out_zp, out_scale=out_scale, out_sfb=out_sfb,
              slope_zp=3, slope_scale=16384, slope_sfb=21)
    with use_platform(PLATFORMS[platform]):
        ident = act.sa8_identity_params(in_scale, in_sfb, out_scale, out_sfb, out_zp)
        alpha = act.sa8_alpha_params(slope, 3, 16384, 21, ident)
        want = act.leaky_relu_sa8(x, in_zp, ident, alpha)  # int64, element by element
        first = KA.leaky_relu_sa8(x, slope, **kw)  # builds (or finds) the table
        second = KA.leaky_relu_sa8(x, slope, **kw)  # the byte-pair gather of the kept table
    for got in (first, second):
        assert got.dtype == np.int8 and got.shape == x.shape
        assert np.array_equal(got, want)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([(256, 257), (3, 128, 171), (1 << 16,)]), st.sampled_from(["dense", "gaps", "reversed"]),
       st.sampled_from(list(PLATFORMS)), st.integers(-128, 127), st.integers(-4, 20), st.integers(0, 2**32 - 1))
def test_leaky_fx8_pair_gather_equals_plain_arithmetic(shape, layout, platform, slope, shift, seed) -> None:
    rng = np.random.default_rng(seed)
    x = _strided(rng, _ints(rng, shape, 8), layout)
    with use_platform(PLATFORMS[platform]):
        s, sh = act.leaky_fx_slope(slope, shift, 8, False)
        want = act.leaky_relu_fx(x, s, sh, 8)
        got = [KA.leaky_relu_fx(x, slope, shift, normalise=False) for _ in range(2)]
    for g in got:
        assert g.dtype == np.int8 and g.shape == x.shape
        assert np.array_equal(g, want)


@pytest.mark.parametrize("seed", range(5))
def test_pair_table_maps_each_byte(seed) -> None:
    rng = np.random.default_rng(seed)
    table = rng.integers(-128, 128, 256).astype(np.int8)
    pairs = pair_table(table)
    codes = np.arange(1 << 16, dtype=np.uint16)
    got = pairs.view(np.uint8).reshape(-1, 2)
    want = table.view(np.uint8)[codes.view(np.uint8).reshape(-1, 2)]
    assert np.array_equal(got, want)
    for shape in ((0,), (1,), (2,), (1001,), (7, 3, 5)):
        x = rng.integers(-128, 128, shape).astype(np.int8)
        for view in (x, x[..., ::-1]):
            got = take_pairs(table, pairs, view)
            assert got.shape == view.shape and np.array_equal(got, table[view.view(np.uint8)])


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["add", "sub", "mul", "max", "min"]), st.booleans(),
       st.sampled_from([(1 << 16,), (257, 255), (3, 128, 171)]), st.sampled_from(["dense", "gaps", "reversed"]),
       st.sampled_from(list(PLATFORMS)), st.sampled_from(["", "min", "max", "ends"]), st.integers(-128, 127),
       st.tuples(st.integers(1, 32767), st.integers(0, 24), st.integers(-128, 127)),
       st.tuples(st.integers(1, 32767), st.integers(0, 24), st.integers(-128, 127)),
       st.tuples(st.integers(1, 32767), st.integers(0, 24), st.integers(-128, 127)), st.integers(0, 2**32 - 1))
def test_eltwise_sa8_scalar_pair_gather_equals_plain_arithmetic(op, scalar_first, shape, layout, platform, extreme,
                                                                 sval, q1, q2, qo, seed) -> None:
    rng = np.random.default_rng(seed)
    x = _strided(rng, _ints(rng, shape, 8, extreme), layout)
    s = np.asarray(np.int8(sval))
    if op in ("max", "min"):
        q2 = q1  # MLI's max / min take operands of one quantisation
    a, b = (s, x) if scalar_first else (x, s)
    with use_platform(PLATFORMS[platform]):
        p = sa8_params(EltOp(op), q1, q2, qo)
        want = sa8_eltwise(EltOp(op), a, b, p)  # int64, element by element, no table
        got = [KE.eltwise_sa8(op, a, b, q1=q1, q2=q2, qo=qo) for _ in range(2)]  # table, then pairs
    for g in got:
        assert g.dtype == np.int8 and g.shape == x.shape
        assert np.array_equal(g, want)


@given(st.sampled_from(list(EltOp)), st.tuples(st.integers(-32768, 32767), st.integers(-40, 40), st.integers(-128, 127)),
       st.tuples(st.integers(-32768, 32767), st.integers(-40, 40), st.integers(-128, 127)),
       st.tuples(st.integers(-32768, 32767).filter(bool), st.integers(-40, 40), st.integers(-128, 127)))
def test_cached_sa8_params_follow_the_rounding_mode(op, q1, q2, qo) -> None:
    # The cache is keyed by the rounding mode: each platform gets the parameters it derives itself.
    for platform in (VPX, EM, VPX):
        with use_platform(platform):
            got = sa8_params(op, q1, q2, qo)
            want = _sa8_params.__wrapped__(op, q1, q2, qo, platform.round_mode)  # uncached derivation
            assert got == want
            assert sa8_params(op, tuple(np.int64(v) for v in q1), q2, qo) == want


@given(st.integers(-32768, 32767).filter(bool), st.integers(-30, 40), st.integers(-128, 127),
       st.integers(-32768, 32767).filter(bool), st.integers(-30, 40), st.integers(-128, 127))
def test_cached_requant_params_follow_the_rounding_mode(in_scale, in_sfb, in_zp, out_scale, out_sfb, out_zp) -> None:
    for platform in (EM, VPX, EM):
        with use_platform(platform):
            got = requant_params(in_scale, in_sfb, in_zp, out_scale, out_sfb, out_zp)
            want = _requant_params.__wrapped__(in_scale, in_sfb, in_zp, out_scale, out_sfb, out_zp,
                                               platform.round_mode)
            assert got == want
            assert requant_params(np.int16(in_scale), in_sfb, in_zp, out_scale, out_sfb, np.int8(out_zp)) == want


@given(st.integers(0, 3), st.sampled_from([8, 16, 32]), st.integers(-200, 200),
       st.integers(-32768, 32767).filter(bool), st.integers(-8, 40))
def test_cached_relu_limits_equal_a_fresh_derivation(kind, bits, zero, scale, shift) -> None:
    want = act.relu_limits.__wrapped__(kind, bits, zero, scale, shift)
    assert act.relu_limits(kind, bits, zero, scale, shift) == want
    assert act.relu_limits(kind, bits, zero, scale, shift) == want


# ---------------------------------------------------------------------------------------- moves
_EL = {"FX_8": 1, "SA_8": 1, "FX_16": 2, "SA_32": 4}


@st.composite
def move_case(draw):
    el = draw(st.sampled_from(list(_EL)))
    rank = draw(st.integers(1, 4))
    shape = draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank))
    gaps = draw(st.lists(st.integers(0, 2), min_size=rank, max_size=rank)) if draw(st.booleans()) else [0] * rank
    strides, acc = [0] * rank, 1
    for i in range(rank - 1, -1, -1):
        strides[i] = acc + (gaps[i] if i < rank - 1 else 0)
        acc = strides[i] * shape[i]
    span = 1 + sum((s - 1) * m for s, m in zip(shape, strides))
    dt = Tensor.zeros([1], el).el_type.dtype
    info = np.iinfo(dt)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    buf = rng.integers(info.min, info.max, size=span + draw(st.integers(0, 3)), endpoint=True).astype(dt)
    q = dict(zero_point=-3, scale=17, scale_frac_bits=6) if el.startswith("SA") else dict(frac_bits=5)
    per_axis = el == "SA_8" and draw(st.booleans())
    if per_axis:
        d = draw(st.integers(0, rank - 1))
        q = dict(zero_point=np.zeros(shape[d], np.int16), scale=rng.integers(1, 30000, shape[d]).astype(np.int16),
                 scale_frac_bits=rng.integers(0, 20, shape[d]).astype(np.int8), dim=d)
    src = Tensor(data=buf, capacity=buf.nbytes, shape=shape, mem_stride=strides, rank=rank,
                 el_type=Tensor.zeros([1], el).el_type, **q)
    cfg = M.MovCfg()
    kind = draw(st.sampled_from(["copy", "permute", "slice", "subsample", "pad"]))
    if kind == "permute":
        cfg.perm_dim = list(draw(st.permutations(range(rank)))) + list(range(rank, 4))
    elif kind == "slice":
        cfg.offset = [draw(st.integers(0, n - 1)) for n in shape] + [0] * (4 - rank)
    elif kind == "subsample":
        cfg.sub_sample_step = [draw(st.integers(1, 3)) for _ in shape] + [1] * (4 - rank)
    elif kind == "pad" and rank >= 2:
        cfg.padding_pre[0], cfg.padding_post[1] = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    room = draw(st.integers(0, 8))
    return src, cfg, room, per_axis


def _dst(src: Tensor, room: int, per_axis: bool) -> Tensor:
    n = 1
    for s in src.shape:
        n *= s + 4
    data = np.full(n + room, 77, dtype=src.data.dtype)
    q = {}
    if per_axis:
        m = 8
        q = dict(zero_point=np.full(m, 9, np.int16), scale=np.full(m, 9, np.int16),
                 scale_frac_bits=np.full(m, 9, np.int8), dim=0)
    return Tensor(data=data, capacity=data.nbytes, el_type=src.el_type, **q)


@settings(max_examples=200, deadline=None)
@given(move_case())
def test_mov_tensor_sync_equals_the_five_steps(case) -> None:
    src, cfg, room, per_axis = case
    a, b = _dst(src, room, per_axis), _dst(src, room, per_axis)
    M.reset_dma_pool()
    try:
        M.mli_mov_tensor_sync(src, dataclasses.replace(cfg), a)
        want_error = None
    except Exception as e:  # noqa: BLE001 - the same refusal is expected from the steps
        want_error = (type(e), getattr(e, "status", None))
    M.reset_dma_pool()
    h = M.MovHandle()
    M.mli_mov_acquire_handle(0, h)
    try:
        M.mli_mov_prepare(h, src, dataclasses.replace(cfg), b)
        M.mli_mov_start(h, src, dataclasses.replace(cfg), b)
        M.mli_mov_wait(h)
        got_error = None
    except Exception as e:  # noqa: BLE001
        got_error = (type(e), getattr(e, "status", None))
    finally:
        M.mli_mov_release_handle(h)
    M.reset_dma_pool()
    assert want_error == got_error
    assert np.array_equal(a.data, b.data)
    for f in dataclasses.fields(a):
        if f.name != "data":
            va, vb = getattr(a, f.name), getattr(b, f.name)
            assert np.array_equal(np.asarray(va), np.asarray(vb)), f.name


def test_mov_dense_copy_is_one_pass_and_exact() -> None:
    rng = np.random.default_rng(3)
    for el, dt in (("SA_8", np.int8), ("FX_16", np.int16), ("SA_32", np.int32)):
        shape = (64, 64, 32) if el != "SA_32" else (7, 9, 5)
        info = np.iinfo(dt)
        src = Tensor.from_numpy(rng.integers(info.min, info.max, shape, endpoint=True), el)
        dst = Tensor.zeros(shape, el)
        M.mli_mov_tensor_sync(src, M.MovCfg(), dst)
        assert np.array_equal(dst.data, src.data)
        assert dst.el_type == src.el_type and list(dst.shape) == list(shape)

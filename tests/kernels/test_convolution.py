"""Vectorised convolution / FC kernels against the element-by-element oracle on small random cases."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pymli import Platform, RoundMode, use_platform
from pymli.arith.requant import relu_bounds
from pymli.kernels import convolution as K
from pymli.kernels.fully_connected import fully_connected

from ..oracles import convolution as oracle

KINDS = ["fx16", "fx16_fx8_fx8", "sa8"]


@st.composite
def quant(draw, kind: str, n: int):
    """Random parameters for a kind; returns (pymli quant, oracle dict, types of x/w/b).

    Output parameters are drawn relative to the inputs' so that results spread over the output
    range instead of saturating (a requantisation mistake then shows).
    """
    if kind == "sa8":
        per_axis = draw(st.booleans())
        nw = n if per_axis else 1
        ws = draw(st.lists(st.integers(8192, 32767), min_size=nw, max_size=nw))
        in_frac = draw(st.integers(12, 24))
        wf0 = draw(st.integers(12, 24))
        wf = [wf0 + d for d in draw(st.lists(st.integers(0, 1), min_size=nw, max_size=nw))]
        e = draw(st.integers(20, 27))
        p = {"kind": "sa8", "in_zp": draw(st.integers(-128, 127)), "in_scale": draw(st.integers(8192, 32767)),
                 "in_frac": in_frac, "w_scales": ws, "w_fracs": wf, "out_zp": draw(st.integers(-64, 63)),
                 "out_scale": draw(st.integers(8192, 32767)), "out_frac": max(-128, min(127, in_frac + wf[0] - e))}
        q = K.Sa8Quant(p["in_zp"], p["in_scale"], p["in_frac"], 0, np.asarray(ws), np.asarray(wf),
                       p["out_zp"], p["out_scale"], p["out_frac"])
        return q, p, (np.int8, np.int8, np.int32)
    wbits = 16 if kind == "fx16" else 8
    in_frac = draw(st.integers(8, 15))
    w_frac = draw(st.integers(wbits // 2, wbits - 1))
    b_frac = draw(st.integers(0, in_frac + w_frac))
    lo_e = 12 if kind == "fx16" else 5
    out_frac = max(0, in_frac + w_frac - draw(st.integers(lo_e, lo_e + 8)))
    acc_bits = 40 if kind == "fx16" else 32
    p = {"kind": "fx", "in_frac": in_frac, "w_frac": w_frac, "b_frac": b_frac, "out_frac": out_frac, "acc_bits": acc_bits, "out_bits": 16}
    q = K.FxQuant(in_frac, w_frac, b_frac, out_frac, acc_bits, 16)
    wt = np.int16 if kind == "fx16" else np.int8
    return q, p, (np.int16, wt, wt)


def rand(draw, shape, dtype, small: bool):
    info = np.iinfo(dtype)
    lo, hi = (-300, 300) if small and info.bits > 16 else (info.min, info.max)
    seed = draw(st.integers(0, 2**32 - 1))
    return np.random.default_rng(seed).integers(lo, hi, size=shape, endpoint=True).astype(dtype)


platforms = st.builds(lambda up, full: Platform(RoundMode.UP if up else RoundMode.CONVERGENT, full),
                      st.booleans(), st.booleans())
relus = st.sampled_from([0, 1, 2, 3])


def bounds_for(relu: int, p: dict) -> tuple[int, int]:
    if p["kind"] == "sa8":
        return relu_bounds(relu, 8, zero_point=p["out_zp"], scale=p["out_scale"], frac_bits=p["out_frac"])
    return relu_bounds(relu, 16, frac_bits=p["out_frac"])


@settings(max_examples=40, deadline=None)
@given(data=st.data(), kind=st.sampled_from(KINDS), op=st.sampled_from(["conv", "depthwise", "group"]),
       plat=platforms, relu=relus)
def test_conv_matches_oracle(data, kind, op, plat, relu):
    draw = data.draw
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    ekh, ekw = (kh - 1) * d[0] + 1, (kw - 1) * d[1] + 1
    pad = (draw(st.integers(0, ekh - 1)), draw(st.integers(0, ekw - 1)))
    pad_b = (draw(st.integers(0, ekh - 1)), draw(st.integers(0, ekw - 1)))
    h = draw(st.integers(max(1, ekh - pad[0] - pad_b[0]), 6))
    w_ = draw(st.integers(max(1, ekw - pad[1] - pad_b[1]), 6))
    ho = K.out_size(h, kh, s[0], pad[0], pad_b[0], d[0])
    wo = K.out_size(w_, kw, s[1], pad[1], pad_b[1], d[1])
    if op == "depthwise":
        c = n = draw(st.integers(1, 4))
        wshape, groups = (kh, kw, 1, n), c
    else:
        groups = draw(st.integers(1, 2)) if op == "group" else 1
        cg, ng = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        c, n = cg * groups, ng * groups
        wshape = (kh, kw, cg, n)
    q, p, (tx, tw, tb) = draw(quant(kind, n))
    small = kind != "fx16"
    x = rand(draw, (h, w_, c), tx, False)
    wt = rand(draw, wshape, tw, False)
    b = rand(draw, (n,), tb, small)
    bnd = bounds_for(relu, p)
    geo = {"stride": s, "dilation": d, "pad": pad, "out_hw": (ho, wo), "bounds": bnd}
    with use_platform(plat):
        if op == "depthwise":
            got = K.depthwise_conv2d_hwcn(x, wt, b, q, **geo)
        else:
            got = K.conv2d_hwcn(x, wt, b, q, groups=groups, **geo)
        want = oracle.conv2d(x, wt, b, p, stride=s, dilation=d, pad=pad, out_hw=(ho, wo), groups=groups,
                             depthwise=op == "depthwise", bounds=bnd, up=plat.round_up, full=plat.full_accu)
    np.testing.assert_array_equal(got, want)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), kind=st.sampled_from(KINDS), plat=platforms, relu=relus)
def test_transpose_matches_oracle(data, kind, plat, relu):
    draw = data.draw
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    s = (draw(st.integers(1, kh)), draw(st.integers(1, kw)))
    pt, pb = draw(st.integers(0, kh - 1)), draw(st.integers(0, kh - 1))
    pl, pr = draw(st.integers(0, kw - 1)), draw(st.integers(0, kw - 1))
    h, w_ = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    ho = K.transpose_out_size(h, kh, s[0], pt, pb)
    wo = K.transpose_out_size(w_, kw, s[1], pl, pr)
    if ho < 1 or wo < 1:
        return
    c, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    q, p, (tx, tw, tb) = draw(quant(kind, n))
    x = rand(draw, (h, w_, c), tx, False)
    wt = rand(draw, (kh, kw, c, n), tw, False)
    b = rand(draw, (n,), tb, kind != "fx16")
    bnd = bounds_for(relu, p)
    with use_platform(plat):
        got = K.transpose_conv2d_hwcn(x, wt, b, q, stride=s, pad=(pt, pl), out_hw=(ho, wo), bounds=bnd)
        want = oracle.transpose_conv2d(x, wt, b, p, stride=s, pad=(pt, pl), out_hw=(ho, wo), bounds=bnd,
                                       up=plat.round_up, full=plat.full_accu)
    np.testing.assert_array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), kind=st.sampled_from(KINDS + ["fx8"]), plat=platforms, relu=relus)
def test_fully_connected_matches_oracle(data, kind, plat, relu):
    draw = data.draw
    nin, m = draw(st.integers(1, 40)), draw(st.integers(1, 6))
    if kind == "fx8":
        in_frac, w_frac = draw(st.integers(0, 7)), draw(st.integers(0, 7))
        p = {"kind": "fx", "in_frac": in_frac, "w_frac": w_frac, "b_frac": draw(st.integers(0, in_frac + w_frac)),
                 "out_frac": draw(st.integers(0, in_frac + w_frac)), "acc_bits": 32, "out_bits": 8}
        q = K.FxQuant(p["in_frac"], p["w_frac"], p["b_frac"], p["out_frac"], 32, 8)
        tx = tw = tb = np.int8
        bnd = relu_bounds(relu, 8, frac_bits=p["out_frac"])
    else:
        q, p, (tx, tw, tb) = draw(quant(kind, m))
        bnd = bounds_for(relu, p)
    x = rand(draw, (nin,), tx, False)
    w = rand(draw, (nin, m), tw, False)
    b = rand(draw, (m,), tb, kind not in ("fx16", "fx8"))
    with use_platform(plat):
        got = fully_connected(x, w, b, q, bnd)
        want = oracle.fully_connected(x, w, b, p, bounds=bnd, up=plat.round_up, full=plat.full_accu)
    np.testing.assert_array_equal(got, want)


def test_sa8_accumulator_wraps_at_32_bits():
    """A dot product beyond int32 wraps as C's int32 accumulator does (and the oracle agrees)."""
    n = 140000  # 140000 * 127 * 127 > 2**31
    x = np.full(n, 127, np.int8)
    w = np.full((n, 1), 127, np.int8)
    q = K.Sa8Quant(0, 1 << 14, 14, 0, np.asarray([1 << 14]), np.asarray([14]), 0, 1 << 14, 0)
    acc_exact = n * 127 * 127
    got = fully_connected(x, w, np.zeros(1, np.int32), q, (-128, 127))
    p = {"kind": "sa8", "in_zp": 0, "in_scale": 1 << 14, "in_frac": 14, "w_scales": [1 << 14], "w_fracs": [14], "out_zp": 0,
             "out_scale": 1 << 14, "out_frac": 0}
    want = oracle.finish_one(acc_exact, 0, 0, p, True, False)
    assert oracle.wrap(acc_exact, 32) < 0  # the wrapped sum is negative: saturates low
    assert int(got[0]) == want == -128


@settings(max_examples=25, deadline=None)
@given(data=st.data(), op=st.sampled_from(["conv", "depthwise", "group", "fc"]), plat=platforms)
def test_weights_zero_point_additives(data, op, plat):
    """Release builds accept weights zero points: the C additive terms are reproduced."""
    draw = data.draw
    q0, p, _ = draw(quant("sa8", 4))
    w_zp = draw(st.integers(-20, 20).filter(bool))
    p["w_zp"] = w_zp
    q = K.Sa8Quant(q0.in_zp, q0.in_scale, q0.in_frac, w_zp, q0.w_scales, q0.w_fracs, q0.out_zp, q0.out_scale,
                   q0.out_frac)
    b = rand(draw, (4,), np.int32, True)
    with use_platform(plat):
        if op == "fc":
            x = rand(draw, (12,), np.int8, False)
            w = rand(draw, (12, 4), np.int8, False)
            got = fully_connected(x, w, b, q, (-128, 127))
            want = oracle.fully_connected(x, w, b, p, bounds=(-128, 127), up=plat.round_up, full=plat.full_accu)
        else:
            x = rand(draw, (4, 5, 4), np.int8, False)
            groups = {"conv": 1, "group": 2, "depthwise": 4}[op]
            wshape = (3, 2, 1, 4) if op == "depthwise" else (3, 2, 4 // groups, 4)
            w = rand(draw, wshape, np.int8, False)
            s = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
            d = (draw(st.integers(1, 2)), draw(st.integers(1, 3)))
            geo = {"stride": s, "dilation": d, "pad": (1, 1),
                   "out_hw": (K.out_size(4, 3, s[0], 1, 1, d[0]), K.out_size(5, 2, s[1], 1, 0, d[1]))}
            if op == "depthwise":
                got = K.depthwise_conv2d_hwcn(x, w, b, q, bounds=(-128, 127), **geo)
            else:
                got = K.conv2d_hwcn(x, w, b, q, bounds=(-128, 127), groups=groups, **geo)
            want = oracle.conv2d(x, w, b, p, groups=groups, depthwise=op == "depthwise", bounds=(-128, 127),
                                 up=plat.round_up, full=plat.full_accu, **geo)
    np.testing.assert_array_equal(got, want)

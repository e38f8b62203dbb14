"""Properties of pymli.tflm kernels: the vectorised convolution equals a slow loop transcription of
TFLM's ConvPerChannel on small random cases (groups, strides, dilation, padding, 16x8); strided
slice equals Python slicing where the two agree."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pymli.tflm import conv, quant_util as qu, shape_ops


def slow_conv(x, w, b, izp, ozp, mult, shift, lo, hi, stride, dil, same, wide):
    n, h, wd, cin = x.shape
    cout, kh, kw, cg = w.shape
    groups = cin // cg
    fpg = cout // groups
    (oh, ow), (ph, pw) = conv.conv_out_geometry(same, (h, wd), (kh, kw), stride, dil)
    out = np.zeros((n, oh, ow, cout), np.int64)
    for bi in range(n):
        for y in range(oh):
            for xx in range(ow):
                for oc in range(cout):
                    g = oc // fpg
                    acc = 0
                    for a in range(kh):
                        for c in range(kw):
                            iy = y * stride[0] - ph + a * dil[0]
                            ix = xx * stride[1] - pw + c * dil[1]
                            if 0 <= iy < h and 0 <= ix < wd:
                                for ic in range(cg):
                                    v = int(x[bi, iy, ix, g * cg + ic]) - (0 if wide else izp)
                                    acc += int(w[oc, a, c, ic]) * v
                    if b is not None:
                        acc += int(b[oc])
                    if wide:
                        r = int(qu.multiply_by_quantized_multiplier_int64(acc, mult[oc], shift[oc]))
                    else:
                        r = int(qu.multiply_by_quantized_multiplier(acc, mult[oc], shift[oc])) + ozp
                    out[bi, y, xx, oc] = min(max(r, lo), hi)
    return out


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), groups=st.sampled_from([1, 2]), k=st.integers(1, 3),
       s=st.integers(1, 2), d=st.integers(1, 2), same=st.booleans(), wide=st.booleans())
def test_conv2d_equals_slow_loop(seed, groups, k, s, d, same, wide) -> None:
    r = np.random.default_rng(seed)
    cg, fpg = 2, 2
    dt = np.int16 if wide else np.int8
    info = np.iinfo(dt)
    x = r.integers(info.min, info.max + 1, (1, 5, 6, cg * groups)).astype(dt)
    w = r.integers(-127, 128, (fpg * groups, k, k, cg)).astype(np.int8)
    b = r.integers(-1000, 1000, fpg * groups).astype(np.int64 if wide else np.int32)
    mult = r.integers(2**30, 2**31 - 1, fpg * groups)
    shift = r.integers(-12, -4, fpg * groups)
    eff = (k - 1) * d + 1
    if not same and eff > 5:
        return
    izp, ozp = int(r.integers(-20, 20)), int(r.integers(-20, 20))
    lo, hi = (int(info.min), int(info.max))
    got = conv.conv2d(x, w, b, input_zp=izp, output_zp=ozp, multiplier=mult, shift=shift,
                      act_min=lo, act_max=hi, stride=(s, s), dilation=(d, d), same=same)
    want = slow_conv(x, w, b, izp, ozp, mult, shift, lo, hi, (s, s), (d, d), same, wide)
    assert np.array_equal(got.astype(np.int64), want)


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3), data=st.data())
def test_strided_slice_equals_python_slicing(shape, data) -> None:
    x = np.arange(int(np.prod(shape))).reshape(shape)
    b, e, s, sl = [], [], [], []
    for dim in shape:
        st_ = data.draw(st.sampled_from([1, 2, -1]))
        lo = data.draw(st.integers(-dim, dim - 1))
        hi = data.draw(st.integers(-dim, dim))
        b.append(lo)
        e.append(hi)
        s.append(st_)
        sl.append(slice(lo, hi, st_))
    got = shape_ops.strided_slice(x, np.array(b), np.array(e), np.array(s))
    assert np.array_equal(got, x[tuple(sl)])

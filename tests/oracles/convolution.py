"""Slow pure-Python models of the MLI MAC kernels, written element by element from the C semantics.

They share nothing with pymli's vectorised code except the parameter structs (the integer maths is
the shared scalar model in tests/oracles/c_math.py), so a test comparing the two can fail on any
arithmetic or indexing mistake.
"""

from __future__ import annotations

import numpy as np

from .c_math import asl, asr_rnd, cdiv, norm, sat, wrap


def sa8_params(in_scale, in_frac, out_scale, out_frac, w_scale, w_frac, up, full):
    n_in = norm(in_scale)
    u = cdiv(in_scale << n_in, out_scale)
    n2 = norm(u)
    ratio = sat(asr_rnd(u, 16 - n2, 32, up), 16)
    shift = in_frac + n_in - out_frac - (16 - n2) + w_frac
    mul = ratio * w_scale
    if not full:
        k = norm(mul)
        mul = wrap(mul << k, 32)
        shift += k
    return mul, shift


def sa8_cast(acc: int, mul: int, shift: int, zp: int, up: bool, full: bool) -> int:
    pre = 0
    if not full:
        mul = asr_rnd(mul, 16, 32, up)
        shift -= 16
        pre = min(max(shift - 21, 0), 8)
        acc = sat(asr_rnd(acc, pre, 32, up), 16)
    r = sat(asr_rnd(acc * mul, min(shift - pre, 63), 64, up), 16)
    return sat(sat(r + zp, 16), 8)


def sa8_bias(b: int, full: bool) -> int:
    if full:
        return b
    sh = max(16 - norm(b), 0)
    return asl(b >> sh, sh, 32)


def finish_one(acc: int, bias: int, ch: int, p: dict, up: bool, full: bool) -> int:
    """acc: exact sum of (x - in_zp) * w for one output; returns the output value before ReLU."""
    if p["kind"] == "sa8":
        acc = wrap(acc, 32)
        acc = sat(acc + sa8_bias(bias, full), 32)
        ws = p["w_scales"][ch if len(p["w_scales"]) > 1 else 0]
        wf = p["w_fracs"][ch if len(p["w_fracs"]) > 1 else 0]
        mul, sh = sa8_params(p["in_scale"], p["in_frac"], p["out_scale"], p["out_frac"], ws, wf, up, full)
        return sa8_cast(acc, mul, sh, p["out_zp"], up, full)
    bshift = p["in_frac"] + p["w_frac"] - p["b_frac"]
    oshift = p["in_frac"] + p["w_frac"] - p["out_frac"]
    if p["acc_bits"] == 32:
        acc = wrap(acc, 32)
        acc = sat(acc + asr_rnd(bias, -bshift, 32, up), 32)
        return sat(asr_rnd(acc, oshift, 32, up), p["out_bits"])
    acc = acc + wrap(asr_rnd(bias, -bshift, 64, up), 32)
    return sat(asr_rnd(acc, oshift, 64, up), p["out_bits"])


def conv2d(x, w, b, p, *, stride, dilation, pad, out_hw, groups, depthwise, bounds, up, full):
    """Element-by-element conv2d / group / depthwise: only taps on input pixels are summed."""
    h, wd, _c = x.shape
    kh, kw = w.shape[:2]
    ho, wo = out_hw
    n = w.shape[3]
    out = np.zeros((ho, wo, n), dtype=np.int64)
    zp = p.get("in_zp", 0)
    wzp = p.get("w_zp", 0)
    for oy in range(ho):
        for ox in range(wo):
            for o in range(n):
                acc = 0
                sum_x = 0
                taps = 0
                for ky in range(kh):
                    iy = oy * stride[0] - pad[0] + ky * dilation[0]
                    if not 0 <= iy < h:
                        continue
                    for kx in range(kw):
                        ix = ox * stride[1] - pad[1] + kx * dilation[1]
                        if not 0 <= ix < wd:
                            continue
                        taps += 1
                        if depthwise:
                            acc += (int(x[iy, ix, o]) - zp) * int(w[ky, kx, 0, o])
                            sum_x += int(x[iy, ix, o])
                        else:
                            cg = w.shape[2]
                            g = o // (n // groups)
                            for ci in range(cg):
                                acc += (int(x[iy, ix, g * cg + ci]) - zp) * int(w[ky, kx, ci, o])
                                sum_x += int(x[iy, ix, g * cg + ci])
                if not depthwise and taps:
                    # conv2d / group conv2d: C's in_additive reads a rows x columns block that starts
                    # at the first valid tap and steps by one pixel, whatever the dilation.
                    ys = [oy * stride[0] - pad[0] + ky * dilation[0] for ky in range(kh)]
                    xs = [ox * stride[1] - pad[1] + kx * dilation[1] for kx in range(kw)]
                    ys = [v for v in ys if 0 <= v < h]
                    xs = [v for v in xs if 0 <= v < wd]
                    cg = w.shape[2]
                    g = o // (n // groups)
                    sum_x = int(x[ys[0]:ys[0] + len(ys), xs[0]:xs[0] + len(xs), g * cg:(g + 1) * cg].astype(np.int64).sum())
                # C's weights-zero-point additives: -w_zp * sum(x) + in_zp * w_zp * (rows * columns)
                acc += -wzp * sum_x + zp * wzp * taps
                v = finish_one(acc, int(b[o]), o, p, up, full)
                out[oy, ox, o] = max(bounds[0], min(bounds[1], v))
    return out


def transpose_conv2d(x, w, b, p, *, stride, pad, out_hw, bounds, up, full):
    """Scatter definition: out[iy*s + ky - pad_top, ix*s + kx - pad_left] += x[iy, ix] * w[ky, kx]."""
    h, wd, c = x.shape
    kh, kw, _, n = w.shape
    ho, wo = out_hw
    acc = [[[0] * n for _ in range(wo)] for _ in range(ho)]
    zp = p.get("in_zp", 0)
    for iy in range(h):
        for ix in range(wd):
            for ky in range(kh):
                oy = iy * stride[0] + ky - pad[0]
                if not 0 <= oy < ho:
                    continue
                for kx in range(kw):
                    ox = ix * stride[1] + kx - pad[1]
                    if not 0 <= ox < wo:
                        continue
                    for o in range(n):
                        acc[oy][ox][o] += sum((int(x[iy, ix, ci]) - zp) * int(w[ky, kx, ci, o]) for ci in range(c))
    out = np.zeros((ho, wo, n), dtype=np.int64)
    for oy in range(ho):
        for ox in range(wo):
            for o in range(n):
                v = finish_one(acc[oy][ox][o], int(b[o]), o, p, up, full)
                out[oy, ox, o] = max(bounds[0], min(bounds[1], v))
    return out


def fully_connected(x, w, b, p, *, bounds, up, full):
    zp = p.get("in_zp", 0)
    wzp = p.get("w_zp", 0)
    other = wrap(-wzp * sum(int(v) for v in x) + zp * wzp * w.shape[0], 32)
    out = []
    for o in range(w.shape[1]):
        acc = sum((int(x[i]) - zp) * int(w[i, o]) for i in range(w.shape[0]))
        if wzp:
            acc = sat(wrap(acc, 32) + other, 32)
        v = finish_one(acc, int(b[o]), o, p, up, full)
        out.append(max(bounds[0], min(bounds[1], v)))
    return np.asarray(out, dtype=np.int64)

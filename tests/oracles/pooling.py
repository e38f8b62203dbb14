"""Slow scalar models of MLI's pooling and element-wise kernels, for testing the vectorised code.

Everything here works on Python ints, one element at a time, and follows the control flow of the
C reference (border areas processed in rotated frames, per-window multipliers, per-element
requantisation chains) rather than pymli's vectorised formulation. The integer maths is the shared
scalar model in tests/oracles/c_math.py; nothing here comes from ``pymli.arith`` / ``pymli.kernels``.
"""

from __future__ import annotations

import numpy as np

from .c_math import add_sat, asl, asr_rnd, cast_fx, cdiv, norm, norm_cast, sat_fx, sub_sat, wrap

# ----------------------------------------------------------------------------- pooling


def mul_shift(div: int) -> tuple[int, int]:
    val = (1 << 31) // div
    sh = 0
    if div > 1:
        sh = norm(val, 32) + 1
        val = (val << (sh % 32)) & 0xFFFFFFFF  # x86 shift count is taken modulo 32
    return val >> 17, 14 + sh


def requant(in_q: tuple[int, int, int], out_q: tuple[int, int, int], up: bool) -> tuple[int, int, int]:
    (si, fi, zi), (so, fo, zo) = in_q, out_q
    pre = norm(si, 32) - norm(wrap(so, 16), 16)
    scale, ns = norm_cast(cdiv(si << pre, so), 32, 16, up)
    shift = pre + fi - fo - ns
    offset = sub_sat(zo, cast_fx(scale * zi, shift, 32, 16, up), 16)
    return scale, shift, offset


class _T:
    """tensor_private_t: flat offset, geometry and (possibly negative) strides."""

    def __init__(self, ptr: int, h: int, w: int, c: int, rs: int, cs: int) -> None:
        self.ptr, self.height, self.width, self.ch, self.row, self.col = ptr, h, w, c, rs, cs

    def rotate(self, n: int) -> "_T":
        t = _T(self.ptr, self.height, self.width, self.ch, self.row, self.col)
        if n == 1:
            t.ptr += self.col * (self.width - 1)
            t.width, t.height = self.height, self.width
            t.row, t.col = -self.col, self.row
        elif n == 2:
            t.ptr += self.col * (self.width - 1) + self.row * (self.height - 1)
            t.col, t.row = -self.col, -self.row
        elif n == 3:
            t.ptr += self.row * (self.height - 1)
            t.width, t.height = self.height, self.width
            t.row, t.col = self.col, -self.row
        return t


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def pool_c(x: np.ndarray, kind: str, kernel: tuple[int, int], stride: tuple[int, int],
           pads: tuple[int, int, int, int], out_hw: tuple[int, int], *, fx_shift: int = 0,
           sa: tuple[tuple[int, int, int], tuple[int, int, int]] | None = None, fixed: int = 0,
           up: bool = True, mul16: bool = False, out_buf: np.ndarray | None = None,
           out_strides: tuple[int, int] | None = None) -> np.ndarray:
    """mli_krn_pool_hwc for an HWC int array.

    Without ``out_buf``: returns the dense output and fails if any store misses it or an output
    element is left unwritten. With ``out_buf`` (1-D, from the output's first element) and
    ``out_strides``: applies every store that lands inside the buffer and returns the buffer.
    """
    h_in, w_in, ch = x.shape
    bits = x.dtype.itemsize * 8
    src = [int(v) for v in x.reshape(-1)]
    kh, kw = kernel
    sh, sw = stride
    pt, pb, pl, pr = pads
    oh, ow = out_hw
    dst: dict[int, int] = {}
    if fixed:
        kh = kw = fixed
    pr = (ow * sw + kw - sw) - w_in - pl
    pb = (oh * sh + kh - sh) - h_in - pt
    if pr < 0:
        w_in += pr
        pr = 0
    if pb < 0:
        h_in += pb
        pb = 0
    if kind == "ave":
        if sa is not None:
            p_scale, p_shift, p_off = requant(sa[0], sa[1], up)
        else:
            p_scale, p_shift, p_off = 1, fx_shift, 0
    else:
        p_scale = p_shift = p_off = 0
    tin = _T(0, h_in, w_in, ch, x.shape[1] * ch, ch)
    tout = _T(0, oh, ow, ch, *(out_strides or (ow * ch, ch)))

    def params(count: int) -> tuple[int, int]:
        count &= 0xFFFFFFFF  # C passes an unsigned divisor
        mul, s = mul_shift(count) if count else (0, 0)
        s += p_shift
        if sa is not None:
            mul, ns = norm_cast(p_scale * mul, 32, 16 if mul16 else 8, up)
            s -= ns
        return mul, s

    def window(tin: _T, tout: _T, ip: int, op: int, mul: int, s: int, cols: int, rows: int) -> None:
        def rd(i: int) -> int:  # memory outside the input buffer reads as 0 (C: undefined)
            return src[i] if 0 <= i < len(src) else 0

        if kind == "max":
            v = rd(ip)
            for r in range(rows):
                for c in range(cols):
                    v = max(v, rd(ip + tin.row * r + tin.col * c))
        else:
            acc_bits = 32 if bits == 8 else 64
            acc = asl(p_off, s, acc_bits)
            for r in range(rows):
                for c in range(cols):
                    acc = wrap(acc + mul * rd(ip + tin.row * r + tin.col * c), acc_bits)
            v = sat_fx(asr_rnd(acc, s, acc_bits, up), acc_bits - bits, acc_bits)
        dst[op] = v

    def nopad(rb: int, re: int, cb: int, ce: int, tin: _T, tout: _T) -> None:
        mul, s = params(kw * kh) if kind == "ave" else (0, 0)
        if not (tin.height >= kh and tin.width >= kw):
            return
        for c in range(tin.ch):
            for hh in range(rb, re):
                for ww in range(cb, ce):
                    ip = tin.ptr + tin.row * (hh * sh - pt) + tin.col * (ww * sw - pl) + c
                    op = tout.ptr + tout.row * hh + tout.col * ww + c
                    window(tin, tout, ip, op, mul, s, kw, kh)

    def compute_pad(sw_: int, sh_: int, pt_: int, pl_: int, area: tuple[int, int, int, int],
                    tin: _T, tout: _T, kh_: int, kw_: int) -> None:
        rb, re, cb, ce = area
        comp = (0, 0, 0, 0)
        rows = cols = 0
        mul = s = 0
        for hh in range(rb, re):
            ww = cb
            while ww < min(cb + kw_, ce):
                cl = -min(ww * sw_ - pl_, 0)
                cr = -min(tin.width - (ww * sw_ - pl_ + kw_), 0)
                ct = -min(hh * sh_ - pt_, 0)
                cbm = -min(tin.height - (hh * sh_ - pt_ + kh_), 0)
                comp = (cl, cr, ct, cbm)
                rows, cols = kh_ - ct - cbm, kw_ - cr - cl
                if kind == "ave":
                    mul, s = params(rows * cols)
                for c in range(tin.ch):
                    ip = tin.ptr + tin.row * (hh * sh_ - pt_ + ct) + tin.col * (ww * sw_ - pl_ + cl) + c
                    op = tout.ptr + tout.row * hh + tout.col * ww + c
                    window(tin, tout, ip, op, mul, s, cols, rows)
                ww += 1
            while ww < ce:
                cl, _, ct, _ = comp
                if fixed:
                    cols = fixed
                for c in range(tin.ch):
                    ip = tin.ptr + tin.row * (hh * sh_ - pt_ + ct) + tin.col * (ww * sw_ - pl_ + cl) + c
                    op = tout.ptr + tout.row * hh + tout.col * ww + c
                    window(tin, tout, ip, op, mul, s, cols, rows)
                ww += 1

    if pt or pl or pb or pr:
        rb, re = _ceil_div(pt, sh), _ceil_div(h_in + pt - kh + 1, sh)
        cb, ce = _ceil_div(pl, sw), _ceil_div(w_in + pl - kw + 1, sw)
        if re - rb > 0 and ce - cb > 0:
            nopad(rb, re, cb, ce, tin, tout)
        if pt:
            ce0 = max(_ceil_div(pl, sw), ow - _ceil_div(pr, sw))
            compute_pad(sw, sh, pt, pl, (0, _ceil_div(pt, sh), 0, ce0), tin, tout, kh, kw)
        if pr:
            r_end = oh - _ceil_div(pb, sh)
            c_beg = ow - _ceil_div(pr, sw)
            compute_pad(sh, sw, pr, pt, (0, ow - c_beg, 0, r_end), tin.rotate(1), tout.rotate(1), kw, kh)
        if pb:
            r_beg = oh - _ceil_div(pb, sh)
            c_beg = _ceil_div(pl, sw)
            compute_pad(sw, sh, pb, pr, (0, oh - r_beg, 0, ow - c_beg), tin.rotate(2), tout.rotate(2), kh, kw)
        if pl:
            r_beg = _ceil_div(pt, sh)
            compute_pad(sh, sw, pl, pb, (0, _ceil_div(pl, sw), 0, oh - r_beg), tin.rotate(3), tout.rotate(3), kw, kh)
    else:
        nopad(0, oh, 0, ow, tin, tout)
    if out_buf is not None:
        for off, v in dst.items():
            if 0 <= off < out_buf.shape[0]:
                out_buf[off] = v
        return out_buf
    if sorted(dst) != list(range(oh * ow * ch)):
        raise AssertionError("the C loop structure stored outside the output or left elements unwritten")
    return np.array([dst[i] for i in range(oh * ow * ch)], dtype=x.dtype).reshape(oh, ow, ch)

# ----------------------------------------------------------------------------- element-wise


def eltwise_c(op: str, a: int, b: int, *, bits: int, fb: tuple[int, int, int] | None = None,
              q: tuple[tuple[int, int, int], ...] | None = None, up: bool = True) -> int:
    """eltwise_prepare_and_run + eltwise_perform_operation for one pair of values."""
    if q is None:
        assert fb is not None
        f1, f2, fo = fb
        pre1 = pre2 = 0
        if op == "mul":
            post, mx = f1 + f2 - fo, 2 * bits - 1
        elif op in ("min", "max"):
            post, mx = f1 - fo, bits - 1
        else:
            mx = 2 * bits - 1
            pre1, pre2 = min(f1 - f2, 0), min(f2 - f1, 0)
            post = max(f1, f2) - fo
        post = min(post, mx)
        if op in ("min", "max"):
            acc = max(a, b) if op == "max" else min(a, b)
            return asr_rnd(acc, post, bits, up)
        x1, x2 = asr_rnd(a, pre1, 32, up), asr_rnd(b, pre2, 32, up)
        acc = {"add": lambda: add_sat(x1, x2, 32), "sub": lambda: sub_sat(x1, x2, 32), "mul": lambda: x1 * x2}[op]()
        return sat_fx(asr_rnd(acc, post, 64, up), 64 - bits, 64)
    (s1, f1, z1), (s2, f2, z2), (so, fo, zo) = q
    pre1 = pre2 = post = 0
    m1 = m2 = 1
    if op in ("min", "max"):
        sf, sh = norm_cast(s1, 32, 32, up)
        sf = cdiv(sf, so)
        post = f1 - fo - sh
        m1, sh = norm_cast(sf, 32, 16, up)
        post -= sh
        sh = max(post - 23, 0) + min(31 + post, 0)
        m1 = asr_rnd(m1, sh, 16, up)
        post -= sh
        m2 = m1
    elif op == "mul":
        sf, sh = norm_cast(s1 * s2, 32, 32, up)
        sf = cdiv(sf, so)
        post = f1 + f2 - fo - sh
        m1, sh = norm_cast(sf, 32, 16, up)
        post -= sh
        sh = max(post - 31, 0) + min(31 + post, 0)
        m1 = asr_rnd(m1, sh, 16, up)
        post -= sh
    else:
        sf1, n1 = norm_cast(s1, 32, 32, up)
        sf2, n2 = norm_cast(s2, 32, 32, up)
        sf1, sf2 = cdiv(sf1, so), cdiv(sf2, so)
        pre1, pre2 = -n1 + f1 - fo, -n2 + f2 - fo
        m1, n1 = norm_cast(sf1, 32, 16, up)
        m2, n2 = norm_cast(sf2, 32, 16, up)
        pre1 -= n1
        pre2 -= n2
        k1 = max(pre1 - 23, 0) + min(31 + pre1, 0)
        k2 = max(pre2 - 23, 0) + min(31 + pre2, 0)
        m1, m2 = asr_rnd(m1, k1, 16, up), asr_rnd(m2, k2, 16, up)
        pre1 -= k1
        pre2 -= k2
    i1, i2 = sub_sat(a, z1, 16), sub_sat(b, z2, 16)
    if op == "mul":
        acc = i1 * i2
        preshift = min(max(post - 21, 0), 3)
        r = cast_fx(acc, preshift, 32, 16, up)
        t = cast_fx(r * m1, post - preshift, 32, 16, up)
    else:
        x1, x2 = i1 * m1, i2 * m2
        if op in ("min", "max"):
            t = cast_fx(max(x1, x2) if op == "max" else min(x1, x2), post, 32, 16, up)
        else:
            x1, x2 = asr_rnd(x1, pre1, 32, up), asr_rnd(x2, pre2, 32, up)
            acc = add_sat(x1, x2, 32) if op == "add" else sub_sat(x1, x2, 32)
            t = cast_fx(acc, post, 64, 16, up)
    t = add_sat(t, zo, 16)
    return max(-128, min(127, t))

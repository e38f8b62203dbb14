"""Live differential test: random valid 1.x calls, pymli.v1 against the real MLI 1.0 library (ctypes).

The library is built from ../shared/mli1 by its build.sh into a cache folder outside the project
(reused across runs). Skipped, with the reason, only where no C toolchain exists. Whole output
buffers (including the tails beyond the results) and the output struct fields are compared.
"""

from __future__ import annotations

import dataclasses
import zlib

import numpy as np
import pytest

import pymli
from pymli.v1 import (PRESETS_V1, Conv2dCfg, ElType, MliError, Padding2dCfg, PermuteCfg, PoolCfg, ReluCfg,
                      RnnCellCfg, Tensor, capi)
from pymli.v1.cfg import ConcatCfg

from ._cmli1 import CCall
from ._cmli1 import load as _lib

_TYPES = {"fx8": (8, 8), "fx16": (16, 16), "fx8w16d": (16, 8)}


def _el(bits: int) -> ElType:
    return ElType.FX_8 if bits == 8 else ElType.FX_16


def _t(rng, shape, bits, frac, lim=None, cap_extra=0) -> Tensor:
    lim = lim or (1 << (bits - 1)) - 1
    x = rng.integers(-lim - 1 if lim == (1 << (bits - 1)) - 1 else -lim, lim + 1, shape)
    return Tensor.from_numpy(x, _el(bits), frac_bits=frac, capacity=(int(np.prod(shape)) + cap_extra) * bits // 8)


def _out(rng, n, bits, frac) -> Tensor:
    t = Tensor.empty(n, _el(bits), frac_bits=frac)
    t.data[:] = rng.integers(-100, 100, n)  # a sentinel pattern: unwritten parts must stay
    t.rank, t.shape = 4, [0, 0, 0, 0]
    return t


def _our_status(name: str, args: list, platform: pymli.Platform) -> int:
    """The C status of pymli's ``name(*args)`` on ``platform`` (0: success)."""
    with pymli.use_platform(platform):
        try:
            getattr(capi, name)(*args)
        except MliError as e:
            return int(e.status)
    return 0


def _gen(family: str, sfx: str, rng: np.random.Generator):
    """One random valid call: (function name, args, output tensors)."""
    dbits, wbits = _TYPES[sfx]
    if family in ("conv2d_chw", "conv2d_hwc", "depthwise_conv2d_chw"):
        c, h, w = int(rng.integers(1, 5)), int(rng.integers(4, 10)), int(rng.integers(4, 10))
        kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        co = c if family.startswith("depthwise") else int(rng.integers(1, 5))
        sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        pads = [int(rng.integers(0, k)) for k in (kh, kh, kw, kw)]
        x = _t(rng, (c, h, w) if "chw" in family else (h, w, c), dbits, dbits - 3, lim=(1 << (dbits - 2)))
        wshape = (co, 1, kh, kw) if family.startswith("depthwise") else ((co, c, kh, kw) if "chw" in family else (co, kh, kw, c))
        wt = _t(rng, wshape, wbits, wbits - 1, lim=(1 << (wbits - 3)))
        b = _t(rng, (co,), wbits, wbits - 2, lim=(1 << (wbits - 3)))
        cfg = Conv2dCfg(ReluCfg(int(rng.integers(0, 4))), sw, sh, pads[2], pads[3], pads[0], pads[1])
        ho, wo = -(-(h + pads[0] + pads[1] - kh + 1) // sh), -(-(w + pads[2] + pads[3] - kw + 1) // sw)
        out = _out(rng, co * ho * wo + 3, dbits, dbits - 4)
        return f"mli_krn_{family}_{sfx}", [x, wt, b, cfg, out], [out]
    if family in ("avepool_chw", "maxpool_chw", "avepool_hwc", "maxpool_hwc"):
        c, h, w = int(rng.integers(1, 4)), int(rng.integers(5, 12)), int(rng.integers(5, 12))
        kh, kw = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        pads = [int(rng.integers(0, k)) for k in (kh, kh, kw, kw)]
        x = _t(rng, (c, h, w) if "chw" in family else (h, w, c), dbits, 5)
        cfg = PoolCfg(kw, kh, sw, sh, pads[2], pads[3], pads[0], pads[1])
        ho, wo = -(-(h + pads[0] + pads[1] - kh + 1) // sh), -(-(w + pads[2] + pads[3] - kw + 1) // sw)
        out = _out(rng, c * ho * wo + 2, dbits, 0)
        return f"mli_krn_{family}_{sfx}", [x, cfg, out], [out]
    if family == "fully_connected":
        n, m = int(rng.integers(1, 40)), int(rng.integers(1, 12))
        x = _t(rng, (n,), dbits, dbits - 3, lim=(1 << (dbits - 2)))
        wt = _t(rng, (m, n), wbits, wbits - 1, lim=(1 << (wbits - 3)))
        b = _t(rng, (m,), wbits, wbits - 2)
        out = _out(rng, m + 2, dbits, dbits - 5)
        return f"mli_krn_fully_connected_{sfx}", [x, wt, b, out], [out]
    shape = tuple(int(s) for s in rng.integers(1, 6, int(rng.integers(1, 5))))
    n = int(np.prod(shape))
    if family in ("relu", "sigm", "tanh", "softmax"):
        x = _t(rng, shape, dbits, int(rng.integers(0, dbits)))
        out = _out(rng, n + 1, dbits, 0)
        args = [x, ReluCfg(int(rng.integers(0, 4))), out] if family == "relu" else [x, out]
        return f"mli_krn_{family}_{sfx}", args, [out]
    if family == "leaky_relu":
        x = _t(rng, shape, dbits, 6)
        s = Tensor.scalar(int(rng.integers(-(1 << (dbits - 2)), 1 << (dbits - 2))), _el(dbits), frac_bits=dbits - 2)
        out = _out(rng, n, dbits, 0)
        return f"mli_krn_leaky_relu_{sfx}", [x, s, out], [out]
    if family.startswith("eltwise_"):
        frac = int(rng.integers(0, dbits))
        a = _t(rng, shape, dbits, frac)
        b = _t(rng, shape, dbits, frac if family != "eltwise_mul" else int(rng.integers(0, dbits)))
        if rng.random() < 0.3:
            b = Tensor.scalar(int(rng.integers(-50, 50)), _el(dbits), frac_bits=b.frac_bits)
        out = _out(rng, n + 1, dbits, int(rng.integers(0, dbits)))
        return f"mli_krn_{family}_{sfx}", [a, b, out], [out]
    if family == "permute":
        x = _t(rng, shape, dbits, 3)
        perm = tuple(int(p) for p in rng.permutation(len(shape))) + (0,) * (4 - len(shape))
        out = _out(rng, n, dbits, 0)
        return f"mli_krn_permute_{sfx}", [x, PermuteCfg(perm), out], [out]
    if family in ("padding2d_chw", "padding2d_hwc"):
        x = _t(rng, tuple(int(s) for s in rng.integers(1, 5, 3)), dbits, 3)
        pads = [int(p) for p in rng.integers(0, 3, 4)]
        out = _out(rng, 200, dbits, 0)
        return f"mli_krn_{family}_{sfx}", [x, Padding2dCfg(*pads), out], [out]
    if family == "concat":
        axis = int(rng.integers(0, len(shape)))
        ts = []
        for _ in range(int(rng.integers(1, 4))):
            s = list(shape)
            s[axis] = int(rng.integers(1, 4))
            ts.append(_t(rng, tuple(s), dbits, 4))
        out = _out(rng, sum(t.count() for t in ts), dbits, 0)
        return f"mli_krn_concat_{sfx}", [ts, ConcatCfg(len(ts), axis), out], [out]
    if family in ("basic_rnn_cell", "lstm_cell"):
        n_in, m = int(rng.integers(1, 10)), int(rng.integers(1, 9))
        mode = int(rng.integers(0, 3))
        batch = int(rng.integers(1, 4)) if mode else 1
        act = int(rng.integers(0, 3))
        inf, pf = dbits - 2, dbits - 1 - int(rng.integers(0, 2))
        x = _t(rng, (batch, n_in) if mode else (n_in,), dbits, inf, lim=(1 << (dbits - 3)))
        prev = _t(rng, (m,), dbits, pf, lim=(1 << (dbits - 3)))
        gates = 4 if family == "lstm_cell" else 1
        wt = _t(rng, (4, m, n_in + m) if gates == 4 else (m, n_in + m), wbits, wbits - 1, lim=(1 << (wbits - 4)))
        b = _t(rng, (4, m) if gates == 4 else (m,), wbits, wbits - 2, lim=(1 << (wbits - 4)))
        ir = _out(rng, 4 * m + 2, dbits, 0)
        out = _out(rng, batch * m + 1, dbits, dbits - 3)
        cfg = RnnCellCfg(mode, act, ir)
        if family == "lstm_cell":
            cell = _t(rng, (m,), dbits, dbits - 4, lim=(1 << (dbits - 3)))
            return f"mli_krn_lstm_cell_{sfx}", [x, prev, wt, b, cfg, cell, out], [out, cell, ir]
        return f"mli_krn_basic_rnn_cell_{sfx}", [x, prev, wt, b, cfg, out], [out, ir]
    raise AssertionError(family)


_FAMILIES = [(f, s) for f in ("conv2d_chw", "conv2d_hwc", "depthwise_conv2d_chw", "fully_connected", "basic_rnn_cell",
                              "lstm_cell") for s in ("fx8", "fx16", "fx8w16d")]
_FAMILIES += [(f, s) for f in ("avepool_chw", "maxpool_chw", "avepool_hwc", "maxpool_hwc", "relu", "leaky_relu", "sigm",
                               "tanh", "softmax", "eltwise_add", "eltwise_sub", "eltwise_min", "eltwise_max",
                               "eltwise_mul", "permute", "padding2d_chw", "padding2d_hwc", "concat")
              for s in ("fx8", "fx16")]


@pytest.mark.parametrize("variant", ["conv", "up"])
@pytest.mark.parametrize("family,sfx", _FAMILIES, ids=[f"{f}_{s}" for f, s in _FAMILIES])
def test_random_calls_match_mli_1_0(family: str, sfx: str, variant: str) -> None:
    lib = _lib(variant)
    rng = np.random.default_rng(zlib.crc32(f"{family}/{sfx}/{variant}".encode()))
    for _ in range(8):
        name, args, outs = _gen(family, sfx, rng)
        c = CCall(lib)
        status = c.call(name, args)
        ours = _our_status(name, args, PRESETS_V1[variant])
        assert ours == status, f"{name}: status {ours} vs C {status}"
        for t in outs:
            assert np.array_equal(t.data, c.buffer(t)), f"{name}: buffer differs\n{t.data}\n{c.buffer(t)}"
        for t, ct in c.tensors:
            if any(t is o for o in outs) and t.rank:
                assert (t.rank, list(t.dims), int(t.el_type), t.frac_bits) == (
                    ct.rank, list(ct.shape)[: ct.rank], ct.el_type, ct.frac_bits), name


def _mutate(rng: np.random.Generator, name: str, args: list, outs: list) -> str:
    """Break one argument of a valid call the way a caller could; returns what was broken."""
    tensors = [a for a in args if isinstance(a, Tensor)] + [t for a in args if isinstance(a, list) for t in a]
    inputs = [t for t in tensors if not any(t is o for o in outs) and t.rank > 0]
    out = outs[0]
    kind = rng.choice(["in_capacity", "out_capacity", "rank", "el_type", "out_null", "bias_frac", "cfg"])
    if kind == "in_capacity" and inputs:
        t = inputs[int(rng.integers(len(inputs)))]
        t.capacity = max(0, t.count() * t.element_size - int(rng.integers(1, 3)))
    elif kind == "out_capacity":
        out.capacity = int(rng.integers(0, 3))
    elif kind == "rank" and inputs:
        t = inputs[int(rng.integers(len(inputs)))]
        t.rank = 5 if rng.random() < 0.5 else max(1, t.rank - 1)
    elif kind == "el_type" and inputs:
        t = inputs[int(rng.integers(len(inputs)))]
        if t.el_type == ElType.FX_16:
            t.el_type = ElType.FX_8  # never FX_8 -> FX_16: an unchecked kernel would read past the buffer
        else:
            return "nothing"
    elif kind == "out_null":
        out.data = None
    elif kind == "bias_frac" and len(inputs) >= 3 and ("conv" in name or "fully" in name or "rnn" in name or "lstm" in name):
        inputs[2].frac_bits = inputs[0].frac_bits + inputs[1].frac_bits + 1
    elif kind == "cfg":
        for i, a in enumerate(args):
            if isinstance(a, (Conv2dCfg, PoolCfg)):
                args[i] = dataclasses.replace(a, stride_width=0) if rng.random() < 0.5 else dataclasses.replace(
                    a, padding_top=200)
                break
            if isinstance(a, PermuteCfg):
                args[i] = PermuteCfg((0, 0, 1, 2))
                break
            if isinstance(a, ConcatCfg):
                args[i] = ConcatCfg(0, a.axis)
                break
        else:
            return "nothing"
    else:
        return "nothing"
    return str(kind)


_CHK_FAMILIES = [(f, s) for f, s in _FAMILIES if f not in ("basic_rnn_cell", "lstm_cell")]


@pytest.mark.parametrize("family,sfx", _CHK_FAMILIES, ids=[f"{f}_{s}" for f, s in _CHK_FAMILIES])
def test_invalid_calls_match_the_checked_build(family: str, sfx: str) -> None:
    """Deliberately broken calls: pymli raises the status the checked C build returns, and writes nothing."""
    lib = _lib("convchk")
    rng = np.random.default_rng(zlib.crc32(f"chk/{family}/{sfx}".encode()))
    n = 0
    for _ in range(12):
        name, args, outs = _gen(family, sfx, rng)
        what = _mutate(rng, name, args, outs)
        if what == "nothing":
            continue
        before = [None if t.data is None else t.data.copy() for t in outs]
        c = CCall(lib)
        status = c.call(name, args)
        ours = _our_status(name, args, PRESETS_V1["convchk"])
        assert ours == status, f"{name} ({what}): status {ours} vs C {status}"
        if status:
            n += 1
            for t, b in zip(outs, before):
                if b is not None:
                    assert np.array_equal(t.data, b) and np.array_equal(c.buffer(t), b), f"{name}: written on failure"
    assert n > 0

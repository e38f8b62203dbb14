"""fx16 convolutions at the 40-bit limit with mixed signs: MLI 1.0's MAC order per code path.

Where a saturating partial sum turns back, the result depends on which products C adds in one
dual MAC and in which order (``pymli.v1.kernels.conv_column_schemes``). Every fx16 convolution
function (CHW conv2d and depthwise: each specialisation and the dispatchers; HWC conv2d) is fuzzed
against the live MLI 1.0 library (``../shared/mli1/build.sh``, builds ``conv`` and ``up``) with operands at
the containers' extremes, random signs and a bias at the accumulator's limit, over random kernel
sizes, odd and even widths, strides and paddings the function accepts: whole output buffers must
be equal. Each function's cases must reach the limit (the exact sum gives other outputs), and the
paths with dual MACs or another order must give outputs that the plain order would not.
"""

from __future__ import annotations

import functools
import re
import zlib

import numpy as np
import pytest

import pymli
from pymli.v1 import PRESETS_V1, Conv2dCfg, ElType, ReluCfg, ReluType, Tensor, capi
from pymli.v1.capi._names import API_FUNCTIONS
from pymli.v1.capi._functions import conv_mac_path, spec_constraint
from pymli.v1.kernels import MAC_PATHS, conv2d_chw, conv_column_schemes, depthwise_conv2d_chw, out_size

from ._cmli1 import CCall
from ._cmli1 import load as _lib

_NAME_RE = re.compile(r"^mli_krn_(conv2d|depthwise_conv2d)_(chw|hwc)_fx16(?:_(.+))?$")
_FUNCS = [n for n in API_FUNCTIONS if _NAME_RE.match(n)]
#: cases per function: more for those that accept many geometries (and so reach more code paths)
_SEEDS, _SEEDS_GENERAL = 8, 40
_GENERAL = {None, "generic", "str1", "ch1_str1", "k1xn_str1", "knx1_str1", "str1_krnpad"}


def _parts(name: str) -> tuple[str, str, str | None]:
    m = _NAME_RE.match(name)
    return m.group(1), m.group(2), m.group(3)


def _specs(kind: str) -> list[str]:
    return [s for k, lay, s in map(_parts, _FUNCS) if k == kind and lay == "chw" and s]


def _geometry(rng: np.random.Generator, spec: str | None) -> tuple[int, int, int, int, int, Conv2dCfg]:
    """(kw, kh, ch, h, w, cfg) of a valid call of ``spec``: input at least the kernel, padding below it."""
    toks = spec.split("_") if spec else []
    for _ in range(1000):
        kw, kh = (int(v) for v in rng.integers(1, 8, 2))
        # mostly a few channels (the bias brings the accumulator to its limit), sometimes enough
        # channels to climb there from zero (2^39 / 2^30 = 512 products)
        ch = int(rng.integers(1, 5)) if rng.random() < 0.9 else int(rng.integers(520, 700))
        for t in toks:
            m = re.fullmatch(r"k(\d+|n)x(\d+|n)", t)
            if m:
                kw = kw if m.group(1) == "n" else int(m.group(1))
                kh = kh if m.group(2) == "n" else int(m.group(2))
            elif re.fullmatch(r"ch\d+", t):
                ch = int(t[2:])
        str1 = "str1" in toks or rng.random() < 0.4
        sh, sw = (1, 1) if str1 else (int(v) for v in rng.integers(1, 4, 2))
        want = ((kh - 1) // 2, kh // 2, (kw - 1) // 2, kw // 2)
        if "nopad" in toks:
            pads = (0, 0, 0, 0)
        elif "krnpad" in toks and str1 and rng.random() < 0.8:
            pads = want
        elif "krnpad" in toks:
            pads = tuple(int(rng.integers(0, p + 1)) for p in want)
        else:
            pads = tuple(int(rng.integers(0, k)) for k in (kh, kh, kw, kw))
        cfg = Conv2dCfg(ReluCfg(ReluType.NONE), sw, sh, pads[2], pads[3], pads[0], pads[1])
        if spec_constraint(spec, kw, kh, ch, cfg):
            return kw, kh, ch, kh + int(rng.integers(0, 5)), kw + int(rng.integers(0, 7)), cfg
    raise AssertionError(f"no geometry found for {spec}")


def _operands(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Extreme values with random signs, a few zeros and a few values anywhere."""
    v = rng.choice(np.array([-32768, 32767]), size=shape)
    v[rng.random(shape) < 0.1] = 0
    mid = rng.random(shape) < 0.1
    v[mid] = rng.integers(-32768, 32768, int(mid.sum()))
    return v


def _exact(x: np.ndarray, wt: np.ndarray, b: np.ndarray, b_shift: int, out_shift: int, depthwise: bool,
           stride: tuple[int, int], pads: tuple[int, int, int, int]) -> np.ndarray:
    """Outputs [Co, Ho, Wo] of an unlimited accumulator (rounding half up; exact in float64 below 2^53)."""
    pt, pb, pl, pr = pads
    kh, kw = wt.shape[2:]
    xp = np.pad(x.astype(np.int64), ((0, 0), (pt, pb), (pl, pr)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(1, 2))[:, ::stride[0], ::stride[1]]
    acc = (np.einsum("chwij,cij->chw", win, wt[:, 0]) if depthwise
           else np.einsum("chwij,ocij->ohw", win, wt.astype(np.int64)))
    acc = acc + (b.astype(np.int64) << b_shift)[:, None, None]
    return np.clip(np.floor(acc / 2.0 ** out_shift + 0.5), -32768, 32767)


def _case(rng: np.random.Generator, name: str, variant: str) -> dict:
    kind, layout, spec = _parts(name)
    dw = kind == "depthwise_conv2d"
    # a dispatcher runs the geometry of one of its specialisations
    kw, kh, ch, h, w, cfg = _geometry(rng, spec if spec or layout == "hwc" else str(rng.choice(_specs(kind))))
    co = ch if dw else int(rng.integers(1, 4))
    x = _operands(rng, (ch, h, w))
    wt = _operands(rng, (co, 1 if dw else ch, kh, kw))
    # mostly a bias at the 40-bit limit (bias << (30 - b_frac) >= 2^39 for |bias| >= 2^15 and b_frac <= 6)
    b = rng.choice(np.array([-32768, 32767, 0]), size=co) if rng.random() < 0.7 else rng.integers(-32768, 32768, co)
    b_frac, out_frac = int(rng.integers(0, 7)), int(rng.integers(0, 7))  # read-out shift 24..30: the limit is in range
    hwc = layout == "hwc"
    X = Tensor.from_numpy(x.transpose(1, 2, 0) if hwc else x, ElType.FX_16, frac_bits=15)
    W = Tensor.from_numpy(wt.transpose(0, 2, 3, 1) if hwc else wt, ElType.FX_16, frac_bits=15)
    B = Tensor.from_numpy(b, ElType.FX_16, frac_bits=b_frac)
    pads = (cfg.padding_top, cfg.padding_bottom, cfg.padding_left, cfg.padding_right)
    stride = (cfg.stride_height, cfg.stride_width)
    ho, wo = out_size(h, kh, pads[0], pads[1], stride[0]), out_size(w, kw, pads[2], pads[3], stride[1])
    out = Tensor.empty(co * ho * wo, ElType.FX_16, frac_bits=out_frac)
    args = [X, W, B, cfg, out]
    c = CCall(_lib(variant))
    assert c.call(name, args) == 0
    with pymli.use_platform(PRESETS_V1[variant]):
        getattr(capi, name)(*args)
        # the plain order: channel, row, column, one MAC per product
        plain = (depthwise_conv2d_chw if dw else conv2d_chw)(
            x, wt, b, in_frac=15, w_frac=15, b_frac=b_frac, out_frac=out_frac, stride=stride, pads=pads, relu=0,
            bits=16, acc40=True, mac_path="single")
    exact = _exact(x, wt, b, 30 - b_frac, 30 - out_frac, dw, stride, pads)
    if hwc:
        plain, exact = plain.transpose(1, 2, 0), exact.transpose(1, 2, 0)
    return {"c": c.buffer(out).copy(), "ours": out.data.copy(), "plain": plain.reshape(-1),
            "exact": exact.reshape(-1), "path": conv_mac_path(kind, layout, spec, kw, kh, ch, cfg),
            "geometry": (kw, kh, ch, h, w, cfg)}


@functools.lru_cache(maxsize=None)
def _fuzz(name: str, variant: str) -> list[dict]:
    """The seeded cases of one function on one build (computed once per process)."""
    rng = np.random.default_rng(zlib.crc32(f"{name} {variant}".encode()))
    return [_case(rng, name, variant) for _ in range(_SEEDS_GENERAL if _parts(name)[2] in _GENERAL else _SEEDS)]


@pytest.mark.parametrize("variant", ["conv", "up"])
@pytest.mark.parametrize("name", _FUNCS)
def test_fx16_conv_at_the_limit_equals_c(name: str, variant: str) -> None:
    cases = _fuzz(name, variant)
    for i, r in enumerate(cases):
        assert np.array_equal(r["ours"], r["c"]), (
            f"{name} ({variant}) case {i} path {r['path']} geometry {r['geometry']}\n"
            f"pymli {r['ours'].tolist()}\nC     {r['c'].tolist()}")
    assert any(not np.array_equal(r["exact"], r["c"]) for r in cases), "no case reached the 40-bit limit"


def test_fx16_conv_orders_were_told_apart() -> None:
    """On the paths whose order is not the plain one, the fuzz cases do give other outputs than it."""
    seen = {p: [0, 0] for p in MAC_PATHS}
    for name in _FUNCS:
        for r in _fuzz(name, "conv"):
            seen[r["path"]][0] += 1
            seen[r["path"]][1] += int(not np.array_equal(r["plain"], r["c"]))
    for path in ("any", "str1", "str1_fixed", "hwc"):
        runs, differ = seen[path]
        assert runs and differ, f"path {path}: {differ} of {runs} cases differ from the plain order"
    assert seen["single"][0] and not seen["single"][1]


# ----------------------------------------------------------------------------- column schemes
@pytest.mark.parametrize("path", MAC_PATHS)
def test_column_schemes_cover_each_valid_column_once(path: str) -> None:
    """Every scheme adds each valid kernel column (inside the input) exactly once, padding never."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        kw = int(rng.integers(1, 9))
        sw = 1 if path.startswith("str1") else int(rng.integers(1, 4))
        pl, pr = int(rng.integers(0, kw)), int(rng.integers(0, kw))
        in_w = kw + int(rng.integers(0, 9))
        wo = out_size(in_w, kw, pl, pr, sw)
        schemes = conv_column_schemes(path, kw, wo, sw, pl, pr, in_w)
        assert len(schemes) == wo
        for xo, sc in enumerate(schemes):
            cols = sorted(c for phase in sc for g in phase for c in g)
            valid = [j for j in range(kw) if 0 <= xo * sw - pl + j < in_w]
            if cols != list(range(kw)):  # a scheme over all columns adds padding products (zero) too
                assert cols == valid, (path, kw, sw, pl, pr, in_w, xo, sc)
            assert all(1 <= len(g) <= 2 for phase in sc for g in phase)


def test_column_schemes_examples() -> None:
    one = ((0,), (1,), (2,))
    # conv2d_chw: single MACs on the borders, dual MACs inside
    assert conv_column_schemes("any", 3, 3, 2, 1, 1, 5) == [(one,), (((0, 1), (2,)),), (one,)]
    # conv2d_chw_str1 without fixed padding: convolution_odd_even on the borders
    assert conv_column_schemes("str1", 3, 4, 1, 1, 1, 4) == [
        (((1, 2),),), (one,), (one,), (((0, 1),),)]
    assert conv_column_schemes("str1", 4, 4, 1, 3, 0, 4)[:3] == [
        (((3,),),), (((2, 3),),), (((1,),), ((2, 3),))]
    # fixed padding up to 2: convolution on the borders, single MACs everywhere
    assert conv_column_schemes("str1_fixed", 5, 5, 1, 2, 2, 5) == [(tuple((j,) for j in range(5)),)] * 5
    with pytest.raises(ValueError):
        conv_column_schemes("zigzag", 3, 3, 1, 0, 0, 3)
    with pytest.raises(ValueError):  # also where nothing saturates
        conv2d_chw(np.ones((1, 3, 3)), np.ones((1, 1, 3, 3)), np.zeros(1), in_frac=0, w_frac=0, b_frac=0,
                   out_frac=0, stride=(1, 1), pads=(0, 0, 0, 0), relu=0, bits=16, acc40=True, mac_path="zigzag")

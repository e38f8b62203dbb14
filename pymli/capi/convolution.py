"""``mli_krn_conv2d_hwcn_*``, ``mli_krn_depthwise_conv2d_hwcn_*``, ``mli_krn_group_conv2d_hwcn_*``,
``mli_krn_transpose_conv2d_hwcn_*`` (``mli_kernels_api.h``), with the checks of ``mli_check.cc``.

Each function checks its arguments as the checked C build does, computes with
:mod:`pymli.kernels.convolution` and writes the output through its mem_stride. conv2d, depthwise
and group conv2d set ``out.el_type`` to the input type, as C does; nothing else of the output
struct changes. Specialisations (``_k1x1``, ``_k3x3``, ``_k5x5``, ``_k2x2_str2``, ``_k4x4_str2``)
are the generic function plus the check of their constraint; ``_k1x1`` ignores the padding of
the cfg, as the C kernel does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ..arith.requant import asr_rnd_int, relu_bounds
from ..arith.rounding import asr_rnd, wrap
from ..checks import (
    CheckCache,
    check_quant_params,
    check_tensor,
    fail,
    inner_most_dimension_is_one,
    shape_at,
    tensors_not_overlapped,
)
from ..config import get_platform
from ..errors import MliError, Status
from ..formats import ElType, RoundMode
from ..kernels import convolution as K
from ..tensor import Tensor
from ._registry import mli_function
from .types import Conv2dCfg

__all__ = [
    "check_bias_scale_asym",
    "check_conv_types",
    "check_sa8_params",
    "fx_quant",
    "out_bounds",
    "sa8_quant",
]

# Weights dimensions of HWCN (and HW1N) layouts.
_KH, _KW, _KD, _KC = 0, 1, 2, 3


# ------------------------------------------------------------------------------ shared checks
def check_quant(t: Tensor, zp_used_bits: int) -> None:
    """``mli_chk_tensor_quant_params``, vectorised over the channels of a per-axis tensor (same
    statuses and order as :func:`pymli.checks.check_quant_params`)."""
    if not t.el_type.is_sa or t.dim < 0 or t.dim >= t.rank:
        check_quant_params(t, zp_used_bits)
        return
    n = shape_at(t, t.dim)
    arrs = []
    for name, itemsize in (("scale", 2), ("zero_point", 2), ("scale_frac_bits", 1)):
        a = getattr(t, name)
        if not isinstance(a, np.ndarray) or a.nbytes < n * itemsize:
            fail(Status.BAD_TENSOR, f"per-axis {name} holds fewer than shape[{t.dim}] = {n} values")
        arrs.append(a.reshape(-1)[:n])
    bad = _quant_problem(np.ascontiguousarray(arrs[0]).tobytes(), np.ascontiguousarray(arrs[1]).tobytes(),
                         arrs[0].dtype.str, arrs[1].dtype.str, zp_used_bits)
    if bad is not None:
        fail(bad[0], bad[1])


@functools.lru_cache(maxsize=512)
def _quant_problem(s_b: bytes, z_b: bytes, s_dt: str, z_dt: str, zp_used_bits: int) -> tuple[Status, str] | None:
    scales, zps = np.frombuffer(s_b, s_dt), np.frombuffer(z_b, z_dt)
    zp_min = 0 if zp_used_bits == 0 else -(1 << zp_used_bits)
    zp_max = 0 if zp_used_bits == 0 else (1 << zp_used_bits) - 1
    bad_s = scales <= 0
    bad_z = (zps < zp_min) | (zps > zp_max)
    if bad_s.any() or bad_z.any():
        # C stops at the first channel with a problem; a bad scale there wins over its zero point.
        i = int(np.flatnonzero(bad_s | bad_z)[0])
        if bad_s[i]:
            return Status.BAD_TENSOR, f"non-positive scale {int(scales[i])} at channel {i}"
        return Status.INCOMPATEBLE_TENSORS, f"zero point {int(zps[i])} outside [{zp_min}, {zp_max}] at channel {i}"
    return None


def check_conv_types(inp: Tensor, w: Tensor, b: Tensor, out: Tensor, kind: str) -> None:
    """Type checks of an fx kind (fx16 / fx16_fx8_fx8 / fx8): types, bias and output frac bits."""
    want = {"fx16": (ElType.FX_16, ElType.FX_16, ElType.FX_16),
            "fx16_fx8_fx8": (ElType.FX_16, ElType.FX_8, ElType.FX_8),
            "fx8": (ElType.FX_8, ElType.FX_8, ElType.FX_8)}[kind]
    if (inp.el_type, w.el_type, b.el_type) != want:
        fail(Status.TYPE_MISMATCH, f"{kind}: in/weights/bias types {inp.el_type.name}/{w.el_type.name}/"
             f"{b.el_type.name}")
    if b.frac_bits > inp.frac_bits + w.frac_bits:
        fail(Status.INCOMPATEBLE_TENSORS, f"bias frac_bits {b.frac_bits} > in + weights frac_bits")
    if out.frac_bits > inp.frac_bits + w.frac_bits:
        fail(Status.INCOMPATEBLE_TENSORS, f"out frac_bits {out.frac_bits} > in + weights frac_bits")


def _wrap32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def check_bias_scale_asym(inp: Tensor, w: Tensor, b: Tensor) -> None:
    """``mli_chk_bias_scale_asym``: bias scale equals in scale x weights scale (+-1 after shifting)."""
    n = shape_at(w, w.dim) if w.dim >= 0 else 1
    if w.dim < 0 and b.dim < 0 and not isinstance(w.scale, np.ndarray) and not isinstance(b.scale, np.ndarray):
        # One channel: plain integer arithmetic (the C check's int32 expressions).
        s_in = int(np.asarray(inp.scale).reshape(-1)[0])
        f_in = int(np.asarray(inp.scale_frac_bits).reshape(-1)[0])
        expected = _wrap32(s_in * int(w.scale))
        sh = f_in + int(w.scale_frac_bits) - int(b.scale_frac_bits)
        expected = asr_rnd_int(expected, sh, 32) if sh > 0 else _wrap32(expected << min(-sh, 63))
        if not -1 <= expected - int(b.scale) <= 1:
            fail(Status.INCOMPATEBLE_TENSORS, f"bias scale {int(b.scale)} != in scale x weights scale ({expected})")
        return

    def vec(t: Tensor, name: str) -> bytes:
        v = getattr(t, name)
        if t.dim < 0 or not isinstance(v, np.ndarray):
            return np.full(n, int(v) if not isinstance(v, np.ndarray) else int(v.reshape(-1)[0]), np.int64).tobytes()
        v = v.reshape(-1)
        if v.size < n:
            fail(Status.BAD_TENSOR, f"{name} of a per-axis tensor holds fewer than {n} values")
        return np.ascontiguousarray(v[:n], dtype=np.int64).tobytes()

    def first(t: Tensor, name: str) -> int:
        v = getattr(t, name)
        return int(v) if not isinstance(v, np.ndarray) else int(v.reshape(-1)[0])

    bad = _bias_scale_mismatch(first(inp, "scale"), first(inp, "scale_frac_bits"), vec(w, "scale"),
                               vec(w, "scale_frac_bits"), vec(b, "scale"), vec(b, "scale_frac_bits"),
                               get_platform().round_mode)
    if bad is not None:
        fail(Status.INCOMPATEBLE_TENSORS, f"bias scale {bad[1]} != in scale x weights scale ({bad[2]}) "
             f"for channel {bad[0]}")


@functools.lru_cache(maxsize=256)
def _bias_scale_mismatch(s_in: int, f_in: int, ws: bytes, wf: bytes, bs: bytes, bf: bytes,
                         mode: RoundMode) -> tuple[int, int, int] | None:
    w_s, w_f = np.frombuffer(ws, np.int64), np.frombuffer(wf, np.int64)
    b_s, b_f = np.frombuffer(bs, np.int64), np.frombuffer(bf, np.int64)
    expected = wrap(s_in * w_s, 32)
    sh = f_in + w_f - b_f
    right = asr_rnd(expected, np.maximum(sh, 1), 32, mode)
    left = wrap(expected << np.clip(-sh, 0, 63), 32)
    expected = np.where(sh > 0, right, left)
    diff = expected - b_s
    bad = np.flatnonzero((diff < -1) | (diff > 1))
    if bad.size:
        i = int(bad[0])
        return i, int(b_s[i]), int(expected[i])
    return None


def check_sa8_params(inp: Tensor, w: Tensor, b: Tensor, out: Tensor, w_dim: int) -> None:
    """sa8 x sa8 + sa32 requirements shared by the conv and FC checks (after the generic check).

    They depend only on types, ranks, dims and quantisation parameters: the outcome is cached
    under a key made of exactly those fields.
    """
    key = (_qkey(inp), _qkey(w), _qkey(b), _qkey(out), w_dim, get_platform().round_mode)
    _SA8_CHECKED.run(key, lambda: _check_sa8_params(inp, w, b, out, w_dim))


_SA8_CHECKED = CheckCache()


def _qkey(t: Tensor) -> tuple:
    def part(v: object) -> object:
        return (v.dtype.str, v.shape, v.tobytes()) if isinstance(v, np.ndarray) else int(v)  # type: ignore[call-overload]

    sd = shape_at(t, t.dim) if 0 <= t.dim else -1
    return (t.el_type, t.rank, t.dim, sd, part(t.scale), part(t.zero_point), part(t.scale_frac_bits))


def _check_sa8_params(inp: Tensor, w: Tensor, b: Tensor, out: Tensor, w_dim: int) -> None:
    if inp.el_type != ElType.SA_8 or w.el_type != ElType.SA_8 or b.el_type != ElType.SA_32:
        fail(Status.TYPE_MISMATCH, f"sa8: in/weights/bias types {inp.el_type.name}/{w.el_type.name}/{b.el_type.name}")
    check_quant(inp, 7)
    check_quant(out, 7)
    check_quant(w, 0)
    check_quant(b, 0)
    if w.dim < 0:
        if b.dim >= 0:
            fail(Status.INCOMPATEBLE_TENSORS, "bias: per-tensor quantisation expected, like the weights")
    elif w.dim != w_dim or b.dim != 0:
        fail(Status.INCOMPATEBLE_TENSORS, f"weights per-axis dim {w.dim} (expected {w_dim}) / bias dim {b.dim} (expected 0)")
    if inp.dim >= 0 or out.dim >= 0:
        fail(Status.INCOMPATEBLE_TENSORS, "input and output must be quantised per tensor")
    check_bias_scale_asym(inp, w, b)


def _check_basic(inp: Tensor, w: Tensor, b: Tensor, out: Tensor) -> None:
    for t in (inp, w, b, out):
        check_tensor(t)
    if out.el_type != inp.el_type:
        fail(Status.TYPE_MISMATCH, f"output type {out.el_type.name} != input type {inp.el_type.name}")


def _check_ranks(inp: Tensor, w: Tensor, b: Tensor, out: Tensor) -> bool:
    return inp.rank == 3 and out.rank == 3 and w.rank == 4 and b.rank == 1


def _check_inner(*ts: Tensor) -> None:
    if not all(inner_most_dimension_is_one(t) for t in ts):
        fail(Status.INCOMPATEBLE_TENSORS, "the innermost mem_stride of in, weights, bias and out must be 1")


def _check_kernel_size(w: Tensor, ksize: int) -> None:
    if ksize and (shape_at(w, _KH) != ksize or shape_at(w, _KW) != ksize):
        fail(Status.SHAPE_MISMATCH, f"specialisation for {ksize}x{ksize} kernels, weights are "
             f"{shape_at(w, _KH)}x{shape_at(w, _KW)}")


def _check_geometry(inp: Tensor, w: Tensor, cfg: Conv2dCfg | None, out: Tensor, overlap: bool = True) -> None:
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "NULL cfg")
    ekw = (shape_at(w, _KW) - 1) * cfg.dilation_width + 1
    ekh = (shape_at(w, _KH) - 1) * cfg.dilation_height + 1
    eiw = shape_at(inp, 1) + cfg.padding_left + cfg.padding_right
    eih = shape_at(inp, 0) + cfg.padding_top + cfg.padding_bottom
    rw = shape_at(out, 1) * cfg.stride_width + ekw - cfg.stride_width
    rh = shape_at(out, 0) * cfg.stride_height + ekh - cfg.stride_height
    ok = (cfg.dilation_height > 0 and cfg.dilation_width > 0
          and cfg.padding_left < ekw and cfg.padding_right < ekw
          and cfg.padding_top < ekh and cfg.padding_bottom < ekh
          and cfg.stride_height > 0 and cfg.stride_width > 0
          and rh <= eih and rw <= eiw)
    if not ok:
        fail(Status.BAD_FUNC_CFG, f"cfg {cfg} does not fit in {inp.shape} / weights {w.shape} / out {out.shape}")
    if overlap and not tensors_not_overlapped(inp, out):
        fail(Status.INCOMPATEBLE_TENSORS, "input and output buffers overlap")


def check_conv2d(inp: Tensor, w: Tensor, b: Tensor, cfg: Conv2dCfg | None, out: Tensor, ksize: int = 0,
                 overlap: bool = True) -> None:
    """``mli_chk_conv2d_hwcn`` (generic part)."""
    _check_kernel_size(w, ksize)
    _check_basic(inp, w, b, out)
    if not (_check_ranks(inp, w, b, out) and shape_at(inp, 2) == shape_at(w, _KD)
            and shape_at(out, 2) == shape_at(w, _KC) and shape_at(b, 0) == shape_at(w, _KC)):
        fail(Status.SHAPE_MISMATCH, f"conv2d shapes in {inp.shape}, weights {w.shape}, bias {b.shape}, out {out.shape}")
    _check_inner(inp, w, b, out)
    _check_geometry(inp, w, cfg, out, overlap)


def check_depthwise(inp: Tensor, w: Tensor, b: Tensor, cfg: Conv2dCfg | None, out: Tensor, ksize: int = 0,
                    overlap: bool = True) -> None:
    """``mli_chk_depthwise_conv2d_hwcn`` (generic part)."""
    _check_kernel_size(w, ksize)
    _check_basic(inp, w, b, out)
    if not (_check_ranks(inp, w, b, out) and shape_at(w, _KD) == 1 and shape_at(b, 0) == shape_at(w, _KC)
            and shape_at(w, _KC) == shape_at(inp, 2) and shape_at(w, _KC) == shape_at(out, 2)):
        fail(Status.SHAPE_MISMATCH, f"depthwise shapes in {inp.shape}, weights {w.shape}, bias {b.shape}, out {out.shape}")
    _check_inner(inp, w, b, out)
    _check_geometry(inp, w, cfg, out, overlap)


def check_group(inp: Tensor, w: Tensor, b: Tensor, cfg: Conv2dCfg | None, out: Tensor, ksize: int = 0,
                overlap: bool = True) -> None:
    """``mli_chk_group_conv2d_hwcn`` (generic part)."""
    _check_kernel_size(w, ksize)
    _check_basic(inp, w, b, out)
    ok = _check_ranks(inp, w, b, out) and shape_at(b, 0) == shape_at(w, _KC)
    wd = shape_at(w, _KD)
    if wd == 0:
        fail(Status.SHAPE_MISMATCH, "weights with 0 input channels")
    groups = shape_at(inp, 2) // wd
    ok = ok and shape_at(inp, 2) % wd == 0 and groups != 0 and shape_at(w, _KC) % groups == 0
    ok = ok and shape_at(out, 2) == shape_at(w, _KC)
    if not ok:
        fail(Status.SHAPE_MISMATCH, f"group conv shapes in {inp.shape}, weights {w.shape}, bias {b.shape}, out {out.shape}")
    _check_inner(inp, w, b, out)
    _check_geometry(inp, w, cfg, out, overlap)


def check_transpose(inp: Tensor, w: Tensor, b: Tensor, cfg: Conv2dCfg | None, out: Tensor) -> None:
    """``mli_chk_transpose_conv2d_hwcn`` (generic part)."""
    _check_basic(inp, w, b, out)
    if not (_check_ranks(inp, w, b, out) and shape_at(inp, 2) == shape_at(w, _KD)
            and shape_at(out, 2) == shape_at(w, _KC) and shape_at(b, 0) == shape_at(w, _KC)):
        fail(Status.SHAPE_MISMATCH, f"transpose conv shapes in {inp.shape}, weights {w.shape}, out {out.shape}")
    _check_inner(inp, w, b, out)
    kw, kh = shape_at(w, _KW), shape_at(w, _KH)
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "NULL cfg")
    ok = (cfg.dilation_width == 1 and cfg.dilation_height == 1
          and cfg.padding_left < kw and cfg.padding_right < kw and cfg.padding_top < kh and cfg.padding_bottom < kh
          and cfg.stride_height > 0 and cfg.stride_width > 0
          and cfg.stride_width <= kw and cfg.stride_height <= kh)
    if not ok:
        fail(Status.BAD_FUNC_CFG, f"transpose conv cfg {cfg} for a {kh}x{kw} kernel")
    ew = K.transpose_out_size(shape_at(inp, 1), kw, cfg.stride_width, cfg.padding_left, cfg.padding_right)
    eh = K.transpose_out_size(shape_at(inp, 0), kh, cfg.stride_height, cfg.padding_top, cfg.padding_bottom)
    # C compares against unsigned values: a negative expectation never matches.
    if shape_at(out, 1) != ew or shape_at(out, 0) != eh or shape_at(out, 2) != shape_at(w, _KC):
        fail(Status.BAD_FUNC_CFG, f"output {out.shape[:3]} != expected {[eh, ew, shape_at(w, _KC)]}")
    if not tensors_not_overlapped(inp, out):
        fail(Status.INCOMPATEBLE_TENSORS, "input and output buffers overlap")


def check_transpose_str2(w: Tensor, cfg: Conv2dCfg, ksize: int) -> None:
    """``mli_chk_transpose_conv2d_hwcn_k{2x2,4x4}_str2``."""
    if cfg.stride_width != 2 or cfg.stride_height != 2:
        fail(Status.BAD_FUNC_CFG, f"k{ksize}x{ksize}_str2 needs stride 2, got {cfg.stride_height}x{cfg.stride_width}")
    if shape_at(w, _KW) != ksize or shape_at(w, _KH) != ksize:
        fail(Status.INCOMPATEBLE_TENSORS, f"k{ksize}x{ksize}_str2 needs a {ksize}x{ksize} kernel")


# ------------------------------------------------------------------------------ parameters
def fx_quant(inp: Tensor, w: Tensor, b: Tensor, out: Tensor, acc_bits: int, out_bits: int = 16) -> K.FxQuant:
    """:class:`~pymli.kernels.convolution.FxQuant` of FX tensors."""
    return K.FxQuant(inp.frac_bits, w.frac_bits, b.frac_bits, out.frac_bits, acc_bits, out_bits)


def sa8_quant(inp: Tensor, w: Tensor, out: Tensor, n: int, in_zp: int | None = None) -> K.Sa8Quant:
    """:class:`~pymli.kernels.convolution.Sa8Quant` of sa8 tensors for ``n`` output channels."""
    def first(t: Tensor, name: str) -> int:
        v = getattr(t, name)
        return int(v) if not isinstance(v, np.ndarray) else int(v.reshape(-1)[0])

    if w.dim >= 0:
        ws = np.asarray(w.scale, dtype=np.int64).reshape(-1)[:n]
        wf = np.asarray(w.scale_frac_bits, dtype=np.int64).reshape(-1)[:n]
    else:
        ws = np.asarray([int(w.scale)], dtype=np.int64)
        wf = np.asarray([int(w.scale_frac_bits)], dtype=np.int64)
    return K.Sa8Quant(first(inp, "zero_point") if in_zp is None else in_zp, first(inp, "scale"),
                      first(inp, "scale_frac_bits"), first(w, "zero_point"), ws, wf,
                      first(out, "zero_point"), first(out, "scale"), first(out, "scale_frac_bits"))


def out_bounds(cfg_relu: object, out: Tensor, sa: bool) -> tuple[int, int]:
    """Fused ReLU clamp for ``out`` (``mli_prv_get_relu_limits``)."""
    rt = int(getattr(cfg_relu, "type", 0))
    bits = out.el_type.bits if out.el_type.supported else 16
    if sa:
        return relu_bounds(rt, 8, zero_point=int(np.asarray(out.zero_point).reshape(-1)[0]),
                           scale=int(np.asarray(out.scale).reshape(-1)[0]),
                           frac_bits=int(np.asarray(out.scale_frac_bits).reshape(-1)[0]))
    return relu_bounds(rt, bits, frac_bits=out.frac_bits)


# ------------------------------------------------------------------------------ runner
_ACC = {"fx16": 40, "fx16_fx8_fx8": 32}


def _quant(kind: str, inp: Tensor, w: Tensor, b: Tensor, out: Tensor, n: int) -> K.FxQuant | K.Sa8Quant:
    if kind == "sa8":
        return sa8_quant(inp, w, out, n)
    return fx_quant(inp, w, b, out, _ACC[kind])


def fast_view(t: Tensor) -> np.ndarray:
    """``t.view()`` built with the ``ndarray`` constructor (cheaper than as_strided); same checks."""
    d = t.data
    r = t.rank
    if d is None or r == 0 or not d.flags.c_contiguous or len(t.shape) < r or len(t.mem_stride) < r:
        return t.view()
    shape = tuple(t.shape[:r])
    ms = t.mem_stride[:r]
    span = 1
    for a, m in zip(shape, ms):
        if a <= 0 or m <= 0:
            return t.view()
        span += (a - 1) * m
    if span > d.shape[0]:
        return t.view()
    it = d.itemsize
    return np.ndarray(shape, dtype=d.dtype, buffer=d, strides=tuple(m * it for m in ms))


def _store(out: Tensor, values: np.ndarray) -> None:
    fast_view(out)[...] = values


_STRUCT_CHECKED = CheckCache()


def _tkey(t: Tensor | None) -> tuple | None:
    if t is None:
        return None
    return (t.el_type, t.rank, tuple(t.shape), tuple(t.mem_stride), t.capacity, t.data is None)


def _checked_structure(chk: Callable[..., None], op: str, ksize: int, inp: Tensor, w: Tensor, b: Tensor,
                       cfg: Conv2dCfg | None, out: Tensor) -> None:
    """Run ``chk`` (shapes, strides, capacities, cfg: a pure function of the struct fields, cached
    under them), then the buffer-overlap check, which depends on the data addresses."""
    ck = None if cfg is None else (int(cfg.relu.type), cfg.stride_width, cfg.stride_height, cfg.padding_left,
                                   cfg.padding_right, cfg.padding_top, cfg.padding_bottom, cfg.dilation_width,
                                   cfg.dilation_height)
    key = (op, ksize, _tkey(inp), _tkey(w), _tkey(b), _tkey(out), ck)
    _STRUCT_CHECKED.run(key, lambda: chk(inp, w, b, cfg, out, ksize, overlap=False))
    if not tensors_not_overlapped(inp, out):
        fail(Status.INCOMPATEBLE_TENSORS, "input and output buffers overlap")


def _run(op: str, kind: str, ksize: int, inp: Tensor, w: Tensor, b: Tensor, cfg: Conv2dCfg, out: Tensor) -> Status:
    sa = kind == "sa8"
    if op == "conv":
        chk: Callable[..., None] = check_conv2d
    elif op == "depthwise":
        chk = check_depthwise
    else:
        chk = check_group
    if sa:
        _checked_structure(chk, op, ksize, inp, w, b, cfg, out)
        check_sa8_params(inp, w, b, out, _KC)
    else:
        check_conv_types(inp, w, b, out, kind)
        _checked_structure(chk, op, ksize, inp, w, b, cfg, out)
    x, wt, bias = fast_view(inp), fast_view(w), fast_view(b)
    n = shape_at(w, _KC)
    q = _quant(kind, inp, w, b, out, n)
    out.el_type = inp.el_type
    bounds = out_bounds(cfg.relu, out, sa)
    no_pad = ksize == 1
    pad = (0, 0) if no_pad else (cfg.padding_top, cfg.padding_left)
    geo = {"stride": (cfg.stride_height, cfg.stride_width), "dilation": (cfg.dilation_height, cfg.dilation_width),
               "pad": pad, "out_hw": (shape_at(out, 0), shape_at(out, 1)), "bounds": bounds}
    if op == "depthwise":
        res = K.depthwise_conv2d_hwcn(x, wt, bias, q, **geo)
    elif op == "group":
        res = K.group_conv2d_hwcn(x, wt, bias, q, **geo)
    else:
        res = K.conv2d_hwcn(x, wt, bias, q, **geo)
    _store(out, res)
    return Status.OK


def _run_transpose(kind: str, ksize: int, inp: Tensor, w: Tensor, b: Tensor, cfg: Conv2dCfg, out: Tensor) -> Status:
    sa = kind == "sa8"
    if sa:
        check_transpose(inp, w, b, cfg, out)
        check_sa8_params(inp, w, b, out, _KC)
    else:
        check_conv_types(inp, w, b, out, kind)
        check_transpose(inp, w, b, cfg, out)
    if ksize:
        check_transpose_str2(w, cfg, ksize)
    n = shape_at(w, _KC)
    q = _quant(kind, inp, w, b, out, n)
    bounds = out_bounds(cfg.relu, out, sa)
    res = K.transpose_conv2d_hwcn(fast_view(inp), fast_view(w), fast_view(b), q, stride=(cfg.stride_height, cfg.stride_width),
                                  pad=(cfg.padding_top, cfg.padding_left), out_hw=(shape_at(out, 0), shape_at(out, 1)),
                                  bounds=bounds)
    _store(out, res)
    return Status.OK


# ------------------------------------------------------------------------------ registration
def _make(op: str, kind: str, ksize: int, name: str) -> Callable[..., Status]:
    def fn(in_: Tensor, weights: Tensor, bias: Tensor, cfg: Conv2dCfg, out: Tensor) -> Status:
        return _run(op, kind, ksize, in_, weights, bias, cfg, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{name}``: see :mod:`pymli.capi.convolution`."
    return mli_function(name)(fn)


def _make_transpose(kind: str, ksize: int, name: str) -> Callable[..., Status]:
    def fn(in_: Tensor, weights: Tensor, bias: Tensor, cfg: Conv2dCfg, out: Tensor) -> Status:
        return _run_transpose(kind, ksize, in_, weights, bias, cfg, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{name}``: see :mod:`pymli.capi.convolution`."
    return mli_function(name)(fn)


_KINDS = {"fx16": "fx16", "fx16_fx8_fx8": "fx16_fx8_fx8", "sa8_sa8_sa32": "sa8"}

for _suffix, _kind in _KINDS.items():
    for _ks, _tail in ((0, ""), (1, "_k1x1"), (3, "_k3x3"), (5, "_k5x5")):
        _n = f"mli_krn_conv2d_hwcn_{_suffix}{_tail}"
        globals()[_n] = _make("conv", _kind, _ks, _n)
        __all__.append(_n)
    for _ks, _tail in ((0, ""), (3, "_k3x3"), (5, "_k5x5")):
        for _op, _pre in (("depthwise", "mli_krn_depthwise_conv2d_hwcn_"), ("group", "mli_krn_group_conv2d_hwcn_")):
            _n = f"{_pre}{_suffix}{_tail}"
            globals()[_n] = _make(_op, _kind, _ks, _n)
            __all__.append(_n)
    for _ks, _tail in ((0, ""), (2, "_k2x2_str2"), (4, "_k4x4_str2")):
        _n = f"mli_krn_transpose_conv2d_hwcn_{_suffix}{_tail}"
        globals()[_n] = _make_transpose(_kind, _ks, _n)
        __all__.append(_n)

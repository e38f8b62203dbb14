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

import math
from collections.abc import Callable

import numpy as np

from ..arith.requant import relu_bounds
from ..checks.conv import check_bias_scale_asym  # noqa: F401  (old import path, kept for users)
from ..checks.conv import (check_conv2d, check_depthwise, check_group, check_mac, check_structure_cached,
                           check_transpose, check_transpose_str2)
from ..checks.tensor import shape_at
from ..config import get_platform
from ..errors import Status
from ..kernels import convolution as K
from ..kernels.conv_prepared import prepare_conv
from ..tensor import Tensor
from ._plan import _RESHAPE, _WHOLE, ViewSpec, view, view_spec
from ._registry import c_variant
from .types import Conv2dCfg

__all__ = [
    "CONV2D",
    "DEPTHWISE_CONV2D",
    "GROUP_CONV2D",
    "TRANSPOSE_CONV2D",
    "mli_krn_conv2d_hwcn_fx16",
    "mli_krn_conv2d_hwcn_fx16_k1x1",
    "mli_krn_conv2d_hwcn_fx16_k3x3",
    "mli_krn_conv2d_hwcn_fx16_k5x5",
    "mli_krn_depthwise_conv2d_hwcn_fx16",
    "mli_krn_group_conv2d_hwcn_fx16",
    "mli_krn_depthwise_conv2d_hwcn_fx16_k3x3",
    "mli_krn_group_conv2d_hwcn_fx16_k3x3",
    "mli_krn_depthwise_conv2d_hwcn_fx16_k5x5",
    "mli_krn_group_conv2d_hwcn_fx16_k5x5",
    "mli_krn_transpose_conv2d_hwcn_fx16",
    "mli_krn_transpose_conv2d_hwcn_fx16_k2x2_str2",
    "mli_krn_transpose_conv2d_hwcn_fx16_k4x4_str2",
    "mli_krn_conv2d_hwcn_fx16_fx8_fx8",
    "mli_krn_conv2d_hwcn_fx16_fx8_fx8_k1x1",
    "mli_krn_conv2d_hwcn_fx16_fx8_fx8_k3x3",
    "mli_krn_conv2d_hwcn_fx16_fx8_fx8_k5x5",
    "mli_krn_depthwise_conv2d_hwcn_fx16_fx8_fx8",
    "mli_krn_group_conv2d_hwcn_fx16_fx8_fx8",
    "mli_krn_depthwise_conv2d_hwcn_fx16_fx8_fx8_k3x3",
    "mli_krn_group_conv2d_hwcn_fx16_fx8_fx8_k3x3",
    "mli_krn_depthwise_conv2d_hwcn_fx16_fx8_fx8_k5x5",
    "mli_krn_group_conv2d_hwcn_fx16_fx8_fx8_k5x5",
    "mli_krn_transpose_conv2d_hwcn_fx16_fx8_fx8",
    "mli_krn_transpose_conv2d_hwcn_fx16_fx8_fx8_k2x2_str2",
    "mli_krn_transpose_conv2d_hwcn_fx16_fx8_fx8_k4x4_str2",
    "mli_krn_conv2d_hwcn_sa8_sa8_sa32",
    "mli_krn_conv2d_hwcn_sa8_sa8_sa32_k1x1",
    "mli_krn_conv2d_hwcn_sa8_sa8_sa32_k3x3",
    "mli_krn_conv2d_hwcn_sa8_sa8_sa32_k5x5",
    "mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32",
    "mli_krn_group_conv2d_hwcn_sa8_sa8_sa32",
    "mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32_k3x3",
    "mli_krn_group_conv2d_hwcn_sa8_sa8_sa32_k3x3",
    "mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32_k5x5",
    "mli_krn_group_conv2d_hwcn_sa8_sa8_sa32_k5x5",
    "mli_krn_transpose_conv2d_hwcn_sa8_sa8_sa32",
    "mli_krn_transpose_conv2d_hwcn_sa8_sa8_sa32_k2x2_str2",
    "mli_krn_transpose_conv2d_hwcn_sa8_sa8_sa32_k4x4_str2",
]

# Weights dimensions of HWCN (and HW1N) layouts.
_KH, _KW, _KD, _KC = 0, 1, 2, 3


# ------------------------------------------------------------------------------ shared checks


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
_WHOLE_VIEWS = (_WHOLE, _RESHAPE)
_ACC = {"fx16": 40, "fx16_fx8_fx8": 32}
_OK = Status.OK  # a module constant: an enum member lookup costs more than the tiny path's arithmetic
_PREPARE_MAX = 1 << 18
"""Largest conv2d / depthwise weights (elements) whose layer a plan prepares once (:func:`pymli.kernels.conv_prepared.prepare_conv`)
for its repeated calls; larger layers are dominated by the product itself and keep no copy."""


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


def whole_view(spec: ViewSpec) -> bool:
    """Whether a view (its :func:`~pymli.capi._plan.view_spec`) is all of its tensor's contiguous data array
    in C order: the data array itself then stands for the flat view.

    Args:
        spec: the view spec.

    Returns:
        True when the view is the data array, or the data array reshaped.
    """
    return spec[2] in _WHOLE_VIEWS


def _run(op: str, kind: str, ksize: int, inp: Tensor, w: Tensor, b: Tensor, cfg: Conv2dCfg,
         out: Tensor) -> Callable[..., Status]:
    sa = kind == "sa8"
    if op == "conv":
        chk: Callable[..., None] = check_conv2d
        kernel: Callable[..., np.ndarray] = K.conv2d_hwcn
    elif op == "depthwise":
        chk, kernel = check_depthwise, K.depthwise_conv2d_hwcn
    else:
        chk, kernel = check_group, K.group_conv2d_hwcn
    check_mac(kind, lambda: check_structure_cached(chk, op, ksize, inp, w, b, cfg, out), inp, w, b, out, _KC)
    vx, vw, vb = view_spec(inp), view_spec(w), view_spec(b)
    n = shape_at(w, _KC)
    q = _quant(kind, inp, w, b, out, n)
    bounds = out_bounds(cfg.relu, out, sa)
    no_pad = ksize == 1
    pad = (0, 0) if no_pad else (cfg.padding_top, cfg.padding_left)
    geo = {"stride": (cfg.stride_height, cfg.stride_width), "dilation": (cfg.dilation_height, cfg.dilation_width),
           "pad": pad, "out_hw": (shape_at(out, 0), shape_at(out, 1)), "bounds": bounds}
    vo = view_spec(out)
    # (weights bytes, bias bytes, prepared layer or None when these operands were seen once, its tiny path,
    # the platform and the tiny path's computation under it)
    seen: list[tuple | None] = [None]
    small = op != "group" and shape_at(w, 0) * shape_at(w, 1) * shape_at(w, 2) * n <= _PREPARE_MAX
    # C sets out.el_type to the input's; the plan runs only on the field objects it saw (the memo's
    # snapshot holds the tensors' change counters), so whether that assignment changes anything is known now.
    set_type = out.el_type is not inp.el_type
    # weights / bias views as large as their data arrays: those arrays' bytes stand for the views' (every
    # view element is in them; no view to build); the output's data array for its flat view
    w_whole, b_whole = w.data.size == math.prod(vw[0]), b.data.size == math.prod(vb[0])
    o_whole, x_whole = whole_view(vo), whole_view(vx)
    x_shape = (math.prod(vx[0]),) if x_whole else vx[0]  # the tiny path reads a whole input flat

    def run(inp: Tensor, w: Tensor, b: Tensor, cfg: Conv2dCfg, out: Tensor) -> Status:
        if small:
            # The plan outlives the element values (a caller may rewrite the buffers): the layer is
            # prepared on the second call with the same weights and bias, and used while they stay.
            wk = w.data.tobytes() if w_whole else view(w, vw).tobytes()
            bk = b.data.tobytes() if b_whole else view(b, vb).tobytes()
            st = seen[0]
            # the common case first: the same operands, and the tiny path's computation of this platform
            if st is not None and st[5] is not None and st[4] is get_platform() and st[0] == wk and st[1] == bk:
                st[5](inp.data if x_whole else view(inp, vx), out.data if o_whole else view(out, vo))
                if set_type:
                    out.el_type = inp.el_type
                return _OK
            if st is not None and st[0] == wk and st[1] == bk:
                layer, fused = st[2], st[3]
                if layer is None:
                    layer = prepare_conv(view(w, vw), view(b, vb), q, **geo, depthwise=op == "depthwise",
                                         out_dtype=out.data.dtype)
                    fused = layer.fused(vx[0])
                    seen[0] = st = (wk, bk, layer, fused, None, None)
                # written into out (after reading all of the input), flat when its view is all of its data
                o = out.data if o_whole else view(out, vo)
                if fused is not None:
                    p = get_platform()
                    if p is not st[4]:  # the fused form of this platform (None: there is none)
                        seen[0] = st = (*st[:4], p, fused.runner(inp.data.dtype, x_shape))
                    if st[5] is not None:
                        st[5](inp.data if x_whole else view(inp, vx), o)
                        if set_type:
                            out.el_type = inp.el_type
                        return _OK
                layer(view(inp, vx), o)
                if set_type:
                    out.el_type = inp.el_type
                return _OK
            seen[0] = (wk, bk, None, None, None, None)
        view(out, vo)[...] = kernel(view(inp, vx), view(w, vw), view(b, vb), q, **geo)
        if set_type:
            out.el_type = inp.el_type  # the checks made them equal already
        return _OK

    return run


def _run_transpose(kind: str, ksize: int, inp: Tensor, w: Tensor, b: Tensor, cfg: Conv2dCfg,
                   out: Tensor) -> Callable[..., Status]:
    sa = kind == "sa8"
    check_mac(kind, lambda: check_transpose(inp, w, b, cfg, out), inp, w, b, out, _KC)
    if ksize:
        check_transpose_str2(w, cfg, ksize)
    n = shape_at(w, _KC)
    q = _quant(kind, inp, w, b, out, n)
    geo = {"stride": (cfg.stride_height, cfg.stride_width), "pad": (cfg.padding_top, cfg.padding_left),
           "out_hw": (shape_at(out, 0), shape_at(out, 1)), "bounds": out_bounds(cfg.relu, out, sa)}
    vx, vw, vb, vo = view_spec(inp), view_spec(w), view_spec(b), view_spec(out)

    def run(inp: Tensor, w: Tensor, b: Tensor, cfg: Conv2dCfg, out: Tensor) -> Status:
        view(out, vo)[...] = K.transpose_conv2d_hwcn(view(inp, vx), view(w, vw), view(b, vb), q, **geo)
        return _OK

    return run


# ------------------------------------------------------------------------------ registration
_DOC = """``{name}``: the MLI function of that name (see :mod:`pymli.capi.convolution`).

Args:
    in_: input feature map, HWC (rank 3).
    weights: HWCN weights (rank 4; HW1N for depthwise, HW(C/groups)N for group conv).
    bias: rank-1 bias of N values.
    cfg: :class:`~pymli.capi.types.Conv2dCfg` (stride, padding, dilation, fused ReLU).
    out: output feature map, HWN (rank 3), written through its mem_stride.

Returns:
    ``Status.OK``.

Raises:
    MliError: the status of the checked C build (nothing is written to ``out``).
"""


CONV2D: dict[tuple[str, int], Callable[..., Status]] = {}
"""The conv2d functions by (type suffix, kernel size of the specialisation; 0: generic)."""
DEPTHWISE_CONV2D: dict[tuple[str, int], Callable[..., Status]] = {}
"""The depthwise conv2d functions by (type suffix, kernel size of the specialisation; 0: generic)."""
GROUP_CONV2D: dict[tuple[str, int], Callable[..., Status]] = {}
"""The group conv2d functions by (type suffix, kernel size of the specialisation; 0: generic)."""
TRANSPOSE_CONV2D: dict[tuple[str, int], Callable[..., Status]] = {}
"""The transpose conv2d functions by (type suffix, kernel size of the specialisation; 0: generic)."""
_TABLES = {"conv": CONV2D, "depthwise": DEPTHWISE_CONV2D, "group": GROUP_CONV2D, "transpose": TRANSPOSE_CONV2D}
_SUFFIX = {"fx16": "fx16", "fx16_fx8_fx8": "fx16_fx8_fx8", "sa8": "sa8_sa8_sa32"}


def _make(op: str, kind: str, ksize: int, name: str) -> Callable[..., Status]:
    """Register ``name`` (the ``op`` kernel for ``kind`` operands, specialised to ``ksize``; 0: generic)
    and enter it in its table."""
    if op == "transpose":
        fn = c_variant(name, _run_transpose, "in_ weights bias cfg out", _DOC.format(name=name),
                       head=(kind, ksize), named=False, planned=True)
    else:
        fn = c_variant(name, _run, "in_ weights bias cfg out", _DOC.format(name=name), head=(op, kind, ksize),
                       named=False, planned=True)
    _TABLES[op][(_SUFFIX[kind], ksize)] = fn
    return fn


mli_krn_conv2d_hwcn_fx16 = _make("conv", "fx16", 0, "mli_krn_conv2d_hwcn_fx16")
mli_krn_conv2d_hwcn_fx16_k1x1 = _make("conv", "fx16", 1, "mli_krn_conv2d_hwcn_fx16_k1x1")
mli_krn_conv2d_hwcn_fx16_k3x3 = _make("conv", "fx16", 3, "mli_krn_conv2d_hwcn_fx16_k3x3")
mli_krn_conv2d_hwcn_fx16_k5x5 = _make("conv", "fx16", 5, "mli_krn_conv2d_hwcn_fx16_k5x5")
mli_krn_depthwise_conv2d_hwcn_fx16 = _make("depthwise", "fx16", 0, "mli_krn_depthwise_conv2d_hwcn_fx16")
mli_krn_group_conv2d_hwcn_fx16 = _make("group", "fx16", 0, "mli_krn_group_conv2d_hwcn_fx16")
mli_krn_depthwise_conv2d_hwcn_fx16_k3x3 = _make("depthwise", "fx16", 3, "mli_krn_depthwise_conv2d_hwcn_fx16_k3x3")
mli_krn_group_conv2d_hwcn_fx16_k3x3 = _make("group", "fx16", 3, "mli_krn_group_conv2d_hwcn_fx16_k3x3")
mli_krn_depthwise_conv2d_hwcn_fx16_k5x5 = _make("depthwise", "fx16", 5, "mli_krn_depthwise_conv2d_hwcn_fx16_k5x5")
mli_krn_group_conv2d_hwcn_fx16_k5x5 = _make("group", "fx16", 5, "mli_krn_group_conv2d_hwcn_fx16_k5x5")
mli_krn_transpose_conv2d_hwcn_fx16 = _make("transpose", "fx16", 0, "mli_krn_transpose_conv2d_hwcn_fx16")
mli_krn_transpose_conv2d_hwcn_fx16_k2x2_str2 = _make("transpose", "fx16", 2, "mli_krn_transpose_conv2d_hwcn_fx16_k2x2_str2")
mli_krn_transpose_conv2d_hwcn_fx16_k4x4_str2 = _make("transpose", "fx16", 4, "mli_krn_transpose_conv2d_hwcn_fx16_k4x4_str2")
mli_krn_conv2d_hwcn_fx16_fx8_fx8 = _make("conv", "fx16_fx8_fx8", 0, "mli_krn_conv2d_hwcn_fx16_fx8_fx8")
mli_krn_conv2d_hwcn_fx16_fx8_fx8_k1x1 = _make("conv", "fx16_fx8_fx8", 1, "mli_krn_conv2d_hwcn_fx16_fx8_fx8_k1x1")
mli_krn_conv2d_hwcn_fx16_fx8_fx8_k3x3 = _make("conv", "fx16_fx8_fx8", 3, "mli_krn_conv2d_hwcn_fx16_fx8_fx8_k3x3")
mli_krn_conv2d_hwcn_fx16_fx8_fx8_k5x5 = _make("conv", "fx16_fx8_fx8", 5, "mli_krn_conv2d_hwcn_fx16_fx8_fx8_k5x5")
mli_krn_depthwise_conv2d_hwcn_fx16_fx8_fx8 = _make("depthwise", "fx16_fx8_fx8", 0, "mli_krn_depthwise_conv2d_hwcn_fx16_fx8_fx8")
mli_krn_group_conv2d_hwcn_fx16_fx8_fx8 = _make("group", "fx16_fx8_fx8", 0, "mli_krn_group_conv2d_hwcn_fx16_fx8_fx8")
mli_krn_depthwise_conv2d_hwcn_fx16_fx8_fx8_k3x3 = _make("depthwise", "fx16_fx8_fx8", 3, "mli_krn_depthwise_conv2d_hwcn_fx16_fx8_fx8_k3x3")
mli_krn_group_conv2d_hwcn_fx16_fx8_fx8_k3x3 = _make("group", "fx16_fx8_fx8", 3, "mli_krn_group_conv2d_hwcn_fx16_fx8_fx8_k3x3")
mli_krn_depthwise_conv2d_hwcn_fx16_fx8_fx8_k5x5 = _make("depthwise", "fx16_fx8_fx8", 5, "mli_krn_depthwise_conv2d_hwcn_fx16_fx8_fx8_k5x5")
mli_krn_group_conv2d_hwcn_fx16_fx8_fx8_k5x5 = _make("group", "fx16_fx8_fx8", 5, "mli_krn_group_conv2d_hwcn_fx16_fx8_fx8_k5x5")
mli_krn_transpose_conv2d_hwcn_fx16_fx8_fx8 = _make("transpose", "fx16_fx8_fx8", 0, "mli_krn_transpose_conv2d_hwcn_fx16_fx8_fx8")
mli_krn_transpose_conv2d_hwcn_fx16_fx8_fx8_k2x2_str2 = _make("transpose", "fx16_fx8_fx8", 2, "mli_krn_transpose_conv2d_hwcn_fx16_fx8_fx8_k2x2_str2")
mli_krn_transpose_conv2d_hwcn_fx16_fx8_fx8_k4x4_str2 = _make("transpose", "fx16_fx8_fx8", 4, "mli_krn_transpose_conv2d_hwcn_fx16_fx8_fx8_k4x4_str2")
mli_krn_conv2d_hwcn_sa8_sa8_sa32 = _make("conv", "sa8", 0, "mli_krn_conv2d_hwcn_sa8_sa8_sa32")
mli_krn_conv2d_hwcn_sa8_sa8_sa32_k1x1 = _make("conv", "sa8", 1, "mli_krn_conv2d_hwcn_sa8_sa8_sa32_k1x1")
mli_krn_conv2d_hwcn_sa8_sa8_sa32_k3x3 = _make("conv", "sa8", 3, "mli_krn_conv2d_hwcn_sa8_sa8_sa32_k3x3")
mli_krn_conv2d_hwcn_sa8_sa8_sa32_k5x5 = _make("conv", "sa8", 5, "mli_krn_conv2d_hwcn_sa8_sa8_sa32_k5x5")
mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32 = _make("depthwise", "sa8", 0, "mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32")
mli_krn_group_conv2d_hwcn_sa8_sa8_sa32 = _make("group", "sa8", 0, "mli_krn_group_conv2d_hwcn_sa8_sa8_sa32")
mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32_k3x3 = _make("depthwise", "sa8", 3, "mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32_k3x3")
mli_krn_group_conv2d_hwcn_sa8_sa8_sa32_k3x3 = _make("group", "sa8", 3, "mli_krn_group_conv2d_hwcn_sa8_sa8_sa32_k3x3")
mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32_k5x5 = _make("depthwise", "sa8", 5, "mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32_k5x5")
mli_krn_group_conv2d_hwcn_sa8_sa8_sa32_k5x5 = _make("group", "sa8", 5, "mli_krn_group_conv2d_hwcn_sa8_sa8_sa32_k5x5")
mli_krn_transpose_conv2d_hwcn_sa8_sa8_sa32 = _make("transpose", "sa8", 0, "mli_krn_transpose_conv2d_hwcn_sa8_sa8_sa32")
mli_krn_transpose_conv2d_hwcn_sa8_sa8_sa32_k2x2_str2 = _make("transpose", "sa8", 2, "mli_krn_transpose_conv2d_hwcn_sa8_sa8_sa32_k2x2_str2")
mli_krn_transpose_conv2d_hwcn_sa8_sa8_sa32_k4x4_str2 = _make("transpose", "sa8", 4, "mli_krn_transpose_conv2d_hwcn_sa8_sa8_sa32_k4x4_str2")


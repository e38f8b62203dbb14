"""The ``mapping="tflm"`` interpreter: a ``.tflite`` as TensorFlow Lite Micro built with the ARC MLI
kernels (``OPTIMIZED_KERNEL_DIR=arc_mli``, MLI 2.0) computes it.

Prepared once at :func:`load_tflm`: each operator becomes a step with its Invoke. The operators
arc_mli offloads (:func:`pymli.tflm.arc_mli.mli_function`: int8 CONV_2D, DEPTHWISE_CONV_2D (group
convolution for a depth multiplier), FULLY_CONNECTED, AVERAGE/MAX_POOL_2D, non-broadcasting ADD) get
their MLI parameters (16-bit scales and shifts, bias scales, relu, padding) and their weights in MLI's
layout as :class:`pymli.Tensor` constants; their first Invoke goes through the :mod:`pymli.capi`
function (its argument checks), every later one calls the kernel with the quantisation, bounds and
geometry derived once from the same structs, under the run's platform (the kernels read its rounding).
Every other operator runs TFLM's reference integer kernel, prepared by
:func:`pymli.tflm.handlers.prepare_op` (multipliers, shifts and tables derived once).

A batched run of a model without state goes through the graph once, every activation with a leading
sample axis (:attr:`Step.invoke_batch`; the convolution and pooling kernels take the batch axis); a model
with variable tensors runs one Invoke per sample, as TFLM does.

Where arc_mli's glue code has a defect (README "Quirks" 1-3 of ``shared/tflite_golden``), the step
computes what arc_mli intends (the ``arcfix`` recordings) and the model lists the defect in
:attr:`TflmModel.defects`, warned once at load as a :class:`~pymli.tflite.errors.TfliteWarning`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import operator
import re
import warnings
from typing import Any, Callable

import numpy as np

from .. import capi
from ..arith.eltwise import EltOp
from ..arith.pool import RequantParams, requant_params
from ..capi import convolution as capi_conv
from ..config import PRESETS, Platform, get_platform, use_platform
from ..errors import MliError, Status
from ..kernels import _jit
from ..kernels import convolution as K
from ..kernels._blas import SMALL_PRODUCT, blas_single_thread
from ..kernels.conv_prepared import prepare_conv, prepare_group_conv
from ..kernels.eltwise import eltwise_sa8
from ..kernels.fully_connected import prepare_fc, prepare_pointwise
from ..kernels.pooling import PreparedPool, degenerate
from ..tensor import Tensor
from ..tflm import arc_mli
from ..tflm.common import activation_range
from ..tflm.handlers import HANDLERS, STATEFUL, batch_elementwise, prepare_op
from .importer import TfliteModel, load_mli
from .errors import TfliteError, TfliteInputError, TfliteLayoutError, TfliteUnsupported, TfliteWarning
from .tgraph import TGraph, TOp, TTensor, read_graph, reset_value

__all__ = ["TflmModel", "TflmRun", "TflmStream", "Step", "load_tflm", "resolve_platform",
           "adapted_layout", "offload_function", "prepare_offload", "run_offload"]

_WEIGHTED = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")


def resolve_platform(platform: Platform | str | None) -> Platform:
    """The platform of a run: a :class:`Platform`, a preset name (case-insensitive) or None (the current one).

    Args:
        platform: the run's ``platform`` argument.

    Returns:
        the Platform.

    Raises:
        TfliteError: an unknown name (ARGUMENT_ERROR, with the choices).
    """
    if platform is None:
        return get_platform()
    if isinstance(platform, Platform):
        return platform
    if isinstance(platform, str) and platform.lower() in PRESETS:
        return PRESETS[platform.lower()]
    raise TfliteError(Status.ARGUMENT_ERROR, f"unknown platform {platform!r}: choose one of "
                                             f"{', '.join(sorted(PRESETS))} or a pymli.Platform")


def _act(op: TOp) -> int:
    o = op.options
    return int(o.FusedActivationFunction()) if o is not None and hasattr(o, "FusedActivationFunction") else 0


def _t(g: TGraph, op: TOp, k: int) -> TTensor | None:
    return g.t(op.inputs[k]) if k < len(op.inputs) else None


def offload_function(g: TGraph, op: TOp) -> str | None:
    """The MLI function arc_mli calls for ``op``, or None for TFLM's reference kernel.

    Args:
        g: the graph (weights already in TFLite's layout).
        op: the operator.

    Returns:
        the ``mli_krn_*`` name or None.
    """
    if op.name not in _WEIGHTED + ("AVERAGE_POOL_2D", "MAX_POOL_2D", "ADD"):
        return None
    x = _t(g, op, 0)
    if x is None or not op.outputs:
        return None
    o = g.tensors[op.outputs[0]]
    if o.dtype != np.int8 or x.dtype != np.int8:
        return None
    act = _act(op)
    lo, hi = activation_range(act, o.s, o.zp, o.dtype)
    kw: dict[str, Any] = {}
    if op.name in _WEIGHTED:
        w, b = _t(g, op, 1), _t(g, op, 2)
        if w is None or w.data is None or b is None or b.data is None:
            return None  # arc_mli's glue needs constant weights and a bias
        kw = dict(filter_dtype=w.dtype.name, bias_dtype=b.dtype.name, filter_zp=w.zp)
        if op.name == "FULLY_CONNECTED":
            if w.scale.size > 1 or len(w.shape) != 2:
                return None
        else:
            if len(w.shape) != 4 or len(x.shape) != 4:
                return None
            opt = op.options
            kw["dilation"] = (int(opt.DilationHFactor()), int(opt.DilationWFactor()))
            kw["per_channel_ok"] = w.scale.size == o.shape[-1]
            if op.name == "DEPTHWISE_CONV_2D":
                kw["depth_multiplier"] = max(w.shape[3] // max(x.shape[3], 1), 1)
    elif op.name == "ADD":
        y = _t(g, op, 1)
        if y is None or y.dtype != np.int8:
            return None
        kw["broadcast"] = x.shape != y.shape
    elif len(x.shape) != 4:
        return None
    return arc_mli.mli_function(op.name, input_dtype="int8", act=act, act_min=lo, act_max=hi, **kw)


# ---------------------------------------------------------------------------------------- layouts

def _layout_fits(g: TGraph, op: TOp) -> tuple[bool, bool] | None:
    """(fits TFLite's layout, fits the ARC adaptation layout) of a weighted operator's constant weights."""
    x, w = _t(g, op, 0), _t(g, op, 1)
    if x is None or w is None or w.data is None or not op.outputs:
        return None
    o = g.tensors[op.outputs[0]]
    s = w.shape
    if op.name == "FULLY_CONNECTED":
        if len(s) != 2 or not o.shape:
            return None
        units, n_x = o.shape[-1], int(np.prod(x.shape)) if x.shape else 1
        std = s[0] == units and s[1] > 0 and n_x % s[1] == 0 and w.qdim == 0
        ad = s[1] == units and s[0] > 0 and n_x % s[0] == 0 and w.qdim == 1
        return std, ad
    if len(s) != 4 or len(x.shape) != 4 or len(o.shape) != 4:
        return None
    cin, cout = x.shape[3], o.shape[3]
    if op.name == "CONV_2D":
        return (s[0] == cout and s[3] == cin and w.qdim == 0, s[2] == cin and s[3] == cout and w.qdim == 3)
    # DEPTHWISE_CONV_2D: 1HWC and HW1C hold the same bytes; only the shape tells them apart
    if s[0] == 1 and s[2] == 1:
        return (True, True) if s[1] != 1 else None  # (1,H,1,C): kernel Hx1 or 1xH
    return s[0] == 1 and s[3] == cout, s[2] == 1 and s[3] == cout


def adapted_layout(g: TGraph, adapted: bool | None) -> bool:
    """Whether the model's weights are in the ARC adaptation tool's layout (conv HWCN, depthwise HW1C,
    FC [in, out]), decided from the weights' shapes and quantised dimensions.

    Args:
        g: the graph as stored.
        adapted: the caller's decision (None: recognise it).

    Returns:
        True for the adapted layout.

    Raises:
        TfliteLayoutError: the shapes fit neither layout, fit both for every operator (ambiguous:
            pass ``adapted=True|False``), or contradict each other or ``adapted``.
    """
    strict_std, strict_ad, ambiguous = [], [], []
    for op in g.ops:
        if op.name not in _WEIGHTED:
            continue
        fits = _layout_fits(g, op)
        if fits is None:
            continue
        std, ad = fits
        label = f"operator {op.index} ({op.name}) weights {g.tensors[op.inputs[1]].shape}"
        if adapted is not None and not (ad if adapted else std):
            raise TfliteLayoutError(f"{label} do not fit the {'ARC adapted' if adapted else 'TFLite'} layout "
                                    f"(adapted={adapted})")
        if std and ad:
            ambiguous.append(label)
        elif std:
            strict_std.append(label)
        elif ad:
            strict_ad.append(label)
        elif adapted is None:
            raise TfliteLayoutError(f"{label} fit neither TFLite's layout nor the ARC adaptation layout")
    if adapted is not None:
        return adapted
    if strict_std and strict_ad:
        raise TfliteLayoutError(f"weights in both layouts: {strict_std[0]} is TFLite's, {strict_ad[0]} the ARC "
                                "adaptation layout")
    if strict_ad:
        return True
    if strict_std or not ambiguous:
        return False
    raise TfliteLayoutError(f"cannot tell TFLite's weights layout from the ARC adaptation layout ({ambiguous[0]} "
                            "fits both): pass load(..., adapted=True) or load(..., adapted=False)")


def _to_tflite_layout(g: TGraph) -> TGraph:
    """The graph with every adapted weights tensor back in TFLite's layout (conv OHWI, depthwise 1HWC, FC [out, in])."""
    tensors = list(g.tensors)
    done: set[int] = set()
    for op in g.ops:
        if op.name not in _WEIGHTED or len(op.inputs) < 2 or op.inputs[1] < 0 or op.inputs[1] in done:
            continue
        w = tensors[op.inputs[1]]
        if w.data is None:
            continue
        done.add(w.index)
        if op.name == "CONV_2D":
            data, qdim = np.ascontiguousarray(w.data.transpose(3, 0, 1, 2)), 0
        elif op.name == "DEPTHWISE_CONV_2D":
            s = w.shape
            data, qdim = w.data.reshape(1, s[0], s[1], s[3]), w.qdim
        else:
            data, qdim = np.ascontiguousarray(w.data.T), 0
        tensors[w.index] = dataclasses.replace(w, shape=tuple(data.shape), data=data, qdim=qdim)
    return TGraph(tensors, g.ops, g.inputs, g.outputs)


# ---------------------------------------------------------------------------------------- MLI steps

def _sa(data: np.ndarray, p: arc_mli.SaParams, el: str = "SA_8") -> Tensor:
    if p.dim >= 0:
        return Tensor.from_numpy(data, el, zero_point=p.zero_point.astype(np.int64),
                                 scale=p.scale.astype(np.int64),
                                 scale_frac_bits=p.scale_frac_bits.astype(np.int64), dim=p.dim)
    return Tensor.from_numpy(data, el, zero_point=int(p.zero_point), scale=int(p.scale),
                             scale_frac_bits=int(p.scale_frac_bits))


def _sa_params(t: TTensor, fix: bool = True) -> arc_mli.SaParams:
    s, f = arc_mli.mli_scale(t.s, fix=fix)
    return arc_mli.SaParams(np.array(t.zp, np.int16), np.array(s, np.int16), np.array(f, np.int8))


def _call(fn_name: str, op: TOp, *args: Any) -> None:
    st = getattr(capi, fn_name)(*args)
    if st is not None and int(st) != 0:
        raise TfliteError(Status(int(st)), f"operator {op.index} ({op.name}): {fn_name} returned {Status(int(st)).name}")


@dataclasses.dataclass(frozen=True)
class _MliCall:
    """An offloaded operator, prepared: the function, constant MLI tensors, cfg and tensor parameters."""

    function: str
    kind: str  # conv, fc, pool, add
    inp: Any
    out: Any
    out_shape: tuple[int, ...]
    weights: Tensor | None = None
    bias: Tensor | None = None
    cfg: Any = None
    n_in: int = 0
    inp2: Any = None
    first_only: bool = False  # device FC with a rank > 2 output (quirk 3): only element 0 of each row


def prepare_offload(g: TGraph, op: TOp, *, fix: bool = True) -> _MliCall:
    """arc_mli's Prepare of one offloaded operator: MLI function, parameters, constant MLI tensors, cfg.

    Args:
        g: the graph (weights in TFLite's layout).
        op: an operator :func:`offload_function` sends to MLI.
        fix: what arc_mli intends (True, what :class:`TflmModel` computes) or the device build with its
            glue defects (False: scale mantissa wrap, FC activation ignored, FC rank > 2 output with
            element 0 only and zeros, as a fresh arena holds).

    Returns:
        the prepared call for :func:`run_offload`.

    Raises:
        TfliteUnsupported: ``op`` is not offloaded.
    """
    fn = offload_function(g, op)
    if fn is None:
        raise TfliteUnsupported(op.index, op.name, "not offloaded to MLI by arc_mli")
    return _prepare_mli(g, op, fn, fix)


def run_offload(call: _MliCall, g: TGraph, op: TOp, ins: list) -> np.ndarray:
    """One Invoke of a prepared offloaded operator under the current platform.

    Args:
        call: from :func:`prepare_offload`.
        g: the graph. op: the operator.
        ins: the operator's input arrays (TFLite shapes).

    Returns:
        the output in the output tensor's shape (int8).

    Raises:
        TfliteError: the MLI call refused its arguments.
    """
    return _run_mli(call, op, g, ins)[0]


def _prepare_mli(g: TGraph, op: TOp, fn: str, fix: bool = True) -> _MliCall:
    T = g.tensors
    x, o = T[op.inputs[0]], T[op.outputs[0]]
    opt = op.options
    act = _act(op)
    lo, hi = activation_range(act, o.s, o.zp, o.dtype)
    if op.name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        w, b = T[op.inputs[1]], T[op.inputs[2]]
        dm = w.shape[3] // x.shape[3] if op.name == "DEPTHWISE_CONV_2D" else 1
        p = arc_mli.conv_params(op.name, in_scale=x.s, in_zp=x.zp, w_scales=w.scale, b_scales=b.scale,
                                out_scale=o.s, out_zp=o.zp, act=act, act_min=lo, act_max=hi,
                                same=opt.Padding() == 0, in_hw=x.shape[1:3], k_hw=w.shape[1:3],
                                stride=(opt.StrideH(), opt.StrideW()), depth_multiplier=dm, fix=fix)
        top, bottom, left, right = p.padding
        cfg = capi.Conv2dCfg(relu=capi.ReluCfg(capi.ReluType(p.relu)), stride_width=p.stride[1],
                             stride_height=p.stride[0], padding_left=left, padding_right=right,
                             padding_top=top, padding_bottom=bottom)
        return _MliCall(p.function, "conv", p.inp, p.out, o.shape[1:],
                        _sa(arc_mli.hwcn_weights(op.name, w.data), p.weights),
                        _sa(b.data.astype(np.int32), p.bias, "SA_32"), cfg)
    if op.name == "FULLY_CONNECTED":
        w, b = T[op.inputs[1]], T[op.inputs[2]]
        p = arc_mli.fc_params(in_scale=x.s, in_zp=x.zp, w_scale=w.s, b_scale=b.s, out_scale=o.s, out_zp=o.zp,
                              act=act, act_min=lo, act_max=hi, out_rank=len(o.shape), fix=fix)
        cfg = capi.FullyConnectedCfg(relu=capi.ReluCfg(capi.ReluType(p.relu)))
        return _MliCall(p.function, "fc", p.inp, p.out, (w.shape[0],),
                        _sa(arc_mli.hwcn_weights(op.name, w.data), p.weights),
                        _sa(b.data.astype(np.int32), p.bias, "SA_32"), cfg, n_in=w.shape[1],
                        first_only=not fix and len(o.shape) > 2)
    if op.name in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        k = (opt.FilterHeight(), opt.FilterWidth())
        top, bottom, left, right = arc_mli.pool_padding(opt.Padding() == 0, x.shape[1:3], k,
                                                        (opt.StrideH(), opt.StrideW()))
        cfg = capi.PoolCfg(kernel_width=k[1], kernel_height=k[0], stride_width=opt.StrideW(),
                           stride_height=opt.StrideH(), padding_left=left, padding_right=right,
                           padding_top=top, padding_bottom=bottom)
        return _MliCall(fn, "pool", _sa_params(x, fix), _sa_params(o, fix), o.shape[1:], cfg=cfg)
    # ADD: the three tensors flattened to rank 1 (arc_mli's Prepare), per-tensor parameters
    return _MliCall(fn, "add", _sa_params(x, fix), _sa_params(o, fix), (int(np.prod(o.shape)),),
                    inp2=_sa_params(T[op.inputs[1]], fix))


def _run_mli(c: _MliCall, op: TOp, g: TGraph, ins: list) -> list[np.ndarray]:
    o = g.tensors[op.outputs[0]]
    x = np.asarray(ins[0])
    if c.kind == "add":
        ot = _sa(np.zeros(c.out_shape, np.int8), c.out)
        _call(c.function, op, _sa(x.reshape(-1), c.inp), _sa(np.asarray(ins[1]).reshape(-1), c.inp2), ot)
        return [ot.numpy().reshape(o.shape)]
    if c.kind == "fc":
        xs = x.reshape(-1, c.n_in)
    else:
        xs = x
    res = []
    for n in range(xs.shape[0]):  # MLI has no batch axis: one call per batch row (as the glue's slicer)
        ot = _sa(np.zeros(c.out_shape, np.int8), c.out)
        if c.kind == "pool":
            _call(c.function, op, _sa(xs[n], c.inp), c.cfg, ot)
        else:
            _call(c.function, op, _sa(xs[n], c.inp), c.weights, c.bias, c.cfg, ot)
        res.append(ot.numpy())
    y = np.stack(res)
    if c.first_only:
        y = np.where(np.arange(y.shape[-1]) == 0, y, np.int8(0))
    return [y.reshape(o.shape)]


# ---------------------------------------------------------------------------------------- prepared steps

Invoke = Callable[[list], list]
"""A prepared step's Invoke: its input arrays (TFLite shapes; None for omitted inputs) -> its outputs."""
BatchInvoke = Callable[[list, int], list]
"""A prepared step on a batch: inputs with a leading axis N where they are activations -> outputs with it."""


_KEEP_BYTES = 1 << 20
"""A single-sample run of a model whose intermediate tensors take at most this many bytes in all keeps
them to its end (dropping each one after its last reader costs more than the memory it frees)."""

_ADD_TABLE_MIN = 256
"""From this many elements an offloaded ADD looks its result up in a 65536-entry table of the kernel's
results (built once per platform), instead of computing the requantisation per element."""


def _ksize(function: str) -> int:
    """Kernel size of an MLI specialisation's name (``..._k3x3`` -> 3; 0 for the generic function)."""
    m = re.search(r"_k(\d+)x\d+(_str\d+)?$", function)
    return int(m.group(1)) if m else 0


def _fast_mli(c: _MliCall, out_shape: tuple[int, ...]) -> Callable[[np.ndarray, np.ndarray | None], np.ndarray] | None:
    """The kernel call of an offloaded operator with every parameter computed once, as the capi function
    computes them from the same structs (:func:`pymli.capi.convolution.sa8_quant`, ``out_bounds``, the
    pooling cfg and ``requant_params``); None where the capi function takes another route (pooling
    geometries whose border passes store outside the output).

    The returned ``f(x, y)`` takes the operator's input rows (conv / pool: (M, H, W, C); FC: (M, n_in);
    ADD: two equal-shaped arrays) and returns int8 outputs. Rounding, FULL_ACCU and the 16-bit average
    pooling multiplier are read by the kernels from the current platform on every call (the average
    pooling's requantisation, whose derivation rounds, is derived once per platform).
    """
    inp = _sa(np.zeros(1, np.int8), c.inp)
    out = _sa(np.zeros(1, np.int8), c.out)
    fn = c.function
    if c.kind == "add":
        def q(p: arc_mli.SaParams) -> tuple[int, int, int]:
            return int(p.scale), int(p.scale_frac_bits), int(p.zero_point)
        q1, q2, qo = q(c.inp), q(c.inp2), q(c.out)
        tables: dict[Platform, np.ndarray] = {}

        def add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            if x.size < _ADD_TABLE_MIN:
                return eltwise_sa8(EltOp.ADD, x, y, q1=q1, q2=q2, qo=qo).astype(np.int8, copy=False)
            plat = get_platform()
            t = tables.get(plat)
            if t is None:  # every (x, y) pair through the kernel once per platform: its own values
                v = np.arange(256, dtype=np.uint8).view(np.int8)
                t = tables[plat] = eltwise_sa8(EltOp.ADD, np.repeat(v, 256), np.tile(v, 256), q1=q1, q2=q2,
                                               qo=qo).astype(np.int8, copy=False)
            lut = _jit.compiled("_jit_lut")
            if lut is not None:  # the same gather in one compiled pass
                r = np.empty(x.shape, np.int8)
                lut.gather_pairs(t, x.reshape(-1), y.reshape(-1), r.reshape(-1))
                return r
            return np.take(t, (x.view(np.uint8).astype(np.uint16) << 8) | y.view(np.uint8))
        return add
    if c.kind == "fc":
        w = c.weights
        m = w.shape[1]
        qf = capi_conv.sa8_quant(inp, w, out, m, in_zp=0 if fn.endswith("_ext_bias") else None)
        layer = prepare_fc(capi_conv.fast_view(w), c.bias.data[:m], qf, capi_conv.out_bounds(c.cfg.relu, out, True),
                           np.int8)
        if not c.first_only:
            return layer  # type: ignore[return-value]  # called with the rows only

        def fc(x: np.ndarray, _: np.ndarray | None = None) -> np.ndarray:
            return np.where(np.arange(m) == 0, layer(x), np.int8(0))
        return fc
    ho, wo = int(out_shape[0]), int(out_shape[1])
    if c.kind == "pool":
        cf = c.cfg
        kernel, stride = (cf.kernel_height, cf.kernel_width), (cf.stride_height, cf.stride_width)
        geo = dict(kernel=kernel, stride=stride, pad=(cf.padding_top, cf.padding_left), out_hw=(ho, wo))
        pads = (cf.padding_top, cf.padding_bottom, cf.padding_left, cf.padding_right)
        if any(v > 255 for v in kernel + stride + pads):
            return None  # the cfg holds uint8 fields: leave the wrap to the capi function
        if "avepool" in fn:
            def rq() -> RequantParams:  # derived per platform by the prepared pooling (it rounds)
                return requant_params(int(inp.scale), int(inp.scale_frac_bits), int(inp.zero_point),
                                      int(out.scale), int(out.scale_frac_bits), int(out.zero_point))
            prep = PreparedPool("ave", **geo, requant=rq)  # type: ignore[arg-type]  # mul16: the platform's
        else:
            prep = PreparedPool("max", **geo)  # type: ignore[arg-type]

        def pools(x: np.ndarray, _: np.ndarray | None = None) -> np.ndarray | None:
            if degenerate(x.shape[1], x.shape[2], kernel, stride, pads, (ho, wo)):
                return None
            return prep(x).astype(np.int8, copy=False)  # the pooling kernels take a batch [N, H, W, C] in one pass

        def single(shape: tuple[int, ...], dtype: np.dtype) -> Callable[[np.ndarray], np.ndarray] | None:
            if len(shape) != 4 or dtype != np.int8 or degenerate(shape[1], shape[2], kernel, stride, pads, (ho, wo)):
                return None
            return prep.single(shape, dtype)
        pools.single = single  # type: ignore[attr-defined]  # for _OffloadedStep._direct
        return pools  # type: ignore[return-value]
    w, cf = c.weights, c.cfg
    n = w.shape[3]
    wt, bias = capi_conv.fast_view(w), capi_conv.fast_view(c.bias)
    wt.flags.writeable = False  # constant: the kernel keeps its working copy in qc.memo
    qc = capi_conv.sa8_quant(inp, w, out, n)
    geo = dict(stride=(cf.stride_height, cf.stride_width), dilation=(cf.dilation_height, cf.dilation_width),
               pad=(0, 0) if _ksize(fn) == 1 else (cf.padding_top, cf.padding_left), out_hw=(ho, wo),
               bounds=capi_conv.out_bounds(cf.relu, out, True))
    if "group" not in fn:
        # conv2d / depthwise: weights layout, bias corrections, padded buffer and output stage prepared once
        pw = None
        if "depthwise" not in fn and geo["stride"] == (1, 1) and geo["pad"] == (0, 0):
            pw = prepare_pointwise(wt, bias, qc, geo["bounds"], np.int8)  # type: ignore[arg-type]
        if pw is not None:
            def pointwise(x: np.ndarray, _: np.ndarray | None = None) -> np.ndarray:
                if x.shape[-3:-1] == (ho, wo) and x.dtype.kind in "iu":
                    return pw(x)  # 1x1: the input pixels are the product's rows, whatever the size
                return K.conv2d_hwcn(x, wt, bias, qc, **geo).astype(np.int8, copy=False)  # type: ignore[arg-type]
            # for _OffloadedStep._direct: the form of one input shape
            pointwise.single = pw.single  # type: ignore[attr-defined]
            return pointwise
        layer = prepare_conv(wt, bias, qc, **geo, depthwise="depthwise" in fn,  # type: ignore[arg-type]
                             out_dtype=np.int8)

        def conv(x: np.ndarray, _: np.ndarray | None = None) -> np.ndarray:
            return layer(x)  # a leading batch axis: each image computed exactly as alone
        conv.single = layer.single  # type: ignore[attr-defined]  # for _OffloadedStep._direct
        return conv
    group = prepare_group_conv(wt, bias, qc, **geo, out_dtype=np.int8)  # type: ignore[arg-type]

    def convs(x: np.ndarray, _: np.ndarray | None = None) -> np.ndarray:
        # MLI has no batch axis (arc_mli's glue calls the kernel once per row); the kernels take a
        # leading batch axis, each image computed exactly as alone
        return group(x)
    convs.single = group.single  # type: ignore[attr-defined]  # for _OffloadedStep._direct
    return convs


class _OffloadedStep:
    """An offloaded operator's prepared Invoke: the first call goes through the capi function (its
    argument checks, once), every later one calls the kernel with the parameters computed once."""

    def __init__(self, c: _MliCall, g: TGraph, op: TOp) -> None:
        self.c, self.g, self.op = c, g, op
        self.out_shape = g.tensors[op.outputs[0]].shape
        # inputs that carry a batch axis in a batched run (activations; constants have none)
        self.batched = [i >= 0 and g.tensors[i].data is None for i in op.inputs[:2]]
        self.fast: Callable[..., np.ndarray | None] | None = None
        self.direct: Invoke | None = None  # set with fast: what a model run calls (:meth:`_direct`)
        self.checked = False

    def _kernel(self, ins: list, lead: tuple[int, ...]) -> list | None:
        c, x = self.c, np.asarray(ins[0])
        if c.kind == "add":
            y = np.asarray(ins[1])
            rows = (int(np.prod(lead)), -1) if lead else (-1,)
            x2 = x.reshape(rows)
            y2 = y.reshape(rows) if self.batched[1] or not lead else np.broadcast_to(y.reshape(-1), x2.shape)
            r = self.fast(x2, y2)  # type: ignore[misc]
        elif c.kind == "fc":
            r = self.fast(x if x.ndim == 2 and x.shape[1] == c.n_in else x.reshape(-1, c.n_in))  # type: ignore[misc]
        else:
            r = self.fast(x.reshape((-1,) + x.shape[len(lead) + 1:]))  # type: ignore[misc]
        if r is None:
            return None
        shape = lead + self.out_shape if lead else self.out_shape
        return [r if r.shape == shape else r.reshape(shape)]

    def _check(self, ins: list) -> list:
        out = _run_mli(self.c, self.op, self.g, ins)  # the capi function: checks, then the same kernel
        if not self.checked:
            self.checked = True
            self.fast = _fast_mli(self.c, self.c.out_shape)
            self.direct = self._direct()
        return out

    def _direct(self) -> Invoke | None:
        """The single-sample Invoke straight to the prepared kernel, for a model run whose arguments are
        arrays in the TFLite shapes: :meth:`_kernel` with ``lead=()`` (its reshapes of the input are no-ops
        there), without its per-call dispatch. None while no kernel is prepared."""
        fast, shape = self.fast, self.out_shape
        if fast is None:
            return None
        kind, n_in = self.c.kind, self.c.n_in
        if kind == "add":
            def add(ins: list) -> list:
                return [fast(ins[0].reshape(-1), ins[1].reshape(-1)).reshape(shape)]
            return add
        make = getattr(fast, "single", None)  # a convolution's form for one input shape
        t = self.g.tensors[self.op.inputs[0]]
        single = None if make is None else make(tuple(t.shape), np.dtype(t.dtype))
        if single is not None:
            def one_shape(ins: list) -> list:
                return [single(ins[0])]  # the input in its TFLite shape: the step's output shape
            return one_shape

        def kernel(ins: list) -> list:
            x = ins[0]
            if kind == "fc" and not (x.ndim == 2 and x.shape[1] == n_in):
                x = x.reshape(-1, n_in)
            r = fast(x)
            if r is None:  # a pooling geometry the capi function computes
                return self._check(ins)
            return [r if r.shape == shape else r.reshape(shape)]
        return kernel

    def one(self, ins: list) -> list:
        """One Invoke (TFLite shapes): the direct kernel call once prepared (arrays), as a model run's."""
        direct = self.direct
        if direct is not None and type(ins[0]) is np.ndarray and (
                self.c.kind != "add" or type(ins[1]) is np.ndarray):
            return direct(ins)
        if self.fast is not None:
            r = self._kernel(ins, ())
            if r is not None:
                return r
        return self._check(ins)

    def many(self, ins: list, n: int) -> list:
        """N Invokes at once: the activation inputs with a leading axis N."""
        if not self.checked:
            self._check([a[0] if j < 2 and self.batched[j] else a for j, a in enumerate(ins)])
        if self.fast is not None:
            r = self._kernel(ins, (n,))
            if r is not None:
                return r
        return _per_sample(self.one, ins, self.batched, n)


def _no_inputs(vals: dict) -> tuple:
    """The arguments of an operator without inputs (its argument lookup in :meth:`TflmModel._invoke`)."""
    return ()


def _whole_batch(invoke: Invoke) -> BatchInvoke:
    """The batch form of an Invoke that takes any leading axes (element-wise operators, FC rows)."""
    return lambda ins, n: invoke(ins)


def _step_call(op: TOp, fn: Callable[..., list], *args: Any) -> list:
    """``fn(*args)`` for operator ``op``; an MLI refusal becomes the model's :class:`TfliteError` naming it."""
    try:
        return fn(*args)
    except TfliteError:
        raise
    except MliError as e:
        raise TfliteError(e.status, f"operator {op.index} ({op.name}): {e}") from None


def _per_sample(invoke: Invoke, ins: list, batched: list[bool], n: int) -> list:
    """A step without a batch form on N samples: one Invoke per sample (the batched inputs sliced), stacked.

    Args:
        invoke: the step's Invoke. ins: its inputs. batched: per input, whether it has the axis N.
        n: the number of samples.

    Returns:
        the outputs, each with a leading axis N.
    """
    outs = [invoke([a[k] if j < len(batched) and batched[j] else a for j, a in enumerate(ins)])
            for k in range(n)]
    return [np.stack([np.asarray(o[j]) for o in outs]) for j in range(len(outs[0]))]


@dataclasses.dataclass(frozen=True)
class Step:
    """One prepared operator.

    Attributes:
        op: the operator.
        function: the MLI function arc_mli calls, or None (TFLM reference kernel).
        handler: the reference handler (None for an offloaded operator).
        mli: the prepared MLI call (None for a reference operator).
        invoke: the prepared Invoke (parameters computed at load): input arrays -> output arrays.
        invoke_batch: the same on N samples at once (None: one :attr:`invoke` per sample).
    """

    op: TOp
    function: str | None
    handler: Callable[[Any, Any, list], list] | None
    mli: _MliCall | None = None
    invoke: Invoke | None = None
    invoke_batch: BatchInvoke | None = None

    @property
    def mapping(self) -> str:
        """``"MLI"`` or ``"reference"``."""
        return "MLI" if self.function else "reference"


# ---------------------------------------------------------------------------------------- the model

@dataclasses.dataclass
class TflmRun:
    """What ``run(..., capture=True)`` recorded: every tensor of every Invoke.

    Attributes:
        values: one dict per Invoke (sample), TFLite tensor index -> value after the Invoke.
        batched: the run took a leading batch axis (tensor values are then stacked).
        platform: the platform of the run.
    """

    values: list[dict[int, np.ndarray]]
    batched: bool
    platform: Platform


class TflmStream:
    """Successive Invokes that carry the variable tensors (LSTM / SVDF state) from one call to the next.

    Use ``with model.stream() as s: s.run(x0); s.run(x1)`` (or without ``with``); :meth:`reset` clears.
    """

    def __init__(self, model: TflmModel) -> None:
        self.model = model
        self.state: dict[int, np.ndarray] = {}

    def run(self, *xs: Any, platform: Platform | str | None = None, capture: bool = False) -> Any:
        """One call of :meth:`TflmModel.run` that starts from and updates this stream's state."""
        return self.model._run(xs, platform=platform, capture=capture, state=self.state)

    def reset(self) -> None:
        """Variable tensors back to their reset value."""
        self.state.clear()

    def __enter__(self) -> TflmStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.reset()


class TflmModel:
    """A ``.tflite`` prepared for TFLM + arc_mli: :meth:`run` executes the prepared steps only.

    :meth:`export_c` writes the C program of the same bytes' MLI mapping (``load(data, mapping="mli")``).

    Attributes:
        data: the model bytes.
        graph: the graph (weights in TFLite's layout, whatever the file held).
        steps: one :class:`Step` per operator.
        adapted: the file held weights in the ARC adaptation layout.
        defects: the arc_mli glue defects that make the device deviate (:class:`pymli.tflm.arc_mli.GlueDefect`).
        warnings: their messages (warned once at load).
        mapping: ``"tflm"``.
    """

    mapping = "tflm"

    def __init__(self, data: bytes, graph: TGraph, steps: list[Step], adapted: bool,
                 defects: list[arc_mli.GlueDefect]) -> None:
        self.data = data
        self.graph = graph
        self.steps = steps
        self.adapted = adapted
        self.defects = defects
        self.warnings = [d.message for d in defects]
        self._state: dict[int, np.ndarray] = {}
        self._mli: TfliteModel | None = None
        T = graph.tensors
        self._variables = [t for t in T if t.variable]
        # operators that keep state between Invokes (variable tensors, the signal ops' own state)
        self._stateful = bool(self._variables) or any(s.op.name in STATEFUL for s in steps)
        self.batchable = not self._stateful
        """A batched run computes every step on all samples at once (no state carried between Invokes)."""
        self._batched = [[i >= 0 and T[i].data is None for i in s.op.inputs] for s in steps]
        self._large = any(_macs(graph, s.op) >= SMALL_PRODUCT for s in steps)
        self._dead = _buffer_plan(graph, steps)
        # per step, (output tensor, its shape) of the outputs that are kept
        self._outs = [tuple((ti, T[ti].shape) for ti in s.op.outputs if ti >= 0) for s in steps]
        # per step, what a single-sample run calls: the step's Invoke, then (once its first Invoke went
        # through the capi function) an offloaded step's direct kernel call (_OffloadedStep.direct)
        self._calls: list[Invoke] = [s.invoke for s in steps]  # type: ignore[misc]
        self._unchecked = [(k, s.invoke.__self__) for k, s in enumerate(steps)
                           if isinstance(getattr(s.invoke, "__self__", None), _OffloadedStep)]
        # a single-sample Invoke starts from a copy of the constants (and None for an omitted input, -1):
        # each step's arguments are then one lookup per input (operator.itemgetter)
        self._consts: dict[int, Any] = {-1: None}
        self._consts.update((t.index, t.data) for t in T if t.data is not None)
        # the variables' reset values, made once, read-only: a fresh run's state holds them until the
        # operator replaces them (the stateful kernels return new arrays, none writes its inputs)
        self._resets = [(t.index, reset_value(t)) for t in self._variables]
        for _, r in self._resets:
            r.flags.writeable = False
        self._in_shapes = [(ti, T[ti].shape) for ti in graph.inputs]
        self._inputs = tuple(T[ti] for ti in graph.inputs)
        self._in_types = [(T[ti].dtype, T[ti].shape) for ti in graph.inputs]
        # a model whose intermediate tensors are small keeps them to the end of a run (dropping each one
        # after its last reader costs more than the memory it frees)
        small = sum(math.prod(T[i].shape) * T[i].dtype.itemsize for d in self._dead for i in d) <= _KEEP_BYTES
        self._drops = [() if small else tuple(d) for d in self._dead]
        self._plan: list[tuple] = []
        self._make_plan()

    # ----- description
    @property
    def inputs(self) -> list[TTensor]:
        """The graph input tensors, in order."""
        return [self.graph.tensors[i] for i in self.graph.inputs]

    @property
    def outputs(self) -> list[TTensor]:
        """The graph output tensors, in order."""
        return [self.graph.tensors[i] for i in self.graph.outputs]

    @property
    def input_shape(self) -> tuple[int, ...]:
        """Shape of the first graph input."""
        return self.inputs[0].shape

    @property
    def float_input(self) -> bool:
        """The first graph input is float32 (the model starts with QUANTIZE)."""
        return self.inputs[0].dtype == np.float32

    def macs(self) -> int:
        """Multiply-accumulates of one Invoke (convolutions, fully connected layers, LSTM gates)."""
        return sum(_macs(self.graph, s.op) for s in self.steps)

    def functions(self) -> dict[int, list[str]]:
        """Operator index -> the MLI function it calls (empty for a reference operator)."""
        return {s.op.index: [s.function] if s.function else [] for s in self.steps}

    # ----- the MLI mapping of the same bytes (pymli export)
    def mli_model(self) -> TfliteModel:
        """The same model loaded with ``mapping="mli"`` (built on first use): what the C export writes.

        Raises:
            TfliteUnsupported: an operator the MLI mapping cannot run.
        """
        if self._mli is None:
            self._mli = load_mli(self.data)
        return self._mli

    @property
    def network(self) -> Any:
        """The MLI mapping's :class:`pymli.models.Network` (for :func:`pymli.export.export_c`)."""
        return self.mli_model().network

    def prepare_input(self, x: np.ndarray) -> np.ndarray:
        """The MLI mapping's input conversion (for :func:`pymli.export.export_c`'s test vectors)."""
        return self.mli_model().prepare_input(x)

    def export_c(self, out_dir: Any, test_inputs: Any = None, platform: Platform | str | None = None,
                 **kw: Any) -> Any:
        """Write the MLI mapping of this model as a plain C program on MLI 2.0 (:meth:`TfliteModel.export_c`).

        Args:
            out_dir: output folder. test_inputs: test vectors (default: a few random ones).
            platform: the platform the program is built for. **kw: ``budget``, ``n_default``.

        Returns:
            the :class:`pymli.export.ExportResult`.

        Raises:
            TfliteUnsupported: an operator the MLI mapping cannot run.
            ExportError: a layer MLI cannot express, or the program exceeds the budget.
        """
        return self.mli_model().export_c(out_dir, test_inputs, platform, **kw)

    # ----- state
    def reset(self) -> None:
        """Clear the state ``run(..., keep_state=True)`` carries (variable tensors back to their reset value)."""
        self._state.clear()

    def stream(self) -> TflmStream:
        """A :class:`TflmStream`: successive runs carry the variable tensors."""
        return TflmStream(self)

    # ----- running
    def run(self, *xs: Any, platform: Platform | str | None = None, capture: bool = False,
            keep_state: bool = False) -> Any:
        """Run the model: one Invoke per sample.

        Args:
            *xs: one array per graph input, each in the input's dtype (int8, int16, int32, float32;
                other integer arrays whose values fit are converted) and shape. A model input whose
                batch dimension is 1 also takes ``(N, *shape[1:])`` or ``(N, *shape)``: N samples,
                each one Invoke (every batched input with the same N; an unbatched input repeats).
                The outputs then have a leading axis N: ``(N, *out_shape[1:])`` when the batch
                axis replaced the batch of 1 (and the output's batch is 1), else ``(N, *out_shape)``.
            platform: the MLI platform (``"vpx"``, ``"em"``, any case, or a :class:`pymli.Platform`;
                default the current one).
            capture: also return a :class:`TflmRun` for :meth:`tensor_values`.
            keep_state: start from and update the model's own variable tensors (as successive Invokes
                do); default: every run (every sample) starts from the reset value.

        Returns:
            the output array (one graph output) or a tuple of arrays; with ``capture`` the pair
            ``(outputs, TflmRun)``.

        Raises:
            TfliteInputError: wrong number of inputs, shape or dtype (the message names the expected one).
            TfliteError: an unknown platform, or an MLI call refused its arguments.
        """
        return self._run(xs, platform=platform, capture=capture, state=self._state if keep_state else None)

    def _check_inputs(self, xs: tuple) -> tuple[list[np.ndarray], int | None, bool]:
        ins = self._inputs
        if len(xs) != len(ins):
            raise TfliteInputError(Status.ARGUMENT_ERROR, f"the model takes {len(ins)} input(s) "
                                   f"({', '.join(f'{t.dtype.name}{list(t.shape)}' for t in ins)}), got {len(xs)}",
                                   expected=len(ins))
        out: list[np.ndarray] = []
        batch: int | None = None
        replace = False  # the batch axis replaced the model's batch of 1 (outputs drop it too)
        for j, (x, t) in enumerate(zip(xs, ins)):
            if type(x) is np.ndarray and x.dtype == t.dtype and x.shape == t.shape:
                out.append(x)  # the common case: one sample of the right dtype and shape (nothing to check)
                continue
            try:
                a = np.asarray(x)
            except Exception as e:  # noqa: BLE001 - any object that is no array
                raise TfliteInputError(Status.TYPE_MISMATCH, f"input {j}: not an array ({type(x).__name__}: {e})",
                                       expected=t.dtype.name) from None
            a = self._cast(j, a, t)
            shape = t.shape
            if a.shape == shape:
                n = None
            elif a.ndim == len(shape) + 1 and a.shape[1:] == shape and a.shape[0] > 0 and shape and shape[0] == 1:
                n, a = a.shape[0], a.reshape((a.shape[0],) + shape)
            elif shape and shape[0] == 1 and a.ndim == len(shape) and a.shape[1:] == shape[1:] and a.shape[0] > 0:
                n, a = a.shape[0], a.reshape((a.shape[0],) + shape)
                replace = True
            else:
                more = f" or (N, {', '.join(map(str, shape[1:]))})" if shape and shape[0] == 1 else ""
                raise TfliteInputError(Status.SHAPE_MISMATCH, f"input {j} ({t.name}): shape {a.shape}, expected "
                                       f"{shape}{more}", expected=shape)
            if n is not None:
                if batch is not None and batch != n:
                    raise TfliteInputError(Status.SHAPE_MISMATCH, f"input {j}: batch of {n}, input 0 has {batch}",
                                           expected=batch)
                batch = n
            out.append(a)
        if batch is not None:  # a batched call: unbatched inputs repeat for every sample
            out = [a if a.shape[:1] == (batch,) and a.ndim == len(t.shape) + 1 else np.broadcast_to(a, (batch,) + a.shape)
                   for a, t in zip(out, ins)]
        return out, batch, replace

    def _cast(self, j: int, a: np.ndarray, t: TTensor) -> np.ndarray:
        want = t.dtype
        if a.dtype == want:
            return a
        if want.kind == "f":
            if a.dtype.kind != "f":
                raise TfliteInputError(Status.TYPE_MISMATCH, f"input {j} ({t.name}): dtype {a.dtype}, expected "
                                       f"{want.name}", expected=want.name)
            return a.astype(want)
        if a.dtype.kind == "f":
            raise TfliteInputError(Status.TYPE_MISMATCH, f"input {j} ({t.name}): dtype {a.dtype}: the model takes "
                                   f"{want.name} (it does not start with QUANTIZE; quantise with the input's scale "
                                   f"{t.s:.6g} and zero point {t.zp})", expected=want.name)
        if a.dtype.kind not in "iu" or want.kind not in "iu":
            raise TfliteInputError(Status.TYPE_MISMATCH, f"input {j} ({t.name}): dtype {a.dtype}, expected "
                                   f"{want.name}", expected=want.name)
        info = np.iinfo(want)
        if a.size and (int(a.min()) < info.min or int(a.max()) > info.max):
            raise TfliteInputError(Status.TYPE_MISMATCH, f"input {j} ({t.name}): values outside {want.name} "
                                   f"[{info.min}, {info.max}]", expected=want.name)
        return a.astype(want)

    def _run(self, xs: tuple, *, platform: Platform | str | None, capture: bool,
             state: dict[int, np.ndarray] | None) -> Any:
        if platform is None and not capture and not self._large and len(xs) == 1 == len(self._in_types):
            # the commonest case: one input array of the model's dtype and shape, one sample, nothing to
            # check or convert, no context to enter (each costs a few us)
            x, (dt, shape) = xs[0], self._in_types[0]
            if type(x) is np.ndarray and x.dtype == dt and x.shape == shape:
                vals = self._invoke(xs, {} if state is None else state, keep=False)
                outs = [vals[ti] for ti in self.graph.outputs]
                return outs[0] if len(outs) == 1 else tuple(outs)
        current = get_platform()
        plat = current if platform is None else resolve_platform(platform)
        arrays, batch, replace = self._check_inputs(xs)
        if batch is None and not capture and plat is current and not self._large:
            # the common case: one sample, no context to enter (each costs a few us)
            vals = self._invoke(arrays, {} if state is None else state, keep=False)
            outs = [vals[ti] for ti in self.graph.outputs]
            return outs[0] if len(outs) == 1 else tuple(outs)
        fresh = state is None
        # the platform and BLAS contexts only where they change something (entering costs a few us)
        with use_platform(plat) if plat is not current else contextlib.nullcontext(), self._blas():
            if batch is None:
                results = [self._invoke(arrays, {} if fresh else state, keep=capture)]  # type: ignore[arg-type]
                outs = [results[0][ti] for ti in self.graph.outputs]
            elif fresh and self.batchable:
                vals = self._invoke_batch(arrays, batch, keep=capture)
                outs = [vals[ti] for ti in self.graph.outputs]
                results = [{k: v[n] for k, v in vals.items()} for n in range(batch)] if capture else []
            else:  # variable tensors carried from sample to sample (or reset for each): one Invoke per sample
                results = [self._invoke([a[n] for a in arrays], {} if fresh else state, keep=capture)  # type: ignore[arg-type]
                           for n in range(batch)]
                outs = [np.stack([r[ti] for r in results]) for ti in self.graph.outputs]
        if batch is not None and replace:
            outs = [y.reshape((batch,) + y.shape[2:]) if y.ndim > 1 and y.shape[1] == 1 else y for y in outs]
        y: Any = outs[0] if len(outs) == 1 else tuple(outs)
        if capture:
            return y, TflmRun(results, batch is not None, plat)
        return y

    def _blas(self) -> Any:
        """One BLAS thread for the whole run when a step is large enough for BLAS to thread it (switching
        once per run instead of around every kernel's product)."""
        return blas_single_thread() if self._large else contextlib.nullcontext()

    def _args(self, op: TOp, vals: dict[int, np.ndarray], state: dict[int, np.ndarray]) -> list:
        T = self.graph.tensors
        args: list = []
        for i in op.inputs:
            if i < 0:
                args.append(None)
            elif T[i].data is not None:
                args.append(T[i].data)
            elif T[i].variable:
                args.append(state[i])
            else:
                args.append(vals[i])
        return args

    def _invoke_batch(self, inputs: list[np.ndarray], n: int, keep: bool = True) -> dict[int, np.ndarray]:
        """N Invokes of a model without state, step by step: every activation with a leading axis N
        (``keep=False``: each intermediate tensor is dropped after its last reader)."""
        g = self.graph
        T = g.tensors
        vals: dict[int, np.ndarray] = {ti: x for ti, x in zip(g.inputs, inputs)}
        for s, mask, dead in zip(self.steps, self._batched, self._dead):
            op = s.op
            args = self._args(op, vals, {})
            if s.invoke_batch is not None:
                outs = _step_call(op, s.invoke_batch, args, n)
            else:
                outs = _step_call(op, _per_sample, s.invoke, args, mask, n)
            for ti, v in zip(op.outputs, outs):
                if ti >= 0:
                    vals[ti] = np.asarray(v).reshape((n,) + T[ti].shape)
            if not keep:
                for ti in dead:
                    vals.pop(ti, None)
        return vals

    def _make_plan(self) -> None:
        """Per step, what :meth:`_invoke` does: (its call, the lookup of its arguments in the run's values
        (a tensor index for one input, else an ``operator.itemgetter``), one input, its one output
        ((tensor, shape), or None), its kept outputs ((tensor, shape) pairs, or None when an output is
        omitted), its tensors dropped after it, the step)."""
        self._plan = []
        for s, call, kept, drop in zip(self.steps, self._calls, self._outs, self._drops):
            ins = s.op.inputs
            get = ins[0] if len(ins) == 1 else operator.itemgetter(*ins) if ins else _no_inputs
            whole = len(kept) == len(s.op.outputs)
            self._plan.append((call, get, len(ins) == 1, kept[0] if whole and len(kept) == 1 else None,
                               kept if whole else None, drop, s))

    def _invoke(self, inputs: list[np.ndarray], state: dict[int, np.ndarray], keep: bool = True
                ) -> dict[int, np.ndarray]:
        """One Invoke; returns the tensors' values (``keep=False``: intermediates dropped after their last
        reader, the graph outputs kept; a model with small intermediates keeps them all)."""
        g = self.graph
        vals: dict[int, Any] = self._consts.copy()
        for (ti, shape), x in zip(self._in_shapes, inputs):
            if type(x) is not np.ndarray or x.shape != shape or not x.flags.c_contiguous:
                x = np.ascontiguousarray(x).reshape(shape)
            vals[ti] = x
        for ti, r in self._resets:
            v = state.get(ti)
            if v is None:
                state[ti] = v = r
            vals[ti] = v
        stateful = self._stateful
        if stateful:
            ex = g.extra
            ex["op_state"] = state  # operators' internal state (signal ops), carried like variables
            ex.pop("state", None)
        for call, get, one, out1, kept, drop, s in self._plan:
            try:  # _step_call inlined (a call less per operator)
                outs = call([vals[get]] if one else [*get(vals)])
            except TfliteError:
                raise
            except MliError as e:
                raise TfliteError(e.status, f"operator {s.op.index} ({s.op.name}): {e}") from None
            if out1 is not None:  # the one output (most operators)
                ti, shape = out1
                v = outs[0]
                if type(v) is not np.ndarray or v.shape != shape:
                    v = np.asarray(v).reshape(shape)
                vals[ti] = v
            elif kept is not None:  # every output kept (no omitted -1 output)
                for (ti, shape), v in zip(kept, outs):
                    if type(v) is not np.ndarray:
                        v = np.asarray(v)
                    vals[ti] = v if v.shape == shape else v.reshape(shape)
            else:
                T = g.tensors
                for ti, v in zip(s.op.outputs, outs):
                    if ti >= 0:
                        v = np.asarray(v)
                        vals[ti] = v if v.shape == T[ti].shape else v.reshape(T[ti].shape)
            if stateful and "state" in ex:  # variable tensors the step replaced (SVDF, LSTM)
                for ti, v in ex.pop("state").items():
                    state[ti] = v
                    vals[ti] = v
            if drop and not keep:
                for ti in drop:
                    vals.pop(ti, None)
        if self._unchecked:
            self._direct_calls()
        return vals

    def _direct_calls(self) -> None:
        """The offloaded steps whose first Invoke is done: a single-sample run calls their kernels directly."""
        for k, off in self._unchecked:
            if off.direct is not None:
                self._calls[k] = off.direct
        self._unchecked = [(k, off) for k, off in self._unchecked if not off.checked]
        self._make_plan()

    def run_step(self, step: Step, args: list, *, platform: Platform | str | None = None) -> list[np.ndarray]:
        """One prepared operator alone on given input arrays (``pymli compare``'s own error).

        Args:
            step: one of :attr:`steps`.
            args: its input arrays (None for omitted inputs; constants included).
            platform: the MLI platform (None: the current one, no context entered).

        Returns:
            its output arrays.
        """
        with use_platform(resolve_platform(platform)) if platform is not None else contextlib.nullcontext():
            self.graph.extra.pop("state", None)
            outs = step.invoke(args)  # type: ignore[misc]
            self.graph.extra.pop("state", None)
            return outs

    def tensor_values(self, run: TflmRun, index: int) -> np.ndarray | None:
        """TFLite tensor ``index`` as a captured run left it (stacked over the samples of a batched run).

        Args:
            run: from ``run(..., capture=True)``.
            index: TFLite tensor index.

        Returns:
            the values in the tensor's shape (constants: their data), or None if never computed.
        """
        if not 0 <= index < len(self.graph.tensors):
            return None
        t = self.graph.tensors[index]
        vs = [r.get(index, t.data) for r in run.values]
        if any(v is None for v in vs):
            return None
        return np.stack(vs) if run.batched else vs[0]

    def describe(self) -> list[dict[str, Any]]:
        """One row per operator: index, name, input/output tensors, mapping (MLI function or reference)."""
        T = self.graph.tensors
        return [{"index": s.op.index, "op": s.op.name,
                 "inputs": [f"{i}:{T[i].dtype.name}{list(T[i].shape)}{'(c)' if T[i].data is not None else ''}"
                            for i in s.op.inputs if i >= 0],
                 "outputs": [f"{i}:{T[i].dtype.name}{list(T[i].shape)}" for i in s.op.outputs if i >= 0],
                 "mapping": s.function or "reference (TFLM)"} for s in self.steps]


def _buffer_plan(g: TGraph, steps: list[Step]) -> list[list[int]]:
    """Per step, the computed tensors no later step reads and no graph output is: a run that captures
    nothing drops them after that step."""
    last: dict[int, int] = {}
    for k, s in enumerate(steps):
        for i in list(s.op.inputs) + list(s.op.outputs):
            if i >= 0 and g.tensors[i].data is None and not g.tensors[i].variable:
                last[i] = k
    keep = set(g.outputs) | set(g.inputs)
    dead: list[list[int]] = [[] for _ in steps]
    for i, k in last.items():
        if i not in keep:
            dead[k].append(i)
    return dead


def _macs(g: TGraph, op: TOp) -> int:
    """Multiply-accumulates of one Invoke of a MAC operator (0 for the others)."""
    T = g.tensors
    if not op.inputs or op.inputs[0] < 0 or not op.outputs or op.outputs[0] < 0:
        return 0
    o = T[op.outputs[0]]
    if op.name == "UNIDIRECTIONAL_SEQUENCE_LSTM":
        x = T[op.inputs[0]]
        steps = int(np.prod(x.shape[:-1])) if x.shape else 1
        return steps * sum(int(np.prod(T[i].shape)) for i in op.inputs[1:9] if i >= 0)
    if op.name not in _WEIGHTED + ("TRANSPOSE_CONV",) or len(op.inputs) < 2 or op.inputs[1] < 0:
        return 0
    w = T[op.inputs[1]]
    size = int(np.prod(w.shape))
    if op.name == "FULLY_CONNECTED":
        n_x = int(np.prod(T[op.inputs[0]].shape))
        return n_x // max(w.shape[-1], 1) * size
    if op.name == "TRANSPOSE_CONV":
        return int(np.prod(T[op.inputs[2]].shape[:-1])) * size
    return int(np.prod(o.shape[:-1])) * size


def _defects(g: TGraph, step: Step) -> list[arc_mli.GlueDefect]:
    op = step.op
    T = g.tensors
    o = T[op.outputs[0]]
    act = _act(op)
    lo, hi = activation_range(act, o.s, o.zp, o.dtype)
    roles = {"input": op.inputs[0], "output": op.outputs[0]}
    if op.name in _WEIGHTED:
        roles.update(weights=op.inputs[1], bias=op.inputs[2])
    elif op.name == "ADD":
        roles.update(input2=op.inputs[1])
    return arc_mli.glue_defects(op.name, op_index=op.index, act=act, act_min=lo, act_max=hi,
                                tensors={r: (i, T[i].scale, len(T[i].shape)) for r, i in roles.items()})


def load_tflm(data: bytes, *, adapted: bool | None = None) -> TflmModel:
    """Prepare a model (its bytes, already validated by :func:`pymli.tflite.reader.read_model`) for TFLM + arc_mli.

    Args:
        data: the model bytes.
        adapted: the weights are in the ARC adaptation layout (None: recognised from the shapes).

    Returns:
        the :class:`TflmModel`.

    Raises:
        TfliteUnsupported: an operator without a TFLM reference kernel in pymli (a CUSTOM operator, ...).
        TfliteLayoutError: the weights' layout is ambiguous or inconsistent.
        TfliteFormatError: the graph is inconsistent.
    """
    g = read_graph(data)
    is_adapted = adapted_layout(g, adapted)
    if is_adapted:
        g = _to_tflite_layout(g)
    steps: list[Step] = []
    defects: list[arc_mli.GlueDefect] = []
    for op in g.ops:
        fn = offload_function(g, op)
        if fn is not None:
            mli = _prepare_mli(g, op, fn)
            off = _OffloadedStep(mli, g, op)
            step = Step(op, fn, None, mli, off.one, off.many)
            defects += _defects(g, step)
        else:
            h = HANDLERS.get(op.name)
            if h is None:
                why = ("a CUSTOM operator: pymli has no kernel for it" if op.name.startswith("CUSTOM")
                       else "no TFLM reference kernel in pymli for this operator")
                raise TfliteUnsupported(op.index, op.name, why)
            inv = prepare_op(g, op)
            step = Step(op, None, h, None, inv, _whole_batch(inv) if batch_elementwise(g, op) else None)
        steps.append(step)
    m = TflmModel(data, g, steps, is_adapted, defects)
    if defects:
        warnings.warn("TFLM's arc_mli glue code would compute differently on the device; pymli computes what "
                      "arc_mli intends:\n  " + "\n  ".join(m.warnings), TfliteWarning, stacklevel=3)
    return m

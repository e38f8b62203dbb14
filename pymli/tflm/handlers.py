"""One handler per TFLite builtin operator: TFLM's Prepare (parameters from quantisation and options)
followed by its reference integer kernel from :mod:`pymli.tflm`.

``handler(graph, op, inputs) -> list[np.ndarray]``: ``graph`` gives the tensors' dtype, shape and
quantisation (``graph.tensors[i]``: ``.dtype``, ``.shape``, ``.scale`` (float32 array), ``.zero_point``,
``.s`` / ``.zp`` per tensor), ``op`` the builtin name, tensor indices and options (``tflite`` package
option tables), ``inputs`` the input arrays (None for an omitted optional input). This is what the
importer's registry calls on the ``mapping="tflm"`` reference path.

Prepared form (:func:`prepare_op`): ``prepare(graph, op) -> invoke``, ``invoke(inputs) -> outputs``.
The operators of :data:`PREPARE` derive their parameters (multipliers, shifts, tables, LSTM weights)
once in ``prepare``; their handler is ``prepare(graph, op)(inputs)``, so both forms compute the same.
Small operators also get their per-call work derived once there (a run of a small model is mostly
per-call overhead): int8 / int16 unary operators as a table of their results, CONV_2D /
DEPTHWISE_CONV_2D / TRANSPOSE_CONV with constant weights as one matrix product
(:func:`pymli.tflm.conv.prepare_mac`), SVDF's weights and zero-point corrections, ADD / SUB tables,
MEAN / SUM counts and multipliers, STRIDED_SLICE's source indices, SOFTMAX's tables; an input of
another shape than the graph's takes the kernel's general path.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..errors import MliError, Status
from . import activations, conv, elementwise, index_ops, lstm, misc, quantize, reduce, shape_ops, svdf
from . import quant_util as qu
from .common import activation_range
from .quant_util import quantize_multiplier, quantize_multipliers
from .signal import HANDLERS as _SIGNAL_HANDLERS  # the TFLM signal-library CUSTOM:Signal* operators

__all__ = ["HANDLERS", "PREPARE", "STATEFUL", "run_op", "prepare_op", "batch_elementwise", "conv_params",
           "per_channel_multipliers"]

Handler = Callable[[Any, Any, list], list]
Invoke = Callable[[list], list]
Prepare = Callable[[Any, Any], Invoke]
_TFLITE_INT32 = 2  # tflite.TensorType.INT32 (the schema's enum value)
HANDLERS: dict[str, Handler] = {}
HANDLERS.update(_SIGNAL_HANDLERS)
PREPARE: dict[str, Prepare] = {}
STATEFUL = frozenset(_SIGNAL_HANDLERS)
"""Operators with state of their own between Invokes (the signal library's)."""

#: Operators whose prepared Invoke works on any leading axes of same-shaped inputs (element-wise, or
#: along the last axis only): a batched run passes the whole batch in one call.
_ELEMENTWISE = frozenset({"QUANTIZE", "DEQUANTIZE", "LOGISTIC", "TANH", "RELU", "RELU6", "LEAKY_RELU",
                          "HARD_SWISH", "ABS", "ADD", "SUB", "MUL", "MINIMUM", "MAXIMUM", "SQUARED_DIFFERENCE",
                          "SOFTMAX"})


def _reg(*names: str) -> Callable[[Handler], Handler]:
    def deco(f: Handler) -> Handler:
        for n in names:
            HANDLERS[n] = f
        return f
    return deco


def _prep(*names: str) -> Callable[[Prepare], Prepare]:
    """Register a prepare function; the handler of the same names runs ``prepare(graph, op)(inputs)``."""
    def deco(p: Prepare) -> Prepare:
        def handler(graph: Any, op: Any, ins: list) -> list:
            return p(graph, op)(ins)
        for n in names:
            PREPARE[n] = p
            HANDLERS[n] = handler
        return p
    return deco


def prepare_op(graph: Any, op: Any) -> Invoke:
    """TFLM's Prepare of ``op``: its Invoke with every parameter derived once.

    Args:
        graph: the parsed graph (constant inputs hold their data).
        op: the operator.

    Returns:
        ``invoke(inputs) -> outputs``. An operator whose Prepare refuses its tensors gets the
        unprepared handler, which raises the same error on every Invoke (as TFLM's Invoke would fail).

    Raises:
        MliError: NOT_SUPPORTED for an operator without a handler.
    """
    h = HANDLERS.get(op.name)
    if h is None:
        raise MliError(Status.NOT_SUPPORTED, f"no TFLM reference handler for {op.name}")
    p = PREPARE.get(op.name)
    invoke: Invoke | None = None
    if p is not None:
        try:
            invoke = p(graph, op)
        except Exception:  # noqa: BLE001 - the handler raises it again on every Invoke, where it belongs
            invoke = None
    if invoke is None:
        def invoke(ins: list) -> list:
            return h(graph, op, ins)
    return _int8_table(graph, op, invoke) or invoke


#: Element-wise operators of one input whose output element depends on that input element alone.
_UNARY = frozenset({"QUANTIZE", "DEQUANTIZE", "LOGISTIC", "TANH", "RELU", "RELU6", "LEAKY_RELU", "HARD_SWISH",
                    "ABS", "RSQRT", "ELU"})


def _int8_table(graph: Any, op: Any, invoke: Invoke) -> Invoke | None:
    """An int8- or int16-input operator of :data:`_UNARY` as a lookup in the table of its 256 / 65536
    results (computed by ``invoke`` itself, so the same values), or None (another operator, or one that
    refuses some input value)."""
    T = graph.tensors
    ins = [i for i in op.inputs if i >= 0]
    if (op.name not in _UNARY or len(ins) != 1 or len(op.outputs) != 1 or T[ins[0]].data is not None
            or T[ins[0]].dtype not in _TABLE_INDEX):
        return None
    dt = T[ins[0]].dtype
    index = _TABLE_INDEX[dt]
    try:
        table = np.asarray(invoke([np.arange(1 << (8 * dt.itemsize), dtype=index).view(dt)])[0])
    except Exception:  # noqa: BLE001 - a value the operator refuses: keep computing element by element
        return None
    if table.shape != (1 << (8 * dt.itemsize),):
        return None
    table.flags.writeable = False
    take = table.take  # the method: np.take's Python wrapper costs ~0.5 us a call

    def lookup(ins: list) -> list:
        x = ins[0]
        if type(x) is not np.ndarray:
            x = np.asarray(x)
        return [take(x.view(index))]
    return lookup


#: The input dtypes :func:`_int8_table` tabulates, and the unsigned view that indexes the table.
_TABLE_INDEX = {np.dtype(np.int8): np.uint8, np.dtype(np.int16): np.uint16}


def batch_elementwise(graph: Any, op: Any) -> bool:
    """Whether the prepared Invoke of ``op`` takes a leading batch axis on its activation inputs as it is:
    an element-wise operator (or SOFTMAX, along the last axis) whose non-constant inputs have the output's
    shape (broadcasting then lines up) and one output, FULLY_CONNECTED with constant weights (a batch
    is more rows), or PAD / PADV2 with constant paddings and value.

    Args:
        graph: the graph. op: the operator.

    Returns:
        True when a batch can go through in one call.
    """
    T = graph.tensors
    if op.name == "FULLY_CONNECTED":  # rows are independent: a batch is more rows
        return len(T[op.outputs[0]].shape) > 1 and all(i < 0 or T[i].data is not None for i in op.inputs[1:])
    if op.name in ("PAD", "PADV2"):  # constant paddings of the trailing axes
        return all(i < 0 or T[i].data is not None for i in op.inputs[1:])
    if op.name not in _ELEMENTWISE or len(op.outputs) != 1:
        return False
    shape = T[op.outputs[0]].shape
    return all(i < 0 or T[i].data is not None or T[i].shape == shape for i in op.inputs)


def _int8_io(graph: Any, op: Any, name: str) -> tuple[Any, Any]:
    """The first input and output tensors of an operator that TFLM runs on int8 only.

    Raises:
        MliError: NOT_SUPPORTED when the input is not int8.
    """
    x, o = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if x.dtype != np.int8:
        raise MliError(Status.NOT_SUPPORTED, f"{name} {x.dtype}")
    return x, o


def run_op(graph: Any, op: Any, inputs: list) -> list:
    """Dispatch ``op`` to its handler.

    Args:
        graph: the parsed graph (:class:`pymli.testing.tflm_golden.TGraph` or the same interface).
        op: the operator (``.name``, ``.inputs``, ``.outputs``, ``.options``).
        inputs: input arrays (None for omitted optional inputs).

    Returns:
        output arrays, one per ``op.outputs``.

    Raises:
        MliError: operator without a handler (NOT_SUPPORTED) or a misuse.
    """
    h = HANDLERS.get(op.name)
    if h is None:
        raise MliError(Status.NOT_SUPPORTED, f"no TFLM reference handler for {op.name}")
    return h(graph, op, inputs)


def per_channel_multipliers(in_scale: float, w_scales: np.ndarray, out_scale: float
                            ) -> tuple[np.ndarray, np.ndarray]:
    """TFLM ``PopulateConvolutionQuantizationParams``: per channel
    ``QuantizeMultiplier(double(in_s) * double(w_s[c]) / double(out_s))``.

    Args:
        in_scale: input scale (float32 value).
        w_scales: filter scales (float32), one per channel or one.
        out_scale: output scale (float32 value).

    Returns:
        ``(multiplier, shift)`` int64 arrays.
    """
    eff = float(np.float32(in_scale)) * np.asarray(w_scales, np.float32).astype(np.float64) \
        / float(np.float32(out_scale))
    return quantize_multipliers(eff)


def conv_params(graph: Any, op: Any) -> dict:
    """Common requantisation parameters of CONV_2D / DEPTHWISE_CONV_2D / TRANSPOSE_CONV.

    Args:
        graph: the graph.
        op: the operator (input 0 or 2 data, input 1 filter).

    Returns:
        dict with input_zp, output_zp, multiplier, shift, act_min, act_max.
    """
    xi, wi = (2, 1) if op.name == "TRANSPOSE_CONV" else (0, 1)
    x, w, o = (graph.tensors[op.inputs[xi]], graph.tensors[op.inputs[wi]],
               graph.tensors[op.outputs[0]])
    nch = o.shape[-1]
    ws = w.scale if w.scale.size > 1 else np.repeat(w.scale, nch)
    m, s = per_channel_multipliers(x.s, ws, o.s)
    act = op.options.FusedActivationFunction() if hasattr(op.options, "FusedActivationFunction") else 0
    lo, hi = activation_range(act, o.s, o.zp, o.dtype)
    return dict(input_zp=x.zp, output_zp=o.zp, multiplier=m, shift=s, act_min=lo, act_max=hi)


def _conv_options(graph: Any, op: Any) -> dict[str, Any]:
    """Stride, dilation and padding of a CONV_2D / DEPTHWISE_CONV_2D, with its quantisation parameters."""
    o = op.options
    return dict(stride=(o.StrideH(), o.StrideW()), dilation=(o.DilationHFactor(), o.DilationWFactor()),
                same=o.Padding() == 0, **conv_params(graph, op))


def _prepared_mac(graph: Any, op: Any, xi: int, acc: Callable[[np.ndarray, np.ndarray], np.ndarray], kw: dict,
                  invoke: Invoke) -> Invoke:
    """``invoke`` of a CONV_2D / DEPTHWISE_CONV_2D / TRANSPOSE_CONV (activations input ``xi``, filter input 1,
    bias the next input), or, with constant weights and bias, its :func:`pymli.tflm.conv.prepare_mac` form
    for inputs of the graph's shape (``acc(xs, w)``: the kernel's exact sums), others going to ``invoke``."""
    T = graph.tensors
    x, wt = T[op.inputs[xi]], T[op.inputs[1]]
    bi = 2 if xi == 0 else 3
    bt = T[op.inputs[bi]] if len(op.inputs) > bi and op.inputs[bi] >= 0 else None
    if wt.data is None or (bt is not None and bt.data is None) or x.dtype not in (np.int8, np.int16) \
            or wt.dtype != np.int8 or not x.shape:
        return invoke
    b = None if bt is None else bt.data
    wide = x.dtype == np.int16
    if wide and b is not None and b.dtype == np.int16:
        b = b.astype(np.int64)  # TRANSPOSE_CONV's int64 scratch (the convolutions refuse an int16 bias)
    bits = 64 if wide and (b is None or b.dtype == np.int64) else 32
    w = wt.data
    mac = conv.prepare_mac(lambda xs: acc(xs, w), x.shape, x.dtype, T[op.outputs[0]].shape,
                           input_zp=0 if wide else kw["input_zp"],
                           bias=b, bits=bits, multiplier=kw["multiplier"], shift=kw["shift"],
                           output_zp=0 if wide else kw["output_zp"], act_min=kw["act_min"], act_max=kw["act_max"])
    if mac is None:
        return invoke
    shape = tuple(x.shape)

    def prepared(ins: list) -> list:
        xv = ins[xi]
        if xv.shape != shape or xv.dtype != x.dtype:
            return invoke(ins)
        return [mac(xv)]
    return prepared


@_prep("CONV_2D")
def _conv2d(graph: Any, op: Any) -> Invoke:
    kw = _conv_options(graph, op)

    def invoke(ins: list) -> list:
        return [conv.conv2d(ins[0], ins[1], ins[2] if len(ins) > 2 else None, **kw)]
    return _prepared_mac(graph, op, 0, lambda xs, w: conv._conv2d_acc(xs, w, kw["stride"], kw["dilation"],
                                                                      kw["same"]), kw, invoke)


@_prep("DEPTHWISE_CONV_2D")
def _dwconv(graph: Any, op: Any) -> Invoke:
    T = graph.tensors
    x, w = T[op.inputs[0]], T[op.inputs[1]]
    bt = T[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    if x.dtype == np.int16 and bt is not None and bt.dtype != np.int64:
        raise MliError(Status.NOT_SUPPORTED, f"DEPTHWISE_CONV_2D 16x8 with a {bt.dtype} bias: TFLM "
                       "reads the bias buffer as int64 whatever its type")
    kw = dict(depth_multiplier=w.shape[3] // x.shape[3], **_conv_options(graph, op))

    def invoke(ins: list) -> list:
        return [conv.depthwise_conv2d(ins[0], ins[1], ins[2] if len(ins) > 2 else None, **kw)]
    return _prepared_mac(graph, op, 0, lambda xs, w: conv._depthwise_acc(
        xs, w, kw["depth_multiplier"], kw["stride"], kw["dilation"], kw["same"]), kw, invoke)


@_prep("TRANSPOSE_CONV")
def _tconv(graph: Any, op: Any) -> Invoke:
    o = op.options
    T = graph.tensors
    x = T[op.inputs[2]]
    bt = T[op.inputs[3]] if len(op.inputs) > 3 and op.inputs[3] >= 0 else None
    widen = False
    if x.dtype == np.int16 and bt is not None:
        if bt.dtype == np.int16:
            widen = True  # TFLM widens an int16 bias into an int64 scratch buffer
        elif bt.dtype != np.int64:
            raise MliError(Status.NOT_SUPPORTED, f"TRANSPOSE_CONV 16x8 with a {bt.dtype} bias: TFLM "
                           "reads the bias buffer as int64 unless it is int16")
    kw = dict(stride=(o.StrideH(), o.StrideW()), same=o.Padding() == 0, **conv_params(graph, op))

    def invoke(ins: list) -> list:
        shape, w, xv = ins[0], ins[1], ins[2]
        b = ins[3] if len(ins) > 3 else None
        if widen and b is not None:
            b = b.astype(np.int64)
        oshape = tuple(int(v) for v in np.asarray(shape).reshape(-1))
        return [conv.transpose_conv(xv, w, b, output_hw=oshape[1:3], **kw)]
    st = T[op.inputs[0]]
    if st.data is None or (x.dtype == np.int16 and bt is not None and bt.dtype not in (np.int16, np.int64)):
        return invoke
    hw = tuple(int(v) for v in np.asarray(st.data).reshape(-1))[1:3]
    return _prepared_mac(graph, op, 2, lambda xs, w: conv._transpose_acc(xs, w, hw, kw["stride"], kw["same"]),
                         kw, invoke)


def fc_params(graph: Any, op: Any) -> dict:
    """TFLM ``CalculateOpDataFullyConnected``: per tensor the multiplier of
    ``double(float32(in_s * w_s)) / double(out_s)``; per channel as the convolutions.

    Args:
        graph: the graph.
        op: the FULLY_CONNECTED operator.

    Returns:
        dict with input_zp, output_zp, multiplier, shift, act_min, act_max.
    """
    x, w, o = (graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]],
               graph.tensors[op.outputs[0]])
    if w.scale.size > 1:
        m, s = per_channel_multipliers(x.s, w.scale, o.s)
    else:
        prod = np.float32(x.s) * np.float32(w.s)  # a float32 product in GetQuantizedConvolutionMultipler
        mm, ss = quantize_multiplier(float(prod) / float(np.float32(o.s)))
        m, s = np.int64(mm), np.int64(ss)
    act = op.options.FusedActivationFunction() if op.options is not None else 0
    lo, hi = activation_range(act, o.s, o.zp, o.dtype)
    return dict(input_zp=x.zp, output_zp=o.zp, multiplier=m, shift=s, act_min=lo, act_max=hi)


@_prep("FULLY_CONNECTED")
def _fc(graph: Any, op: Any) -> Invoke:
    T = graph.tensors
    x, w = T[op.inputs[0]], T[op.inputs[1]]
    has_bias = len(op.inputs) > 2 and op.inputs[2] >= 0
    o = op.options
    zero_bias = (not has_bias and x.dtype == np.int16 and o is not None
                 and o.QuantizedBiasType() == _TFLITE_INT32)  # TFLM: int32 accumulator as the bias type says
    kw = fc_params(graph, op)
    units, shape = w.shape[0], T[op.outputs[0]].shape

    def invoke(ins: list) -> list:
        b = ins[2] if len(ins) > 2 else None
        if b is None and zero_bias:
            b = np.zeros(units, np.int32)
        y = conv.fully_connected(ins[0], ins[1], b, **kw)
        return [y.reshape((-1,) + shape[1:]) if len(shape) > 1 else y.reshape(shape)]
    return invoke


@_reg("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
def _reshape(graph: Any, op: Any, ins: list) -> list:
    return [np.asarray(ins[0]).reshape(graph.tensors[op.outputs[0]].shape)]


@_reg("SHAPE")
def _shape(graph: Any, op: Any, ins: list) -> list:
    return [np.array(np.shape(ins[0]), graph.tensors[op.outputs[0]].dtype)]


@_reg("PACK")
def _pack(graph: Any, op: Any, ins: list) -> list:
    return [np.stack(ins, axis=op.options.Axis() % (np.ndim(ins[0]) + 1))]


@_reg("UNPACK")
def _unpack(graph: Any, op: Any, ins: list) -> list:
    ax = op.options.Axis() % np.ndim(ins[0])
    return [np.take(ins[0], i, axis=ax) for i in range(np.shape(ins[0])[ax])]


def _transpose(ins: list) -> list:
    return [np.transpose(ins[0], [int(v) for v in np.asarray(ins[1]).reshape(-1)])]


@_prep("TRANSPOSE")
def _transpose_prepared(graph: Any, op: Any) -> Invoke:
    pt = graph.tensors[op.inputs[1]]
    if pt.data is None:
        return _transpose
    perm = tuple(int(v) for v in np.asarray(pt.data).reshape(-1))  # constant: read once

    def invoke(ins: list) -> list:
        x = ins[0]
        if type(x) is not np.ndarray or x.ndim != len(perm):
            return _transpose(ins)  # (its error for a rank the permutation does not fit)
        return [x.transpose(perm)]
    return invoke


def _act(op: Any) -> int:
    o = op.options
    return o.FusedActivationFunction() if o is not None and hasattr(o, "FusedActivationFunction") else 0


def _int32_range(act: int) -> tuple[int, int]:
    """TFLM ``CalculateActivationRange<int32_t>`` of an unquantised int32 operator (real bounds)."""
    return {1: (0, 2**31 - 1), 2: (-1, 1), 3: (0, 6)}.get(act, (-(2**31), 2**31 - 1))


@_prep("ADD", "SUB")
def _add_sub(graph: Any, op: Any) -> Invoke:
    a, b, o = (graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]],
               graph.tensors[op.outputs[0]])
    sub = op.name == "SUB"
    if o.dtype == np.int32:
        # TFLM's int32 ADD ignores the fused activation (full int32 range); SUB applies it
        lo, hi = _int32_range(_act(op) if sub else 0)
        return lambda ins: [elementwise.add_sub_int32(ins[0], ins[1], sub=sub, act_min=lo, act_max=hi)]
    p = elementwise.add_sub_params(a.s, a.zp, b.s, b.zp, o.s, o.zp, int16=o.dtype == np.int16,
                                   sub=sub)
    lo, hi = activation_range(_act(op), o.s, o.zp, o.dtype)
    f = None
    if a.dtype == b.dtype == o.dtype and (a.data is None or b.data is None):
        f = elementwise.prepare_add_sub(p, o.dtype, act_min=lo, act_max=hi, sub=sub, const1=a.data, const2=b.data)
    if f is None:
        return lambda ins: [elementwise.add_sub(ins[0], ins[1], p, act_min=lo, act_max=hi, sub=sub)]
    shapes = (a.shape, b.shape)

    def invoke(ins: list) -> list:
        x1, x2 = ins[0], ins[1]
        if x1.dtype != a.dtype or x2.dtype != b.dtype or (a.data is not None and x1.shape != shapes[0]) \
                or (b.data is not None and x2.shape != shapes[1]):
            return [elementwise.add_sub(x1, x2, p, act_min=lo, act_max=hi, sub=sub)]
        return [f(x1, x2)]
    return invoke


@_prep("MUL")
def _mul(graph: Any, op: Any) -> Invoke:
    a, b, o = (graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]],
               graph.tensors[op.outputs[0]])
    if o.dtype == np.int32:
        lo, hi = _int32_range(_act(op))
        return lambda ins: [np.clip(qu.wrap(ins[0].astype(np.int64) * ins[1], 32), lo, hi).astype(np.int32)]
    m, s = elementwise.mul_params(a.s, b.s, o.s)
    lo, hi = activation_range(_act(op), o.s, o.zp, o.dtype)
    return lambda ins: [elementwise.mul(ins[0], ins[1], zp1=a.zp, zp2=b.zp, zpo=o.zp, multiplier=m, shift=s,
                                        act_min=lo, act_max=hi)]


@_reg("MINIMUM", "MAXIMUM")
def _minmax(graph: Any, op: Any, ins: list) -> list:
    return [elementwise.minimum_maximum(ins[0], ins[1], maximum=op.name == "MAXIMUM")]


@_prep("SOFTMAX")
def _softmax(graph: Any, op: Any) -> Invoke:
    x, o = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if x.dtype == np.int16:
        m, ls, el, rl = activations.softmax_int16_params(op.options.Beta(), x.s)
        return lambda ins: [activations.softmax_int16(ins[0], input_multiplier=m, input_left_shift=ls,
                                                      exp_lut=el, one_over_one_plus_x_lut=rl)]
    if x.dtype != np.int8:
        raise MliError(Status.NOT_SUPPORTED, f"SOFTMAX {x.dtype} input")
    m8, ls8, dmin = activations.softmax_params(op.options.Beta(), x.s)
    f = activations.prepare_softmax_int8(m8, ls8, dmin, o.dtype)
    return lambda ins: [f(ins[0])]


@_prep("LOGISTIC", "TANH")
def _logistic_tanh(graph: Any, op: Any) -> Invoke:
    x = graph.tensors[op.inputs[0]]
    tanh = op.name == "TANH"
    if x.dtype == np.int8:
        m, ls, r = activations.logistic_int8_params(x.s)
        f = activations.tanh_int8 if tanh else activations.logistic_int8
        return lambda ins: [f(ins[0], input_zp=x.zp, input_multiplier=m, input_left_shift=ls,
                              input_range_radius=r)]
    if x.dtype == np.int16:
        m16, ls16 = activations.int16_activation_params(x.s, tanh=tanh)
        if tanh:
            return lambda ins: [activations.tanh_int16(ins[0], m16, ls16)]
        return lambda ins: [activations.logistic_int16(ins[0], input_multiplier=m16, input_left_shift=ls16)]
    raise MliError(Status.NOT_SUPPORTED, f"{op.name} {x.dtype} input")


@_prep("LEAKY_RELU")
def _leaky(graph: Any, op: Any) -> Invoke:
    x, o = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    ma, sa, mi, si = activations.leaky_relu_params(x.s, op.options.Alpha(), o.s)
    return lambda ins: [activations.leaky_relu(ins[0], input_zp=x.zp, output_zp=o.zp, alpha_multiplier=ma,
                                               alpha_shift=sa, identity_multiplier=mi, identity_shift=si)]


@_prep("QUANTIZE")
def _quantize_prepared(graph: Any, op: Any) -> Invoke:
    x, o = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if x.dtype == np.float32:
        f = quantize.prepare_affine_quantize(scale=o.s, zero_point=o.zp, out_dtype=o.dtype)
        return lambda ins: [f(ins[0])]
    m, s = quantize.requantize_params(x.s, o.s)
    return lambda ins: [quantize.requantize(ins[0], input_zp=x.zp, output_zp=o.zp, multiplier=m, shift=s,
                                            out_dtype=o.dtype)]


@_reg("QUANTIZE")
def _quantize(graph: Any, op: Any, ins: list) -> list:
    x, o = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if x.dtype == np.float32:
        return [quantize.affine_quantize(ins[0], scale=o.s, zero_point=o.zp, out_dtype=o.dtype)]
    m, s = quantize.requantize_params(x.s, o.s)
    return [quantize.requantize(ins[0], input_zp=x.zp, output_zp=o.zp, multiplier=m, shift=s,
                                out_dtype=o.dtype)]


@_reg("DEQUANTIZE")
def _dequantize(graph: Any, op: Any, ins: list) -> list:
    x = graph.tensors[op.inputs[0]]
    return [quantize.dequantize(ins[0], scale=x.s, zero_point=x.zp)]


@_prep("PAD", "PADV2")
def _pad(graph: Any, op: Any) -> Invoke:
    T = graph.tensors
    x, o = T[op.inputs[0]], T[op.outputs[0]]
    pt = T[op.inputs[1]]
    vt = T[op.inputs[2]] if op.name == "PADV2" and len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    const_value = vt is None or vt.data is not None

    def value(ins: list) -> Any:
        if op.name == "PADV2" and len(ins) > 2 and ins[2] is not None:
            return np.asarray(ins[2]).reshape(-1)[0]
        return o.zp if o.dtype != np.float32 else 0.0

    if pt.data is None or not const_value:
        return lambda ins: [shape_ops.pad(ins[0], ins[1], value=value(ins))]
    p = np.asarray(pt.data, np.int64).reshape(-1, 2)
    if p.shape[0] != len(x.shape) or (p < 0).any():
        raise MliError(Status.BAD_FUNC_CFG, f"paddings {p.tolist()} for shape {x.shape}")
    inner = tuple(slice(int(b), int(b) + n) for (b, _), n in zip(p, x.shape))
    grow = tuple(int(b + e) for b, e in p)
    fill = value([None, None, vt.data if vt is not None else None])
    # one sample of the input's dtype and shape (a model's run): the output's shape and fill made once
    # (np.full's own conversion of the value), np.empty and ndarray.fill (np.full's Python costs ~1 us)
    shape1 = tuple(n + g for n, g in zip(x.shape, grow))
    fill1 = np.full((), fill, x.dtype)
    empty = np.empty

    def invoke(ins: list) -> list:
        xv = ins[0]
        if type(xv) is np.ndarray and xv.shape == x.shape and xv.dtype == x.dtype:
            out = empty(shape1, x.dtype)
            out.fill(fill1)
            out[inner] = xv
            return [out]
        xv = np.asarray(xv)
        lead = xv.ndim - len(inner)  # a batched run's leading axis
        out = np.full(xv.shape[:lead] + tuple(n + g for n, g in zip(xv.shape[lead:], grow)), fill, xv.dtype)
        out[(slice(None),) * lead + inner] = xv
        return [out]
    return invoke


@_prep("STRIDED_SLICE")
def _strided_slice(graph: Any, op: Any) -> Invoke:
    o = op.options
    T = graph.tensors
    oshape = T[op.outputs[0]].shape
    kw = dict(begin_mask=o.BeginMask(), end_mask=o.EndMask(), shrink_axis_mask=o.ShrinkAxisMask(),
              ellipsis_mask=o.EllipsisMask(), new_axis_mask=o.NewAxisMask(),
              offset=bool(o.Offset()) if hasattr(o, "Offset") else False)

    def invoke(ins: list) -> list:
        return [shape_ops.strided_slice(ins[0], ins[1], ins[2], ins[3], **kw).reshape(oshape)]
    x = T[op.inputs[0]]
    if any(T[i].data is None for i in op.inputs[1:4]) or not x.shape:
        return invoke
    # constant begin / end / strides: the slice's flat source indices, found by slicing the indices once
    flat = np.arange(int(np.prod(x.shape)), dtype=np.intp).reshape(x.shape)
    index = np.ascontiguousarray(invoke([flat] + [T[i].data for i in op.inputs[1:4]])[0])
    index.flags.writeable = False

    def prepared(ins: list) -> list:
        xv = ins[0]
        if xv.shape != x.shape:
            return invoke(ins)
        return [xv.take(index)]  # the method: np.take's Python wrapper costs ~0.5 us a call
    return prepared


@_reg("SLICE")
def _slice(graph: Any, op: Any, ins: list) -> list:
    return [shape_ops.slice_(ins[0], ins[1], ins[2])]


@_reg("CONCATENATION")
def _concat(graph: Any, op: Any, ins: list) -> list:
    o = graph.tensors[op.outputs[0]]
    if o.dtype == np.int8 and any(np.float32(graph.tensors[i].s) != np.float32(o.s)
                                  or graph.tensors[i].zp != o.zp for i in op.inputs):
        raise MliError(Status.NOT_SUPPORTED, "CONCATENATION int8 with an input scale or zero point "
                       "other than the output's (TFLM micro refuses it; int16 copies raw values)")
    return [shape_ops.concatenation(list(ins), op.options.Axis())]


@_prep("MEAN", "SUM")
def _mean(graph: Any, op: Any) -> Invoke:
    x, o, at = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]], graph.tensors[op.inputs[1]]
    m, s = reduce.mean_sum_params(x.s, o.s)
    keep, total = bool(op.options.KeepDims()), op.name == "SUM"

    def invoke(ins: list) -> list:
        return [reduce.mean_or_sum(ins[0], ins[1], input_zp=x.zp, output_zp=o.zp, multiplier=m, shift=s,
                                   keep_dims=keep, compute_sum=total).reshape(o.shape)]
    if at.data is None or not x.shape or x.dtype not in (np.int8, np.int16):
        return invoke
    f = reduce.prepare_mean_or_sum(x.shape, x.dtype, at.data, input_zp=x.zp, output_zp=o.zp, multiplier=m,
                                   shift=s, keep_dims=keep, compute_sum=total)

    def prepared(ins: list) -> list:
        xv = ins[0]
        if xv.shape != x.shape or xv.dtype != x.dtype:
            return invoke(ins)
        return [f(xv).reshape(o.shape)]
    return prepared


@_prep("AVERAGE_POOL_2D", "MAX_POOL_2D")
def _pool(graph: Any, op: Any) -> Invoke:
    o = op.options
    out = graph.tensors[op.outputs[0]]
    lo, hi = activation_range(_act(op), out.s, out.zp, out.dtype)
    f = reduce.average_pool if op.name == "AVERAGE_POOL_2D" else reduce.max_pool
    kw = dict(k=(o.FilterHeight(), o.FilterWidth()), stride=(o.StrideH(), o.StrideW()), same=o.Padding() == 0,
              act_min=lo, act_max=hi)
    return lambda ins: [f(ins[0], **kw)]


def _set_state(graph: Any, index: int, value: np.ndarray) -> None:
    """Record a variable tensor's new value (LSTM / SVDF state) in ``graph.extra["state"]``."""
    graph.extra.setdefault("state", {})[index] = value


@_prep("SVDF")
def _svdf(graph: Any, op: Any) -> Invoke:
    T = graph.tensors
    xt, wft, wtt, stt, o = (T[op.inputs[0]], T[op.inputs[1]], T[op.inputs[2]], T[op.inputs[4]],
                            T[op.outputs[0]])
    if xt.dtype != np.int8:
        raise MliError(Status.NOT_SUPPORTED, f"SVDF {xt.dtype} input")
    p = svdf.svdf_params(xt.s, xt.zp, wft.s, stt.s, stt.zp, wtt.s, o.s, o.zp)
    rank, state_index = op.options.Rank(), op.inputs[4]
    bt = T[op.inputs[3]] if len(op.inputs) > 3 and op.inputs[3] >= 0 else None
    if wft.data is not None and wtt.data is not None and (bt is None or bt.data is not None):
        step = svdf.prepare_svdf_int8(wft.data, wtt.data, None if bt is None else bt.data, p, rank=rank)
        shape = o.shape

        def invoke_prepared(ins: list) -> list:
            y, new = step(ins[0], ins[4])
            ex = graph.extra  # _set_state inlined (a call less per Invoke)
            st = ex.get("state")
            if st is None:
                ex["state"] = {state_index: new}
            else:
                st[state_index] = new
            return [y if y.shape == shape else y.reshape(shape)]
        return invoke_prepared

    def invoke(ins: list) -> list:
        x, wf, wt, b, st = ins[:5]
        y, new = svdf.svdf_int8(x, wf, wt, b, st, p, rank=rank)
        _set_state(graph, state_index, new)
        return [y.reshape(o.shape)]
    return invoke


_LSTM_WIN = {"input": 1, "forget": 2, "cell": 3, "output": 4}
_LSTM_WREC = {"input": 5, "forget": 6, "cell": 7, "output": 8}
_LSTM_BIAS = {"input": 12, "forget": 13, "cell": 14, "output": 15}


def _lstm_params(graph: Any, op: Any, ins: list) -> lstm.LstmParams:
    T = graph.tensors
    idx = op.inputs
    xt, ht, ct = T[idx[0]], T[idx[18]], T[idx[19]]
    o = op.options
    return lstm.lstm_params(
        input_scale=xt.s, input_zp=xt.zp, hidden_scale=ht.s, hidden_zp=ht.zp, cell_scale=ct.s,
        weights={g: (ins[_LSTM_WIN[g]], ins[_LSTM_WREC[g]]) for g in lstm.GATES},
        bias={g: ins[_LSTM_BIAS[g]] for g in lstm.GATES},
        w_in_scale={g: T[idx[_LSTM_WIN[g]]].s for g in lstm.GATES},
        w_rec_scale={g: T[idx[_LSTM_WREC[g]]].s for g in lstm.GATES},
        cell_clip=o.CellClip(), cell_tanh=o.FusedActivationFunction() != 6)


@_prep("UNIDIRECTIONAL_SEQUENCE_LSTM")
def _uslstm(graph: Any, op: Any) -> Invoke:
    T = graph.tensors
    idx = op.inputs
    if any(i >= 0 for i in list(idx[9:12]) + list(idx[16:18]) + list(idx[20:24])):
        raise MliError(Status.NOT_SUPPORTED, "LSTM with peephole, projection or layer norm")
    if idx[1] < 0:
        raise MliError(Status.NOT_SUPPORTED, "LSTM with coupled input and forget gates (CIFG)")
    consts = [i for i in list(_LSTM_WIN.values()) + list(_LSTM_WREC.values()) + list(_LSTM_BIAS.values())]
    fixed = None
    if all(idx[k] < 0 or T[idx[k]].data is not None for k in consts):  # constant weights: Prepare once
        fixed = _lstm_params(graph, op, [T[i].data if 0 <= i and T[i].data is not None else None for i in idx])
    time_major, shape = bool(op.options.TimeMajor()), T[op.outputs[0]].shape
    if fixed is not None:
        step = lstm.prepare_unidirectional_sequence_lstm(fixed, T[idx[0]].dtype, time_major=time_major)
        hi, ci = idx[18], idx[19]

        def invoke_prepared(ins: list) -> list:
            y, h, c = step(ins[0], ins[18], ins[19])
            ex = graph.extra  # _set_state inlined (a call less per Invoke)
            st = ex.get("state")
            if st is None:
                ex["state"] = st = {}
            st[hi] = h
            st[ci] = c
            return [y if y.shape == shape else y.reshape(shape)]
        return invoke_prepared

    def invoke(ins: list) -> list:
        p = fixed if fixed is not None else _lstm_params(graph, op, ins)
        y, h, c = lstm.unidirectional_sequence_lstm(ins[0], p, ins[18], ins[19], time_major=time_major)
        _set_state(graph, idx[18], h)
        _set_state(graph, idx[19], c)
        return [y.reshape(shape)]
    return invoke


@_reg("SPLIT")
def _split(graph: Any, op: Any, ins: list) -> list:
    ax = int(np.asarray(ins[0]).reshape(-1)[0]) % np.ndim(ins[1])
    return list(np.split(ins[1], len(op.outputs), axis=ax))


@_reg("SPLIT_V")
def _split_v(graph: Any, op: Any, ins: list) -> list:
    x = ins[0]
    ax = int(np.asarray(ins[2]).reshape(-1)[0]) % x.ndim
    sizes = [int(v) for v in np.asarray(ins[1]).reshape(-1)]
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[ax] - (sum(sizes) + 1)
    return list(np.split(x, np.cumsum(sizes)[:-1], axis=ax))


@_reg("GATHER")
def _gather(graph: Any, op: Any, ins: list) -> list:
    o = op.options
    ax = o.Axis() if o is not None else 0
    bd = o.BatchDims() if o is not None and hasattr(o, "BatchDims") else 0
    if bd:
        raise MliError(Status.NOT_SUPPORTED, "GATHER with batch_dims")
    x, idx = ins[0], np.asarray(ins[1]).astype(np.int64)
    if (idx < 0).any() or (idx >= x.shape[ax % x.ndim]).any():
        raise MliError(Status.ARGUMENT_ERROR, "GATHER index out of range")
    return [np.take(x, idx, axis=ax % x.ndim)]


@_reg("CAST")
def _cast(graph: Any, op: Any, ins: list) -> list:
    o = graph.tensors[op.outputs[0]]
    x = ins[0]
    if x.dtype.kind == "f" and o.dtype.kind in "iu":
        return [np.trunc(x).astype(np.int64).astype(o.dtype)]  # C static_cast: truncation
    return [x.astype(o.dtype)]


@_reg("HARD_SWISH")
def _hard_swish(graph: Any, op: Any, ins: list) -> list:
    x, o = _int8_io(graph, op, "HARD_SWISH")
    om, oe, rm, re_ = misc.hard_swish_params(x.s, o.s)
    if oe > 0:
        raise MliError(Status.ARGUMENT_ERROR, f"HARD_SWISH output scale {o.s} below input scale / 128 "
                       f"({x.s / 128}): TFLM's Prepare refuses it")
    return [misc.hard_swish(ins[0], input_zp=x.zp, output_zp=o.zp, output_multiplier=om,
                            output_exponent=oe, reluish_multiplier=rm, reluish_exponent=re_)]


@_reg("SQUARED_DIFFERENCE")
def _sqdiff(graph: Any, op: Any, ins: list) -> list:
    a, b, o = (graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]],
               graph.tensors[op.outputs[0]])
    if o.dtype == np.int32:
        d = ins[0].astype(np.int64) - ins[1]
        return [(d * d).astype(np.int32)]
    p = misc.squared_difference_params(a.s, a.zp, b.s, b.zp, o.s, o.zp, int16=o.dtype == np.int16)
    return [misc.squared_difference(ins[0], ins[1], p)]


@_reg("RSQRT")
def _rsqrt(graph: Any, op: Any, ins: list) -> list:
    x, o = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    m, s = misc.rsqrt_params(x.s, o.s)
    return [misc.rsqrt(ins[0], input_zp=x.zp, output_zp=o.zp, multiplier=m, shift=s)]


@_reg("DIV")
def _div(graph: Any, op: Any, ins: list) -> list:
    a, b, o = (graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]],
               graph.tensors[op.outputs[0]])
    if o.dtype == np.int32:
        d = ins[1].astype(np.int64)
        if (d == 0).any():
            raise MliError(Status.ARGUMENT_ERROR, "DIV int32 by zero")
        n = ins[0].astype(np.int64)
        q = np.abs(n) // np.abs(d) * np.sign(n) * np.sign(d)  # C division truncates toward zero
        lo, hi = _int32_range(_act(op))
        return [np.clip(qu.wrap(q, 32), lo, hi).astype(np.int32)]
    if o.dtype != np.int8:
        raise MliError(Status.NOT_SUPPORTED, f"DIV {o.dtype}")
    m, s = misc.div_params(a.s, b.s, o.s)
    lo, hi = activation_range(_act(op), o.s, o.zp, o.dtype)
    return [misc.div(ins[0], ins[1], zp1=a.zp, zp2=b.zp, zpo=o.zp, multiplier=m, shift=s,
                     act_min=lo, act_max=hi)]


@_reg("ABS")
def _abs(graph: Any, op: Any, ins: list) -> list:
    x, o = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    v = np.abs(ins[0].astype(np.int64) - x.zp)
    if np.float32(x.s) != np.float32(o.s):
        m, sh = quantize_multiplier(float(np.float32(np.float32(x.s) / np.float32(o.s))))
        v = qu.multiply_by_quantized_multiplier(v, m, sh)
    info = np.iinfo(o.dtype)
    return [np.clip(v + o.zp, info.min, info.max).astype(o.dtype)]


@_reg("RELU")
def _relu(graph: Any, op: Any, ins: list) -> list:
    x, o = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    m, sh = quantize_multiplier(float(np.float32(np.float32(x.s) / np.float32(o.s))))
    v = qu.multiply_by_quantized_multiplier(ins[0].astype(np.int64) - x.zp, m, sh) + o.zp
    info = np.iinfo(o.dtype)
    return [np.clip(v, max(int(info.min), o.zp), int(info.max)).astype(o.dtype)]


@_reg("RELU6")
def _relu6(graph: Any, op: Any, ins: list) -> list:
    x = graph.tensors[op.inputs[0]]
    info = np.iinfo(x.dtype)
    q = float(np.float32(np.float32(6.0) / np.float32(x.s)))
    six = int(math.floor(abs(q) + 0.5) * (1 if q >= 0 else -1)) + x.zp  # round() of FloatToQuantizedType
    six = min(max(six, int(info.min)), int(info.max))
    return [np.clip(ins[0], x.zp, six).astype(x.dtype)]


@_reg("ARG_MAX", "ARG_MIN")
def _argminmax(graph: Any, op: Any, ins: list) -> list:
    o = graph.tensors[op.outputs[0]]
    ax = int(np.asarray(ins[1]).reshape(-1)[0])
    return [index_ops.arg_min_max(ins[0], ax, is_max=op.name == "ARG_MAX", out_dtype=o.dtype)]


@_reg("REDUCE_MAX", "REDUCE_MIN")
def _reduce_minmax(graph: Any, op: Any, ins: list) -> list:
    y = index_ops.reduce_min_max(ins[0], ins[1], is_max=op.name == "REDUCE_MAX",
                                 keep_dims=bool(op.options.KeepDims()))
    return [y.reshape(graph.tensors[op.outputs[0]].shape)]


@_reg("DEPTH_TO_SPACE")
def _d2s(graph: Any, op: Any, ins: list) -> list:
    return [index_ops.depth_to_space(ins[0], op.options.BlockSize())]


@_reg("SPACE_TO_DEPTH")
def _s2d(graph: Any, op: Any, ins: list) -> list:
    return [index_ops.space_to_depth(ins[0], op.options.BlockSize())]


@_reg("SPACE_TO_BATCH_ND")
def _s2b(graph: Any, op: Any, ins: list) -> list:
    # TFLM micro pads with its never-initialised SpaceToBatchParams.output_offset: 0 on a fresh arena
    return [index_ops.space_to_batch_nd(ins[0], ins[1], ins[2], pad_value=0)]


@_reg("BATCH_TO_SPACE_ND")
def _b2s(graph: Any, op: Any, ins: list) -> list:
    return [index_ops.batch_to_space_nd(ins[0], ins[1], ins[2])]


@_reg("MIRROR_PAD")
def _mirror_pad(graph: Any, op: Any, ins: list) -> list:
    return [index_ops.mirror_pad(ins[0], ins[1], symmetric=op.options.Mode() == 1)]


@_reg("GATHER_ND")
def _gather_nd(graph: Any, op: Any, ins: list) -> list:
    return [index_ops.gather_nd(ins[0], ins[1])]


@_reg("RESIZE_NEAREST_NEIGHBOR")
def _resize_nn(graph: Any, op: Any, ins: list) -> list:
    o = op.options
    size = tuple(int(v) for v in np.asarray(ins[1]).reshape(-1))
    return [index_ops.resize_nearest_neighbor(ins[0], size, align_corners=bool(o.AlignCorners()),
                                              half_pixel_centers=bool(o.HalfPixelCenters()))]


@_reg("SELECT", "SELECT_V2")
def _select(graph: Any, op: Any, ins: list) -> list:
    return [index_ops.select_v2(ins[0], ins[1], ins[2])]


@_reg("ZEROS_LIKE")
def _zeros_like(graph: Any, op: Any, ins: list) -> list:
    return [np.zeros_like(ins[0])]


@_reg("FILL")
def _fill(graph: Any, op: Any, ins: list) -> list:
    shape = tuple(int(v) for v in np.asarray(ins[0]).reshape(-1))
    return [np.full(shape, np.asarray(ins[1]).reshape(-1)[0], graph.tensors[op.outputs[0]].dtype)]


@_reg("BROADCAST_TO")
def _broadcast_to(graph: Any, op: Any, ins: list) -> list:
    shape = tuple(int(v) for v in np.asarray(ins[1]).reshape(-1))
    return [np.broadcast_to(ins[0], shape).copy()]


@_reg("PRELU")
def _prelu(graph: Any, op: Any, ins: list) -> list:
    x, a, o = (graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]],
               graph.tensors[op.outputs[0]])
    m1, s1, m2, s2 = misc.prelu_params(x.s, a.s, o.s)
    return [misc.prelu(ins[0], ins[1], input_zp=x.zp, alpha_zp=a.zp, output_zp=o.zp, m1=m1, s1=s1,
                       m2=m2, s2=s2)]


@_reg("EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL")
def _compare(graph: Any, op: Any, ins: list) -> list:
    a, b = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
    if a.dtype == np.int16:
        raise MliError(Status.NOT_SUPPORTED, f"{op.name} int16: TFLM micro compares with scaling "
                       "parameters it only initialises for int8")
    p = misc.comparison_params(a.s, a.zp, b.s, b.zp) if a.dtype == np.int8 else None
    return [misc.compare(ins[0], ins[1], op.name, p)]


@_reg("ELU")
def _elu(graph: Any, op: Any, ins: list) -> list:
    x, o = _int8_io(graph, op, "ELU")
    return [misc.elu_int8(ins[0], input_scale=x.s, input_zp=x.zp, output_scale=o.s, output_zp=o.zp)]


@_reg("BATCH_MATMUL")
def _batch_matmul(graph: Any, op: Any, ins: list) -> list:
    a, b, o = (graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]],
               graph.tensors[op.outputs[0]])
    m, s = quantize_multiplier(float(np.float32(a.s) * np.float32(b.s)) / float(np.float32(o.s)))
    y = conv.batch_matmul(ins[0], ins[1], adj_x=bool(op.options.AdjX()), adj_y=bool(op.options.AdjY()),
                          lhs_zp=a.zp, rhs_zp=b.zp, output_zp=o.zp, multiplier=m, shift=s)
    return [y.reshape(o.shape)]


@_reg("ADD_N")
def _add_n(graph: Any, op: Any, ins: list) -> list:
    x, o = _int8_io(graph, op, "ADD_N")
    return [elementwise.add_n(list(ins), elementwise.sum_params(x.s, x.zp, o.s, o.zp))]


@_reg("CUMSUM")
def _cumsum(graph: Any, op: Any, ins: list) -> list:
    x, o = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    ax = int(np.asarray(ins[1]).reshape(-1)[0])
    if x.dtype == np.int8:
        return [elementwise.cumsum(ins[0], ax, elementwise.sum_params(x.s, x.zp, o.s, o.zp),
                                   exclusive=bool(op.options.Exclusive()),
                                   reverse=bool(op.options.Reverse()))]
    raise MliError(Status.NOT_SUPPORTED, f"CUMSUM {x.dtype}")


@_reg("RESIZE_BILINEAR")
def _resize_bilinear(graph: Any, op: Any, ins: list) -> list:
    o = op.options
    x = ins[0]
    if x.dtype not in (np.int8, np.int16):
        raise MliError(Status.NOT_SUPPORTED, f"RESIZE_BILINEAR {x.dtype}")
    size = tuple(int(v) for v in np.asarray(ins[1]).reshape(-1))
    return [index_ops.resize_bilinear_integer(x, size, align_corners=bool(o.AlignCorners()),
                                              half_pixel_centers=bool(o.HalfPixelCenters()))]


@_reg("LOG_SOFTMAX")
def _log_softmax(graph: Any, op: Any, ins: list) -> list:
    x, o = _int8_io(graph, op, "LOG_SOFTMAX")
    if np.float32(o.s) != np.float32(16 / 256) or o.zp != 127:
        raise MliError(Status.ARGUMENT_ERROR, "LOG_SOFTMAX int8 output must have scale 16/256 and "
                       "zero point 127")
    m, ls, rm, rs, dmin = activations.log_softmax_params(x.s)
    return [activations.log_softmax_int8(ins[0], input_multiplier=m, input_left_shift=ls,
                                         reverse_scaling_divisor=rm, reverse_scaling_shift=rs,
                                         diff_min=dmin)]


@_reg("L2_NORMALIZATION")
def _l2norm(graph: Any, op: Any, ins: list) -> list:
    x, _ = _int8_io(graph, op, "L2_NORMALIZATION")
    if _act(op) != 0:
        raise MliError(Status.NOT_SUPPORTED, "L2_NORMALIZATION with a fused activation")
    return [misc.l2_normalization_int8(ins[0], input_zp=x.zp)]


@_reg("REVERSE_V2")
def _reverse_v2(graph: Any, op: Any, ins: list) -> list:
    return [index_ops.reverse_v2(ins[0], ins[1])]


@_reg("DYNAMIC_UPDATE_SLICE")
def _dynamic_update_slice(graph: Any, op: Any, ins: list) -> list:
    return [index_ops.dynamic_update_slice(ins[0], ins[1], ins[2])]


@_reg("BROADCAST_ARGS")
def _broadcast_args(graph: Any, op: Any, ins: list) -> list:
    return [index_ops.broadcast_args(ins[0], ins[1])]


@_reg("EMBEDDING_LOOKUP")
def _embedding_lookup(graph: Any, op: Any, ins: list) -> list:
    v, o = graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
    hybrid = v.dtype == np.int8 and o.dtype == np.float32
    if hybrid and v.zp != 0:
        raise MliError(Status.ARGUMENT_ERROR, "EMBEDDING_LOOKUP int8 -> float32 needs zero point 0")
    y = index_ops.embedding_lookup(ins[0], ins[1], scale=v.s if hybrid else None)
    return [y.reshape(o.shape)]


@_reg("LOGICAL_AND", "LOGICAL_OR")
def _logical(graph: Any, op: Any, ins: list) -> list:
    f = np.logical_and if op.name == "LOGICAL_AND" else np.logical_or
    return [f(np.asarray(ins[0], np.bool_), np.asarray(ins[1], np.bool_))]


@_reg("LOGICAL_NOT")
def _logical_not(graph: Any, op: Any, ins: list) -> list:
    return [np.logical_not(np.asarray(ins[0], np.bool_))]

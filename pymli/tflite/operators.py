"""The operator handlers of pymli's MLI mapping of TFLite (:data:`pymli.tflite.mapping.MLI`).

One small function per TFLite operator (or per family of operators on one MLI kernel, which reads
its variant from ``op.name``), registered by name with ``@MLI.register("NAME", ...)``:
``handler(imp, op)`` checks the operator against what MLI can run (every refusal names the reason
through ``imp.fail``), converts constants to MLI's layouts and parameters, adds the layers and binds
the output (``imp.finish`` requantises when the layer's parameters differ from the TFLite output's).
Adding an operator is adding one function here and one test.
"""

from __future__ import annotations

import numpy as np

from ..formats import ElType
from ..graph.geometry import transpose_padding_for_output
from ..models.layers import (
    AvgPool,
    Conv2D,
    DepthwiseConv2D,
    Eltwise,
    FullyConnected,
    Layer,
    LeakyReLU,
    MaxPool,
    Permute,
    PReLU,
    ReLU,
    Sigmoid,
    Softmax,
    Tanh,
)
from ..models.qparams import Const, QParams
from .layers import ArgMax, Concat, L2Norm, Pad, Requant, Reshape, TransposeConv2D
from .mapping import MLI, GraphBuilder
from .quant import float_to_mli_scale, quantize_input
from .reader import OpInfo, TensorInfo

__all__: list[str] = []  # handlers are reached through the table, not imported

#: kernel-set output parameters (zero point, real scale) of the LUT activations, as TFLite requires them
_LUT_OUT = {"LOGISTIC": (-128, 1 / 256), "SOFTMAX": (-128, 1 / 256), "TANH": (0, 1 / 128),
            "L2_NORMALIZATION": (0, 1 / 128)}


def _need_inputs(imp: GraphBuilder, op: OpInfo, n: int, what: str) -> None:
    """Refuse an operator with fewer than ``n`` inputs; ``what`` names them for the message."""
    if len(op.inputs) < n:
        raise imp.fail(f"needs {what}")


def _nhwc_input(imp: GraphBuilder, op: OpInfo) -> TensorInfo:
    """The operator's first input, refused unless it is an NHWC (rank-4) activation."""
    x = imp.act(op.inputs[0])
    if len(x.shape) != 4:
        raise imp.fail(f"input rank {len(x.shape)}, NHWC expected")
    return x


def _positive_pairs(imp: GraphBuilder, op: OpInfo, **keys: tuple[str, str]) -> list[tuple[int, int]]:
    """The (H, W) option pairs named by ``keys`` (their word in a message -> the two TFLite option
    names; absent options are 1), refused unless every value is positive."""
    pairs = [(int(op.options.get(h, 1)), int(op.options.get(w, 1))) for h, w in keys.values()]
    if min(min(p) for p in pairs) < 1:
        raise imp.fail(" / ".join(f"{word} {a}x{b}" for word, (a, b) in zip(keys, pairs)) + " must be positive")
    return pairs


@MLI.register("CONV_2D", "DEPTHWISE_CONV_2D")
def conv_2d(imp: GraphBuilder, op: OpInfo) -> None:
    """CONV_2D / DEPTHWISE_CONV_2D: one MAC layer with the TFLite padding, stride, dilation and fused ReLU.

    CONV_2D: ``mli_krn_conv2d_hwcn_sa8_sa8_sa32`` (OHWI weights -> HWCN); DEPTHWISE_CONV_2D (depth
    multiplier 1): ``mli_krn_depthwise_conv2d_hwcn_*``.
    """
    depthwise = op.name == "DEPTHWISE_CONV_2D"
    _need_inputs(imp, op, 2, "input and weights")
    x = _nhwc_input(imp, op)
    o = op.options
    (sh, sw), (dh, dw) = _positive_pairs(imp, op, stride=("StrideH", "StrideW"),
                                         dilation=("DilationHFactor", "DilationWFactor"))
    wt = imp.tensor(op.inputs[1])
    if len(wt.shape) != 4:
        raise imp.fail(f"weights rank {len(wt.shape)}, 4 expected")
    _, h, w, cin = x.shape
    if depthwise:
        _, kh, kw, cout = wt.shape
        if wt.shape[0] != 1:
            raise imp.fail(f"depthwise weights {wt.shape}: first dimension 1 expected")
        if cout != cin:
            raise imp.fail(f"depth multiplier {o.get('DepthMultiplier', 1)} ({cin} -> {cout} channels): "
                            "MLI depthwise convolution keeps the channel count")
        wc = imp.weights(op.inputs[1], (1, 2, 0, 3), {3: 3})
    else:
        cout, kh, kw, wcin = wt.shape
        if wcin != cin:
            raise imp.fail(f"weights {wt.shape} expect {wcin} input channels, input has {cin} "
                            "(grouped convolution is not mapped)")
        wc = imp.weights(op.inputs[1], (1, 2, 3, 0), {0: 3})
    pad = imp.padding(o, h, w, kh, kw, sh, sw, dh, dw)
    b = imp.op_bias(op, 0, 2, wc, cout)
    cls = DepthwiseConv2D if depthwise else Conv2D
    imp.emit(cls(wc, b, stride=(sh, sw), padding=pad, dilation=(dh, dw), relu=imp.fused(o)), op.inputs[0],
             op.outputs[0])


@MLI.register("TRANSPOSE_CONV")
def transpose_conv(imp: GraphBuilder, op: OpInfo) -> None:
    """TRANSPOSE_CONV: ``mli_krn_transpose_conv2d_hwcn_*``; MLI needs 0 <= padding < kernel, stride <= kernel."""
    _need_inputs(imp, op, 3, "output shape, weights and input")
    x = imp.act(op.inputs[2])
    wt = imp.tensor(op.inputs[1])
    if len(x.shape) != 4 or len(wt.shape) != 4:
        raise imp.fail("NHWC input and OHWI weights expected")
    o = op.options
    sh, sw = int(o.get("StrideH", 1)), int(o.get("StrideW", 1))
    if min(sh, sw) < 1:
        raise imp.fail(f"stride {sh}x{sw}")
    cout, kh, kw, wcin = wt.shape
    out_t = imp.act(op.outputs[0])
    _, oh, ow, oc = out_t.shape
    if oc != cout or wcin != x.shape[3]:
        raise imp.fail(f"weights {wt.shape} do not fit input {x.shape} / output {out_t.shape}")
    same = imp.padding_name(o) == "SAME"
    t, b = transpose_padding_for_output(x.shape[1], oh, kh, sh, same)
    l, r = transpose_padding_for_output(x.shape[2], ow, kw, sw, same)
    if min(t, b, l, r) < 0 or max(t, b) >= kh or max(l, r) >= kw or sh > kh or sw > kw:
        raise imp.fail(f"padding ({t}, {b}, {l}, {r}) / stride {sh}x{sw} for a {kh}x{kw} kernel: MLI needs "
                        "0 <= padding < kernel and stride <= kernel")
    wc = imp.weights(op.inputs[1], (1, 2, 3, 0), {0: 3})
    bias = imp.op_bias(op, 2, 3, wc, cout)
    imp.emit(TransposeConv2D(wc, bias, stride=(sh, sw), padding=(t, b, l, r), relu=imp.fused(o)), op.inputs[2],
             op.outputs[0])


@MLI.register("FULLY_CONNECTED")
def fully_connected(imp: GraphBuilder, op: OpInfo) -> None:
    """FULLY_CONNECTED: ``mli_krn_fully_connected_sa8_sa8_sa32`` (+ a reshape for a higher-rank output)."""
    _need_inputs(imp, op, 2, "input and weights")
    x = imp.act(op.inputs[0])
    o = op.options
    if int(o.get("WeightsFormat", 0)) != 0:
        raise imp.fail("shuffled weights format")
    wt = imp.tensor(op.inputs[1])
    if len(wt.shape) != 2:
        raise imp.fail(f"weights {wt.shape}: [out, in] expected")
    n_out, n_in = wt.shape
    if int(np.prod(x.shape[1:])) != n_in:
        raise imp.fail(f"input {x.shape} has {int(np.prod(x.shape[1:]))} values per sample, weights expect {n_in}")
    out_t = imp.act(op.outputs[0])
    if int(np.prod(out_t.shape[1:])) != n_out:
        raise imp.fail(f"output {out_t.shape} does not hold {n_out} values per sample")
    wc = imp.weights(op.inputs[1], (1, 0), {0: 1})
    b = imp.op_bias(op, 0, 2, wc, n_out)
    oq = imp.tq(out_t)
    n = imp.add(FullyConnected(wc, b, relu=imp.fused(o)), [imp.in_name(op.inputs[0])], op.outputs[0], out_q=oq)
    if tuple(out_t.shape[1:]) != (n_out,):
        n = imp.add(Reshape(out_t.shape[1:]), [n], base=n + "/reshape")
    imp.finish(n, oq, op.outputs[0])


#: the pooling layer of each TFLite pooling operator
_POOL: dict[str, type[Layer]] = {"MAX_POOL_2D": MaxPool, "AVERAGE_POOL_2D": AvgPool}


@MLI.register(*_POOL)
def pool_2d(imp: GraphBuilder, op: OpInfo) -> None:
    """MAX_POOL_2D / AVERAGE_POOL_2D: ``mli_krn_maxpool_hwc_sa8`` / ``mli_krn_avepool_hwc_sa8``.

    A fused activation becomes a ReLU layer after the pooling.
    """
    cls = _POOL[op.name]
    x = _nhwc_input(imp, op)
    o = op.options
    (kh, kw), (sh, sw) = _positive_pairs(imp, op, filter=("FilterHeight", "FilterWidth"), stride=("StrideH", "StrideW"))
    pad = imp.padding(o, x.shape[1], x.shape[2], kh, kw, sh, sw)
    if max(pad[:2]) >= kh or max(pad[2:]) >= kw:
        raise imp.fail(f"padding {pad} not smaller than the {kh}x{kw} window")
    relu = imp.fused(o)
    in_name = imp.in_name(op.inputs[0])
    in_q = imp.cur_q(in_name)
    out_t = imp.act(op.outputs[0])
    oq = imp.tq(out_t)
    if cls is MaxPool:
        n = imp.add(MaxPool((kh, kw), stride=(sh, sw), padding=pad), [in_name], op.outputs[0])
        q = in_q
    else:
        n = imp.add(AvgPool((kh, kw), stride=(sh, sw), padding=pad), [in_name], op.outputs[0], out_q=oq)
        q = oq
    n = imp.then_relu(n, relu)
    imp.finish(n, q, op.outputs[0])


#: the MLI eltwise kind of each TFLite element-wise operator
_ELTWISE = {"ADD": "add", "SUB": "sub", "MUL": "mul", "MINIMUM": "min", "MAXIMUM": "max"}


@MLI.register(*_ELTWISE)
def eltwise(imp: GraphBuilder, op: OpInfo) -> None:
    """ADD / SUB / MUL / MINIMUM / MAXIMUM: ``mli_krn_eltwise_{add,sub,mul,min,max}_sa8``.

    MINIMUM and MAXIMUM bring their operands to one format first.
    """
    kind = _ELTWISE[op.name]
    if len(op.inputs) != 2:
        raise imp.fail(f"{len(op.inputs)} inputs, 2 expected")
    a, b = (imp.tensor(i) for i in op.inputs)
    ia, ib = op.inputs
    if a.is_const and b.is_const:
        raise imp.fail("both inputs are constants")
    if a.is_const:
        if kind == "sub":
            raise imp.fail("constant first operand of SUB")
        a, b, ia, ib = b, a, ib, ia
    imp.act(ia)
    out_t = imp.act(op.outputs[0])
    rank = len(out_t.shape)
    in_a = imp.in_name(ia)
    qa = imp.cur_q(in_a)
    minmax = kind in ("min", "max")
    if b.is_const:
        if b.type != "INT8" or not b.quantized or b.per_channel:
            raise imp.fail(f"constant operand {ib}: {b.type}, per-tensor int8 expected")
        cshape = b.shape
        if len(cshape) == rank:
            if cshape[0] != 1:
                raise imp.fail(f"constant operand shape {cshape} has a batch")
            cshape = cshape[1:]
        sample = tuple(a.shape[1:])
        try:
            cval = np.broadcast_to(b.data.reshape(cshape), sample)  # type: ignore[union-attr]
        except ValueError:
            raise imp.fail(f"constant operand {b.shape} does not broadcast to {a.shape}") from None
        cq = imp.tq(b)
        if minmax and cq != qa:
            # MLI min / max need operands of one format: express the constant in the input's (offline)
            real = (cval.astype(np.float64) - float(b.zero_point[0] if b.zero_point.size else 0)) * float(b.scale[0])
            cval = quantize_input(real, float(a.scale[0]), int(a.zero_point[0]) if a.zero_point.size else 0)
            cq = qa
        # MLI eltwise takes a scalar or an operand of the input's shape: expand broadcast constants
        const = Const.quantized(np.ascontiguousarray(cval).astype(np.int8), cq)
        la = Eltwise(kind, const=const)
        ins = [in_a]
    else:
        imp.act(ib)
        if a.shape != b.shape:
            raise imp.fail(f"broadcast of {a.shape} with {b.shape} between two activations is not mapped")
        in_b = imp.in_name(ib)
        if minmax and imp.cur_q(in_b) != qa:
            in_b = imp.add(Requant(), [in_b], out_q=qa, base=f"{imp.t[ib].name}/requant")
            imp.qp[in_b] = qa
        la = Eltwise(kind)
        ins = [in_a, in_b]
    oq = imp.tq(out_t)
    if tuple(a.shape[1:]) != tuple(out_t.shape[1:]):
        raise imp.fail(f"output shape {out_t.shape} does not match the operands")
    n = imp.add(la, ins, op.outputs[0], out_q=oq)
    n = imp.then_relu(n, imp.fused(op.options))
    imp.finish(n, oq, op.outputs[0])


#: the MLI ReLU type of each TFLite ReLU operator
_RELU = {"RELU": "gen", "RELU6": "relu_6", "RELU_N1_TO_1": "relu_1"}


@MLI.register(*_RELU)
def relu(imp: GraphBuilder, op: OpInfo) -> None:
    """RELU / RELU6 / RELU_N1_TO_1: ``mli_krn_relu_sa8`` (MLI_RELU_GEN / MLI_RELU_6 / MLI_RELU_1)."""
    kind = _RELU[op.name]
    imp.act(op.inputs[0])
    imp.emit(ReLU(kind), op.inputs[0], op.outputs[0], keep_q=True)


@MLI.register("LEAKY_RELU")
def leaky_relu(imp: GraphBuilder, op: OpInfo) -> None:
    """LEAKY_RELU: ``mli_krn_leaky_relu_sa8`` with ``alpha`` as a +-1 sa8 scalar on the scale ``|alpha|``."""
    imp.act(op.inputs[0])
    alpha = float(op.options.get("Alpha", 0.2))
    if not np.isfinite(alpha):
        raise imp.fail(f"alpha {alpha}")
    if alpha == 0:
        slope = Const.quantized(np.asarray(0, np.int8), QParams.sa(0, 1 << 14, 14))
    else:
        s, f = float_to_mli_scale(abs(alpha))
        slope = Const.quantized(np.asarray(1 if alpha > 0 else -1, np.int8), QParams.sa(0, s, f))
    imp.emit(LeakyReLU(slope), op.inputs[0], op.outputs[0])


@MLI.register("PRELU")
def prelu(imp: GraphBuilder, op: OpInfo) -> None:
    """PRELU: ``mli_krn_prelu_sa8`` with one or one-per-channel int8 alpha."""
    if len(op.inputs) != 2:
        raise imp.fail("needs input and alpha")
    x = imp.act(op.inputs[0])
    al = imp.const(op.inputs[1], "alpha", ("INT8",))
    if not al.quantized or al.per_channel:
        raise imp.fail("alpha must be int8 quantised per tensor")
    c = x.shape[-1]
    vals = al.data.reshape(-1)  # type: ignore[union-attr]
    if vals.size not in (1, c) or (vals.size == c and int(np.prod(al.shape)) != al.shape[-1]):
        raise imp.fail(f"alpha shape {al.shape}: one value or one per channel (last axis) expected")
    if vals.size == 1:
        vals = np.repeat(vals, c)
    imp.act(op.outputs[0])
    imp.emit(PReLU(Const.quantized(vals.astype(np.int8), imp.tq(al))), op.inputs[0], op.outputs[0])


def _lut(imp: GraphBuilder, op: OpInfo, layer: Layer) -> None:
    imp.act(op.inputs[0])
    zp, s = _LUT_OUT[op.name]
    sc, f = float_to_mli_scale(s)
    q = QParams.sa(zp, sc, f)
    n = imp.add(layer, [imp.in_name(op.inputs[0])], op.outputs[0])
    imp.finish(n, q, op.outputs[0])


@MLI.register("LOGISTIC", "TANH")
def logistic(imp: GraphBuilder, op: OpInfo) -> None:
    """LOGISTIC / TANH: ``mli_krn_sigm_sa8`` / ``mli_krn_tanh_sa8``."""
    _lut(imp, op, Sigmoid() if op.name == "LOGISTIC" else Tanh())


@MLI.register("SOFTMAX")
def softmax(imp: GraphBuilder, op: OpInfo) -> None:
    """SOFTMAX (beta 1): ``mli_krn_softmax_sa8`` along the last axis."""
    beta = float(op.options.get("Beta", 1.0))
    if beta != 1.0:
        raise imp.fail(f"beta {beta}: MLI softmax has no beta (only 1.0 is mapped)")
    x = imp.act(op.inputs[0])
    _lut(imp, op, Softmax(axis=len(x.shape) - 2))


@MLI.register("L2_NORMALIZATION")
def l2_normalization(imp: GraphBuilder, op: OpInfo) -> None:
    """L2_NORMALIZATION: ``mli_krn_l2_normalize_sa8`` along the last axis."""
    if imp.fused(op.options) != "none":
        raise imp.fail("fused activation after L2 normalisation")
    _lut(imp, op, L2Norm())


@MLI.register("RESHAPE", "SQUEEZE")
def reshape(imp: GraphBuilder, op: OpInfo) -> None:
    """RESHAPE / SQUEEZE: a copy under the new shape (``mli_mov_tensor_sync``)."""
    x = imp.act(op.inputs[0])
    out_t = imp.act(op.outputs[0])
    if int(np.prod(x.shape)) != int(np.prod(out_t.shape)):
        raise imp.fail(f"cannot reshape {x.shape} to {out_t.shape}")
    imp.emit(Reshape(tuple(out_t.shape[1:]) or (1,)), op.inputs[0], op.outputs[0], keep_q=True)


@MLI.register("TRANSPOSE")
def transpose(imp: GraphBuilder, op: OpInfo) -> None:
    """TRANSPOSE (batch axis fixed): ``mli_krn_permute_sa8``."""
    x, p = imp.act_and_ints(op, "permutation")
    perm = [int(v) for v in p]
    if sorted(perm) != list(range(len(x.shape))):
        raise imp.fail(f"permutation {perm} for rank {len(x.shape)}")
    if perm[0] != 0:
        raise imp.fail(f"permutation {perm} moves the batch axis")
    imp.emit(Permute([v - 1 for v in perm[1:]]), op.inputs[0], op.outputs[0], keep_q=True)


@MLI.register("CONCATENATION")
def concatenation(imp: GraphBuilder, op: OpInfo) -> None:
    """CONCATENATION along a non-batch axis: ``mli_krn_concat_sa8`` (inputs requantised to the output's format)."""
    if not op.inputs:
        raise imp.fail("no input")
    out_t = imp.act(op.outputs[0])
    rank = len(out_t.shape)
    axis = int(op.options.get("Axis", 0))
    axis = axis + rank if axis < 0 else axis
    if not 1 <= axis < rank:
        raise imp.fail(f"axis {op.options.get('Axis')} (rank {rank}): only non-batch axes are mapped")
    if len(op.inputs) > 8:
        raise imp.fail(f"{len(op.inputs)} inputs, MLI concatenates at most 8")
    oq = imp.tq(out_t)
    names = []
    for i in op.inputs:
        imp.act(i)
        n = imp.in_name(i)
        if imp.cur_q(n) != oq:
            n = imp.add(Requant(), [n], out_q=oq, base=f"{imp.t[i].name}/requant")
            imp.qp[n] = oq
        names.append(n)
    n = imp.add(Concat(axis - 1, len(names)), names, op.outputs[0])
    n = imp.then_relu(n, imp.fused(op.options))
    imp.finish(n, oq, op.outputs[0])


@MLI.register("PAD", "PADV2")
def pad(imp: GraphBuilder, op: OpInfo) -> None:
    """PAD / PADV2 of height / width with the zero point: ``mli_krn_padding2d_hwc_sa8``.

    PADV2's constant must be the zero point.
    """
    x = imp.act(op.inputs[0])
    _need_inputs(imp, op, 2, "input and paddings")
    if len(x.shape) != 4:
        raise imp.fail(f"input rank {len(x.shape)}: MLI pads HWC maps (NHWC)")
    p = imp.const(op.inputs[1], "paddings", ("INT32", "INT64"))
    pads = p.data.reshape(-1)  # type: ignore[union-attr]
    if pads.size != 8:
        raise imp.fail(f"paddings {p.shape}, [4, 2] expected")
    pads = pads.reshape(4, 2)
    if np.any(pads[0] != 0) or np.any(pads[3] != 0):
        raise imp.fail("padding of the batch or channel axis (MLI pads height and width)")
    if np.any(pads < 0):
        raise imp.fail("negative padding")
    in_name = imp.in_name(op.inputs[0])
    q = imp.cur_q(in_name)
    out_t = imp.act(op.outputs[0])
    if imp.tq(out_t) != q:
        raise imp.fail("output quantisation differs from the input's")
    if len(op.inputs) > 2 and op.inputs[2] >= 0:
        cv = imp.const(op.inputs[2], "constant value", ("INT8",))
        if int(cv.data.reshape(-1)[0]) != int(q.zero_point):  # type: ignore[union-attr]
            raise imp.fail("pads with a value other than the zero point (MLI pads with the zero point)")
    imp.emit(Pad((int(pads[1, 0]), int(pads[1, 1]), int(pads[2, 0]), int(pads[2, 1]))), op.inputs[0],
             op.outputs[0], keep_q=True)


@MLI.register("ARG_MAX")
def arg_max(imp: GraphBuilder, op: OpInfo) -> None:
    """ARG_MAX along the last axis: ``mli_krn_argmax_sa8`` (MLI's tie rule: the last maximum)."""
    x, ax = imp.act_and_ints(op, "axis")
    axis = int(ax[0])
    rank = len(x.shape)
    axis = axis + rank if axis < 0 else axis
    if axis != rank - 1 or rank < 2:
        raise imp.fail(f"axis {axis} of rank {rank}: only the last (non-batch) axis is mapped")
    out_t = imp.tensor(op.outputs[0])
    if out_t.type not in ("INT32", "INT64"):
        raise imp.fail(f"output type {out_t.type}")
    n = imp.add(ArgMax(), [imp.in_name(op.inputs[0])], op.outputs[0])
    imp.names[op.outputs[0]] = n
    imp.qp[n] = QParams.sa(0, 1, 0, -1, ElType.SA_32)


@MLI.register("QUANTIZE")
def quantize(imp: GraphBuilder, op: OpInfo) -> None:
    """QUANTIZE int8 -> int8 inside the graph: ``mli_hlp_convert_tensor``."""
    src = imp.tensor(op.inputs[0])
    if src.type != "INT8":
        raise imp.fail(f"QUANTIZE from {src.type} inside the graph (only at the input, or int8 -> int8)")
    imp.act(op.inputs[0])
    imp.emit(Requant(), op.inputs[0], op.outputs[0])


@MLI.register("DEQUANTIZE")
def dequantize(imp: GraphBuilder, op: OpInfo) -> None:
    """DEQUANTIZE: only as the graph's last operator (handled by the loader); refused inside."""
    raise imp.fail("DEQUANTIZE inside the graph (only the graph output can be dequantised)")

"""Layers of a :class:`pymli.models.Network`: one MLI kernel call each, plus its float64 counterpart.

A layer knows
* its constants (:class:`~pymli.models.qparams.Const`: weights, bias, slopes) and cfg values;
* which MLI C function runs it for given element types (``mli_krn_conv2d_hwcn_fx16`` ...), or an
  exact symbol given by ``fn`` (e.g. a ``_k5x5`` specialisation an example calls);
* how to call that function through :mod:`pymli.capi` (argument order of the C API);
* for a prepared network (:meth:`pymli.models.Network.prepare`), a step running the same kernel of
  :mod:`pymli.kernels` over a whole batch with parameters derived once (:meth:`Layer.plan_step`;
  kernels without a batch axis yet go through the one adapter :func:`per_sample`);
* the same operation in float64 NumPy (:mod:`pymli.models.floatops`);
* how many products one output accumulates (for the accumulator guard-bit report).

Activations are HWC (batch axis first in the float path), as in MLI.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from .. import capi
from ..arith.activation import relu_limits
from ..arith.eltwise import EltOp
from ..arith.pool import requant_params
from ..arith.rounding import wrap
from ..capi.convolution import fast_view, fx_quant, out_bounds, sa8_quant
from ..capi.types import (
    ArgmaxCfg,
    ConcatCfg,
    Conv2dCfg,
    FullyConnectedCfg,
    L2NormalizeCfg,
    Padding2dCfg,
    PermuteCfg,
    PoolCfg,
    PreluCfg,
    ReluCfg,
    SoftmaxCfg,
)
from ..errors import MliError, Status
from ..formats import ElType
from ..graph import args
from ..graph.activation import relu_type
from ..graph.geometry import conv_out_size, pad4, pair, transpose_out_size
from ..graph.registry import KernelMissing, Op, entry, lookup, new_lut
from ..kernels import activation as KA
from ..kernels import convolution as KC
from ..kernels.conv_prepared import prepare_conv, prepare_group_conv, prepare_transpose_conv
from ..kernels import eltwise as KE
from ..kernels import pooling as KP
from ..kernels import transform as KT
from ..kernels.fully_connected import prepare_fc, prepare_pointwise
from ..kernels.move import pad2d
from ..tensor import Lut, Tensor
from . import floatops as F
from .qparams import Const, QParams, counted_setattr

__all__ = [
    "LAYER_TYPES",
    "Argmax",
    "AvgPool",
    "Concat",
    "Conv2D",
    "DepthwiseConv2D",
    "Eltwise",
    "FullyConnected",
    "GroupConv2D",
    "KernelMissing",
    "L2Normalize",
    "Layer",
    "LeakyReLU",
    "MaxPool",
    "PReLU",
    "Pad2D",
    "Permute",
    "ReLU",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "TransposeConv2D",
]


def capi_function(name: str) -> Callable[..., Any]:
    """The facade function registered under the C name ``name`` (a symbol a user chose with ``fn=``).

    Raises:
        KernelMissing: ``name`` is not in :data:`pymli.capi.FUNCTIONS`.
    """
    try:
        return capi.FUNCTIONS[name]
    except KeyError:
        raise KernelMissing(name) from None


def _consts(weights: Any, bias: Any, w_rank: int, what: str) -> tuple[Const, Const]:
    """Weights of rank ``w_rank`` and a 1-D bias of their last dimension's length, as constants."""
    w = weights if isinstance(weights, Const) else Const.from_float(weights)
    b = bias if isinstance(bias, Const) else Const.from_float(bias)
    if len(w.shape) != w_rank or len(b.shape) != 1 or b.shape[0] != w.shape[-1]:
        raise MliError(Status.SHAPE_MISMATCH, f"{what}: weights {w.shape} (rank {w_rank} expected) and bias {b.shape} "
                                              "(the weights' last dimension expected)")
    return w, b


def _hwc(layer: Layer, shape: tuple[int, ...]) -> tuple[int, int, int]:
    """An HWC input shape, or SHAPE_MISMATCH naming the layer."""
    if len(shape) != 3:
        raise MliError(Status.SHAPE_MISMATCH, f"{layer._what}: an HWC input of rank 3 expected, got {tuple(shape)}")
    h, w, c = shape
    return h, w, c


def _positive(layer: Layer, shape: tuple[int, ...]) -> tuple[int, ...]:
    """An output shape with every dimension >= 1 (else the window is larger than the padded input)."""
    if any(int(d) <= 0 for d in shape):
        raise MliError(Status.BAD_FUNC_CFG, f"{layer._what}: empty output {tuple(shape)} (the kernel is larger than "
                                            "the padded input)")
    return tuple(int(d) for d in shape)


def _axis_fits(layer: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` when ``layer.axis`` (negative: the whole tensor) is one of its dimensions."""
    if layer.axis >= len(shape):
        raise MliError(Status.BAD_FUNC_CFG, f"{layer._what}: axis {layer.axis} >= input rank {len(shape)}")
    return tuple(shape)


#: A prepared step of a layer: the batches of its inputs (sample axis first) -> the output batch
#: (container dtype), computed by :mod:`pymli.kernels` with parameters derived once.
Step = Callable[[list[np.ndarray]], np.ndarray]


def per_sample(kernel: Callable[..., np.ndarray], x: np.ndarray, out_shape: tuple[int, ...], dtype: Any, /,
               **kw: Any) -> np.ndarray:
    """The one adapter for kernels without a batch axis: ``kernel(x[n], **kw)`` for every sample.

    Args:
        kernel: a :mod:`pymli.kernels` function of one sample.
        x: the input batch, sample axis first.
        out_shape: the output shape of one sample.
        dtype: the output container dtype.
        **kw: the kernel's prepared parameters.

    Returns:
        The output batch ``[N, *out_shape]`` of ``dtype``.
    """
    out = np.empty((x.shape[0], *out_shape), dtype=dtype)
    for n in range(x.shape[0]):
        out[n] = kernel(x[n], **kw)
    return out


class Layer:
    """Base class of all layers.

    Attributes:
        name: unique name in the network (also the key of captured intermediates).
        inputs: names of the tensors it reads (``"input"`` = network input); default: previous layer.
        out_q: quantisation of the output the network asks for; None when the kernel sets it itself
            or (for layers that keep their input's parameters) when it follows the input.
        fn: exact C function to call, overriding the name derived from the element types.
    """

    kind: ClassVar[str] = "layer"
    n_inputs: ClassVar[int] = 1
    #: output quantisation equals the input's (MLI copies it or checks equality)
    follows_input: ClassVar[bool] = False
    #: the kernel writes the output parameters itself
    kernel_sets_output: ClassVar[bool] = False

    __setattr__ = counted_setattr  # a reassigned attribute invalidates the prepared plans (Network._plan)

    def __init__(self, name: str | None = None, inputs: list[str] | None = None, out_q: QParams | None = None,
                 fn: str | None = None) -> None:
        what = f"{self.kind} layer"
        if name is not None and not isinstance(name, str):
            raise MliError(Status.BAD_FUNC_CFG, f"{what}: name = {name!r:.40}: a string expected")
        if inputs is not None and (not isinstance(inputs, (list, tuple)) or not all(isinstance(i, str) for i in inputs)):
            raise MliError(Status.BAD_FUNC_CFG, f"{what}: inputs = {inputs!r:.60}: a list of tensor names expected")
        if out_q is not None and not isinstance(out_q, QParams):
            raise MliError(Status.BAD_FUNC_CFG, f"{what}: out_q = {type(out_q).__name__}: a QParams or None expected")
        if fn is not None and not isinstance(fn, str):
            raise MliError(Status.BAD_FUNC_CFG, f"{what}: fn = {fn!r:.40}: a C function name expected")
        self.name = name or ""
        self.inputs = list(inputs) if inputs else []
        self.out_q = out_q
        self.fn = fn

    @property
    def _what(self) -> str:
        return f"{self.kind} layer {self.name!r}" if self.name else f"{self.kind} layer"

    # ---------------------------------------------------------------- description
    def consts(self) -> dict[str, Const]:
        """The layer's constant tensors by role (``weights``, ``bias``, ``slope``, ...)."""
        return {}

    def cfg_dict(self) -> dict[str, Any]:
        """The layer's configuration values (for display and serialisation)."""
        return {}

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        """Output shape (one sample, no batch axis) for inputs of ``in_shapes``.

        Raises:
            ValueError: shapes the layer cannot take.
        """
        return tuple(in_shapes[0])

    def mac_count(self, in_shapes: list[tuple[int, ...]]) -> int | None:
        """Products accumulated per output value (None: not a MAC layer)."""
        return None

    def follows(self, in_qs: list[QParams]) -> bool:
        """Whether the output keeps the input's quantisation for these input types."""
        return self.follows_input

    # ---------------------------------------------------------------- quantised path
    #: the operation of :mod:`pymli.graph.registry` this layer runs
    op: ClassVar[Op]

    def signature(self, in_qs: list[QParams]) -> tuple[Op, tuple[ElType, ...]]:
        """The registry key of the function running this layer for inputs of ``in_qs``: the input type."""
        return self.op, (in_qs[0].el_type,)

    def c_name(self, in_qs: list[QParams]) -> str:
        """C name of the generic MLI function for these inputs (a description if MLI has none)."""
        try:
            return entry(*self._sig(in_qs)).c_name
        except KernelMissing as e:
            return e.name

    def _sig(self, in_qs: list[QParams]) -> tuple[Any, ...]:
        op, types = self.signature(in_qs)
        return (op, *types)

    def function_name(self, in_qs: list[QParams]) -> str:
        """C name of the function :meth:`function` returns (``fn`` if given)."""
        return self.fn or self.c_name(in_qs)

    def window(self) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int, int, int]] | None:
        """(kernel, stride, padding) of a windowed layer, for the choice of MLI's specialisations."""
        return None

    def function(self, in_qs: list[QParams], *, specialise: bool = False) -> Callable[..., Any]:
        """The capi callable running this layer: ``fn`` if given, else the registry's choice.

        Args:
            in_qs: the parameters of the inputs.
            specialise: pick MLI's specialisation for this layer's :meth:`window` where one fits
                (same results; what a C program would call).

        Raises:
            KernelMissing: not available in :mod:`pymli.capi`.
        """
        if self.fn:
            return capi_function(self.fn)
        win = self.window() if specialise else None
        if win is None:
            return lookup(*self._sig(in_qs))
        kernel, stride, padding = win
        return lookup(*self._sig(in_qs), kernel=kernel, stride=stride, padding=padding, specialise=True)

    def output_qparams(self, in_qs: list[QParams]) -> QParams:
        """Parameters of the output tensor struct handed to the kernel."""
        if self.out_q is not None:
            return self.out_q
        if self.follows(in_qs) or self.kernel_sets_output:
            return in_qs[0] if not self.kernel_sets_output else QParams(in_qs[0].el_type)
        raise MliError(Status.BAD_FUNC_CFG, f"layer {self.name}: output quantisation not set (quantise the network first)")

    def result_qparams(self, in_qs: list[QParams]) -> QParams:
        """Parameters the output has after the call (what the kernel sets, or what was asked)."""
        if self.kernel_sets_output:
            raise NotImplementedError
        return self.output_qparams(in_qs)

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> dict[str, Any] | None:
        """Call the facade function with the C argument order.

        May return extra named results ``{name: (values, QParams)}`` (e.g. an LSTM's cell state),
        captured as ``"<layer>.<name>"``.
        """
        fn(ins[0], out)

    def prepare(self) -> None:
        """One-time set-up before inference (e.g. LUT creation)."""

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        """A batched step computing what ``invoke(fn, ...)`` computes, straight through :mod:`pymli.kernels`.

        Every parameter (requantisation, bounds, geometry) is derived here, once, with the helpers
        :mod:`pymli.capi` uses; rounding is not: the kernels read the platform in force at run time.

        Args:
            fn: the capi callable :meth:`function` chose.
            in_qs: parameters of the inputs as the kernel receives them.
            in_shapes: input shapes of one sample.
            out_q: parameters of the output struct handed to the kernel (:meth:`output_qparams`).
            out_shape: output shape of one sample.

        Returns:
            The step, or None when this layer (or this call) has none: the network then calls
            :meth:`invoke` per sample. A layer whose :meth:`invoke` returns extra results has a
            step returning ``(output batch, {name: batch of that result})``.
        """
        return None

    def _registry_call(self, fn: Callable[..., Any], in_qs: list[QParams]) -> bool:
        """Whether ``fn`` is the registry's generic function of this signature or a specialisation
        computing the same (not an ``_ext_bias`` or other variant named with ``fn=``)."""
        try:
            e = entry(*self._sig(in_qs))
        except KernelMissing:
            return False
        win = self.window()
        names = {e.fn.__name__} | {s.fn.__name__ for s in e.specialisations
                                   if win is not None and s.fits(*win)}
        return getattr(fn, "__name__", None) in names

    # ---------------------------------------------------------------- float path
    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        """The layer in float64 NumPy on batches ``xs`` (batch axis first); ``original``: use the float
        constants the layer was quantised from."""
        raise NotImplementedError

    def __repr__(self) -> str:
        cfg = ", ".join(f"{k}={v}" for k, v in self.cfg_dict().items())
        return f"{type(self).__name__}({self.name!r}{', ' if cfg else ''}{cfg})"


# ====================================================================== MAC layers
class _MacLayer(Layer):
    weights: Const
    bias: Const
    relu: str = "none"

    def linear(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return F.relu(self.linear(xs[0], self.weights.value(original), self.bias.value(original)), self.relu)

    def accumulator(self, x_q: np.ndarray, in_q: QParams) -> np.ndarray:
        """The exact integer accumulator (bias included, before rescaling) for quantised inputs ``x_q``.

        FX: ``sum(x * w) + (bias << (in_frac + w_frac - bias_frac))``; SA8: ``sum((x - zp) * w) + bias``.
        Computed in float64: exact while every partial sum stays below 2**53, which holds for
        8/16-bit operands and fewer than 2**21 products per output.
        """
        wq, bqp = self.weights.qp, self.bias.qp
        w = np.asarray(self.weights.q, np.float64)
        b = np.asarray(self.bias.q, np.float64)
        x = np.asarray(x_q, np.float64)
        if in_q.el_type.is_sa:
            x = x - float(in_q.zero_point)
        else:
            b = b * 2.0 ** (in_q.frac_bits + wq.frac_bits - bqp.frac_bits)  # type: ignore[union-attr]
        return self.linear(x, w, b)

    def consts(self) -> dict[str, Const]:
        return {"weights": self.weights, "bias": self.bias}

    def signature(self, in_qs: list[QParams]) -> tuple[Op, tuple[ElType, ...]]:
        """MAC kernels are chosen by the input and weights types."""
        return self.op, (in_qs[0].el_type, self.weights.qp.el_type)  # type: ignore[union-attr]

    def _mac_params(self, in_q: QParams, in_shape: tuple[int, ...], out_q: QParams,
                    out_shape: tuple[int, ...]) -> tuple[KC.FxQuant | KC.Sa8Quant, tuple[int, int]]:
        """(quantisation, fused-ReLU bounds) as the capi function derives them from its structs."""
        in_t, out_t = in_q.empty(in_shape), out_q.empty(out_shape)
        w_t, b_t = self.weights.tensor(), self.bias.tensor()
        sa = in_q.el_type.is_sa
        n = int(self.weights.shape[-1])
        if sa:
            q: KC.FxQuant | KC.Sa8Quant = sa8_quant(in_t, w_t, out_t, n)
        else:
            w_el = self.weights.qp.el_type  # type: ignore[union-attr]
            # fx16 x fx16 keeps a 40-bit accumulator; fx16 x fx8 and fx8 x fx8 a 32-bit one
            q = fx_quant(in_t, w_t, b_t, out_t, 40 if w_el is ElType.FX_16 and in_q.el_type is ElType.FX_16 else 32,
                         out_q.el_type.bits)
        return q, out_bounds(ReluCfg(relu_type(self.relu)), out_t, sa)


class Conv2D(_MacLayer):
    """2-D convolution, HWCN weights ``[kh, kw, cin, cout]``, optional fused ReLU."""

    kind = "conv2d"
    op = Op.CONV2D

    def __init__(self, weights: Any, bias: Any, *, stride: int | tuple[int, int] = 1,
                 padding: int | tuple[int, ...] = 0, dilation: int | tuple[int, int] = 1, relu: str = "none",
                 **kw: Any) -> None:
        super().__init__(**kw)
        what = self._what
        self.weights, self.bias = _consts(weights, bias, 4, what)
        self.stride = pair(stride, "stride", what=what, lo=1, hi=255)
        self.padding = pad4(padding, what=what, hi=255)
        self.dilation = pair(dilation, "dilation", what=what, lo=1, hi=255)
        relu_type(relu)  # a name MLI knows (any case)
        self.relu = relu

    def cfg_dict(self) -> dict[str, Any]:
        return {"stride": self.stride, "padding": self.padding, "dilation": self.dilation, "relu": self.relu}

    def window(self) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int, int, int]] | None:
        """Kernel size, stride and padding (dilated layers have no specialisation)."""
        if self.dilation != (1, 1):
            return None
        return (int(self.weights.shape[0]), int(self.weights.shape[1])), self.stride, self.padding

    def cfg(self) -> Any:
        """The layer's ``mli_conv2d_cfg`` (:class:`pymli.capi.Conv2dCfg`)."""
        t, b, l, r = self.padding
        return Conv2dCfg(relu=ReluCfg(relu_type(self.relu)), stride_width=self.stride[1],
                         stride_height=self.stride[0], padding_left=l, padding_right=r, padding_top=t,
                         padding_bottom=b, dilation_width=self.dilation[1], dilation_height=self.dilation[0])

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        fn(ins[0], self.weights.tensor(), self.bias.tensor(), self.cfg(), out)

    #: the kernel of :mod:`pymli.kernels.convolution` computing this layer
    _kernel: ClassVar[Callable[..., np.ndarray]] = staticmethod(KC.conv2d_hwcn)  # type: ignore[assignment]
    _float: ClassVar[Callable[..., np.ndarray]] = staticmethod(F.conv2d)  # type: ignore[assignment]

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        if not self._registry_call(fn, in_qs) or in_qs[0].el_type is not out_q.el_type:
            return None
        q, bounds = self._mac_params(in_qs[0], in_shapes[0], out_q, out_shape)
        # (top, left): MLI's _k1x1 ignores the padding, but the registry picks it for unpadded layers only
        kw: dict[str, Any] = {"stride": self.stride, "pad": (self.padding[0], self.padding[2]),
                              "out_hw": tuple(out_shape[:2]), "bounds": bounds}
        if self.op is not Op.TRANSPOSE_CONV2D:
            kw["dilation"] = self.dilation
        w, b = fast_view(self.weights.tensor()), fast_view(self.bias.tensor())
        kernel, dtype = type(self)._kernel, out_q.el_type.dtype
        if kernel is KC.conv2d_hwcn or kernel is KC.depthwise_conv2d_hwcn:
            # weights layout, bias corrections, padded buffer and output stage prepared once
            pw = None
            if kernel is KC.conv2d_hwcn and tuple(self.stride) == (1, 1) and kw["pad"] == (0, 0) \
                    and tuple(out_shape[:2]) == tuple(in_shapes[0][:2]):
                pw = prepare_pointwise(w, b, q, bounds, dtype)
            if pw is not None:
                def pointwise(xs: list[np.ndarray]) -> np.ndarray:
                    return pw(xs[0])  # 1x1: the input pixels are the product's rows, whatever the size
                return pointwise
            layer = prepare_conv(w, b, q, **kw, depthwise=kernel is KC.depthwise_conv2d_hwcn, out_dtype=dtype)

            def conv(xs: list[np.ndarray]) -> np.ndarray:
                return layer(xs[0])  # the batch axis: one pass, each sample computed as alone
            return conv
        if kernel is KC.group_conv2d_hwcn:
            # merged groups, packed weights, padded buffer and output stage prepared once per input shape
            group = prepare_group_conv(w, b, q, **kw, out_dtype=dtype)

            def grouped(xs: list[np.ndarray]) -> np.ndarray:
                return group(xs[0])  # the batch axis: one pass, each sample computed as alone
            return grouped
        if kernel is KC.transpose_conv2d_hwcn:
            # the zero-inserted input's buffer and the mirrored kernel's convolution prepared once
            transposed = prepare_transpose_conv(w, b, q, **kw, out_dtype=dtype)

            def transpose(xs: list[np.ndarray]) -> np.ndarray:
                return transposed(xs[0])  # the batch axis: one pass, each sample computed as alone
            return transpose

        def step(xs: list[np.ndarray]) -> np.ndarray:
            # the convolution kernels take the batch axis: one pass, each sample computed as alone
            return kernel(xs[0], w, b, q, **kw).astype(dtype, copy=False)
        return step

    def _channels_fit(self, c: int) -> bool:
        return self.weights.shape[2] == c

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        h, w, c = _hwc(self, in_shapes[0])
        kh, kw = self.weights.shape[:2]
        if len(self.weights.shape) != 4 or not self._channels_fit(c):
            raise MliError(Status.SHAPE_MISMATCH, f"{self.name}: weights {self.weights.shape} do not fit input {in_shapes[0]}")
        t, b, l, r = self.padding
        return _positive(self, (conv_out_size(h, kh, self.stride[0], t, b, self.dilation[0]),
                                conv_out_size(w, kw, self.stride[1], l, r, self.dilation[1]), self.weights.shape[-1]))

    def mac_count(self, in_shapes: list[tuple[int, ...]]) -> int:
        # MACs per output value: the kernel window over the input channels one output reads
        # (weights.shape[2]: all of them, one for depthwise, a group's for grouped convolution)
        kh, kw, cin = self.weights.shape[:3]
        return kh * kw * cin

    def linear(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The layer before its fused ReLU, on given (float or integer-valued) arrays."""
        return self._float(x, w, b, self.stride, self.padding, self.dilation)


class DepthwiseConv2D(Conv2D):
    """Depthwise convolution, weights ``[kh, kw, 1, c]``."""

    kind = "depthwise_conv2d"
    op = Op.DEPTHWISE_CONV2D
    _kernel = staticmethod(KC.depthwise_conv2d_hwcn)
    _float = staticmethod(F.depthwise_conv2d)

    def _channels_fit(self, c: int) -> bool:
        return self.weights.shape[2] == 1 and self.weights.shape[3] == c



class GroupConv2D(Conv2D):
    """Grouped convolution, weights ``[kh, kw, cin / groups, cout]`` (``groups = cin / weights.shape[2]``,
    ``cout`` a multiple of ``groups``); output channel ``o`` reads input group ``o // (cout / groups)``."""

    kind = "group_conv2d"
    op = Op.GROUP_CONV2D
    _kernel = staticmethod(KC.group_conv2d_hwcn)
    _float = staticmethod(F.group_conv2d)

    def _channels_fit(self, c: int) -> bool:
        cg, cout = self.weights.shape[2], self.weights.shape[3]
        return cg > 0 and c % cg == 0 and cout % (c // cg) == 0



class TransposeConv2D(Conv2D):
    """Transpose convolution, HWCN weights ``[kh, kw, cin, cout]``.

    Output size per axis: ``(in - 1) * stride + k - pad_a - pad_b``; MLI wants ``pad < k`` and
    ``stride <= k``, no dilation.
    """

    kind = "transpose_conv2d"
    op = Op.TRANSPOSE_CONV2D
    _kernel = staticmethod(KC.transpose_conv2d_hwcn)

    def __init__(self, weights: Any, bias: Any, *, stride: int | tuple[int, int] = 1,
                 padding: int | tuple[int, ...] = 0, relu: str = "none", **kw: Any) -> None:
        super().__init__(weights, bias, stride=stride, padding=padding, dilation=1, relu=relu, **kw)

    def cfg_dict(self) -> dict[str, Any]:
        return {"stride": self.stride, "padding": self.padding, "relu": self.relu}

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        h, w, c = _hwc(self, in_shapes[0])
        if len(self.weights.shape) != 4 or self.weights.shape[2] != c:
            raise MliError(Status.SHAPE_MISMATCH, f"{self.name}: weights {self.weights.shape} do not fit input {in_shapes[0]}")
        kh, kw = self.weights.shape[:2]
        t, b, l, r = self.padding
        return _positive(self, (transpose_out_size(h, kh, self.stride[0], t, b),
                                transpose_out_size(w, kw, self.stride[1], l, r), self.weights.shape[3]))

    def mac_count(self, in_shapes: list[tuple[int, ...]]) -> int:
        kh, kw, cin = self.weights.shape[:3]
        # an output pixel meets at most ceil(k / stride) taps per axis
        return -(-kh // self.stride[0]) * -(-kw // self.stride[1]) * cin

    def linear(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        return F.transpose_conv2d(x, w, b, self.stride, self.padding)


class FullyConnected(_MacLayer):
    """Fully connected layer, weights ``[in, out]``; the input is taken flat (row-major HWC)."""

    kind = "fully_connected"
    op = Op.FULLY_CONNECTED

    def __init__(self, weights: Any, bias: Any, *, relu: str = "none", per_step: bool = False, **kw: Any) -> None:
        super().__init__(**kw)
        self.weights, self.bias = _consts(weights, bias, 2, self._what)
        relu_type(relu)  # a name MLI knows (any case)
        self.relu = relu
        if not isinstance(per_step, (bool, np.bool_)):
            raise MliError(Status.BAD_FUNC_CFG, f"{self._what}: per_step = {per_step!r:.40}: True or False expected")
        self.per_step = bool(per_step)

    def cfg_dict(self) -> dict[str, Any]:
        return {"relu": self.relu, **({"per_step": True} if self.per_step else {})}

    def cfg(self) -> Any:
        """The layer's ``mli_fully_connected_cfg``."""
        return FullyConnectedCfg(relu=ReluCfg(relu_type(self.relu)))

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        if not self.per_step:
            fn(ins[0], self.weights.tensor(), self.bias.tensor(), self.cfg(), out)
            return
        # one call per time step (row of the [T, in] input), as MLI's recurrent examples do
        x = ins[0].numpy()
        in_q, out_q = QParams.of(ins[0]), QParams.of(out)
        rows = []
        for t in range(x.shape[0]):
            o = out_q.empty((self.weights.shape[-1],))
            fn(in_q.tensor(x[t].reshape(-1)), self.weights.tensor(), self.bias.tensor(), self.cfg(), o)
            rows.append(o.numpy())
        out.view()[...] = np.stack(rows)

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        """One matrix product over the whole batch (every step of every sample with ``per_step``)."""
        if not self._registry_call(fn, in_qs):
            return None
        n_in, m = (int(d) for d in self.weights.shape)
        q, bounds = self._mac_params(in_qs[0], (n_in,), out_q, (m,))
        fc = prepare_fc(fast_view(self.weights.tensor()), fast_view(self.bias.tensor()), q, bounds,
                        out_q.el_type.dtype)
        if self.per_step:
            def steps(xs: list[np.ndarray]) -> np.ndarray:
                x = xs[0]
                return fc(x.reshape(x.shape[0], x.shape[1], n_in)).reshape(x.shape[0], *out_shape)
            return steps

        def step(xs: list[np.ndarray]) -> np.ndarray:
            x = xs[0]
            # (N, n_in) -> (N, m): out_shape is (m,)
            return fc(x if x.ndim == 2 else x.reshape(x.shape[0], n_in))
        return step

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        if self.per_step:
            if int(np.prod(in_shapes[0][1:])) != self.weights.shape[0]:
                raise MliError(Status.SHAPE_MISMATCH, f"{self.name}: steps of {in_shapes[0]} do not fit weights {self.weights.shape}")
            return (in_shapes[0][0], self.weights.shape[-1])
        n = int(np.prod(in_shapes[0]))
        if n != self.weights.shape[0]:
            raise MliError(Status.SHAPE_MISMATCH, f"{self.name}: input {in_shapes[0]} has {n} values, weights expect {self.weights.shape[0]}")
        return (self.weights.shape[-1],)

    def mac_count(self, in_shapes: list[tuple[int, ...]]) -> int:
        return self.weights.shape[0]

    def linear(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The layer before its fused ReLU (per step when ``per_step``), on given arrays."""
        if self.per_step:
            return x.reshape(x.shape[0], x.shape[1], -1) @ w + b
        return F.fully_connected(x, w, b)


# ====================================================================== pooling
class _Pool(Layer):

    def __init__(self, kernel: int | tuple[int, int], *, stride: int | tuple[int, int] = 1,
                 padding: int | tuple[int, ...] = 0, **kw: Any) -> None:
        super().__init__(**kw)
        what = self._what
        self.kernel = pair(kernel, "kernel", what=what, lo=1, hi=255)
        self.stride = pair(stride, "stride", what=what, lo=1, hi=255)
        self.padding = pad4(padding, what=what, hi=255)

    def cfg_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "stride": self.stride, "padding": self.padding}

    def window(self) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int, int, int]] | None:
        """Kernel size, stride and padding."""
        return self.kernel, self.stride, self.padding

    def cfg(self) -> Any:
        """The layer's ``mli_pool_cfg``."""
        t, b, l, r = self.padding
        return PoolCfg(kernel_width=self.kernel[1], kernel_height=self.kernel[0], stride_width=self.stride[1],
                       stride_height=self.stride[0], padding_left=l, padding_right=r, padding_top=t,
                       padding_bottom=b)

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        fn(ins[0], self.cfg(), out)

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        """The pooling kernel per sample (not for a geometry where MLI stores outside the output)."""
        h, w, _ = in_shapes[0]
        t, b, l, r = self.padding
        out_hw = (int(out_shape[0]), int(out_shape[1]))
        if (not self._registry_call(fn, in_qs) or in_qs[0].el_type is not out_q.el_type
                or KP.degenerate(h, w, self.kernel, self.stride, (t, b, l, r), out_hw)):
            return None
        geo = {"kernel": self.kernel, "stride": self.stride, "pad": (t, l), "out_hw": out_hw}
        return self._pool_step(in_qs[0], out_q, out_shape, geo)

    def _pool_step(self, in_q: QParams, out_q: QParams, out_shape: tuple[int, ...], geo: dict[str, Any]) -> Step:
        raise NotImplementedError

    @staticmethod
    def _prepared_step(prep: KP.PreparedPool, dtype: np.dtype) -> Step:
        """The step of a prepared pooling: its one-shape form per batch shape (a few kept), any batch
        axis pooled in one pass (each sample computed as alone)."""
        shaped: dict[tuple[int, ...], Callable[[np.ndarray], np.ndarray]] = {}

        def step(xs: list[np.ndarray]) -> np.ndarray:
            x = xs[0]
            f = shaped.get(x.shape)
            if f is None:
                if len(shaped) >= 4:
                    shaped.clear()
                f = shaped[x.shape] = prep.single(x.shape, x.dtype) or prep
            return f(x).astype(dtype, copy=False)
        return step

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        h, w, c = _hwc(self, in_shapes[0])
        t, b, l, r = self.padding
        return _positive(self, (conv_out_size(h, self.kernel[0], self.stride[0], t, b),
                conv_out_size(w, self.kernel[1], self.stride[1], l, r), c))


class MaxPool(_Pool):
    """Max pooling (HWC); the kernel copies the input's parameters to the output."""

    kind = "maxpool"
    op = Op.MAXPOOL
    follows_input = True

    def _pool_step(self, in_q: QParams, out_q: QParams, out_shape: tuple[int, ...], geo: dict[str, Any]) -> Step:
        return self._prepared_step(KP.PreparedPool("max", **geo), out_q.el_type.dtype)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return F.max_pool(xs[0], self.kernel, self.stride, self.padding)


class AvgPool(_Pool):
    """Average pooling (HWC) over the real elements of each window; converts to ``out_q``."""

    kind = "avepool"
    op = Op.AVEPOOL

    def mac_count(self, in_shapes: list[tuple[int, ...]]) -> int | None:
        return None

    def _pool_step(self, in_q: QParams, out_q: QParams, out_shape: tuple[int, ...], geo: dict[str, Any]) -> Step:
        if in_q.el_type.is_sa:
            rq = requant_params(int(in_q.scale), int(in_q.scale_frac_bits), int(in_q.zero_point),
                                int(out_q.scale), int(out_q.scale_frac_bits), int(out_q.zero_point))
            # the AVEPOOL_16BIT_MUL option is the platform's in force at run time (mul16=None)
            prep = KP.PreparedPool("ave", **geo, base_shift=0, requant=rq)
        else:
            prep = KP.PreparedPool("ave", **geo, base_shift=int(in_q.frac_bits) - int(out_q.frac_bits), mul16=False)
        return self._prepared_step(prep, out_q.el_type.dtype)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return F.avg_pool(xs[0], self.kernel, self.stride, self.padding)


# ====================================================================== element-wise
_ELT_OPS = {"add": Op.ADD, "sub": Op.SUB, "mul": Op.MUL, "min": Op.MIN, "max": Op.MAX}


class Eltwise(Layer):
    """Element-wise ``add``, ``sub``, ``mul``, ``min`` or ``max`` of two tensors (or a tensor and a constant)."""

    kind = "eltwise"
    _OPS: ClassVar[dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]]] = {
        "add": np.add, "sub": np.subtract, "mul": np.multiply, "min": np.minimum, "max": np.maximum}

    def __init__(self, op: str, *, const: Any = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.op = args.choice(op, {k: k for k in self._OPS}, "op", what=self._what)
        self.const = None if const is None else (const if isinstance(const, Const) else Const.from_float(const))
        self.n_inputs = 1 if self.const is not None else 2  # type: ignore[misc]

    def consts(self) -> dict[str, Const]:
        return {"in2": self.const} if self.const is not None else {}

    def cfg_dict(self) -> dict[str, Any]:
        return {"op": self.op}

    def signature(self, in_qs: list[QParams]) -> tuple[Op, tuple[ElType, ...]]:
        """The element-wise operation's function for the input type."""
        return _ELT_OPS[self.op], (in_qs[0].el_type,)

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        second = self.const.tensor() if self.const is not None else ins[1]
        fn(ins[0], second, out)

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        """Element-wise over the whole batch: operands of one shape, or a one-element constant."""
        a_shape = tuple(in_shapes[0])
        if self.const is not None:
            b_shape = tuple(self.const.shape)
            if self.const.q is None or self.const.qp is None:
                return None
            b_q = self.const.qp
        else:
            b_shape, b_q = tuple(in_shapes[1]), in_qs[1]
        el = in_qs[0].el_type
        scalar_b = self.const is not None and int(np.prod(b_shape)) == 1
        if (not self._registry_call(fn, in_qs) or int(np.prod(a_shape)) == 1 or (b_shape != a_shape and not scalar_b)
                or tuple(out_shape) != a_shape or out_q.el_type is not el or b_q.el_type is not el
                or any(q.el_type.is_sa and q.dim >= 0 for q in (in_qs[0], b_q, out_q))):
            return None
        const = None
        if self.const is not None:
            c = fast_view(self.const.tensor()) if self.const.tensor().rank else np.asarray(self.const.tensor().value)
            const = np.asarray(c.reshape(-1)[0] if scalar_b else c, dtype=el.dtype)
        op = EltOp(self.op)
        if el.is_sa:
            def q(p: QParams) -> tuple[int, int, int]:
                return int(p.scale), int(p.scale_frac_bits), int(p.zero_point)
            kw: dict[str, Any] = {"q1": q(in_qs[0]), "q2": q(b_q), "qo": q(out_q)}
            kernel: Callable[..., np.ndarray] = KE.eltwise_sa8
        else:
            kw = {"frac_bits": (int(in_qs[0].frac_bits), int(b_q.frac_bits), int(out_q.frac_bits)), "bits": el.bits}
            kernel = KE.eltwise_fx

        def step(xs: list[np.ndarray]) -> np.ndarray:
            b = const if const is not None else xs[1]
            return kernel(op, xs[0], b, **kw).astype(el.dtype, copy=False)
        return step

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        other = self.const.shape if self.const is not None else in_shapes[1]
        try:
            return tuple(np.broadcast_shapes(tuple(in_shapes[0]), tuple(other)))
        except ValueError:
            raise MliError(Status.SHAPE_MISMATCH, f"{self._what}: shapes {tuple(in_shapes[0])} and {tuple(other)} do "
                                                  "not broadcast") from None

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        b = self.const.value(original) if self.const is not None else xs[1]
        return self._OPS[self.op](xs[0], b)


# ====================================================================== activations
class ReLU(Layer):
    """ReLU of a given MLI type (``gen``, ``relu_1``, ``relu_6``); keeps the input's quantisation."""

    kind = "relu"
    follows_input = True

    def __init__(self, type: str = "gen", **kw: Any) -> None:
        super().__init__(**kw)
        relu_type(type)  # a name MLI knows (any case)
        self.type = type

    def cfg_dict(self) -> dict[str, Any]:
        return {"type": self.type}

    op = Op.RELU

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        fn(ins[0], ReluCfg(relu_type(self.type)), out)

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        """A clamp of the whole batch with the input's bounds."""
        q = in_qs[0]
        if not self._registry_call(fn, in_qs) or out_q.el_type is not q.el_type or (q.el_type.is_sa and q.dim >= 0):
            return None
        kw = ({"zero": int(q.zero_point), "scale": int(q.scale), "shift": int(q.scale_frac_bits)} if q.el_type.is_sa
              else {"zero": 0, "scale": 1, "shift": int(q.frac_bits)})
        # kernels.activation.relu with its bounds derived once (relu_limits does not depend on the platform)
        t = q.el_type.dtype.type
        lo, hi = (t(v) for v in relu_limits(int(relu_type(self.type)), q.el_type.bits, **kw))

        def step(xs: list[np.ndarray]) -> np.ndarray:
            return np.clip(xs[0], lo, hi)
        return step

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return F.relu(xs[0], self.type)


class LeakyReLU(Layer):
    """Leaky ReLU with a scalar slope (a rank-0 constant); FX keeps the input's frac_bits."""

    kind = "leaky_relu"

    def __init__(self, slope: Any, **kw: Any) -> None:
        super().__init__(**kw)
        self.slope = slope if isinstance(slope, Const) else Const.from_float(slope)

    def consts(self) -> dict[str, Const]:
        return {"slope": self.slope}

    def follows(self, in_qs: list[QParams]) -> bool:
        return in_qs[0].el_type.is_fx

    op = Op.LEAKY_RELU

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        fn(ins[0], self.slope.tensor(), out)

    def _slope_args(self, fn: Callable[..., Any], in_qs: list[QParams], out_q: QParams) -> dict[str, int] | None:
        """The kernels' quantisation arguments (per-tensor values as C reads them: the first of each
        vector), or None when this call has no step."""
        q, sq = in_qs[0], self.slope.qp
        if (not self._registry_call(fn, in_qs) or sq is None or self.slope.q is None or out_q.el_type is not q.el_type
                or sq.el_type is not q.el_type):
            return None

        def first(v: Any) -> int:
            return int(np.asarray(v).reshape(-1)[0])
        if q.el_type.is_sa:
            return {"in_zp": first(q.zero_point), "in_scale": first(q.scale), "in_sfb": first(q.scale_frac_bits),
                    "out_zp": first(out_q.zero_point), "out_scale": first(out_q.scale),
                    "out_sfb": first(out_q.scale_frac_bits), "slope_zp": first(sq.zero_point),
                    "slope_scale": first(sq.scale), "slope_sfb": first(sq.scale_frac_bits)}
        return {"shift": int(q.frac_bits) + int(sq.frac_bits) - int(out_q.frac_bits)}

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        """The leaky ReLU of the whole batch (element-wise) with the slope read once."""
        kw = self._slope_args(fn, in_qs, out_q)
        if kw is None:
            return None
        el = in_qs[0].el_type
        alpha = int(wrap(int(np.asarray(self.slope.q).reshape(-1)[0]), el.bits))
        if el.is_sa:
            def step(xs: list[np.ndarray]) -> np.ndarray:
                return KA.leaky_relu_sa8(xs[0], alpha, **kw)
        else:
            def step(xs: list[np.ndarray]) -> np.ndarray:
                return KA.leaky_relu_fx(xs[0], alpha, kw["shift"], normalise=el is ElType.FX_16)
        return step

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        s = self.slope.value(original)
        return np.where(xs[0] >= 0, xs[0], xs[0] * s)


class PReLU(LeakyReLU):
    """Parametric ReLU: one slope per slice along ``axis`` of the sample (default: the last, channels)."""

    kind = "prelu"

    def __init__(self, slope: Any, axis: int | None = None, **kw: Any) -> None:
        super().__init__(slope, **kw)
        self.axis = None if axis is None else args.integer(axis, "axis", what=self._what, lo=0, hi=3)
        self._slope_tensor: tuple[int, Tensor] | None = None

    def cfg_dict(self) -> dict[str, Any]:
        return {"axis": self.axis}

    op = Op.PRELU

    def _axis(self, rank: int) -> int:
        return rank - 1 if self.axis is None else self.axis

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        rank = ins[0].rank
        axis = self._axis(rank)
        if self._slope_tensor is None or self._slope_tensor[0] != rank:
            # MLI wants the slopes as a tensor of the input's rank: shape 1 except on the axis
            shape = [1] * rank
            shape[axis] = -1
            self._slope_tensor = (rank, self.slope.qp.tensor(np.asarray(self.slope.q).reshape(shape)))  # type: ignore[union-attr]
        fn(ins[0], self._slope_tensor[1], PreluCfg(axis=axis), out)

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        """The PReLU of the whole batch, the slopes along the axis shifted past the sample axis."""
        kw = self._slope_args(fn, in_qs, out_q)
        if kw is None:
            return None
        axis = self._axis(len(in_shapes[0]))
        slopes = np.asarray(self.slope.q, dtype=np.int64).reshape(-1)
        if slopes.size != in_shapes[0][axis]:
            return None
        if in_qs[0].el_type.is_sa:
            def step(xs: list[np.ndarray]) -> np.ndarray:
                return KA.prelu_sa8(xs[0], slopes, axis=axis + 1, **kw)
        else:
            def step(xs: list[np.ndarray]) -> np.ndarray:
                return KA.prelu_fx(xs[0], slopes, kw["shift"], axis=axis + 1)
        return step

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        x = xs[0]
        s = self.slope.value(original)
        shape = [1] * x.ndim
        shape[self._axis(x.ndim - 1) + 1] = -1  # axis 0 is the batch
        return np.where(x >= 0, x, x * s.reshape(shape))


class _LutLayer(Layer):
    """A LUT-based activation; the LUT is created once with ``mli_krn_<name>_create_lut``."""

    kernel_sets_output = True
    #: output parameters the MLI kernel writes: (sa8 zero point, sa8 scale_frac_bits); fx: all value bits fractional
    _sa8_out: ClassVar[tuple[int, int]] = (-128, 8)

    def result_qparams(self, in_qs: list[QParams]) -> QParams:
        el = in_qs[0].el_type
        if el.is_sa:
            return QParams.sa(self._sa8_out[0], 1, self._sa8_out[1])
        return QParams(el, frac_bits=el.bits - 1)

    def __init__(self, lut: Lut | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.lut = lut

    def prepare(self) -> None:
        if self.lut is not None:
            return
        self.lut = new_lut(self.op)

    def _lut_in(self, fn: Callable[..., Any], in_qs: list[QParams], out_q: QParams) -> dict[str, int] | None:
        """The input parameters the LUT kernels read, or None when there is no step for this call."""
        q = in_qs[0]
        if not self._registry_call(fn, in_qs) or self.lut is None or out_q.el_type is not q.el_type:
            return None
        if q.el_type.is_sa:
            if q.dim >= 0:
                return None
            # the C struct's int16 / int16 / int8 fields, as the capi function reads them
            return {"in_zp": int(wrap(int(q.zero_point), 16)), "in_scale": int(wrap(int(q.scale), 16)),
                    "in_shift": int(wrap(int(q.scale_frac_bits), 8))}
        return {"in_frac_bits": int(q.frac_bits)}


class _AxisLutLayer(_LutLayer):
    """A LUT-based layer along ``axis`` (a negative axis: the whole tensor), a C int ``axis`` in its cfg."""

    def __init__(self, axis: int = -1, **kw: Any) -> None:
        super().__init__(**kw)
        self.axis = args.integer(axis, "axis", what=self._what, lo=-(2**31), hi=3)

    def cfg_dict(self) -> dict[str, Any]:
        return {"axis": self.axis}

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        return _axis_fits(self, in_shapes[0])

    def _batched(self, kernel: Callable[..., np.ndarray], dtype: Any, **kw: Any) -> Step:
        """A step running ``kernel`` on the whole batch: the slices along ``axis`` (or each whole
        sample for a negative axis) are the kernel's slices along the matching batch axis."""
        axis = self.axis

        def step(xs: list[np.ndarray]) -> np.ndarray:
            x = xs[0]
            if axis < 0:
                flat = x.reshape(x.shape[0], -1)
                return kernel(flat, axis=1, **kw).astype(dtype, copy=False).reshape(x.shape)
            return kernel(x, axis=axis + 1, **kw).astype(dtype, copy=False)
        return step


class Softmax(_AxisLutLayer):
    """LUT-based softmax along ``axis``; the kernel sets the output parameters."""

    kind = "softmax"

    op = Op.SOFTMAX

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        fn(ins[0], self.lut, SoftmaxCfg(axis=self.axis), out)

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        """The softmax kernel over the whole batch."""
        p = self._lut_in(fn, in_qs, out_q)
        if p is None:
            return None
        el = in_qs[0].el_type
        if el.is_sa:
            return self._batched(KT.softmax_sa8, el.dtype, lut=self.lut, in_scale=p["in_scale"],
                                 in_shift=p["in_shift"])
        return self._batched(KT.softmax_fx, el.dtype, lut=self.lut, in_frac_bits=p["in_frac_bits"], bits=el.bits)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        x = xs[0]
        if self.axis < 0:  # MLI: a negative axis means the whole tensor
            return F.softmax(x.reshape(x.shape[0], -1), -1).reshape(x.shape)
        return F.softmax(x, self.axis + 1)


class Sigmoid(_LutLayer):
    """LUT-based logistic function."""

    kind = "sigm"

    op = Op.SIGM

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        fn(ins[0], self.lut, out)

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        """The table lookup of the whole batch (element-wise)."""
        p = self._lut_in(fn, in_qs, out_q)
        if p is None:
            return None
        el, lut = in_qs[0].el_type, self.lut
        if el.is_sa:
            kw = dict(p, out_zp=self._sa8_out[0], out_shift=self._sa8_out[1])

            def step(xs: list[np.ndarray]) -> np.ndarray:
                return KT.lut_activation_sa8(xs[0], lut, **kw).astype(el.dtype, copy=False)
        else:
            def step(xs: list[np.ndarray]) -> np.ndarray:
                return KT.lut_activation_fx(xs[0], lut, in_frac_bits=p["in_frac_bits"],
                                            out_bits=el.bits).astype(el.dtype, copy=False)
        return step

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return F.sigmoid(xs[0])


class Tanh(Sigmoid):
    """LUT-based hyperbolic tangent."""

    kind = "tanh"
    _sa8_out = (0, 7)

    op = Op.TANH

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return np.tanh(xs[0])


class L2Normalize(_AxisLutLayer):
    """``x / ||x||_2`` (``mli_krn_l2_normalize_*``) over the whole tensor (``axis < 0``) or along ``axis``;
    the kernel sets the output parameters (FX16 Q15, SA8 zero point 0 and scale 2**-7)."""

    kind = "l2_normalize"
    _sa8_out = (0, 7)

    op = Op.L2_NORMALIZE

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        fn(ins[0], None, self.lut, L2NormalizeCfg(axis=self.axis), out)

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        """The normalisation kernel over the whole batch."""
        p = self._lut_in(fn, in_qs, out_q)
        if p is None:
            return None
        el = in_qs[0].el_type
        kw: dict[str, Any] = ({"bits": 8, "out_shift": KT.L2NORM_SA8_OUT[1], "in_zp": p["in_zp"]} if el.is_sa
                              else {"bits": 16, "out_shift": 15})
        return self._batched(KT.l2_normalize, el.dtype, lut=self.lut, **kw)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return F.l2_normalize(xs[0], None if self.axis < 0 else self.axis + 1)


class Argmax(Layer):
    """``mli_krn_argmax_*``: element offsets of the ``topk`` largest values, as an output layer.

    ``axis < 0``: the whole sample is one slice (output ``[1, topk]``); else one slice per index of
    ``axis`` (output ``[shape[axis], topk]``), each offset counted from the sample's first element.
    The output is SA32 with zero point 0 and scale 1 (the plain offsets); as the network output,
    :meth:`RunResult.predictions` returns the first offset per sample. Ties: MLI's order (last
    maximum first for ``topk = 1``).
    """

    kind = "argmax"
    kernel_sets_output = True
    is_index_output = True

    def __init__(self, axis: int = -1, topk: int = 1, **kw: Any) -> None:
        super().__init__(**kw)
        self.axis = args.integer(axis, "axis", what=self._what, lo=-(2**31), hi=3)
        self.topk = args.integer(topk, "topk", what=self._what, lo=1, hi=2**31 - 1)

    def cfg_dict(self) -> dict[str, Any]:
        return {"axis": self.axis, "topk": self.topk}

    op = Op.ARGMAX

    def output_qparams(self, in_qs: list[QParams]) -> QParams:
        return QParams.sa(0, 1, 0, -1, ElType.SA_32)

    def result_qparams(self, in_qs: list[QParams]) -> QParams:
        return self.output_qparams(in_qs)

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        shape = _axis_fits(self, in_shapes[0])
        slices = 1 if self.axis < 0 else shape[self.axis]
        if not 1 <= self.topk <= int(np.prod(shape)) // slices:
            raise MliError(Status.BAD_FUNC_CFG, f"{self.name}: topk {self.topk} outside 1..{int(np.prod(shape)) // slices}")
        return (slices, self.topk)

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        fn(ins[0], ArgmaxCfg(axis=self.axis, topk=self.topk), out)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        x = xs[0]
        n = x.shape[0]
        offs = np.arange(int(np.prod(x.shape[1:]))).reshape(x.shape[1:])
        if self.axis < 0:
            vals, offs = x.reshape(n, 1, -1), offs.reshape(1, -1)
        else:
            vals = np.moveaxis(x, self.axis + 1, 1).reshape(n, x.shape[self.axis + 1], -1)
            offs = np.moveaxis(offs, self.axis, 0).reshape(x.shape[self.axis + 1], -1)
        # largest first; among equal values the later element first, as MLI's heap does for topk 1
        order = np.argsort(-vals[..., ::-1], axis=-1, kind="stable")[..., : self.topk]
        idx = vals.shape[-1] - 1 - order
        return np.take_along_axis(np.broadcast_to(offs, vals.shape), idx, axis=-1).astype(np.float64)


# ====================================================================== data movement
class Permute(Layer):
    """Reorder dimensions (``perm`` over the sample's axes); keeps the quantisation."""

    kind = "permute"
    follows_input = True

    def __init__(self, perm: list[int], **kw: Any) -> None:
        super().__init__(**kw)
        self.perm = args.int_list(perm, "perm", what=self._what, lo=0, hi=3)
        if sorted(self.perm) != list(range(len(self.perm))):
            raise MliError(Status.BAD_FUNC_CFG, f"{self._what}: perm {self.perm} is not a permutation")

    def cfg_dict(self) -> dict[str, Any]:
        return {"perm": self.perm}

    op = Op.PERMUTE

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        fn(ins[0], PermuteCfg(perm_dim=self.perm + [0] * (4 - len(self.perm))), out)

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        """A transpose of the batch (the sample axis stays first)."""
        if not self._registry_call(fn, in_qs) or out_q.el_type is not in_qs[0].el_type:
            return None
        axes = [0, *(p + 1 for p in self.perm)]

        def step(xs: list[np.ndarray]) -> np.ndarray:
            return np.ascontiguousarray(np.transpose(xs[0], axes))
        return step

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        if len(self.perm) != len(in_shapes[0]):
            raise MliError(Status.BAD_FUNC_CFG, f"{self._what}: perm {self.perm} for an input of rank "
                                                f"{len(in_shapes[0])}")
        return tuple(in_shapes[0][p] for p in self.perm)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return np.transpose(xs[0], [0] + [p + 1 for p in self.perm])


class Concat(Layer):
    """Concatenation of several tensors along ``axis`` (``mli_krn_concat_*``, MLI 1.x API kept by pymli).

    All inputs must have one quantisation (the quantiser gives their producers a common format);
    the kernel copies it to the output.
    """

    kind = "concat"
    follows_input = True

    def __init__(self, axis: int = -1, **kw: Any) -> None:
        super().__init__(**kw)
        self.axis = args.integer(axis, "axis", what=self._what, lo=-4, hi=3)

    def cfg_dict(self) -> dict[str, Any]:
        return {"axis": self.axis}

    def _axis(self, rank: int) -> int:
        return self.axis % rank

    op = Op.CONCAT

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        fn(ins, ConcatCfg(tensors_num=len(ins), axis=self._axis(ins[0].rank)), out)

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        """A concatenation of the batches (inputs of one quantisation)."""
        if (not self._registry_call(fn, in_qs) or any(q != in_qs[0] for q in in_qs)
                or out_q.el_type is not in_qs[0].el_type):
            return None
        axis = self._axis(len(in_shapes[0])) + 1

        def step(xs: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(xs, axis=axis)
        return step

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        if len(in_shapes) < 2:
            raise MliError(Status.BAD_FUNC_CFG, f"{self.name}: concat needs at least two inputs (name them in inputs=[...])")
        rank = len(in_shapes[0])
        ax = self._axis(rank)
        for s in in_shapes[1:]:
            if len(s) != rank or any(a != b for i, (a, b) in enumerate(zip(s, in_shapes[0])) if i != ax):
                raise MliError(Status.SHAPE_MISMATCH, f"{self.name}: shapes {in_shapes} do not concatenate along axis {ax}")
        out = list(in_shapes[0])
        out[ax] = sum(s[ax] for s in in_shapes)
        return tuple(out)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return np.concatenate(xs, axis=self._axis(xs[0].ndim - 1) + 1)


class Pad2D(Layer):
    """Zero padding of an HWC feature map (``mli_krn_padding2d_hwc_*``); padding (top, bottom, left,
    right) or one int for every side; SA8 pads with the zero point (the real value 0)."""

    kind = "pad2d"
    follows_input = True

    def __init__(self, padding: int | tuple[int, ...], **kw: Any) -> None:
        super().__init__(**kw)
        self.padding = pad4(padding, what=self._what, hi=255)

    def cfg_dict(self) -> dict[str, Any]:
        return {"padding": self.padding}

    op = Op.PADDING2D_HWC

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        t, b, l, r = self.padding
        fn(ins[0], Padding2dCfg(padding_left=l, padding_right=r, padding_top=t, padding_bottom=b), out)

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        """The padding kernel per sample, filling with the real value 0 (the zero point for SA8)."""
        q = in_qs[0]
        if not self._registry_call(fn, in_qs) or out_q.el_type is not q.el_type or (q.el_type.is_sa and q.dim >= 0):
            return None
        t, b, l, r = self.padding
        value = int(q.zero_point) if q.el_type.is_sa else 0

        def step(xs: list[np.ndarray]) -> np.ndarray:
            return per_sample(pad2d, xs[0], out_shape, q.el_type.dtype, top=t, bottom=b, left=l, right=r,
                              layout="hwc", value=value)
        return step

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        h, w, c = _hwc(self, in_shapes[0])
        t, b, l, r = self.padding
        return (h + t + b, w + l + r, c)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return F.pad_hw(xs[0], self.padding)


LAYER_TYPES: dict[str, type[Layer]] = {c.kind: c for c in (
    Conv2D, DepthwiseConv2D, GroupConv2D, TransposeConv2D, FullyConnected, MaxPool, AvgPool, Eltwise, ReLU,
    LeakyReLU, PReLU, Softmax, Sigmoid, Tanh, L2Normalize, Argmax, Permute, Concat, Pad2D)}

"""Pythonic convolution and fully-connected layers over :class:`pymli.Tensor`.

Each function picks the MLI kernel from the tensor types (FX_16 x FX_16, FX_16 x FX_8 weights,
SA_8 x SA_8 with SA_32 bias), builds the cfg, allocates the output and runs the checked MLI code
of :mod:`pymli.capi`::

    y = pymli.ops.conv2d(x, w, b, stride=2, padding="same", relu="relu6")

Output quantisation (``out_quant``):

* ``None``: derived from this call's own exact result (the layer is computed once in floating
  point from the integer accumulators to find its range);
* a dict: ``{"frac_bits": n}`` (FX), ``{"zero_point": z, "scale": s, "scale_frac_bits": f}`` (SA),
  or ``{"min": lo, "max": hi}`` (a float range);
* an array of floats: a calibration sample of the expected outputs (its min / max are used).

Ranges become parameters through :mod:`pymli.quant` as MLI's own test quantiser does (see
:mod:`pymli.graph.outquant`): FX takes the largest ``frac_bits`` whose range holds the values (at
most input + weights fractional bits); SA8 takes ``scale = (max - min) / 254`` as a 16-bit mantissa
and ``zero_point = round(-centre / scale)``. The MLI function is chosen by
:func:`pymli.graph.registry.lookup` from the input and weights types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ..capi.types import Conv2dCfg, FullyConnectedCfg, ReluCfg, ReluType
from ..checks import validate_tensor
from ..checks.tensor import count_elements
from ..errors import MliError, Status
from ..formats import MAC_TYPES, ElType
from ..graph.activation import relu_type
from ..graph import args
from ..graph.geometry import Padding, conv_out_size, pair, resolve_padding, transpose_out_size
from ..graph.geometry import same_padding as _same_padding
from ..graph.geometry import transpose_same_padding
from ..graph.outquant import output_fields, zero_bias
from ..graph.registry import KernelMissing, Op, lookup
from ..kernels import convolution as K
from ..tensor import Tensor
from ._doc import sections

__all__ = [
    "conv2d",
    "conv_output_size",
    "depthwise_conv2d",
    "fully_connected",
    "group_conv2d",
    "same_padding",
    "transpose_conv2d",
]


def conv_output_size(in_size: int, k: int, stride: int, pad_a: int = 0, pad_b: int = 0, dilation: int = 1) -> int:
    """Output length of one convolution / pooling axis: ``(in + pads - ((k - 1) * dilation + 1)) // stride + 1``.

    Args:
        in_size: input length (>= 1); k: kernel length (>= 1); stride: step (>= 1);
        pad_a, pad_b: padding before and after (>= 0); dilation: dilation factor (>= 1).

    Returns:
        The output length (<= 0 when the padded input is shorter than the dilated kernel).

    Raises:
        MliError: BAD_FUNC_CFG for a value that is not an int in its range.
    """
    what = "conv_output_size"
    return conv_out_size(args.integer(in_size, "in_size", what=what, lo=1), args.integer(k, "k", what=what, lo=1),
                         args.integer(stride, "stride", what=what, lo=1),
                         args.integer(pad_a, "pad_a", what=what, lo=0), args.integer(pad_b, "pad_b", what=what, lo=0),
                         args.integer(dilation, "dilation", what=what, lo=1))


def same_padding(in_size: int, k: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TensorFlow ``SAME`` padding ``(before, after)`` of one axis: output ``ceil(in / stride)``.

    Args:
        in_size: input length (>= 1); k: kernel length (>= 1); stride: step (>= 1);
        dilation: dilation factor (>= 1).

    Returns:
        (padding before, padding after), the odd element after.

    Raises:
        MliError: BAD_FUNC_CFG for a value that is not an int in its range.
    """
    what = "same_padding"
    return _same_padding(args.integer(in_size, "in_size", what=what, lo=1), args.integer(k, "k", what=what, lo=1),
                         args.integer(stride, "stride", what=what, lo=1),
                         args.integer(dilation, "dilation", what=what, lo=1))


def _function(op: Op, x: Tensor, w: Tensor) -> Callable[..., Any]:
    """The MLI function for these input and weights types; TYPE_MISMATCH when MLI has none."""
    try:
        return lookup(op, x.el_type, w.el_type)
    except KernelMissing:
        raise MliError(Status.TYPE_MISMATCH, f"no MLI {op.value} for input {x.el_type.name} with weights "
                                             f"{w.el_type.name}") from None


def _operands(what: str, op: Op, x: Any, w: Any, b: Any, ranks: tuple[int, int]) -> Callable[..., Any]:
    """Check the tensors of a MAC layer (structs, types, ranks, quantisation) and return its MLI function."""
    args.tensor(x, "x", what=what)
    args.tensor(w, "w", what=what)
    if b is not None:
        args.tensor(b, "b", what=what)
    fn = _function(op, x, w)
    args.tensor(x, "x", what=what, ranks=(ranks[0],))
    args.tensor(w, "w", what=what, ranks=(ranks[1],))
    # the parameters the front end reads to build the output, the zero bias and the float reference:
    # checked as MLI does, before anything is computed
    validate_tensor(x)
    validate_tensor(w)
    if b is not None:
        n = int(w.shape[ranks[1] - 1])
        validate_tensor(b)
        bias_el = next((t[2] for t in MAC_TYPES.values() if t[:2] == (x.el_type, w.el_type)), None)
        if b.el_type is not bias_el:
            raise MliError(Status.TYPE_MISMATCH, f"{what}: bias {b.el_type.name}, expected {bias_el.name if bias_el else '?'}")
        if b.rank != 1 or int(b.shape[0]) != n:
            raise MliError(Status.SHAPE_MISMATCH, f"{what}: bias shape {list(b.shape[:b.rank])}, expected [{n}]")
    return fn


def _check_out(what: str, shape: tuple[int, ...], el: ElType) -> None:
    if any(s <= 0 for s in shape):
        raise MliError(Status.BAD_FUNC_CFG, f"{what}: empty output {list(shape)} (kernel larger than the padded input)")
    args.check_alloc(shape, el, what=what)


def _uint8(what: str, **values: int | tuple[int, ...]) -> None:
    """The cfg fields are ``uint8_t`` in ``mli_conv2d_cfg`` / ``mli_pool_cfg``: refuse what they cannot hold."""
    for name, v in values.items():
        for i in (v if isinstance(v, tuple) else (v,)):
            if i > args.UINT8[1]:
                raise MliError(Status.BAD_FUNC_CFG, f"{what}: {name} {v} does not fit the uint8_t cfg field (0..255)")


# ------------------------------------------------------------------------------ float reference
def _dequant_acc(acc: np.ndarray, x: Tensor, w: Tensor, b: Tensor, n: int) -> np.ndarray:
    """Float value of accumulator + bias (before requantisation), channels last."""
    if x.el_type.is_sa:
        s_in = int(np.asarray(x.scale).reshape(-1)[0]) / 2.0 ** int(np.asarray(x.scale_frac_bits).reshape(-1)[0])
        ws = (w.quant_vector("scale", n) / 2.0 ** w.quant_vector("scale_frac_bits", n)) if w.dim >= 0 else \
            np.asarray([int(w.scale) / 2.0 ** int(w.scale_frac_bits)])
        bs = (b.quant_vector("scale", n) / 2.0 ** b.quant_vector("scale_frac_bits", n)) if b.dim >= 0 else \
            np.asarray([int(b.scale) / 2.0 ** int(b.scale_frac_bits)])
        return acc * (s_in * ws) + b.numpy().astype(np.float64) * bs
    return acc * 2.0 ** -(x.frac_bits + w.frac_bits) + b.numpy() * 2.0 ** -b.frac_bits


def _apply_relu(v: np.ndarray, r: ReluType) -> np.ndarray:
    if r == ReluType.GEN:
        return np.maximum(v, 0)
    if r == ReluType.RELU_1:
        return np.clip(v, -1, 1)
    if r == ReluType.RELU_6:
        return np.clip(v, 0, 6)
    return v


def _centred(x: Tensor) -> np.ndarray:
    v = x.numpy().astype(np.int64)
    if x.el_type.is_sa:
        v = v - int(np.asarray(x.zero_point).reshape(-1)[0])
    return v


def _out(shape: tuple[int, ...], x: Tensor, w: Tensor, out_quant: Any, float_ref: Callable[[], np.ndarray],
         what: str) -> Tensor:
    fields = output_fields(x.el_type, out_quant, float_ref, max_frac=x.frac_bits + w.frac_bits, what=what)
    return Tensor.zeros(shape, x.el_type, **fields)


# ------------------------------------------------------------------------------ layers
_CONV_OPS = {"conv": Op.CONV2D, "depthwise": Op.DEPTHWISE_CONV2D, "group": Op.GROUP_CONV2D}


def _conv_common(op: str, x: Tensor, w: Tensor, b: Tensor | None, stride: int | tuple[int, int],
                 padding: Padding, dilation: int | tuple[int, int], relu: str | None, out_quant: Any) -> Tensor:
    what = {"conv": "conv2d", "depthwise": "depthwise_conv2d", "group": "group_conv2d"}[op]
    fn = _operands(what, _CONV_OPS[op], x, w, b, (3, 4))
    rt = relu_type(relu)
    s = pair(stride, "stride", what=what, lo=1)
    d = pair(dilation, "dilation", what=what, lo=1)
    kh, kw = int(w.shape[0]), int(w.shape[1])
    h, wd = int(x.shape[0]), int(x.shape[1])
    n = int(w.shape[3])
    t, bo, l, r = resolve_padding(padding, (h, wd), (kh, kw), s, d)
    ho = conv_out_size(h, kh, s[0], t, bo, d[0])
    wo = conv_out_size(wd, kw, s[1], l, r, d[1])
    _check_out(what, (ho, wo, n), x.el_type)
    _uint8(what, stride=s, dilation=d, padding=(t, bo, l, r))
    if b is None:
        b = zero_bias(x, w, n)
    cfg = Conv2dCfg(relu=ReluCfg(rt), stride_width=s[1], stride_height=s[0], padding_left=l, padding_right=r,
                    padding_top=t, padding_bottom=bo, dilation_width=d[1], dilation_height=d[0])

    def float_ref() -> np.ndarray:
        xc, wv = _centred(x), w.numpy().astype(np.int64)
        geo = {"stride": s, "dilation": d, "pad": (t, l), "out_hw": (ho, wo)}
        if op == "depthwise":
            acc = K.depthwise_accumulate(xc, wv, **geo)[0]
        else:
            acc = K.conv_accumulate(xc, wv, groups=int(x.shape[2]) // int(w.shape[2]), **geo)[0]
        return _apply_relu(_dequant_acc(acc.astype(np.float64), x, w, b, n), rt)

    out = _out((ho, wo, n), x, w, out_quant, float_ref, what)
    fn(x, w, b, cfg, out)
    return out


_CONV_SECTIONS = """
Args:
    x: (H, W, Cin) input, FX_16 or SA_8.
    w: {weights} weights (FX_16 / FX_8 for FX_16 input, SA_8 for SA_8 input).
    b: (Cout,) bias (FX of the weights' type, SA_32 with scale = in scale x weights scale);
        ``None`` for a zero bias.
    stride, dilation: an int or (height, width).
    padding: an int, (vertical, horizontal), (top, bottom, left, right), 'same' or 'valid'.
    relu: None, 'gen' (max(x, 0)), 'relu1' (clip to [-1, 1]) or 'relu6' (clip to [0, 6]).
    out_quant: output quantisation (see the module docstring).

Returns:
    A new dense (Ho, Wo, Cout) tensor of the input's element type{cout}.

Raises:
    MliError: the status the MLI function returns for invalid arguments (nothing is computed).
"""


@sections(_CONV_SECTIONS, weights="(Kh, Kw, Cin, Cout) HWCN", cout="")
def conv2d(x: Tensor, w: Tensor, b: Tensor | None = None, stride: int | tuple[int, int] = 1,
           padding: Padding = 0, dilation: int | tuple[int, int] = 1, relu: str | None = None,
           out_quant: dict[str, Any] | npt.ArrayLike | None = None) -> Tensor:
    """2-D convolution (``mli_krn_conv2d_hwcn_*``) returning a new tensor."""
    return _conv_common("conv", x, w, b, stride, padding, dilation, relu, out_quant)


@sections(_CONV_SECTIONS, weights="(Kh, Kw, 1, Cout) HW1N", cout=" (Cout = Cin)")
def depthwise_conv2d(x: Tensor, w: Tensor, b: Tensor | None = None, stride: int | tuple[int, int] = 1,
                     padding: Padding = 0, dilation: int | tuple[int, int] = 1, relu: str | None = None,
                     out_quant: dict[str, Any] | npt.ArrayLike | None = None) -> Tensor:
    """Depthwise convolution (``mli_krn_depthwise_conv2d_hwcn_*``): one filter per input channel."""
    return _conv_common("depthwise", x, w, b, stride, padding, dilation, relu, out_quant)


@sections(_CONV_SECTIONS, weights="(Kh, Kw, Cin / groups, Cout) HWCN", cout=" (Cout a multiple of the groups)")
def group_conv2d(x: Tensor, w: Tensor, b: Tensor | None = None, stride: int | tuple[int, int] = 1,
                 padding: Padding = 0, dilation: int | tuple[int, int] = 1, relu: str | None = None,
                 out_quant: dict[str, Any] | npt.ArrayLike | None = None) -> Tensor:
    """Group convolution (``mli_krn_group_conv2d_hwcn_*``): ``Cin / w.shape[2]`` groups."""
    return _conv_common("group", x, w, b, stride, padding, dilation, relu, out_quant)


def transpose_conv2d(x: Tensor, w: Tensor, b: Tensor | None = None, stride: int | tuple[int, int] = 1,
                     padding: Padding = 0, relu: str | None = None,
                     out_quant: dict[str, Any] | npt.ArrayLike | None = None) -> Tensor:
    """Transpose convolution (``mli_krn_transpose_conv2d_hwcn_*``).

    The output is ``(in - 1) * stride + k - pad_before - pad_after`` along each axis; padding
    'same' gives ``in * stride`` (needs ``k >= stride``), 'valid' no padding.

    Args:
        x: (H, W, Cin) input, FX_16 or SA_8.
        w: (Kh, Kw, Cin, Cout) HWCN weights (FX_16 / FX_8 for FX_16 input, SA_8 for SA_8 input).
        b: (Cout,) bias as for :func:`conv2d`, or ``None`` for a zero bias.
        stride: an int or (height, width).
        padding: as for :func:`conv2d` (0 <= padding < kernel).
        relu, out_quant: as for :func:`conv2d`.

    Returns:
        A new dense (Ho, Wo, Cout) tensor of the input's element type.

    Raises:
        MliError: the status the MLI function returns for invalid arguments (nothing is computed).
    """
    what = "transpose_conv2d"
    fn = _operands(what, Op.TRANSPOSE_CONV2D, x, w, b, (3, 4))
    rt = relu_type(relu)
    s = pair(stride, "stride", what=what, lo=1)
    kh, kw = int(w.shape[0]), int(w.shape[1])
    h, wd = int(x.shape[0]), int(x.shape[1])
    n = int(w.shape[3])
    if isinstance(padding, str) and padding.strip().lower() == "same":
        t, bo = transpose_same_padding(kh, s[0])
        l, r = transpose_same_padding(kw, s[1])
    else:
        t, bo, l, r = resolve_padding(padding, (h, wd), (kh, kw), s)
    ho = transpose_out_size(h, kh, s[0], t, bo)
    wo = transpose_out_size(wd, kw, s[1], l, r)
    _check_out(what, (ho, wo, n), x.el_type)
    _uint8(what, stride=s, padding=(t, bo, l, r))
    if b is None:
        b = zero_bias(x, w, n)
    cfg = Conv2dCfg(relu=ReluCfg(rt), stride_width=s[1], stride_height=s[0], padding_left=l, padding_right=r,
                    padding_top=t, padding_bottom=bo)

    def float_ref() -> np.ndarray:
        acc = K.transpose_accumulate(_centred(x), w.numpy().astype(np.int64), stride=s, pad=(t, l),
                                     out_hw=(ho, wo))[0]
        return _apply_relu(_dequant_acc(acc.astype(np.float64), x, w, b, n), rt)

    out = _out((ho, wo, n), x, w, out_quant, float_ref, what)
    fn(x, w, b, cfg, out)
    return out


def fully_connected(x: Tensor, w: Tensor, b: Tensor | None = None, relu: str | None = None,
                    out_quant: dict[str, Any] | npt.ArrayLike | None = None) -> Tensor:
    """Fully connected layer (``mli_krn_fully_connected_*``) returning a new ``(M_out,)`` tensor.

    Args:
        x: input of any shape with ``N_in`` elements (FX_16 or SA_8).
        w: ``(N_in, M_out)`` weights (FX_16 / FX_8 for FX_16 input, SA_8 for SA_8 input).
        b: ``(M_out,)`` bias, or ``None`` for a zero bias.
        relu: the fused ReLU (see :func:`conv2d`).
        out_quant: output quantisation (see the module docstring).

    Returns:
        A new dense ``(M_out,)`` tensor of the input's element type.

    Raises:
        MliError: BAD_TENSOR (not a tensor, invalid struct), TYPE_MISMATCH, SHAPE_MISMATCH or
            BAD_FUNC_CFG (relu, out_quant), before anything is computed.
    """
    what = "fully_connected"
    args.tensor(x, "x", what=what)
    fn = _operands(what, Op.FULLY_CONNECTED, x, w, b, (x.rank, 2))
    rt = relu_type(relu)
    m = int(w.shape[1])
    if count_elements(x) != int(w.shape[0]):
        raise MliError(Status.SHAPE_MISMATCH, f"{what}: x {list(x.shape[:x.rank])} has not the {int(w.shape[0])} "
                                              f"elements weights {list(w.shape[:2])} take")
    if b is None:
        b = zero_bias(x, w, m)
    cfg = FullyConnectedCfg(relu=ReluCfg(rt))

    def float_ref() -> np.ndarray:
        xv = _centred(x).reshape(-1)
        acc = xv @ w.numpy().astype(np.int64)
        return _apply_relu(_dequant_acc(acc.astype(np.float64), x, w, b, m), rt)

    out = _out((m,), x, w, out_quant, float_ref, what)
    fn(x, w, b, cfg, out)
    return out

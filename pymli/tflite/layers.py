"""Layers a TFLite graph needs beyond :mod:`pymli.models.layers` (same :class:`~pymli.models.Layer` API).

Each runs one MLI function of :mod:`pymli.capi`:

* :class:`Reshape` (RESHAPE, SQUEEZE): ``mli_mov_tensor_sync`` copy of the data under the new shape;
* :class:`Requant` (QUANTIZE int8 -> int8, scale alignment before concat or after activations):
  ``mli_hlp_convert_tensor``;
* :class:`Concat`: ``mli_krn_concat_sa8`` (inputs of identical quantisation);
* :class:`Pad`: ``mli_krn_padding2d_hwc_sa8`` (pads with the zero point, like TFLite);
* :class:`ArgMax`: ``mli_krn_argmax_sa8`` over the last axis (topk 1);
* :class:`L2Norm`: ``mli_krn_l2_normalize_sa8`` over the last axis;
* :class:`TransposeConv2D`: ``mli_krn_transpose_conv2d_hwcn_sa8_sa8_sa32`` (the network layer of
  :mod:`pymli.models.layers`, re-exported).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..capi.move import MovCfg
from ..capi.types import ArgmaxCfg, ConcatCfg, L2NormalizeCfg, Padding2dCfg
from ..formats import ElType
from ..graph.registry import Op, lookup
from ..models import floatops as F
from ..models.layers import Layer, TransposeConv2D, _LutLayer
from ..models.qparams import QParams
from ..tensor import Tensor

__all__ = ["Reshape", "Requant", "Concat", "Pad", "ArgMax", "L2Norm", "TransposeConv2D", "EXTRA_LAYERS"]


def _reshaped(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """A dense tensor with ``t``'s values and parameters under another shape."""
    return QParams.of(t).tensor(t.numpy().reshape(shape))


class Reshape(Layer):
    """New shape, same values and quantisation (a copy with ``mli_mov_tensor_sync``)."""

    kind = "reshape"
    follows_input = True

    def __init__(self, shape: tuple[int, ...], **kw: Any) -> None:
        super().__init__(**kw)
        self.shape = tuple(int(s) for s in shape)

    def cfg_dict(self) -> dict[str, Any]:
        return {"shape": self.shape}

    def signature(self, in_qs: list[QParams]) -> tuple[Op, tuple[ElType, ...]]:
        """One type-free function: ``mli_mov_tensor_sync``."""
        return Op.MOV_TENSOR_SYNC, ()

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        if int(np.prod(in_shapes[0])) != int(np.prod(self.shape)):
            raise ValueError(f"{self.name}: cannot reshape {in_shapes[0]} to {self.shape}")
        return self.shape

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        cfg = MovCfg()
        lookup(Op.MOV_CFG_FOR_COPY)(cfg)
        src = _reshaped(ins[0], self.shape)
        dst = QParams.of(out).empty(self.shape)
        fn(src, cfg, dst)
        out.view()[...] = dst.numpy().reshape(out.view().shape)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return xs[0].reshape((xs[0].shape[0],) + self.shape)


class Requant(Layer):
    """Conversion to other sa8 parameters (``mli_hlp_convert_tensor``)."""

    kind = "requant"

    def signature(self, in_qs: list[QParams]) -> tuple[Op, tuple[ElType, ...]]:
        """One type-free function: ``mli_hlp_convert_tensor``."""
        return Op.CONVERT, ()

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        fn(ins[0], out)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return xs[0]


class Concat(Layer):
    """Concatenation along ``axis`` of the sample (``mli_krn_concat_sa8``); inputs share one quantisation."""

    kind = "concat"
    follows_input = True

    def __init__(self, axis: int, n_inputs: int, **kw: Any) -> None:
        super().__init__(**kw)
        self.axis = int(axis)
        self.n_inputs = int(n_inputs)  # type: ignore[misc]

    def cfg_dict(self) -> dict[str, Any]:
        return {"axis": self.axis}

    op = Op.CONCAT

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        s = list(in_shapes[0])
        s[self.axis] = sum(int(x[self.axis]) for x in in_shapes)
        return tuple(s)

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        fn(list(ins), ConcatCfg(tensors_num=len(ins), axis=self.axis), out)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return np.concatenate(xs, axis=self.axis + 1)


class Pad(Layer):
    """Spatial padding of an HWC map with the zero point (``mli_krn_padding2d_hwc_sa8``)."""

    kind = "pad"
    follows_input = True

    def __init__(self, padding: tuple[int, int, int, int], **kw: Any) -> None:
        super().__init__(**kw)
        self.padding = tuple(int(p) for p in padding)

    def cfg_dict(self) -> dict[str, Any]:
        return {"padding": self.padding}

    op = Op.PADDING2D_HWC

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        h, w, c = in_shapes[0]
        t, b, l, r = self.padding
        return (h + t + b, w + l + r, c)

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        t, b, l, r = self.padding
        fn(ins[0], Padding2dCfg(padding_left=l, padding_right=r, padding_top=t, padding_bottom=b), out)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        return F.pad_hw(xs[0], self.padding)


class ArgMax(Layer):
    """Index of the largest value along the last axis (``mli_krn_argmax_sa8``, topk 1, sa32 output).

    MLI returns the *last* index of equal maxima, TFLite the first: results differ on ties.
    """

    kind = "argmax"

    op = Op.ARGMAX

    def output_qparams(self, in_qs: list[QParams]) -> QParams:
        return QParams.sa(0, 1, 0, -1, ElType.SA_32)

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        return tuple(in_shapes[0][:-1]) or (1,)

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        x = ins[0]
        c = int(x.shape[x.rank - 1])
        rows = x.num_elements // c
        x2 = _reshaped(x, (rows, c))
        tmp = QParams.sa(0, 1, 0, -1, ElType.SA_32).empty((rows, 1))
        fn(x2, ArgmaxCfg(axis=0, topk=1), tmp)
        # MLI returns offsets from the first element of the (dense) input: the column is the offset mod c
        out.view()[...] = (tmp.numpy() % c).reshape(out.view().shape)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        x = xs[0]
        r = (x.shape[-1] - 1 - np.argmax(x[..., ::-1], axis=-1)).astype(np.float64)
        return r.reshape((x.shape[0],) + self.out_shape([x.shape[1:]]))


class L2Norm(_LutLayer):
    """L2 normalisation over the last axis; MLI sets the output to zero point 0, scale 2**-7."""

    kind = "l2_normalize"
    _sa8_out = (0, 7)

    op = Op.L2_NORMALIZE

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        fn(ins[0], None, self.lut, L2NormalizeCfg(axis=ins[0].rank - 1), out)

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        x = xs[0]
        n = np.sqrt(np.sum(x * x, axis=-1, keepdims=True))
        return x / np.maximum(n, 1e-12)


EXTRA_LAYERS: dict[str, type[Layer]] = {c.kind: c for c in (Reshape, Requant, Concat, Pad, ArgMax, L2Norm,
                                                             TransposeConv2D)}

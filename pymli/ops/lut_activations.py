"""Pythonic LUT activations: ``sigmoid``, ``tanh``, ``softmax``, ``l2_normalize``.

Each function takes a :class:`~pymli.tensor.Tensor` (FX_8, FX_16 or SA_8), runs the checked MLI
kernel of its type with the library's table (built once and cached) and returns a new dense
tensor carrying the output quantisation MLI assigns (Q7 / Q15, or a fixed sa8 scale).

Example:
    >>> import numpy as np
    >>> from pymli.tensor import Tensor
    >>> from pymli.ops import sigmoid
    >>> y = sigmoid(Tensor.from_numpy(np.array([-64, 0, 64], np.int16), "FX_16", frac_bits=5))
    >>> y.frac_bits, y.numpy().tolist()
    (15, [3906, 16384, 28862])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..arith.lut import create_lut
from ..capi.types import L2NormalizeCfg, SoftmaxCfg
from ..errors import MliError, Status
from ..graph import args
from ..graph.registry import Op, require
from ..tensor import Lut, Tensor
from ._doc import sections

__all__ = ["sigmoid", "tanh", "softmax", "l2_normalize", "activation_lut"]

_LUTS: dict[str, Lut] = {}


_KINDS = {"sigm": "sigm", "sigmoid": "sigm", "tanh": "tanh", "softmax": "softmax", "l2_normalize": "l2_normalize"}


def activation_lut(kind: str) -> Lut:
    """The cached LUT of ``kind`` (``"sigm"`` / ``"sigmoid"``, ``"tanh"``, ``"softmax"``, ``"l2_normalize"``).

    The returned object is shared: treat it as read-only.

    Args:
        kind: the activation's name, any letter case.

    Returns:
        The table as ``mli_krn_<kind>_get_lut_size`` / ``create_lut`` build it.

    Raises:
        MliError: BAD_FUNC_CFG for an unknown name or a non-string.
    """
    kind = args.choice(kind, _KINDS, "kind", what="activation_lut")
    lut = _LUTS.get(kind)
    if lut is None:
        lut = _LUTS[kind] = create_lut(kind)
    return lut


def _checked(x: Tensor, op: Op, what: str) -> tuple[Callable[..., Any], Tensor]:
    """Check the tensor ``x``; the MLI function of ``op`` for its element type and a zero output like ``x``."""
    args.tensor(x, "x", what=what)
    fn = require(op, x.el_type, status=Status.NOT_SUPPORTED, what=what)
    return fn, Tensor.zeros(list(x.shape[: x.rank]), x.el_type)


def _axis_cfg(x: Tensor, axis: int | None, op: str) -> int:
    """C axis from a Python axis: None -> -1 (whole tensor); negatives count from the end."""
    if axis is None:
        return -1
    a = args.integer(axis, "axis", what=op, lo=args.INT32[0], hi=args.INT32[1])
    if a < 0:
        a += x.rank
    if not 0 <= a < x.rank:
        raise MliError(Status.BAD_FUNC_CFG, f"{op}: axis {axis} out of range for rank {x.rank}")
    return a


_LUT_SECTIONS = """
Args:
    x: FX_8, FX_16 or SA_8 tensor of any shape.

Returns:
    A new dense tensor of ``x``'s shape and element type: {out}.

Raises:
    MliError: BAD_TENSOR (not a tensor), NOT_SUPPORTED (another element type) or the status MLI
        gives for the same tensor.
"""


@sections(_LUT_SECTIONS, out="FX_8 Q7, FX_16 Q15, or SA_8 with zero point -128 and scale 2**-8")
def sigmoid(x: Tensor) -> Tensor:
    """Logistic sigmoid ``1 / (1 + exp(-x))`` of ``x`` (mli_krn_sigm_*)."""
    fn, out = _checked(x, Op.SIGM, "sigmoid")
    fn(x, activation_lut("sigm"), out)
    return out


@sections(_LUT_SECTIONS, out="FX_8 Q7, FX_16 Q15, or SA_8 with zero point 0 and scale 2**-7")
def tanh(x: Tensor) -> Tensor:
    """Hyperbolic tangent of ``x`` (mli_krn_tanh_*)."""
    fn, out = _checked(x, Op.TANH, "tanh")
    fn(x, activation_lut("tanh"), out)
    return out


def softmax(x: Tensor, axis: int | None = None) -> Tensor:
    """Softmax of ``x`` over the whole tensor (``axis=None``) or along ``axis`` (mli_krn_softmax_*).

    Args:
        x: FX_16 or SA_8 tensor (FX_8 runs MLI's deprecated fx8 kernel, whose results are not a
            proper softmax but are reproduced bit-exactly).
        axis: dimension to normalise along; negative values count from the end (NumPy style).
            Note this differs from ``mli_softmax_cfg.axis``, where -1 means the whole tensor.

    Returns:
        FX_16 Q15 (FX_8 Q7), or SA_8 with zero point -128 and scale 2**-8.
    """
    fn, out = _checked(x, Op.SOFTMAX, "softmax")
    cfg = SoftmaxCfg(axis=_axis_cfg(x, axis, "softmax"))
    fn(x, activation_lut("softmax"), cfg, out)
    return out


def l2_normalize(x: Tensor, axis: int | None = None) -> Tensor:
    """``x / ||x||_2`` over the whole tensor (``axis=None``) or along ``axis`` (mli_krn_l2_normalize_*).

    Args:
        x: FX_16 or SA_8 tensor.
        axis: dimension to normalise along; negative values count from the end (NumPy style).

    Returns:
        FX_16 Q15, or SA_8 with zero point 0 and scale 2**-7.
    """
    fn, out = _checked(x, Op.L2_NORMALIZE, "l2_normalize")
    cfg = L2NormalizeCfg(axis=_axis_cfg(x, axis, "l2_normalize"))
    fn(x, None, activation_lut("l2_normalize"), cfg, out)
    return out

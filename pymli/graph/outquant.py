"""Output quantisation of one call, chosen through :mod:`pymli.quant` (used by :mod:`pymli.ops`).

``out_quant`` as users give it:

* ``None``: from the exact float value of this call's own result (``float_ref()``);
* a dict of tensor fields: ``{"frac_bits": n}`` (FX) or ``{"zero_point": z, "scale": s,
  "scale_frac_bits": f}`` (SA), taken as given;
* ``{"min": lo, "max": hi}``: a float range;
* an array of floats: a calibration sample of the expected outputs (its min / max are used).

A range becomes parameters as MLI's test quantiser does (:func:`pymli.quant.choose_fx_frac_bits` /
:func:`pymli.quant.fx_frac_for_range` and :func:`pymli.quant.sa8_range_params`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import MliError, Status
from ..formats import ElType
from ..quant import bias_scale, fx_frac_for_range, sa8_range_params
from ..tensor import Tensor
from . import args

__all__ = ["output_fields", "zero_bias"]


def _range(out_quant: Any, float_ref: Callable[[], np.ndarray], what: str) -> tuple[float, float]:
    if out_quant is None:
        vals = np.asarray(float_ref())
        return (float(vals.min()), float(vals.max())) if vals.size else (0.0, 0.0)
    if isinstance(out_quant, dict):
        return out_quant["min"], out_quant["max"]
    if isinstance(out_quant, (str, bytes)) or not isinstance(out_quant, (np.ndarray, list, tuple)):
        raise MliError(Status.BAD_FUNC_CFG, f"{what}: out_quant = {out_quant!r:.60}: None, a dict of fields or "
                                            "an array of float samples expected")
    try:
        arr = np.asarray(out_quant, dtype=np.float64)
    except (TypeError, ValueError):
        raise MliError(Status.BAD_FUNC_CFG, f"{what}: out_quant = {out_quant!r:.60}: an array of float samples "
                                            "expected") from None
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        raise MliError(Status.BAD_FUNC_CFG, f"{what}: out_quant samples must be finite and not empty")
    return float(arr.min()), float(arr.max())


def output_fields(el: ElType, out_quant: Any, float_ref: Callable[[], np.ndarray], *,
                  max_frac: int | None = None, what: str = "out_quant") -> dict[str, Any]:
    """Tensor fields (``frac_bits`` or ``zero_point`` / ``scale`` / ``scale_frac_bits``) of an output.

    Args:
        el: the output element type.
        out_quant: see the module docstring.
        float_ref: the float result of the call, computed only when needed.
        max_frac: FX upper bound of ``frac_bits`` (a MAC output: input + weights fractional bits).
        what: the calling function (for error messages).

    Returns:
        The keyword fields of :meth:`pymli.tensor.Tensor.from_numpy` for the output: a dict of
        ``frac_bits`` (FX) or ``zero_point`` / ``scale`` / ``scale_frac_bits`` (SA), as checked.

    Raises:
        MliError: BAD_FUNC_CFG for a malformed ``out_quant`` (unknown keys, values outside their C
            types, empty or non-finite samples) or a range no ``frac_bits`` of the int8 field holds.
    """
    if isinstance(out_quant, dict):
        out_quant = args.quant_fields(out_quant, el, "out_quant", what=what, allow_range=True)
        if "min" not in out_quant:
            return out_quant
    lo, hi = _range(out_quant, float_ref, what)
    if el.is_sa:
        zp, scale, sfb = sa8_range_params(lo, hi)
        return {"zero_point": zp, "scale": scale, "scale_frac_bits": sfb}
    frac = fx_frac_for_range(max(abs(lo), abs(hi)), el.bits, max_frac=max_frac)
    if not args.INT8[0] <= frac <= args.INT8[1]:
        raise MliError(Status.BAD_FUNC_CFG, f"{what}: output range [{lo}, {hi}] needs frac_bits {frac}, outside "
                                            "the int8 field")
    return {"frac_bits": frac}


def zero_bias(x: Tensor, w: Tensor, n: int) -> Tensor:
    """An all-zero bias of ``n`` values in the format MLI requires for input ``x`` and weights ``w``.

    SA_8: SA_32 on the scale in x weights (per channel for per-channel weights,
    :func:`pymli.quant.bias_scale`); FX: the weights' type with ``in + weights`` fractional bits.

    Args:
        x: the input tensor (SA_8 or FX); w: the weights tensor (per-tensor, or per-axis with
            ``n`` values); n: number of output channels.

    Returns:
        A new rank-1 tensor of ``n`` zeros: SA_32 (int32 data, per-channel scales when ``w`` is
        per-axis) or FX with the weights' element type.
    """
    if x.el_type.is_sa:
        ws = w.quant_vector("scale", n) if w.dim >= 0 else np.asarray([int(w.scale)])
        wf = w.quant_vector("scale_frac_bits", n) if w.dim >= 0 else np.asarray([int(w.scale_frac_bits)])
        s_in = int(np.asarray(x.scale).reshape(-1)[0])
        f_in = int(np.asarray(x.scale_frac_bits).reshape(-1)[0])
        scale, frac = bias_scale(s_in, f_in, ws, wf)
        if w.dim >= 0:
            return Tensor.from_numpy(np.zeros(n, np.int32), "SA_32", zero_point=np.zeros(n), scale=scale,
                                     scale_frac_bits=frac, dim=0)
        return Tensor.from_numpy(np.zeros(n, np.int32), "SA_32", scale=int(scale[0]), scale_frac_bits=int(frac[0]))
    return Tensor.from_numpy(np.zeros(n, w.el_type.dtype), w.el_type, frac_bits=x.frac_bits + w.frac_bits)

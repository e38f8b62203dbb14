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

from ..formats import ElType
from ..quant import bias_scale, fx_frac_for_range, sa8_range_params
from ..tensor import Tensor

__all__ = ["output_fields", "zero_bias"]


def _range(out_quant: Any, float_ref: Callable[[], np.ndarray]) -> tuple[float, float]:
    if out_quant is None:
        vals = np.asarray(float_ref())
        return (float(vals.min()), float(vals.max())) if vals.size else (0.0, 0.0)
    if isinstance(out_quant, dict):
        return float(out_quant["min"]), float(out_quant["max"])
    arr = np.asarray(out_quant, dtype=np.float64)
    return float(arr.min()), float(arr.max())


def output_fields(el: ElType, out_quant: Any, float_ref: Callable[[], np.ndarray], *,
                  max_frac: int | None = None) -> dict[str, Any]:
    """Tensor fields (``frac_bits`` or ``zero_point`` / ``scale`` / ``scale_frac_bits``) of an output.

    Args:
        el: the output element type.
        out_quant: see the module docstring.
        float_ref: the float result of the call, computed only when needed.
        max_frac: FX upper bound of ``frac_bits`` (a MAC output: input + weights fractional bits).
    """
    if isinstance(out_quant, dict) and ("frac_bits" in out_quant or "scale" in out_quant):
        return dict(out_quant)
    lo, hi = _range(out_quant, float_ref)
    if el.is_sa:
        zp, scale, sfb = sa8_range_params(lo, hi)
        return {"zero_point": zp, "scale": scale, "scale_frac_bits": sfb}
    return {"frac_bits": fx_frac_for_range(max(abs(lo), abs(hi)), el.bits, max_frac=max_frac)}


def zero_bias(x: Tensor, w: Tensor, n: int) -> Tensor:
    """An all-zero bias of ``n`` values in the format MLI requires for input ``x`` and weights ``w``.

    SA_8: SA_32 on the scale in x weights (per channel for per-channel weights,
    :func:`pymli.quant.bias_scale`); FX: the weights' type with ``in + weights`` fractional bits.
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

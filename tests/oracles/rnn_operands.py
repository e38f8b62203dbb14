"""Random quantised operands for the recurrent tests (tests only: rounds with NumPy freely)."""

from __future__ import annotations

import numpy as np

from pymli.tensor import Tensor

KINDS = ("fx16", "fx16_fx8_fx8", "sa8")


def fx(a: np.ndarray, frac_bits: int, el: str = "FX_16") -> Tensor:
    """Quantise floats to an FX tensor (round to nearest, saturate)."""
    bits = 16 if el == "FX_16" else 8
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    q = np.clip(np.round(np.asarray(a) * 2.0**frac_bits), lo, hi).astype(np.int64)
    return Tensor.from_numpy(q, el, frac_bits=frac_bits)


def fx_value(t: Tensor) -> np.ndarray:
    return t.numpy().astype(np.float64) / 2.0**t.frac_bits


def sa_params(lo: float, hi: float) -> tuple[int, int, int]:
    """(zero_point, scale, scale_frac_bits) covering [lo, hi] with 8 bits, as MLI's test quantiser."""
    scale = (hi - lo) / 254.0
    _, e = np.frexp(scale)
    sfb = 15 - int(e)
    s16 = int(round(scale * 2.0**sfb))
    zp = int(round(-(hi + lo) / 2.0 / scale))
    return zp, s16, sfb


def sa(a: np.ndarray, zp: int, scale: int, sfb: int) -> Tensor:
    real = scale / 2.0**sfb
    q = np.clip(np.round(np.asarray(a) / real) + zp, -128, 127).astype(np.int64)
    return Tensor.from_numpy(q, "SA_8", zero_point=zp, scale=scale, scale_frac_bits=sfb)


def sa_weights(w: np.ndarray, per_gate: bool) -> Tensor:
    """Symmetric sa8 weights ``(G, N, M)``, one scale per gate (dim 0) or per tensor."""
    g = w.shape[0]
    amax = np.abs(w).reshape(g, -1).max(axis=1) if per_gate else np.full(g, np.abs(w).max())
    amax = np.maximum(amax, 1e-3)
    scales, sfbs = [], []
    for v in amax:
        step = v / 127.0
        _, e = np.frexp(step)
        sfbs.append(15 - int(e))
        scales.append(int(round(step * 2.0 ** sfbs[-1])))
    real = np.array(scales) / 2.0 ** np.array(sfbs, dtype=np.float64)
    q = np.clip(np.round(w / real[:, None, None]), -127, 127).astype(np.int64)
    if per_gate:
        return Tensor.from_numpy(q, "SA_8", zero_point=np.zeros(g), scale=scales, scale_frac_bits=sfbs, dim=0)
    return Tensor.from_numpy(q, "SA_8", zero_point=0, scale=scales[0], scale_frac_bits=sfbs[0])


def sa_bias(b: np.ndarray, x: Tensor, w: Tensor) -> Tensor:
    """sa32 bias ``(G, M)`` whose scale is input scale x weights scale (as MLI requires)."""
    g = b.shape[0]
    ws = np.asarray(w.quant_vector("scale", g if w.dim >= 0 else 1)).reshape(-1)
    wf = np.asarray(w.quant_vector("scale_frac_bits", g if w.dim >= 0 else 1)).reshape(-1)
    scales, sfbs = [], []
    for s, f in zip(ws, wf):
        prod = int(x.scale) * int(s)
        k = max(0, int(prod).bit_length() - 15)
        scales.append((prod + (1 << (k - 1) if k else 0)) >> k)
        sfbs.append(int(x.scale_frac_bits) + int(f) - k)
    real = np.array(scales) / 2.0 ** np.array(sfbs, dtype=np.float64)
    real = real[:, None] if w.dim >= 0 else real[0]
    q = np.clip(np.round(b / real), -(2**31), 2**31 - 1).astype(np.int64)
    if w.dim >= 0:
        return Tensor.from_numpy(q, "SA_32", zero_point=np.zeros(g), scale=scales, scale_frac_bits=sfbs, dim=0)
    return Tensor.from_numpy(q, "SA_32", zero_point=0, scale=scales[0], scale_frac_bits=sfbs[0])


def cell_operands(rng: np.random.Generator, kind: str, gates: int, t: int, n: int, m: int,
                  per_gate: bool = False) -> dict:
    """Quantised x, weights_in, weights_out, bias and an output quantisation for a cell."""
    x = rng.uniform(-1, 1, (t, n))
    scale = 1.0 / np.sqrt(n + m)
    wi = rng.uniform(-1, 1, (gates, n, m)) * scale
    wo = rng.uniform(-1, 1, (gates, m, m)) * scale
    b = rng.uniform(-0.5, 0.5, (gates, m))
    if kind == "sa8":
        xq = sa(x, *sa_params(-1, 1))
        wiq, woq = sa_weights(wi, per_gate), sa_weights(wo, per_gate)
        zp, s, f = sa_params(-1, 1)
        return dict(x=xq, weights_in=wiq, weights_out=woq, bias=sa_bias(b, xq, wiq),
                    out_quant=dict(zero_point=zp, scale=s, scale_frac_bits=f),
                    cell_quant=dict(zero_point=0, scale=s, scale_frac_bits=f - 1))
    wel, wfb = ("FX_16", 15) if kind == "fx16" else ("FX_8", 7)
    return dict(x=fx(x, 14), weights_in=fx(wi, wfb, wel), weights_out=fx(wo, wfb, wel), bias=fx(b, wfb - 1, wel),
                out_quant=dict(frac_bits=15), cell_quant=dict(frac_bits=12))

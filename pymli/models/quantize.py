"""Post-training quantisation of a float :class:`Network` for MLI: fx16, fx16_fx8_fx8 or sa8.

The scheme names are MLI's three builds of its examples:

* ``fx16``: activations, weights and biases FX16 (Q-format chosen per tensor);
* ``fx16_fx8_fx8``: activations FX16, weights and biases FX8;
* ``sa8``: activations SA8 per tensor (asymmetric, from the calibrated min / max), weights SA8
  symmetric per output channel, biases SA32 per channel on the scale ``in_scale * w_scale``.

FX choices follow MLI's constraints: ``bias.frac_bits <= in + weights`` and ``out.frac_bits <= in +
weights`` for MAC layers; layers whose kernel keeps or sets the output format (max pooling, ReLU,
permute, softmax, sigmoid, tanh; leaky ReLU / PReLU in FX) are left to it. The two inputs of an
element-wise min / max, and the inputs of a concatenation, must share one format: their producers
get the coarsest of them (FX) or the union of their ranges (SA8), where the producer's format is the
network's to choose (not after a kernel that sets or keeps its output format).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ..errors import MliError, Status
from ..formats import ElType
from ..graph import args
from .layers import Concat, Eltwise, Layer, _MacLayer
from .network import INPUT, Network
from ..quant import fx_frac_for_range, quantize_values, sa8_range_params, sa_scale_repr
from .qparams import Const, QParams
from .recurrent import LSTM, UnrolledLSTM, _RnnBase

__all__ = ["SCHEMES", "quantize_network", "tensor_qparams"]

SCHEMES = ("fx16", "fx16_fx8_fx8", "sa8")


def _ranges(acts: dict[str, np.ndarray], percentile: float | None) -> dict[str, tuple[float, float]]:
    out = {}
    for k, v in acts.items():
        if percentile is None:
            out[k] = (float(v.min()), float(v.max()))
        else:
            out[k] = (float(np.percentile(v, 100 - percentile)), float(np.percentile(v, percentile)))
    return out


def _quantize_rnn(la: _RnnBase, in_q: QParams, x: np.ndarray, out_range: tuple[float, float], scheme: str,
                  headroom_bits: int, percentile: float | None) -> QParams:
    """LSTM / GRU: weights per gate (SA8: per-gate scales on dim 0), bias on the input x weights_in
    scale, LSTM cell state from calibration.

    SA8 always uses per-gate parameters: MLI 2.0.2's GRU reads the candidate gate's scale of
    per-tensor weights from the wrong place (see :func:`pymli.kernels.recurrent._gru_candidate_scales`).
    """
    w_in, w_out, b = (c.value(original=True) for c in (la.weights_in, la.weights_out, la.bias))
    hs, cells = la.float_sequence(x, original=True)
    # every step's output feeds the next one: the output format must hold all of them, not only the kept ones
    lo, hi = _ranges({"h": hs}, percentile)["h"]
    out_range = (min(lo, out_range[0]), max(hi, out_range[1]))
    if isinstance(la, LSTM):
        la.cell_q = tensor_qparams(*_ranges({"c": cells}, percentile)["c"], scheme, headroom_bits)
    if scheme == "sa8":
        qps = [_sa8_weights(w, 0, c) for w, c in ((w_in, la.weights_in), (w_out, la.weights_out))]
        _sa32_bias(b, in_q, qps[0], la.bias, per_row=True)
        return tensor_qparams(*out_range, "sa8", headroom_bits)
    wbits = 8 if scheme == "fx16_fx8_fx8" else 16
    for w, c in ((w_in, la.weights_in), (w_out, la.weights_out)):
        qp = QParams.fx(wbits, fx_frac_for_range(float(np.abs(w).max()), wbits))
        c.set_quantized(qp.quantize(w), qp)
    b_frac = min(fx_frac_for_range(float(np.abs(b).max()), wbits), in_q.frac_bits + la.weights_in.qp.frac_bits)  # type: ignore[union-attr]
    bq = QParams.fx(wbits, b_frac)
    la.bias.set_quantized(bq.quantize(b), bq)
    return tensor_qparams(*out_range, "fx16", headroom_bits)


def tensor_qparams(lo: float, hi: float, scheme: str, headroom_bits: int = 0) -> QParams:
    """Quantisation of an activation tensor whose values span [lo, hi].

    Through :mod:`pymli.quant` with this quantiser's policy: FX16 with the most fractional bits that
    hold the range; SA8 with 255 steps over [min(lo, 0), max(hi, 0)] (times ``2**headroom_bits``),
    the scale rounded up so the range always fits and the minimum on -128.

    Raises:
        MliError: BAD_FUNC_CFG for an unknown scheme (any case), bounds that are not finite numbers or
            ``headroom_bits`` outside 0..31.
    """
    what = "tensor_qparams"
    scheme = args.choice(scheme, {s: s for s in SCHEMES}, "scheme", what=what)
    lo, hi = args.finite(lo, "lo", what=what), args.finite(hi, "hi", what=what)
    headroom_bits = args.integer(headroom_bits, "headroom_bits", what=what, lo=0, hi=31)
    if scheme == "sa8":
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        if hi - lo <= 0:
            hi = lo + 1.0
        zp, scale, sfb = sa8_range_params(lo, hi, levels=255.0 / (1 << headroom_bits), round_up=True,
                                          zero_point_at="min")
        return QParams.sa(zp, scale, sfb)
    return QParams.fx(16, fx_frac_for_range(max(abs(lo), abs(hi)), 16, headroom_bits))


def _sa8_weights(w: np.ndarray, dim: int, c: Const) -> QParams:
    """Symmetric per-slice SA8 weights along ``dim`` (scale max|w| / 127), quantised into ``c``."""
    axes = tuple(i for i in range(w.ndim) if i != dim)
    wmax = np.abs(w).max(axis=axes)
    scale, sfb = sa_scale_repr(np.where(wmax > 0, wmax / 127.0, 1.0))
    qp = QParams.sa(np.zeros_like(scale), scale, sfb, dim)
    c.set_quantized(qp.quantize(w), qp)
    return qp


def _sa32_bias(b: np.ndarray, in_q: QParams, w_q: QParams, c: Const, per_row: bool = False) -> None:
    """SA32 bias on the scale in x weights (per weights slice), quantised into ``c``.

    The represented scale is the real product rounded to 16 bits (:func:`pymli.quant.sa_scale_repr`);
    the values are ``round(b / (in_step * w_step))`` saturated to int32.
    """
    bstep = float(in_q.step()) * w_q.step()
    bscale, bsfb = sa_scale_repr(bstep)
    bq = QParams.sa(np.zeros_like(bscale), bscale, bsfb, 0, ElType.SA_32)
    c.set_quantized(quantize_values(b, bstep[:, None] if per_row else bstep, 0, ElType.SA_32), bq)


def _weights_dim(layer: Layer) -> int:
    return len(layer.weights.shape) - 1  # type: ignore[attr-defined]  # output channels: last axis


def _quantize_mac(layer: _MacLayer, in_q: QParams, out_range: tuple[float, float], scheme: str,
                  headroom_bits: int) -> QParams:
    w = layer.weights.value(original=True)
    b = layer.bias.value(original=True)
    if scheme == "sa8":
        wq = _sa8_weights(w, _weights_dim(layer), layer.weights)
        _sa32_bias(b, in_q, wq, layer.bias)
        return tensor_qparams(*out_range, "sa8", headroom_bits)
    wbits = 8 if scheme == "fx16_fx8_fx8" else 16
    in_frac = in_q.frac_bits
    w_frac = fx_frac_for_range(float(np.abs(w).max()), wbits)
    b_frac = min(fx_frac_for_range(float(np.abs(b).max()) if b.size else 0.0, wbits), in_frac + w_frac)
    wq, bq = QParams.fx(wbits, w_frac), QParams.fx(wbits, b_frac)
    layer.weights.set_quantized(wq.quantize(w), wq)
    layer.bias.set_quantized(bq.quantize(b), bq)
    lo, hi = out_range
    return QParams.fx(16, fx_frac_for_range(max(abs(lo), abs(hi)), 16, headroom_bits, max_frac=in_frac + w_frac))


def _quantize_const(c: Const, like: QParams, scheme: str) -> None:
    """Quantise a small constant (slope, eltwise operand) in the data format of the scheme."""
    v = c.value(original=True)
    if scheme == "sa8":
        q = tensor_qparams(float(np.min(v)), float(np.max(v)), "sa8")
    else:
        q = QParams.fx(like.bits, fx_frac_for_range(float(np.abs(v).max()), like.bits))
    c.set_quantized(q.quantize(v), q)


def quantize_network(net: Network, calib_x: np.ndarray, scheme: str = "sa8", *, percentile: float | None = None,
                     headroom_bits: int = 0) -> Network:
    """A quantised copy of float network ``net`` for MLI ``scheme``.

    Args:
        net: float network (its constants keep their float values in the copy for comparison).
        calib_x: calibration inputs, batch of float samples.
        scheme: ``"fx16"``, ``"fx16_fx8_fx8"`` or ``"sa8"``.
        percentile: clip activation ranges to this percentile (None: full min / max).
        headroom_bits: extra integer bits kept free in every activation format.

    Returns:
        a new, quantised :class:`Network`.

    Raises:
        MliError: BAD_FUNC_CFG for a non-network, an unknown scheme (names in any case), a percentile
            outside (0, 100] or a negative ``headroom_bits``; what :meth:`Network.run_float` raises for
            calibration data that is not a batch of finite float samples of the input shape.
    """
    what = "quantize_network"
    if not isinstance(net, Network):
        raise MliError(Status.BAD_FUNC_CFG, f"{what}: {type(net).__name__} is not a pymli.models.Network")
    scheme = args.choice(scheme, {s: s for s in SCHEMES}, "scheme", what=what)
    if percentile is not None:
        percentile = args.finite(percentile, "percentile", what=what)
        if not 0 < percentile <= 100:
            raise MliError(Status.BAD_FUNC_CFG, f"{what}: percentile {percentile} outside (0, 100]")
    headroom_bits = args.integer(headroom_bits, "headroom_bits", what=what, lo=0, hi=31)
    calib = net._as_batch(calib_x)[0]
    if calib.dtype.kind != "f":
        raise MliError(Status.TYPE_MISMATCH, f"{what}: calibration data of dtype {calib.dtype}: float samples expected")
    acts = net.run_float(calib, original=True)
    ranges = _ranges(acts, percentile)
    groups = _same_format_groups(net)
    forced: dict[str, QParams] = {}
    for _ in range(4):
        q, qs = _quantize_pass(net, acts, ranges, scheme, headroom_bits, percentile, forced)
        changed = False
        for group in groups:
            fmts = [qs[n] for n in group]
            if all(f == fmts[0] for f in fmts):
                continue
            if scheme == "sa8":
                lo = min(ranges[n][0] for n in group)
                hi = max(ranges[n][1] for n in group)
                target = tensor_qparams(lo, hi, scheme, headroom_bits)
            else:
                target = QParams.fx(16, min(f.frac_bits for f in fmts))
            for n in group:
                if forced.get(n) != target:
                    forced[n] = target
                    changed = True
        if not changed:
            break
    return q


def _same_format_groups(net: Network) -> list[list[str]]:
    """Tensors that must share one format: the two inputs of an element-wise min / max, the inputs of a
    concatenation (the kernels check it)."""
    parent: dict[str, str] = {}

    def find(a: str) -> str:
        while parent.get(a, a) != a:
            a = parent[a]
        return a

    for la in net.layers:
        if (isinstance(la, Eltwise) and la.op in ("min", "max") and len(la.inputs) == 2) or isinstance(la, Concat):
            a = find(la.inputs[0])
            for other in la.inputs[1:]:
                b = find(other)
                if a != b:
                    parent[b] = a
    groups: dict[str, list[str]] = {}
    for n in parent:
        groups.setdefault(find(n), []).append(n)
    for root, members in groups.items():
        if root not in members:
            members.append(root)
    return [m for m in groups.values() if len(m) > 1]


def _quantize_pass(net: Network, acts: dict[str, np.ndarray], ranges: dict[str, tuple[float, float]], scheme: str,
                   headroom_bits: int, percentile: float | None, forced: dict[str, QParams]
                   ) -> tuple[Network, dict[str, QParams]]:
    q = copy.deepcopy(net)
    q.name = f"{net.name} [{scheme}]"
    q.input_q = forced.get(INPUT) or tensor_qparams(*ranges[INPUT], scheme, headroom_bits)
    qs: dict[str, QParams] = {INPUT: q.input_q}
    for la in q.layers:
        in_qs = [qs[i] for i in la.inputs]
        if isinstance(la, UnrolledLSTM):
            raise NotImplementedError("UnrolledLSTM is built from a recorded pack; quantise an LSTM layer instead")
        if isinstance(la, _RnnBase):
            la.out_q = _quantize_rnn(la, in_qs[0], acts[la.inputs[0]], ranges[la.name], scheme, headroom_bits,
                                      percentile)
        elif isinstance(la, _MacLayer):
            la.out_q = _quantize_mac(la, in_qs[0], ranges[la.name], scheme, headroom_bits)
        elif la.kernel_sets_output:
            la.out_q = None
        else:
            for c in la.consts().values():
                _quantize_const(c, in_qs[0], scheme)
            if hasattr(la, "_slope_tensor"):
                la._slope_tensor = None  # type: ignore[attr-defined]
            if la.follows(in_qs):
                la.out_q = None
            else:
                la.out_q = tensor_qparams(*ranges[la.name], scheme, headroom_bits)
        if la.out_q is not None and la.name in forced:
            la.out_q = forced[la.name]
        qs[la.name] = la.result_qparams(in_qs)
    return q, qs


def describe(qnet: Network) -> list[dict[str, Any]]:
    """Quantisation of every constant: layer, name, format."""
    rows = []
    for la in qnet.layers:
        for name, c in la.consts().items():
            rows.append({"layer": la.name, "const": name, "q": c.qp.describe() if c.qp else "float"})
    return rows

"""TFLM reference SVDF, integer path (int8 input / weights_feature, int8 or int16 weights_time and
state, int32 bias, int8 output): ``EvalIntegerSvdfReference``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import MliError, Status
from . import quant_util as qu
from .quant_util import quantize_multiplier

__all__ = ["SvdfParams", "svdf_params", "svdf_int8"]


@dataclass(frozen=True)
class SvdfParams:
    """Quantisation of an integer SVDF (TFLM ``PrepareSvdf``)."""

    input_zp: int
    state_zp: int
    output_zp: int
    scale_1_multiplier: int
    scale_1_shift: int
    scale_2_multiplier: int
    scale_2_shift: int


def svdf_params(input_scale: float, input_zp: int, wf_scale: float, state_scale: float,
                state_zp: int, wt_scale: float, output_scale: float, output_zp: int) -> SvdfParams:
    """TFLM ``PrepareSvdf``: ``in * w_feature / state`` and ``state * w_time / out``, each computed in
    float32 and converted to double before ``QuantizeMultiplier``.

    Args:
        input_scale: input scale. input_zp: input zero point.
        wf_scale: weights_feature scale.
        state_scale: activation state scale. state_zp: its zero point.
        wt_scale: weights_time scale.
        output_scale: output scale. output_zp: output zero point.

    Returns:
        the :class:`SvdfParams`.
    """
    f = np.float32
    e1 = float(f(f(f(input_scale) * f(wf_scale)) / f(state_scale)))
    e2 = float(f(f(f(state_scale) * f(wt_scale)) / f(output_scale)))
    m1, s1 = quantize_multiplier(e1)
    m2, s2 = quantize_multiplier(e2)
    return SvdfParams(int(input_zp), int(state_zp), int(output_zp), m1, s1, m2, s2)


def svdf_int8(x: np.ndarray, w_feature: np.ndarray, w_time: np.ndarray, bias: np.ndarray | None,
              state: np.ndarray, p: SvdfParams, *, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """One SVDF step, as TFLM's integer reference.

    The state (batch, n_filter * n_memory, row-major [filter][memory]) shifts one step towards the
    past; the newest column receives ``clamp(MBQM(w_feature . (x - zp)), state type) + state_zp``
    (no clamp after the zero point, a C narrowing store); then per filter
    ``sum_m w_time * (state - state_zp)`` (int32), summed over ``rank``, plus bias, requantised to
    int8. The fused activation is not applied on this path (as in TFLM).

    Args:
        x: int8 input (batch, n_input).
        w_feature: int8 (n_filter, n_input).
        w_time: int8 / int16 (n_filter, n_memory).
        bias: int32 (n_filter / rank,) or None.
        state: the activation state before the step, w_time's dtype, (batch, n_filter * n_memory).
        p: :func:`svdf_params`.
        rank: the op's rank.

    Returns:
        ``(output int8 (batch, n_unit), new state)``.

    Raises:
        MliError: inconsistent shapes or types.
    """
    nf, n_in = w_feature.shape
    nm = w_time.shape[1]
    sd = w_time.dtype
    if x.dtype != np.int8 or state.dtype != sd or nf % rank or x.shape[-1] != n_in:
        raise MliError(Status.SHAPE_MISMATCH, f"SVDF x {x.shape}/{x.dtype} wf {w_feature.shape} "
                       f"wt {w_time.shape}/{sd} state {state.shape}/{state.dtype} rank {rank}")
    nb = x.shape[0]
    st = state.reshape(nb, nf, nm).astype(np.int64)
    new = np.empty_like(st)
    new[..., :-1] = st[..., 1:]
    dot = qu.wrap((x.astype(np.int64) - p.input_zp) @ w_feature.astype(np.int64).T, 32)
    dot = qu.multiply_by_quantized_multiplier(dot, p.scale_1_multiplier, p.scale_1_shift)
    lo, hi = np.iinfo(sd).min, np.iinfo(sd).max
    new[..., -1] = qu.wrap(np.clip(dot, lo, hi) + p.state_zp, 8 * sd.itemsize)
    scratch = qu.wrap(((new - p.state_zp) * w_time.astype(np.int64)).sum(-1), 32)  # (nb, nf)
    acc = scratch.reshape(nb, nf // rank, rank).sum(-1)
    if bias is not None:
        acc = acc + bias.astype(np.int64)
    acc = qu.wrap(acc, 32)
    out = qu.multiply_by_quantized_multiplier(acc, p.scale_2_multiplier, p.scale_2_shift) + p.output_zp
    return np.clip(out, -128, 127).astype(np.int8), new.astype(sd).reshape(state.shape)

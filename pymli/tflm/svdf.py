"""TFLM reference SVDF, integer path (int8 input / weights_feature, int8 or int16 weights_time and
state, int32 bias, int8 output): ``EvalIntegerSvdfReference``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import MliError, Status
from ..kernels import _jit
from . import quant_util as qu
from .quant_util import quantize_multiplier

__all__ = ["SvdfParams", "svdf_params", "svdf_int8", "prepare_svdf_int8"]

_INT8 = np.dtype(np.int8)


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


def prepare_svdf_int8(w_feature: np.ndarray, w_time: np.ndarray, bias: np.ndarray | None, p: SvdfParams, *,
                      rank: int) -> Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """:func:`svdf_int8` with constant weights and bias, prepared: the weights as int64 and their zero
    point corrections derived once, a step only doing the arithmetic (the same values).

    ``(x - input_zp) . w_feature`` is ``x . w_feature - input_zp * sum(w_feature)`` and the time
    products ``(state - state_zp) . w_time`` are ``state . w_time - state_zp * sum(w_time)``: the
    int32 sums wrap modulo 2**32 in C, which one wrap of the exact int64 sum gives as well (every
    partial sum is below 2**50), and no wrap at all where the sums' bound stays in the int32 range.
    The filter sums over ``rank`` and the bias then wrap once too. When the JIT is on
    (:func:`pymli.kernels._jit.enabled` at the step's call) the step is one compiled call
    (:func:`pymli.kernels._jit_svdf.svdf_step`, the same values) for multipliers and shifts as
    ``QuantizeMultiplier`` gives positive scales.

    Args:
        w_feature: int8 (n_filter, n_input). w_time: int8 / int16 (n_filter, n_memory).
        bias: int32 (n_filter / rank,) or None.
        p: :func:`svdf_params`. rank: the op's rank.

    Returns:
        ``step(x, state) -> (output int8 (batch, n_unit), new state)``, as :func:`svdf_int8`.

    Raises:
        MliError: inconsistent shapes or types.
    """
    nf, n_in = w_feature.shape
    nm = w_time.shape[1]
    sd = w_time.dtype
    if nf % rank or w_time.shape[0] != nf or sd not in (np.int8, np.int16):
        raise MliError(Status.SHAPE_MISMATCH, f"SVDF wf {w_feature.shape} wt {w_time.shape}/{sd} rank {rank}")
    wf_t = np.ascontiguousarray(w_feature.astype(np.int64).T)  # (n_in, nf)
    feature_zp = p.input_zp * w_feature.astype(np.int64).sum(1)  # (nf,)
    wt = w_time.astype(np.int64)
    time_zp = p.state_zp * wt.sum(1)  # (nf,)
    b = None if bias is None else bias.astype(np.int64)
    if b is not None and rank == 1:  # the bias joins each filter's sum
        time_zp = time_zp - b
        b = None
    bits = 8 * sd.itemsize
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    # bounds of the exact sums from the weights (|x - zp| <= 255, |state - zp| <= 2**bits - 1): wrap only
    # what can leave the int32 range
    wrap_dot = 255 * int(np.abs(w_feature.astype(np.int64)).sum(1).max(initial=0)) >= 1 << 31
    unit = ((1 << bits) - 1) * np.abs(wt).sum(1).reshape(-1, rank).sum(1)
    if bias is not None:
        unit = unit + np.abs(bias.astype(np.int64))
    wrap_acc = int(unit.max(initial=0)) + int(np.abs(time_zp).max(initial=0)) >= 1 << 31
    m1, s1, m2, s2 = p.scale_1_multiplier, p.scale_1_shift, p.scale_2_multiplier, p.scale_2_shift
    szp, ozp = p.state_zp, p.output_zp
    # the compiled step's operands (its mbqm32 takes multipliers in [0, 2**31) and shifts of at least -31)
    jit_ok = min(m1, m2) >= 0 and max(m1, m2) < 1 << 31 and min(s1, s2) >= -31
    jit_w = np.concatenate([w_feature.astype(np.int64).ravel(), wt.ravel()])
    jit_c = np.concatenate([[m1, s1, m2, s2, szp, ozp, lo, hi, nf, nm, nf // rank], feature_zp, time_zp,
                            np.zeros(nf // rank, np.int64) if b is None else b]).astype(np.int64)
    empty, nu = np.empty, nf // rank

    # the compiled step's native entry for any input and state arrays (_jit_svdf.step_entry), made on
    # the first call with the JIT on
    entry: list[Callable[..., None]] = []
    on = _jit.is_on

    def step(x: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if x.dtype != _INT8 or state.dtype != sd or x.shape[-1] != n_in:
            raise MliError(Status.SHAPE_MISMATCH, f"SVDF x {x.shape}/{x.dtype} wf {w_feature.shape} "
                           f"wt {w_time.shape}/{sd} state {state.shape}/{state.dtype} rank {rank}")
        nb = x.shape[0]
        if jit_ok and on():
            if not entry:
                jit = _jit.compiled("_jit_svdf")
                if jit is not None:
                    entry.append(jit.step_entry(sd))
            if entry:
                # the state's reshape also checks its size (the compiled step does not check bounds)
                st2 = state if state.shape == (nb, nf * nm) else state.reshape(nb, nf * nm)
                out, new = empty((nb, nu), _INT8), empty(st2.shape, sd)
                entry[0](x if x.ndim == 2 else x.reshape(nb, n_in), st2, jit_w, jit_c, out, new)
                return out, new if new.shape == state.shape else new.reshape(state.shape)
        dot = x.astype(np.int64) @ wf_t
        dot -= feature_zp
        v = qu.mbqm_inplace(qu.wrap32_inplace(dot) if wrap_dot else dot, m1, s1)
        np.maximum(v, lo, out=v)
        np.minimum(v, hi, out=v)
        if szp:  # a C narrowing store of the column: the zero point can leave the state's range
            v += szp - lo
            v &= (1 << bits) - 1
            v += lo
        new = np.empty((nb, nf, nm), sd)
        new[..., :-1] = state.reshape(nb, nf, nm)[..., 1:]
        new[..., -1] = v
        acc = np.einsum("bfm,fm->bf", new, wt, dtype=np.int64)
        acc -= time_zp
        if rank > 1:
            acc = acc.reshape(nb, nf // rank, rank).sum(-1)
        if b is not None:
            acc += b
        out = qu.mbqm_inplace(qu.wrap32_inplace(acc) if wrap_acc else acc, m2, s2)
        out += ozp
        np.maximum(out, -128, out=out)
        np.minimum(out, 127, out=out)
        return out.astype(np.int8), new.reshape(state.shape)
    return step

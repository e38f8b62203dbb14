"""TFLM's arc_mli glue (``OPTIMIZED_KERNEL_DIR=arc_mli``, ``MLI_2_0``): which operators it sends to
MLI and the MLI parameters it derives from the TFLite quantisation, as pure functions.

Every conversion exists in two versions where the glue code has a defect (``shared/tflite_golden``
README, "Quirks"): ``fix=False`` gives what the device build computes, ``fix=True`` what arc_mli
intends (the ``arcfix`` recordings, TFLM with ``patches/03``). :func:`glue_defects` lists, for one
operator, where the two differ, for a load-time warning.
"""

from __future__ import annotations

import math
import dataclasses
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from .common import (
    ACT_NONE,
    ACT_RELU,
    ACT_RELU6,
    ACT_RELU_N1_TO_1,
    compute_out_size,
    compute_padding,
)

__all__ = [
    "mli_scale",
    "mli_scales",
    "adjust_bias_scales",
    "relu_type",
    "SaParams",
    "MliConvParams",
    "conv_params",
    "fc_params",
    "pool_padding",
    "mli_function",
    "hwcn_weights",
    "GlueDefect",
    "glue_defects",
    "RELU_NONE",
    "RELU_GEN",
    "RELU_1",
    "RELU_6",
]

# mli_relu_type values
RELU_NONE, RELU_GEN, RELU_1, RELU_6 = 0, 1, 2, 3


def mli_scale(s: float, *, fix: bool = False) -> tuple[int, int]:
    """``MliTensorInterface::SetScale``: a float32 scale as MLI's ``(scale int16, scale_frac_bits)``.

    ``exp`` from ``frexpf(s)``, ``frac = 15 - exp``, ``scale = (int16_t)(float(2**frac) * s + 0.5f)``:
    float32 product and sum (round to nearest even), then truncation. A mantissa rounded up to
    ``2**15`` does not fit int16: the device (x86) wraps it to -32768 (``fix=False``); arc_mli
    intends ``(2**14, frac - 1)`` (``fix=True``).

    Args:
        s: the TFLite scale (its float32 value).
        fix: the arcfix value instead of the device one.

    Returns:
        ``(scale, scale_frac_bits)`` as Python ints.
    """
    f = np.float32(s)
    _, e = math.frexp(float(f))  # frexpf and frexp agree on a float32 value
    frac = 15 - e
    v = np.float32(np.float32(2.0**frac) * f)  # exact: a power of two
    v = np.float32(v + np.float32(0.5))
    iv = int(math.trunc(float(v)))
    if fix and iv >= 32768:
        return iv >> 1, frac - 1
    iv16 = ((iv + 32768) % 65536) - 32768  # (int16_t) on x86: the int32 value wraps
    return iv16, frac


def mli_scales(scales: npt.ArrayLike, *, fix: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``SetScalePerChannel``: :func:`mli_scale` per channel.

    Args:
        scales: float32 scales (one per channel).
        fix: arcfix values.

    Returns:
        ``(scale int16 array, scale_frac_bits int8 array)``.
    """
    pairs = [mli_scale(float(v), fix=fix) for v in np.asarray(scales, np.float32).reshape(-1)]
    return (np.array([p[0] for p in pairs], np.int16), np.array([p[1] for p in pairs], np.int8))


def adjust_bias_scales(in_scale: int, in_frac: int, w_scale: npt.ArrayLike, w_frac: npt.ArrayLike,
                       b_frac: npt.ArrayLike) -> np.ndarray:
    """``AdjustBiasTensor``: bias scale ``(int16_t)((in_scale * w_scale) >> (in_frac + w_frac -
    b_frac))`` per channel (the bias values stay TFLite's int32 values).

    Args:
        in_scale: input MLI scale. in_frac: its frac bits.
        w_scale: weights MLI scales (per channel). w_frac: their frac bits.
        b_frac: the bias's own frac bits (:func:`mli_scales` of the bias float scales).

    Returns:
        int16 bias scales.
    """
    prod = np.int64(in_scale) * np.asarray(w_scale, np.int64)
    sh = int(in_frac) + np.asarray(w_frac, np.int64) - np.asarray(b_frac, np.int64)
    v = np.where(sh >= 0, prod >> np.maximum(sh, 0), prod << np.maximum(-sh, 0))
    return (((v + 32768) % 65536) - 32768).astype(np.int16)


def relu_type(act: int, act_min: int, act_max: int) -> int:
    """The ``mli_relu_type`` arc_mli's Prepare chooses: none when the clamp is the whole int8 range,
    else from the fused activation.

    Args:
        act: TFLite fused activation. act_min: TFLM clamp low. act_max: TFLM clamp high.

    Returns:
        one of RELU_NONE, RELU_GEN, RELU_6, RELU_1.
    """
    if act_min == -128 and act_max == 127:
        return RELU_NONE
    return {ACT_RELU: RELU_GEN, ACT_RELU6: RELU_6, ACT_RELU_N1_TO_1: RELU_1}.get(act, RELU_NONE)


@dataclass(frozen=True)
class SaParams:
    """MLI sa8 / sa32 element parameters of one tensor (per tensor: scalars; per channel: arrays)."""

    zero_point: np.ndarray
    scale: np.ndarray
    scale_frac_bits: np.ndarray
    dim: int = -1


@dataclass(frozen=True)
class MliConvParams:
    """Everything arc_mli hands to an MLI conv / depthwise / group conv / FC call."""

    function: str
    inp: SaParams
    weights: SaParams
    bias: SaParams
    out: SaParams
    relu: int
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, bottom, left, right
    stride: tuple[int, int] = (1, 1)
    notes: tuple[str, ...] = field(default=())


def _sa(zp: int, scale: float, fix: bool) -> SaParams:
    s, f = mli_scale(scale, fix=fix)
    return SaParams(np.array(zp, np.int16), np.array(s, np.int16), np.array(f, np.int8))


def _padding(same: bool, in_hw: tuple[int, int], k_hw: tuple[int, int], stride: tuple[int, int],
             ) -> tuple[int, int, int, int]:
    if not same:
        return 0, 0, 0, 0
    oh = compute_out_size(True, in_hw[0], k_hw[0], stride[0])
    ow = compute_out_size(True, in_hw[1], k_hw[1], stride[1])
    ph, oh_off = compute_padding(stride[0], 1, in_hw[0], k_hw[0], oh)
    pw, ow_off = compute_padding(stride[1], 1, in_hw[1], k_hw[1], ow)
    return ph, ph + oh_off, pw, pw + ow_off


def pool_padding(same: bool, in_hw: tuple[int, int], k_hw: tuple[int, int],
                 stride: tuple[int, int]) -> tuple[int, int, int, int]:
    """arc_mli pool / conv cfg padding: TFLM's padding before, padding + offset after.

    Args:
        same: SAME padding. in_hw: input (h, w). k_hw: kernel (h, w). stride: (h, w).

    Returns:
        ``(top, bottom, left, right)``.
    """
    return _padding(same, in_hw, k_hw, stride)


def mli_function(op: str, *, input_dtype: str, filter_dtype: str = "int8", bias_dtype: str = "int32",
                 dilation: tuple[int, int] = (1, 1), per_channel_ok: bool = True,
                 depth_multiplier: int = 1, broadcast: bool = False, act: int = ACT_NONE,
                 filter_zp: int = 0, act_min: int = -128, act_max: int = 127) -> str | None:
    """arc_mli's ``IsMliApplicable`` (MLI_2_0): the MLI kernel an operator goes to, or None for
    TFLM's reference kernel.

    Args:
        op: TFLite builtin name.
        input_dtype: input dtype name. filter_dtype: filter dtype. bias_dtype: bias dtype.
        dilation: (h, w) dilation factors.
        per_channel_ok: the filter has one scale per output channel (conv / depthwise).
        depth_multiplier: depthwise depth multiplier.
        broadcast: ADD inputs of different shapes.
        act: fused activation (pooling checks it).
        filter_zp: FC filter zero point.
        act_min: TFLM clamp low (ADD needs the whole int8 range).
        act_max: TFLM clamp high.

    Returns:
        the MLI function name or None.
    """
    i8 = input_dtype == "int8"
    if op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        ok = i8 and filter_dtype == "int8" and bias_dtype == "int32" and dilation == (1, 1) \
            and per_channel_ok
        if not ok:
            return None
        if op == "CONV_2D":
            return "mli_krn_conv2d_hwcn_sa8_sa8_sa32"
        if depth_multiplier > 1:
            return "mli_krn_group_conv2d_hwcn_sa8_sa8_sa32"
        return "mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32"
    if op == "FULLY_CONNECTED":
        ok = i8 and filter_dtype == "int8" and bias_dtype == "int32" and filter_zp == 0
        return "mli_krn_fully_connected_sa8_sa8_sa32" if ok else None
    if op in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        if i8 and act == ACT_NONE:
            return "mli_krn_avepool_hwc_sa8" if op == "AVERAGE_POOL_2D" else "mli_krn_maxpool_hwc_sa8"
        return None
    if op == "ADD":
        full = act_min == -128 and act_max == 127
        return "mli_krn_eltwise_add_sa8" if i8 and not broadcast and full else None
    return None


def conv_params(op: str, *, in_scale: float, in_zp: int, w_scales: npt.ArrayLike,
                b_scales: npt.ArrayLike, out_scale: float, out_zp: int, act: int, act_min: int,
                act_max: int, same: bool, in_hw: tuple[int, int], k_hw: tuple[int, int],
                stride: tuple[int, int], depth_multiplier: int = 1, fix: bool = False
                ) -> MliConvParams:
    """arc_mli conv / depthwise Prepare: MLI parameters of input, per-channel weights (dim 3 of
    HWCN / HW1N), bias (dim 0, scales from :func:`adjust_bias_scales`), output, relu, padding.

    Args:
        op: CONV_2D or DEPTHWISE_CONV_2D.
        in_scale: input scale. in_zp: input zero point.
        w_scales: per-channel filter scales. b_scales: per-channel bias scales (float32).
        out_scale: output scale. out_zp: output zero point.
        act: fused activation. act_min: TFLM clamp low. act_max: clamp high.
        same: SAME padding. in_hw: input (h, w). k_hw: kernel (h, w). stride: (h, w).
        depth_multiplier: depthwise multiplier (> 1: group convolution).
        fix: arcfix scales.

    Returns:
        the :class:`MliConvParams`.
    """
    n = np.asarray(w_scales).size
    inp = _sa(in_zp, in_scale, fix)
    ws, wf = mli_scales(w_scales, fix=fix)
    bs_own, bf = mli_scales(b_scales, fix=fix)
    bs = adjust_bias_scales(int(inp.scale), int(inp.scale_frac_bits), ws, wf, bf)
    fn = mli_function(op, input_dtype="int8", depth_multiplier=depth_multiplier)
    assert fn is not None
    return MliConvParams(
        fn, inp, SaParams(np.zeros(n, np.int16), ws, wf, 3), SaParams(np.zeros(n, np.int16), bs, bf, 0),
        _sa(out_zp, out_scale, fix), relu_type(act, act_min, act_max),
        _padding(same, in_hw, k_hw, stride), stride)


def fc_params(*, in_scale: float, in_zp: int, w_scale: float, b_scale: float, out_scale: float,
              out_zp: int, act: int, act_min: int, act_max: int, out_rank: int = 2,
              fix: bool = False) -> MliConvParams:
    """arc_mli FULLY_CONNECTED Prepare / Eval (per-tensor weights).

    The device calls MLI with ``MLI_RELU_NONE`` whatever the fused activation (quirk 2); with
    ``fix=True`` the relu Prepare chose. An output of rank > 2 makes the device compute only
    element 0 of each row (quirk 3): noted, and the arcfix view is ``[batch, out]``.

    Args:
        in_scale: input scale. in_zp: input zero point.
        w_scale: weights scale. b_scale: bias scale.
        out_scale: output scale. out_zp: output zero point.
        act: fused activation. act_min: TFLM clamp low. act_max: clamp high.
        out_rank: rank of the output tensor.
        fix: arcfix behaviour.

    Returns:
        the :class:`MliConvParams` (weights per tensor, layout [in, out]).
    """
    inp = _sa(in_zp, in_scale, fix)
    w = _sa(0, w_scale, fix)
    b_s, b_f = mli_scale(b_scale, fix=fix)
    bs = adjust_bias_scales(int(inp.scale), int(inp.scale_frac_bits), [int(w.scale)],
                            [int(w.scale_frac_bits)], [b_f])[0]
    notes = []
    relu = relu_type(act, act_min, act_max)
    if not fix and relu != RELU_NONE:
        notes.append("fused activation ignored (MLI_RELU_NONE)")
        relu = RELU_NONE
    if out_rank > 2 and not fix:
        notes.append(f"rank-{out_rank} output: only element 0 of each row is written")
    return MliConvParams("mli_krn_fully_connected_sa8_sa8_sa32", inp, w,
                         SaParams(np.array(0, np.int16), np.array(bs, np.int16), np.array(b_f, np.int8)),
                         _sa(out_zp, out_scale, fix), relu, notes=tuple(notes))


def hwcn_weights(op: str, w: np.ndarray) -> np.ndarray:
    """The weights layout of TFLM's ARC adaptation tool: conv OHWI -> HWCN, depthwise 1HWC -> HW1C,
    FC [out, in] -> [in, out].

    Args:
        op: CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED.
        w: the TFLite weights.

    Returns:
        the transposed (contiguous) weights.
    """
    if op == "CONV_2D":
        return np.ascontiguousarray(w.transpose(1, 2, 3, 0))
    if op == "DEPTHWISE_CONV_2D":
        return np.ascontiguousarray(w.transpose(1, 2, 0, 3))
    return np.ascontiguousarray(w.T)


@dataclass(frozen=True)
class GlueDefect:
    """One place where the device build deviates from what arc_mli intends."""

    kind: str  # "scale_wrap", "fc_relu_ignored", "fc_rank3"
    tensor: int
    channel: int | None
    message: str
    op_index: int = -1


def glue_defects(op: str, *, op_index: int, tensors: dict, act_min: int = -128, act_max: int = 127,
                 act: int = ACT_NONE) -> list[GlueDefect]:
    """The arc_mli defects that affect one offloaded operator.

    Args:
        op: the builtin name (only offloaded operators have defects).
        op_index: operator index (for the message).
        tensors: ``{role: (tensor index, float32 scales array, rank)}`` with roles ``input``,
            ``weights``, ``bias``, ``output`` (those present).
        act_min: TFLM clamp low. act_max: clamp high. act: fused activation.

    Returns:
        the defects (empty if the device computes what arc_mli intends).
    """
    out: list[GlueDefect] = []
    for role, (ti, scales, _rank) in tensors.items():
        s = np.asarray(scales, np.float32).reshape(-1)
        for c, v in enumerate(s):
            dev = mli_scale(float(v))
            if dev[0] < 0:
                fixed = mli_scale(float(v), fix=True)
                out.append(GlueDefect(
                    "scale_wrap", ti, c if s.size > 1 else None,
                    f"op {op_index} {op}: {role} tensor {ti}" + (f" channel {c}" if s.size > 1 else "")
                    + f": scale {float(v):.9g} -> MLI mantissa 32768 wraps to {dev[0]} "
                    f"(frac {dev[1]}); intended {fixed[0]} (frac {fixed[1]}): the "
                    + ("channel's" if s.size > 1 else "tensor's") + " scale flips sign on the device, "
                    f"whose output can deviate by up to {act_max - act_min} LSB (the whole clamp range)"))
    if op == "FULLY_CONNECTED":
        o = tensors.get("output")
        if relu_type(act, act_min, act_max) != RELU_NONE:
            out.append(GlueDefect("fc_relu_ignored", o[0] if o else -1, None,
                                  f"op {op_index} FULLY_CONNECTED: output tensor {o[0] if o else -1}: fused "
                                  f"activation ignored on the device (values below {act_min} / above "
                                  f"{act_max} not clamped: up to {max(act_min + 128, 127 - act_max)} LSB)"))
        if o and o[2] > 2:
            out.append(GlueDefect("fc_rank3", o[0], None,
                                  f"op {op_index} FULLY_CONNECTED: rank-{o[2]} output tensor {o[0]}: "
                                  "the device writes only element 0 of each row, the others keep stale "
                                  "arena bytes (undefined: up to 255 LSB)"))
    return [dataclasses.replace(d, op_index=op_index) for d in out]

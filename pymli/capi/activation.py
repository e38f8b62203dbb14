"""``mli_krn_relu_*``, ``mli_krn_leaky_relu_*`` and ``mli_krn_prelu_*`` (fx8, fx16, sa8).

Each function runs the checks of ``private/src/mli_check.cc`` (``mli_chk_relu*``,
``mli_chk_leaky_relu*``, ``mli_chk_prelu*``), computes into a temporary with
:mod:`pymli.kernels.activation` and writes ``out`` through its mem_stride. As in C, ReLU copies
the input's element parameters to ``out``; leaky ReLU and PReLU leave the ``out`` struct alone.
"""

from __future__ import annotations

import numpy as np

from ..arith.rounding import wrap
from ..checks import (check_quant_params, check_scalar_tensor, check_tensor, check_tensor_private, fail,
                      inner_most_dimension_is_one, same_shape, shape_at)
from ..errors import Status
from ..formats import ElType
from ..kernels import activation as K
from ..tensor import Tensor
from ._registry import mli_function
from .types import PreluCfg, ReluCfg

__all__ = [
    "mli_krn_relu_fx8", "mli_krn_relu_fx16", "mli_krn_relu_sa8",
    "mli_krn_leaky_relu_fx8", "mli_krn_leaky_relu_fx16", "mli_krn_leaky_relu_sa8",
    "mli_krn_prelu_fx8", "mli_krn_prelu_fx16", "mli_krn_prelu_sa8",
]

# Zero-point ranges of mli_chk_tensor_quant_params: int8 range for data, 14 bits for slopes.
_ZP_BYTE = 7
_ZP_SLOPE = 14


def _sa(t: Tensor, name: str) -> int:
    """Per-tensor SA parameter as C reads it (``el_params.sa.<name>.mem``)."""
    return int(t.quant_vector(name)[0])


def _scalar_value(t: Tensor) -> int:
    """``mli_prv_tensor_data_val``: the struct's value for rank 0, else the first element."""
    v = t.value if t.rank == 0 else t.data[0]
    return int(wrap(int(v), t.el_type.bits))


def _check_io_common(fn: str, inp: Tensor, out: Tensor) -> None:
    if out.el_type != inp.el_type:
        fail(Status.TYPE_MISMATCH, f"{fn}: out type {out.el_type.c_name} != in type {inp.el_type.c_name}")
    if not same_shape(inp, out):
        fail(Status.SHAPE_MISMATCH, f"{fn}: in shape {inp.shape[:inp.rank]} != out shape {out.shape[:out.rank]}")


def _check_type(fn: str, el: ElType, *tensors: Tensor) -> None:
    for t in tensors:
        if t.el_type != el:
            fail(Status.TYPE_MISMATCH, f"{fn}: {t.el_type.c_name} tensor, {el.c_name} expected")


def _check_sa_params(fn: str, inp: Tensor, out: Tensor | None, slope: Tensor | None) -> None:
    """Quantisation requirements of the sa8 versions: byte-range zero points, per-tensor params."""
    check_quant_params(inp, _ZP_BYTE)
    if out is not None:
        check_quant_params(out, _ZP_BYTE)
    if slope is not None:
        check_quant_params(slope, _ZP_SLOPE)
    for name, t in (("in", inp), ("out", out), ("slope_coeff", slope)):
        if t is not None and t.dim >= 0:
            fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: {name} must be quantised per tensor (dim={t.dim})")


def _check_fx_frac(fn: str, inp: Tensor, out: Tensor) -> None:
    if out.frac_bits != inp.frac_bits:
        fail(Status.SPEC_PARAM_MISMATCH, f"{fn}: out frac_bits {out.frac_bits} != in frac_bits {inp.frac_bits}")


# ------------------------------------------------------------------------------------------ ReLU
def _check_relu(fn: str, el: ElType, inp: Tensor, cfg: ReluCfg | None, out: Tensor) -> None:
    check_tensor(inp)
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, f"{fn}: NULL cfg")
    check_tensor(out)
    _check_io_common(fn, inp, out)
    if not (inner_most_dimension_is_one(inp) and inner_most_dimension_is_one(out)):
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: innermost mem_stride must be 1")
    _check_type(fn, el, inp)
    if el is ElType.SA_8:
        _check_sa_params(fn, inp, None, None)


def _relu(fn: str, el: ElType, inp: Tensor, cfg: ReluCfg, out: Tensor) -> Status:
    _check_relu(fn, el, inp, cfg, out)
    if el.is_sa:
        q = dict(zero=_sa(inp, "zero_point"), scale=_sa(inp, "scale"), shift=_sa(inp, "scale_frac_bits"))
    else:
        q = dict(zero=0, scale=1, shift=int(inp.frac_bits))
    res = K.relu(inp.view(), int(cfg.type), **q)
    out.view()[...] = res
    # out->el_params = in->el_params
    if el.is_sa:
        out.dim, out.zero_point, out.scale, out.scale_frac_bits = inp.dim, inp.zero_point, inp.scale, inp.scale_frac_bits
    else:
        out.frac_bits = inp.frac_bits
    return Status.OK


@mli_function()
def mli_krn_relu_fx8(in_: Tensor, cfg: ReluCfg, out: Tensor) -> Status:
    """ReLU (NONE, GEN, RELU_1, RELU_6) of an fx8 tensor; ``out`` takes the input's frac_bits."""
    return _relu("mli_krn_relu_fx8", ElType.FX_8, in_, cfg, out)


@mli_function()
def mli_krn_relu_fx16(in_: Tensor, cfg: ReluCfg, out: Tensor) -> Status:
    """ReLU of an fx16 tensor; ``out`` takes the input's frac_bits."""
    return _relu("mli_krn_relu_fx16", ElType.FX_16, in_, cfg, out)


@mli_function()
def mli_krn_relu_sa8(in_: Tensor, cfg: ReluCfg, out: Tensor) -> Status:
    """ReLU of an sa8 tensor (bounds from the input quantisation); ``out`` takes its parameters."""
    return _relu("mli_krn_relu_sa8", ElType.SA_8, in_, cfg, out)


# ------------------------------------------------------------------------------------ leaky ReLU
def _check_leaky(fn: str, el: ElType, inp: Tensor, slope: Tensor, out: Tensor) -> None:
    check_tensor(inp)
    check_tensor(out)
    _check_io_common(fn, inp, out)
    if not (inner_most_dimension_is_one(inp) and inner_most_dimension_is_one(out)):
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: innermost mem_stride must be 1")
    check_scalar_tensor(slope)
    if slope.el_type != inp.el_type:
        fail(Status.TYPE_MISMATCH, f"{fn}: slope type {slope.el_type.c_name} != in type {inp.el_type.c_name}")
    _check_type(fn, el, inp, slope)
    if el.is_sa:
        _check_sa_params(fn, inp, out, slope)
    else:
        _check_fx_frac(fn, inp, out)


def _sa8_quant(inp: Tensor, slope: Tensor, out: Tensor) -> dict[str, int]:
    return dict(in_zp=_sa(inp, "zero_point"), in_scale=_sa(inp, "scale"), in_sfb=_sa(inp, "scale_frac_bits"),
                out_zp=_sa(out, "zero_point"), out_scale=_sa(out, "scale"), out_sfb=_sa(out, "scale_frac_bits"),
                slope_zp=_sa(slope, "zero_point"), slope_scale=_sa(slope, "scale"),
                slope_sfb=_sa(slope, "scale_frac_bits"))


def _leaky(fn: str, el: ElType, inp: Tensor, slope: Tensor, out: Tensor) -> Status:
    _check_leaky(fn, el, inp, slope, out)
    alpha = _scalar_value(slope)
    if el.is_sa:
        res = K.leaky_relu_sa8(inp.view(), alpha, **_sa8_quant(inp, slope, out))
    else:
        shift = int(inp.frac_bits) + int(slope.frac_bits) - int(out.frac_bits)
        res = K.leaky_relu_fx(inp.view(), alpha, shift, normalise=el is ElType.FX_16)
    out.view()[...] = res
    return Status.OK


@mli_function()
def mli_krn_leaky_relu_fx8(in_: Tensor, slope_coeff: Tensor, out: Tensor) -> Status:
    """Leaky ReLU of an fx8 tensor with a scalar fx8 slope (rank 0 or one element)."""
    return _leaky("mli_krn_leaky_relu_fx8", ElType.FX_8, in_, slope_coeff, out)


@mli_function()
def mli_krn_leaky_relu_fx16(in_: Tensor, slope_coeff: Tensor, out: Tensor) -> Status:
    """Leaky ReLU of an fx16 tensor with a scalar fx16 slope (normalised before use, as C does)."""
    return _leaky("mli_krn_leaky_relu_fx16", ElType.FX_16, in_, slope_coeff, out)


@mli_function()
def mli_krn_leaky_relu_sa8(in_: Tensor, slope_coeff: Tensor, out: Tensor) -> Status:
    """Leaky ReLU of an sa8 tensor, requantised to ``out``'s parameters, with a scalar sa8 slope."""
    return _leaky("mli_krn_leaky_relu_sa8", ElType.SA_8, in_, slope_coeff, out)


# ----------------------------------------------------------------------------------------- PReLU
def _check_any_tensor(t: Tensor) -> None:
    """``mli_chk_tensor`` also for a rank-0 tensor, whose value C reads as the data pointer."""
    if t is not None and t.rank == 0:
        if int(t.value) == 0:
            fail(Status.BAD_TENSOR, "rank-0 tensor: its zero value reads as a NULL data pointer")
        check_tensor_private([], [], 0, t.capacity, t.el_type.size)
        return
    check_tensor(t)


def _check_prelu(fn: str, el: ElType, inp: Tensor, slope: Tensor, cfg: PreluCfg | None, out: Tensor) -> None:
    check_tensor(inp)
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, f"{fn}: NULL cfg")
    axis = int(cfg.axis)
    if axis == -1:
        check_scalar_tensor(slope)
    else:
        _check_any_tensor(slope)
    check_tensor(out)
    _check_io_common(fn, inp, out)
    if axis >= inp.rank:
        fail(Status.BAD_FUNC_CFG, f"{fn}: axis {axis} >= rank {inp.rank}")
    ok = inner_most_dimension_is_one(inp) and inner_most_dimension_is_one(out)
    if axis != -1:
        ok &= inner_most_dimension_is_one(slope)
        for i in range(inp.rank):
            want = shape_at(inp, i) if i == axis else 1
            ok &= shape_at(slope, i) == want
    if not ok:
        fail(Status.INCOMPATEBLE_TENSORS,
             f"{fn}: innermost mem_stride must be 1 and slope shape {slope.shape[:slope.rank]} must be "
             f"in.shape[{axis}] on the axis and 1 elsewhere")
    if slope.el_type != inp.el_type:
        fail(Status.TYPE_MISMATCH, f"{fn}: slope type {slope.el_type.c_name} != in type {inp.el_type.c_name}")
    _check_type(fn, el, inp, slope)
    if el.is_sa:
        _check_sa_params(fn, inp, out, slope)
    else:
        _check_fx_frac(fn, inp, out)


_LEAKY = {ElType.FX_8: mli_krn_leaky_relu_fx8, ElType.FX_16: mli_krn_leaky_relu_fx16,
          ElType.SA_8: mli_krn_leaky_relu_sa8}


def _prelu(fn: str, el: ElType, inp: Tensor, slope: Tensor, cfg: PreluCfg, out: Tensor) -> Status:
    _check_prelu(fn, el, inp, slope, cfg, out)
    axis = int(cfg.axis)
    if axis < 0:
        # One slope for the whole tensor: C hands over to the leaky ReLU (and its checks).
        return _LEAKY[el](inp, slope, out)
    # C reads the slopes as slope_ptr[0 .. shape[axis]-1], whatever the slope's strides.
    slopes = np.asarray(slope.data[: shape_at(slope, axis)], dtype=np.int64)
    if el.is_sa:
        res = K.prelu_sa8(inp.view(), slopes, axis=axis, **_sa8_quant(inp, slope, out))
    else:
        shift = int(inp.frac_bits) + int(slope.frac_bits) - int(out.frac_bits)
        res = K.prelu_fx(inp.view(), slopes, shift, axis=axis)
    out.view()[...] = res
    return Status.OK


@mli_function()
def mli_krn_prelu_fx8(in_: Tensor, slope_coeff: Tensor, cfg: PreluCfg, out: Tensor) -> Status:
    """PReLU of an fx8 tensor: one slope per index of ``cfg.axis`` (a scalar slope if ``axis < 0``)."""
    return _prelu("mli_krn_prelu_fx8", ElType.FX_8, in_, slope_coeff, cfg, out)


@mli_function()
def mli_krn_prelu_fx16(in_: Tensor, slope_coeff: Tensor, cfg: PreluCfg, out: Tensor) -> Status:
    """PReLU of an fx16 tensor (per-axis slopes are used unnormalised, as C does)."""
    return _prelu("mli_krn_prelu_fx16", ElType.FX_16, in_, slope_coeff, cfg, out)


@mli_function()
def mli_krn_prelu_sa8(in_: Tensor, slope_coeff: Tensor, cfg: PreluCfg, out: Tensor) -> Status:
    """PReLU of an sa8 tensor, requantised to ``out``'s parameters, one slope per axis index."""
    return _prelu("mli_krn_prelu_sa8", ElType.SA_8, in_, slope_coeff, cfg, out)

"""``mli_krn_relu_*``, ``mli_krn_leaky_relu_*`` and ``mli_krn_prelu_*`` (fx8, fx16, sa8).

Each function runs the checks of ``private/src/mli_check.cc`` (``mli_chk_relu*``,
``mli_chk_leaky_relu*``, ``mli_chk_prelu*``), computes into a temporary with
:mod:`pymli.kernels.activation` and writes ``out`` through its mem_stride. As in C, ReLU copies
the input's element parameters to ``out``; leaky ReLU and PReLU leave the ``out`` struct alone.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..arith.activation import clamp
from ..arith.rounding import clip_ufunc as _clip
from ..arith.rounding import wrap_int
from ..checks.activation import check_leaky_relu, check_prelu, check_relu
from ..checks.tensor import shape_at
from ..errors import Status
from ..formats import ElType
from ..kernels import activation as K
from ..tensor import Tensor
from ._plan import view, view_spec
from ._registry import c_variants
from .convolution import whole_view
from .types import PreluCfg, ReluCfg

__all__ = [
    "mli_krn_relu_fx8", "mli_krn_relu_fx16", "mli_krn_relu_sa8",
    "mli_krn_leaky_relu_fx8", "mli_krn_leaky_relu_fx16", "mli_krn_leaky_relu_sa8",
    "mli_krn_prelu_fx8", "mli_krn_prelu_fx16", "mli_krn_prelu_sa8",
]


def _sa(t: Tensor, name: str) -> int:
    """Per-tensor SA parameter as C reads it (``el_params.sa.<name>.mem``)."""
    return int(t.quant_vector(name)[0])


def _scalar_value(t: Tensor) -> int:
    """``mli_prv_tensor_data_val``: the struct's value for rank 0, else the first element."""
    v = t.value if t.rank == 0 else t.data[0]
    return wrap_int(int(v), t.el_type.bits)


# ------------------------------------------------------------------------------------------ ReLU


def _relu(fn: str, el: ElType, inp: Tensor, cfg: ReluCfg, out: Tensor) -> Callable[..., Status]:
    check_relu(fn, el, inp, cfg, out)
    sa = el.is_sa
    if sa:
        q = dict(zero=_sa(inp, "zero_point"), scale=_sa(inp, "scale"), shift=_sa(inp, "scale_frac_bits"))
    else:
        q = dict(zero=0, scale=1, shift=int(inp.frac_bits))
    kind = int(cfg.type)
    lo, hi = K.relu_bounds(kind, el.dtype, **q)
    vi, vo = view_spec(inp), view_spec(out)
    # out->el_params = in->el_params. The plan runs only on the very field objects it saw (the memo's
    # snapshot holds both tensors' change counters), so whether a write changes anything is known now:
    # assignments of the same objects would be no-ops.
    names = ("dim", "zero_point", "scale", "scale_frac_bits") if sa else ("frac_bits",)
    copy = [n for n in names if getattr(out, n) is not getattr(inp, n)]
    # The data arrays' dtypes are part of the memo's snapshot: decided once.
    same = inp.data.dtype == el.dtype and out.data.dtype == el.dtype
    n = inp.data.size
    # Both views the whole of their (equally long, contiguous) arrays: ReLU is elementwise, so it runs on
    # the flat arrays themselves (no view to rebuild).
    flat = same and whole_view(vi) and whole_view(vo) and out.data.size == n
    if flat and not copy:
        # The bounds as 0-d arrays of the data's dtype: the clip ufunc takes them as they are (NumPy
        # scalars go through its scalar conversion, ~0.4 us a call), with the same loop and result;
        # at every size one clip call is then cheaper than np.maximum and np.minimum.
        blo, bhi = np.array(lo), np.array(hi)

        def run_flat(inp: Tensor, cfg: ReluCfg, out: Tensor) -> Status:
            _clip(inp.data, blo, bhi, out.data)  # into out: overlap-safe, no temporary
            return Status.OK
        return run_flat

    def run(inp: Tensor, cfg: ReluCfg, out: Tensor) -> Status:
        if same:
            clamp(view(inp, vi), lo, hi, out=view(out, vo))  # into out: overlap-safe, no temporary
        else:
            K.relu(view(inp, vi), kind, out=view(out, vo), **q)
        for name in copy:
            setattr(out, name, getattr(inp, name))
        return Status.OK

    return run


mli_krn_relu_fx8, mli_krn_relu_fx16, mli_krn_relu_sa8 = c_variants("mli_krn_relu", _relu, "in_ cfg out", {
    ElType.FX_8: "ReLU (NONE, GEN, RELU_1, RELU_6) of an fx8 tensor; ``out`` takes the input's frac_bits.",
    ElType.FX_16: "ReLU of an fx16 tensor; ``out`` takes the input's frac_bits.",
    ElType.SA_8: "ReLU of an sa8 tensor (bounds from the input quantisation); ``out`` takes its parameters.",
})


# ------------------------------------------------------------------------------------ leaky ReLU


def _sa8_quant(inp: Tensor, slope: Tensor, out: Tensor) -> dict[str, int]:
    return dict(in_zp=_sa(inp, "zero_point"), in_scale=_sa(inp, "scale"), in_sfb=_sa(inp, "scale_frac_bits"),
                out_zp=_sa(out, "zero_point"), out_scale=_sa(out, "scale"), out_sfb=_sa(out, "scale_frac_bits"),
                slope_zp=_sa(slope, "zero_point"), slope_scale=_sa(slope, "scale"),
                slope_sfb=_sa(slope, "scale_frac_bits"))


def _leaky(fn: str, el: ElType, inp: Tensor, slope: Tensor, out: Tensor) -> Callable[..., Status]:
    check_leaky_relu(fn, el, inp, slope, out)
    if el.is_sa:
        compute = K.leaky_plan(el.dtype, sa8=_sa8_quant(inp, slope, out))
    else:
        compute = K.leaky_plan(el.dtype, shift=int(inp.frac_bits) + int(slope.frac_bits) - int(out.frac_bits),
                               normalise=el is ElType.FX_16)
    vi, vo = view_spec(inp), view_spec(out)

    def run(inp: Tensor, slope: Tensor, out: Tensor) -> Status:
        view(out, vo)[...] = compute(view(inp, vi), _scalar_value(slope))
        return Status.OK

    return run


(mli_krn_leaky_relu_fx8, mli_krn_leaky_relu_fx16,
 mli_krn_leaky_relu_sa8) = c_variants("mli_krn_leaky_relu", _leaky, "in_ slope_coeff out", {
    ElType.FX_8: "Leaky ReLU of an fx8 tensor with a scalar fx8 slope (rank 0 or one element).",
    ElType.FX_16: "Leaky ReLU of an fx16 tensor with a scalar fx16 slope (normalised before use, as C does).",
    ElType.SA_8: "Leaky ReLU of an sa8 tensor, requantised to ``out``'s parameters, with a scalar sa8 slope.",
})


# ----------------------------------------------------------------------------------------- PReLU


_LEAKY = {ElType.FX_8: mli_krn_leaky_relu_fx8, ElType.FX_16: mli_krn_leaky_relu_fx16,
          ElType.SA_8: mli_krn_leaky_relu_sa8}


def _prelu(fn: str, el: ElType, inp: Tensor, slope: Tensor, cfg: PreluCfg, out: Tensor) -> Callable[..., Status]:
    check_prelu(fn, el, inp, slope, cfg, out)
    axis = int(cfg.axis)
    if axis < 0:
        # One slope for the whole tensor: C hands over to the leaky ReLU (and its checks).
        leaky = _LEAKY[el]
        return lambda inp, slope, cfg, out: leaky(inp, slope, out)
    if el.is_sa:
        q = _sa8_quant(inp, slope, out)
    else:
        shift = int(inp.frac_bits) + int(slope.frac_bits) - int(out.frac_bits)
    n = shape_at(slope, axis)
    vi, vo = view_spec(inp), view_spec(out)

    def run(inp: Tensor, slope: Tensor, cfg: PreluCfg, out: Tensor) -> Status:
        # C reads the slopes as slope_ptr[0 .. shape[axis]-1], whatever the slope's strides.
        slopes = np.asarray(slope.data[:n], dtype=np.int64)
        if el.is_sa:
            res = K.prelu_sa8(view(inp, vi), slopes, axis=axis, **q)
        else:
            res = K.prelu_fx(view(inp, vi), slopes, shift, axis=axis)
        view(out, vo)[...] = res
        return Status.OK

    return run


(mli_krn_prelu_fx8, mli_krn_prelu_fx16,
 mli_krn_prelu_sa8) = c_variants("mli_krn_prelu", _prelu, "in_ slope_coeff cfg out", {
    ElType.FX_8: "PReLU of an fx8 tensor: one slope per index of ``cfg.axis`` (a scalar slope if ``axis < 0``).",
    ElType.FX_16: "PReLU of an fx16 tensor (per-axis slopes are used unnormalised, as C does).",
    ElType.SA_8: "PReLU of an sa8 tensor, requantised to ``out``'s parameters, one slope per axis index.",
})

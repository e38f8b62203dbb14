"""``mli_kernels_api.h``: LUT-based activations (sigm, tanh, softmax, l2_normalize) and their LUTs.

Each kernel validates its arguments as the checked C build does (``mli_chk_basic_activation_*``,
``mli_chk_softmax_*``, ``mli_chk_l2_normalize_*``), computes into a temporary, writes ``out``
through its mem_stride and then sets ``out``'s quantisation as C does: fx outputs get
``frac_bits = bits - 1``; sa8 outputs get a fixed per-tensor (zero_point, scale = 1,
scale_frac_bits). The LUT itself is not validated by the kernels (C does not either).
"""

from __future__ import annotations

from collections.abc import Callable

from ..arith.lut import LUT_SPECS, create_lut, lut_size
from ..arith.rounding import wrap_int
from ..checks.lut import check_axis_cfg, check_basic_activation, check_create_lut, check_sa8_input
from ..errors import Status
from ..formats import ElType
from ..kernels import transform as K
from ..tensor import Lut, Tensor
from ._plan import view, view_spec
from ._registry import c_variant, c_variants
from .types import L2NormalizeCfg, SoftmaxCfg

__all__ = [
    "mli_krn_sigm_fx8", "mli_krn_sigm_fx16", "mli_krn_sigm_sa8",
    "mli_krn_tanh_fx8", "mli_krn_tanh_fx16", "mli_krn_tanh_sa8",
    "mli_krn_softmax_fx8", "mli_krn_softmax_fx16", "mli_krn_softmax_sa8",
    "mli_krn_l2_normalize_fx16", "mli_krn_l2_normalize_sa8",
    "mli_krn_sigm_get_lut_size", "mli_krn_tanh_get_lut_size", "mli_krn_softmax_get_lut_size",
    "mli_krn_l2_normalize_get_lut_size",
    "mli_krn_sigm_create_lut", "mli_krn_tanh_create_lut", "mli_krn_softmax_create_lut",
    "mli_krn_l2_normalize_create_lut",
]


# ---------------------------------------------------------------------------------------- checks


def _set_sa8_out(out: Tensor, zp: int, shift: int) -> None:
    out.zero_point = zp
    out.scale = 1
    out.scale_frac_bits = shift
    out.dim = -1


def _sa8_in_params(inp: Tensor) -> tuple[int, int, int]:
    """Per-tensor (zero_point, scale, scale_frac_bits) as the C struct holds them (int16, int16, int8)."""
    zp = wrap_int(int(inp.quant_vector("zero_point")[0]), 16)
    scale = wrap_int(int(inp.quant_vector("scale")[0]), 16)
    shift = wrap_int(int(inp.quant_vector("scale_frac_bits")[0]), 8)
    return zp, scale, shift


# ---------------------------------------------------------------------------------------- sigm / tanh
def _fx_activation(fn: str, el: ElType, inp: Tensor, lut: Lut, out: Tensor) -> Callable[..., Status]:
    check_basic_activation(inp, out, el, fn)
    bits = el.bits
    compute = K.lut_activation_plan(el.dtype, fx=(int(inp.frac_bits), bits))
    vi, vo = view_spec(inp), view_spec(out)

    def run(inp: Tensor, lut: Lut, out: Tensor) -> Status:
        view(out, vo)[...] = compute(view(inp, vi), lut)
        out.frac_bits = bits - 1
        return Status.OK

    return run


def _sa8_activation(fn: str, out_q: tuple[int, int], inp: Tensor, lut: Lut, out: Tensor) -> Callable[..., Status]:
    check_basic_activation(inp, out, ElType.SA_8, fn)
    check_sa8_input(inp, fn)
    compute = K.lut_activation_plan(ElType.SA_8.dtype, sa8=(*_sa8_in_params(inp), *out_q))
    vi, vo = view_spec(inp), view_spec(out)

    def run(inp: Tensor, lut: Lut, out: Tensor) -> Status:
        view(out, vo)[...] = compute(view(inp, vi), lut)
        _set_sa8_out(out, *out_q)
        return Status.OK

    return run


def _sa8_out_doc(out_q: tuple[int, int]) -> str:
    """What a docstring says of the sa8 output quantisation ``(zero_point, scale_frac_bits)``."""
    return f"``out`` gets zero_point {out_q[0]}, scale 1, scale_frac_bits {out_q[1]}."


def _lut_activations(kind: str, what: str, out_q: tuple[int, int]) -> tuple[Callable[..., Status], ...]:
    """Register ``mli_krn_<kind>_fx8``, ``_fx16`` and ``_sa8`` (``what`` through the LUT; sa8 output ``out_q``)."""
    fx = (c_variant(f"mli_krn_{kind}_{el.suffix}", _fx_activation, "inp lut out",
                    f"{what} of an {el.suffix} tensor through ``lut``; ``out`` becomes Q{el.bits - 1}.",
                    head=(el,), planned=True) for el in (ElType.FX_8, ElType.FX_16))
    sa8 = c_variant(f"mli_krn_{kind}_sa8", _sa8_activation, "inp lut out",
                    f"{what} of an sa8 tensor; {_sa8_out_doc(out_q)}", head=(out_q,), planned=True)
    return (*fx, sa8)


mli_krn_sigm_fx8, mli_krn_sigm_fx16, mli_krn_sigm_sa8 = _lut_activations("sigm", "Sigmoid", K.SIGM_SA8_OUT)
mli_krn_tanh_fx8, mli_krn_tanh_fx16, mli_krn_tanh_sa8 = _lut_activations("tanh", "Hyperbolic tangent",
                                                                         K.TANH_SA8_OUT)


# ---------------------------------------------------------------------------------------- softmax
def _check_axis_activation(fn: str, el: ElType, inp: Tensor, cfg: SoftmaxCfg | L2NormalizeCfg,
                           out: Tensor) -> tuple[int, int, int]:
    """The checks softmax and l2_normalize share; the sa8 input's :func:`_sa8_in_params` (zeros for fx)."""
    check_basic_activation(inp, out, el, fn)
    check_axis_cfg(inp, cfg, fn)
    if el is not ElType.SA_8:
        return 0, 0, 0
    check_sa8_input(inp, fn)
    return _sa8_in_params(inp)


def _softmax(fn: str, el: ElType, inp: Tensor, lut: Lut, cfg: SoftmaxCfg, out: Tensor) -> Callable[..., Status]:
    _, scale, shift = _check_axis_activation(fn, el, inp, cfg, out)
    axis = int(cfg.axis)
    vi, vo = view_spec(inp), view_spec(out)

    def run(inp: Tensor, lut: Lut, cfg: SoftmaxCfg, out: Tensor) -> Status:
        if el is ElType.SA_8:
            view(out, vo)[...] = K.softmax_sa8(view(inp, vi), lut, in_scale=scale, in_shift=shift, axis=axis)
            _set_sa8_out(out, *K.SOFTMAX_SA8_OUT)
        else:
            view(out, vo)[...] = K.softmax_fx(view(inp, vi), lut, in_frac_bits=int(inp.frac_bits), bits=el.bits,
                                              axis=axis)
            out.frac_bits = el.bits - 1
        return Status.OK

    return run


(mli_krn_softmax_fx8, mli_krn_softmax_fx16,
 mli_krn_softmax_sa8) = c_variants("mli_krn_softmax", _softmax, "inp lut cfg out", {
    ElType.FX_8: "Softmax of an fx8 tensor (whole tensor or along ``cfg.axis``); ``out`` becomes Q7.\n\n"
                 "Deprecated in MLI 2.0; reproduces the C reference exactly (its 8-bit reciprocal wraps, so the\n"
                 "results are not a usable softmax).",
    ElType.FX_16: "Softmax of an fx16 tensor (whole tensor or along ``cfg.axis``); ``out`` becomes Q15.",
    ElType.SA_8: f"Softmax of an sa8 tensor; {_sa8_out_doc(K.SOFTMAX_SA8_OUT)}",
})


# ---------------------------------------------------------------------------------------- l2_normalize
def _l2_normalize(fn: str, el: ElType, inp: Tensor, epsilon: Tensor | None, lut: Lut, cfg: L2NormalizeCfg,
                  out: Tensor) -> Callable[..., Status]:
    zp, _, _ = _check_axis_activation(fn, el, inp, cfg, out)
    axis = int(cfg.axis)
    vi, vo = view_spec(inp), view_spec(out)

    def run(inp: Tensor, epsilon: Tensor | None, lut: Lut, cfg: L2NormalizeCfg, out: Tensor) -> Status:
        ov = view(out, vo)
        if el is ElType.SA_8:
            zp_out, shift_out = K.L2NORM_SA8_OUT
            res = K.l2_normalize(view(inp, vi), lut, bits=8, out_shift=shift_out, in_zp=zp, axis=axis, out=ov)
            _set_sa8_out(out, zp_out, shift_out)
        else:
            res = K.l2_normalize(view(inp, vi), lut, bits=16, out_shift=15, axis=axis, out=ov)
            out.frac_bits = 15
        if res is not ov:
            ov[...] = res
        return Status.OK

    return run


(mli_krn_l2_normalize_fx16,
 mli_krn_l2_normalize_sa8) = c_variants("mli_krn_l2_normalize", _l2_normalize, "inp epsilon lut cfg out", {
    ElType.FX_16: "L2 normalisation of an fx16 tensor (whole or along ``cfg.axis``); ``out`` becomes Q15.\n\n"
                  "``epsilon`` is accepted and ignored, as in MLI 2.0.2.",
    ElType.SA_8: f"L2 normalisation of an sa8 tensor; {_sa8_out_doc(K.L2NORM_SA8_OUT)}\n\n"
                 "``epsilon`` is accepted and ignored, as in MLI 2.0.2.",
})


# ---------------------------------------------------------------------------------------- LUTs
def _size(kind: str) -> int:
    """:func:`pymli.arith.lut.lut_size` as a body of this module (the C function reports it as its own)."""
    return lut_size(kind)


def _create(kind: str, lut: Lut) -> Status:
    # C sets lut.type before checking the capacity; pymli checks first so that nothing is written
    # on failure.
    check_create_lut(lut, LUT_SPECS[kind].size_bytes)
    lut.type = ElType.FX_16
    create_lut(kind, lut)
    return Status.OK


def _lut_functions(kind: str, table: str) -> tuple[Callable[[], int], Callable[[Lut], Status]]:
    """Register ``mli_krn_<kind>_get_lut_size`` (bytes of ``table``) and ``mli_krn_<kind>_create_lut``."""
    size = LUT_SPECS[kind].size_bytes
    return (c_variant(f"mli_krn_{kind}_get_lut_size", _size, "", f"Bytes needed by {table} ({size}).",
                      head=(kind,), named=False),
            c_variant(f"mli_krn_{kind}_create_lut", _create, "lut",
                      f"Fill ``lut`` (``data`` of ``capacity`` >= {size} bytes) with {table}.", head=(kind,),
                      named=False))


mli_krn_sigm_get_lut_size, mli_krn_sigm_create_lut = _lut_functions("sigm", "the sigmoid table")
mli_krn_tanh_get_lut_size, mli_krn_tanh_create_lut = _lut_functions("tanh", "the tanh table")
mli_krn_softmax_get_lut_size, mli_krn_softmax_create_lut = _lut_functions("softmax", "the exp table used by softmax")
mli_krn_l2_normalize_get_lut_size, mli_krn_l2_normalize_create_lut = _lut_functions("l2_normalize",
                                                                                      "the 1/sqrt table")

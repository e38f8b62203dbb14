"""``mli_krn_permute_{fx8,fx16,sa8}`` and ``mli_krn_argmax_{sa8,fx16}``.

Checks of ``private/src/mli_check.cc`` (``mli_chk_permute*``, ``mli_chk_argmax*``), then the
kernels of :mod:`pymli.kernels.diverse`. Struct updates as in C: permute gives ``out`` the
input's element parameters (fx frac_bits; sa per-tensor values, or per-axis arrays with ``dim``
moved to its permuted position: the arrays are copied into ``out``'s own arrays when it has
them, shared otherwise); argmax sets ``out`` to per-tensor ``scale=1, zero_point=0,
scale_frac_bits=0`` and writes int32 element offsets contiguously from its first element.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..checks.diverse import QUANT_FIELDS as _QUANT
from ..checks.diverse import check_argmax, check_permute, param_pointer, permutation
from ..checks.tensor import fail, shape_at
from ..errors import Status
from ..formats import ElType
from ..kernels import diverse as K
from ..tensor import Tensor
from ._plan import view, view_spec
from ._registry import c_variants
from .types import ArgmaxCfg, PermuteCfg

__all__ = ["mli_krn_permute_fx8", "mli_krn_permute_fx16", "mli_krn_permute_sa8",
           "mli_krn_argmax_sa8", "mli_krn_argmax_fx16"]


# --------------------------------------------------------------------------------------- permute


def _permute(fn: str, el: ElType, inp: Tensor, cfg: PermuteCfg, out: Tensor) -> Callable[..., Status]:
    check_permute(fn, el, inp, cfg, out)
    perm = permutation(cfg, inp.rank)[: inp.rank]
    vo = view_spec(out)  # may raise: nothing is written before
    vi = view_spec(inp)

    def run(inp: Tensor, cfg: PermuteCfg, out: Tensor) -> Status:
        K.permute(view(inp, vi), perm, out=view(out, vo))
        if not el.is_sa:
            out.frac_bits = inp.frac_bits
        elif inp.dim < 0:
            out.dim = -1
            out.zero_point, out.scale, out.scale_frac_bits = (int(inp.quant_vector(k)[0]) for k, _ in _QUANT)
        else:
            # check_permute made sure the input's arrays hold n values and out's arrays have room.
            out.dim = perm.index(inp.dim)
            n = shape_at(inp, inp.dim)
            for k, _ in _QUANT:
                src, dst = getattr(inp, k), getattr(out, k)
                if param_pointer(dst) == 0 or not isinstance(dst, np.ndarray):
                    setattr(out, k, src)  # C: out takes the input's pointer
                elif dst is not src and param_pointer(dst) != param_pointer(src):
                    dst.reshape(-1)[:n] = np.asarray(src).reshape(-1)[:n]
        return Status.OK

    return run


(mli_krn_permute_fx8, mli_krn_permute_fx16,
 mli_krn_permute_sa8) = c_variants("mli_krn_permute", _permute, "in_ cfg out", {
    ElType.FX_8: "Permute the dimensions of an fx8 tensor: ``out.shape[k] = in.shape[cfg.perm_dim[k]]``.",
    ElType.FX_16: "Permute the dimensions of an fx16 tensor.",
    ElType.SA_8: "Permute the dimensions of an sa8 tensor; per-axis parameters follow their dimension.",
})


# ---------------------------------------------------------------------------------------- argmax


def _argmax(fn: str, el: ElType, inp: Tensor, cfg: ArgmaxCfg, out: Tensor) -> Callable[..., Status]:
    check_argmax(fn, el, inp, cfg, out)
    vi = view_spec(inp)
    axis, topk, strides = int(cfg.axis), int(cfg.topk), inp.strides()

    def run(inp: Tensor, cfg: ArgmaxCfg, out: Tensor) -> Status:
        res = K.argmax(view(inp, vi), axis, topk, strides).reshape(-1)
        if out.data.shape[0] < res.size:
            fail(Status.NOT_ENGH_MEM, f"{fn}: out buffer holds {out.data.shape[0]} values, {res.size} needed")
        # C writes topk offsets per slice one after the other from the first element.
        out.data[: res.size] = res
        out.dim, out.zero_point, out.scale, out.scale_frac_bits = -1, 0, 1, 0
        return Status.OK

    return run


mli_krn_argmax_sa8, mli_krn_argmax_fx16 = c_variants("mli_krn_argmax", _argmax, "in_ cfg out", {
    ElType.SA_8: "Offsets of the ``cfg.topk`` largest values of an sa8 tensor (per slice of ``cfg.axis``).",
    ElType.FX_16: "Offsets of the ``cfg.topk`` largest values of an fx16 tensor (per slice of ``cfg.axis``).",
})

"""``mli_krn_permute_{fx8,fx16,sa8}`` and ``mli_krn_argmax_{sa8,fx16}``.

Checks of ``private/src/mli_check.cc`` (``mli_chk_permute*``, ``mli_chk_argmax*``), then the
kernels of :mod:`pymli.kernels.diverse`. Struct updates as in C: permute gives ``out`` the
input's element parameters (fx frac_bits; sa per-tensor values, or per-axis arrays with ``dim``
moved to its permuted position: the arrays are copied into ``out``'s own arrays when it has
them, shared otherwise); argmax sets ``out`` to per-tensor ``scale=1, zero_point=0,
scale_frac_bits=0`` and writes int32 element offsets contiguously from its first element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..checks import (check_tensor, fail, inner_most_dimension_is_one, layout_is_contiguous, shape_at,
                      tensors_not_overlapped)
from ..errors import Status
from ..formats import ElType
from ..kernels import diverse as K
from ..tensor import Tensor, address
from ._registry import mli_function
from .types import ArgmaxCfg, PermuteCfg

__all__ = ["mli_krn_permute_fx8", "mli_krn_permute_fx16", "mli_krn_permute_sa8",
           "mli_krn_argmax_sa8", "mli_krn_argmax_fx16"]

_QUANT = (("zero_point", 2), ("scale", 2), ("scale_frac_bits", 1))


# --------------------------------------------------------------------------------------- permute
def _ptr(v: Any) -> int:
    """The C pointer of a per-axis parameter array (0 for NULL; a per-tensor int fills its low bytes)."""
    if v is None:
        return 0
    if isinstance(v, np.ndarray):
        return address(v)
    return int(v) & 0xFFFF


def _cap(v: Any) -> int:
    return int(v.nbytes) if isinstance(v, np.ndarray) else 0


def _perm(cfg: PermuteCfg, rank: int) -> list[int]:
    """``cfg.perm_dim`` as C reads it: ``uint8_t`` entries."""
    perm = [int(p) & 0xFF for p in cfg.perm_dim]
    return perm + [0] * max(0, rank - len(perm))


def _check_permute(fn: str, el: ElType, inp: Tensor, cfg: PermuteCfg | None, out: Tensor) -> None:
    check_tensor(inp)
    check_tensor(out)
    if out.el_type != inp.el_type:
        fail(Status.TYPE_MISMATCH, f"{fn}: out type {out.el_type.c_name} != in type {inp.el_type.c_name}")
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, f"{fn}: NULL cfg")
    perm = _perm(cfg, inp.rank)
    for i in range(inp.rank):
        if not perm[i] < inp.rank:
            fail(Status.BAD_FUNC_CFG, f"{fn}: perm_dim[{i}] = {perm[i]} outside [0, {inp.rank})")
        if perm[i] in perm[i + 1: inp.rank]:
            fail(Status.BAD_FUNC_CFG, f"{fn}: perm_dim {perm[:inp.rank]} repeats {perm[i]}")
        if shape_at(out, i) != shape_at(inp, perm[i]):
            fail(Status.SHAPE_MISMATCH, f"{fn}: out.shape[{i}] = {shape_at(out, i)} != in.shape[{perm[i]}]")
    if not tensors_not_overlapped(inp, out):
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: in and out buffers overlap")
    if inp.el_type != el:
        fail(Status.TYPE_MISMATCH, f"{fn}: {inp.el_type.c_name} input, {el.c_name} expected")
    if el.is_sa and inp.dim >= 0:
        ip = {k: _ptr(getattr(inp, k)) for k, _ in _QUANT}
        op = {k: _ptr(getattr(out, k)) for k, _ in _QUANT}
        zp, sc, fb = "zero_point", "scale", "scale_frac_bits"
        bad = False
        if op[zp] == ip[zp]:
            bad |= not (op[sc] == ip[sc] and op[fb] == ip[fb])
        if op[zp] != 0 and op[zp] != ip[zp]:
            bad |= not (op[sc] not in (0, ip[sc]) and op[fb] not in (0, ip[fb]))
        if op[zp] == 0:
            bad |= not (op[sc] == 0 and op[fb] == 0)
        if not bad and op[zp] not in (0, ip[zp]):
            n = shape_at(inp, inp.dim)
            bad |= not all(_cap(getattr(out, k)) >= n * size for k, size in _QUANT)
        if bad:
            fail(Status.SPEC_PARAM_MISMATCH,
                 f"{fn}: out per-axis parameter arrays must all be the input's, all NULL, or all "
                 f"separate with room for in.shape[{inp.dim}] values")


def _permute(fn: str, el: ElType, inp: Tensor, cfg: PermuteCfg, out: Tensor) -> Status:
    _check_permute(fn, el, inp, cfg, out)
    perm = _perm(cfg, inp.rank)[: inp.rank]
    out.view()[...] = K.permute(inp.view(), perm)
    if not el.is_sa:
        out.frac_bits = inp.frac_bits
    elif inp.dim < 0:
        out.dim = -1
        out.zero_point, out.scale, out.scale_frac_bits = (int(inp.quant_vector(k)[0]) for k, _ in _QUANT)
    else:
        out.dim = perm.index(inp.dim)
        n = shape_at(inp, inp.dim)
        for k, _ in _QUANT:
            src, dst = getattr(inp, k), getattr(out, k)
            if _ptr(dst) == 0 or not isinstance(dst, np.ndarray):
                setattr(out, k, src)  # C: out takes the input's pointer
            elif dst is not src and _ptr(dst) != _ptr(src):
                dst[:n] = np.asarray(src)[:n]
    return Status.OK


@mli_function()
def mli_krn_permute_fx8(in_: Tensor, cfg: PermuteCfg, out: Tensor) -> Status:
    """Permute the dimensions of an fx8 tensor: ``out.shape[k] = in.shape[cfg.perm_dim[k]]``."""
    return _permute("mli_krn_permute_fx8", ElType.FX_8, in_, cfg, out)


@mli_function()
def mli_krn_permute_fx16(in_: Tensor, cfg: PermuteCfg, out: Tensor) -> Status:
    """Permute the dimensions of an fx16 tensor."""
    return _permute("mli_krn_permute_fx16", ElType.FX_16, in_, cfg, out)


@mli_function()
def mli_krn_permute_sa8(in_: Tensor, cfg: PermuteCfg, out: Tensor) -> Status:
    """Permute the dimensions of an sa8 tensor; per-axis parameters follow their dimension."""
    return _permute("mli_krn_permute_sa8", ElType.SA_8, in_, cfg, out)


# ---------------------------------------------------------------------------------------- argmax
def _check_argmax(fn: str, el: ElType, inp: Tensor, cfg: ArgmaxCfg | None, out: Tensor) -> None:
    check_tensor(inp)
    check_tensor(out)
    if out.el_type != ElType.SA_32:
        fail(Status.TYPE_MISMATCH, f"{fn}: out must be MLI_EL_SA_32, not {out.el_type.c_name}")
    if not layout_is_contiguous(out):
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: out must be contiguous (mem_stride {out.mem_stride[:out.rank]})")
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, f"{fn}: NULL cfg")
    axis, topk = int(cfg.axis), int(cfg.topk)
    if axis > inp.rank:
        fail(Status.BAD_FUNC_CFG, f"{fn}: axis {axis} > rank {inp.rank}")
    if not inner_most_dimension_is_one(inp):
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: innermost mem_stride of in must be 1")
    if axis >= inp.rank:
        fail(Status.BAD_FUNC_CFG, f"{fn}: axis {axis} >= rank {inp.rank}")
    size = inp.num_elements
    dim_size = 1
    if axis >= 0:
        dim_size = shape_at(inp, axis)
        if topk > size // dim_size:
            fail(Status.BAD_FUNC_CFG, f"{fn}: topk {topk} > slice size {size // dim_size}")
    elif topk > size:
        fail(Status.BAD_FUNC_CFG, f"{fn}: topk {topk} > {size} elements")
    if shape_at(out, 0) != dim_size or shape_at(out, 1) != topk:
        fail(Status.SHAPE_MISMATCH, f"{fn}: out shape {out.shape[:out.rank]}, [{dim_size}, {topk}] expected")
    if inp.el_type != el:
        fail(Status.TYPE_MISMATCH, f"{fn}: {inp.el_type.c_name} input, {el.c_name} expected")
    if el.is_sa and inp.dim >= 0:
        fail(Status.INCOMPATEBLE_TENSORS, f"{fn}: in must be quantised per tensor")


def _argmax(fn: str, el: ElType, inp: Tensor, cfg: ArgmaxCfg, out: Tensor) -> Status:
    _check_argmax(fn, el, inp, cfg, out)
    res = K.argmax(inp.view(), int(cfg.axis), int(cfg.topk), inp.strides()).reshape(-1)
    out.dim, out.zero_point, out.scale, out.scale_frac_bits = -1, 0, 1, 0
    # C writes topk offsets per slice one after the other from the first element.
    out.data[: res.size] = res
    return Status.OK


@mli_function()
def mli_krn_argmax_sa8(in_: Tensor, cfg: ArgmaxCfg, out: Tensor) -> Status:
    """Offsets of the ``cfg.topk`` largest values of an sa8 tensor (per slice of ``cfg.axis``)."""
    return _argmax("mli_krn_argmax_sa8", ElType.SA_8, in_, cfg, out)


@mli_function()
def mli_krn_argmax_fx16(in_: Tensor, cfg: ArgmaxCfg, out: Tensor) -> Status:
    """Offsets of the ``cfg.topk`` largest values of an fx16 tensor (per slice of ``cfg.axis``)."""
    return _argmax("mli_krn_argmax_fx16", ElType.FX_16, in_, cfg, out)

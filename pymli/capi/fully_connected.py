"""``mli_krn_fully_connected_*`` (``mli_kernels_api.h``) with the checks of ``mli_chk_fully_connected``.

As the C kernel, the input is read as its ``count_elem_num`` consecutive elements (the check
requires a contiguous layout), the weights row by row through ``mem_stride[0]``, and the output
written to consecutive elements. The output struct is not modified.

A plan (the memo of :mod:`pymli.checks.entry`) runs the plain kernel on its first call; from the second
call with the same weights and bias bytes it runs the layer prepared once
(:func:`pymli.kernels.fully_connected.prepare_fc`, weights up to ``_PREPARE_MAX`` elements; small
layers :class:`pymli.kernels.conv_prepared.FusedLayer`), as long as those bytes stay the same (they are
compared on every call: a rewritten buffer is seen).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..checks.conv import check_mac
from ..checks.fc import check_fully_connected
from ..checks.tensor import fail, shape_at
from ..config import get_platform
from ..errors import Status
from ..kernels.conv_prepared import TINY_CONSTANTS, FusedLayer
from ..kernels.fully_connected import fully_connected, prepare_fc
from ..tensor import Tensor
from ._registry import c_variant, unsupported
from .convolution import fx_quant, out_bounds, sa8_quant
from .types import FullyConnectedCfg

__all__ = [
    "mli_krn_fully_connected_fx8",
    "mli_krn_fully_connected_fx16",
    "mli_krn_fully_connected_fx16_fx8_fx8",
    "mli_krn_fully_connected_sa8_sa8_sa32",
    "mli_krn_fully_connected_sa8_sa8_sa32_ext_bias",
]

_OK = Status.OK  # a module constant: an enum member lookup costs more than the tiny path's arithmetic
_PREPARE_MAX = 1 << 18
"""Largest weights (elements) whose layer a plan prepares once (:func:`pymli.kernels.fully_connected.prepare_fc`)
for its repeated calls; larger layers are dominated by the product itself and keep no copy."""


def _strided(buf: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """A read-only strided view of a 1-D buffer (``ndarray`` constructor: cheaper than as_strided)."""
    if buf.flags.c_contiguous:
        v = np.ndarray(shape, dtype=buf.dtype, buffer=buf, strides=strides)
    else:
        v = np.lib.stride_tricks.as_strided(buf, shape=shape, strides=strides)
    v.flags.writeable = False
    return v


def _run(kind: str, ext_bias: bool, inp: Tensor, w: Tensor, b: Tensor, cfg: FullyConnectedCfg,
         out: Tensor) -> Callable[..., Status]:
    sa = kind == "sa8"
    check_mac(kind, lambda: check_fully_connected(inp, w, b, cfg, out), inp, w, b, out, 1)
    n_in, m = shape_at(w, 0), shape_at(w, 1)
    it = w.data.itemsize
    span = (n_in - 1) * int(w.mem_stride[0]) + m
    if w.data.shape[0] < span or inp.data.shape[0] < n_in or b.data.shape[0] < m or out.data.shape[0] < m:
        fail(Status.NOT_ENGH_MEM, "a buffer is shorter than the tensor it holds")
    wshape, wstrides = (n_in, m), (int(w.mem_stride[0]) * it, it)
    if sa:
        q = sa8_quant(inp, w, out, m, in_zp=0 if ext_bias else None)
    else:
        q = fx_quant(inp, w, b, out, 40 if kind == "fx16" else 32, 8 if kind == "fx8" else 16)
    bounds = out_bounds(cfg.relu, out, sa)
    # (weights bytes, bias bytes, prepared layer or None when these operands were seen once, its tiny path,
    # the platform and the tiny path's computation under it)
    seen: list[tuple | None] = [None]
    # buffers exactly as long as what the call reads: the arrays themselves, no slice
    w_all, b_all = w.data.shape[0] == span, b.data.shape[0] == m
    x_all, o_all = inp.data.shape[0] == n_in, out.data.shape[0] == m
    small = n_in * m <= _PREPARE_MAX
    # layers whose fused constants are small run through FusedLayer (a few NumPy calls)
    tiny = FusedLayer.size(1, m, n_in) <= TINY_CONSTANTS

    def run(inp: Tensor, w: Tensor, b: Tensor, cfg: FullyConnectedCfg, out: Tensor) -> Status:
        if small:
            # The plan outlives the element values (a caller may rewrite the buffers): the layer is
            # prepared on the second call with the same weights and bias (the bytes of the weights'
            # span, gaps between rows included), and used while they stay.
            wd, bd, xd, od = w.data, b.data, inp.data, out.data
            wk = (wd if w_all else wd[:span]).tobytes()
            bk = (bd if b_all else bd[:m]).tobytes()
            st = seen[0]
            # the common case first: the same operands, and the tiny path's computation of this platform
            if st is not None and st[5] is not None and st[4] is get_platform() and st[0] == wk and st[1] == bk:
                st[5](xd if x_all else xd[:n_in], od if o_all else od[:m])
                return _OK
            if st is not None and st[0] == wk and st[1] == bk:
                layer, fused = st[2], st[3]
                if layer is None:
                    wv = _strided(wd, wshape, wstrides)
                    layer = prepare_fc(wv, bd[:m], q, bounds, od.dtype)
                    fused = FusedLayer(wv, bd[:m], q, bounds) if tiny else None  # type: ignore[arg-type]
                    seen[0] = st = (wk, bk, layer, fused, None, None)
                x, o = (xd if x_all else xd[:n_in]), (od if o_all else od[:m])
                if fused is not None:
                    p = get_platform()
                    if p is not st[4]:  # the fused form of this platform (None: there is none)
                        seen[0] = st = (*st[:4], p, fused.runner(xd.dtype, (n_in,)))
                    if st[5] is not None:
                        st[5](x, o)
                        return _OK
                layer(x, o)
                return _OK
            seen[0] = (wk, bk, None, None, None, None)
        bv = b.data[:m]
        res = fully_connected(inp.data[:n_in], _strided(w.data, wshape, wstrides), bv, q, bounds)
        out.data[:m] = res.astype(out.data.dtype)
        return _OK

    return run


_DOC = "``{}``: see :mod:`pymli.capi.fully_connected`."
_PARAMS = "in_ weights bias cfg out"
mli_krn_fully_connected_fx8 = c_variant("mli_krn_fully_connected_fx8", _run, _PARAMS,
    _DOC.format("mli_krn_fully_connected_fx8"), head=("fx8", False), named=False, planned=True)
mli_krn_fully_connected_fx16 = c_variant("mli_krn_fully_connected_fx16", _run, _PARAMS,
    _DOC.format("mli_krn_fully_connected_fx16"), head=("fx16", False), named=False, planned=True)
mli_krn_fully_connected_fx16_fx8_fx8 = c_variant("mli_krn_fully_connected_fx16_fx8_fx8", _run, _PARAMS,
    _DOC.format("mli_krn_fully_connected_fx16_fx8_fx8"), head=("fx16_fx8_fx8", False), named=False, planned=True)
mli_krn_fully_connected_sa8_sa8_sa32 = c_variant("mli_krn_fully_connected_sa8_sa8_sa32", _run, _PARAMS,
    _DOC.format("mli_krn_fully_connected_sa8_sa8_sa32"), head=("sa8", False), named=False, planned=True)
mli_krn_fully_connected_sa8_sa8_sa32_ext_bias = c_variant("mli_krn_fully_connected_sa8_sa8_sa32_ext_bias", _run,
    _PARAMS, _DOC.format("mli_krn_fully_connected_sa8_sa8_sa32_ext_bias"), head=("sa8", True), named=False,
    planned=True)

unsupported("mli_krn_fully_connected_fx8w16d",
            "declared in the MLI 2.0.2 header but neither implemented nor exported by the library")

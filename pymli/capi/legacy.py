"""MLI 1.x data manipulation that MLI 2.0 dropped: ``mli_krn_concat_*`` and ``mli_krn_padding2d_*``.

These follow the MLI 1.1 API (``mli_concat_cfg``, ``mli_padding2d_cfg``) and its argument checks,
on MLI 2.0 :class:`~pymli.Tensor` structs. As in 1.x, a tensor whose ``mem_stride`` is all zeros is
dense, inputs must be contiguous, and the kernel fills the output's rank, shape, element type and
parameters; the output data is written densely from its first element. pymli extensions, beyond
MLI 1.1:

* ``_sa8`` variants. Inputs must share the same quantisation (per tensor, or per axis on another
  axis than the concatenation axis / the H and W axes); padded samples hold the zero point, i.e. the
  real value 0, as the zero padding of the fx variants does.
* The output's ``mem_stride`` may be all zeros (1.x style) or the dense strides of the result, and
  the kernel sets it to the dense strides so that the output is valid for MLI 2.0 kernels.
* Contiguity is checked for every input (MLI 1.1 forgot ``inputs[0]``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..checks.legacy import MLI_CONCAT_MAX_TENSORS, check_concat, check_padding2d
from ..errors import Status
from ..formats import ElType
from ..kernels import move as kmove
from ..tensor import Tensor, dense_strides
from ._registry import c_variant, mli_function
from .types import ConcatCfg, Padding2dCfg

__all__ = [
    "MLI_CONCAT_MAX_TENSORS",
    "mli_krn_concat_fx8", "mli_krn_concat_fx16", "mli_krn_concat_sa8",
    "mli_krn_padding2d_chw_fx8", "mli_krn_padding2d_chw_fx16", "mli_krn_padding2d_chw_sa8",
    "mli_krn_padding2d_hwc_fx8", "mli_krn_padding2d_hwc_fx16", "mli_krn_padding2d_hwc_sa8",
]


def _set_out(out: Tensor, ref: Tensor, shape: list[int], data: np.ndarray) -> None:
    """Write ``data`` densely at the start of ``out`` and fill its struct from ``ref``."""
    flat = data.reshape(-1)
    dst = out.data.reshape(-1)
    if dst.dtype == flat.dtype:
        dst[: flat.size] = flat
    else:  # a buffer of another container type: store the raw bytes, as C's memcpy does
        dst.view(np.uint8)[: flat.nbytes] = flat.view(np.uint8)
    out.rank = len(shape)
    out.shape = list(shape)
    out.mem_stride = dense_strides(shape)
    out.el_type = ref.el_type
    out.frac_bits = ref.frac_bits
    out.dim = ref.dim
    out.zero_point, out.scale, out.scale_frac_bits = ref.zero_point, ref.scale, ref.scale_frac_bits


# ---------------------------------------------------------------------------- concat
def _concat(inputs: Sequence[Tensor], cfg: ConcatCfg, out: Tensor, el: ElType) -> Status:
    num, axis, out_shape = check_concat(inputs, cfg, out, el)
    first = inputs[0]
    result = kmove.concat([inputs[i].numpy() for i in range(num)], axis)
    _set_out(out, first, out_shape, result)
    return Status.OK


@mli_function()
def mli_krn_concat_fx8(inputs: Sequence[Tensor], cfg: ConcatCfg, out: Tensor) -> Status:
    """Concatenate ``cfg.tensors_num`` fx8 tensors along ``cfg.axis`` (MLI 1.x).

    Args:
        inputs: tensors of one element type and frac_bits, equal shapes except along the axis.
        cfg: ``tensors_num`` (1..8) and ``axis``.
        out: output buffer; its rank, shape, element type and parameters are filled here.

    Raises:
        MliError: BAD_TENSOR, BAD_FUNC_CFG, INCOMPATEBLE_TENSORS, SHAPE_MISMATCH, NOT_ENGH_MEM or
            TYPE_MISMATCH, as MLI 1.1's checks.
    """
    return _concat(inputs, cfg, out, ElType.FX_8)


@mli_function()
def mli_krn_concat_fx16(inputs: Sequence[Tensor], cfg: ConcatCfg, out: Tensor) -> Status:
    """Concatenate fx16 tensors (see :func:`mli_krn_concat_fx8`)."""
    return _concat(inputs, cfg, out, ElType.FX_16)


@mli_function()
def mli_krn_concat_sa8(inputs: Sequence[Tensor], cfg: ConcatCfg, out: Tensor) -> Status:
    """Concatenate sa8 tensors of identical quantisation (pymli extension of the 1.x API)."""
    return _concat(inputs, cfg, out, ElType.SA_8)


# ---------------------------------------------------------------------------- padding2d
def _padding2d(inp: Tensor, cfg: Padding2dCfg, out: Tensor, el: ElType, layout: str) -> Status:
    (top, bot, left, right), out_shape, pad_value = check_padding2d(inp, cfg, out, el, layout)
    result = kmove.pad2d(inp.numpy(), top, bot, left, right, layout=layout, value=pad_value)
    _set_out(out, inp, out_shape, result)
    return Status.OK


_PAD_RAISES = ("\n\nRaises:\n    MliError: BAD_TENSOR, SHAPE_MISMATCH (rank != 3), INCOMPATEBLE_TENSORS, BAD_FUNC_CFG,\n"
               "        NOT_ENGH_MEM or TYPE_MISMATCH, as MLI 1.1's checks.\n")
_PAD_DOCS = {
    "chw": ("Zero-pad the H and W borders of an fx8 CHW feature map (MLI 1.x).\n\nArgs:\n"
            "    inp: ``[C, H, W]`` fx8 tensor (contiguous).\n    cfg: ``padding_left/right/top/bottom``.\n"
            "    out: output buffer for ``[C, H + top + bottom, W + left + right]``; its struct is filled here."
            + _PAD_RAISES),
    "hwc": ("Zero-pad the H and W borders of an fx8 HWC feature map (MLI 1.x).\n\nArgs:\n"
            "    inp: ``[H, W, C]`` fx8 tensor (contiguous).\n    cfg: ``padding_left/right/top/bottom``.\n"
            "    out: output buffer for ``[H + top + bottom, W + left + right, C]``; its struct is filled here.\n\n"
            "Raises:\n    MliError: as :func:`mli_krn_padding2d_chw_fx8`.\n"),
}


def _padding2d_variant(layout: str, el: ElType):  # noqa: ANN202
    name = f"mli_krn_padding2d_{layout}_{el.name.lower().replace('_', '')}"
    if el is ElType.FX_8:
        doc = _PAD_DOCS[layout]
    elif el is ElType.FX_16:
        doc = f"Zero-pad an fx16 {layout.upper()} feature map (see :func:`mli_krn_padding2d_{layout}_fx8`)."
    else:
        doc = f"Pad an sa8 {layout.upper()} feature map with its zero point (pymli extension of the 1.x API)."
    return c_variant(name, _padding2d, "inp cfg out", doc, tail=(el, layout), named=False)


mli_krn_padding2d_chw_fx8 = _padding2d_variant("chw", ElType.FX_8)
mli_krn_padding2d_chw_fx16 = _padding2d_variant("chw", ElType.FX_16)
mli_krn_padding2d_chw_sa8 = _padding2d_variant("chw", ElType.SA_8)
mli_krn_padding2d_hwc_fx8 = _padding2d_variant("hwc", ElType.FX_8)
mli_krn_padding2d_hwc_fx16 = _padding2d_variant("hwc", ElType.FX_16)
mli_krn_padding2d_hwc_sa8 = _padding2d_variant("hwc", ElType.SA_8)

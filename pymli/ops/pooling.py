"""Pythonic pooling: ``avepool`` and ``maxpool`` over HWC tensors, returning new tensors.

Example:
    >>> import numpy as np, pymli
    >>> x = pymli.Tensor.from_numpy(np.arange(16, dtype=np.int8).reshape(4, 4, 1), "FX_8", frac_bits=0)
    >>> pymli.ops.maxpool(x, 2, stride=2).numpy()[..., 0].tolist()
    [[5, 7], [13, 15]]
"""

from __future__ import annotations

from collections.abc import Sequence

from ..capi.types import PoolCfg
from ..errors import MliError, Status
from ..graph import args
from ..graph.geometry import conv_out_size, pair, resolve_padding
from ..graph.registry import Op, require
from ..tensor import Tensor
from ._doc import sections

__all__ = ["avepool", "maxpool", "pool_cfg"]

def pool_cfg(in_hw: tuple[int, int], kernel: int | Sequence[int], stride: int | Sequence[int] = 1,
             padding: int | str | Sequence[int] = 0) -> PoolCfg:
    """Build an ``mli_pool_cfg``.

    Args:
        in_hw: (height, width) of the input (used by ``padding="same"``).
        kernel: size, or (height, width).
        stride: step, or (height, width).
        padding: an int (all sides), (vertical, horizontal), (top, bottom, left, right),
            ``"valid"`` (none) or ``"same"`` (TensorFlow's: output = ceil(input / stride), extra
            padding at the bottom/right).

    Returns:
        The cfg (``uint8_t`` fields).

    Raises:
        MliError: BAD_FUNC_CFG for a malformed kernel, stride or padding, or one outside ``uint8_t``.
    """
    what = "pool_cfg"
    hw = args.int_pair(in_hw, "in_hw", what=what, lo=1)
    (kh, kw) = pair(kernel, "kernel", what=what, lo=1, hi=args.UINT8[1])
    (sh, sw) = pair(stride, "stride", what=what, lo=1, hi=args.UINT8[1])
    pads = resolve_padding(padding, hw, (kh, kw), (sh, sw))
    if max(pads) > args.UINT8[1]:
        raise MliError(Status.BAD_FUNC_CFG, f"{what}: padding {pads} does not fit the uint8_t cfg fields (0..255)")
    return PoolCfg(kernel_width=kw, kernel_height=kh, stride_width=sw, stride_height=sh,
                   padding_top=pads[0], padding_bottom=pads[1], padding_left=pads[2], padding_right=pads[3])


def _pool(kind: str, x: Tensor, kernel: int | Sequence[int], stride: int | Sequence[int],
          padding: int | str | Sequence[int]) -> Tensor:
    what = f"{kind}pool"
    args.tensor(x, "x", what=what)
    fn = require(Op.MAXPOOL if kind == "max" else Op.AVEPOOL, x.el_type, what=what)
    args.tensor(x, "x", what=what, ranks=(3,))
    h, w, c = (int(s) for s in x.shape[:3])
    k = pair(kernel, "kernel", what=what, lo=1)
    s = pair(stride, "stride", what=what, lo=1)
    pads = resolve_padding(padding, (h, w), k, s)
    oh = conv_out_size(h, k[0], s[0], pads[0], pads[1])
    ow = conv_out_size(w, k[1], s[1], pads[2], pads[3])
    if oh <= 0 or ow <= 0:
        raise MliError(Status.BAD_FUNC_CFG, f"{what}: kernel {k[0]}x{k[1]} larger than the padded input {h}x{w}")
    args.check_alloc((oh, ow, c), x.el_type, what=what)
    cfg = pool_cfg((h, w), k, s, pads)
    q = dict(frac_bits=x.frac_bits) if x.el_type.is_fx else dict(
        zero_point=x.zero_point, scale=x.scale, scale_frac_bits=x.scale_frac_bits, dim=x.dim)
    out = Tensor.zeros((oh, ow, c), x.el_type, **q)
    fn(x, cfg, out)
    return out


_POOL_SECTIONS = """
Args:
    x: FX_8, FX_16 or SA_8 tensor ``[H, W, C]``.
    kernel, stride, padding: see :func:`pool_cfg`.

Returns:
    A new dense ``[Ho, Wo, C]`` tensor with the input's quantisation.

Raises:
    MliError: with the status MLI gives for the same arguments.
"""


@sections(_POOL_SECTIONS)
def avepool(x: Tensor, kernel: int | Sequence[int], stride: int | Sequence[int] = 1,
            padding: int | str | Sequence[int] = 0) -> Tensor:
    """Average pooling of an HWC tensor (``mli_krn_avepool_hwc_*``); padded positions are not counted."""
    return _pool("ave", x, kernel, stride, padding)


@sections(_POOL_SECTIONS)
def maxpool(x: Tensor, kernel: int | Sequence[int], stride: int | Sequence[int] = 1,
            padding: int | str | Sequence[int] = 0) -> Tensor:
    """Max pooling of an HWC tensor (``mli_krn_maxpool_hwc_*``)."""
    return _pool("max", x, kernel, stride, padding)

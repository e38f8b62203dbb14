"""Checks of ``mli_krn_fully_connected_*`` (``mli_chk_fully_connected*``).

The type and sa8 parameter checks are those of the other MAC kernels (:mod:`pymli.checks.conv`).
"""

from __future__ import annotations

from typing import Any

from ..errors import Status
from ..tensor import Tensor
from .conv import tensor_key
from .tensor import (CheckCache, check_tensor, count_elements, fail, inner_most_dimension_is_one,
                     layout_is_contiguous, shape_at, tensors_not_overlapped)

__all__ = ["check_fully_connected"]


def check_fully_connected(inp: Tensor, w: Tensor, b: Tensor, cfg: Any, out: Tensor) -> None:
    """``mli_chk_fully_connected`` (generic part).

    All but the final overlap check depend only on the tensors' struct fields; their outcome is
    cached under those fields.

    Args:
        inp: input (any rank, contiguous); w: weights (N, M); b: bias (M,); out: output (M,);
        cfg: ``mli_fully_connected_cfg`` (only NULL-ness is checked here).

    Raises:
        MliError: BAD_TENSOR, NOT_ENGH_MEM, TYPE_MISMATCH, BAD_FUNC_CFG, SHAPE_MISMATCH or
            INCOMPATEBLE_TENSORS.
    """
    key = (tensor_key(inp), tensor_key(w), tensor_key(b), tensor_key(out), cfg is None)
    _FC_CHECKED.run(key, lambda: _check_fc_structure(inp, w, b, cfg, out))
    if not tensors_not_overlapped(inp, out):
        fail(Status.INCOMPATEBLE_TENSORS, "input and output buffers overlap")


_FC_CHECKED = CheckCache()


def _check_fc_structure(inp: Tensor, w: Tensor, b: Tensor, cfg: Any, out: Tensor) -> None:
    for t in (inp, w, b, out):
        check_tensor(t)
    for name, t in (("in", inp), ("weights", w), ("bias", b), ("out", out)):
        if t.data is None:
            # A rank-0 struct holds its value where C keeps the data pointer: the C kernel would read
            # (or write) through that value as an address. Refused (docs/quirks.md).
            fail(Status.BAD_TENSOR, f"{name}: rank-0 tensor (value {t.value!r}) used as a data buffer")
    if out.el_type != inp.el_type:
        fail(Status.TYPE_MISMATCH, f"output type {out.el_type.name} != input type {inp.el_type.name}")
    if cfg is None:
        fail(Status.BAD_FUNC_CFG, "NULL cfg")
    if not (w.rank == 2 and b.rank == 1 and out.rank == 1 and count_elements(inp) == shape_at(w, 0)
            and shape_at(b, 0) == shape_at(w, 1) and shape_at(out, 0) == shape_at(w, 1)):
        fail(Status.SHAPE_MISMATCH, f"fully connected shapes in {inp.shape}, weights {w.shape}, bias {b.shape}, "
             f"out {out.shape}")
    out_contig = out.rank == 0 or (out.rank == 1 and len(out.mem_stride) > 0 and int(out.mem_stride[0]) == 1)
    if not (layout_is_contiguous(inp) and inner_most_dimension_is_one(w) and layout_is_contiguous(b) and out_contig):
        fail(Status.INCOMPATEBLE_TENSORS, "in, bias and out must be contiguous, weights rows dense")

"""The MLI 1.x configuration structs and enums, with their C field names.

Frozen dataclasses: a cfg is a value. ``mli_rnn_cell_cfg.ir_tsr`` holds a (mutable) scratch
:class:`~pymli.v1.tensor.Tensor` that the kernel rewrites, as the C struct holds a pointer.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

# The C types that MLI 1.0 and 2.0 define alike (same fields, defaults and enumerator values) are the 2.0 classes.
from ..capi.types import ConcatCfg, Padding2dCfg, PoolCfg, ReluCfg, ReluType
# MLI 1.x's mli_conv2d_cfg is 2.0's without the dilation fields: the same field groups, in C order.
from ..capi.types import PaddingFields, ReluFields, StrideFields
from ..capi.types import RnnOutActivation as RnnAct
from .tensor import Tensor

__all__ = [
    "ReluType", "RnnMode", "RnnAct", "ReluCfg", "Conv2dCfg", "PoolCfg", "RnnCellCfg", "PermuteCfg",
    "Padding2dCfg", "ConcatCfg", "PointToSubtsrCfg", "CFG_TYPES", "MLI_CONCAT_MAX_TENSORS", "cfg_from_json",
]

MLI_CONCAT_MAX_TENSORS = 8


class RnnMode(enum.IntEnum):
    """``mli_rnn_mode``."""

    ONE_TO_ONE = 0
    BATCH_TO_BATCH = 1
    BATCH_TO_LAST = 2


@dataclasses.dataclass(frozen=True)
class Conv2dCfg(PaddingFields, StrideFields, ReluFields):
    """``mli_conv2d_cfg`` (conv2d and depthwise conv2d): ``relu``, ``stride_width``, ``stride_height``,
    ``padding_left``, ``padding_right``, ``padding_top``, ``padding_bottom``."""


@dataclasses.dataclass(frozen=True)
class RnnCellCfg:
    """``mli_rnn_cell_cfg``: ``ir_tsr`` is the caller-owned scratch tensor (or ``None``)."""

    mode: RnnMode = RnnMode.ONE_TO_ONE
    act: RnnAct = RnnAct.NONE
    ir_tsr: Tensor | None = None


@dataclasses.dataclass(frozen=True)
class PermuteCfg:
    """``mli_permute_cfg``: ``perm_dim[4]``."""

    perm_dim: tuple[int, ...] = (0, 1, 2, 3)


@dataclasses.dataclass(frozen=True)
class PointToSubtsrCfg:
    """``mli_point_to_subtsr_cfg``."""

    start_coord: tuple[int, ...] = (0, 0, 0, 0)
    coord_num: int = 0
    first_out_dim_size: int = 0


CFG_TYPES: dict[str, type] = {
    "mli_relu_cfg": ReluCfg, "mli_conv2d_cfg": Conv2dCfg, "mli_pool_cfg": PoolCfg,
    "mli_rnn_cell_cfg": RnnCellCfg, "mli_permute_cfg": PermuteCfg, "mli_padding2d_cfg": Padding2dCfg,
    "mli_concat_cfg": ConcatCfg, "mli_point_to_subtsr_cfg": PointToSubtsrCfg,
}

_ENUMS: dict[str, Any] = {
    "MLI_RELU_NONE": ReluType.NONE, "MLI_RELU_GEN": ReluType.GEN, "MLI_RELU_1": ReluType.RELU_1,
    "MLI_RELU_6": ReluType.RELU_6, "RNN_ONE_TO_ONE": RnnMode.ONE_TO_ONE,
    "RNN_BATCH_TO_BATCH": RnnMode.BATCH_TO_BATCH, "RNN_BATCH_TO_LAST": RnnMode.BATCH_TO_LAST,
    "RNN_ACT_NONE": RnnAct.NONE, "RNN_ACT_TANH": RnnAct.TANH, "RNN_ACT_SIGM": RnnAct.SIGM,
}


def cfg_from_json(c_type: str, fields: dict[str, Any], ir_tsr: Tensor | None = None) -> Any:
    """Build a cfg from its C struct name and a dict of C fields (enums by name, as in the recordings).

    Args:
        c_type: e.g. ``"mli_conv2d_cfg"``.
        fields: C field names to values; nested ``relu`` as ``{"type": "MLI_RELU_6"}``.
        ir_tsr: the scratch tensor for ``mli_rnn_cell_cfg`` (the JSON only names it).

    Returns:
        The frozen cfg dataclass.
    """
    cls = CFG_TYPES[c_type]
    kw: dict[str, Any] = {}
    for k, v in fields.items():
        if k == "relu":
            kw[k] = ReluCfg(_ENUMS[v["type"]] if isinstance(v["type"], str) else ReluType(v["type"]))
        elif k == "ir_tsr":
            kw[k] = ir_tsr
        elif isinstance(v, str):
            kw[k] = _ENUMS[v]
        elif isinstance(v, list):
            kw[k] = tuple(int(x) for x in v)
        else:
            kw[k] = int(v)
    return cls(**kw)

"""cfg structs and enums of ``mli_types.h`` (MLI 2.0), with the C field names.

Structs are mutable dataclasses, as in C: ``mli_mov_cfg_for_*`` fill a struct passed to them.
"""

from __future__ import annotations

import dataclasses
import enum

from ._registry import c_enum, c_struct

__all__ = [
    "ReluType", "RnnDirection", "RnnResults", "RnnOutActivation",
    "ReluCfg", "PreluCfg", "SoftmaxCfg", "L2NormalizeCfg", "FullyConnectedCfg", "Conv2dCfg", "PoolCfg",
    "RnnDenseCfg", "RnnCellCfg", "PermuteCfg", "Padding2dCfg", "ConcatCfg", "PointToSubtsrCfg",
    "SubTensorCfg", "ArgmaxCfg", "MLI_MAX_RANK",
]

MLI_MAX_RANK = 4


_PREFIX: dict[type, str] = {}


class _CEnum(enum.IntEnum):
    """An enum whose members know their C enumerator name (prefix + member name)."""

    @property
    def c_name(self) -> str:
        return _PREFIX[type(self)] + self.name


@c_enum("mli_relu_type")
class ReluType(_CEnum):
    NONE = 0
    GEN = 1
    RELU_1 = 2
    RELU_6 = 3

    @property
    def c_name(self) -> str:
        return {"NONE": "MLI_RELU_NONE", "GEN": "MLI_RELU_GEN", "RELU_1": "MLI_RELU_1", "RELU_6": "MLI_RELU_6"}[self.name]


@c_enum("mli_rnn_direction")
class RnnDirection(_CEnum):
    FORWARD = 0
    BACKWARD = 1


@c_enum("mli_rnn_results")
class RnnResults(_CEnum):
    LAST = 0
    ALL = 1


@c_enum("mli_rnn_out_activation")
class RnnOutActivation(_CEnum):
    NONE = 0
    TANH = 1
    SIGM = 2


_PREFIX.update({RnnDirection: "RNN_DIR_", RnnResults: "RNN_OUT_", RnnOutActivation: "RNN_ACT_"})


def _zeros4() -> list[int]:
    return [0] * MLI_MAX_RANK


@c_struct("mli_relu_cfg")
@dataclasses.dataclass
class ReluCfg:
    type: ReluType = ReluType.NONE


@c_struct("mli_prelu_cfg")
@dataclasses.dataclass
class PreluCfg:
    axis: int = -1


@c_struct("mli_softmax_cfg")
@dataclasses.dataclass
class SoftmaxCfg:
    axis: int = -1


@c_struct("mli_l2_normalize_cfg")
@dataclasses.dataclass
class L2NormalizeCfg:
    axis: int = -1


@c_struct("mli_fully_connected_cfg")
@dataclasses.dataclass
class FullyConnectedCfg:
    relu: ReluCfg = dataclasses.field(default_factory=ReluCfg)


@c_struct("mli_conv2d_cfg")
@dataclasses.dataclass
class Conv2dCfg:
    relu: ReluCfg = dataclasses.field(default_factory=ReluCfg)
    stride_width: int = 1
    stride_height: int = 1
    padding_left: int = 0
    padding_right: int = 0
    padding_top: int = 0
    padding_bottom: int = 0
    dilation_width: int = 1
    dilation_height: int = 1


@c_struct("mli_pool_cfg")
@dataclasses.dataclass
class PoolCfg:
    kernel_width: int = 1
    kernel_height: int = 1
    stride_width: int = 1
    stride_height: int = 1
    padding_left: int = 0
    padding_right: int = 0
    padding_top: int = 0
    padding_bottom: int = 0


@c_struct("mli_rnn_dense_cfg")
@dataclasses.dataclass
class RnnDenseCfg:
    inputs_num: int = 1


@c_struct("mli_rnn_cell_cfg")
@dataclasses.dataclass
class RnnCellCfg:
    """``mli_rnn_cell_cfg``; ``scratch_capacity`` is ``scratch_data.capacity`` in bytes."""

    direction: RnnDirection = RnnDirection.FORWARD
    results: RnnResults = RnnResults.LAST
    act: RnnOutActivation = RnnOutActivation.TANH
    scratch_capacity: int = 0

    @classmethod
    def from_dict(cls, d: dict) -> "RnnCellCfg":
        from ._registry import enum_from_c

        return cls(direction=enum_from_c(RnnDirection, d.get("direction", 0)),
                   results=enum_from_c(RnnResults, d.get("results", 0)),
                   act=enum_from_c(RnnOutActivation, d.get("act", 0)),
                   scratch_capacity=int((d.get("scratch_data") or {}).get("capacity", 0)))


@c_struct("mli_permute_cfg")
@dataclasses.dataclass
class PermuteCfg:
    perm_dim: list[int] = dataclasses.field(default_factory=_zeros4)


@c_struct("mli_padding2d_cfg")
@dataclasses.dataclass
class Padding2dCfg:
    padding_left: int = 0
    padding_right: int = 0
    padding_top: int = 0
    padding_bottom: int = 0


@c_struct("mli_concat_cfg")
@dataclasses.dataclass
class ConcatCfg:
    tensors_num: int = 0
    axis: int = 0


@c_struct("mli_point_to_subtsr_cfg")
@dataclasses.dataclass
class PointToSubtsrCfg:
    start_coord: list[int] = dataclasses.field(default_factory=_zeros4)
    coord_num: int = 0
    first_out_dim_size: int = 0


@c_struct("mli_sub_tensor_cfg")
@dataclasses.dataclass
class SubTensorCfg:
    offset: list[int] = dataclasses.field(default_factory=_zeros4)
    size: list[int] = dataclasses.field(default_factory=_zeros4)
    sub_tensor_rank: int = 0


@c_struct("mli_argmax_cfg")
@dataclasses.dataclass
class ArgmaxCfg:
    axis: int = -1
    topk: int = 1

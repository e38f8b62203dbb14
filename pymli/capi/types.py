"""cfg structs and enums of ``mli_types.h`` (MLI 2.0), with the C field names.

Structs are frozen dataclasses: build a changed one with :func:`dataclasses.replace`. (The
data-movement cfg :class:`pymli.capi.move.MovCfg` stays mutable: ``mli_mov_cfg_for_*`` fill the
struct passed to them, as in C.)
"""

from __future__ import annotations

import dataclasses
import enum

from ._registry import c_enum, c_struct, enum_from_c

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
        """The C enumerator name, e.g. ``MLI_RELU_6``."""
        return _PREFIX[type(self)] + self.name


@c_enum("mli_relu_type")
class ReluType(_CEnum):
    """``mli_relu_type``: the clamp of a (fused) ReLU."""

    NONE = 0
    GEN = 1
    RELU_1 = 2
    RELU_6 = 3

    @property
    def c_name(self) -> str:
        """The C enumerator name, e.g. ``MLI_RELU_6``."""
        return {"NONE": "MLI_RELU_NONE", "GEN": "MLI_RELU_GEN", "RELU_1": "MLI_RELU_1", "RELU_6": "MLI_RELU_6"}[self.name]


@c_enum("mli_rnn_direction")
class RnnDirection(_CEnum):
    """``mli_rnn_direction``: process the sequence forward or backward."""

    FORWARD = 0
    BACKWARD = 1


@c_enum("mli_rnn_results")
class RnnResults(_CEnum):
    """``mli_rnn_results``: keep the last step's output only, or every step's."""

    LAST = 0
    ALL = 1


@c_enum("mli_rnn_out_activation")
class RnnOutActivation(_CEnum):
    """``mli_rnn_out_activation``: the activation of the LSTM output."""

    NONE = 0
    TANH = 1
    SIGM = 2


_PREFIX.update({RnnDirection: "RNN_DIR_", RnnResults: "RNN_OUT_", RnnOutActivation: "RNN_ACT_"})


def _zeros4() -> list[int]:
    return [0] * MLI_MAX_RANK


@c_struct("mli_relu_cfg")
@dataclasses.dataclass(frozen=True)
class ReluCfg:
    """``mli_relu_cfg``.

    Attributes:
        type: the ReLU clamp.
    """

    type: ReluType = ReluType.NONE


@dataclasses.dataclass(frozen=True)
class _AxisCfg:
    """A cfg struct whose only field is ``axis`` (-1: the whole tensor)."""

    axis: int = -1


@c_struct("mli_prelu_cfg")
class PreluCfg(_AxisCfg):
    """``mli_prelu_cfg``: ``axis``, the dimension the slopes run along (-1: one slope for the whole tensor)."""


@c_struct("mli_softmax_cfg")
class SoftmaxCfg(_AxisCfg):
    """``mli_softmax_cfg``: ``axis``, the dimension normalised (-1: the whole tensor)."""


@c_struct("mli_l2_normalize_cfg")
class L2NormalizeCfg(_AxisCfg):
    """``mli_l2_normalize_cfg``: ``axis``, the dimension normalised (-1: the whole tensor)."""


@dataclasses.dataclass(frozen=True)
class ReluFields:
    """The ``relu`` field of the MAC cfg structs: the fused ReLU (a :class:`ReluCfg`)."""

    relu: ReluCfg = dataclasses.field(default_factory=ReluCfg)


@dataclasses.dataclass(frozen=True)
class KernelFields:
    """The ``kernel_width``, ``kernel_height`` fields of a window cfg: the window size."""

    kernel_width: int = 1
    kernel_height: int = 1


@dataclasses.dataclass(frozen=True)
class StrideFields:
    """The ``stride_width``, ``stride_height`` fields of a window cfg: the window steps (> 0)."""

    stride_width: int = 1
    stride_height: int = 1


@dataclasses.dataclass(frozen=True)
class PaddingFields:
    """The ``padding_left``, ``padding_right``, ``padding_top``, ``padding_bottom`` fields of a 2D cfg."""

    padding_left: int = 0
    padding_right: int = 0
    padding_top: int = 0
    padding_bottom: int = 0


# The cfg structs below are assembled from these field groups. A dataclass takes its bases' fields
# in reverse MRO order, so ``class C(PaddingFields, StrideFields, ReluFields)`` has the C field
# order relu, stride_*, padding_* (and a decorated class adds its own fields after them).


@c_struct("mli_fully_connected_cfg")
@dataclasses.dataclass(frozen=True)
class FullyConnectedCfg(ReluFields):
    """``mli_fully_connected_cfg``.

    Attributes:
        relu: the fused ReLU.
    """


@c_struct("mli_conv2d_cfg")
@dataclasses.dataclass(frozen=True)
class Conv2dCfg(PaddingFields, StrideFields, ReluFields):
    """``mli_conv2d_cfg``.

    Attributes:
        relu: the fused ReLU.
        stride_width, stride_height: window steps (> 0).
        padding_left, padding_right, padding_top, padding_bottom: zero padding (smaller than the kernel).
        dilation_width, dilation_height: dilation factors (1: none).
    """

    dilation_width: int = 1
    dilation_height: int = 1


@c_struct("mli_pool_cfg")
@dataclasses.dataclass(frozen=True)
class PoolCfg(PaddingFields, StrideFields, KernelFields):
    """``mli_pool_cfg`` (``uint8_t`` fields).

    Attributes:
        kernel_width, kernel_height: window size.
        stride_width, stride_height: window steps (> 0).
        padding_left, padding_right, padding_top, padding_bottom: padding (smaller than the kernel).
    """


@c_struct("mli_rnn_dense_cfg")
@dataclasses.dataclass(frozen=True)
class RnnDenseCfg:
    """``mli_rnn_dense_cfg``.

    Attributes:
        inputs_num: how many (input, weights) pairs are summed (1 to 4).
    """

    inputs_num: int = 1


@c_struct("mli_rnn_cell_cfg")
@dataclasses.dataclass(frozen=True)
class RnnCellCfg:
    """``mli_rnn_cell_cfg``; ``scratch_capacity`` is ``scratch_data.capacity`` in bytes."""

    direction: RnnDirection = RnnDirection.FORWARD
    results: RnnResults = RnnResults.LAST
    act: RnnOutActivation = RnnOutActivation.TANH
    scratch_capacity: int = 0

    @classmethod
    def from_dict(cls, d: dict) -> "RnnCellCfg":
        """Build the cfg from its C-field dict (enums by C name or value; the scratch buffer by capacity).

        Args:
            d: the recorded struct.

        Returns:
            The cfg.
        """
        return cls(direction=enum_from_c(RnnDirection, d.get("direction", 0)),
                   results=enum_from_c(RnnResults, d.get("results", 0)),
                   act=enum_from_c(RnnOutActivation, d.get("act", 0)),
                   scratch_capacity=int((d.get("scratch_data") or {}).get("capacity", 0)))


@c_struct("mli_permute_cfg")
@dataclasses.dataclass(frozen=True)
class PermuteCfg:
    """``mli_permute_cfg``.

    Attributes:
        perm_dim: the input dimension of each output dimension (``uint8_t``).
    """

    perm_dim: list[int] = dataclasses.field(default_factory=_zeros4)


@c_struct("mli_padding2d_cfg")
@dataclasses.dataclass(frozen=True)
class Padding2dCfg(PaddingFields):
    """``mli_padding2d_cfg`` (MLI 1.x, ``uint8_t`` fields).

    Attributes:
        padding_left, padding_right, padding_top, padding_bottom: zero padding of the W and H borders.
    """


@c_struct("mli_concat_cfg")
@dataclasses.dataclass(frozen=True)
class ConcatCfg:
    """``mli_concat_cfg`` (MLI 1.x, ``uint8_t`` fields).

    Attributes:
        tensors_num: number of inputs (1 to 8).
        axis: the concatenation dimension.
    """

    tensors_num: int = 0
    axis: int = 0


@c_struct("mli_point_to_subtsr_cfg")
@dataclasses.dataclass(frozen=True)
class PointToSubtsrCfg:
    """``mli_point_to_subtsr_cfg``.

    Attributes:
        start_coord: coordinates of the first element (the first ``coord_num`` are used).
        coord_num: number of fixed leading dimensions.
        first_out_dim_size: size of the output's first dimension.
    """

    start_coord: list[int] = dataclasses.field(default_factory=_zeros4)
    coord_num: int = 0
    first_out_dim_size: int = 0


@c_struct("mli_sub_tensor_cfg")
@dataclasses.dataclass(frozen=True)
class SubTensorCfg:
    """``mli_sub_tensor_cfg``.

    Attributes:
        offset: start of the window per dimension.
        size: size of the window per dimension.
        sub_tensor_rank: rank of the result (leading size-1 dimensions are dropped).
    """

    offset: list[int] = dataclasses.field(default_factory=_zeros4)
    size: list[int] = dataclasses.field(default_factory=_zeros4)
    sub_tensor_rank: int = 0


@c_struct("mli_argmax_cfg")
@dataclasses.dataclass(frozen=True)
class ArgmaxCfg:
    """``mli_argmax_cfg``.

    Attributes:
        axis: the dimension searched per slice (-1: the whole tensor).
        topk: how many largest values are reported.
    """

    axis: int = -1
    topk: int = 1

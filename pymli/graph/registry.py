"""The MLI function of an operation, chosen by type signature from one registry.

Every front end (:mod:`pymli.ops`, :mod:`pymli.models`, :mod:`pymli.tflite`, later the C export)
asks this table which :mod:`pymli.capi` callable runs an operation for given element types; none
of them builds a C function name. A key is ``(Op, el_types)``:

* MAC operations (convolutions, fully connected, recurrent cells): ``(input, weights)`` types, e.g.
  ``(Op.CONV2D, (ElType.SA_8, ElType.SA_8))`` -> ``mli_krn_conv2d_hwcn_sa8_sa8_sa32``;
* one-type operations (pooling, element-wise, activations, data movement): ``(input,)``;
* type-free helpers (LUT size / creation, ``mli_mov_*``, ``mli_hlp_convert_tensor``): ``()``.

An entry may list MLI's specialisations (``_k3x3``, ``_k2x2_str2``, ...) with the kernel size and
stride each one requires; :func:`lookup` returns the generic function unless asked to specialise.

Adding an operation: add an :class:`Op` member and one :func:`register` call per signature below
(with its specialisations); front ends then call ``lookup(Op.NEW, *types)``.

Example:
    >>> from pymli.formats import ElType
    >>> from pymli.graph.registry import Op, lookup
    >>> lookup(Op.CONV2D, ElType.FX_16, ElType.FX_8).__name__
    'mli_krn_conv2d_hwcn_fx16_fx8_fx8'
    >>> lookup(Op.MAXPOOL, ElType.SA_8, kernel=(3, 3), specialise=True).__name__
    'mli_krn_maxpool_hwc_sa8_k3x3'
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .. import capi
from ..arith.eltwise import EltOp
from ..capi import activation as _act
from ..capi import convolution as _conv
from ..capi import diverse as _div
from ..capi import eltwise as _elt
from ..capi import fully_connected as _fc
from ..capi import helpers as _hlp
from ..capi import legacy as _leg
from ..capi import lut_activations as _lut
from ..capi import move as _mov
from ..capi import pooling as _pool
from ..capi import recurrent as _rnn
from ..errors import MliError, Status
from .. import formats
from ..formats import ElType
from ..tensor import Lut

__all__ = ["Op", "Entry", "Specialisation", "KernelMissing", "LUT_OPS", "lookup", "require", "entry", "entries",
           "register", "new_lut", "data_suffix", "mac_suffix"]


class Op(enum.Enum):
    """Operations the front ends run, one per MLI kernel family (value: a short readable name)."""

    CONV2D = "conv2d"
    DEPTHWISE_CONV2D = "depthwise_conv2d"
    GROUP_CONV2D = "group_conv2d"
    TRANSPOSE_CONV2D = "transpose_conv2d"
    FULLY_CONNECTED = "fully_connected"
    FULLY_CONNECTED_EXT_BIAS = "fully_connected_ext_bias"
    RNN_DENSE = "rnn_dense"
    LSTM_CELL = "lstm_cell"
    GRU_CELL = "gru_cell"
    MAXPOOL = "maxpool"
    AVEPOOL = "avepool"
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    MIN = "min"
    MAX = "max"
    RELU = "relu"
    LEAKY_RELU = "leaky_relu"
    PRELU = "prelu"
    SIGM = "sigm"
    TANH = "tanh"
    SOFTMAX = "softmax"
    L2_NORMALIZE = "l2_normalize"
    ARGMAX = "argmax"
    PERMUTE = "permute"
    CONCAT = "concat"
    PADDING2D_HWC = "padding2d_hwc"
    PADDING2D_CHW = "padding2d_chw"
    SIGM_LUT_SIZE = "sigm_get_lut_size"
    SIGM_LUT_CREATE = "sigm_create_lut"
    TANH_LUT_SIZE = "tanh_get_lut_size"
    TANH_LUT_CREATE = "tanh_create_lut"
    SOFTMAX_LUT_SIZE = "softmax_get_lut_size"
    SOFTMAX_LUT_CREATE = "softmax_create_lut"
    L2_NORMALIZE_LUT_SIZE = "l2_normalize_get_lut_size"
    L2_NORMALIZE_LUT_CREATE = "l2_normalize_create_lut"
    MOV_CFG_FOR_COPY = "mov_cfg_for_copy"
    MOV_TENSOR_SYNC = "mov_tensor_sync"
    CONVERT = "convert_tensor"
    ACCU_GUARD_BITS = "accu_guard_bits"


class KernelMissing(NotImplementedError):
    """No MLI function in :mod:`pymli.capi` runs this operation (signature not registered, or removed).

    Attributes:
        name: the C name of the missing function, or a description of the unregistered signature.
    """

    def __init__(self, name: str) -> None:
        super().__init__(f"{name} is not implemented in pymli.capi")
        self.name = name


@dataclasses.dataclass(frozen=True)
class Specialisation:
    """An MLI specialisation of a generic function and the geometry it requires.

    Attributes:
        fn: the capi callable (``mli_krn_..._k3x3``).
        kernel: (height, width) of the kernel it is compiled for.
        stride: (height, width) stride it requires, or None for any.
        unpadded: it ignores the padding fields (MLI's ``_k1x1`` convolutions): only for unpadded layers.
    """

    fn: Callable[..., Any]
    kernel: tuple[int, int]
    stride: tuple[int, int] | None = None
    unpadded: bool = False

    def fits(self, kernel: tuple[int, int], stride: tuple[int, int] | None,
             padding: tuple[int, int, int, int] | None) -> bool:
        """Whether a layer of this kernel, stride and padding may call the specialisation.

        Args:
            kernel: (height, width) of the layer's kernel.
            stride: (height, width) of its stride, or None when unknown.
            padding: its (top, bottom, left, right), or None when unknown.

        Returns:
            True when the kernel (and the required stride) match and, for an unpadded specialisation,
            the padding is known and zero.
        """
        if tuple(kernel) != self.kernel:
            return False
        if self.stride is not None and (stride is None or tuple(stride) != self.stride):
            return False
        return not self.unpadded or (padding is not None and not any(padding))


@dataclasses.dataclass(frozen=True)
class Entry:
    """One registered signature.

    Attributes:
        op: the operation.
        types: element types of the signature (see the module docstring).
        fn: the generic capi callable.
        specialisations: MLI's specialised variants of ``fn``.
    """

    op: Op
    types: tuple[ElType, ...]
    fn: Callable[..., Any]
    specialisations: tuple[Specialisation, ...] = ()

    @property
    def c_name(self) -> str:
        """The C name of the generic function."""
        return self.fn.__name__


_TABLE: dict[tuple[Op, tuple[ElType, ...]], Entry] = {}


def register(op: Op, types: tuple[ElType, ...], fn: Callable[..., Any],
             specialisations: tuple[Specialisation, ...] = ()) -> Entry:
    """Register ``fn`` as the function running ``op`` for element types ``types``.

    Args:
        op: the operation.
        types: its type signature (input, or input and weights; empty for type-free helpers).
        fn: a :mod:`pymli.capi` callable (its ``__name__`` is its C name).
        specialisations: specialised variants with their geometry constraints.

    Returns:
        The new :class:`Entry`.

    Raises:
        ValueError: the signature is registered already.
    """
    key = (op, tuple(types))
    if key in _TABLE:
        raise ValueError(f"{signature_text(op, types)} registered twice")
    e = Entry(op, tuple(types), fn, tuple(specialisations))
    _TABLE[key] = e
    return e


def signature_text(op: Op, types: tuple[ElType, ...]) -> str:
    """A readable form of a signature for messages: ``conv2d(FX_8, FX_8)``."""
    return f"{op.value}({', '.join(t.name for t in types)})"


def entry(op: Op, *types: ElType) -> Entry:
    """The registered entry of a signature.

    Args:
        op: the operation; *types: its element types (see the module docstring).

    Returns:
        The :class:`Entry`.

    Raises:
        KernelMissing: no MLI function for this signature.
    """
    try:
        return _TABLE[(op, tuple(ElType(t) for t in types))]
    except KeyError:
        raise KernelMissing(f"MLI function for {signature_text(op, tuple(ElType(t) for t in types))}") from None


def entries() -> Iterator[Entry]:
    """Every registered entry (in registration order).

    Returns:
        An iterator over a snapshot of the table's :class:`Entry` records.
    """
    return iter(list(_TABLE.values()))


def available(fn: Callable[..., Any]) -> bool:
    """Whether the C function ``fn`` stands for is (still) in :data:`pymli.capi.FUNCTIONS`."""
    return fn.__name__ in capi.FUNCTIONS


def _installed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The callable :data:`pymli.capi.FUNCTIONS` holds for ``fn``'s C name today.

    Usually ``fn`` itself; a tool that instruments the C API (the C export's call recorder) replaces
    the table's entries for a while, and the front ends then call through it.
    """
    try:
        return capi.FUNCTIONS[fn.__name__]
    except KeyError:
        raise KernelMissing(fn.__name__) from None


def lookup(op: Op, *types: ElType, kernel: tuple[int, int] | None = None, stride: tuple[int, int] | None = None,
           padding: tuple[int, int, int, int] | None = None, specialise: bool = False) -> Callable[..., Any]:
    """The capi callable running ``op`` for ``types``.

    Args:
        op: the operation.
        *types: element types of the signature.
        kernel, stride: (height, width) of the layer; padding: its (top, bottom, left, right); used
            with ``specialise``.
        specialise: return the MLI specialisation that fits ``kernel`` / ``stride`` / ``padding`` if
            there is one (MLI computes the same bits; the choice matters for the C export).

    Returns:
        The capi callable (``fn.__name__`` is its C name).

    Raises:
        KernelMissing: no function for this signature, or it was removed from ``capi.FUNCTIONS``.
    """
    e = entry(op, *types)
    fn = e.fn
    if specialise and kernel is not None:
        for s in e.specialisations:
            if s.fits(kernel, stride, padding):
                fn = s.fn
                break
    return _installed(fn)


def require(op: Op, *types: ElType, status: Status = Status.TYPE_MISMATCH, what: str | None = None
            ) -> Callable[..., Any]:
    """:func:`lookup` for the Pythonic front end: a missing signature is an :class:`MliError`.

    Args:
        op: the operation; *types: its signature.
        status: the status of the error (the front end's documented one).
        what: the operation's name in the message (default ``op.value``).

    Returns:
        The capi callable, as :func:`lookup` returns it.

    Raises:
        MliError: ``status``, naming the operation and the types, when MLI has no such function.
    """
    try:
        return lookup(op, *types)
    except KernelMissing:
        have = sorted({e.types for e in _TABLE.values() if e.op is op}, key=lambda ts: [t.value for t in ts])
        options = ", ".join("/".join(t.name for t in ts) for ts in have)
        raise MliError(status, f"{what or op.value}: no MLI function for {'/'.join(t.name for t in types)} "
                               f"(only {options})") from None


# ------------------------------------------------------------------------------ the table
FX8, FX16, SA8 = ElType.FX_8, ElType.FX_16, ElType.SA_8
_ONE_TYPE = (FX8, FX16, SA8)


def _sq(fn: Callable[..., Any], k: int, stride: int | None = None) -> Specialisation:
    # MLI's 1x1 convolutions are compiled without padding
    return Specialisation(fn, (k, k), None if stride is None else (stride, stride), unpadded=k == 1)


# Convolutions: (input, weights) -> the generic function and the specialisations of capi's tables
# (keyed by the C-name suffix of the types and the kernel size; 0: generic). Transposed ones need stride 2.
for _types in ((FX16, FX16), (FX16, FX8), (SA8, SA8)):
    _mac = formats.mac_suffix(*_types)
    for _op, _fns, _stride in ((Op.CONV2D, _conv.CONV2D, None), (Op.DEPTHWISE_CONV2D, _conv.DEPTHWISE_CONV2D, None),
                               (Op.GROUP_CONV2D, _conv.GROUP_CONV2D, None),
                               (Op.TRANSPOSE_CONV2D, _conv.TRANSPOSE_CONV2D, 2)):
        register(_op, _types, _fns[(_mac, 0)],
                 tuple(_sq(_f, _k, _stride) for (_s, _k), _f in _fns.items() if _s == _mac and _k))

# Fully connected and recurrent: (input, weights).
for _types, _fcf, _dense, _lstm, _gru in (
    ((FX16, FX16), _fc.mli_krn_fully_connected_fx16, _rnn.mli_krn_rnn_dense_fx16, _rnn.mli_krn_lstm_cell_fx16,
     _rnn.mli_krn_gru_cell_fx16),
    ((FX16, FX8), _fc.mli_krn_fully_connected_fx16_fx8_fx8, _rnn.mli_krn_rnn_dense_fx16_fx8_fx8,
     _rnn.mli_krn_lstm_cell_fx16_fx8_fx8, _rnn.mli_krn_gru_cell_fx16_fx8_fx8),
    ((SA8, SA8), _fc.mli_krn_fully_connected_sa8_sa8_sa32, _rnn.mli_krn_rnn_dense_sa8_sa8_sa32,
     _rnn.mli_krn_lstm_cell_sa8_sa8_sa32, _rnn.mli_krn_gru_cell_sa8_sa8_sa32),
):
    register(Op.FULLY_CONNECTED, _types, _fcf)
    register(Op.RNN_DENSE, _types, _dense)
    register(Op.LSTM_CELL, _types, _lstm)
    register(Op.GRU_CELL, _types, _gru)
register(Op.FULLY_CONNECTED, (FX8, FX8), _fc.mli_krn_fully_connected_fx8)
register(Op.FULLY_CONNECTED_EXT_BIAS, (SA8, SA8), _fc.mli_krn_fully_connected_sa8_sa8_sa32_ext_bias)

# One-type kernels: input type -> function, in the order FX_8, FX_16, SA_8; pooling and element-wise
# from capi's tables.
for _op, _kind in ((Op.MAXPOOL, "max"), (Op.AVEPOOL, "ave")):
    for _el in _ONE_TYPE:
        register(_op, (_el,), _pool.POOLING[(_kind, _el, 0)],
                 tuple(_sq(_f, _k) for (_p, _e, _k), _f in _pool.POOLING.items() if (_p, _e) == (_kind, _el) and _k))

for _op, _elt_op in ((Op.ADD, EltOp.ADD), (Op.SUB, EltOp.SUB), (Op.MUL, EltOp.MUL), (Op.MIN, EltOp.MIN),
                     (Op.MAX, EltOp.MAX)):
    for _el in _ONE_TYPE:
        register(_op, (_el,), _elt.ELTWISE[(_elt_op, _el)])

for _op, _fns in (
    (Op.RELU, (_act.mli_krn_relu_fx8, _act.mli_krn_relu_fx16, _act.mli_krn_relu_sa8)),
    (Op.LEAKY_RELU, (_act.mli_krn_leaky_relu_fx8, _act.mli_krn_leaky_relu_fx16, _act.mli_krn_leaky_relu_sa8)),
    (Op.PRELU, (_act.mli_krn_prelu_fx8, _act.mli_krn_prelu_fx16, _act.mli_krn_prelu_sa8)),
    (Op.SIGM, (_lut.mli_krn_sigm_fx8, _lut.mli_krn_sigm_fx16, _lut.mli_krn_sigm_sa8)),
    (Op.TANH, (_lut.mli_krn_tanh_fx8, _lut.mli_krn_tanh_fx16, _lut.mli_krn_tanh_sa8)),
    (Op.SOFTMAX, (_lut.mli_krn_softmax_fx8, _lut.mli_krn_softmax_fx16, _lut.mli_krn_softmax_sa8)),
    (Op.PERMUTE, (_div.mli_krn_permute_fx8, _div.mli_krn_permute_fx16, _div.mli_krn_permute_sa8)),
    (Op.CONCAT, (_leg.mli_krn_concat_fx8, _leg.mli_krn_concat_fx16, _leg.mli_krn_concat_sa8)),
    (Op.PADDING2D_HWC, (_leg.mli_krn_padding2d_hwc_fx8, _leg.mli_krn_padding2d_hwc_fx16,
                        _leg.mli_krn_padding2d_hwc_sa8)),
    (Op.PADDING2D_CHW, (_leg.mli_krn_padding2d_chw_fx8, _leg.mli_krn_padding2d_chw_fx16,
                        _leg.mli_krn_padding2d_chw_sa8)),
):
    for _el, _f in zip(_ONE_TYPE, _fns):
        register(_op, (_el,), _f)

register(Op.L2_NORMALIZE, (FX16,), _lut.mli_krn_l2_normalize_fx16)
register(Op.L2_NORMALIZE, (SA8,), _lut.mli_krn_l2_normalize_sa8)
register(Op.ARGMAX, (FX16,), _div.mli_krn_argmax_fx16)
register(Op.ARGMAX, (SA8,), _div.mli_krn_argmax_sa8)

# Accumulator guard bits of the MAC kernels: (input, weights).
register(Op.ACCU_GUARD_BITS, (SA8, SA8), _hlp.mli_hlp_accu_guard_bits_sa8_sa8)
register(Op.ACCU_GUARD_BITS, (FX16, FX16), _hlp.mli_hlp_accu_guard_bits_fx16_fx16)
register(Op.ACCU_GUARD_BITS, (FX16, FX8), _hlp.mli_hlp_accu_guard_bits_fx16_fx8)

# Type-free helpers.
for _op, _f in (
    (Op.SIGM_LUT_SIZE, _lut.mli_krn_sigm_get_lut_size), (Op.SIGM_LUT_CREATE, _lut.mli_krn_sigm_create_lut),
    (Op.TANH_LUT_SIZE, _lut.mli_krn_tanh_get_lut_size), (Op.TANH_LUT_CREATE, _lut.mli_krn_tanh_create_lut),
    (Op.SOFTMAX_LUT_SIZE, _lut.mli_krn_softmax_get_lut_size),
    (Op.SOFTMAX_LUT_CREATE, _lut.mli_krn_softmax_create_lut),
    (Op.L2_NORMALIZE_LUT_SIZE, _lut.mli_krn_l2_normalize_get_lut_size),
    (Op.L2_NORMALIZE_LUT_CREATE, _lut.mli_krn_l2_normalize_create_lut),
    (Op.MOV_CFG_FOR_COPY, _mov.mli_mov_cfg_for_copy), (Op.MOV_TENSOR_SYNC, _mov.mli_mov_tensor_sync),
    (Op.CONVERT, _hlp.mli_hlp_convert_tensor),
):
    register(_op, (), _f)

#: the LUT of each LUT activation: op -> (get_lut_size op, create_lut op)
LUT_OPS: dict[Op, tuple[Op, Op]] = {
    Op.SIGM: (Op.SIGM_LUT_SIZE, Op.SIGM_LUT_CREATE), Op.TANH: (Op.TANH_LUT_SIZE, Op.TANH_LUT_CREATE),
    Op.SOFTMAX: (Op.SOFTMAX_LUT_SIZE, Op.SOFTMAX_LUT_CREATE),
    Op.L2_NORMALIZE: (Op.L2_NORMALIZE_LUT_SIZE, Op.L2_NORMALIZE_LUT_CREATE),
}


def new_lut(op: Op) -> Lut:
    """A new LUT for the LUT activation ``op`` (SIGM, TANH, SOFTMAX, L2_NORMALIZE), sized and filled
    by its ``mli_krn_*_get_lut_size`` / ``mli_krn_*_create_lut``.

    Args:
        op: the LUT activation.

    Returns:
        A new :class:`~pymli.tensor.Lut` (int16 data of the size MLI asks for), filled.

    Raises:
        KernelMissing: ``op`` has no LUT, or its functions are missing.
    """
    if op not in LUT_OPS:
        raise KernelMissing(f"LUT of {op.value}")
    size_op, create_op = LUT_OPS[op]
    size = int(lookup(size_op)())
    lut = Lut(data=np.zeros((size + 1) // 2, np.int16), capacity=size)
    lookup(create_op)(lut)
    return lut


#: C name suffix of one-type kernels (display and scheme names only; dispatch goes through the table)
_DATA_TYPES = (FX16, FX8, SA8)


def data_suffix(el: ElType) -> str:
    """Suffix of one-type kernels' C names: ``fx16``, ``fx8``, ``sa8``.

    Args:
        el: FX_16, FX_8 or SA_8.

    Returns:
        The suffix (a ``str``).

    Raises:
        KeyError: another type.
    """
    if el not in _DATA_TYPES:
        raise KeyError(el)
    return ElType(el).suffix


def mac_suffix(in_el: ElType, w_el: ElType) -> str:
    """Suffix of MAC kernels' C names (``fx16``, ``fx16_fx8_fx8``, ``sa8_sa8_sa32``, ``fx8``) from the types.

    Args:
        in_el: the input (and output) element type; w_el: the weights' element type.

    Returns:
        The suffix (a ``str``).

    Raises:
        ValueError: no MLI MAC kernel family for these types.
    """
    try:
        return formats.mac_suffix(in_el, w_el)
    except KeyError:
        raise ValueError(f"no MLI MAC kernel for input {in_el.name} with weights {w_el.name}") from None

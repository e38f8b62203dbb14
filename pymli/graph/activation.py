"""Fused ReLU names, once: what users, networks and TFLite call them -> MLI's ``mli_relu_type``.

Canonical names (those :mod:`pymli.models` stores and :func:`pymli.models.floatops.relu` takes):
``"none"``, ``"gen"`` (max(x, 0)), ``"relu_1"`` (clip to [-1, 1]), ``"relu_6"`` (clip to [0, 6]).
"""

from __future__ import annotations

from typing import Any

from ..capi.types import ReluType
from ..errors import MliError, Status
from . import args

__all__ = ["relu_type", "relu_name", "TFLITE_FUSED"]

_ALIASES = {"none": ReluType.NONE, "gen": ReluType.GEN, "relu": ReluType.GEN, "general": ReluType.GEN,
            "relu1": ReluType.RELU_1, "relu_1": ReluType.RELU_1, "1": ReluType.RELU_1,
            "relu6": ReluType.RELU_6, "relu_6": ReluType.RELU_6, "6": ReluType.RELU_6}
_NAMES = {ReluType.NONE: "none", ReluType.GEN: "gen", ReluType.RELU_1: "relu_1", ReluType.RELU_6: "relu_6"}

#: TFLite fused activation (``ActivationFunctionType`` name) -> canonical ReLU name; others have no MLI form
TFLITE_FUSED = {"NONE": "none", "RELU": "gen", "RELU6": "relu_6", "RELU_N1_TO_1": "relu_1"}


def relu_type(kind: Any) -> ReluType:
    """The ``mli_relu_type`` of a ReLU given by name, enum or integer.

    Args:
        kind: None (no ReLU), a :class:`ReluType`, its integer value, or a name: ``none``, ``gen`` /
            ``relu`` / ``general``, ``relu1`` / ``relu_1`` / ``1``, ``relu6`` / ``relu_6`` / ``6``
            (any case, an ``mli_relu_`` prefix allowed).

    Returns:
        The :class:`ReluType` member.

    Raises:
        MliError: BAD_FUNC_CFG (a ``ValueError``) for an unknown name, a value outside the C enum or
            another type.
    """
    if kind is None:
        return ReluType.NONE
    if isinstance(kind, ReluType):
        return kind
    if isinstance(kind, str):
        key = kind.lower().removeprefix("mli_relu_").replace(" ", "")
        if key in _ALIASES:
            return _ALIASES[key]
        raise MliError(Status.BAD_FUNC_CFG, f"unknown ReLU type {kind!r:.40}: one of none, gen, relu1, relu6")
    v = args.integer(kind, "ReLU type", what="relu")
    try:
        return ReluType(v)
    except ValueError:
        raise MliError(Status.BAD_FUNC_CFG, f"ReLU type {v} outside mli_relu_type "
                                            f"({', '.join(f'{t.value}={t.name}' for t in ReluType)})") from None


def relu_name(kind: Any) -> str:
    """The canonical name (``none``, ``gen``, ``relu_1``, ``relu_6``) of any form :func:`relu_type` takes.

    Args:
        kind: a ReLU as :func:`relu_type` takes it (None, :class:`ReluType`, integer or name).

    Returns:
        The canonical name (a ``str``).

    Raises:
        MliError: BAD_FUNC_CFG, as :func:`relu_type`.
    """
    return _NAMES[relu_type(kind)]

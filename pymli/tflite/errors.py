"""Errors of the TFLite importer (all are :class:`pymli.errors.MliError`, hence ``ValueError``)."""

from __future__ import annotations

from ..errors import MliError, Status

__all__ = ["TfliteError", "TfliteFormatError", "TfliteUnsupported", "TfliteInputError", "TfliteLayoutError",
           "TfliteWarning"]


class TfliteError(MliError):
    """Base class: a TFLite model pymli cannot load or run."""

    def __init__(self, status: Status, message: str) -> None:
        super().__init__(status, message)
        self.reason = message


class TfliteFormatError(TfliteError):
    """The bytes are not a well-formed TFLite flatbuffer (truncated, corrupted, wrong identifier)."""

    def __init__(self, message: str) -> None:
        super().__init__(Status.BAD_TENSOR, f"malformed TFLite model: {message}")


class TfliteUnsupported(TfliteError):
    """A well-formed model uses an operator or a parameter MLI cannot run.

    Attributes:
        op_index: index of the operator in the subgraph (None for model-level reasons).
        op_name: TFLite builtin operator name.
    """

    def __init__(self, op_index: int | None, op_name: str, reason: str) -> None:
        where = f"operator {op_index} ({op_name})" if op_index is not None else op_name
        super().__init__(Status.NOT_SUPPORTED, f"{where}: {reason}")
        self.op_index = op_index
        self.op_name = op_name


class TfliteInputError(TfliteError):
    """``run`` was given the wrong number of inputs, or an input of the wrong shape or dtype.

    Attributes:
        expected: what the model takes (for the message and for callers that adapt their data).
    """

    def __init__(self, status: Status, message: str, expected: object = None) -> None:
        super().__init__(status, message)
        self.expected = expected


class TfliteLayoutError(TfliteError):
    """The weights' layout (TFLite's or the ARC adaptation tool's) cannot be decided from the model:
    ``load(..., adapted=True|False)`` decides it."""

    def __init__(self, message: str) -> None:
        super().__init__(Status.SHAPE_MISMATCH, message)


class TfliteWarning(UserWarning):
    """A loaded model computes differently on the device than what pymli computes (a defect of TFLM's
    arc_mli glue code, see ``docs/tflite.md``); raised once per model at load via ``warnings.warn``."""

"""Errors of the TFLite importer (all are :class:`pymli.errors.MliError`, hence ``ValueError``)."""

from __future__ import annotations

from ..errors import MliError, Status

__all__ = ["TfliteError", "TfliteFormatError", "TfliteUnsupported"]


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

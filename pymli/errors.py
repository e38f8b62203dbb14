"""MLI status codes (``mli_status``) and the one exception pymli raises for a misuse."""

from __future__ import annotations

import enum
from typing import TypeVar

__all__ = ["CEnum", "Status", "MliError"]

_E = TypeVar("_E", bound="CEnum")


class CEnum(enum.IntEnum):
    """An ``IntEnum`` mirroring a C enum whose enumerators are named ``<prefix><member name>``.

    A subclass gives its prefix with a ``_c_prefix`` classmethod (``"MLI_EL_"``, ``"MLI_STATUS_"``).
    """

    @classmethod
    def _c_prefix(cls) -> str:
        raise NotImplementedError

    @property
    def c_name(self) -> str:
        """The C enumerator name, e.g. ``MLI_STATUS_BAD_TENSOR`` or ``MLI_EL_SA_8``."""
        return self._c_prefix() + self.name

    @classmethod
    def from_c_name(cls: type[_E], name: str) -> _E:
        """Parse a C enumerator name (``MLI_STATUS_X``, ``MLI_EL_X``), with or without its prefix.

        Args:
            name: the C enumerator name.

        Returns:
            The member.

        Raises:
            KeyError: an unknown name.
        """
        return cls[name.removeprefix(cls._c_prefix())]


class Status(CEnum):
    """The ``mli_status`` enum of ``mli_types.h`` (MLI 2.0), with the C values."""

    OK = 0
    BAD_TENSOR = 1
    SHAPE_MISMATCH = 2
    INCOMPATEBLE_TENSORS = 3
    BAD_FUNC_CFG = 4
    NOT_ENGH_MEM = 5
    NOT_SUPPORTED = 6
    SPEC_PARAM_MISMATCH = 7
    ARGUMENT_ERROR = 8
    LENGTH_ERROR = 9
    SIZE_MISMATCH = 10
    RANK_MISMATCH = 11
    TYPE_MISMATCH = 12
    MEM_BANK_MISMATCH = 13
    MISALIGNMENT_ERROR = 14

    @classmethod
    def _c_prefix(cls) -> str:
        return "MLI_STATUS_"


class MliError(ValueError):
    """A call that the C library would reject with a non-OK ``mli_status``.

    Attributes:
        status: the :class:`Status` the C library returns for the same misuse.
    """

    def __init__(self, status: Status, message: str = "") -> None:
        self.status = Status(status)
        self.message = message
        super().__init__(f"{self.status.c_name}: {message}" if message else self.status.c_name)

"""Platform configuration: what the C library fixes at build time, pymli decides at run time.

MLI's arithmetic depends on three build options: ``ROUND_MODE`` (UP on VPX, CONVERGENT on EM/HS),
``FULL_ACCU`` (wide accumulator path of the sa8 MAC kernels) and ``AVEPOOL_16BIT_MUL``. pymli keeps
them in a :class:`Platform` value; every function that rounds or accumulates reads the current one.

Example:
    >>> import pymli
    >>> with pymli.use_platform(pymli.EM):
    ...     pass  # every call here rounds half to even
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Iterator

from .errors import MliError, Status
from .formats import RoundMode

__all__ = ["Platform", "VPX", "VPX_FULL_ACCU", "EM", "PRESETS", "UnknownPlatform", "platform_named", "get_platform",
           "use_platform", "set_platform", "DEFAULT_MEMORY_BUDGET", "get_memory_budget", "set_memory_budget"]


@dataclasses.dataclass(frozen=True)
class Platform:
    """Build-time options of the MLI C library, as a run-time value.

    Attributes:
        round_mode: ROUND_UP (half up) or ROUND_CONVERGENT (half to even).
        full_accu: FULL_ACCU build (sa8 MAC kernels keep the full accumulator before rescaling).
        avepool_16bit_mul: AVEPOOL_16BIT_MUL build (average pooling divides with a 16-bit multiplier).
        name: a label for reports.
        debug_mode: MLI_DEBUG_MODE reported by ``mli_hlp_compile_options_string``. pymli always
            validates its arguments (as the checked C build does) whatever this says.
    """

    round_mode: RoundMode = RoundMode.UP
    full_accu: bool = False
    avepool_16bit_mul: bool = False
    name: str = "custom"
    debug_mode: str = "DBG_MODE_RELEASE"

    @property
    def round_up(self) -> bool:
        """True for ROUND_UP (half up), False for ROUND_CONVERGENT (half to even)."""
        return self.round_mode is RoundMode.UP

    def options_string(self) -> str:
        """What ``mli_hlp_compile_options_string`` prints for a build with these options."""
        rnd = "UP" if self.round_up else "CONVERGENT"
        return f" MLI_BUILD_REFERENCE=OFF ROUND_MODE={rnd} MLI_DEBUG_MODE={self.debug_mode}"


VPX = Platform(RoundMode.UP, False, False, "vpx")
VPX_FULL_ACCU = Platform(RoundMode.UP, True, False, "vpx-full-accu")
EM = Platform(RoundMode.CONVERGENT, False, False, "em")
PRESETS: dict[str, Platform] = {p.name: p for p in (VPX, VPX_FULL_ACCU, EM)}

class UnknownPlatform(MliError, KeyError):
    """A platform name that is not a preset (an :class:`MliError` / ``ValueError``; a ``KeyError`` too,
    what :data:`PRESETS` lookups raised before)."""

    def __init__(self, name: object) -> None:
        super().__init__(Status.NOT_SUPPORTED, f"unknown platform {name!r:.60}: one of {', '.join(PRESETS)} "
                                               "(any letter case)")

    __str__ = MliError.__str__  # the message, not the quoted repr KeyError.__str__ gives


def platform_named(platform: Platform | str) -> Platform:
    """The :class:`Platform` of a preset name, in any letter case (``"EM"``, ``"vpx"``, ``"VPX-Full-Accu"``;
    ``_`` may stand for ``-``), or ``platform`` itself.

    Args:
        platform: a Platform or a preset name.

    Returns:
        The platform.

    Raises:
        UnknownPlatform: a name (or another value) that is not a preset; the message lists the choices.
    """
    if isinstance(platform, Platform):
        return platform
    if isinstance(platform, str):
        p = PRESETS.get(platform.strip().lower().replace("_", "-"))
        if p is not None:
            return p
    raise UnknownPlatform(platform)


_current: contextvars.ContextVar[Platform] = contextvars.ContextVar("pymli_platform", default=VPX)


def get_platform() -> Platform:
    """The platform in force (VPX, round up, unless changed)."""
    return _current.get()


def set_platform(platform: Platform | str) -> None:
    """Make ``platform`` (a :class:`Platform` or a preset name) the default of this context.

    Args:
        platform: a Platform or a preset name ("vpx", "vpx-full-accu", "em"; any letter case).

    Raises:
        UnknownPlatform: an unknown preset name (an MliError, ValueError and KeyError).
    """
    _current.set(platform_named(platform))


@contextlib.contextmanager
def use_platform(platform: Platform | str) -> Iterator[Platform]:
    """Run a block under another platform setting.

    Args:
        platform: a Platform or a preset name (any letter case).

    Yields:
        The platform in force inside the block.

    Raises:
        UnknownPlatform: an unknown preset name (an MliError, ValueError and KeyError).
    """
    p = platform_named(platform)
    token = _current.set(p)
    try:
        yield p
    finally:
        _current.reset(token)


DEFAULT_MEMORY_BUDGET = 2 * 1024**3
"""Default memory budget in bytes (2 GiB): the largest single buffer pymli allocates on request."""

_budget: contextvars.ContextVar[int] = contextvars.ContextVar("pymli_memory_budget", default=DEFAULT_MEMORY_BUDGET)


def get_memory_budget() -> int:
    """The memory budget in force: bytes one requested buffer may take (2 GiB unless changed).

    Requests above it (``Tensor.zeros``, capi temporaries) are refused with ``MliError(NOT_ENGH_MEM)``
    before anything is allocated.
    """
    return _budget.get()


def set_memory_budget(nbytes: int) -> None:
    """Set the memory budget of this context.

    Args:
        nbytes: the largest single buffer in bytes (a positive int).

    Raises:
        ValueError: ``nbytes`` is not a positive int.
    """
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
        raise ValueError(f"memory budget must be a positive number of bytes, not {nbytes!r}")
    _budget.set(nbytes)

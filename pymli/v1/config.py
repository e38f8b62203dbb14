"""Platform presets for MLI 1.0's builds, usable with :func:`pymli.use_platform`.

MLI 1.0's makefile builds with ``-Xdsp_ctrl=postshift,guard,convergent`` (round half to even) and
without argument checks (``DBG_MODE_RELEASE``). The presets below also cover round-half-up and the
checked builds (``MLI_DEBUG_MODE=DBG_MODE_RET_CODES``), in which every 1.x function validates its
arguments and returns an error status (here: raises :class:`~pymli.v1.tensor.MliError`) first.

Under a release preset the 1.x API skips MLI's checks, as the C library does, but still refuses
(with ``MliError``) any call that would read or write outside its buffers.
"""

from __future__ import annotations

from ..config import Platform, get_platform
from ..formats import RoundMode

__all__ = ["MLI1_CONV", "MLI1_UP", "MLI1_CONV_CHK", "MLI1_UP_CHK", "PRESETS_V1", "checked_build",
           "DBG_MODE_RELEASE", "DBG_MODE_RET_CODES"]

DBG_MODE_RELEASE = "DBG_MODE_RELEASE"
DBG_MODE_RET_CODES = "DBG_MODE_RET_CODES"

MLI1_CONV = Platform(RoundMode.CONVERGENT, False, False, "mli1-conv", DBG_MODE_RELEASE)
MLI1_UP = Platform(RoundMode.UP, False, False, "mli1-up", DBG_MODE_RELEASE)
MLI1_CONV_CHK = Platform(RoundMode.CONVERGENT, False, False, "mli1-convchk", DBG_MODE_RET_CODES)
MLI1_UP_CHK = Platform(RoundMode.UP, False, False, "mli1-upchk", DBG_MODE_RET_CODES)

#: The presets by the variant names of the 1.x recordings (``conv``, ``up``, ``convchk``, ``upchk``).
PRESETS_V1: dict[str, Platform] = {"conv": MLI1_CONV, "up": MLI1_UP, "convchk": MLI1_CONV_CHK, "upchk": MLI1_UP_CHK}


def checked_build() -> bool:
    """True when the platform in force is a checked build (``DBG_MODE_RET_CODES`` or stricter)."""
    return get_platform().debug_mode != DBG_MODE_RELEASE

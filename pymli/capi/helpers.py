"""``mli_helpers_api.h``: helper functions (``mli_hlp_*``)."""

from __future__ import annotations

from ..config import get_platform
from ._registry import mli_function

__all__ = ["mli_hlp_compile_options_string"]


@mli_function()
def mli_hlp_compile_options_string() -> str:
    """The build options string of the C library for the current platform setting."""
    return get_platform().options_string()

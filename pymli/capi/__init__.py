"""The MLI-named facade: one Python callable per MLI C function, same name, same argument order.

Tensors are :class:`pymli.Tensor`, cfg structs are the dataclasses of :mod:`pymli.capi.types`
(C field names), LUTs are :class:`pymli.Lut`. A function returning ``mli_status`` in C returns
``Status.OK`` here or raises :class:`pymli.MliError` carrying the C status; nothing is written to an
output on failure. Functions returning a value in C return that value (the checked C build's value
on a misuse, e.g. 0 from ``mli_hlp_count_elem_num``). Outputs are written into the given output
tensor, honouring its capacity and mem_stride, and its struct fields are updated as C does.

Every module of this package registers its functions on import; ``FUNCTIONS`` lists them all.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from ._registry import ENUMS, FUNCTIONS, STRUCTS, UNSUPPORTED, c_struct, mli_function, unsupported
from .types import *  # noqa: F401,F403
from .types import __all__ as _types_all

for _m in pkgutil.iter_modules(__path__):
    if not _m.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_m.name}")

globals().update(FUNCTIONS)

__all__ = ["FUNCTIONS", "UNSUPPORTED", "STRUCTS", "ENUMS", "mli_function", "c_struct", "unsupported",
           *_types_all, *sorted(FUNCTIONS)]


def __getattr__(name: str) -> Any:
    if name in UNSUPPORTED:
        raise AttributeError(f"{name} is not provided by pymli: {UNSUPPORTED[name]}")
    raise AttributeError(f"module 'pymli.capi' has no attribute {name!r}")

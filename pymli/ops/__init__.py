"""The Pythonic API: functions over :class:`pymli.Tensor` that return new tensors.

``pymli.ops.conv2d(x, w, b, stride=..., padding=..., relu=...)`` and friends. Each module of this
package contributes the names in its ``__all__``; they run the same checked MLI code as
:mod:`pymli.capi` and allocate the output for you.
"""

from __future__ import annotations

import importlib
import pkgutil

__all__: list[str] = []

for _m in pkgutil.iter_modules(__path__):
    if not _m.name.startswith("_"):
        _mod = importlib.import_module(f"{__name__}.{_m.name}")
        for _n in getattr(_mod, "__all__", []):
            if _n in __all__:
                raise ImportError(f"pymli.ops.{_m.name} exports {_n!r}, already exported by another module")
            globals()[_n] = getattr(_mod, _n)
            __all__.append(_n)

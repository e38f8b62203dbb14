"""The docstring sections that several :mod:`pymli.ops` functions share, written once.

A function keeps its own summary line in its source; :func:`sections` appends the shared Args /
Returns / Raises text (with the function's own details filled in), so ``help()`` shows one complete
docstring and the text is not copied from function to function.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["sections"]

F = TypeVar("F", bound=Callable[..., Any])


def sections(text: str, **fields: str) -> Callable[[F], F]:
    """Decorator appending the shared docstring ``text`` to the function's own summary.

    Args:
        text: Google-style sections (``Args:``, ``Returns:``, ``Raises:``), with ``str.format``
            fields.
        **fields: the values of those fields for this function.

    Returns:
        The decorator (it returns the function itself, its ``__doc__`` completed).
    """

    def deco(fn: F) -> F:
        fn.__doc__ = inspect.cleandoc(fn.__doc__ or "") + "\n\n" + inspect.cleandoc(text.format(**fields))
        return fn

    return deco

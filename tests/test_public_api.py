"""The top-level surface: lazy subpackages and the Pythonic ops as ``pymli.<op>``."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import pymli


def test_ops_reachable_from_top_level() -> None:
    for name in pymli.ops.__all__:
        assert getattr(pymli, name) is getattr(pymli.ops, name)


def test_unknown_attribute_raises() -> None:
    with pytest.raises(AttributeError):
        pymli.no_such_thing  # noqa: B018


def test_conv2d_from_top_level_close_to_float() -> None:
    rng = np.random.default_rng(1)
    x = pymli.quantize(rng.normal(size=(6, 6, 3)), "SA_8")
    w = pymli.quantize(rng.normal(0, 0.3, size=(3, 3, 3, 4)), "SA_8", dim=3, symmetric=True)
    y = pymli.conv2d(x, w, None, stride=1, padding="same", relu="relu6")
    assert y.shape == [6, 6, 4]
    xf, wf = np.pad(x.to_float(), ((1, 1), (1, 1), (0, 0))), w.to_float()
    ref = np.zeros((6, 6, 4))
    for i in range(3):
        for j in range(3):
            ref += xf[i:i + 6, j:j + 6, :] @ wf[i, j]
    ref = np.clip(ref, 0, 6)
    step = float(np.asarray(y.scale)) * 2.0 ** -float(np.asarray(y.scale_frac_bits))
    assert np.abs(y.to_float() - ref).max() <= 2 * step


def test_symmetric_weights_have_zero_points_zero() -> None:
    w = pymli.quantize(np.linspace(-1, 3, 24).reshape(2, 3, 4), "SA_8", dim=2, symmetric=True)
    assert np.all(np.asarray(w.zero_point) == 0)
    assert np.abs(w.to_float() - np.linspace(-1, 3, 24).reshape(2, 3, 4)).max() <= 3 / 127


# ---------------------------------------------------------------------------- docstrings (issue 12)
DOCUMENTED_PACKAGES = ("pymli.ops", "pymli.graph", "pymli.export", "pymli.eval")


def _direct_raise(fn: Callable[..., Any]) -> bool:
    """Whether ``fn``'s own body (not a nested function) has a ``raise`` statement."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError):
        return False
    top = tree.body[0]
    stack = list(ast.iter_child_nodes(top))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Raise):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _section(doc: str, title: str) -> str:
    """The text of the Google-style section ``title`` of a docstring ('' if absent)."""
    m = re.search(rf"^{title}:\n((?:[ \t]+.*\n?|\n)*)", doc, re.MULTILINE)
    return m.group(1) if m else ""


def docstring_problems(qualname: str, fn: Callable[..., Any]) -> list[str]:
    """What the docstring of the public callable ``fn`` lacks: a summary; an ``Args:`` section naming
    every parameter; ``Returns:`` when it returns something; ``Raises:`` when its body raises."""
    doc = inspect.getdoc(fn) or ""
    if not doc.strip():
        return [f"{qualname}: no docstring"]
    out = []
    sig = inspect.signature(fn)
    params = [p.name for p in sig.parameters.values() if p.name not in ("self", "cls")]
    args = _section(doc, "Args")
    missing = [p for p in params if not re.search(rf"(^|[\s,*`(]){re.escape(p)}\b", args)]
    if missing:
        out.append(f"{qualname}: Args does not name {missing}")
    if sig.return_annotation not in (inspect.Signature.empty, None, "None") and not (
            _section(doc, "Returns") or _section(doc, "Yields")):
        out.append(f"{qualname}: no Returns")
    if _direct_raise(fn) and not _section(doc, "Raises"):
        out.append(f"{qualname}: raises, but no Raises")
    return out


def _public_callables(package: str) -> Iterator[tuple[str, Callable[..., Any]]]:
    """Every function and public method of every class a module of ``package`` lists in ``__all__``
    and defines itself (properties and dunder methods are documented by their class)."""
    pkg = importlib.import_module(package)
    mods = [pkg] + [importlib.import_module(f"{package}.{m.name}") for m in pkgutil.iter_modules(pkg.__path__)
                    if not m.name.startswith("_")]
    for mod in mods:
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if getattr(obj, "__module__", None) != mod.__name__:
                continue
            q = f"{mod.__name__}.{name}"
            if inspect.isfunction(obj):
                yield q, obj
            elif inspect.isclass(obj):
                yield q, obj
                for attr, v in vars(obj).items():
                    f = v.__func__ if isinstance(v, (classmethod, staticmethod)) else v
                    if not attr.startswith("_") and inspect.isfunction(f):
                        yield f"{q}.{attr}", f


@pytest.mark.parametrize("package", DOCUMENTED_PACKAGES)
def test_public_callables_are_documented(package: str) -> None:
    problems = []
    for q, obj in _public_callables(package):
        if inspect.isclass(obj):
            if not (inspect.getdoc(obj) or "").strip():
                problems.append(f"{q}: no docstring")
        else:
            problems += docstring_problems(q, obj)
    assert not problems, "\n".join(problems)


def test_docstring_check_sees_gaps() -> None:
    def undocumented(x: int) -> int:
        return x

    def no_raises(x: int) -> None:
        """Refuse ``x``.

        Args:
            x: the value.
        """
        raise ValueError(x)

    def complete(x: int, *, y: int = 0) -> int:
        """Sum.

        Args:
            x, y: the terms.

        Returns:
            ``x + y``.

        Raises:
            ValueError: never.
        """
        if x is None:
            raise ValueError(x)
        return x + y

    assert docstring_problems("u", undocumented) == ["u: no docstring"]
    assert docstring_problems("n", no_raises) == ["n: raises, but no Raises"]
    assert docstring_problems("c", complete) == []
    complete.__doc__ = "Sum.\n\nArgs:\n    x: a term.\n"
    assert docstring_problems("c", complete) == ["c: Args does not name ['y']", "c: no Returns", "c: raises, but no Raises"]

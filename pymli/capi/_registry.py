"""Registry of the MLI-named facade: C function name -> Python callable, C struct name -> class."""

from __future__ import annotations

import dataclasses
import enum
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from ..checks.entry import enum_lookup, guard
from ..formats import ElType

__all__ = ["FUNCTIONS", "UNSUPPORTED", "STRUCTS", "ENUMS", "mli_function", "c_struct", "c_enum", "unsupported", "c_variant",
           "c_variants"]

FUNCTIONS: dict[str, Callable[..., Any]] = {}
"""Every implemented MLI API function, by its C name."""

UNSUPPORTED: dict[str, str] = {}
"""MLI API functions pymli does not provide, with the reason."""

STRUCTS: dict[str, type] = {}
"""cfg / handle struct classes by C type name (``mli_conv2d_cfg`` ...)."""

ENUMS: dict[str, type[enum.Enum]] = {}
"""C enums by type name; their members are looked up by C enumerator name in cfg dicts."""

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T", bound=type)


def mli_function(*names: str) -> Callable[[F], F]:
    """Register a facade function under one or more C names (specialisations share one body).

    The registered (and returned) callable is ``fn`` behind :func:`pymli.checks.entry.guard`: its
    arguments are normalised and validated before ``fn`` runs.
    """

    def deco(fn: F) -> F:
        fn = guard(fn, (names or (fn.__name__,))[0])  # type: ignore[assignment]
        for name in names or (fn.__name__,):
            if name in FUNCTIONS and FUNCTIONS[name] is not fn:
                raise RuntimeError(f"{name} registered twice")
            FUNCTIONS[name] = fn
        return fn

    return deco


def c_variant(name: str, impl: Callable[..., Any], params: str, doc: str,
              head: tuple[Any, ...] = (), tail: tuple[Any, ...] = (), named: bool = True,
              planned: bool = False) -> Callable[..., Any]:
    """Register the C function ``name(*params)`` as ``impl(name, *head, *params, *tail)``.

    One shared body serves each element-type specialisation; the public function keeps its C
    name, its own parameter names (annotated as ``impl``'s matching parameters) and its docstring.

    Args:
        name: the C function name.
        impl: the shared body; its first parameter receives ``name`` (see ``named``).
        params: the public parameter names, space-separated, in C order.
        doc: the public docstring.
        head: values passed between ``name`` and the public arguments (e.g. the element type).
        tail: values passed after the public arguments.
        named: False when ``impl`` takes no function name (``impl(*head, *params, *tail)``).
        planned: ``impl`` is a planner: it checks and derives, reading no element value, and returns
            the function of the public arguments that computes and writes (see
            :mod:`pymli.checks.entry`, "the memo"); the call is ``impl(...)(*params)``.

    Returns:
        The registered function.
    """
    names = params.split()
    first = int(named) + len(head)
    impl_sig = inspect.signature(impl)
    impl_params = list(impl_sig.parameters.values())[first:first + len(names)]
    lead = ((name,) if named else ()) + tuple(head)
    sig = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=p.annotation)
                             for n, p in zip(names, impl_params)],
                            return_annotation="Status" if planned else impl_sig.return_annotation)

    # The guard binds keywords and checks the count before calling: ``fn`` takes its arguments
    # positionally, with no binding of its own.
    if planned:
        def plan(*args: Any) -> Callable[..., Any]:
            return impl(*lead, *args, *tail)

        def fn(*args: Any) -> Any:
            return impl(*lead, *args, *tail)(*args)

        fn.__mli_plan__ = plan  # type: ignore[attr-defined]
    else:
        def fn(*args: Any) -> Any:
            return impl(*lead, *args, *tail)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.__module__ = impl.__module__
    fn.__signature__ = sig  # type: ignore[attr-defined]
    return mli_function(name)(fn)


def c_variants(family: str, impl: Callable[..., Any], params: str,
               docs: dict[ElType, str]) -> tuple[Callable[..., Any], ...]:
    """Register the planned C functions one body serves: the element-type specialisations of a family.

    Args:
        family: the C name without its element-type suffix (``"mli_krn_relu"``); each function is
            ``<family>_<el_type.suffix>``.
        impl: the shared planner, ``impl(name, el_type, *params)`` (see :func:`c_variant`, ``planned``).
        params: the public parameter names, space-separated, in C order.
        docs: the docstring of each element type's function.

    Returns:
        The registered functions, in the order of ``docs``.
    """
    return tuple(c_variant(f"{family}_{el.suffix}", impl, params, doc, head=(el,), planned=True)
                 for el, doc in docs.items())


def unsupported(name: str, reason: str) -> None:
    """List an MLI function that pymli deliberately does not provide."""
    UNSUPPORTED[name] = reason


def c_enum(name: str) -> Callable[[T], T]:
    """Register an enum (``MLI_RELU_6`` style member names map via ``C_NAMES`` or the member name)."""

    def deco(cls: T) -> T:
        ENUMS[name] = cls
        return cls

    return deco


def enum_from_c(cls: type[enum.Enum], value: Any) -> enum.Enum:
    """Enum member from a C enumerator name, a member name or an integer value."""
    m = enum_lookup(cls, value)
    if m is not None:
        return m
    if isinstance(value, str):
        raise KeyError(f"{value!r} is not a {cls.__name__}")
    return cls(value)  # the ValueError of a value that is no member (or a bool / float value, as before)


def c_struct(name: str) -> Callable[[T], T]:
    """Register a dataclass as the Python form of the C struct ``name``.

    The class gets ``from_dict`` (C field names, nested structs as dicts, enums by C name) and
    ``to_dict`` unless it defines its own.
    """

    def deco(cls: T) -> T:
        STRUCTS[name] = cls
        if "from_dict" not in cls.__dict__:
            cls.from_dict = classmethod(_from_dict)  # type: ignore[attr-defined]
        if "to_dict" not in cls.__dict__:
            cls.to_dict = _to_dict  # type: ignore[attr-defined]
        return cls

    return deco


def _from_dict(cls: type, d: dict[str, Any]) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in d:
            continue
        v = d[f.name]
        tp = hints.get(f.name)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp) and isinstance(v, dict):
            v = tp.from_dict(v) if hasattr(tp, "from_dict") else tp(**v)
        elif isinstance(tp, type) and issubclass(tp, enum.Enum):
            v = enum_from_c(tp, v)
        elif isinstance(v, list):
            v = list(v)
        kwargs[f.name] = v
    return cls(**kwargs)


def _to_dict(self: Any) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(self):
        v = getattr(self, f.name)
        if dataclasses.is_dataclass(v):
            v = v.to_dict()
        elif isinstance(v, enum.Enum):
            v = getattr(v, "c_name", v.name)
        elif hasattr(v, "tolist"):
            v = v.tolist()
        out[f.name] = v
    return out

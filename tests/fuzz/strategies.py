"""Hypothesis strategies for the fuzz suite: tensors, NumPy views, cfg structs, valid and invalid.

Everything here builds *inputs*; the calls and the properties live in :mod:`tests.fuzz.harness`.

* :data:`FUZZ`: the settings every fuzz test uses. ``HYPOTHESIS_PROFILE=ci`` (the default) runs a
  small fixed (derandomised) set of examples per test; ``HYPOTHESIS_PROFILE=long`` runs many random
  examples with shrinking (see ``tests/fuzz/README.md``).
* :func:`tensors`: random ``pymli.Tensor`` structs (rank 0..4, every element type, FX frac_bits,
  SA per-tensor and per-axis parameters, spare capacity, padded ``mem_stride``).
* :func:`placements` / :func:`place`: the same values handed in through NumPy views with positive,
  non-unit, negative or zero strides, read-only, or a 2-D non-contiguous array; every view lives
  inside a larger *base* buffer filled with a sentinel so that writes (and reads) beyond the view
  stay inside memory this test owns and are detected.
* :func:`bad_data`: data of the wrong dtype for the element type, Python lists, ``None``, 2-D arrays.
* :func:`tensor_field_mutations`, :func:`cfg_mutations`: one struct field set to a value outside
  its C type (int16 / int8 / int32 overflow, inf, NaN, float, ``None``, enum values outside the C
  enum, stride 0, huge paddings and dilations, kernels larger than the input).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import os
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from pymli import ElType, MliError, Tensor
from pymli.tensor import dense_strides

__all__ = [
    "FUZZ", "LONG", "EXAMPLES", "EL_TYPES", "SENTINEL", "Placed", "place", "placements", "tensors",
    "bad_data", "tensor_field_mutations", "cfg_mutations", "int_values", "odd_values", "junk_values",
    "outcome",
]

LONG = os.environ.get("HYPOTHESIS_PROFILE", "ci") == "long"
EXAMPLES = 1000 if LONG else 4
"""Examples per (function, misuse class) test: 4 in CI, 1000 in the long run."""

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not LONG,
    database=None,
    # CI: generate only (a known failure is xfailed, shrinking it would only cost time)
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink) if LONG else (Phase.explicit, Phase.generate),
    suppress_health_check=list(HealthCheck),
    print_blob=LONG,
)

EL_TYPES = [ElType.FX_8, ElType.FX_16, ElType.SA_8, ElType.SA_32]
SENTINEL = 0x5A
"""Byte value filling every base buffer outside the views handed to pymli."""

# Values chosen to sit on and just beyond C type limits, plus Python-level nonsense.
_EDGES = [0, 1, -1, 2, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768,
          -32769, 65535, 65536, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**32, 2**40, 2**63 - 1, 2**63, -(2**63),
          2**64, 10**30]


def int_values() -> st.SearchStrategy[int]:
    """Integers concentrated on C type boundaries (int8/16/32/64 limits and one past them)."""
    return st.one_of(st.sampled_from(_EDGES), st.integers(-300, 300), st.integers(-(2**70), 2**70))


def odd_values() -> st.SearchStrategy[Any]:
    """Numbers no C integer field can hold: NaN, +-inf, fractions, huge floats, wide NumPy scalars."""
    return st.sampled_from([math.nan, math.inf, -math.inf, 0.5, -1.5, 1e300, np.float64(np.nan), np.int64(2**62),
                            np.uint64(2**64 - 1)])


def junk_values() -> st.SearchStrategy[Any]:
    """Values of the wrong Python type for a C number: ``None``, strings, lists, tuples, bool, objects."""
    return st.sampled_from([None, "x", "3", [1, 2], (), True, object(), {"a": 1}, b"\x01"])


def _vals(junk: bool, numeric: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return junk_values() if junk else st.one_of(numeric, odd_values())


# ---------------------------------------------------------------------------------------------------- views
@dataclasses.dataclass
class Placed:
    """An array as handed to pymli (``data``) and the base buffer it lives in.

    Attributes:
        data: the array given to pymli (a view into ``base``, or not an array at all).
        base: the owning 1-D uint8 buffer, or ``None`` when ``data`` is not a view we made.
        kind: the placement (``dense``, ``step2``, ``negative``, ``zero``, ``readonly``, ``twod``).
    """

    data: Any
    base: np.ndarray | None
    kind: str

    def view_mask(self) -> np.ndarray:
        """Boolean per byte of ``base``: ``True`` where a byte belongs to an element of ``data``."""
        mask = np.zeros(self.base.shape[0], bool)
        d = self.data
        start = d.__array_interface__["data"][0] - self.base.__array_interface__["data"][0]
        offs = np.full(d.shape, start, np.int64)
        for ax, s in enumerate(d.strides):
            shape = [1] * d.ndim
            shape[ax] = d.shape[ax]
            offs = offs + np.arange(d.shape[ax], dtype=np.int64).reshape(shape) * s
        for b in range(d.itemsize):
            mask[(offs.reshape(-1) + b)] = True
        return mask


PLACEMENTS = ("dense", "step2", "step3", "negative", "zero", "readonly", "twod")


def place(values: np.ndarray, kind: str = "dense", guard: int | None = None) -> Placed:
    """Put a 1-D array's ``values`` into a new sentinel-filled base buffer through a view of ``kind``.

    Args:
        values: 1-D array (its dtype is kept).
        kind: ``dense`` (a contiguous slice in the middle of the base), ``step2`` / ``step3`` (every
            2nd / 3rd element), ``negative`` (stride -1: the view reads ``values`` in order although
            memory holds them reversed), ``zero`` (stride 0: every element is ``values[0]``),
            ``readonly`` (dense, not writeable), ``twod`` (a 2-D non-contiguous array holding the
            values in row-major order, one column skipped).
        guard: bytes of sentinel before and after the view's extent (default: the view's extent, so
            an out-of-bounds access by the span of the view stays inside the base).

    Returns:
        The :class:`Placed` view.
    """
    values = np.ascontiguousarray(values).reshape(-1)
    dt, n = values.dtype, values.shape[0]
    it = dt.itemsize
    step = {"step2": 2, "step3": 3}.get(kind, 1)
    extent = max(n, 1) * step * it
    if kind == "twod":
        extent = 2 * (max(n, 1) + 1) * it  # rows x (cols + 1) elements at most
    g = extent + 64 if guard is None else guard
    g -= g % 16
    base = np.full(2 * g + extent + 16, SENTINEL, np.uint8)
    body = base[g: g + extent - extent % it].view(dt)
    if kind in ("dense", "readonly"):
        d = body[:n]
        d[...] = values
        if kind == "readonly":
            d.flags.writeable = False
    elif kind in ("step2", "step3"):
        d = body[::step][:n]
        d[...] = values
    elif kind == "negative":
        d = body[:n][::-1]
        d[...] = values
    elif kind == "zero":
        d = np.lib.stride_tricks.as_strided(body[:1], shape=(n,), strides=(0,))
        body[:1] = values[:1] if n else 0
    elif kind == "twod":
        cols = 2 if n % 2 == 0 and n else 1
        rows = max(n // cols, 1)
        full = body[: rows * (cols + 1)].reshape(rows, cols + 1)
        d = full[:, :cols]
        if n:
            d[...] = values.reshape(rows, cols)
    else:
        raise ValueError(kind)
    return Placed(d, base, kind)


def placements(inputs_only: bool = False) -> st.SearchStrategy[str]:
    """A view kind; ``zero`` (aliasing elements) only for inputs."""
    kinds = [k for k in PLACEMENTS if k != "dense" and not (k == "zero" and not inputs_only)]
    return st.sampled_from(kinds)


# ---------------------------------------------------------------------------------------------------- tensors
@st.composite
def tensors(draw: st.DrawFn, el_types: list[ElType] | None = None, max_rank: int = 4, min_rank: int = 0,
            valid: bool = True) -> Tensor:
    """A random ``pymli.Tensor``: rank 0..4, any element type, FX / SA (per tensor or per axis).

    Args:
        el_types: element types to draw from (default: FX_8, FX_16, SA_8, SA_32).
        max_rank, min_rank: rank bounds.
        valid: ``True`` for structs MLI accepts (in-range parameters, strides that fit the buffer);
            ``False`` draws parameters from the whole C field range and beyond.

    Returns:
        The tensor (its data is a dense slice of a sentinel-filled base: ``t._fuzz_base``).
    """
    el = draw(st.sampled_from(el_types or EL_TYPES))
    rank = draw(st.integers(min_rank, max_rank))
    shape = draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank))
    info = np.iinfo(el.dtype)
    kw: dict[str, Any] = {}
    if el.is_fx:
        kw["frac_bits"] = draw(st.integers(0, el.size * 8 - 1) if valid else int_values())
    else:
        per_axis = rank > 0 and draw(st.booleans())
        if per_axis:
            dim = draw(st.integers(0, rank - 1))
            n = shape[dim]
            kw["dim"] = dim
            kw["zero_point"] = np.asarray(draw(st.lists(st.integers(-128, 127), min_size=n, max_size=n)), np.int16)
            kw["scale"] = np.asarray(draw(st.lists(st.integers(1, 32767), min_size=n, max_size=n)), np.int16)
            kw["scale_frac_bits"] = np.asarray(draw(st.lists(st.integers(0, 31), min_size=n, max_size=n)), np.int8)
        else:
            kw["dim"] = -1
            kw["zero_point"] = draw(st.integers(-128, 127) if valid else int_values())
            kw["scale"] = draw(st.integers(1, 32767) if valid else int_values())
            kw["scale_frac_bits"] = draw(st.integers(0, 31) if valid else int_values())
    if rank == 0:
        return Tensor(rank=0, shape=[], mem_stride=[], el_type=el,
                      value=draw(st.integers(int(info.min), int(info.max)) if valid else int_values()), **kw)
    # mem_stride: dense, or padded (every dimension's stride at least the dense one)
    pad = draw(st.lists(st.integers(0, 2), min_size=rank, max_size=rank))
    strides = [0] * rank
    acc = 1
    for i in range(rank - 1, -1, -1):
        strides[i] = acc if i == rank - 1 else acc + pad[i]
        acc = strides[i] * shape[i]
    span = 1 + sum((s - 1) * m for s, m in zip(shape, strides))
    spare = draw(st.integers(0, 3))
    vals = draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=span + spare, max_size=span + spare))
    p = place(np.asarray(vals, el.dtype))
    t = Tensor(data=p.data, capacity=p.data.nbytes, shape=shape, mem_stride=strides, rank=rank, el_type=el, **kw)
    t._fuzz_base = p  # type: ignore[attr-defined]
    return t


def bad_data(el: ElType, values: np.ndarray) -> st.SearchStrategy[Any]:
    """Data containers of the wrong kind for ``el``: another dtype, a list, ``None``, 2-D, 0-d, empty."""
    others = [d for d in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.float32, np.float64, bool)
              if np.dtype(d) != el.dtype]
    v = np.asarray(values).reshape(-1)
    return st.one_of(
        st.sampled_from(others).map(lambda d: v.astype(d)),
        st.just(v.tolist()),
        st.just(None),
        st.just(v.reshape(1, -1)),
        st.just(np.asarray(v[0] if v.size else 0)),
        st.just(v[:0]),
        st.just(b"\x00" * v.nbytes),
        st.just(v.astype(object)),
    )


# ---------------------------------------------------------------------------------------------------- mutations
_TENSOR_FIELDS = ("rank", "shape", "mem_stride", "capacity", "el_type", "frac_bits", "zero_point", "scale",
                  "scale_frac_bits", "dim", "value")


@st.composite
def tensor_field_mutations(draw: st.DrawFn, t: Tensor, junk: bool = False) -> tuple[str, Any]:
    """One ``(field, new value)`` that makes ``t`` a struct the C type cannot hold or MLI must refuse.

    Covers rank beyond MLI_MAX_RANK or negative, shape 0 / negative / beyond int32, mem_stride 0 /
    negative / huge, capacity too small / negative / huge, el_type values outside the C enum, frac_bits
    beyond the container, SA scale beyond int16, scale_frac_bits beyond int8, zero_point beyond int16,
    per-axis arrays of the wrong length, dim >= rank, NaN / inf anywhere, and rank-0 values beyond the
    container. With ``junk`` the value is of the wrong Python type instead (``None``, a string, ...).
    """
    field = draw(st.sampled_from(_TENSOR_FIELDS))
    if junk:
        return field, draw(junk_values())
    rank = int(t.rank) if isinstance(t.rank, int) else 0
    if field == "rank":
        return field, draw(st.one_of(st.sampled_from([-1, 0, 5, 2**31, rank + 1, max(rank - 1, 0)]), odd_values()))
    if field in ("shape", "mem_stride"):
        cur = list(getattr(t, field))
        if not cur or draw(st.booleans()):
            new = draw(st.one_of(st.lists(int_values(), min_size=0, max_size=6), odd_values()))
            return field, new
        i = draw(st.integers(0, len(cur) - 1))
        cur[i] = draw(st.one_of(st.sampled_from([0, -1, -2, 2**31 - 1, 2**31, 2**40, 2**63]), odd_values()))
        return field, cur
    if field == "capacity":
        return field, draw(st.one_of(st.sampled_from([0, -1, 1, 2**31, 2**63, 2**80]), odd_values()))
    if field == "el_type":
        return field, draw(st.one_of(st.sampled_from([e for e in ElType if e is not t.el_type]),
                                     st.sampled_from([999, -1, 0x004, 0x210, 0x220, "FX_8"]), odd_values()))
    if field == "frac_bits":
        return field, draw(st.one_of(st.sampled_from([-1, -129, 8, 16, 32, 127, 128, 2**31, 2**63]), odd_values()))
    if field in ("zero_point", "scale", "scale_frac_bits"):
        lim = {"scale_frac_bits": 128, "zero_point": 32768, "scale": 32768}[field]
        n = int(t.shape[t.dim]) if (t.dim or 0) >= 0 and isinstance(t.dim, int) and t.dim < len(t.shape) else 1
        return field, draw(st.one_of(
            st.sampled_from([lim, -lim - 1, 2**31, -(2**31) - 1, 2**63, 0, -1]),
            odd_values(),
            st.lists(st.integers(-(lim * 2), lim * 2), min_size=0, max_size=n + 2).map(np.asarray),
            st.just(np.full(n, lim, np.int64)),
            st.just(np.asarray([math.nan] * n)),
        ))
    if field == "dim":
        return field, draw(st.one_of(st.sampled_from([rank, rank + 1, 4, 5, -2, 2**31, -(2**31)]), odd_values()))
    # value (rank-0 payload)
    return field, draw(st.one_of(int_values(), odd_values()))


def _enum_fields(cls: type) -> dict[str, type[enum.Enum]]:
    import typing

    hints = typing.get_type_hints(cls)
    return {k: v for k, v in hints.items() if isinstance(v, type) and issubclass(v, enum.Enum)}


@st.composite
def cfg_mutations(draw: st.DrawFn, cfg: Any, junk: bool = False) -> tuple[str, Any]:
    """One ``(dotted field, new value)`` for a capi cfg dataclass: C-range overflow, enum values outside the
    C enum, stride 0, huge padding / dilation / kernel sizes, NaN, inf, wrong list lengths; with ``junk``
    a value of the wrong Python type."""
    fields = []
    for f in dataclasses.fields(cfg):
        v = getattr(cfg, f.name)
        if dataclasses.is_dataclass(v):
            fields += [f"{f.name}.{g.name}" for g in dataclasses.fields(v)]
        else:
            fields.append(f.name)
    name = draw(st.sampled_from(fields))
    if junk:
        return name, draw(junk_values())
    holder = cfg
    parts = name.split(".")
    for p in parts[:-1]:
        holder = getattr(holder, p)
    cur = getattr(holder, parts[-1])
    enums = _enum_fields(type(holder))
    if parts[-1] in enums:
        n = len(enums[parts[-1]])
        return name, draw(st.one_of(st.sampled_from([n, n + 1, 99, -1, 2**31, "MLI_BOGUS"]), odd_values()))
    if isinstance(cur, list):
        return name, draw(st.one_of(
            st.lists(int_values(), min_size=0, max_size=6),
            st.lists(st.sampled_from([0, 1, 2, 3, 4, -1, 5]), min_size=len(cur), max_size=len(cur)),
            odd_values()))
    big = [0, -1, 2**15, 2**16, 2**31 - 1, 2**31, -(2**31), 2**63, 10**12]
    return name, draw(st.one_of(st.sampled_from(big), int_values(), odd_values()))


def set_dotted(obj: Any, name: str, value: Any) -> None:
    """``obj.a.b = value`` for ``name == "a.b"`` (dataclasses are mutable, as C structs are)."""
    parts = name.split(".")
    for p in parts[:-1]:
        obj = getattr(obj, p)
    object.__setattr__(obj, parts[-1], value)


def dense_like(t: Tensor) -> list[int]:
    """Dense strides for ``t``'s shape (for building reference tensors)."""
    return dense_strides(t.shape[: t.rank])


def outcome(fn: Any, args: tuple, kwargs: dict) -> tuple[str, object]:
    """What one fuzzed call did, comparable between two runs of the same call.

    Returns:
        ``("OK", fingerprint)`` (a returned tensor's data bytes and repr, or the result's repr),
        ``(status name, None)`` for an MliError, or ``("<Exception>: message", None)`` for anything
        else escaping (the finding; not upper case, so callers tell it from a status).
    """
    try:
        r = fn(*args, **kwargs)
    except MliError as e:
        return e.status.name, None
    except Exception as e:  # noqa: BLE001 - the finding
        return f"{type(e).__name__}: {str(e)[:120]}", None
    if isinstance(r, Tensor):
        try:
            return "OK", (r.numpy().tobytes(), repr(r))
        except Exception as e:  # noqa: BLE001 - a returned tensor pymli itself cannot read
            return f"result unreadable ({type(e).__name__}: {str(e)[:80]})", None
    return "OK", repr(r)[:500]

"""The entry normaliser every :mod:`pymli.capi` function runs first (issue 13, items 1-3).

C receives structs whose fields have fixed C types and a data *pointer*; Python callers hand in any
object. Before a capi function computes or writes anything, :func:`guard` (applied by the capi
registry to every registered function) brings each argument to the form its C counterpart has, or
refuses it with :class:`~pymli.errors.MliError`:

* **Tensors** (``BAD_TENSOR``): ``None`` where C takes no NULL; every field an integer of its C type
  (``rank`` uint32 and at most ``MLI_MAX_RANK`` for the kernels, ``shape[i]`` uint32, ``mem_stride[i]``
  int32, at most ``MLI_MAX_RANK`` entries each, ``capacity`` uint32, ``frac_bits`` int8, ``dim`` int32,
  per-tensor ``zero_point`` / ``scale`` int16 and ``scale_frac_bits`` int8, per-axis arrays of those
  types, ``el_type`` an :class:`~pymli.formats.ElType`); NumPy integer scalars are accepted and
  converted, bools, floats, strings and other objects are refused. ``data`` is ``None`` (a NULL
  pointer) or a 1-D ``numpy.ndarray`` of the element type's container dtype.
* **Views**: ``data`` may be any 1-D view (positive, negative, zero or non-unit strides). Element
  ``i`` of the C container is ``data[i]``: a non-contiguous input is copied to a contiguous array
  for the call; a non-contiguous output is computed into a contiguous scratch copy and assigned
  back through the view after a successful call (bytes outside the view are never touched). An
  output whose ``data`` is read-only is refused with ``BAD_TENSOR``. A non-contiguous view that
  shares memory with another argument's buffer (other than the very same array) is refused with
  ``BAD_TENSOR``: C has no such layout.
* **cfg structs, LUTs, handles** (``BAD_FUNC_CFG``): ``None`` refused; integer fields within their C
  type (``uint8_t`` strides and paddings of the conv / pool cfgs, ``int32_t`` axes, ...), enum fields
  members of their C enum (an int or C name of a member is converted), NaN, inf, floats and other
  types refused. Scalar and array arguments likewise.
* **Nothing written on failure**: converted or copied arguments are shadows; the caller's structs
  receive the fields the function changed only after it returned successfully. Output cfg structs
  and DMA handles are always filled on a shadow.

Conversions happen on shadow copies, never on the caller's objects; canonical arguments (Python
ints, lists, contiguous arrays of the right dtype) pass through untouched, so the common call pays
only the field checks.

* **Repeated calls** (the memo, below): a capi function registered in two steps (checks and derived
  parameters, then the computation) is planned once per argument snapshot; a later call with the
  same arguments, unchanged in every field the checks read, runs the plan directly. The snapshot is
  exact (a tensor's change counter for its field objects, cfg fields by identity, list entries,
  per-axis array contents, data array metadata, platform and memory budget): a changed struct is
  always checked again.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import functools
import inspect
import marshal
import operator
import typing
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..config import get_memory_budget, get_platform
from ..errors import MliError, Status
from ..formats import ElType, enum_lookup
from ..tensor import MLI_MAX_RANK, Lut, Tensor, touch

__all__ = ["guard", "check_budget", "enum_lookup", "canonical_mov_cfg", "C_RANGES", "CFG_FIELDS", "SCALAR_TYPES", "OUT_TENSORS", "MEMO_SIZE",
           "memo_enabled"]

C_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "uint8": (0, 2**8 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
}
"""Value range of each C integer type a struct field or argument may have."""

_I8, _U8, _I16, _I32, _U32 = (C_RANGES[k] for k in ("int8", "uint8", "int16", "int32", "uint32"))
_BAD_T = Status.BAD_TENSOR
_BAD_C = Status.BAD_FUNC_CFG

_U8x4 = ("uint8", 4)
_U32x4 = ("uint32", 4)
_I32x4 = ("int32", 4)

CFG_FIELDS: dict[str, dict[str, Any]] = {
    "ReluCfg": {"type": "enum"},
    "PreluCfg": {"axis": "int32"},
    "SoftmaxCfg": {"axis": "int32"},
    "L2NormalizeCfg": {"axis": "int32"},
    "FullyConnectedCfg": {"relu": "struct"},
    "Conv2dCfg": {"relu": "struct", **{f: "uint8" for f in (
        "stride_width", "stride_height", "padding_left", "padding_right", "padding_top", "padding_bottom",
        "dilation_width", "dilation_height")}},
    "PoolCfg": {f: "uint8" for f in ("kernel_width", "kernel_height", "stride_width", "stride_height",
                                     "padding_left", "padding_right", "padding_top", "padding_bottom")},
    "RnnDenseCfg": {"inputs_num": "uint8"},
    "RnnCellCfg": {"direction": "enum", "results": "enum", "act": "enum", "scratch_capacity": "uint32"},
    "PermuteCfg": {"perm_dim": _U8x4},
    "Padding2dCfg": {f: "uint8" for f in ("padding_left", "padding_right", "padding_top", "padding_bottom")},
    "ConcatCfg": {"tensors_num": "uint8", "axis": "uint8"},
    "PointToSubtsrCfg": {"start_coord": _U32x4, "coord_num": "uint8", "first_out_dim_size": "uint8"},
    "SubTensorCfg": {"offset": _U32x4, "size": _U32x4, "sub_tensor_rank": "uint32"},
    "ArgmaxCfg": {"axis": "int32", "topk": "int32"},
    "MovCfg": {"offset": _U32x4, "size": _U32x4, "sub_sample_step": _U32x4, "dst_offset": _U32x4,
               "dst_mem_stride": _I32x4, "perm_dim": _U8x4, "padding_pre": _U8x4, "padding_post": _U8x4},
    "MovHandle": {"dma_ch": "int32", "num_ch": "int32", "state": "enum"},
}
"""C type of every field of the capi cfg / handle structs (``mli_types.h``, ``mli_mov_api.h``), by class
name: a C integer type, ``(type, MLI_MAX_RANK)`` for a fixed array, ``"enum"`` or a nested ``"struct"``."""

SCALAR_TYPES: dict[str, str] = {
    "start_dim": "uint32", "scale_idx": "uint32", "zero_idx": "uint32",
    "padleft": "uint8", "padright": "uint8", "padtop": "uint8", "padbot": "uint8",
    "ch_offset": "int32", "num_ch": "int32", "cookie": "int32",
    "perm_dim": "uint8",  # the array argument of mli_mov_cfg_for_permute / mli_mov_cfg_all
}
"""C type of the integer arguments (and of the elements of the array arguments) by parameter name;
array arguments not listed are ``int*`` (int32)."""

OUT_TENSORS = frozenset({"out", "dst", "cell"})
"""Tensor parameters the functions write (LSTM ``cell`` is updated in place)."""

# Functions that read or set only struct fields and data pointers, never element values: their
# tensors' data pass through as given (a view stays the caller's view, e.g. point_to_subtensor).
_STRUCT_ONLY = frozenset({
    "mli_hlp_count_elem_num", "mli_hlp_tensor_element_size", "mli_hlp_tensor_scale_shift",
    "mli_hlp_tensor_scale", "mli_hlp_tensor_zero_offset", "mli_hlp_tensor_data_ptr_cmp",
    "mli_hlp_set_tensor_mem_strides", "mli_hlp_point_to_subtensor", "mli_hlp_create_subtensor",
})

# mli_hlp_set_tensor_mem_strides emulates C's writes past mem_stride[] for ranks up to 8 (see there);
# further out C writes outside the struct (undefined behaviour): refused.
_RANK_LIMIT = {"mli_hlp_set_tensor_mem_strides": 2 * MLI_MAX_RANK}

_EL_BY_VALUE = {int(e): e for e in ElType}
_SCALAR_KINDS = (np.integer,)


def check_budget(nbytes: int, what: str = "buffer") -> None:
    """Refuse an allocation larger than the memory budget (:func:`pymli.config.get_memory_budget`).

    Args:
        nbytes: bytes the allocation would take (any non-negative int, however large).
        what: what is being allocated (for the message).

    Raises:
        MliError: NOT_ENGH_MEM when ``nbytes`` exceeds the budget.
    """
    budget = get_memory_budget()
    if nbytes > budget:
        raise MliError(Status.NOT_ENGH_MEM, f"{what} needs {nbytes} bytes, over the memory budget of {budget} bytes")


# ---------------------------------------------------------------------------------------------- scalars
def _int(v: Any, rng: tuple[int, int], status: Status, what: str) -> int:
    """``v`` as a Python int within ``rng`` (Python or NumPy integer, not bool), else MliError."""
    if type(v) is not int:
        if not isinstance(v, _SCALAR_KINDS) or isinstance(v, (bool, np.bool_)):
            raise MliError(status, f"{what} = {_short(v)} is not an integer")
        v = int(v)
    if not rng[0] <= v <= rng[1]:
        raise MliError(status, f"{what} = {v} is outside its C type [{rng[0]}, {rng[1]}]")
    return v


def _short(v: Any) -> str:
    try:
        s = repr(v)
    except Exception:  # noqa: BLE001 - any object may come in; its repr may fail too
        s = f"<{type(v).__name__}>"
    return s if len(s) <= 60 else s[:57] + "..."


def _int_list(v: Any, rng: tuple[int, int], n: int | None, status: Status, what: str) -> list[int]:
    """A C integer array given as a list / tuple / 1-D integer ndarray, as a list of ints."""
    if isinstance(v, np.ndarray):
        if v.ndim != 1 or v.dtype.kind not in "iu":
            raise MliError(status, f"{what} must be a 1-D integer array, not {v.dtype} of shape {v.shape}")
        v = v.tolist()
    elif not isinstance(v, (list, tuple)):
        raise MliError(status, f"{what} = {_short(v)} is not a sequence of integers")
    if n is not None and len(v) > n:
        raise MliError(status, f"{what} has {len(v)} entries; the C array holds {n}")
    return [_int(x, rng, status, f"{what}[{i}]") for i, x in enumerate(v)]


def _is_int_list(a: Any) -> bool:
    return type(a) is list and all(type(x) is int for x in a)


# ---------------------------------------------------------------------------------------------- tensors
def _quant_field(t: Tensor, name: str, per_axis: bool, rng: tuple[int, int], dtype: type, buffers: bool) -> Any:
    """An SA parameter container (``zero_point`` / ``scale`` / ``scale_frac_bits``) in its C form.

    A per-tensor parameter of an input is the value in the container (``None``, a NULL container,
    reads as 0; a one-element array as its element); per-axis parameters are arrays (a list becomes
    an array of the C type) or an int (a pointer value the checks refuse). Output containers the
    function fills (``buffers``) may also be ``None`` or arrays whatever ``dim`` says.
    """
    v = getattr(t, name)
    if v is None:
        if buffers:
            return None
        if per_axis:
            raise MliError(_BAD_T, f"per-axis {name} is NULL")
        return 0
    if isinstance(v, np.ndarray):
        if v.dtype.kind not in "iu":
            raise MliError(_BAD_T, f"{name} array of dtype {v.dtype} is not an integer array")
        if v.size and v.dtype.itemsize > np.dtype(dtype).itemsize and not (rng[0] <= v.min() and v.max() <= rng[1]):
            raise MliError(_BAD_T, f"{name} values outside their C type [{rng[0]}, {rng[1]}]")
        if per_axis or buffers:
            return v
        if v.size != 1:
            raise MliError(_BAD_T, f"per-tensor {name} must be one integer, not an array of {v.size}")
        return int(v.reshape(-1)[0])
    if isinstance(v, (list, tuple)):
        arr = np.asarray(_int_list(v, rng, None, _BAD_T, name), dtype=dtype)
        if per_axis or buffers:
            return arr
        if arr.size != 1:
            raise MliError(_BAD_T, f"per-tensor {name} must be one integer, not a list of {arr.size}")
        return int(arr[0])
    return _int(v, rng, _BAD_T, name)


def _tensor_fields(t: Tensor, rank_limit: int, buffers: bool = False) -> dict[str, Any]:
    """Every struct field of ``t`` in its C form; raises BAD_TENSOR for a value no C field can hold."""
    rank = _int(t.rank, _U32, _BAD_T, "rank")
    if rank > rank_limit:
        raise MliError(_BAD_T, f"rank {rank} > MLI_MAX_RANK ({MLI_MAX_RANK})")
    shape = t.shape
    if not _is_int_list(shape) or len(shape) > MLI_MAX_RANK or not all(_U32[0] <= s <= _U32[1] for s in shape):
        shape = _int_list(shape, _U32, MLI_MAX_RANK, _BAD_T, "shape")
    ms = t.mem_stride
    if not _is_int_list(ms) or len(ms) > MLI_MAX_RANK or not all(_I32[0] <= s <= _I32[1] for s in ms):
        ms = _int_list(ms, _I32, MLI_MAX_RANK, _BAD_T, "mem_stride")
    el = t.el_type
    if type(el) is not ElType:
        if isinstance(el, (bool, np.bool_)) or not isinstance(el, (int, np.integer)) or int(el) not in _EL_BY_VALUE:
            raise MliError(_BAD_T, f"el_type = {_short(el)} is not an mli_element_type")
        el = _EL_BY_VALUE[int(el)]
    dim = _int(t.dim, _I32, _BAD_T, "dim")
    per_axis = el.is_sa and dim >= 0
    out = {
        "rank": rank, "shape": shape, "mem_stride": ms, "el_type": el, "dim": dim,
        "capacity": _int(t.capacity, _U32, _BAD_T, "capacity"),
        "frac_bits": _int(t.frac_bits, _I8, _BAD_T, "frac_bits"),
        "zero_point": _quant_field(t, "zero_point", per_axis, _I16, np.int16, buffers),
        "scale": _quant_field(t, "scale", per_axis, _I16, np.int16, buffers),
        "scale_frac_bits": _quant_field(t, "scale_frac_bits", per_axis, _I8, np.int8, buffers),
    }
    if rank == 0:
        out["value"] = _value(t.value, el)
    return out


def _value(v: Any, el: ElType) -> Any:
    """The rank-0 value as the C union stores it (an int of the container, wrapped; a float for FP)."""
    if el.is_fp and isinstance(v, (float, np.floating, int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return float(v)
    v = _int(v, (-(2**31), 2**32 - 1), _BAD_T, "value")
    if el.supported and el.dtype.kind == "i":
        bits = el.dtype.itemsize * 8
        w = ((v + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))
        if w != v:
            return w
    return v


def _check_data(d: Any, el: ElType, name: str) -> np.ndarray | None:
    if d is None:
        return None
    if not isinstance(d, np.ndarray):
        raise MliError(_BAD_T, f"{name}.data must be a NumPy array (or None), not {type(d).__name__}")
    if d.ndim != 1:
        raise MliError(_BAD_T, f"{name}.data must be 1-D, not of shape {d.shape}")
    if d.dtype.kind not in "biuf":
        raise MliError(_BAD_T, f"{name}.data of dtype {d.dtype} holds no C elements")
    return d


def _as_el(d: np.ndarray, el: ElType) -> np.ndarray:
    """A contiguous array of another dtype read as ``el``'s containers (C casts the data pointer): a view
    sharing ``d``'s memory over its whole elements."""
    it = el.dtype.itemsize
    b = d.view(np.uint8)
    return b[: b.shape[0] - b.shape[0] % it].view(el.dtype)


class _Call:
    """The shadows of one call: what to copy back to the caller's objects after success."""

    __slots__ = ("back", "scratch", "views")

    def __init__(self) -> None:
        self.back: list[tuple[Any, Any, dict[str, Any]]] = []   # (caller's object, shadow, fields given)
        self.scratch: list[tuple[np.ndarray, np.ndarray, bytes]] = []  # (caller's view, contiguous copy, before)
        self.views: dict[int, np.ndarray] = {}  # id(caller's view) -> its contiguous copy

    def copy_of(self, d: np.ndarray, others: list[np.ndarray]) -> np.ndarray:
        c = self.views.get(id(d))
        if c is None:
            for o in others:
                if o is not d and np.may_share_memory(o, d):
                    raise MliError(_BAD_T, "a non-contiguous data view overlaps another argument's buffer")
            c = np.ascontiguousarray(d)
            if c is d:
                c = d.copy()
            self.views[id(d)] = c
            self.scratch.append((d, c, c.tobytes()))
        return c

    def commit(self) -> None:
        for view, c, before in self.scratch:
            if c.tobytes() != before:
                view[...] = c
        for obj, shadow, given in self.back:
            for k, v in shadow.__dict__.items():
                if k.startswith("_"):
                    continue
                if k not in given or given[k] is not v:
                    if k == "data" and any(v is c for _, c, _ in self.scratch):
                        continue
                    object.__setattr__(obj, k, v)
                    if isinstance(obj, Tensor):
                        touch(obj)


def _tensor(call: _Call, t: Any, name: str, out: bool, rank_limit: int, copy_views: bool,
            arrays: list[np.ndarray], null_ok: bool = False, param_buffers: bool = False) -> Any:
    if t is None:
        if null_ok:
            return None
        raise MliError(_BAD_T, f"{name} is NULL")
    if not isinstance(t, Tensor):
        raise MliError(_BAD_T, f"{name} is a {type(t).__name__}, not a Tensor")
    fields = _tensor_fields(t, rank_limit, out and param_buffers)
    d = _check_data(t.data, fields["el_type"], name)
    new_data = d
    if d is not None:
        el = fields["el_type"]
        if copy_views:
            if out and not d.flags.writeable:
                raise MliError(_BAD_T, f"{name}.data is read-only")
            if not d.flags.c_contiguous:
                new_data = call.copy_of(d, arrays)
        # An input of another dtype is read as its bytes (C casts the pointer); an output keeps its
        # array: the function may set its el_type (move, concat, ...) and writes by value.
        if el.supported and d.dtype != el.dtype and not out:
            if not new_data.flags.c_contiguous:
                raise MliError(_BAD_T, f"{name}.data: a non-contiguous {d.dtype} view cannot be read as {el.c_name}")
            new_data = _as_el(new_data, el)
    td = t.__dict__
    changed = new_data is not d or any(td.get(k) is not v for k, v in fields.items())
    if not changed:
        return t
    shadow = copy.copy(t)
    sd = shadow.__dict__
    sd.update(fields)
    sd["data"] = new_data
    touch(shadow)
    call.back.append((t, shadow, dict(sd)))
    return shadow


def _lut(call: _Call, lut: Any, name: str, out: bool) -> Lut:
    if lut is None:
        raise MliError(_BAD_C, f"{name} is NULL")
    if not isinstance(lut, Lut):
        raise MliError(_BAD_C, f"{name} is a {type(lut).__name__}, not a Lut")
    el = lut.type
    if type(el) is not ElType:
        if isinstance(el, (bool, np.bool_)) or not isinstance(el, (int, np.integer)) or int(el) not in _EL_BY_VALUE:
            raise MliError(_BAD_C, f"{name}.type = {_short(el)} is not an mli_element_type")
        el = _EL_BY_VALUE[int(el)]
    fields = {"type": el, "capacity": _int(lut.capacity, _U32, _BAD_C, f"{name}.capacity")}
    for k in ("length", "in_frac_bits", "out_frac_bits", "input_offset", "output_offset"):
        fields[k] = _int(getattr(lut, k), _I32, _BAD_C, f"{name}.{k}")
    d = lut.data
    if d is not None:
        if not isinstance(d, np.ndarray) or d.ndim != 1 or d.dtype.kind not in "iuf":
            raise MliError(_BAD_C, f"{name}.data must be a 1-D numeric NumPy array (or None)")
        if not d.flags.c_contiguous or (out and not d.flags.writeable):
            raise MliError(_BAD_C, f"{name}.data must be a contiguous{' writeable' if out else ''} array")
    ld = lut.__dict__
    if all(ld.get(k) is v for k, v in fields.items()) and not out:
        return lut
    shadow = copy.copy(lut)
    shadow.__dict__.update(fields)
    call.back.append((lut, shadow, dict(shadow.__dict__)))
    return shadow


@functools.lru_cache(maxsize=None)
def _enum_types(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {k: v for k, v in hints.items() if isinstance(v, type) and issubclass(v, (enum.Enum,))} | {
        k: v for k, v in hints.items() if isinstance(v, type) and dataclasses.is_dataclass(v)}


def _enum_member(cls: type[enum.Enum], v: Any, what: str) -> enum.Enum:
    m = enum_lookup(cls, v)
    if m is None:
        raise MliError(_BAD_C, f"{what} = {_short(v)} is not a member of {cls.__name__}")
    return m


def _cfg_fields(cfg: Any, what: str) -> dict[str, Any]:
    spec = CFG_FIELDS[type(cfg).__name__]
    types = _enum_types(type(cfg))
    out: dict[str, Any] = {}
    for k, ct in spec.items():
        v = getattr(cfg, k)
        if ct == "enum":
            out[k] = _enum_member(types[k], v, f"{what}.{k}")
        elif ct == "struct":
            if not isinstance(v, types[k]):
                raise MliError(_BAD_C, f"{what}.{k} is a {type(v).__name__}, not a {types[k].__name__}")
            sub = _cfg_fields(v, f"{what}.{k}")
            if any(getattr(v, f) is not x for f, x in sub.items()):
                v = copy.copy(v)
                for f, x in sub.items():
                    object.__setattr__(v, f, x)
            out[k] = v
        elif isinstance(ct, tuple):
            out[k] = v if _is_int_list(v) and len(v) <= ct[1] and all(
                C_RANGES[ct[0]][0] <= x <= C_RANGES[ct[0]][1] for x in v) else _int_list(
                v, C_RANGES[ct[0]], ct[1], _BAD_C, f"{what}.{k}")
        else:
            out[k] = _int(v, C_RANGES[ct], _BAD_C, f"{what}.{k}")
    return out


def _cfg(call: _Call, cfg: Any, name: str, cls_name: str, always_shadow: bool) -> Any:
    if cfg is None:
        raise MliError(_BAD_C, f"{name} is NULL")
    if type(cfg).__name__ != cls_name or cls_name not in CFG_FIELDS:
        raise MliError(_BAD_C, f"{name} is a {type(cfg).__name__}, not a {cls_name}")
    fields = _cfg_fields(cfg, name)
    if not always_shadow and all(getattr(cfg, k) is v for k, v in fields.items()):
        return cfg
    shadow = copy.copy(cfg)
    for k, v in fields.items():
        object.__setattr__(shadow, k, list(v) if isinstance(v, list) else v)
    call.back.append((cfg, shadow, dict(shadow.__dict__)))
    return shadow


# ---------------------------------------------------------------------------------------------- fast path
# Predicates that accept only arguments the normaliser above would pass through unchanged (canonical
# Python ints and lists within range, contiguous arrays of the element type): such a call skips the
# normaliser. Anything else, valid or not, takes the full path, which alone decides. The predicates
# keep no memo: their outcome depends only on the argument itself (the memo below replays only
# calls they accepted).
_DT = {e: e.dtype for e in ElType if e.supported}
_SA = frozenset(e for e in ElType if e.is_sa)
_DT16, _DT8 = np.dtype(np.int16), np.dtype(np.int8)
_NDARRAY = np.ndarray


def _fast_tensor(t: Any, limit: int, out: bool, copies: bool, buffers: bool) -> bool:
    if type(t) is not Tensor:
        return False
    d = t.__dict__
    r, sh, ms, el = d["rank"], d["shape"], d["mem_stride"], d["el_type"]
    if not (type(r) is int and 0 < r <= limit and type(sh) is list and type(ms) is list
            and len(sh) <= 4 and len(ms) <= 4 and type(el) is ElType):
        return False
    for x in sh:
        if type(x) is not int or x < 0 or x > 4294967295:
            return False
    for x in ms:
        if type(x) is not int or x < -2147483648 or x > 2147483647:
            return False
    c, f, dim = d["capacity"], d["frac_bits"], d["dim"]
    if not (type(c) is int and 0 <= c <= 4294967295 and type(f) is int and -128 <= f <= 127
            and type(dim) is int and -2147483648 <= dim <= 2147483647):
        return False
    zp, sc, sfb = d["zero_point"], d["scale"], d["scale_frac_bits"]
    if el in _SA and dim >= 0:
        if not (type(zp) is _NDARRAY and type(sc) is _NDARRAY and type(sfb) is _NDARRAY
                and zp.dtype is _DT16 and sc.dtype is _DT16 and sfb.dtype is _DT8):
            return False
    elif not (type(zp) is int and type(sc) is int and type(sfb) is int and -32768 <= zp <= 32767
              and -32768 <= sc <= 32767 and -128 <= sfb <= 127):
        return False
    data = d["data"]
    if data is None:
        return True
    if type(data) is not _NDARRAY or data.ndim != 1 or data.dtype is not _DT.get(el):
        return False
    if copies:
        fl = data.flags
        if not fl.c_contiguous or (out and not fl.writeable):
            return False
    return True


@functools.lru_cache(maxsize=None)
def _fast_spec(cls: type) -> tuple[tuple[str, str, Any], ...]:
    """Per field of a cfg class: ``(name, "int" | "ints" | "enum" | "struct", range / class)``."""
    types = _enum_types(cls)
    out = []
    for k, ct in CFG_FIELDS[cls.__name__].items():
        if ct == "enum":
            out.append((k, "enum", types[k]))
        elif ct == "struct":
            out.append((k, "struct", types[k]))
        elif isinstance(ct, tuple):
            out.append((k, "ints", C_RANGES[ct[0]]))
        else:
            out.append((k, "int", C_RANGES[ct]))
    return tuple(out)


def _fast_cfg(cfg: Any, cls: type) -> bool:
    if type(cfg) is not cls:
        return False
    for k, kind, x in _fast_spec(cls):
        v = getattr(cfg, k)
        if kind == "int":
            if type(v) is not int or v < x[0] or v > x[1]:
                return False
        elif kind == "enum":
            if type(v) is not x:
                return False
        elif kind == "struct":
            if not _fast_cfg(v, x):
                return False
        elif not _fast_ints(v, x, MLI_MAX_RANK):
            return False
    return True


# The data-movement structs: the capi functions that fill them (``mli_mov_cfg_for_*``, the handle
# calls) compute every field before assigning any, so a canonical struct needs no shadow.
_INT_ONLY = {int}
_MOV_U32 = operator.attrgetter("offset", "size", "sub_sample_step", "dst_offset")
_MOV_U8 = operator.attrgetter("perm_dim", "padding_pre", "padding_post")


def canonical_mov_cfg(cfg: Any) -> bool:
    """A ``MovCfg`` the entry normaliser would pass unchanged.

    Args:
        cfg: any object.

    Returns:
        True when ``cfg`` is a ``MovCfg`` whose eight arrays are lists of at most ``MLI_MAX_RANK``
        Python ints within their C types (``uint32_t``, ``int32_t`` strides, ``uint8_t``).
    """
    if type(cfg).__name__ != "MovCfg":
        return False
    try:
        u32, u8, i32 = _MOV_U32(cfg), _MOV_U8(cfg), cfg.dst_mem_stride
    except AttributeError:
        return False
    for v in (*u32, *u8, i32):
        if type(v) is not list or len(v) > MLI_MAX_RANK:
            return False
    # Concatenated once: one type test and one min / max per C type (0 keeps the lists non-empty).
    a32, a8 = [0, *u32[0], *u32[1], *u32[2], *u32[3]], [0, *u8[0], *u8[1], *u8[2]]
    if set(map(type, a32)) != _INT_ONLY or set(map(type, a8)) != _INT_ONLY:
        return False
    if min(a32) < 0 or max(a32) > 4294967295 or min(a8) < 0 or max(a8) > 255:
        return False
    return not i32 or (set(map(type, i32)) == _INT_ONLY and min(i32) >= -2147483648 and max(i32) <= 2147483647)


def _fast_mov_handle(h: Any) -> bool:
    """A ``MovHandle`` with Python int channels within int32 and a ``MovState`` member."""
    if type(h).__name__ != "MovHandle":
        return False
    d = getattr(h, "__dict__", None)
    if d is None:
        return False
    ch, n, st = d.get("dma_ch"), d.get("num_ch"), d.get("state")
    return (type(ch) is int and type(n) is int and -2147483648 <= ch <= 2147483647 and -2147483648 <= n <= 2147483647
            and type(st) is _enum_types(type(h)).get("state"))


def _fast_ints(v: Any, rng: tuple[int, int], n: int | None) -> bool:
    if type(v) is not list or (n is not None and len(v) > n):
        return False
    for x in v:
        if type(x) is not int or x < rng[0] or x > rng[1]:
            return False
    return True


def _fast_lut(lut: Any) -> bool:
    if type(lut) is not Lut:
        return False
    d = lut.__dict__
    if type(d["type"]) is not ElType or type(d["capacity"]) is not int or not 0 <= d["capacity"] <= 4294967295:
        return False
    for k in ("length", "in_frac_bits", "out_frac_bits", "input_offset", "output_offset"):
        v = d[k]
        if type(v) is not int or v < -2147483648 or v > 2147483647:
            return False
    data = d["data"]
    return data is None or (type(data) is _NDARRAY and data.ndim == 1 and data.dtype.kind in "iuf"
                            and data.flags.c_contiguous)


# ---------------------------------------------------------------------------------------------- the memo
# A capi function may come in two steps (its ``__mli_plan__``): ``plan(*args)`` runs every check and
# derives the parameters, reading only struct fields, data *metadata* (which array, its dtype, length,
# strides, writeability) and the configuration (platform, memory budget); it returns ``run(*args)``,
# which reads the element values and writes the outputs. The guard keeps the ``run`` of a call whose
# arguments passed the fast path, under a snapshot of everything ``plan`` may read: a later call
# whose snapshot is the same skips the normaliser and ``plan``. A tensor's field objects are seen
# through its change counter (``Tensor._version``: a new number from one process-wide counter on
# every assignment of another object, so a counter seen before is that tensor with those very field
# objects, data array included); cfg struct and LUT fields are compared by identity (an equal value
# of another type, ``3.0`` for ``3``, never matches). What no assignment shows is compared as well:
# list entries one by one (``t.shape[0] = 5`` is seen), per-axis parameter arrays by content, data
# arrays' shape, strides, dtype (by identity: an equal dtype object of another identity does not
# match) and writeability. The memo holds no data array (LUT data arrays by weak reference only).
# The snapshot code is compiled once per function (tensors and cfg structs inline: no call per
# argument on the repeated calls' path).
MEMO_SIZE = 32
"""Snapshots kept per function (the oldest half is dropped when full)."""

_memo_on: list[bool] = [True]
_LFIELDS = operator.itemgetter("type", "capacity", "length", "in_frac_bits", "out_frac_bits", "input_offset",
                               "output_offset", "data")
_same = operator.is_
_marshal = marshal.dumps


class _NoMemo(Exception):
    """An argument the snapshot cannot describe: the call takes the plain path."""


def memo_enabled(on: bool | None = None) -> bool:
    """Switch the per-signature memo of the planned capi functions on or off (for benchmarks, tests).

    Args:
        on: the new state; None leaves it.

    Returns:
        The state before the call.
    """
    was = _memo_on[0]
    if on is not None:
        _memo_on[0] = bool(on)
    return was


def _snap_data(data: Any, ident: list[Any], vals: list[Any], refs: list[Any]) -> None:
    if data is None:
        refs.append(None)
    elif type(data) is _NDARRAY:
        refs.append(data)
        ident.append(data.dtype)
        vals.append((data.shape, data.strides, data.flags.writeable))
    else:
        raise _NoMemo


# The snapshot of a tensor, as source: the guard inlines it into the snapshot function it compiles
# per capi function (_snapshot_fn; no call per tensor on the repeated calls' path), and _snap_tensor
# is the same code as a function (for optional tensors). The tensor's change counter
# (``Tensor._version``, tensor.py) stands for every field object: a counter seen before is that
# tensor with the very field objects it had then (data array included). What the counter cannot see
# is compared: the lists' entries (see _snapshot_fn), the data array's dtype (identity), shape,
# strides and writeability, per-axis arrays' shape and content. Per-axis arrays of other dtypes than
# int16 / int16 / int8 (and mixed ints and arrays) are refused by the fast path: such a tensor takes
# the plain path without a snapshot. The fields are read as attributes (a deleted field gives a new
# counter, so no entry matches it).
_TENSOR_SNAP = """
    if type({t}) is not Tensor:
        raise _NoMemo
    {sh}, {ms}, data, zp, sc, sfb = {t}.shape, {t}.mem_stride, {t}.data, {t}.zero_point, {t}.scale, {t}.scale_frac_bits
    if data is None:
        {d}, {v} = None, {t}._version
    else:  # an ndarray: any other object is refused by the fast path, so its counter is in no entry
        {d}, {v} = data.dtype, ({t}._version, data.shape, data.strides, data.flags.writeable)
    if type(zp) is int and type(sc) is int and type(sfb) is int:
        {p} = None
    else:
        if not (type(zp) is _NDARRAY and type(sc) is _NDARRAY and type(sfb) is _NDARRAY
                and zp.dtype is _DT16 and sc.dtype is _DT16 and sfb.dtype is _DT8):
            raise _NoMemo
        {p} = (zp.shape, sc.shape, sfb.shape, zp.tobytes(), sc.tobytes(), sfb.tobytes())
"""
"""The snapshot of one tensor: its list fields in ``{sh}`` and ``{ms}``, its data array's dtype (compared
by identity) in ``{d}``, and the values compared by equality in ``{v}`` and ``{p}`` (local names: the
compiled snapshot gathers them once at its end)."""


def _compile(src: str, name: str, names: dict[str, Any]) -> Callable[..., Any]:
    """The function ``name`` that ``src`` defines, with this module's globals and ``names``."""
    ns = dict(globals(), **names)
    exec(compile(src, f"<pymli.checks.entry {name}>", "exec"), ns)  # noqa: S102 - our own template
    return ns[name]


_snap_tensor = _compile("def _snap_tensor(t, ident, vals, refs, lists):"
                        + _TENSOR_SNAP.format(t="t", sh="sh", ms="ms", d="d", v="v", p="p")
                        + "    ident.append(d)\n    vals += (v, p)\n    lists += (sh, ms)\n", "_snap_tensor", {})


@functools.lru_cache(maxsize=None)
def _cfg_snapper(cls: type) -> tuple[Callable[[Any], tuple[Any, ...]], Callable[[Any], tuple[Any, ...]] | None]:
    """The snapshot of a cfg struct of class ``cls``, compiled once per class: ``(fields, lists)``.

    ``fields(cfg)`` reads at once the class and every field, nested structs' fields included (by
    dotted name; the nested struct itself is one of the values), all compared by identity; ``lists``
    (None when the class has no list field) reads the list fields at once, whose entries are compared
    as the tensors' lists are (see :func:`_snapshot_fn`).
    """
    def paths(c: type, prefix: str) -> list[str]:
        out = []
        for k, kind, x in _fast_spec(c):
            out.append(prefix + k)
            if kind == "struct":
                out += paths(x, f"{prefix}{k}.")
        return out

    fields = operator.attrgetter("__class__", *paths(cls, ""))
    names = [k for k, kind, _ in _fast_spec(cls) if kind == "ints"]
    if not names:
        return fields, None
    return fields, operator.attrgetter(*names, *names) if len(names) == 1 else operator.attrgetter(*names)


class _CfgClasses(dict):  # type: ignore[type-arg]
    """The snapshots (:func:`_cfg_snapper`) of the classes named like one cfg parameter's met so far."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def add(self, cls: type) -> tuple[Callable[..., Any], Any]:
        """The snapshot of ``cls``, kept; raises _NoMemo for a class of another name."""
        if cls.__name__ != self.name or self.name not in CFG_FIELDS:
            raise _NoMemo
        snap = self[cls] = _cfg_snapper(cls)
        return snap


def _snap_lut(lut: Any, ident: list[Any], vals: list[Any], refs: list[Any], lists: list[Any]) -> None:
    if type(lut) is not Lut:
        raise _NoMemo
    f = _LFIELDS(lut.__dict__)
    ident += f[:7]
    _snap_data(f[7], ident, vals, refs)


def _snapper(kind: str) -> Callable[[Any, list[Any], list[Any], list[Any], list[Any]], None]:
    """The snapshot of one parameter kind of the plan (see :func:`_kind`) but tensors and cfg structs,
    which :func:`_snapshot_fn` inlines."""
    if kind == "tensor?":
        return lambda a, ident, vals, refs, lists: (ident.append(None) if a is None
                                                    else _snap_tensor(a, ident, vals, refs, lists))
    if kind == "lut":
        return _snap_lut
    if kind in ("int", "any"):
        def scalar(a: Any, ident: list[Any], vals: list[Any], refs: list[Any], lists: list[Any]) -> None:
            if a is not None and (kind == "any" or type(a) is not int):
                raise _NoMemo
            ident.append(a)
        return scalar

    def refuse(a: Any, ident: list[Any], vals: list[Any], refs: list[Any], lists: list[Any]) -> None:
        raise _NoMemo
    return refuse


def _snapshot_fn(kinds: list[str]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """The snapshot ``(ident, vals, refs)`` of a call's arguments (objects compared by identity, values
    by equality, data arrays of LUTs by weak reference) and its memo key (the arguments' ids), as
    ``(ident, vals, refs, key)``, compiled for one parameter list: tensors
    and cfg structs inline, other kinds through their snapper; raises (_NoMemo, KeyError,
    AttributeError, ValueError from marshal, or whatever an odd object's attribute raises) for an
    argument no snapshot describes.

    The list fields (tensors' shape and mem_stride, cfg arrays) are gathered (the inlined tensors'
    by name, the others in a list after them), then serialised at once with :mod:`marshal` (format 2:
    no back-references) into the last value: the bytes hold each list's length and every entry's type
    and value (``3``, ``3.0``, ``True`` and ``np.int64(3)`` differ; an object marshal cannot write
    raises ValueError).
    """
    names: dict[str, Any] = {"get_platform": get_platform, "get_memory_budget": get_memory_budget}
    body = []
    # the inlined tensors' locals, gathered once at the end (before what the other arguments add)
    inline: dict[str, list[str]] = {"lists": [], "ident": [], "vals": []}
    for i, kind in enumerate(kinds):
        a = f"a{i}"
        if kind == "tensor":
            body.append(_TENSOR_SNAP.format(t=a, sh=f"sh{i}", ms=f"ms{i}", d=f"d{i}", v=f"v{i}", p=f"p{i}"))
            inline["lists"] += (f"sh{i}", f"ms{i}")
            inline["ident"].append(f"d{i}")
            inline["vals"] += (f"v{i}", f"p{i}")
        elif kind.startswith("cfg:"):
            names[f"c{i}"] = _CfgClasses(kind[4:])
            body.append(_CFG_SNAP.format(a=a, classes=f"c{i}"))
        else:
            names[f"s{i}"] = _snapper(kind)
            body.append(f"    s{i}({a}, ident, vals, refs, lists)\n")
    def items(k: str) -> str:
        return "".join(f"{v}, " for v in inline[k])
    src = (f"def snapshot(args):\n    {', '.join(f'a{i}' for i in range(len(kinds)))}, = args\n"
           "    ident = []\n    vals = []\n    refs = []\n    lists = []\n"
           + "".join(body)
           + f"    return ([get_platform(), get_memory_budget(), {items('ident')}*ident], "
           f"[{items('vals')}*vals, _marshal([{items('lists')}lists], 2)], refs, "
           f"({''.join(f'id(a{i}), ' for i in range(len(kinds)))}))\n")
    return _compile(src, "snapshot", names)


# A cfg struct's snapshot, as source (see _TENSOR_SNAP): its class's (_cfg_snapper) by the class.
_CFG_SNAP = """
    get, get_lists = {classes}.get(type({a})) or {classes}.add(type({a}))
    ident += get({a})
    if get_lists is not None:
        lists += get_lists({a})
"""


def _no_array() -> None:
    """The stand-in of a weak reference for a NULL data pointer in a memo entry."""
    return None


def _weak(d: np.ndarray | None) -> Callable[[], Any]:
    return _no_array if d is None else weakref.ref(d)


_CALL = operator.call


# ---------------------------------------------------------------------------------------------- the plan
def _kind(name: str, ann: Any) -> str:
    a = ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann))
    if a == "Tensor":
        return "tensor"
    if a.replace(" ", "") in ("Tensor|None", "Optional[Tensor]"):
        return "tensor?"
    if a in ("list[Tensor]", "Sequence[Tensor]"):
        return "tensors"
    if a == "Lut":
        return "lut"
    if a == "int":
        return "int"
    if a == "Sequence[int]":
        return "ints"
    if a in CFG_FIELDS:
        return "cfg:" + a
    return "any"


def _fast_check(p: str, kind: str, name: str, limit: int, copies: bool, buffers: bool, out_lut: bool,
                rng: tuple[int, int] | None) -> Callable[[Any], bool]:
    """The fast-path predicate of one parameter (see :func:`_fast_tensor`)."""
    out = p in OUT_TENSORS
    if kind == "tensor":
        return lambda a: _fast_tensor(a, limit, out, copies, buffers and out)
    if kind == "tensor?":
        return lambda a: a is None or _fast_tensor(a, limit, False, copies, False)
    if kind == "tensors":
        return lambda a: type(a) is list and all(_fast_tensor(t, limit, False, copies, False) for t in a)
    if kind == "lut":
        return (lambda a: False) if out_lut else _fast_lut
    if kind.startswith("cfg:"):
        cls_name = kind[4:]
        if cls_name == "MovCfg":
            return canonical_mov_cfg
        if cls_name == "MovHandle":
            return _fast_mov_handle
        return lambda a: a is not None and type(a).__name__ == cls_name and _fast_cfg(a, type(a))
    if kind == "int":
        lo, hi = rng  # type: ignore[misc]
        return lambda a: type(a) is int and lo <= a <= hi
    if kind == "ints":
        return lambda a: a is None or _fast_ints(a, rng, None)  # type: ignore[arg-type]
    return lambda a: a is None or callable(a)


def guard(fn: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
    """Wrap a capi function so that its arguments are normalised (module docstring) before it runs.

    Args:
        fn: the facade function (parameters annotated ``Tensor``, ``Lut``, cfg class names, ``int``,
            ``Sequence[int]``...).
        name: its C name (default ``fn.__name__``).

    Returns:
        The wrapper (same name, docstring and signature); ``fn`` itself when it takes no argument.
    """
    name = name or fn.__name__
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    if not params:
        return fn
    plan = [(p.name, _kind(p.name, p.annotation)) for p in params]
    copy_views = name not in _STRUCT_ONLY
    status_fn = sig.return_annotation in ("Status", Status)
    rank_limit = _RANK_LIMIT.get(name, MLI_MAX_RANK if status_fn else _U32[1])
    out_lut = name.endswith("_create_lut")
    buffers = name.startswith(("mli_mov_", "mli_hlp_")) or "permute" in name or "concat" in name
    n = len(plan)
    arr_types = {p: C_RANGES[SCALAR_TYPES.get(p, "int32")] for p, k in plan if k in ("int", "ints")}

    def normalise(args: tuple[Any, ...]) -> tuple[list[Any], _Call]:
        call = _Call()
        arrays = []
        if copy_views:
            for a in args:
                if isinstance(a, Tensor) and isinstance(a.data, np.ndarray):
                    arrays.append(a.data)
                elif isinstance(a, (list, tuple)):
                    arrays += [t.data for t in a if isinstance(t, Tensor) and isinstance(t.data, np.ndarray)]
        new = list(args)
        for i, (p, kind) in enumerate(plan):
            a = args[i]
            if kind == "tensor":
                new[i] = _tensor(call, a, p, p in OUT_TENSORS, rank_limit, copy_views, arrays,
                                 param_buffers=buffers)
            elif kind == "tensor?":
                new[i] = _tensor(call, a, p, False, rank_limit, copy_views, arrays, null_ok=True)
            elif kind == "tensors":
                if not isinstance(a, (list, tuple)):
                    raise MliError(_BAD_T, f"{p} must be a list of tensors, not {type(a).__name__}")
                new[i] = [_tensor(call, t, f"{p}[{j}]", False, rank_limit, copy_views, arrays)
                          for j, t in enumerate(a)]
            elif kind == "lut":
                new[i] = _lut(call, a, p, out_lut)
            elif kind.startswith("cfg:"):
                cls_name = kind[4:]
                new[i] = _cfg(call, a, p, cls_name, cls_name in ("MovCfg", "MovHandle"))
            elif kind == "int":
                new[i] = _int(a, arr_types[p], _BAD_C, p)
            elif kind == "ints":
                if a is not None:
                    new[i] = _int_list(a, arr_types[p], None, _BAD_C, p)
            elif p == "cb" and a is not None and not callable(a):
                raise MliError(_BAD_C, f"{p} must be callable or None")
        return new, call

    fast = [(i, _fast_check(p, kind, name, rank_limit, copy_views, buffers, out_lut, arr_types.get(p)))
            for i, (p, kind) in enumerate(plan)]
    planner = getattr(fn, "__mli_plan__", None)
    snapshot: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None = None  # compiled on the first call
    memo: dict[tuple[int, ...], tuple[Any, ...]] = {}

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != n:
            args = sig.bind(*args, **kwargs).args
        nonlocal snapshot
        key = None
        if planner is not None and _memo_on[0]:
            if snapshot is None:
                snapshot = _snapshot_fn([kind for _, kind in plan])
            try:
                ident, vals, refs, key = snapshot(args)
            except Exception:  # noqa: BLE001 - an argument no snapshot describes: the plain path decides
                pass
            else:
                entry = memo.get(key)
                # Every LUT data array the entry saw is still alive and is this call's (_no_array for None).
                if (entry is not None and entry[1] == vals and len(entry[0]) == len(ident)
                        and all(map(_same, entry[0], ident))
                        and (not refs or all(map(_same, map(_CALL, entry[2]), refs)))):
                    return entry[3](*args)
        for i, ok in fast:
            if not ok(args[i]):
                break
        else:
            if key is None:
                return fn(*args)
            run = planner(*args)
            if len(memo) >= MEMO_SIZE:
                for k in list(memo)[: MEMO_SIZE // 2]:
                    memo.pop(k, None)
            memo[key] = (ident, vals, tuple(map(_weak, refs)), run)
            return run(*args)
        new, call = normalise(args)
        res = fn(*new)
        if call.back or call.scratch:
            call.commit()
        return res

    wrapper.__signature__ = sig  # type: ignore[attr-defined]
    wrapper.memo = memo  # type: ignore[attr-defined]
    return wrapper

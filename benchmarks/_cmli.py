"""The real MLI 2.0.2 C library through ctypes, for side-by-side benchmarks (never imported by pymli).

``load()`` builds the library with ``../shared/mli/build.sh`` (UP rounding, FULL_ACCU and
AVEPOOL_16BIT_MUL off, release: CMake's ``-O3 -DNDEBUG``) into ``$PYMLI_MLI_CACHE`` or
``$XDG_CACHE_HOME/pymli`` (default ``~/.cache/pymli``), the folder the C tests use, or reuses a
finished build. ``CCall`` turns the very objects a ``pymli.capi`` call takes (``Tensor``, ``Lut``,
cfg dataclasses, lists of tensors, None) into C structs that point at the same NumPy buffers, so the
C function reads identical operands; outputs get their own copies so both results can be compared.
"""

from __future__ import annotations

import ctypes as C
import dataclasses
import fcntl
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from pymli.capi.move import MovCfg
from pymli.capi.types import (
    ArgmaxCfg, Conv2dCfg, FullyConnectedCfg, L2NormalizeCfg, PermuteCfg, PoolCfg, PreluCfg, ReluCfg, RnnCellCfg,
    RnnDenseCfg, SoftmaxCfg,
)
from pymli.tensor import Lut, Tensor

__all__ = ["load", "CCall", "c_copy", "COMPILE_FLAGS"]

COMPILE_FLAGS = "-O3 -DNDEBUG (CMake Release, gcc, x86 host emulation)"


class _Mem(C.Union):
    _fields_ = [("p", C.c_void_p), ("i32", C.c_int32), ("i16", C.c_int16), ("i8", C.c_int8), ("f32", C.c_float)]


class _Container(C.Structure):
    _fields_ = [("capacity", C.c_uint32), ("mem", _Mem)]


class _Fx(C.Structure):
    _fields_ = [("frac_bits", C.c_int8)]


class _Sa(C.Structure):
    _fields_ = [("type", C.c_int), ("zero_point", _Container), ("scale", _Container), ("dim", C.c_int32),
                ("scale_frac_bits", _Container)]


class _ElParams(C.Union):
    _fields_ = [("fx", _Fx), ("sa", _Sa)]


class _Tensor(C.Structure):
    _fields_ = [("data", _Container), ("mem_stride", C.c_int32 * 4), ("shape", C.c_uint32 * 4),
                ("rank", C.c_uint32), ("el_type", C.c_int), ("el_params", _ElParams)]


class _Lut(C.Structure):
    _fields_ = [("data", _Container), ("type", C.c_int), ("length", C.c_int32), ("in_frac_bits", C.c_int32),
                ("out_frac_bits", C.c_int32), ("input_offset", C.c_int32), ("output_offset", C.c_int32)]


class _Relu(C.Structure):
    _fields_ = [("type", C.c_int)]


class _Conv(C.Structure):
    _fields_ = [("relu", _Relu)] + [(n, C.c_uint8) for n in (
        "stride_width", "stride_height", "padding_left", "padding_right", "padding_top", "padding_bottom",
        "dilation_width", "dilation_height")]


class _Pool(C.Structure):
    _fields_ = [(n, C.c_uint8) for n in ("kernel_width", "kernel_height", "stride_width", "stride_height",
                                         "padding_left", "padding_right", "padding_top", "padding_bottom")]


class _Axis(C.Structure):
    _fields_ = [("axis", C.c_int32)]


class _Argmax(C.Structure):
    _fields_ = [("axis", C.c_int32), ("topk", C.c_int32)]


class _Permute(C.Structure):
    _fields_ = [("perm_dim", C.c_uint8 * 4)]


class _RnnDense(C.Structure):
    _fields_ = [("inputs_num", C.c_uint8)]


class _RnnCell(C.Structure):
    _fields_ = [("direction", C.c_int), ("results", C.c_int), ("act", C.c_int), ("scratch_data", _Container)]


class _Mov(C.Structure):
    _fields_ = [("offset", C.c_uint32 * 4), ("size", C.c_uint32 * 4), ("sub_sample_step", C.c_uint32 * 4),
                ("dst_offset", C.c_uint32 * 4), ("dst_mem_stride", C.c_int32 * 4), ("perm_dim", C.c_uint8 * 4),
                ("padding_pre", C.c_uint8 * 4), ("padding_post", C.c_uint8 * 4)]


def _cache_root() -> Path:
    env = os.environ.get("PYMLI_MLI_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "pymli"


def load(shared: Path | None = None) -> C.CDLL | str:
    """Build (or reuse) MLI 2.0.2 (UP, OFF, OFF, release) and load ``libmli.so``.

    Args:
        shared: the shared data folder (default ``$PYMLI_SHARED`` or ``../shared`` of the checkout).

    Returns:
        The loaded library, or a sentence saying why it is not available.
    """
    root = Path(__file__).resolve().parent.parent
    shared = shared or Path(os.environ.get("PYMLI_SHARED") or root.parent / "shared")
    script = shared / "mli" / "build.sh"
    out = _cache_root() / "mli-2.0.2-UP-OFF-OFF-RELEASE"
    lib = out / "lib" / "libmli.so"
    if not lib.is_file():
        if not script.is_file():
            return f"no {script}: the MLI C library cannot be built"
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out.parent / f".{out.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            r = subprocess.run(["bash", str(script), str(out), "UP", "OFF", "OFF", "RELEASE"], capture_output=True,
                               text=True, timeout=1800)
            if r.returncode:
                return f"build.sh failed: {r.stderr[-500:]}"
    return C.CDLL(str(lib))


def c_copy(t: Any) -> Any:
    """A Tensor (or list of tensors) with its own copy of the data: the C call's output buffer."""
    if isinstance(t, list):
        return [c_copy(x) for x in t]
    if isinstance(t, Tensor):
        return dataclasses.replace(t, data=None if t.data is None else t.data.copy(), shape=list(t.shape),
                                   mem_stride=list(t.mem_stride))
    return t


def _container(v: Any, dt: type, keep: list) -> _Container:
    c = _Container()
    if isinstance(v, np.ndarray) or isinstance(v, (list, tuple)):
        arr = np.ascontiguousarray(v, dt)
        keep.append(arr)
        c.capacity, c.mem.p = arr.nbytes, arr.ctypes.data
    elif dt == np.int8:
        c.mem.i8 = int(v)
    else:
        c.mem.i16 = int(v)
    return c


def _tensor(t: Tensor, keep: list) -> _Tensor:
    s = _Tensor()
    s.data.capacity = int(t.capacity)
    if t.rank == 0:
        dt = t.el_type.dtype
        if dt == np.int8:
            s.data.mem.i8 = int(t.value)
        elif dt == np.int16:
            s.data.mem.i16 = int(t.value)
        elif dt == np.int32:
            s.data.mem.i32 = int(t.value)
        else:
            s.data.mem.f32 = float(t.value)
    else:
        s.data.mem.p = t.data.ctypes.data
    for i in range(t.rank):
        s.shape[i], s.mem_stride[i] = int(t.shape[i]), int(t.mem_stride[i])
    s.rank, s.el_type = t.rank, int(t.el_type)
    if t.el_type.name.startswith("SA"):
        sa = s.el_params.sa
        sa.type, sa.dim = 0, t.dim
        sa.zero_point = _container(t.zero_point, np.int16, keep)
        sa.scale = _container(t.scale, np.int16, keep)
        sa.scale_frac_bits = _container(t.scale_frac_bits, np.int8, keep)
    else:
        s.el_params.fx.frac_bits = t.frac_bits
    return s


def _arg(a: Any, keep: list) -> Any:
    """The ctypes argument for one pymli argument (structs are kept alive in ``keep``)."""
    if a is None:
        return None
    if isinstance(a, Tensor):
        s = _tensor(a, keep)
    elif isinstance(a, list) and a and isinstance(a[0], Tensor):
        structs = [_tensor(t, keep) for t in a]
        keep.extend(structs)
        arr = (C.POINTER(_Tensor) * len(structs))(*[C.pointer(x) for x in structs])
        keep.append(arr)
        return arr
    elif isinstance(a, Lut):
        s = _Lut()
        s.data.capacity, s.data.mem.p = a.capacity, a.data.ctypes.data
        s.type, s.length = int(a.type), a.length
        s.in_frac_bits, s.out_frac_bits = a.in_frac_bits, a.out_frac_bits
        s.input_offset, s.output_offset = a.input_offset, a.output_offset
    elif isinstance(a, Conv2dCfg):
        s = _Conv()
        s.relu.type = int(a.relu.type)
        for f in _Conv._fields_[1:]:
            setattr(s, f[0], getattr(a, f[0]))
    elif isinstance(a, PoolCfg):
        s = _Pool(*[getattr(a, f[0]) for f in _Pool._fields_])
    elif isinstance(a, ReluCfg):
        s = _Relu(int(a.type))
    elif isinstance(a, FullyConnectedCfg):
        s = _Relu(int(a.relu.type))
    elif isinstance(a, (SoftmaxCfg, L2NormalizeCfg, PreluCfg)):
        s = _Axis(a.axis)
    elif isinstance(a, ArgmaxCfg):
        s = _Argmax(a.axis, a.topk)
    elif isinstance(a, PermuteCfg):
        s = _Permute((C.c_uint8 * 4)(*a.perm_dim))
    elif isinstance(a, RnnDenseCfg):
        s = _RnnDense(a.inputs_num)
    elif isinstance(a, RnnCellCfg):
        s = _RnnCell(int(a.direction), int(a.results), int(a.act))
        scratch = np.zeros(max(a.scratch_capacity, 1), np.uint8)
        keep.append(scratch)
        s.scratch_data.capacity, s.scratch_data.mem.p = a.scratch_capacity, scratch.ctypes.data
    elif isinstance(a, MovCfg):
        s = _Mov(*[t(*getattr(a, n)) for n, t in _Mov._fields_])
    else:
        raise TypeError(f"no C marshalling for {type(a).__name__}")
    keep.append(s)
    return C.byref(s)


class CCall:
    """One prepared call of a C function: its arguments marshalled once, so timing sees only the call.

    Args:
        lib: the loaded library.
        name: the C function name (the same as the ``pymli.capi`` name).
        args: the arguments as ``pymli.capi`` takes them; pass output tensors already copied with
            :func:`c_copy` so the C result lands in its own buffers.
    """

    def __init__(self, lib: C.CDLL, name: str, args: list[Any]) -> None:
        self._keep: list = []
        self.fn = getattr(lib, name)
        self.fn.restype = C.c_int
        self.args = [_arg(a, self._keep) for a in args]

    def __call__(self) -> int:
        return self.fn(*self.args)

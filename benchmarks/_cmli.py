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
from pymli.testing.cstructs import (
    MliArgmaxCfg, MliAxisCfg, MliConv2dCfg, MliLut, MliMovCfg, MliPermuteCfg, MliPoolCfg, MliRelu, MliRnnCellCfg,
    MliRnnDenseCfg, MliTensor, fill_tensor,
)

__all__ = ["load", "CCall", "c_copy", "COMPILE_FLAGS"]

COMPILE_FLAGS = "-O3 -DNDEBUG (CMake Release, gcc, x86 host emulation)"


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


def _tensor(t: Tensor, keep: list) -> MliTensor:
    s = MliTensor()
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
    return fill_tensor(s, t.rank, t.shape, t.mem_stride, t.el_type, t.el_type.name.startswith("SA"), t, keep)


def _arg(a: Any, keep: list) -> Any:
    """The ctypes argument for one pymli argument (structs are kept alive in ``keep``)."""
    if a is None:
        return None
    if isinstance(a, Tensor):
        s = _tensor(a, keep)
    elif isinstance(a, list) and a and isinstance(a[0], Tensor):
        structs = [_tensor(t, keep) for t in a]
        keep.extend(structs)
        arr = (C.POINTER(MliTensor) * len(structs))(*[C.pointer(x) for x in structs])
        keep.append(arr)
        return arr
    elif isinstance(a, Lut):
        s = MliLut()
        s.data.capacity, s.data.mem.p = a.capacity, a.data.ctypes.data
        s.type, s.length = int(a.type), a.length
        s.in_frac_bits, s.out_frac_bits = a.in_frac_bits, a.out_frac_bits
        s.input_offset, s.output_offset = a.input_offset, a.output_offset
    elif isinstance(a, Conv2dCfg):
        s = MliConv2dCfg()
        s.relu.type = int(a.relu.type)
        for f in MliConv2dCfg._fields_[1:]:
            setattr(s, f[0], getattr(a, f[0]))
    elif isinstance(a, PoolCfg):
        s = MliPoolCfg(*[getattr(a, f[0]) for f in MliPoolCfg._fields_])
    elif isinstance(a, ReluCfg):
        s = MliRelu(int(a.type))
    elif isinstance(a, FullyConnectedCfg):
        s = MliRelu(int(a.relu.type))
    elif isinstance(a, (SoftmaxCfg, L2NormalizeCfg, PreluCfg)):
        s = MliAxisCfg(a.axis)
    elif isinstance(a, ArgmaxCfg):
        s = MliArgmaxCfg(a.axis, a.topk)
    elif isinstance(a, PermuteCfg):
        s = MliPermuteCfg((C.c_uint8 * 4)(*a.perm_dim))
    elif isinstance(a, RnnDenseCfg):
        s = MliRnnDenseCfg(a.inputs_num)
    elif isinstance(a, RnnCellCfg):
        s = MliRnnCellCfg(int(a.direction), int(a.results), int(a.act))
        scratch = np.zeros(max(a.scratch_capacity, 1), np.uint8)
        keep.append(scratch)
        s.scratch_data.capacity, s.scratch_data.mem.p = a.scratch_capacity, scratch.ctypes.data
    elif isinstance(a, MovCfg):
        s = MliMovCfg(*[t(*getattr(a, n)) for n, t in MliMovCfg._fields_])
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

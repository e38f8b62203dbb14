"""ctypes access to the real MLI 1.0 library built by ../shared/mli1/build.sh (tests only).

The build goes to a cache folder outside the project (``$PYMLI_CACHE`` or ``$XDG_CACHE_HOME/pymli``
or ``~/.cache/pymli``) and is reused (build.sh keeps a stamp of its inputs).
"""

from __future__ import annotations

import ctypes
import dataclasses
import fcntl
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pymli.v1.tensor import Tensor

from ..conftest import shared_dir


def cache_dir() -> Path:
    env = os.environ.get("PYMLI_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "pymli"


def build(shared: Path, variant: str) -> Path | str:
    """Path of libmli1.so for ``variant``, or a reason string why it cannot be built here."""
    script = shared / "mli1" / "build.sh"
    if not script.exists():
        return f"{script} is absent"
    missing = [c for c in (os.environ.get("CC", "gcc"), os.environ.get("CXX", "g++"), "ar") if shutil.which(c) is None]
    if missing:
        return f"no C toolchain ({', '.join(missing)} not found): MLI 1.0 cannot be built here"
    out = cache_dir() / "mli1" / variant
    out.parent.mkdir(parents=True, exist_ok=True)
    # one build at a time per variant (pytest-xdist workers may ask together)
    with open(out.parent / f".{variant}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        r = subprocess.run(["bash", str(script), str(out), variant], capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(f"build.sh failed:\n{r.stdout}\n{r.stderr}")
    return out / "lib" / "libmli1.so"


_LIBS: dict[str, ctypes.CDLL] = {}


def load(variant: str = "conv") -> ctypes.CDLL:
    """The MLI 1.0 library of ``variant`` (built once, cached): a failed build fails the test, no toolchain skips it."""
    if variant not in _LIBS:
        try:
            path = build(shared_dir(), variant)
        except RuntimeError as e:  # a toolchain exists but the build failed: that is a failure
            pytest.fail(str(e))
        if isinstance(path, str):
            pytest.skip(path)
        _LIBS[variant] = ctypes.CDLL(str(path))
    return _LIBS[variant]


class CTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("capacity", ctypes.c_uint32), ("shape", ctypes.c_uint32 * 4),
                ("rank", ctypes.c_uint32), ("el_type", ctypes.c_int), ("frac_bits", ctypes.c_uint8)]


class CRelu(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int)]


class CConv(ctypes.Structure):
    _fields_ = [("relu", CRelu)] + [(n, ctypes.c_uint8) for n in (
        "stride_width", "stride_height", "padding_left", "padding_right", "padding_top", "padding_bottom")]


class CPool(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint8) for n in ("kernel_width", "kernel_height", "stride_width", "stride_height",
                                               "padding_left", "padding_right", "padding_top", "padding_bottom")]


class CRnn(ctypes.Structure):
    _fields_ = [("mode", ctypes.c_int), ("act", ctypes.c_int), ("ir_tsr", ctypes.POINTER(CTensor))]


class CPermute(ctypes.Structure):
    _fields_ = [("perm_dim", ctypes.c_uint8 * 4)]


class CPad(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint8) for n in ("padding_left", "padding_right", "padding_top", "padding_bottom")]


class CConcat(ctypes.Structure):
    _fields_ = [("tensors_num", ctypes.c_uint8), ("axis", ctypes.c_uint8)]


_CFG = {"ReluCfg": CRelu, "Conv2dCfg": CConv, "PoolCfg": CPool, "RnnCellCfg": CRnn, "PermuteCfg": CPermute,
        "Padding2dCfg": CPad, "ConcatCfg": CConcat}


class CCall:
    """Marshal pymli.v1 arguments into C structs over copies of their buffers, call, and read back."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self.bufs: dict[int, np.ndarray] = {}
        self.keep: list[Any] = []
        self.tensors: list[tuple[Tensor, CTensor]] = []

    def tensor(self, t: Tensor) -> CTensor:
        c = CTensor()
        if isinstance(t.data, np.ndarray):
            key = id(t.data)
            if key not in self.bufs:
                self.bufs[key] = t.data.copy()
            c.data = self.bufs[key].ctypes.data
        elif t.data is not None:
            c.data = ctypes.c_void_p(int(t.data) & 0xFFFFFFFFFFFFFFFF).value
        c.capacity = t.capacity
        for i in range(4):
            c.shape[i] = t.shape[i]
        c.rank, c.el_type, c.frac_bits = t.rank, int(t.el_type), t.frac_bits
        self.tensors.append((t, c))
        self.keep.append(c)
        return c

    def cfg(self, cfg: Any) -> Any:
        cls = _CFG[type(cfg).__name__]
        c = cls()
        for f in dataclasses.fields(cfg):
            v = getattr(cfg, f.name)
            if f.name == "relu":
                c.relu.type = int(v.type)
            elif f.name == "ir_tsr":
                c.ir_tsr = ctypes.pointer(self.tensor(v)) if v is not None else None
            elif f.name == "perm_dim":
                for i, p in enumerate(v):
                    c.perm_dim[i] = p
            else:
                setattr(c, f.name, int(v))
        self.keep.append(c)
        return c

    def call(self, name: str, args: list[Any]) -> int:
        cargs = []
        for a in args:
            if isinstance(a, Tensor):
                cargs.append(ctypes.byref(self.tensor(a)))
            elif isinstance(a, list):
                arr = (ctypes.POINTER(CTensor) * len(a))(*[ctypes.pointer(self.tensor(t)) for t in a])
                self.keep.append(arr)
                cargs.append(arr)
            elif isinstance(a, int):
                cargs.append(ctypes.c_uint32(a))
            else:
                cargs.append(ctypes.byref(self.cfg(a)))
        fn = getattr(self.lib, name)
        fn.restype = ctypes.c_int if name not in ("mli_hlp_count_elem_num", "mli_hlp_tensor_element_size") else ctypes.c_uint32
        return int(fn(*cargs))

    def buffer(self, t: Tensor) -> np.ndarray:
        return self.bufs[id(t.data)]

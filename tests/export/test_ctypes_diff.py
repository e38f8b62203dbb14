"""Differential test: pymli's kernels against the real MLI 2.0.2 shared library through ctypes.

The calls are the ones random quantised networks make (valid by construction): each recorded call
of a key function is replayed on ``libmli.so`` with the same tensors and cfg, and the whole output
buffer must equal what pymli wrote.
"""

from __future__ import annotations

import ctypes as C
import re

import numpy as np
import pytest

from pymli.config import VPX
from pymli.export.trace import _record, _Snap, _Struct
from pymli.models import AvgPool, Conv2D, Eltwise, FullyConnected, MaxPool, Network, ReLU
from pymli.models.quantize import quantize_network


class _Mem(C.Union):
    _fields_ = [("p", C.c_void_p), ("i32", C.c_int32), ("i16", C.c_int16), ("i8", C.c_int8)]


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


class _Relu(C.Structure):
    _fields_ = [("type", C.c_int)]


class _Conv(C.Structure):
    _fields_ = [("relu", _Relu)] + [(n, C.c_uint8) for n in (
        "stride_width", "stride_height", "padding_left", "padding_right", "padding_top", "padding_bottom",
        "dilation_width", "dilation_height")]


class _Pool(C.Structure):
    _fields_ = [(n, C.c_uint8) for n in ("kernel_width", "kernel_height", "stride_width", "stride_height",
                                         "padding_left", "padding_right", "padding_top", "padding_bottom")]


class _Fc(C.Structure):
    _fields_ = [("relu", _Relu)]


_STRUCTS = {"mli_conv2d_cfg": _Conv, "mli_pool_cfg": _Pool, "mli_fully_connected_cfg": _Fc, "mli_relu_cfg": _Relu}
_RELU = {"MLI_RELU_NONE": 0, "MLI_RELU_GEN": 1, "MLI_RELU_1": 2, "MLI_RELU_6": 3}
KEY = re.compile(r"^mli_krn_(conv2d_hwcn|depthwise_conv2d_hwcn|fully_connected|avepool_hwc|maxpool_hwc|"
                 r"eltwise_add|eltwise_mul|relu)_(sa8|fx16)")


def _struct(s: _Struct) -> C.Structure:
    cls = _STRUCTS[s.c_type]
    obj = cls()
    for k, v in s.fields.items():
        if isinstance(v, dict):
            v = _RELU[v["type"]] if isinstance(v["type"], str) else int(v["type"])
            getattr(obj, k).type = v
        else:
            setattr(obj, k, _RELU[v] if isinstance(v, str) else int(v))
    return obj


def _container(v, keep, dt):  # type: ignore[no-untyped-def]
    c = _Container()
    if isinstance(v, tuple):
        arr = np.asarray(v, dt)
        keep.append(arr)
        c.capacity, c.mem.p = arr.nbytes, arr.ctypes.data
    elif dt == np.int8:
        c.mem.i8 = int(v)
    else:
        c.mem.i16 = int(v)
    return c


def _tensor(s: _Snap, data: bytes, keep: list) -> _Tensor:
    f = s.fields
    t = _Tensor()
    buf = np.frombuffer(bytearray(data), np.uint8)
    keep.append(buf)
    t.data.capacity, t.data.mem.p = f["capacity"], buf.ctypes.data
    for i in range(f["rank"]):
        t.shape[i], t.mem_stride[i] = f["shape"][i], f["mem_stride"][i]
    t.rank, t.el_type = f["rank"], int(f["el_type"])
    if f["el_type"].is_sa:
        t.el_params.sa.type = 0
        t.el_params.sa.zero_point = _container(f["zero_point"], keep, np.int16)
        t.el_params.sa.scale = _container(f["scale"], keep, np.int16)
        t.el_params.sa.scale_frac_bits = _container(f["scale_frac_bits"], keep, np.int8)
        t.el_params.sa.dim = f["dim"]
    else:
        t.el_params.fx.frac_bits = f["frac_bits"]
    return t, buf


def _networks():  # type: ignore[no-untyped-def]
    for seed in range(4):
        rng = np.random.default_rng(seed)
        c = int(rng.integers(1, 5))
        k = int(rng.integers(1, 4))
        net = Network((7, 6, c), [
            Conv2D(rng.normal(0, 0.4, (k, k, c, 5)), rng.normal(0, 0.2, 5), padding=k // 2,
                   stride=int(rng.integers(1, 3)), relu=["none", "gen", "relu_6"][seed % 3], name="conv"),
            ReLU(name="relu"),
            Conv2D(rng.normal(0, 0.4, (1, 1, 5, 5)), np.zeros(5), name="conv1x1", inputs=["conv"]),
            Eltwise("add", name="add", inputs=["relu", "conv1x1"]),
            AvgPool(2, stride=int(rng.integers(1, 3)), name="avg"),
            MaxPool(2, stride=1, name="max", inputs=["add"]),
            Eltwise("mul", name="mul", inputs=["max", "max"]),
        ], name=f"diff{seed}")
        shapes = net.shapes()
        n_in = int(np.prod(shapes["avg"]))
        net.add(FullyConnected(rng.normal(0, 0.3, (n_in, 6)), rng.normal(0, 0.1, 6), name="fc", inputs=["avg"]))
        x = rng.uniform(-1, 1, (12, 7, 6, c))
        for build in ("sa8", "fx16"):
            yield quantize_network(net, x, build), x


def test_pymli_kernels_equal_libmli(mli_vpx):
    lib = C.CDLL(str(mli_vpx / "lib" / "libmli.so"))
    checked: dict[str, int] = {}
    for qnet, x in _networks():
        xq = qnet.quantize_input(x[:2])
        for sample in xq:
            calls, _, _ = _record(qnet, sample, VPX)
            for call in calls:
                if not KEY.match(call.name):
                    continue
                keep: list = []
                args, outs = [], []
                for i, a in enumerate(call.args):
                    if isinstance(a, _Snap):
                        written = i in call.post
                        # outputs start zeroed; inputs hold the bytes pymli read, padded to their capacity
                        data = (bytes(len(call.post[i])) if written
                                else a.raw + bytes(max(0, a.fields["capacity"] - len(a.raw))))
                        t, buf = _tensor(a, data, keep)
                        keep.append(t)
                        args.append(C.byref(t))
                        if written:
                            outs.append((buf, call.post[i]))
                    elif isinstance(a, _Struct):
                        s = _struct(a)
                        keep.append(s)
                        args.append(C.byref(s))
                    else:
                        pytest.fail(f"unexpected argument {a!r} of {call.name}")
                fn = getattr(lib, call.name)
                fn.restype = C.c_int
                status = fn(*args)
                assert status == 0, (call.name, status)
                for buf, want in outs:
                    got = buf.tobytes()[:len(want)]
                    assert got == want, f"{call.name} in {qnet.name}: output differs from libmli"
                checked[call.name] = checked.get(call.name, 0) + 1
    # every key family was exercised in both data types
    families = {re.sub(r"_(sa8|fx16).*", "", n) for n in checked}
    assert {"mli_krn_conv2d_hwcn", "mli_krn_fully_connected", "mli_krn_avepool_hwc", "mli_krn_eltwise_add",
            "mli_krn_relu"} <= families, checked
    assert any("sa8" in n for n in checked) and any("fx16" in n for n in checked)

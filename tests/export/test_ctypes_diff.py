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
from pymli.testing.cstructs import MliConv2dCfg, MliFcCfg, MliPoolCfg, MliRelu, MliTensor, fill_tensor


_STRUCTS = {"mli_conv2d_cfg": MliConv2dCfg, "mli_pool_cfg": MliPoolCfg, "mli_fully_connected_cfg": MliFcCfg,
            "mli_relu_cfg": MliRelu}
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


def _tensor(s: _Snap, data: bytes, keep: list) -> tuple[MliTensor, np.ndarray]:
    f = s.fields
    t = MliTensor()
    buf = np.frombuffer(bytearray(data), np.uint8)
    keep.append(buf)
    t.data.capacity, t.data.mem.p = f["capacity"], buf.ctypes.data
    fill_tensor(t, f["rank"], f["shape"], f["mem_stride"], f["el_type"], f["el_type"].is_sa, f, keep)
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

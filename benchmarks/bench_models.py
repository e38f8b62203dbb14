#!/usr/bin/env python3
"""Time per CIFAR-10 image of MLI's example network on pymli's kernels (three builds), HAR, the demo.

usage: python benchmarks/bench_models.py [--repeat 3] [--images 20] [--only_prepared]
Prints first the prepared-execution figures (issue 14 items 4-5): the cost per layer of a chain of
tiny ReLU layers, a three-FC model per inference (one sample per ``Network.run``, the prepared plan
called directly when this checkout has ``Network.prepare``, their difference: what ``run`` adds,
and per sample of a batch of 64), and CIFAR-10 per image one image per run vs a batch of 64. Then, per build: best-of-N seconds per image
for the quantised run (every intermediate captured, as the bit-exact test does), per image without
capture, and the float64 twin per image; the time per HAR sequence (128 steps), per sample of small
synthetic networks of the other layers (GRU / LSTM over 32 steps both directions, group and
transpose convolution, concat + pad + l2 + argmax), and of the whole ``pymli demo``.
The script runs on checkouts without ``Network.prepare`` too (the "before" figures).
"""

from __future__ import annotations

import os
import time

import numpy as np
from _timing import Row, best_of, cli

from pymli.kernels import convolution as K
from pymli.kernels import fully_connected as F
from pymli.models import (
    GRU,
    LSTM,
    Argmax,
    Concat,
    Conv2D,
    FullyConnected,
    GroupConv2D,
    L2Normalize,
    Network,
    Pad2D,
    ReLU,
    TransposeConv2D,
    load_pack,
)
from pymli.models.quantize import quantize_network
from pymli.testing.paths import shared_dir


def prepared(repeat: int) -> list[Row]:
    """Per-layer cost, a three-FC model per inference, CIFAR-10 per image alone and in a batch of 64."""
    rng = np.random.default_rng(0)
    rows = []
    chains = {}
    for length in (2, 18):
        net = Network((4,), [ReLU("gen") for _ in range(length)])
        chains[length] = quantize_network(net, rng.normal(0, 1, (8, 4)), "sa8")
    x1 = chains[2].quantize_input(rng.normal(0, 1, (1, 4)))
    t = {n: best_of(lambda q=q: q.run(x1, capture=False), 50 * repeat) for n, q in chains.items()}
    rows.append(Row("per layer, Network.run (tiny ReLU chain, 1 sample)", (t[18] - t[2]) / 16, target="<= 5 us"))
    if hasattr(Network, "prepare"):
        plans = {n: q.prepare() for n, q in chains.items()}
        t = {n: best_of(lambda p=p: p(x1), 50 * repeat) for n, p in plans.items()}
        rows.append(Row("per layer, prepared plan (tiny ReLU chain, 1 sample)", (t[18] - t[2]) / 16, target="<= 5 us"))
    net = Network((64,), [FullyConnected(rng.normal(0, .2, (64, 32)), rng.normal(0, .1, 32), relu="gen"),
                          FullyConnected(rng.normal(0, .2, (32, 16)), rng.normal(0, .1, 16), relu="gen"),
                          FullyConnected(rng.normal(0, .2, (16, 10)), rng.normal(0, .1, 10))])
    xs = rng.normal(0, 1, (64, 64))
    for v in ("sa8", "fx16"):
        q = quantize_network(net, xs, v)
        xq = q.quantize_input(xs)
        t_run = best_of(lambda q=q, x=xq[:1]: q.run(x, capture=False), 50 * repeat)
        rows.append(Row(f"three-FC {v} per inference (Network.run, 1 sample)", t_run, target="<= 20 us"))
        if hasattr(q, "prepare"):
            plan = q.prepare()
            t_plan = best_of(lambda p=plan, x=xq[:1]: p(x), 50 * repeat)
            rows.append(Row(f"three-FC {v} per inference (prepared plan, 1 sample)", t_plan, target="<= 20 us"))
            rows.append(Row(f"three-FC {v} Network.run overhead over the plan (checks, RunResult)",
                            max(t_run - t_plan, 0.0)))
        rows.append(Row(f"three-FC {v} per inference (Network.run, batch of 64)",
                        best_of(lambda q=q, x=xq: q.run(x, capture=False), 5 * repeat) / 64))
    rows += fc_kernel(repeat)
    root = shared_dir() / "models" / "cifar10"
    for v in ("fx16", "sa8"):
        p = load_pack(root / v)
        x = np.resize(p.inputs, (64, *p.inputs.shape[1:]))  # the pack's images repeated up to 64
        one = p.inputs[:8]
        rows.append(Row(f"CIFAR-10 {v} per image (one image per run)",
                        best_of(lambda p=p, x=one: [p.network.run(x[i:i + 1], capture=False) for i in range(len(x))],
                                repeat) / len(one)))
        rows.append(Row(f"CIFAR-10 {v} per image (batch of {len(x)})",
                        best_of(lambda p=p, x=x: p.network.run(x, capture=False), repeat) / len(x)))
    return rows


def fc_kernel(repeat: int) -> list[Row]:
    """The first layer of the three-FC model alone (64 -> 32, one sample): the kernel with its parameters
    per call, and the layer prepared once (``prepare_fc``, in checkouts that have it)."""
    rng = np.random.default_rng(1)
    rows = []
    def ints(lo: int, hi: int, shape: tuple[int, ...], dtype: type) -> np.ndarray:
        return rng.integers(lo, hi, shape).astype(dtype)

    cases = {"sa8": (ints(-128, 128, (1, 64), np.int8), ints(-128, 128, (64, 32), np.int8),
                     ints(-3000, 3000, (32,), np.int32),
                     K.Sa8Quant(-128, 20000, 20, 0, np.full(32, 20000), np.full(32, 20), 5, 23000, 16), (-128, 127)),
             "fx16": (ints(0, 4096, (1, 64), np.int16), ints(-4096, 4096, (64, 32), np.int16),
                      ints(-4096, 4096, (32,), np.int16), K.FxQuant(12, 14, 13, 10, 40, 16), (0, 32767))}
    for v, (x, w, b, q, bounds) in cases.items():
        rows.append(Row(f"FC {v} 64 -> 32 kernel, parameters per call (1 sample)",
                        best_of(lambda x=x, w=w, b=b, q=q, bo=bounds: F.fully_connected(x, w, b, q, bo), 50 * repeat)))
        if hasattr(F, "prepare_fc"):
            layer = F.prepare_fc(w, b, q, bounds, x.dtype)
            rows.append(Row(f"FC {v} 64 -> 32 kernel, prepared layer (1 sample)",
                            best_of(lambda f=layer, x=x: f(x), 50 * repeat)))
    return rows


def run(repeat: int = 3, images: int = 20, demo: bool = True, only_prepared: bool = False) -> list[Row]:
    rows = prepared(repeat)
    if only_prepared:
        return rows
    root = shared_dir() / "models" / "cifar10"
    for v in ("fx16", "fx16_fx8_fx8", "sa8"):
        p = load_pack(root / v)
        x = p.inputs[:images]
        n = len(x)
        for what, fn in (("quantised, capture", lambda p=p, x=x: p.network.run(x)),
                         ("quantised", lambda p=p, x=x: p.network.run(x, capture=False)),
                         ("float64 twin", lambda p=p, x=x: p.network.run_float(x))):
            rows.append(Row(f"CIFAR-10 {v} per image ({what})", best_of(fn, repeat, warmup=0) / n))
    har = shared_dir() / "models" / "har_smartphone"
    if har.is_dir():
        for v in ("fx16", "fx16_fx8_fx8", "sa8"):
            p = load_pack(har / v)
            x = p.inputs[:2]
            rows.append(Row(f"HAR {v} per sequence (128 steps)",
                            best_of(lambda p=p, x=x: p.network.run(x), 1, warmup=1) / len(x)))
    rows += synthetic(repeat)
    if not demo:
        return rows
    try:
        from rich.console import Console

        from pymli.models.demo import run_demo
    except ImportError:
        return rows
    t0 = time.perf_counter()
    with open(os.devnull, "w") as sink:
        run_demo(Console(file=sink))
    rows.append(Row("pymli demo (360 digits x 3 builds, with reports)", time.perf_counter() - t0))
    return rows


def synthetic(repeat: int) -> list[Row]:
    """Time per sample of small networks of the layers the example packs do not use."""
    rng = np.random.default_rng(0)

    def r(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.3, shape)

    nets = {
        "gru 32x16->32 fwd": (Network((32, 16), [GRU(r(3, 16, 32), r(3, 32, 32), r(3, 32))]), (32, 16)),
        "gru 32x16->32 bwd last": (Network((32, 16), [GRU(r(3, 16, 32), r(3, 32, 32), r(3, 32), results="last",
                                                          direction="backward")]), (32, 16)),
        "lstm 32x16->32 bwd": (Network((32, 16), [LSTM(r(4, 16, 32), r(4, 32, 32), r(4, 32),
                                                       direction="backward")]), (32, 16)),
        "group conv 16x16x16 g4": (Network((16, 16, 16), [GroupConv2D(r(3, 3, 4, 16), r(16), padding=1)]),
                                   (16, 16, 16)),
        "transpose conv 8x8x16 s2": (Network((8, 8, 16), [TransposeConv2D(r(4, 4, 16, 8), r(8), stride=2,
                                                                          padding=1)]), (8, 8, 16)),
        "concat+pad+l2+argmax": (Network((8, 8, 4), [
            Conv2D(r(3, 3, 4, 4), r(4), padding=1, name="a"), Conv2D(r(1, 1, 4, 4), r(4), inputs=["input"], name="b"),
            Concat(inputs=["a", "b"]), Pad2D(1), L2Normalize(), Argmax()]), (8, 8, 4)),
    }
    n = 4
    rows = []
    for name, (net, shape) in nets.items():
        x = rng.normal(0, 1, (n, *shape))
        for v in ("fx16", "fx16_fx8_fx8", "sa8"):
            q = quantize_network(net, x, v)
            xq = q.quantize_input(x)
            rows.append(Row(f"{name} {v} per sample", best_of(lambda q=q, xq=xq: q.run(xq, capture=False), repeat) / n))
    return rows


if __name__ == "__main__":
    cli(run, __doc__)

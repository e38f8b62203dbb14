#!/usr/bin/env python3
"""Time per CIFAR-10 image of MLI's example network on pymli's kernels (three builds), HAR, the demo.

usage: python benchmarks/bench_models.py [--repeat 3] [--images 20]
Prints, per build: best-of-N seconds per image for the quantised run (every intermediate captured,
as the bit-exact test does), per image without capture, and the float64 twin per image; then the
time per HAR sequence (128 steps), per sample of small synthetic networks of the other layers
(GRU / LSTM over 32 steps both directions, group and transpose convolution, concat + pad + l2 +
argmax), and of the whole ``pymli demo``.
"""

from __future__ import annotations

import os
import time

import numpy as np
from _timing import Row, best_of, cli

from pymli.models import (
    GRU,
    LSTM,
    Argmax,
    Concat,
    Conv2D,
    GroupConv2D,
    L2Normalize,
    Network,
    Pad2D,
    TransposeConv2D,
    load_pack,
)
from pymli.models.quantize import quantize_network
from pymli.testing.paths import shared_dir


def run(repeat: int = 3, images: int = 20, demo: bool = True) -> list[Row]:
    root = shared_dir() / "models" / "cifar10"
    rows = []
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
                            best_of(lambda p=p, x=x: p.network.run(x), 1, warmup=0) / len(x)))
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

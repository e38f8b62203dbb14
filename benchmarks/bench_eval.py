#!/usr/bin/env python3
"""Throughput of ``pymli eval`` (pymli.eval.evaluate): samples/s of a MobileNet v1-shaped int8 model with
1, 2 and all worker processes and with a two-worker Dask LocalCluster.

usage: python benchmarks/bench_eval.py [--size 128] [--alpha 0.25] [--samples 16] [--batch 2] [--dask]

The model is MobileNet v1's layer list (a 3x3 stride-2 convolution, 13 depthwise + pointwise blocks,
global average pooling, a 1000-way fully connected layer, softmax) with random weights calibrated by
pymli.tflite.examples.GraphMaker; ``--size 224 --alpha 1.0`` is the full network (~570 M MAC per
sample). Each row is one evaluate() over the same samples; the time column is per sample, the extra
column the samples/s and the speed-up over one worker. Every run's outputs are checked to be identical.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np
from _timing import Row, cli

from pymli.eval import evaluate
from pymli.tflite.examples import GraphMaker

#: (pointwise output channels at alpha 1, stride of the depthwise convolution) of MobileNet v1's blocks
BLOCKS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1), (512, 1), (512, 1),
          (512, 1), (1024, 2), (1024, 1)]


def mobilenet_v1(size: int = 224, alpha: float = 1.0, classes: int = 1000, seed: int = 0) -> tuple[bytes, int]:
    """(int8 .tflite bytes, MACs per sample) of a MobileNet v1-shaped network on ``size x size x 3`` inputs."""
    g = GraphMaker((size, size, 3), seed, description=f"mobilenet_v1 {alpha} {size}")
    ch = max(8, int(32 * alpha))
    g.conv(ch, 3, stride=2, act="RELU6")
    h = -(-size // 2)
    macs = h * h * 27 * ch
    for c, s in BLOCKS:
        g.dwconv(3, stride=s, act="RELU6")
        h = -(-h // s)
        macs += h * h * 9 * ch
        cout = max(8, int(c * alpha))
        g.conv(cout, 1, act="RELU6")
        macs += h * h * ch * cout
        ch = cout
    g.pool("avg", h, h)
    g.reshape((ch,))
    g.fc(classes)
    g.unary("SOFTMAX")
    return g.finish(), macs + ch * classes


#: MobileNet v2's inverted residual stages: (expansion, output channels at alpha 1, repeats, first stride)
V2_STAGES = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
             (6, 320, 1, 1)]


def _divisible(v: float, d: int = 8) -> int:
    """Keras' ``_make_divisible``: ``v`` rounded to a multiple of ``d``, never below 90 % of ``v``."""
    n = max(d, int(v + d / 2) // d * d)
    return n + d if n < 0.9 * v else n


def mobilenet_v2(size: int = 96, alpha: float = 0.35, classes: int = 1000, seed: int = 0) -> tuple[bytes, int]:
    """(int8 .tflite bytes, MACs per sample) of a MobileNet v2-shaped network on ``size x size x 3`` inputs.

    Keras' layer list: a 3x3 stride-2 convolution, 17 inverted residual blocks (1x1 expansion with RELU6,
    3x3 depthwise with RELU6, linear 1x1 projection, and a residual ADD where the block keeps its shape),
    a 1x1 convolution to 1280 channels, global average pooling, a fully connected layer and softmax.
    """
    g = GraphMaker((size, size, 3), seed, description=f"mobilenet_v2 {alpha} {size}")
    ch = _divisible(32 * alpha)
    g.conv(ch, 3, stride=2, act="RELU6")
    h = -(-size // 2)
    macs = h * h * 27 * ch
    for t, c, n, s in V2_STAGES:
        cout = _divisible(c * alpha)
        for i in range(n):
            stride = s if i == 0 else 1
            saved = (g.cur, g.f)
            if t != 1:
                g.conv(ch * t, 1, act="RELU6")
                macs += h * h * ch * ch * t
            g.dwconv(3, stride=stride, act="RELU6")
            h = -(-h // stride)
            macs += h * h * 9 * ch * t
            g.conv(cout, 1, act="NONE")
            macs += h * h * ch * t * cout
            if stride == 1 and ch == cout:  # the residual connection
                out = g._act_out("add", saved[1] + g.f)
                g.w.op("ADD", [saved[0], g.cur], [out], FusedActivationFunction="NONE")
                g.cur = out
            ch = cout
    g.conv(1280, 1, act="RELU6")
    macs += h * h * ch * 1280
    g.pool("avg", h, h)
    g.reshape((1280,))
    g.fc(classes)
    g.unary("SOFTMAX")
    return g.finish(), macs + 1280 * classes


def run(size: int = 128, alpha: float = 0.25, samples: int = 16, batch: int = 2, dask: bool = True) -> list[Row]:
    model, macs = mobilenet_v1(size, alpha)
    x = np.random.default_rng(0).integers(-128, 128, (samples, size, size, 3)).astype(np.int8)
    rows: list[Row] = []
    cores = os.cpu_count() or 1
    cases = [("1 worker", {"workers": 1}), ("2 workers", {"workers": 2})]
    if cores > 2:
        cases.append((f"all {cores} workers", {"workers": cores}))
    if dask:
        try:
            import distributed  # noqa: F401
            cases.append(("Dask LocalCluster, 2 workers", {"workers": 2, "scheduler": "local"}))
        except ImportError:
            print("(no Dask: pip install 'pymli[cluster]' for the LocalCluster row)")
    base = None
    first = None
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "mobilenet.tflite"
        path.write_bytes(model)
        for name, kw in cases:
            t0 = time.perf_counter()  # start-up (worker processes, cluster) included: what a user waits for
            rep = evaluate(path, x, batch=batch, layers=False, progress=False, **kw)
            wall = time.perf_counter() - t0
            if first is None:
                first = rep.outputs
            elif not np.array_equal(first, rep.outputs):
                raise SystemExit(f"{name}: outputs differ from the 1-worker run")
            rate = samples / wall
            base = base or rate
            rows.append(Row(f"mobilenet_v1 {alpha} {size}x{size}, {samples} samples, {name}", wall / samples, macs,
                            f"{rate:.2f} samples/s, x{rate / base:.2f}"))
    return rows


if __name__ == "__main__":
    cli(run, __doc__)

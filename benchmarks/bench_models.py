#!/usr/bin/env python3
"""Time per CIFAR-10 image of MLI's example network on pymli's kernels (three builds), HAR, the demo.

usage: python benchmarks/bench_models.py [--repeat 3] [--images 20]
Prints, per build: the best-of-N time per image for the quantised run (every intermediate captured,
as the bit-exact test does), per image without capture, and the float64 twin per image; then the
time per HAR sequence (128 steps) and of the whole ``pymli demo``.
"""

from __future__ import annotations

import os
import time

from _timing import Row, best_of, cli

from pymli.models import load_pack
from pymli.paths import shared_dir


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


if __name__ == "__main__":
    cli(run, __doc__)

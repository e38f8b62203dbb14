#!/usr/bin/env python3
"""Time per CIFAR-10 image of MLI's example network on pymli's kernels (three builds), HAR, the demo.

usage: python benchmarks/bench_models.py [--repeat 3] [--images 20]
Prints, per build: best-of-N seconds per image for the quantised run (every intermediate captured,
as the bit-exact test does), per image without capture, and the float64 twin per image; then the
time per HAR sequence (128 steps) and of the whole ``pymli demo``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pymli.models import load_pack
from pymli.paths import shared_dir


def best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    t = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--images", type=int, default=20)
    args = ap.parse_args()
    root = shared_dir() / "models" / "cifar10"
    print(f"{'build':<14} {'ms/image (capture)':>19} {'ms/image':>10} {'float ms/image':>15}")
    for v in ("fx16", "fx16_fx8_fx8", "sa8"):
        p = load_pack(root / v)
        x = p.inputs[: args.images]
        n = len(x)
        t_cap = best(lambda p=p, x=x: p.network.run(x), args.repeat) / n
        t_out = best(lambda p=p, x=x: p.network.run(x, capture=False), args.repeat) / n
        t_flt = best(lambda p=p, x=x: p.network.run_float(x), args.repeat) / n
        print(f"{v:<14} {1e3 * t_cap:>19.2f} {1e3 * t_out:>10.2f} {1e3 * t_flt:>15.2f}")
    har = shared_dir() / "models" / "har_smartphone"
    if har.is_dir():
        print(f"{'HAR build':<14} {'ms/sequence':>19}")
        for v in ("fx16", "fx16_fx8_fx8", "sa8"):
            p = load_pack(har / v)
            x = p.inputs[:2]
            print(f"{v:<14} {1e3 * best(lambda p=p, x=x: p.network.run(x), 1) / len(x):>19.1f}")
    try:
        from rich.console import Console

        from pymli.models.demo import run_demo
    except ImportError:
        return
    t0 = time.perf_counter()
    with open(os.devnull, "w") as sink:
        run_demo(Console(file=sink))
    print(f"pymli demo (360 digits x 3 builds, with reports): {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()

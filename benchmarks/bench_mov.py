"""Data movement speed: mli_mov_tensor_sync on 1 MB tensors (best of N, MB/s).

Run: python benchmarks/bench_mov.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from pymli import Tensor  # noqa: E402
from pymli.capi import mli_mov_tensor_sync  # noqa: E402
from pymli.capi.move import MovCfg  # noqa: E402

MB = 1 << 20


def _best(fn, n: int = 20) -> float:
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    rng = np.random.default_rng(0)
    src = Tensor.from_numpy(rng.integers(-128, 128, size=(256, 64, 64), dtype=np.int8), "FX_8")
    src16 = Tensor.from_numpy(rng.integers(-2**15, 2**15, size=(256, 64, 32), dtype=np.int16), "FX_16")
    cases = [
        ("copy fx8 1 MB (memcpy path)", src, MovCfg()),
        ("copy fx16 1 MB (memcpy path)", src16, MovCfg()),
        ("slice fx8 [1:,1:,1:]", src, MovCfg(offset=[1, 1, 1, 0])),
        ("transpose fx8 (2,0,1)", src, MovCfg(perm_dim=[2, 0, 1, 3])),
        ("subsample fx8 step 2", src, MovCfg(sub_sample_step=[1, 2, 2, 1])),
        ("pad hwc fx8 +2 each side", src, MovCfg(padding_pre=[2, 2, 0, 0], padding_post=[2, 2, 0, 0])),
    ]
    print(f"{'case':34s} {'ms':>8s} {'MB/s':>8s}")
    for name, s, cfg in cases:
        buf = np.zeros(2 * MB, dtype=s.el_type.dtype)
        dst = Tensor(data=buf, capacity=buf.nbytes, shape=[0] * 3, mem_stride=[0] * 3, rank=3)

        def run() -> None:
            dst.mem_stride = [0, 0, 0]
            mli_mov_tensor_sync(s, cfg, dst)

        t = _best(run)
        print(f"{name:34s} {t * 1e3:8.3f} {s.data.nbytes / MB / t:8.0f}")


if __name__ == "__main__":
    main()

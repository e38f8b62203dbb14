"""Data movement speed: mli_mov_tensor_sync on 1 MB tensors (best of N, MB/s), and the per-call cost
of the facade (checks, struct fill): the 128 KB copy of ``bench_vs_c.py`` (64x64x32 sa8) and an
8-element copy, each with a new cfg per call (planned every time), with the same arguments (the
guard's memo replays the plan) and with the memo off; an async cycle and a cfg helper.

Run: python benchmarks/bench_mov.py [--repeat N]
"""

from __future__ import annotations

import numpy as np
from _timing import Row, best_of, cli

from pymli import Tensor, capi
from pymli.capi import mli_mov_tensor_sync
from pymli.capi.move import MovCfg, MovHandle
from pymli.checks.entry import memo_enabled

MB = 1 << 20


def run(repeat: int = 20) -> list[Row]:
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
    rows = []
    for name, s, cfg in cases:
        buf = np.zeros(2 * MB, dtype=s.el_type.dtype)
        dst = Tensor(data=buf, capacity=buf.nbytes, shape=[0] * 3, mem_stride=[0] * 3, rank=3)

        def call(s=s, cfg=cfg, dst=dst) -> None:
            dst.mem_stride = [0, 0, 0]
            mli_mov_tensor_sync(s, cfg, dst)

        t = best_of(call, repeat)
        rows.append(Row(name, t, extra=f"{s.data.nbytes / MB / t:.0f} MB/s"))
    small = Tensor.from_numpy(rng.integers(-128, 128, size=(64, 64, 32)), "SA_8", zero_point=-7, scale=20000,
                              scale_frac_bits=20)
    out = Tensor.zeros((64, 64, 32), "SA_8", zero_point=-7, scale=20000, scale_frac_bits=20)
    rows.append(Row("copy sa8 64x64x32 (128 KB), new cfg", best_of(lambda: mli_mov_tensor_sync(small, MovCfg(), out),
                                                                   repeat * 5), target="C 4 us"))
    tiny = Tensor.from_numpy(rng.integers(-128, 128, size=8), "SA_8", zero_point=0, scale=1, scale_frac_bits=0)
    tiny_out = Tensor.zeros((8,), "SA_8")
    cfg = MovCfg()
    for memo in (True, False):
        was = memo_enabled(memo)
        try:
            tag = "same args" if memo else "memo off"
            rows.append(Row(f"copy sa8 64x64x32 (128 KB), {tag}",
                            best_of(lambda: mli_mov_tensor_sync(small, cfg, out), repeat * 50), target="< 10 us"))
            rows.append(Row(f"copy 8 elements, {tag}", best_of(lambda: mli_mov_tensor_sync(tiny, cfg, tiny_out),
                                                               repeat * 50), target="< 10 us"))
        finally:
            memo_enabled(was)
    h = MovHandle()

    def cycle() -> None:
        capi.mli_mov_acquire_handle(1, h)
        capi.mli_mov_prepare(h, tiny, cfg, tiny_out)
        capi.mli_mov_start(h, tiny, cfg, tiny_out)
        capi.mli_mov_wait(h)
        capi.mli_mov_release_handle(h)
    rows.append(Row("acquire, prepare, start, wait, release (8 el.)", best_of(cycle, repeat * 50)))
    built = MovCfg()
    rows.append(Row("mli_mov_cfg_for_slice", best_of(
        lambda: capi.mli_mov_cfg_for_slice(built, [0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]), repeat * 50)))
    return rows


if __name__ == "__main__":
    cli(run, __doc__)

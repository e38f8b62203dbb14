"""Speed of the convolution and fully-connected facade (best of N, milliseconds per call).

Run: ``python benchmarks/bench_conv.py [--repeat N]``. The target column holds the issue's targets
and, in square brackets, the MLI C library (x86, -O2) reference times. The convolutions are timed
with 1 and 2 threads of the kernels' pool (``pymli/kernels/_parallel.py``), and a batch of 8
inputs through the kernel's batch axis (one pass) against 8 single calls. The conv2d sa8 case is
also timed as the default plan runs it (best and median), and while another process keeps one
core busy: the stability the issue asks for; both with the optional JIT (with numba, on a CPU with
VNNI: the int8 product of ``pymli/kernels/_jit_conv.py``) and without it (the NumPy float32 GEMM).
"""

from __future__ import annotations

import functools
import multiprocessing
import time

import numpy as np
from _timing import Row, best_of, cli

from pymli import Tensor
from pymli.arith.requant import relu_bounds
from pymli.capi import (
    Conv2dCfg,
    FullyConnectedCfg,
    ReluCfg,
    ReluType,
    mli_krn_conv2d_hwcn_fx16,
    mli_krn_conv2d_hwcn_sa8_sa8_sa32,
    mli_krn_depthwise_conv2d_hwcn_fx16,
    mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32,
    mli_krn_fully_connected_sa8_sa8_sa32,
)
from pymli.kernels import _jit, _parallel
from pymli.kernels import convolution as K

rng = np.random.default_rng(0)


def sa8(shape, zp=0, scale=16384, frac=20, dim=-1, n=None):
    data = rng.integers(-128, 128, shape)
    if dim >= 0:
        return Tensor.from_numpy(data, "SA_8", zero_point=np.zeros(n), scale=np.full(n, scale),
                                 scale_frac_bits=np.full(n, frac), dim=dim)
    return Tensor.from_numpy(data, "SA_8", zero_point=zp, scale=scale, scale_frac_bits=frac)


def bias32(n, in_scale=16384, in_frac=20, w_scale=16384, w_frac=20, dim=-1):
    # bias scale = in_scale * w_scale, expressed with 16 significant bits
    s = in_scale * w_scale
    sh = s.bit_length() - 15
    kw = {"scale": s >> sh, "scale_frac_bits": in_frac + w_frac - sh}
    if dim >= 0:
        kw = {k: np.full(n, v) for k, v in kw.items()}
        kw["zero_point"] = np.zeros(n)
    return Tensor.from_numpy(rng.integers(-5000, 5000, n), "SA_32", dim=dim, **kw)


def _threads(rows: list[Row], name: str, fn, repeat: int, **kw) -> None:  # type: ignore[no-untyped-def]
    for threads in (1, 2):
        with _parallel.threads_limit(threads):
            rows.append(Row(f"{name} ({threads} thread{'s' if threads > 1 else ''})", best_of(fn, repeat), **kw))


def _busy(seconds: float) -> None:
    """Keep one core busy for ``seconds`` (the other process of :func:`_spread`)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _spread(fn, repeat: int, busy: bool) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(best, median) wall time of ``repeat`` calls of ``fn``, optionally while another process
    keeps one core busy."""
    proc = multiprocessing.get_context("spawn").Process(target=_busy, args=(120.0,), daemon=True) if busy else None
    if proc is not None:
        proc.start()
        time.sleep(1.0)  # the child has imported this module and entered its loop
    try:
        fn()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    finally:
        if proc is not None:
            proc.terminate()
            proc.join()
    times.sort()
    return times[0], times[len(times) // 2]


def _stability(rows: list[Row], name: str, fn, repeat: int, **kw) -> None:  # type: ignore[no-untyped-def]
    for jit in (True, False):
        if jit and not _jit.available():
            continue
        prev = _jit.set_enabled(jit)
        try:
            for busy in (False, True):
                best, median = _spread(fn, repeat, busy)
                how = f"{'JIT' if jit else 'NumPy'}, default threads{', one core busy' if busy else ''}"
                rows.append(Row(f"{name} ({how})", best, extra=f"median {median * 1e3:.3f} ms", **kw))
        finally:
            _jit.set_enabled(prev)


def run(repeat: int = 30) -> list[Row]:
    rows: list[Row] = []
    cfg = Conv2dCfg(relu=ReluCfg(ReluType.GEN), padding_top=1, padding_bottom=1, padding_left=1, padding_right=1)
    macs = 32 * 32 * 64 * 3 * 3 * 32

    x = sa8((32, 32, 32), zp=-3)
    w = sa8((3, 3, 32, 64), dim=3, n=64)
    b = bias32(64, dim=0)
    out = Tensor.zeros((32, 32, 64), "SA_8", zero_point=5, scale=20000, scale_frac_bits=14)
    _threads(rows, "conv2d sa8 32x32x32 3x3 64f same", lambda: mli_krn_conv2d_hwcn_sa8_sa8_sa32(x, w, b, cfg, out),
             repeat, macs=macs, target="<= 0.35 ms [C 38]")
    _stability(rows, "conv2d sa8 32x32x32 3x3 64f same", lambda: mli_krn_conv2d_hwcn_sa8_sa8_sa32(x, w, b, cfg, out),
               10 * repeat, macs=macs, target="<= 0.35 ms [C 38]")

    xf = Tensor.from_numpy(rng.integers(-32768, 32768, (32, 32, 32)), "FX_16", frac_bits=12)
    wf = Tensor.from_numpy(rng.integers(-32768, 32768, (3, 3, 32, 64)), "FX_16", frac_bits=15)
    bf = Tensor.from_numpy(rng.integers(-32768, 32768, (64,)), "FX_16", frac_bits=14)
    of = Tensor.zeros((32, 32, 64), "FX_16", frac_bits=8)
    _threads(rows, "conv2d fx16 32x32x32 3x3 64f same", lambda: mli_krn_conv2d_hwcn_fx16(xf, wf, bf, cfg, of),
             repeat, macs=macs, target=">= 10x C [C 28]")

    # the kernel's batch axis: 8 samples in one pass, per sample, against single kernel calls
    xs8 = rng.integers(-128, 128, (8, 32, 32, 32)).astype(np.int8)
    ws8 = rng.integers(-128, 128, (3, 3, 32, 64)).astype(np.int8)
    bs8 = rng.integers(-5000, 5000, 64)
    q = K.Sa8Quant(-3, 16384, 20, 0, np.full(64, 16384), np.full(64, 20), 5, 20000, 14)
    geo = {"pad": (1, 1), "out_hw": (32, 32), "bounds": relu_bounds(1, 8, zero_point=5, scale=20000, frac_bits=14)}
    for threads in (1, 2):
        with _parallel.threads_limit(threads):
            t_batch = best_of(lambda: K.conv2d_hwcn(xs8, ws8, bs8, q, **geo), max(3, repeat // 4)) / 8
            t_single = best_of(lambda: [K.conv2d_hwcn(xi, ws8, bs8, q, **geo) for xi in xs8], max(3, repeat // 4)) / 8
        rows.append(Row(f"conv2d sa8 kernel, batch of 8, per sample ({threads} thread{'s' if threads > 1 else ''})",
                        t_batch, macs=macs, extra=f"8 single calls: {t_single * 1e3:.3f} ms per sample"))

    xd = sa8((56, 56, 64), zp=7)
    wd = sa8((3, 3, 1, 64), dim=3, n=64)
    bd = bias32(64, dim=0)
    od = Tensor.zeros((56, 56, 64), "SA_8", zero_point=0, scale=20000, scale_frac_bits=14)
    _threads(rows, "depthwise sa8 56x56x64 3x3 same",
             lambda: mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32(xd, wd, bd, cfg, od), repeat,
             macs=56 * 56 * 64 * 3 * 3, target="<= 2 ms [C 10.8]")

    # MobileNet-class layers as a loaded TFLite model's prepared step calls them: the kernel with a
    # kept Sa8Quant and read-only weights (their working copy memoised), one image
    for h, c, n, k, s in ((48, 8, 8, 3, 1), (48, 16, 16, 3, 2), (6, 128, 128, 3, 1), (48, 8, 16, 1, 1),
                          (6, 128, 128, 1, 1)):
        dw = k == 3
        xm = rng.integers(-128, 128, (h, h, c)).astype(np.int8)
        wm = rng.integers(-127, 128, (k, k, 1, c) if dw else (k, k, c, n)).astype(np.int8)
        wm.flags.writeable = False
        qm = K.Sa8Quant(-3, 16384, 20, 0, rng.integers(8192, 32767, n), np.full(n, 20), 5, 20000, 14)
        kern = K.depthwise_conv2d_hwcn if dw else K.conv2d_hwcn
        ho = -(-h // s)
        gm = {"stride": (s, s), "pad": (k // 2, k // 2), "out_hw": (ho, ho), "bounds": (-128, 127)}
        rows.append(Row(f"{'depthwise' if dw else 'pointwise'} sa8 {h}x{h}x{c} {k}x{k}{' s2' if s > 1 else ''}"
                        f" -> {n} (prepared kernel call)",
                        best_of(functools.partial(kern, xm, wm, rng.integers(-5000, 5000, n), qm, **gm), 5 * repeat),
                        macs=ho * ho * n * k * k * (1 if dw else c)))

    xdf = Tensor.from_numpy(rng.integers(-32768, 32768, (56, 56, 64)), "FX_16", frac_bits=12)
    wdf = Tensor.from_numpy(rng.integers(-32768, 32768, (3, 3, 1, 64)), "FX_16", frac_bits=15)
    odf = Tensor.zeros((56, 56, 64), "FX_16", frac_bits=10)
    _threads(rows, "depthwise fx16 56x56x64 3x3 same",
             lambda: mli_krn_depthwise_conv2d_hwcn_fx16(xdf, wdf, bf, cfg, odf), repeat,
             macs=56 * 56 * 64 * 3 * 3, target=">= 10x C [C 3.2]")
    fcfg = FullyConnectedCfg(relu=ReluCfg(ReluType.NONE))
    xi = sa8((1024,), zp=3)
    wi = sa8((1024, 256), dim=1, n=256)
    bi = bias32(256, dim=0)
    oi = Tensor.zeros((256,), "SA_8", zero_point=0, scale=20000, scale_frac_bits=14)
    rows.append(Row("fully connected sa8 1024->256",
                    best_of(lambda: mli_krn_fully_connected_sa8_sa8_sa32(xi, wi, bi, fcfg, oi), 7 * repeat),
                    macs=1024 * 256, target="<= 0.1 ms [C 0.21]"))

    xs = sa8((4, 4, 2), zp=0)
    ws = sa8((3, 3, 2, 2))
    bs = bias32(2)
    os_ = Tensor.zeros((4, 4, 2), "SA_8", zero_point=0, scale=20000, scale_frac_bits=14)
    rows.append(Row("conv2d sa8 tiny 4x4x2 (overhead)",
                    best_of(lambda: mli_krn_conv2d_hwcn_sa8_sa8_sa32(xs, ws, bs, cfg, os_), 10 * repeat),
                    target="<= 50 us"))
    return rows


if __name__ == "__main__":
    cli(run, __doc__)

"""Per-call overhead of tiny capi calls (issue 14 item 3: <= 10 us per call through ``pymli.capi``).

Per case, best-of-N time per call of:

* ``capi``: the public function as users call it (argument memo on: a repeated call with unchanged
  arguments skips the normaliser, the checks and the parameter derivation);
* ``no memo``: the same call with the memo switched off (:func:`pymli.checks.entry.memo_enabled`):
  fast-path argument predicates, every check and derivation on every call (the path before the memo),
  on copies of the tensors (own data arrays and lists): the plain path of a move writes its
  destination's struct fields anew, which would make the next ``capi`` call miss the memo;
* ``run``: what remains of a call after its plan: views, the kernel and the output writes;
* ``facade``: the cost of the entry guard itself on a repeated call (timed with the plan's ``run``
  replaced by a no-op, so that kernel noise does not enter it); ``capi`` ~ ``facade`` + ``run``.

The variants are timed in interleaved rounds, in CPU time of this thread (``time.thread_time``: a
loaded machine that deschedules the process does not count; caches shared with other processes still
do, so compare rows of one run).

The tiny fully connected and conv2d rows run :class:`pymli.kernels.conv_prepared.FusedLayer`'s compiled
twin when numba is installed (the JIT on); ``PYMLI_JIT=0`` times its NumPy form.

Run: python benchmarks/calls.py [--repeat N] [--number N]
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np
from _timing import Row, cli

from pymli import ElType, Lut, Tensor, capi
from pymli.capi.move import MovCfg
from pymli.capi.types import Conv2dCfg, FullyConnectedCfg, PoolCfg, ReluCfg, ReluType
from pymli.checks import entry


def _cases() -> list[tuple[str, str, tuple]]:
    rng = np.random.default_rng(0)
    x8 = Tensor.from_numpy(rng.integers(-100, 100, 8), ElType.SA_8, zero_point=1, scale=3, scale_frac_bits=4)
    y8 = Tensor.from_numpy(rng.integers(-100, 100, 8), ElType.SA_8, zero_point=-2, scale=5, scale_frac_bits=5)
    o8 = Tensor.zeros((8,), ElType.SA_8, zero_point=0, scale=7, scale_frac_bits=5)
    m8 = Tensor.zeros((8,), ElType.SA_8, zero_point=1, scale=3, scale_frac_bits=4)  # max/min: same params
    s8 = Tensor.from_numpy(np.array([20]), ElType.SA_8, zero_point=0, scale=1, scale_frac_bits=7)
    xf = Tensor.from_numpy(rng.integers(-1000, 1000, 8), ElType.FX_16, frac_bits=8)
    yf = Tensor.from_numpy(rng.integers(-1000, 1000, 8), ElType.FX_16, frac_bits=8)
    of = Tensor.zeros((8,), ElType.FX_16, frac_bits=8)
    sf = Tensor.from_numpy(np.array([20]), ElType.FX_16, frac_bits=7)
    fin = Tensor.from_numpy(rng.integers(-100, 100, 16), ElType.SA_8, zero_point=0, scale=3, scale_frac_bits=7)
    w = Tensor.from_numpy(rng.integers(-100, 100, (16, 16)), ElType.SA_8, zero_point=[0] * 16, scale=[5] * 16,
                          scale_frac_bits=[9] * 16, dim=1)
    b = Tensor.from_numpy(rng.integers(-1000, 1000, 16), ElType.SA_32, zero_point=[0] * 16, scale=[15] * 16,
                          scale_frac_bits=[16] * 16, dim=0)
    fout = Tensor.zeros((16,), ElType.SA_8, zero_point=0, scale=9, scale_frac_bits=6)
    wf = Tensor.from_numpy(rng.integers(-1000, 1000, (16, 16)), ElType.FX_16, frac_bits=10)
    bf = Tensor.from_numpy(rng.integers(-1000, 1000, 16), ElType.FX_16, frac_bits=12)
    finf = Tensor.from_numpy(rng.integers(-1000, 1000, 16), ElType.FX_16, frac_bits=8)
    foutf = Tensor.zeros((16,), ElType.FX_16, frac_bits=6)
    cin = Tensor.from_numpy(rng.integers(-100, 100, (4, 4, 2)), ElType.SA_8, zero_point=0, scale=3, scale_frac_bits=7)
    cw = Tensor.from_numpy(rng.integers(-100, 100, (3, 3, 2, 2)), ElType.SA_8, zero_point=[0, 0], scale=[5, 6],
                           scale_frac_bits=[9, 9], dim=3)
    cb = Tensor.from_numpy(rng.integers(-1000, 1000, 2), ElType.SA_32, zero_point=[0, 0], scale=[15, 18],
                           scale_frac_bits=[16, 16], dim=0)
    cout = Tensor.zeros((2, 2, 2), ElType.SA_8, zero_point=0, scale=9, scale_frac_bits=6)
    cout_pad = Tensor.zeros((4, 4, 2), ElType.SA_8, zero_point=0, scale=9, scale_frac_bits=6)
    pad1 = Conv2dCfg(padding_top=1, padding_bottom=1, padding_left=1, padding_right=1)
    pin = Tensor.from_numpy(rng.integers(-1000, 1000, (4, 4, 2)), ElType.FX_16, frac_bits=8)
    pout = Tensor.zeros((2, 2, 2), ElType.FX_16, frac_bits=8)
    lut = Lut(data=np.zeros(capi.mli_krn_sigm_get_lut_size() // 2, np.int16), capacity=capi.mli_krn_sigm_get_lut_size())
    capi.mli_krn_sigm_create_lut(lut)
    big_in = Tensor.from_numpy(rng.integers(-100, 100, (64, 64, 32)), ElType.SA_8, zero_point=1, scale=3,
                               scale_frac_bits=4)
    big_out = Tensor.zeros((64, 64, 32), ElType.SA_8)
    big_in16 = Tensor.from_numpy(rng.integers(-30000, 30000, (64, 64, 32)), ElType.FX_16, frac_bits=10)
    big_out16 = Tensor.zeros((64, 64, 32), ElType.FX_16)
    mov_out = Tensor.zeros((64, 64, 32), ElType.SA_8, zero_point=-7, scale=20000, scale_frac_bits=20)
    mov_out16 = Tensor.zeros((64, 64, 32), ElType.FX_16, frac_bits=3)
    relu, fc, pool = ReluCfg(ReluType.GEN), FullyConnectedCfg(), PoolCfg(2, 2, 2, 2)
    cases = [
        ("relu sa8, 8 el", "mli_krn_relu_sa8", (x8, relu, o8)),
        ("relu fx16, 8 el", "mli_krn_relu_fx16", (xf, relu, of)),
        ("leaky relu sa8, 8 el", "mli_krn_leaky_relu_sa8", (x8, s8, o8)),
        ("leaky relu fx16, 8 el", "mli_krn_leaky_relu_fx16", (xf, sf, of)),
    ]
    for op in ("add", "sub", "mul", "max", "min"):
        cases.append((f"eltwise {op} sa8, 8 el", f"mli_krn_eltwise_{op}_sa8",
                      (x8, x8, m8) if op in ("max", "min") else (x8, y8, o8)))
        cases.append((f"eltwise {op} fx16, 8 el", f"mli_krn_eltwise_{op}_fx16", (xf, yf, of)))
    cases += [
        ("fully connected sa8, 16 -> 16", "mli_krn_fully_connected_sa8_sa8_sa32", (fin, w, b, fc, fout)),
        ("fully connected fx16, 16 -> 16", "mli_krn_fully_connected_fx16", (finf, wf, bf, fc, foutf)),
        ("conv2d sa8 3x3, 4x4x2 -> 2x2x2", "mli_krn_conv2d_hwcn_sa8_sa8_sa32", (cin, cw, cb, Conv2dCfg(), cout)),
        ("conv2d sa8 3x3 pad 1, 4x4x2 -> 4x4x2", "mli_krn_conv2d_hwcn_sa8_sa8_sa32", (cin, cw, cb, pad1, cout_pad)),
        ("maxpool fx16 2x2 s2, 4x4x2", "mli_krn_maxpool_hwc_fx16", (pin, pool, pout)),
        ("avepool fx16 2x2 s2, 4x4x2", "mli_krn_avepool_hwc_fx16", (pin, pool, pout)),
        ("sigm fx16, 8 el", "mli_krn_sigm_fx16", (xf, lut, of)),
        ("relu sa8, 64x64x32", "mli_krn_relu_sa8", (big_in, relu, big_out)),
        ("relu fx16, 64x64x32", "mli_krn_relu_fx16", (big_in16, relu, big_out16)),
        ("mov sync copy sa8, 64x64x32", "mli_mov_tensor_sync", (big_in, MovCfg(), mov_out)),
        ("mov sync copy fx16, 64x64x32", "mli_mov_tensor_sync", (big_in16, MovCfg(), mov_out16)),
    ]
    return cases


def _rounds(fns: list[Callable[[], object]], repeat: int, number: int) -> list[float]:
    """Best over ``repeat`` interleaved rounds of each function's mean time per call, in seconds."""
    best = [float("inf")] * len(fns)
    for f in fns:
        f()
    for _ in range(repeat):
        for i, f in enumerate(fns):
            t0 = time.thread_time()
            for _ in range(number):
                f()
            best[i] = min(best[i], (time.thread_time() - t0) / number)
    return best


def _own(a: object) -> object:
    """``a``, or for a tensor a copy with its own data array and lists (the same field values)."""
    if isinstance(a, Tensor):
        return dataclasses.replace(a, data=None if a.data is None else a.data.copy(), shape=list(a.shape),
                                   mem_stride=list(a.mem_stride))
    return a


def _memo_off(fn: Callable[..., object], args: tuple) -> Callable[[], object]:
    args = tuple(map(_own, args))

    def call() -> object:
        was = entry.memo_enabled(False)
        try:
            return fn(*args)
        finally:
            entry.memo_enabled(was)
    return call


def run(repeat: int = 15, number: int = 100) -> list[Row]:
    rows = []
    for label, name, args in _cases():
        fn = capi.FUNCTIONS[name]
        fn(*args)
        fn(*args)
        key = tuple(map(id, args))
        entry_ = fn.memo[key]
        plan = entry_[3]
        n = max(1, number // 50) if "64x64" in label else number
        t_capi, t_plain, t_run = _rounds([lambda: fn(*args), _memo_off(fn, args), lambda: plan(*args)], repeat, n)
        fn.memo[key] = (*entry_[:3], lambda *a: None)
        try:
            (t_facade,) = _rounds([lambda: fn(*args)], repeat, number)
        finally:
            fn.memo[key] = entry_
        rows.append(Row(label, t_capi,
                        extra=f"no memo {t_plain * 1e6:6.1f} us | run {t_run * 1e6:6.1f} us | "
                              f"facade {t_facade * 1e6:4.1f} us",
                        target="<= 10 us (issue 14)"))
    return rows


if __name__ == "__main__":
    cli(run, __doc__)

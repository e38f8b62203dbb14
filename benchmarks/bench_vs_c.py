"""pymli against the MLI 2.0.2 C library, side by side on identical operands (issue 14's shapes).

Each case builds its operands once, calls ``pymli.capi`` and the C function (``libmli.so`` built by
``../shared/mli/build.sh`` with CMake's Release flags, ``-O3 -DNDEBUG``, loaded through ctypes, see
``_cmli.py``) on the same input buffers, asserts that the two output buffers are bit-identical, then
times both (best of N wall time; the C time includes the ctypes call, about 1 us). Ratio = C time /
pymli time (above 1: pymli is faster).

    python benchmarks/bench_vs_c.py [--repeat N] [--only conv,relu] [--blas_threads 1]

``--blas_threads`` limits OpenBLAS's threads (threadpoolctl) for the whole run: 0 keeps the
default. The kernels pin BLAS to one thread for their products (``pymli/kernels/_blas.py``) and
split large convolutions over their own thread pool (``pymli/kernels/_parallel.py``); the
convolutions and FC are timed with 1 and 2 pool threads in their own rows when ``--threads_rows``
is on (the default).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from _cmli import COMPILE_FLAGS, CCall, c_copy, load
from _timing import Row, best_of, fmt_time
from bench_rnn import rnn_operands

from pymli import capi
from pymli.arith.lut import create_lut
from pymli.capi.move import MovCfg
from pymli.kernels import _jit, _parallel
from pymli.capi.types import (
    ArgmaxCfg, Conv2dCfg, FullyConnectedCfg, L2NormalizeCfg, PermuteCfg, PoolCfg, ReluCfg, ReluType, RnnCellCfg,
    RnnDirection, RnnOutActivation, RnnResults, SoftmaxCfg,
)
from pymli.tensor import Tensor

try:  # optional: controls OpenBLAS's thread count at run time
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover - optional dependency
    threadpool_limits = None


@dataclass
class Case:
    """One side-by-side case: the C/pymli function name, its pymli arguments, which of them are written."""

    group: str
    name: str
    shape: str
    args: list[Any]
    outs: tuple[int, ...]
    threads: int = 0  # BLAS threads for this row (0: the run's setting)


_rng = np.random.default_rng(2026)


def _sa8(shape: tuple[int, ...], zp: int = 0, scale: int = 16384, frac: int = 20, dim: int = -1) -> Tensor:
    data = _rng.integers(-128, 128, shape)
    if dim >= 0:
        n = shape[dim]
        return Tensor.from_numpy(data, "SA_8", zero_point=np.zeros(n), scale=_rng.integers(12000, 32000, n),
                                 scale_frac_bits=np.full(n, frac), dim=dim)
    return Tensor.from_numpy(data, "SA_8", zero_point=zp, scale=scale, scale_frac_bits=frac)


def _bias32(n: int, x: Tensor, w: Tensor) -> Tensor:
    """Per-channel sa32 bias with scale = in_scale * w_scale (16 significant bits), as MLI requires."""
    scale = np.empty(n, np.int64)
    frac = np.empty(n, np.int64)
    for i in range(n):
        s = int(x.scale) * int(np.asarray(w.scale).reshape(-1)[i])
        sh = s.bit_length() - 15
        scale[i], frac[i] = s >> sh, int(x.scale_frac_bits) + int(np.asarray(w.scale_frac_bits).reshape(-1)[i]) - sh
    return Tensor.from_numpy(_rng.integers(-5000, 5000, n), "SA_32", zero_point=np.zeros(n), scale=scale,
                             scale_frac_bits=frac, dim=0)


def _fx16(shape: tuple[int, ...], frac: int, lo: int = -32768, hi: int = 32768) -> Tensor:
    return Tensor.from_numpy(_rng.integers(lo, hi, shape), "FX_16", frac_bits=frac)


def _cases() -> Iterator[Case]:
    same = Conv2dCfg(relu=ReluCfg(ReluType.GEN), padding_top=1, padding_bottom=1, padding_left=1, padding_right=1)
    # convolutions (BLAS-bound): sa8 and fx16 32x32x32, 3x3, 64 filters, same padding
    x = _sa8((32, 32, 32), zp=-3)
    w = _sa8((3, 3, 32, 64), dim=3)
    conv_sa8 = [x, w, _bias32(64, x, w), same,
                Tensor.zeros((32, 32, 64), "SA_8", zero_point=5, scale=20000, scale_frac_bits=14)]
    conv_fx16 = [_fx16((32, 32, 32), 12), _fx16((3, 3, 32, 64), 15, -4096, 4096), _fx16((64,), 14), same,
                 Tensor.zeros((32, 32, 64), "FX_16", frac_bits=8)]
    xd = _sa8((56, 56, 64), zp=7)
    wd = _sa8((3, 3, 1, 64), dim=3)
    dw_sa8 = [xd, wd, _bias32(64, xd, wd), same,
              Tensor.zeros((56, 56, 64), "SA_8", zero_point=0, scale=20000, scale_frac_bits=14)]
    dw_fx16 = [_fx16((56, 56, 64), 12), _fx16((3, 3, 1, 64), 15), _fx16((64,), 14), same,
               Tensor.zeros((56, 56, 64), "FX_16", frac_bits=10)]
    xi = _sa8((1024,), zp=3)
    wi = _sa8((1024, 256), dim=1)
    fc_sa8 = [xi, wi, _bias32(256, xi, wi), FullyConnectedCfg(ReluCfg(ReluType.NONE)),
              Tensor.zeros((256,), "SA_8", zero_point=0, scale=20000, scale_frac_bits=14)]
    fc_fx16 = [_fx16((1024,), 12), _fx16((1024, 256), 15, -2048, 2048), _fx16((256,), 14),
               FullyConnectedCfg(ReluCfg(ReluType.NONE)), Tensor.zeros((256,), "FX_16", frac_bits=8)]
    for threads in (1, 2):
        yield Case("conv", "mli_krn_conv2d_hwcn_sa8_sa8_sa32", "32x32x32 3x3 ->64 same", conv_sa8, (4,), threads)
        yield Case("conv", "mli_krn_conv2d_hwcn_fx16", "32x32x32 3x3 ->64 same", conv_fx16, (4,), threads)
        yield Case("conv", "mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32", "56x56x64 3x3 same", dw_sa8, (4,), threads)
        yield Case("conv", "mli_krn_depthwise_conv2d_hwcn_fx16", "56x56x64 3x3 same", dw_fx16, (4,), threads)
    for threads in (1, 2):
        yield Case("fc", "mli_krn_fully_connected_sa8_sa8_sa32", "1024 -> 256", fc_sa8, (4,), threads)
    yield Case("fc", "mli_krn_fully_connected_fx16", "1024 -> 256", fc_fx16, (4,))

    # eltwise 64x64x32
    shape = (64, 64, 32)
    a8, b8 = _sa8(shape, zp=-7, scale=20000, frac=20), _sa8(shape, zp=7, scale=30000, frac=21)
    a16, b16 = _fx16(shape, 10), _fx16(shape, 10)
    c8 = _sa8(shape, zp=-7, scale=20000, frac=20)  # max / min take operands with equal parameters
    for op in ("add", "sub", "mul", "max", "min"):
        if op in ("max", "min"):
            yield Case("eltwise", f"mli_krn_eltwise_{op}_sa8", "64x64x32", [a8, c8, Tensor.zeros(
                shape, "SA_8", zero_point=-7, scale=20000, scale_frac_bits=20)], (2,))
        else:
            o8 = Tensor.zeros(shape, "SA_8", zero_point=2, scale=31000, scale_frac_bits=20)
            yield Case("eltwise", f"mli_krn_eltwise_{op}_sa8", "64x64x32", [a8, b8, o8], (2,))
        yield Case("eltwise", f"mli_krn_eltwise_{op}_fx16", "64x64x32", [a16, b16,
                                                                         Tensor.zeros(shape, "FX_16", frac_bits=10)],
                   (2,))
    # ReLU family 64x64x32
    x8 = _sa8(shape, zp=-7, scale=20000, frac=20)
    x16 = _fx16(shape, 10)
    for rt in (ReluType.GEN, ReluType.RELU_1, ReluType.RELU_6):
        yield Case("relu", "mli_krn_relu_sa8", f"64x64x32 {rt.name}", [x8, ReluCfg(rt), Tensor.zeros(
            shape, "SA_8", zero_point=-7, scale=20000, scale_frac_bits=20)], (2,))
        yield Case("relu", "mli_krn_relu_fx16", f"64x64x32 {rt.name}", [x16, ReluCfg(rt),
                                                                      Tensor.zeros(shape, "FX_16", frac_bits=10)], (2,))
    slope8 = Tensor.from_numpy(np.array(51, np.int8), "SA_8", zero_point=0, scale=16384, scale_frac_bits=21)
    slope16 = Tensor.from_numpy(np.array(3277, np.int16), "FX_16", frac_bits=15)
    yield Case("relu", "mli_krn_leaky_relu_sa8", "64x64x32", [x8, slope8, Tensor.zeros(
        shape, "SA_8", zero_point=3, scale=23000, scale_frac_bits=20)], (2,))
    yield Case("relu", "mli_krn_leaky_relu_fx16", "64x64x32", [x16, slope16,
                                                              Tensor.zeros(shape, "FX_16", frac_bits=10)], (2,))
    # pooling 3x3 on 32x32x64
    pshape = (32, 32, 64)
    p8 = _sa8(pshape, zp=-3, scale=20000, frac=20)
    p16 = _fx16(pshape, 10)
    for label, cfg, o in (("3x3 s1 same", PoolCfg(3, 3, 1, 1, 1, 1, 1, 1), 32), ("3x3 s2 valid", PoolCfg(3, 3, 2, 2),
                                                                                 15)):
        for kind in ("avepool", "maxpool"):
            yield Case("pool", f"mli_krn_{kind}_hwc_sa8", f"32x32x64 {label}", [p8, cfg, Tensor.zeros(
                (o, o, 64), "SA_8", zero_point=-3, scale=20000, scale_frac_bits=20)], (2,))
            yield Case("pool", f"mli_krn_{kind}_hwc_fx16", f"32x32x64 {label}", [p16, cfg, Tensor.zeros(
                (o, o, 64), "FX_16", frac_bits=10)], (2,))
    # data movement
    yield Case("move", "mli_mov_tensor_sync", "sa8 64x64x32 copy", [x8, MovCfg(), Tensor.zeros(
        shape, "SA_8", zero_point=-7, scale=20000, scale_frac_bits=20)], (2,))
    yield Case("move", "mli_mov_tensor_sync", "fx16 64x64x32 copy", [x16, MovCfg(),
                                                                     Tensor.zeros(shape, "FX_16", frac_bits=10)], (2,))
    perm = PermuteCfg([2, 0, 1, 3])
    yield Case("move", "mli_krn_permute_sa8", "64x64x32 [2,0,1]", [x8, perm, Tensor.zeros(
        (32, 64, 64), "SA_8", zero_point=-7, scale=20000, scale_frac_bits=20)], (2,))
    yield Case("move", "mli_krn_permute_fx16", "64x64x32 [2,0,1]", [x16, perm,
                                                                    Tensor.zeros((32, 64, 64), "FX_16", frac_bits=10)],
               (2,))
    # LUT activations, softmax, l2_normalize, argmax on 64x64x32
    sigm, tanh, smax, l2 = (create_lut(k) for k in ("sigm", "tanh", "softmax", "l2_normalize"))
    xs16 = _fx16(shape, 11)
    for kind, lut in (("sigm", sigm), ("tanh", tanh)):
        yield Case("lut", f"mli_krn_{kind}_sa8", "64x64x32", [x8, lut, Tensor.zeros(shape, "SA_8")], (2,))
        yield Case("lut", f"mli_krn_{kind}_fx16", "64x64x32", [xs16, lut, Tensor.zeros(shape, "FX_16")], (2,))
    for axis, label in ((-1, "whole"), (2, "axis 2")):
        yield Case("lut", "mli_krn_softmax_sa8", f"64x64x32 {label}", [x8, smax, SoftmaxCfg(axis),
                                                                        Tensor.zeros(shape, "SA_8")], (3,))
        yield Case("lut", "mli_krn_softmax_fx16", f"64x64x32 {label}", [xs16, smax, SoftmaxCfg(axis),
                                                                         Tensor.zeros(shape, "FX_16")], (3,))
        yield Case("lut", "mli_krn_l2_normalize_sa8", f"64x64x32 {label}", [x8, None, l2, L2NormalizeCfg(axis),
                                                                             Tensor.zeros(shape, "SA_8")], (4,))
        yield Case("lut", "mli_krn_l2_normalize_fx16", f"64x64x32 {label}", [xs16, None, l2, L2NormalizeCfg(axis),
                                                                              Tensor.zeros(shape, "FX_16")], (4,))
    for axis, k, rows, label in ((-1, 1, 1, "whole top1"), (-1, 5, 1, "whole top5"), (2, 3, 32, "axis 2 top3")):
        yield Case("lut", "mli_krn_argmax_sa8", f"64x64x32 {label}", [x8, ArgmaxCfg(axis, k),
                                                                       Tensor.zeros((rows, k), "SA_32")], (2,))
        yield Case("lut", "mli_krn_argmax_fx16", f"64x64x32 {label}", [x16, ArgmaxCfg(axis, k),
                                                                        Tensor.zeros((rows, k), "SA_32")], (2,))
    # recurrent cells: 64 inputs -> 128 units, 16 steps
    yield from _rnn_cases(sigm, tanh)


def _rnn_cases(sigm: Any, tanh: Any) -> Iterator[Case]:
    n_in, m, steps = 64, 128, 16
    for cell, gates in (("lstm", 4), ("gru", 3)):
        for kind in ("sa8_sa8_sa32", "fx16"):
            o = rnn_operands(kind, gates, steps, _rng, n_in, m)
            x, h0, wi, wo, b, out, el, q = (o[k] for k in ("x", "h0", "wi", "wo", "b", "out", "el", "q"))
            size = 1 if el == "SA_8" else 2
            cfg = RnnCellCfg(RnnDirection.FORWARD, RnnResults.ALL, RnnOutActivation.TANH, gates * m * size)
            shape = f"{n_in}->{m} x {steps} steps"
            if cell == "lstm":
                yield Case("rnn", f"mli_krn_lstm_cell_{kind}", shape,
                           [x, h0, wi, wo, b, tanh, sigm, cfg, Tensor.zeros([m], el, **q), out], (8, 9))
            else:
                yield Case("rnn", f"mli_krn_gru_cell_{kind}", shape, [x, h0, wi, wo, b, tanh, sigm, cfg, out], (8,))


def _limits(threads: int) -> Any:
    if threads and threadpool_limits is not None:
        return threadpool_limits(limits=threads, user_api="blas")
    return _Null()


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: object) -> None:
        return None


def _out_bytes(t: Tensor) -> bytes:
    return t.data.tobytes()


def _measure(lib: Any, case: Case, repeat: int) -> tuple[float, float]:
    py_fn: Callable[..., Any] = capi.FUNCTIONS[case.name]
    # bit-identity on fresh copies of every written tensor (LSTM's cell is read and written)
    py_args = list(case.args)
    c_args = list(case.args)
    for i in case.outs:
        py_args[i] = c_copy(case.args[i])
        c_args[i] = c_copy(case.args[i])
    call_c = CCall(lib, case.name, c_args)
    status = call_c()
    if status != 0:
        raise RuntimeError(f"{case.name} {case.shape}: C status {status}")
    py_fn(*py_args)
    for i in case.outs:
        if _out_bytes(py_args[i]) != _out_bytes(c_args[i]):
            raise AssertionError(f"{case.name} {case.shape}: output {i} differs from libmli")
    # th: threads of the kernels' own pool (pymli/kernels/_parallel.py); BLAS stays on one thread in each
    with _limits(case.threads), _parallel.threads_limit(case.threads or None):
        t_py = _best(lambda: py_fn(*py_args), repeat)
        t_c = _best(call_c, repeat)
    return t_py, t_c


SHORT_CALL = 1e-4
"""Calls faster than this (s) are timed over SHORT_REPEAT runs after SHORT_WARMUP calls."""
SHORT_REPEAT, SHORT_WARMUP = 200, 20


def _best(fn: Callable[[], Any], repeat: int) -> float:
    """``best_of(fn, repeat)``; for a call under SHORT_CALL, the best of SHORT_REPEAT runs after a longer
    warm-up: the first ~10 calls after any pause take 1.5-8x the settled time (6 us moves measured 8-50 us),
    so that 10 runs of a few microseconds report the ramp rather than the call."""
    t = best_of(fn, 3)
    if t >= SHORT_CALL:
        return min(t, best_of(fn, repeat, warmup=0))
    return best_of(fn, max(repeat, SHORT_REPEAT), warmup=SHORT_WARMUP)


def measure(repeat: int = 10, only: str = "", blas_threads: int = 0, threads_rows: bool = True,
            echo: bool = True) -> list[tuple]:
    """Measure every case; returns (group, kernel, shape, threads, pymli s, C s) rows (empty without C)."""
    lib = load()
    if isinstance(lib, str):
        print(f"C library unavailable: {lib}")
        return []
    groups = {g for g in only.split(",") if g}
    rows = []
    with _limits(blas_threads):
        for case in _cases():
            if groups and case.group not in groups:
                continue
            if case.threads and not threads_rows:
                if case.threads != 1:
                    continue
                case.threads = 0
            t_py, t_c = _measure(lib, case, repeat)
            rows.append((case.group, case.name, case.shape, case.threads, t_py, t_c))
            if echo:
                print(f"{case.name:44s} {case.shape:24s} {case.threads or '':>2}  {fmt_time(t_py):>10s} "
                      f"{fmt_time(t_c):>10s}  {t_c / t_py:7.2f}x", flush=True)
    return rows


def run(repeat: int = 10, only: str = "") -> list[Row]:
    """The cases as ``_timing.Row`` for ``run_all.py``: pymli's time, and the C time and ratio as the extra column."""
    rows = []
    for _group, name, shape, threads, t_py, t_c in measure(repeat, only, echo=False):
        label = f"{name} {shape}" + (f" ({threads} BLAS thread{'s' if threads > 1 else ''})" if threads else "")
        rows.append(Row(label, t_py, extra=f"C {fmt_time(t_c)}, {t_c / t_py:.2f}x"))
    return rows


def jit_status() -> str:
    """Whether pymli's optional JIT runs in this process (the figures differ a lot: benchmarks/README.md)."""
    if _jit.enabled():
        return f"JIT on (numba {importlib.metadata.version('numba')})"
    if not _jit.available():
        return "JIT off: numba is not installed, NumPy only (pip install 'pymli-arc[bench]' for the JIT)"
    return "JIT off (PYMLI_JIT=0): NumPy only"


def main(argv: list[str] | None = None) -> None:
    """Print the side-by-side table (the command line above)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--only", default="", help="comma-separated groups: conv,fc,eltwise,relu,pool,move,lut,rnn")
    ap.add_argument("--blas_threads", type=int, default=0)
    ap.add_argument("--threads_rows", action=argparse.BooleanOptionalAction, default=True)
    a = ap.parse_args(argv)
    print(f"MLI 2.0.2 C library: {COMPILE_FLAGS}; outputs asserted bit-identical; ratio = C / pymli")
    print(f"pymli: {jit_status()}")
    print(f"{'kernel':44s} {'shape':24s} {'th':>2}  {'pymli':>10s} {'C':>10s}  {'ratio':>8s}")
    rows = measure(a.repeat, a.only, a.blas_threads, a.threads_rows)
    slower = [r for r in rows if r[4] > r[5]]
    print(f"{len(rows)} cases, {len(slower)} slower than C" + (": " + ", ".join(
        f"{r[1]} {r[2]}" for r in slower) if slower else ""))


if __name__ == "__main__":
    main(sys.argv[1:])

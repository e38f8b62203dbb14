"""Speed of the recurrent kernels: time per step of an LSTM (and GRU) with 64 inputs and 128 units.

Run from the repository root: ``python benchmarks/bench_rnn.py [--steps T] [--repeat N]``. Prints one
line per kernel variant with the best time per call and per sequence step (time.perf_counter, best
of N calls of the checked facade function on a sequence of T frames), then the HAR example's shape
(9 -> 32 units, 128 steps), a "cold" call (the cells' 65536-entry tables cleared before each call,
as on a first call with new quantisation) and one ``rnn_dense`` step of the HAR unrolled LSTM.
"""

from __future__ import annotations

import numpy as np
from _timing import Row, best_of, cli

from pymli import capi
from pymli.capi.types import RnnCellCfg, RnnDenseCfg, RnnDirection, RnnOutActivation, RnnResults
from pymli.kernels import recurrent as recurrent_kernels
from pymli.ops.lut_activations import activation_lut
from pymli.tensor import Tensor

N_IN, M = 64, 128


def rnn_operands(kind: str, gates: int, steps: int, rng: np.random.Generator, n_in: int | None = None,
                 m: int | None = None) -> dict:
    """Random operands of one recurrent cell call (also the side-by-side benchmark's, bench_vs_c).

    Args:
        kind: ``"sa8_sa8_sa32"`` or an fx16 variant.
        gates: 4 (LSTM) or 3 (GRU).
        steps: sequence length.
        rng: the random generator.
        n_in: inputs per step (default ``N_IN``).
        m: units (default ``M``).

    Returns:
        ``x``, ``h0``, ``wi``, ``wo``, ``b``, ``out`` tensors, the element type name ``el`` and the
        output's parameters ``q``.
    """
    n_in, m = n_in or N_IN, m or M
    if kind == "sa8_sa8_sa32":
        sa = dict(zero_point=0, scale=16384, scale_frac_bits=21)
        x = Tensor.from_numpy(rng.integers(-128, 128, (steps, n_in)), "SA_8", zero_point=-3, scale=16384,
                              scale_frac_bits=21)
        wi = Tensor.from_numpy(rng.integers(-127, 128, (gates, n_in, m)), "SA_8", **sa)
        wo = Tensor.from_numpy(rng.integers(-127, 128, (gates, m, m)), "SA_8", **sa)
        b = Tensor.from_numpy(rng.integers(-2**20, 2**20, (gates, m)), "SA_32", zero_point=0, scale=8192,
                              scale_frac_bits=27)
        q = dict(zero_point=0, scale=16384, scale_frac_bits=21)
        el = "SA_8"
    else:
        x = Tensor.from_numpy(rng.integers(-2**14, 2**14, (steps, n_in)), "FX_16", frac_bits=14)
        wi = Tensor.from_numpy(rng.integers(-2**12, 2**12, (gates, n_in, m)), "FX_16", frac_bits=15)
        wo = Tensor.from_numpy(rng.integers(-2**12, 2**12, (gates, m, m)), "FX_16", frac_bits=15)
        b = Tensor.from_numpy(rng.integers(-2**12, 2**12, (gates, m)), "FX_16", frac_bits=14)
        q = dict(frac_bits=15)
        el = "FX_16"
    h0 = Tensor.zeros([m], el, **q)
    out = Tensor.zeros([steps, m], el, **q)
    return dict(x=x, h0=h0, wi=wi, wo=wo, b=b, out=out, el=el, q=q)


def run(repeat: int = 5, steps: int = 16) -> list[Row]:
    global N_IN, M
    rows = _cells(repeat, steps, "")
    n_in, m = N_IN, M
    try:
        N_IN, M = 9, 32
        rows += _cells(repeat, 128, " (HAR shape)", cells=("lstm",))
        rows += _cells(repeat, 128, " (HAR shape, cold tables)", cells=("lstm",), cold=True)
    finally:
        N_IN, M = n_in, m
    rows.append(_dense_row(repeat))
    return rows


def _dense_row(repeat: int) -> Row:
    rng = np.random.default_rng(1)
    xs = [Tensor.from_numpy(rng.integers(-2**14, 2**14, 32), "FX_16", frac_bits=12) for _ in range(2)]
    ws = [Tensor.from_numpy(rng.integers(-2**14, 2**14, (32, 32)), "FX_16", frac_bits=15) for _ in range(2)]
    b = Tensor.from_numpy(rng.integers(-2**12, 2**12, 32), "FX_16", frac_bits=14)
    out = Tensor.zeros([32], "FX_16", frac_bits=11)
    cfg = RnnDenseCfg(inputs_num=2)
    t = best_of(lambda: capi.mli_krn_rnn_dense_fx16(xs, ws, b, cfg, out), 50 * repeat)
    return Row("mli_krn_rnn_dense_fx16 2 x (32 -> 32)", t, macs=2 * 32 * 32)


def _cells(repeat: int, steps: int, label: str, cells: tuple[str, ...] = ("lstm", "gru"),
           cold: bool = False) -> list[Row]:
    rng = np.random.default_rng(0)
    tanh, sigm = activation_lut("tanh"), activation_lut("sigm")
    rows = []
    for cell, gates in (("lstm", 4), ("gru", 3)):
        if cell not in cells:
            continue
        for kind in ("sa8_sa8_sa32", "fx16", "fx16_fx8_fx8"):
            if kind == "fx16_fx8_fx8":
                continue  # same code path as fx16 apart from the accumulator width
            o = rnn_operands(kind, gates, steps, rng)
            el_size = 1 if o["el"] == "SA_8" else 2
            cfg = RnnCellCfg(RnnDirection.FORWARD, RnnResults.ALL, RnnOutActivation.TANH, gates * M * el_size)
            fn = getattr(capi, f"mli_krn_{cell}_cell_{kind}")
            if cell == "lstm":
                c = Tensor.zeros([M], o["el"], **o["q"])

                def call(fn=fn, o=o, cfg=cfg, c=c):
                    fn(o["x"], o["h0"], o["wi"], o["wo"], o["b"], tanh, sigm, cfg, c, o["out"])
            else:

                def call(fn=fn, o=o, cfg=cfg):
                    fn(o["x"], o["h0"], o["wi"], o["wo"], o["b"], tanh, sigm, cfg, o["out"])

            if cold:
                def call(call=call):  # type: ignore[no-untyped-def]
                    recurrent_kernels._TABLES.clear()
                    call()
            t = best_of(call, repeat)  # the warm-up call fills caches and does first-call imports
            rows.append(Row(f"{fn.__name__} {N_IN}->{M} x {steps} steps{label}", t,
                            macs=gates * (N_IN + M) * M * steps, extra=f"{1e3 * t / steps:.3f} ms/step"))
    return rows


if __name__ == "__main__":
    cli(run, __doc__)

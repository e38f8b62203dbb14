"""Speed of the recurrent kernels: time per step of an LSTM (and GRU) with 64 inputs and 128 units.

Run from the repository root: ``python benchmarks/bench_rnn.py [--steps T] [--repeat N]``. Prints one
line per kernel variant with the best time per call and per sequence step (time.perf_counter, best
of N calls of the checked facade function on a sequence of T frames).
"""

from __future__ import annotations

import numpy as np
from _timing import Row, best_of, cli

from pymli import capi
from pymli.capi.types import RnnCellCfg, RnnDirection, RnnOutActivation, RnnResults
from pymli.ops.lut_activations import activation_lut
from pymli.tensor import Tensor

N_IN, M = 64, 128


def _operands(kind: str, gates: int, steps: int, rng: np.random.Generator) -> dict:
    if kind == "sa8_sa8_sa32":
        sa = dict(zero_point=0, scale=16384, scale_frac_bits=21)
        x = Tensor.from_numpy(rng.integers(-128, 128, (steps, N_IN)), "SA_8", zero_point=-3, scale=16384,
                              scale_frac_bits=21)
        wi = Tensor.from_numpy(rng.integers(-127, 128, (gates, N_IN, M)), "SA_8", **sa)
        wo = Tensor.from_numpy(rng.integers(-127, 128, (gates, M, M)), "SA_8", **sa)
        b = Tensor.from_numpy(rng.integers(-2**20, 2**20, (gates, M)), "SA_32", zero_point=0, scale=8192,
                              scale_frac_bits=27)
        q = dict(zero_point=0, scale=16384, scale_frac_bits=21)
        el = "SA_8"
    else:
        x = Tensor.from_numpy(rng.integers(-2**14, 2**14, (steps, N_IN)), "FX_16", frac_bits=14)
        wi = Tensor.from_numpy(rng.integers(-2**12, 2**12, (gates, N_IN, M)), "FX_16", frac_bits=15)
        wo = Tensor.from_numpy(rng.integers(-2**12, 2**12, (gates, M, M)), "FX_16", frac_bits=15)
        b = Tensor.from_numpy(rng.integers(-2**12, 2**12, (gates, M)), "FX_16", frac_bits=14)
        q = dict(frac_bits=15)
        el = "FX_16"
    h0 = Tensor.zeros([M], el, **q)
    out = Tensor.zeros([steps, M], el, **q)
    return dict(x=x, h0=h0, wi=wi, wo=wo, b=b, out=out, el=el, q=q)


def run(repeat: int = 5, steps: int = 16) -> list[Row]:
    rng = np.random.default_rng(0)
    tanh, sigm = activation_lut("tanh"), activation_lut("sigm")
    rows = []
    for cell, gates in (("lstm", 4), ("gru", 3)):
        for kind in ("sa8_sa8_sa32", "fx16", "fx16_fx8_fx8"):
            if kind == "fx16_fx8_fx8":
                continue  # same code path as fx16 apart from the accumulator width
            o = _operands(kind, gates, steps, rng)
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

            t = best_of(call, repeat)  # the warm-up call fills caches and does first-call imports
            rows.append(Row(f"{fn.__name__} {N_IN}->{M} x {steps} steps", t, macs=gates * (N_IN + M) * M * steps,
                            extra=f"{1e3 * t / steps:.3f} ms/step"))
    return rows


if __name__ == "__main__":
    cli(run, __doc__)

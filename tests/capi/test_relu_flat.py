"""The ReLU plan for dense whole buffers (one clip ufunc call with 0-d bounds) against an int64 oracle.

Seeded random sizes on both sides of the old small-array threshold, every ReLU type, fx8 / fx16 /
sa8 with extreme values and random quantisation, both rounding platforms; repeated calls replay the
kept plan (the memo), which must be the flat one, and each replay reads the current input.
"""

from __future__ import annotations

import numpy as np
import pytest

from pymli import capi
from pymli.arith.activation import relu_limits
from pymli.capi.types import ReluCfg, ReluType
from pymli.config import use_platform
from pymli.errors import Status
from pymli.formats import ElType
from pymli.tensor import Tensor

_FNS = {ElType.FX_8: "mli_krn_relu_fx8", ElType.FX_16: "mli_krn_relu_fx16", ElType.SA_8: "mli_krn_relu_sa8"}


def _oracle(x: np.ndarray, kind: ReluType, t: Tensor) -> np.ndarray:
    bits = t.el_type.dtype.itemsize * 8
    if t.el_type.is_sa:
        lo, hi = relu_limits(int(kind), bits, int(t.zero_point), int(t.scale), int(t.scale_frac_bits))
    else:
        lo, hi = relu_limits(int(kind), bits, 0, 1, int(t.frac_bits))
    return np.minimum(np.maximum(x.astype(np.int64), lo), hi)


@pytest.mark.parametrize("platform", ["vpx", "em"])
@pytest.mark.parametrize("el", list(_FNS))
def test_flat_relu_matches_the_oracle(platform: str, el: ElType) -> None:
    rng = np.random.default_rng(int(el) * 7 + len(platform))
    info = np.iinfo(el.dtype)
    fn = capi.FUNCTIONS[_FNS[el]]
    with use_platform(platform):
        for n in (1, 2, 7, 511, 512, 513, 4099):
            shape = [n] if n < 500 else [n // 7, 7] if n % 7 == 0 else [n]
            for kind in ReluType:
                if el.is_sa:
                    q = dict(zero_point=int(rng.integers(-128, 128)), scale=int(rng.integers(1, 32768)),
                             scale_frac_bits=int(rng.integers(0, 32)))
                else:
                    q = dict(frac_bits=int(rng.integers(0, info.bits)))
                x = Tensor.from_numpy(rng.integers(info.min, info.max, shape, endpoint=True), el, **q)
                out = Tensor.zeros(shape, el, **q)
                cfg = ReluCfg(kind)
                fn.memo.clear()
                for _ in range(3):
                    x.data[:] = rng.integers(info.min, info.max, x.data.shape[0], endpoint=True)
                    x.data[: min(2, n)] = (info.min, info.max)[: min(2, n)]
                    assert fn(x, cfg, out) is Status.OK
                    assert np.array_equal(out.data.astype(np.int64), _oracle(x.data, kind, x)), (n, kind)
                (plan,) = fn.memo.values()
                assert plan[3].__name__ == "run_flat"

"""Networks may call MLI's specialised functions (as a C program would): same bits as the generic ones."""

from __future__ import annotations

import numpy as np
import pytest

from pymli.models import AvgPool, Conv2D, DepthwiseConv2D, MaxPool, Network
from pymli.models.quantize import SCHEMES, quantize_network


def _net(rng: np.random.Generator) -> Network:
    return Network((8, 8, 3), [
        Conv2D(rng.normal(0, .3, (3, 3, 3, 4)), rng.normal(0, .1, 4), padding=1, relu="gen", name="c3"),
        Conv2D(rng.normal(0, .3, (1, 1, 4, 4)), rng.normal(0, .1, 4), name="c1"),
        DepthwiseConv2D(rng.normal(0, .3, (5, 5, 1, 4)), rng.normal(0, .1, 4), padding=2, name="dw5"),
        MaxPool(2, stride=2, name="mp2"),
        AvgPool(3, stride=1, padding=1, name="ap3"),
    ])


@pytest.mark.parametrize("scheme", SCHEMES)
def test_specialised_run_equals_generic_run(scheme: str) -> None:
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, (3, 8, 8, 3))
    q = quantize_network(_net(np.random.default_rng(5)), x, scheme)
    names = {k: f.__name__ for k, f in q.functions(specialise=True).items()}
    assert names["c3"].endswith("_k3x3") and names["c1"].endswith("_k1x1") and names["dw5"].endswith("_k5x5")
    assert names["mp2"].endswith("_k2x2") and names["ap3"].endswith("_k3x3")
    generic, special = q.run(x), q.run(x, specialise=True)
    for k in generic.values:
        assert np.array_equal(generic[k], special[k]), k

"""Every pymli.models layer kind (recurrent, group / transpose conv, PReLU, permute, L2 norm, arg-max),
exported in the three MLI builds and checked against the real MLI 2.0.2."""

from __future__ import annotations

import numpy as np
import pytest

from pymli.config import VPX
from pymli.export import export_c
from pymli.models import (GRU, LSTM, Argmax, Conv2D, FullyConnected, GroupConv2D, L2Normalize, LeakyReLU, Network,
                          Permute, PReLU, TransposeConv2D)
from pymli.models.quantize import quantize_network

from .mli_c import compile_check, run_check


def _nets(rng: np.random.Generator) -> dict[str, tuple[Network, np.ndarray]]:
    n = rng.normal
    seq, img = rng.uniform(-1, 1, (12, 5, 3)), rng.uniform(-1, 1, (12, 6, 6, 4))
    return {
        "gru": (Network((5, 3), [GRU(n(0, .4, (3, 3, 4)), n(0, .4, (3, 4, 4)), n(0, .1, (3, 4)), name="g"),
                                 FullyConnected(n(0, .3, (20, 3)), np.zeros(3), name="fc")]), seq),
        "gru_last_backward": (Network((5, 3), [GRU(n(0, .4, (3, 3, 4)), n(0, .4, (3, 4, 4)), n(0, .1, (3, 4)),
                                                   results="last", direction="backward", name="g")]), seq),
        "lstm": (Network((5, 3), [LSTM(n(0, .4, (4, 3, 4)), n(0, .4, (4, 4, 4)), n(0, .1, (4, 4)), name="l"),
                                  FullyConnected(n(0, .3, (20, 3)), np.zeros(3), name="fc")]), seq),
        "fc_per_step": (Network((5, 3), [FullyConnected(n(0, .4, (3, 4)), np.zeros(4), per_step=True, name="f"),
                                         FullyConnected(n(0, .3, (20, 3)), np.zeros(3), name="fc")]), seq),
        "group_conv": (Network((6, 6, 4), [GroupConv2D(n(0, .4, (3, 3, 2, 4)), np.zeros(4), padding=1)]), img),
        "transpose_conv": (Network((6, 6, 4), [TransposeConv2D(n(0, .4, (3, 3, 4, 2)), np.zeros(2), stride=2,
                                                               padding=1)]), img),
        "leaky_prelu": (Network((6, 6, 4), [LeakyReLU(0.1), PReLU(rng.uniform(0, .3, 4))]), img),
        "permute_l2norm": (Network((6, 6, 4), [Permute([2, 0, 1]), L2Normalize()]), img),
        "argmax": (Network((6, 6, 4), [Conv2D(n(0, .4, (1, 1, 4, 5)), np.zeros(5)), Argmax()]), img),
    }


NAMES = sorted(_nets(np.random.default_rng(0)))


@pytest.mark.parametrize("build", ["sa8", "fx16", "fx16_fx8_fx8"])
@pytest.mark.parametrize("name", NAMES)
def test_layer_kind_exports_bit_exact(name, build, mli_vpx, tmp_path):
    net, x = _nets(np.random.default_rng(2))[name]
    res = export_c(quantize_network(net, x, build), tmp_path, None, VPX)
    r = run_check(compile_check(mli_vpx, tmp_path))
    assert r.returncode == 0 and "4/4 vectors bit-exact" in r.stdout, r.stdout + r.stderr
    assert res.plan.peak <= 1.1 * res.plan.lower_bound

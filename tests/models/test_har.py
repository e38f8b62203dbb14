"""MLI's HAR-smartphone LSTM example rebuilt with pymli.models, bit for bit against the C library.

The packs in ../shared/models/har_smartphone record 30 sequences (128 steps x 9 channels) through the
three builds. The FX builds run the second LSTM as the example's own loop of rnn_dense / sigm / tanh
/ eltwise calls (UnrolledLSTM); SA8 uses the library LSTM cell twice. Everything runs on all 30
sequences except the unrolled LSTM (about 13 facade calls per step, ~6 s per build for the 30
sequences); PYMLI_QUICK_MODELS=1 checks it on the first two vectors only. The library cells take
well under a second for all 30.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from pymli.models import mli_argmax
from pymli.testing.paths import shared_dir

from ._packs import cached_pack, skip_missing

HAR = shared_dir() / "models" / "har_smartphone"
VARIANTS = ["fx16", "fx16_fx8_fx8", "sa8"]
FULL = os.environ.get("PYMLI_QUICK_MODELS") != "1"
N_UNROLLED = None if FULL else 2

pytestmark = pytest.mark.skipif(not HAR.is_dir(), reason=f"{HAR} is absent")

def pack(variant: str):  # type: ignore[no-untyped-def]
    return cached_pack(HAR / variant)


@pytest.mark.parametrize("variant", VARIANTS)
def test_structure(variant: str) -> None:
    p = pack(variant)
    kinds = [la.kind for la in p.network]
    assert [la.name for la in p.network] == ["fc1", "lstm2", "lstm3", "fc4"]
    assert kinds[:2] == ["fully_connected", "lstm"] and kinds[3] == "fully_connected"
    assert kinds[2] == ("lstm" if variant == "sa8" else "unrolled_lstm")
    assert p.network.shapes()["fc1"] == (128, 32) and p.network.shapes()["lstm3"] == (1, 32)
    assert p.accuracy == pytest.approx(0.9)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("layer", ["fc1", "lstm2", "lstm3", "fc4"])
def test_layer_bit_exact(variant: str, layer: str) -> None:
    p = pack(variant)
    la = p.network[layer]
    qs = p.in_qparams[layer]
    skip_missing([la.function_name(qs), *getattr(la, "functions", lambda q: [])(qs)])
    n = N_UNROLLED if la.kind == "unrolled_lstm" else None
    out, _ = p.network.run_layer(layer, p.recorded_inputs(layer, n), qs)
    ref = p.recorded_output(layer, n)
    assert np.array_equal(out, ref.reshape(out.shape)), f"{variant}/{layer} differs"
    if layer == "fc4":  # the accuracy the C example printed, from our fc4 on its recorded inputs
        assert np.array_equal(mli_argmax(out), p.vectors["pred"])
        assert (mli_argmax(out) == p.labels).mean() == pytest.approx(0.9)


@pytest.mark.parametrize("variant", VARIANTS)
def test_end_to_end(variant: str) -> None:
    p = pack(variant)
    skip_missing(p.network.missing_functions())
    n_rnn = N_UNROLLED if any(la.kind == "unrolled_lstm" for la in p.network) else None
    res = p.network.run(p.inputs[:n_rnn])
    for layer in p.call_keys:
        assert np.array_equal(res[layer], p.recorded_output(layer, n_rnn).reshape(res[layer].shape)), layer
    extras = [k for k in res.values if "." in k]
    assert extras, "LSTM intermediates were not captured"
    for k in extras:
        key = k if k.endswith(".cell") else k + ".out"
        assert np.array_equal(res[k], p.vectors[key][:n_rnn]), k
    assert np.array_equal(res.predictions(), p.vectors["pred"][:n_rnn])

"""MLI's CIFAR-10 example rebuilt with pymli.models, checked bit for bit against the C library's recording.

For each of the three builds (fx16, fx16_fx8_fx8, sa8) the packs in ../shared/models/cifar10 hold the
constants, the call list and every intermediate of 20 test images. Each layer is checked alone (fed
the recorded input) and the whole network end to end; the accuracy must equal what the C example
printed. Layers whose MLI function is not in pymli.capi yet are skipped with the function's name.
"""

from __future__ import annotations

import numpy as np
import pytest

from pymli.models import mli_argmax
from pymli.models.qparams import QParams
from pymli.testing.paths import shared_dir

from ._packs import cached_pack, skip_missing

CIFAR = shared_dir() / "models" / "cifar10"
VARIANTS = {"fx16": 0.80, "fx16_fx8_fx8": 0.85, "sa8": 0.75}
LAYERS = ["conv1", "pool1", "conv2", "pool2", "conv3", "pool3", "ip1", "prob"]

pytestmark = pytest.mark.skipif(not CIFAR.is_dir(), reason=f"{CIFAR} is absent")

def pack(variant: str):  # type: ignore[no-untyped-def]
    return cached_pack(CIFAR / variant)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_pack_structure(variant: str) -> None:
    p = pack(variant)
    assert [la.name for la in p.network] == LAYERS
    assert p.accuracy == pytest.approx(VARIANTS[variant])
    # the recorded outputs give the printed accuracy with MLI's arg-max tie rule
    pred = mli_argmax(p.vectors["prob.out"])
    assert np.array_equal(pred, p.vectors["pred"])
    assert (pred == p.labels).mean() == pytest.approx(VARIANTS[variant])


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("layer", LAYERS)
def test_layer_bit_exact(variant: str, layer: str) -> None:
    """One layer fed the C library's recorded input reproduces its recorded output for all 20 images."""
    p = pack(variant)
    net = p.network
    la = net[layer]
    skip_missing([la.function_name(p.in_qparams[layer])])
    xs = p.recorded_inputs(layer)
    out, q = net.run_layer(layer, xs, p.in_qparams[layer])
    ref = p.vectors[p.call_keys[layer]]
    assert out.dtype == ref.dtype
    bad = np.argwhere(out != ref)
    assert bad.size == 0, f"{variant}/{layer}: {len(bad)} values differ, first at {bad[0].tolist()}"
    call = next(c for c in p.model["calls"] if c["id"] == layer)
    out_arg = next(a for a in call["args"] if a["param"] == "out")
    after = out_arg.get("el_params_after_call")
    if after:
        want = QParams.from_dict({"el_type": out_arg["tensor"]["el_type"], **after})
        assert q == want, f"{variant}/{layer}: output params {q.describe()} != {want.describe()}"


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_softmax_lut_equals_c(variant: str) -> None:
    skip_missing(["mli_krn_softmax_get_lut_size", "mli_krn_softmax_create_lut"])
    from pymli.models.layers import Softmax

    p = pack(variant)
    sm = Softmax()
    sm.prepare()
    ref = p.network["prob"].lut
    assert sm.lut is not None and ref is not None
    assert (sm.lut.length, sm.lut.in_frac_bits, sm.lut.out_frac_bits, sm.lut.input_offset) == \
        (ref.length, ref.in_frac_bits, ref.out_frac_bits, ref.input_offset)
    assert np.array_equal(sm.lut.data[: ref.length], ref.data[: ref.length])


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_end_to_end(variant: str) -> None:
    """The whole network on all 20 images: every intermediate, the classes and the accuracy equal C's."""
    p = pack(variant)
    skip_missing(p.network.missing_functions())
    res = p.network.run(p.inputs)
    for layer, key in p.call_keys.items():
        assert np.array_equal(res[layer], p.vectors[key]), f"{variant}/{layer} differs from {key}"
    pred = res.predictions()
    assert np.array_equal(pred, p.vectors["pred"])
    assert (pred == p.labels).mean() == pytest.approx(VARIANTS[variant])


def test_float_path_tracks_fx16() -> None:
    """The float64 run of the dequantised fx16 network stays close to the C library's fx16 results."""
    p = pack("fx16")
    ref = p.network.run_float(p.inputs)
    conv1 = QParams.fx(16, 12).dequantize(p.vectors["conv1.out"])
    assert np.abs(conv1 - ref["conv1"]).max() <= 2.0 ** -12   # one output LSB (round-to-nearest)
    assert (mli_argmax(ref["prob"]) == p.labels).mean() >= 0.75

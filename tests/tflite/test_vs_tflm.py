"""pymli against the TFLite Micro reference interpreter (skipped when ``tflite-micro`` is missing)."""

import numpy as np
import pytest

from pymli.tflite import load
from pymli.tflite.compare import TFLM_MISSING, compare, random_input, run_tflm, tflm_available
from pymli.tflite.examples import OP_CASES, TFLM_CANNOT_RUN, cnn10

pytestmark = pytest.mark.skipif(not tflm_available(), reason=f"TFLite Micro not importable: {TFLM_MISSING}")

CASES = sorted(c for c in OP_CASES if c not in TFLM_CANNOT_RUN)


@pytest.mark.parametrize("platform", ["vpx", "em"])
@pytest.mark.parametrize("case", CASES)
def test_single_operator_within_one_lsb(case, platform):
    """Every tensor within 1 LSB; operators without rescaling bit for bit."""
    build, exact = OP_CASES[case]
    for seed in (0, 1):
        m = load(build(seed), mapping="mli")
        x = random_input(m, 6, seed)
        if case == "argmax":
            # distinct values per row: TFLite takes the first of equal maxima, MLI the last
            rng = np.random.default_rng(seed)
            x = np.stack([rng.permutation(256)[: x[0].size].reshape(x.shape[1:]) - 128 for _ in range(6)]).astype(np.int8)
        rep = compare(m, x, platform=platform)
        assert rep.rows, case
        for r in rep.rows:
            assert r.max_lsb <= (0 if exact else 1), (case, seed, r)
        if exact:
            assert rep.output_equal


def test_argmax_ties_follow_mli_rule():
    """On ties MLI returns the last maximum and TFLite the first: documented difference."""
    m = load(OP_CASES["argmax"][0](0), mapping="mli")
    x = np.zeros((1, 3, 9), np.int8)
    x[0, :, 2] = x[0, :, 5] = 100
    mine = m.run(x)
    theirs = run_tflm(m, x)[m.output_index]
    assert np.all(mine == 5) and np.all(theirs == 2)


def test_cnn10_round_trip():
    """>= 10 layers (conv, depthwise, pooling, FC, softmax): load, run, compare."""
    m = load(cnn10(), mapping="mli")
    assert len(m.network) >= 10
    kinds = {la.kind for la in m.network}
    assert {"conv2d", "depthwise_conv2d", "maxpool", "avepool", "fully_connected", "softmax"} <= kinds
    rep = compare(m, samples=12)
    assert len(rep.rows) == len(m.info.ops)
    for r in rep.rows:
        assert r.own_max_lsb is not None and r.own_max_lsb <= 1, r      # each operator on TFLM's inputs
        assert r.max_lsb <= 3, r                                          # after propagation
        assert r.snr_pymli_db > 30 and r.snr_tflm_db > 30, r
        assert abs(r.snr_pymli_db - r.snr_tflm_db) < 3, r
    assert rep.max_lsb >= 0 and "conv" in rep.markdown()
    d = rep.to_dict()
    assert d["samples"] == 12 and len(d["tensors"]) == len(rep.rows)


def test_cnn10_float_io():
    m = load(cnn10(seed=3, float_io=True), mapping="mli")
    assert m.float_input and m.float_output
    x = np.random.default_rng(0).uniform(-2, 2, (4, 16, 16, 3)).astype(np.float32)
    rep = compare(m, x)
    ref = run_tflm(m, x, [m.output_index])[m.output_index]
    mine = m.run(x)
    assert mine.dtype == np.float32 and mine.shape == ref.shape
    step = 1 / 256
    assert np.abs(mine - ref).max() <= 3 * step + 1e-7
    assert all(r.own_max_lsb is None or r.own_max_lsb <= 1 for r in rep.rows)


def test_plot_and_json(tmp_path):
    pytest.importorskip("matplotlib")
    rep = compare(OP_CASES["conv_same_s1_pc"][0](0), samples=2)
    rep.plot(tmp_path / "c.png")
    rep.to_json(tmp_path / "c.json")
    assert (tmp_path / "c.png").stat().st_size > 1000 and (tmp_path / "c.json").read_text().startswith("{")


def test_float_input_quantisation_is_tflites():
    """QUANTIZE at the graph input: same int8 values as TFLite Micro, ties included."""
    m = load(OP_CASES["quant_dequant"][0](0), mapping="mli")
    s, z = m.in_quant
    rng = np.random.default_rng(0)
    halves = rng.choice([-0.5, 0.5, 0.25, 0.0], (20, 4, 4, 3))
    x = ((rng.integers(-128, 128, (20, 4, 4, 3)) + halves - z) * np.float32(s)).astype(np.float32)
    x = np.concatenate([x, rng.uniform(-5, 5, (20, 4, 4, 3)).astype(np.float32)])
    ref = run_tflm(m, x, [m.q_input_index])[m.q_input_index]
    assert np.array_equal(ref, m.prepare_input(x))

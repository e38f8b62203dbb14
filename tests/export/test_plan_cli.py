"""Buffer plan properties, the ``pymli export`` command, the generated CMake build and refusals."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from pymli.cli import main
from pymli.config import EM, VPX
from pymli.export import FILES, ExportError, export_c, plan_buffers, prepare
from pymli.export.plan import ALIGN
from pymli.export.trace import Program, Region
from pymli.models import Conv2D, Eltwise, FullyConnected, MaxPool, Network, ReLU
from pymli.models.quantize import quantize_network

from .mli_c import options, run_check


def _program(regions: list[Region]) -> Program:
    return Program([], regions, [], -1, -1, np.dtype(np.int8), np.dtype(np.int8), (1,), (1,), VPX)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 300), st.integers(0, 12), st.integers(0, 6)), min_size=1, max_size=14))
def test_plan_never_overlaps_live_regions(spec):
    regions = [Region(i, n, "arena", a, a + d) for i, (n, a, d) in enumerate(spec)]
    plan = plan_buffers(_program(regions))
    for r in regions:
        assert plan.offsets[r.id] % ALIGN == 0
        assert plan.offsets[r.id] + r.nbytes <= plan.peak
    for r, q in zip(regions, regions[1:] + regions[:1]):
        for q in regions:
            if q.id == r.id or not (r.first <= q.last and q.first <= r.last):
                continue
            a, b = plan.offsets[r.id], plan.offsets[q.id]
            assert a + r.nbytes <= b or b + q.nbytes <= a, (r, q)
    assert plan.lower_bound <= plan.peak
    assert sum(len(b.regions) for b in plan.buffers) == len(regions)


def test_plan_chain_reuses_memory():
    # a chain a -> b -> c -> d: a and c can share, b and d can share
    regions = [Region(i, 100, "arena", i, i + 1) for i in range(4)]
    plan = plan_buffers(_program(regions))
    assert plan.peak == plan.lower_bound == 200
    assert len(plan.buffers) == 2


def _branchy(build: str) -> Network:
    rng = np.random.default_rng(5)
    net = Network((6, 6, 3), [
        Conv2D(rng.normal(0, 0.3, (3, 3, 3, 4)), rng.normal(0, 0.1, 4), padding=1, name="a"),
        ReLU(name="r"),
        Conv2D(rng.normal(0, 0.3, (1, 1, 4, 4)), np.zeros(4), name="b", inputs=["a"]),
        Eltwise("add", name="sum", inputs=["r", "b"]),
        MaxPool(2, stride=2, name="p"),
        FullyConnected(rng.normal(0, 0.2, (36, 7)), np.zeros(7), name="fc"),
    ], name="branchy")
    return quantize_network(net, rng.uniform(-1, 1, (16, 6, 6, 3)), build)


def test_cli_export_writes_files_and_plan(tmp_path):
    pytest.importorskip("tflite", reason="pymli.tflite needs the 'tflite' package")
    from pymli.tflite import examples

    model = tmp_path / "m.tflite"
    model.write_bytes(examples.cnn10(1))
    x = np.random.default_rng(0).uniform(-1, 1, (3, 16, 16, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["export", str(model), str(out), "--test-input", str(tmp_path / "x.npy"),
                                  "--platform", "em", "--plan"])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    assert "peak activation memory" in r.output and "buffer 0:" in r.output and "shared by" in r.output
    assert "ROUND_MODE CONVERGENT" in (out / "CMakeLists.txt").read_text()
    assert "#define N_VECTORS 3" in (out / "model_check.c").read_text()


def test_cli_refusal_is_a_clean_error(tmp_path):
    pytest.importorskip("tflite", reason="pymli.tflite needs the 'tflite' package")
    from pymli.tflite import examples

    model = tmp_path / "argmax.tflite"
    model.write_bytes(examples.OP_CASES["argmax"][0](0))
    r = CliRunner().invoke(main, ["export", str(model), str(tmp_path / "out")])
    assert r.exit_code == 1 and "computed outside MLI" in r.output
    assert not (tmp_path / "out").exists()


def test_peak_within_ten_percent_of_liveness_bound():
    prog, plan, _, _ = prepare(_branchy("sa8"), platform=VPX)
    assert plan.peak <= 1.1 * plan.lower_bound
    # the two branches are alive together: their buffers must not share memory
    live = [r for r in prog.regions if r.kind == "arena" and r.first <= 2 <= r.last]
    assert len(live) >= 2


def test_float_network_is_refused(tmp_path):
    net = Network((4,), [FullyConnected(np.ones((4, 2)), np.zeros(2), name="fc")])
    with pytest.raises(ExportError, match="not quantised"):
        export_c(net, tmp_path / "out")


def test_generated_cmake_builds_mli_for_the_platform(shared_mli_src, tmp_path):
    """The generated CMakeLists.txt builds MLI from -DMLI_SRC with the EM options and model_check passes."""
    export_c(_branchy("fx16"), tmp_path / "m", None, EM)
    text = (tmp_path / "m" / "CMakeLists.txt").read_text()
    assert "set(ROUND_MODE CONVERGENT)" in text and "set(FULL_ACCU OFF)" in text
    b = tmp_path / "build"
    p = subprocess.run(["cmake", "-S", str(tmp_path / "m"), "-B", str(b), f"-DMLI_SRC={shared_mli_src}"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    p = subprocess.run(["cmake", "--build", str(b), "-j", "2"], capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    r = run_check(b / "model_check")
    assert r.returncode == 0 and "4/4 vectors bit-exact" in r.stdout, r.stdout


@pytest.mark.parametrize("platform", [EM], ids=lambda p: "-".join(options(p)))
def test_platform_options_change_the_program(platform, mli_em, tmp_path):
    from .mli_c import compile_check

    export_c(_branchy("sa8"), tmp_path, None, platform)
    r = run_check(compile_check(mli_em, tmp_path))
    assert r.returncode == 0 and "4/4 vectors bit-exact" in r.stdout, r.stdout


@pytest.fixture(scope="session")
def shared_mli_src(mli_em):
    """An MLI source tree (from the cached build) for the CMake test."""
    if shutil.which("cmake") is None:
        pytest.skip("no cmake on this machine")
    return mli_em / "src"


def test_model_check_fails_on_a_wrong_output(mli_vpx, tmp_path):
    """model_check exits 1 and counts the vector when one expected output byte is wrong."""
    from .mli_c import compile_check

    res = export_c(_branchy("sa8"), tmp_path, None, VPX)
    src = (tmp_path / "model_check.c").read_text()
    head, tail = src.split("check_outputs[N_VECTORS][MODEL_OUTPUT_ELEMS] = {\n  {\n    ", 1)
    first, rest = tail.split(",", 1)
    wrong = int(first) + 1 if int(first) < 127 else int(first) - 1
    (tmp_path / "model_check.c").write_text(
        head + "check_outputs[N_VECTORS][MODEL_OUTPUT_ELEMS] = {\n  {\n    " + str(wrong) + "," + rest)
    r = run_check(compile_check(mli_vpx, tmp_path))
    assert r.returncode == 1
    assert f"{len(res.inputs) - 1}/{len(res.inputs)} vectors bit-exact" in r.stdout
    assert "vector 0: output differs" in r.stdout


@pytest.mark.parametrize("build", ["sa8", "fx16"])
def test_input_independent_layer_stays_an_activation(build, mli_vpx, tmp_path):
    """A layer whose output is the same for every input (dead ReLU) is still read from its buffer."""
    from .mli_c import compile_check

    rng = np.random.default_rng(9)
    net = Network((4, 4, 2), [
        Conv2D(rng.normal(0, 0.01, (1, 1, 2, 3)), np.full(3, -5.0), relu="gen", name="dead"),
        Conv2D(rng.normal(0, 0.5, (1, 1, 3, 3)), rng.normal(0, 0.5, 3), name="after"),
        FullyConnected(rng.normal(0, 0.3, (48, 4)), np.zeros(4), name="fc"),
    ])
    qnet = quantize_network(net, rng.uniform(-1, 1, (8, 4, 4, 2)), build)
    res = export_c(qnet, tmp_path, None, VPX)
    assert not any(c.label.startswith("after in") for c in res.program.consts)
    r = run_check(compile_check(mli_vpx, tmp_path))
    assert r.returncode == 0 and "4/4 vectors bit-exact" in r.stdout, r.stdout

"""Exported MLI example networks (CIFAR-10, HAR LSTM; all three builds) compiled against the real MLI 2.0.2."""

from __future__ import annotations

import numpy as np
import pytest

from pymli.config import VPX
from pymli.export import export_c

from pymli.models import load_pack

from ..conftest import shared_dir
from .mli_c import compile_check, run_check

BUILDS = ("fx16", "fx16_fx8_fx8", "sa8")


def load_cached_pack(model: str, build: str):  # type: ignore[no-untyped-def]
    folder = shared_dir() / "models" / model / build
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: the MLI example packs are needed")
    return load_pack(folder)


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("model", ["cifar10", "har_smartphone"])
def test_example_network_exports_bit_exact(model, build, mli_vpx, tmp_path):
    pack = load_cached_pack(model, build)
    x = np.asarray(pack.vectors[pack.input_key])[:3]
    res = export_c(pack, tmp_path, x, VPX)
    # the test vectors are pymli's own outputs, which match the C example's recordings
    assert np.array_equal(res.inputs, x)
    exe = compile_check(mli_vpx, tmp_path)
    p = run_check(exe)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "3/3 vectors bit-exact" in p.stdout
    assert f"peak activation memory: {res.plan.peak} bytes" in p.stdout
    assert f"constant memory: {res.program.const_bytes} bytes" in p.stdout
    assert res.plan.peak <= 1.1 * res.plan.lower_bound
    # the C output equals the output the C example recorded for its last layer
    dump = tmp_path / "dump"
    dump.mkdir()
    assert run_check(exe, "--dump", str(dump)).returncode == 0
    key = pack.call_keys[pack.network.output_name]
    ref = np.asarray(pack.vectors[key])[:3]
    for k in range(3):
        got = np.fromfile(dump / f"out_{k}.bin", dtype=res.outputs.dtype)
        assert np.array_equal(got, ref[k].reshape(-1))

"""The TFLite example models pymli generates, exported and checked against the real MLI 2.0.2."""

from __future__ import annotations

import pytest

pytest.importorskip("tflite", reason="pymli.tflite needs the 'tflite' package (pip install 'tflite>=2.18')")
pytest.importorskip("flatbuffers", reason="pymli.tflite needs 'flatbuffers>=23'")

from pymli.config import VPX  # noqa: E402
from pymli.export import ExportError, export_c  # noqa: E402
from pymli.tflite import examples, load  # noqa: E402

from .mli_c import compile_check, run_check  # noqa: E402

#: example models pymli runs with NumPy glue that has no MLI 2.0 form
REFUSED = {
    "argmax": "output",  # pymli maps MLI's element offsets to indices with NumPy (offset % c)
}

CASES = {**{k: v[0] for k, v in examples.OP_CASES.items()},
         "cnn10": examples.cnn10, "cnn10_float_io": lambda s: examples.cnn10(s, float_io=True)}


@pytest.mark.parametrize("name", sorted(set(CASES) - set(REFUSED)))
def test_tflite_example_exports_bit_exact(name, mli_vpx, tmp_path):
    model = load(CASES[name](0), mapping="mli")
    res = export_c(model, tmp_path, None, VPX, n_default=4)
    p = run_check(compile_check(mli_vpx, tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "4/4 vectors bit-exact" in p.stdout
    assert res.plan.peak <= 1.1 * res.plan.lower_bound


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_tflite_example_without_mli2_form_is_refused(name, tmp_path):
    model = load(CASES[name](0), mapping="mli")
    with pytest.raises(ExportError, match=REFUSED[name]):
        export_c(model, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written on refusal

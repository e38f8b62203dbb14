"""docs/tflite.md: its python example and its console commands run; the CLI commands work."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pymli.cli import main
from pymli.tflite.compare import tflm_available

DOC = Path(__file__).resolve().parents[2] / "docs" / "tflite.md"
#: pymli.tflite modules that import the tflite package (directly or through another one)
_TFLITE_USERS = ("reader", "importer", "compare", "inspect", "loader", "tflm_model", "tgraph", "limits", "optable",
                 "mapping", "operators")


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_doc_python_and_console_examples(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    py = _blocks("python")
    assert py, "docs/tflite.md has no python example"
    for code in py:
        exec(compile(code, str(DOC), "exec"), {})  # noqa: S102 - our own documentation
    assert Path("cnn10.tflite").exists() and Path("x.npy").exists()
    cmds = [ln[2:] for block in _blocks("console") for ln in block.splitlines() if ln.startswith("$ pymli ")]
    assert len(cmds) == 3
    runner = CliRunner()
    for cmd in cmds:
        args = shlex.split(cmd)[1:]
        if args[0] == "compare" and not tflm_available():
            continue
        r = runner.invoke(main, args)
        assert r.exit_code == 0, (cmd, r.output, r.exception)
    assert np.load("y.npy").shape == (2 * 2, 10) or np.load("y.npy").shape[1:] == (10,)
    if tflm_available():
        assert Path("compare.png").exists() and Path("compare.json").exists()


@pytest.mark.skipif(not tflm_available(), reason="TFLite Micro (pip install tflite-micro) not importable")
@pytest.mark.parametrize("mapping", ["tflm", "mli"])
def test_doc_table_is_what_compare_prints(mapping):
    from pymli.tflite import load
    from pymli.tflite.compare import compare
    from pymli.tflite.examples import cnn10

    rows = compare(load(cnn10(), mapping=mapping), samples=16).markdown().splitlines()[2:]
    text = DOC.read_text()
    for row in rows:
        assert row in text, row


def test_doc_operator_table_matches_the_registries():
    from pymli.tflite import optable

    text = DOC.read_text()
    assert optable.markdown() in text, ("docs/tflite.md's operator table differs from the registries: "
                                        "regenerate it with python -m pymli.tflite.optable --write")
    names = {r[0] for r in optable.rows()}
    from pymli.tflite.importer import SUPPORTED_OPS
    from pymli.tflm.handlers import HANDLERS

    assert set(HANDLERS) <= names and set(SUPPORTED_OPS) <= names
    for name, _types, tflm, mli, _status in optable.rows():
        assert (tflm.startswith("MLI") or tflm == "reference") == (name in HANDLERS or name in optable.OFFLOAD)
        assert (mli == "MLI") == (name in SUPPORTED_OPS)


def test_cli_inspect_run_and_errors(tmp_path):
    from pymli.tflite.examples import OP_CASES

    p = tmp_path / "m.tflite"
    p.write_bytes(OP_CASES["conv_same_s1_pc"][0](0))
    runner = CliRunner()
    r = runner.invoke(main, ["inspect", str(p), "--mapping", "mli"])
    assert r.exit_code == 0 and "mli_krn_conv2d_hwcn_sa8_sa8_sa32" in r.output and "headroom" in r.output
    r = runner.invoke(main, ["inspect", str(p)])
    assert r.exit_code == 0 and "mli_krn_conv2d_hwcn_sa8_sa8_sa32" in r.output and "glue defects: none" in r.output
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((7, 6, 3), np.int8))
    for mapping in ("tflm", "mli"):
        r = runner.invoke(main, ["run", str(p), "--input", str(x), "--output", str(tmp_path / "y.npy"),
                                 "--mapping", mapping])
        assert r.exit_code == 0, r.output
        assert np.load(tmp_path / "y.npy").shape == (1, 7, 6, 5)
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"\x00" * 32)
    r = runner.invoke(main, ["inspect", str(bad)])
    assert r.exit_code != 0 and "malformed TFLite model" in r.output
    np.save(x, np.zeros((2, 3), np.int8))
    for mapping in ("tflm", "mli"):
        r = runner.invoke(main, ["run", str(p), "--input", str(x), "--mapping", mapping])
        assert r.exit_code != 0 and "Error" in r.output


def test_cli_compare_without_tflm(monkeypatch, tmp_path):
    import pymli.tflite.compare as c

    monkeypatch.setattr(c, "tflm_available", lambda: False)
    p = tmp_path / "m.tflite"
    from pymli.tflite.examples import OP_CASES

    p.write_bytes(OP_CASES["relu"][0](0))
    r = CliRunner().invoke(main, ["compare", str(p)])
    assert r.exit_code != 0 and "pip install tflite-micro" in r.output


def test_cli_without_tflite_package(monkeypatch, tmp_path):
    """The pymli CLI loads without the tflite package; the TFLite commands say what to install."""
    import sys

    for mod in [m for m in sys.modules if m == "tflite" or m.startswith("tflite.") or
                m in ("pymli.tflite." + s for s in _TFLITE_USERS)]:
        monkeypatch.delitem(sys.modules, mod)
    import pymli.tflite as pkg

    for sub in _TFLITE_USERS:
        monkeypatch.delattr(pkg, sub, raising=False)
    monkeypatch.setitem(sys.modules, "tflite", None)
    p = tmp_path / "m.tflite"
    p.write_bytes(b"\x00" * 16)
    for cmd in (["inspect", str(p)], ["compare", str(p)]):
        r = CliRunner().invoke(main, cmd)
        assert r.exit_code == 1 and "pip install" in r.output, r.output

"""The CLI never prints a traceback for a user error: one line naming the problem, a non-zero exit.

Argument mistakes (paths, counts, seeds, platforms, regexes, input arrays) exit 2, before any work;
errors of the run itself (a malformed model, a pymli error) exit 1.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner, Result

from pymli.cli import main
from pymli.cli._common import Group
from pymli.errors import MliError, Status
from pymli.testing.tflite_models import OP_CASES, cnn10
from pymli.tflite.compare import tflm_available


def _invoke(args: list[str]) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _one_line_error(r: Result, code: int, *needles: str) -> None:
    assert r.exit_code == code, r.output
    assert isinstance(r.exception, SystemExit), repr(r.exception)  # not an escaped exception
    assert "Traceback" not in r.output
    err = [ln for ln in r.output.splitlines() if ln.startswith("Error")]
    assert len(err) == 1, r.output
    for n in needles:
        assert n in r.output, (n, r.output)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("m") / "conv.tflite"
    p.write_bytes(OP_CASES["conv_same_s1_pc"][0](0))  # int8 input [1, 7, 6, 3]
    return p


@pytest.fixture(scope="module")
def float_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("f") / "cnn10_float.tflite"
    p.write_bytes(cnn10(float_io=True))
    return p


def _npy(tmp_path: Path, a: np.ndarray, name: str = "x.npy") -> Path:
    p = tmp_path / name
    np.save(p, a)
    return p


# ------------------------------------------------------------------------------------------ .npy inputs
def test_run_valid_int8_input(model: Path, tmp_path: Path) -> None:
    r = _invoke(["run", model, "--input", _npy(tmp_path, np.zeros((2, 7, 6, 3), np.int8)),
                 "--output", tmp_path / "y.npy", "--platform", "EM"])
    assert r.exit_code == 0, r.output
    assert np.load(tmp_path / "y.npy").shape == (2, 7, 6, 5)


def test_missing_npy(model: Path, tmp_path: Path) -> None:
    _one_line_error(_invoke(["run", model, "--input", tmp_path / "nope.npy"]), 2, "nope.npy", "no such file")


def test_corrupt_npy(model: Path, tmp_path: Path) -> None:
    p = tmp_path / "bad.npy"
    p.write_bytes(b"this is not an array")
    _one_line_error(_invoke(["run", model, "--input", p]), 2, "not a .npy file")
    good = _npy(tmp_path, np.zeros((7, 6, 3), np.int8), "trunc.npy")
    good.write_bytes(good.read_bytes()[:-20])  # header intact, data cut short
    _one_line_error(_invoke(["run", model, "--input", good]), 2, "corrupt .npy file")


def test_pickled_npy_is_never_loaded(model: Path, tmp_path: Path) -> None:
    obj = tmp_path / "obj.npy"
    np.save(obj, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    _one_line_error(_invoke(["run", model, "--input", obj]), 2, "pickled")
    raw = tmp_path / "raw.npy"
    raw.write_bytes(pickle.dumps([1, 2, 3]))
    _one_line_error(_invoke(["run", model, "--input", raw]), 2, "not a .npy file")


def test_npz_instead_of_npy(model: Path, tmp_path: Path) -> None:
    p = tmp_path / "x.npz"
    np.savez(p, x=np.zeros((7, 6, 3), np.int8))
    _one_line_error(_invoke(["run", model, "--input", p]), 2, ".npz archive")


@pytest.mark.parametrize(("arr", "needle"), [
    (np.zeros((2, 3), np.int8), "expected (7, 6, 3) or (N, 7, 6, 3)"),
    (np.zeros((0, 7, 6, 3), np.int8), "empty"),
    (np.full((7, 6, 3), 300, np.int32), "expected int8 values in [-128, 127]"),
    (np.zeros((7, 6, 3), np.bool_), "expected int8"),
    (np.array(["a"] * 126).reshape(7, 6, 3), "not numeric"),
    (np.zeros((7, 6, 3), np.complex64), "not numeric"),
])
def test_wrong_shape_or_dtype(model: Path, tmp_path: Path, arr: np.ndarray, needle: str) -> None:
    _one_line_error(_invoke(["run", model, "--input", _npy(tmp_path, arr)]), 2, needle)


def test_float_input_to_int8_model_needs_quantize(model: Path, tmp_path: Path) -> None:
    x = _npy(tmp_path, np.random.default_rng(0).normal(size=(7, 6, 3)).astype(np.float32))
    _one_line_error(_invoke(["run", model, "--input", x]), 2, "expected int8", "--quantize")
    r = _invoke(["run", model, "--input", x, "--quantize", "--output", tmp_path / "y.npy"])
    assert r.exit_code == 0, r.output
    assert np.load(tmp_path / "y.npy").dtype == np.int8
    nan = _npy(tmp_path, np.full((7, 6, 3), np.nan, np.float32), "nan.npy")
    _one_line_error(_invoke(["run", model, "--input", nan, "--quantize"]), 2, "NaN")


def test_float_model_takes_float_input(float_model: Path, tmp_path: Path) -> None:
    r = _invoke(["run", float_model, "--input", _npy(tmp_path, np.zeros((1, 16, 16, 3), np.float32))])
    assert r.exit_code == 0, r.output
    _one_line_error(_invoke(["run", float_model, "--input", _npy(tmp_path, np.zeros((16, 16, 3), np.int8))]), 2,
                    "starts with QUANTIZE", "float32")


# ------------------------------------------------------------------------------ paths, counts, names
def test_output_in_missing_folder_is_refused_before_the_run(model: Path, tmp_path: Path) -> None:
    x = _npy(tmp_path, np.zeros((7, 6, 3), np.int8))
    _one_line_error(_invoke(["run", model, "--input", x, "--output", tmp_path / "no" / "y.npy"]), 2,
                    "does not exist")
    _one_line_error(_invoke(["run", model, "--input", x, "--output", tmp_path]), 2, "is a directory")
    for opt in ("--json", "--plot"):
        _one_line_error(_invoke(["demo", opt, tmp_path / "missing" / "out"]), 2, opt, "does not exist")
        _one_line_error(_invoke(["compare", model, opt, tmp_path / "missing" / "out"]), 2, opt, "does not exist")


@pytest.mark.parametrize("samples", ["0", "-3", "361"])
def test_demo_samples_out_of_range(samples: str) -> None:
    _one_line_error(_invoke(["demo", "--samples", samples]), 2, "--samples", samples)


@pytest.mark.parametrize("args", [["--samples", "0"], ["--samples", "-1"], ["--seed", "-1"]])
def test_compare_counts_and_seeds(model: Path, args: list[str]) -> None:
    _one_line_error(_invoke(["compare", model, *args]), 2, args[0])


@pytest.mark.skipif(not tflm_available(), reason="the check follows loading the model and the TFLM check")
def test_compare_samples_larger_than_the_data(model: Path, tmp_path: Path) -> None:
    x = _npy(tmp_path, np.zeros((3, 7, 6, 3), np.int8))
    _one_line_error(_invoke(["compare", model, "--input", x, "--samples", "4"]), 2, "expected 1 to 3")


def test_platform_names_any_case(model: Path, tmp_path: Path) -> None:
    x = _npy(tmp_path, np.zeros((7, 6, 3), np.int8))
    for name in ("EM", "Vpx", "VPX-FULL-ACCU"):
        assert _invoke(["run", model, "--input", x, "--platform", name]).exit_code == 0
    assert _invoke(["demo", "--samples", "4", "--platform", "Em"]).exit_code == 0
    for cmd in (["run", model, "--input", x], ["demo"], ["compare", model]):
        _one_line_error(_invoke([*cmd, "--platform", "arm"]), 2, "'arm' is not one of", "em")


def test_bad_only_regex(tmp_path: Path) -> None:
    _one_line_error(_invoke(["verify", tmp_path, "--only", "conv("]), 2, "not a valid regular expression")


def test_malformed_model_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"\x00" * 32)
    _one_line_error(_invoke(["inspect", bad]), 1, "malformed TFLite model")
    x = _npy(tmp_path, np.zeros((7, 6, 3), np.int8))
    _one_line_error(_invoke(["run", bad, "--input", x]), 1, "malformed TFLite model")


# ------------------------------------------------------------------------------------ the top guard
def _group_raising(exc: BaseException) -> click.Group:
    @click.group(cls=Group)
    def g() -> None:
        pass

    @g.command()
    def boom() -> None:
        raise exc

    return g


@pytest.mark.parametrize(("exc", "needle"), [
    (MliError(Status.BAD_TENSOR, "in.shape[0] is 0"), "MLI_STATUS_BAD_TENSOR: in.shape[0] is 0"),
    (PermissionError(13, "Permission denied", "/x/y.npy"), "/x/y.npy: Permission denied"),
])
def test_guard_turns_pymli_and_os_errors_into_one_line(exc: BaseException, needle: str) -> None:
    r = CliRunner().invoke(_group_raising(exc), ["boom"])
    _one_line_error(r, 1, needle)


def test_guard_lets_programming_errors_through() -> None:
    r = CliRunner().invoke(_group_raising(KeyError("bug")), ["boom"])
    assert isinstance(r.exception, KeyError)

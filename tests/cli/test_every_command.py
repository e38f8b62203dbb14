"""Every ``pymli`` command with bad arguments: one line naming the problem, a non-zero exit, no traceback.

Issue 13 item 7, swept over the whole command group: missing files, corrupt / pickled / text ``.npy``
files, output paths in missing folders, counts <= 0, negative seeds, unknown platform names (and
known ones in any case), bad ``--only`` regexes, extra arguments. Usage errors (the argument itself
is wrong) exit 2; an error of the run on the user's data exits 1. Every command of the group, including
ones added after this table, also gets the generic probe of :func:`test_unknown_option_on_every_command`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from pymli.cli import main
from pymli.testing.tflite_models import OP_CASES

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("cli")
    f = {"dir": d, "model": d / "conv.tflite", "good": d / "good.npy", "batch": d / "batch.npy", "obj": d / "obj.npy",
         "corrupt": d / "corrupt.npy", "text": d / "text.npy", "npz": d / "a.npz", "missing": d / "missing.npy",
         "nodir": d / "nodir" / "out.npy", "empty": d / "empty"}
    f["model"].write_bytes(OP_CASES["conv_same_s1_pc"][0](0))  # int8 input [1, 7, 6, 3]
    np.save(f["good"], np.zeros((7, 6, 3), np.int8))
    np.save(f["batch"], np.zeros((2, 7, 6, 3), np.int8))
    np.save(f["obj"], np.array([{"a": 1}], object), allow_pickle=True)
    f["corrupt"].write_bytes(b"\x93NUMPY\x01\x00garbage")
    f["text"].write_text("1 2 3")
    np.savez(f["npz"], x=np.zeros(3))
    f["empty"].mkdir()
    return f


def _bad_npy(*lead: str) -> list[tuple[list[str], int, str]]:
    """The probes of an option that reads a .npy file (``lead``: the arguments before the file): a
    pickled, a corrupt, a text and an .npz file are each refused as a usage error."""
    return [([*lead, f], 2, needle) for f, needle in (("{obj}", "pickled"), ("{corrupt}", "corrupt .npy"),
                                                      ("{text}", "not a .npy file"), ("{npz}", ".npz archive"))]


# command -> [(args with {placeholders}, expected exit code, text the one line must contain)]
PROBES: dict[str, list[tuple[list[str], int, str]]] = {
    "tour": [(["--bogus"], 2, "No such option")],
    "info": [(["extra"], 2, "unexpected extra argument")],
    "verify": [
        (["{missing}"], 2, "does not exist"),
        (["{empty}", "--only", "conv("], 2, "not a valid regular expression"),
        (["{empty}", "--failures", "0"], 2, "positive"),
        (["{empty}"], 1, "no case files"),
    ],
    "demo": [
        (["--samples", "0"], 2, "--samples"),
        (["--samples", "-4"], 2, "--samples"),
        (["--platform", "ARM"], 2, "'ARM' is not one of"),
        (["--json", "{nodir}"], 2, "does not exist"),
        (["--plot", "{nodir}"], 2, "does not exist"),
    ],
    "run": [
        (["{missing}", "--input", "{good}"], 2, "does not exist"),
        (["{model}", "--input", "{missing}"], 2, "no such file"),
        *_bad_npy("{model}", "--input"),
        (["{model}", "--input", "{good}", "--output", "{nodir}"], 2, "does not exist"),
        (["{model}", "--input", "{good}", "--platform", "Arm"], 2, "'Arm' is not one of"),
        (["{model}"], 2, "Missing option '--input'"),
    ],
    "compare": [
        (["{model}", "--samples", "0"], 2, "--samples"),
        (["{model}", "--seed", "-1"], 2, "--seed"),
        *_bad_npy("{model}", "--input"),
        (["{model}", "--json", "{nodir}"], 2, "does not exist"),
        (["{model}", "--plot", "{nodir}"], 2, "does not exist"),
        (["{model}", "--platform", "x86"], 2, "'x86' is not one of"),
    ],
    "inspect": [
        (["{missing}"], 2, "does not exist"),
        (["{dir}"], 2, "is a directory"),
        (["{good}"], 1, "malformed TFLite model"),
    ],
    "eval": [
        (["{model}", "{missing}"], 2, "does not exist"),
        (["{model}", "{obj}"], 1, "pickled"),
        (["{model}", "{corrupt}"], 1, ".npy"),
        (["{model}", "{batch}", "--platform", "zz"], 2, "'zz' is not one of"),
        (["{model}", "{batch}", "--batch", "0"], 2, "--batch"),
        (["{model}", "{batch}", "--labels", "{missing}"], 2, "does not exist"),
    ],
    "export": [
        (["{missing}", "{dir}/out"], 2, "does not exist"),
        *_bad_npy("{model}", "{dir}/out", "--test-input"),
        (["{model}", "{dir}/out", "--platform", "foo"], 2, "'foo' is not one of"),
        (["{model}", "{dir}/out", "--budget", "-1"], 2, "--budget"),
        (["{model}", "{good}"], 2, "is a file"),
    ],
}


def _invoke(args: list[str]) -> Result:
    return CliRunner().invoke(main, args)


def _fill(args: list[str], files: dict[str, Path]) -> list[str]:
    return [a.format(**{k: str(v) for k, v in files.items()}) for a in args]


def test_probed_commands_exist() -> None:
    assert set(PROBES) <= set(main.commands), sorted(set(PROBES) - set(main.commands))


def _one_line(r: Result, code: int, needle: str) -> None:
    assert r.exit_code == code, r.output
    assert isinstance(r.exception, SystemExit), repr(r.exception)  # nothing escaped click
    assert "Traceback" not in r.output
    lines = [ln for ln in r.output.splitlines() if ln.lower().startswith("error")]
    assert len(lines) == 1, r.output
    assert needle in r.output, (needle, r.output)


@pytest.mark.parametrize("cmd", sorted(main.commands))
def test_unknown_option_on_every_command(cmd: str) -> None:
    _one_line(_invoke([cmd, "--no-such-option"]), 2, "No such option")


@pytest.mark.parametrize(("cmd", "i"), [(c, i) for c, probes in PROBES.items() for i in range(len(probes))])
def test_bad_arguments_one_line(cmd: str, i: int, files: dict[str, Path]) -> None:
    args, code, needle = PROBES[cmd][i]
    _one_line(_invoke([cmd, *_fill(args, files)]), code, needle)


@pytest.mark.parametrize("name", ["EM", "Vpx", "VPX-FULL-ACCU"])
def test_known_platforms_in_any_case(name: str, files: dict[str, Path]) -> None:
    """Each command with --platform takes the preset names in any letter case (probed up to parsing:
    the other arguments are wrong on purpose, so the command stops right after the platform)."""
    for cmd in (["run", "{model}", "--input", "{missing}"], ["compare", "{model}", "--samples", "0"],
                ["demo", "--samples", "0"], ["export", "{model}", "{dir}/out", "--budget", "0"],
                ["eval", "{model}", "{batch}", "--batch", "0"]):
        r = _invoke([*_fill(cmd, files), "--platform", name])
        assert r.exit_code == 2 and "is not one of" not in r.output, r.output


def test_verify_module_missing_folder(files: dict[str, Path]) -> None:
    """``python -m pymli.verify`` on a missing folder: one line, non-zero, no traceback."""
    r = subprocess.run([sys.executable, "-m", "pymli.verify", str(files["dir"] / "nope")], capture_output=True,
                       text=True, cwd=ROOT, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "Traceback" not in out, out
    assert len([ln for ln in out.splitlines() if ln.strip()]) <= 2, out

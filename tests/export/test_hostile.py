"""Untrusted names and sizes never reach the C source unchecked."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from pymli.config import VPX
from pymli.export import FILES, ExportError, export_c
from pymli.export.cgen import comment
from pymli.models import Conv2D, FullyConnected, MaxPool, Network, Softmax
from pymli.models.quantize import quantize_network

from .mli_c import compile_check, run_check

HOSTILE = ['a */ int evil; /*', 'q"uote\'s', "new\nline\r\n#include <stdio.h>", "#include \"x.h\"",
           "nön-ascii ☃ 漢字", "tri??/\n", "back\\", "\x00nul\x1bESC", "../../etc/passwd", "*/"]


def _hostile_network(build: str) -> Network:
    rng = np.random.default_rng(3)
    net = Network((6, 6, 2), [
        Conv2D(rng.normal(0, 0.3, (3, 3, 2, 4)), rng.normal(0, 0.1, 4), padding=1, relu="gen", name=HOSTILE[0]),
        MaxPool(2, stride=2, name=HOSTILE[2]),
        FullyConnected(rng.normal(0, 0.2, (36, 5)), np.zeros(5), name=HOSTILE[4]),
        Softmax(name=HOSTILE[1] + HOSTILE[3] + HOSTILE[5] + HOSTILE[6] + HOSTILE[7]),
    ], name=HOSTILE[8] + HOSTILE[9])
    return quantize_network(net, rng.uniform(-1, 1, (16, 6, 6, 2)), build)


def _assert_clean(folder):
    assert sorted(p.name for p in folder.iterdir() if p.name != "model_check") == sorted(FILES)
    for name in FILES:
        raw = (folder / name).read_bytes()
        assert all(b in (9, 10) or 32 <= b < 127 for b in raw), name  # printable ASCII only
        if not name.endswith((".c", ".h")):
            continue
        code = re.sub(r"/\*.*?\*/", " ", raw.decode(), flags=re.S)  # C semantics: up to the first */
        assert "evil" not in code and "x.h" not in code and "passwd" not in code and "uote" not in code
        includes = {line.strip() for line in code.splitlines() if line.strip().startswith("#include")}
        assert includes <= {'#include "model.h"', '#include "mli_api.h"', "#include <stdint.h>",
                            "#include <stdio.h>", "#include <string.h>"}
        if name != "model_check.c":
            assert "#include <stdio.h>" not in includes


@pytest.mark.parametrize("build", ["sa8", "fx16"])
def test_hostile_names_compile_and_check(build, mli_vpx, tmp_path):
    net = _hostile_network(build)
    res = export_c(net, tmp_path, None, VPX)
    _assert_clean(tmp_path)
    p = run_check(compile_check(mli_vpx, tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "4/4 vectors bit-exact" in p.stdout
    assert res.program.calls[0].layer == HOSTILE[0]  # the name is kept, but only for comments


def test_hostile_tflite_names(mli_vpx, tmp_path):
    pytest.importorskip("tflite", reason="pymli.tflite needs the 'tflite' package")
    from pymli.tflite import examples, load

    g = examples.GraphMaker((6, 6, 3), 0)
    names = itertools.cycle(HOSTILE)
    g._name = lambda kind: next(names) + kind  # every tensor and operator output gets a hostile name
    g.conv(4, 3, act="RELU")
    g.pool("max", 2, 2)
    g.reshape((36,))
    g.fc(5)
    g.unary("SOFTMAX")
    model = load(g.finish(), mapping="mli")
    export_c(model, tmp_path, None, VPX)
    _assert_clean(tmp_path)
    p = run_check(compile_check(mli_vpx, tmp_path))
    assert p.returncode == 0 and "4/4 vectors bit-exact" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("text", HOSTILE + ["/**/", "***//", "?" * 7, "a*" * 80])
def test_comment_is_inert(text):
    c = comment(text)
    assert "*/" not in c and "/*" not in c and "??" not in c and "\\" not in c
    assert all(" " <= ch <= "~" for ch in c)
    # nothing that closes the comment can appear at its edges either
    assert not ("/* " + c + " */")[3:-3].endswith("*") or not c.endswith("/")


def test_budget_checked_before_writing(tmp_path):
    net = _hostile_network("sa8")
    with pytest.raises(ExportError, match="budget"):
        export_c(net, tmp_path / "out", budget=100)
    assert not (tmp_path / "out").exists()

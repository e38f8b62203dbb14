"""README.md's examples run as written: its python blocks, then its `$ pymli ...` console lines, in order."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from pymli.cli import main
from pymli.tflite.compare import tflm_available

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```(python|console)\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_examples() -> None:
    assert sum(kind == "python" for kind, _ in BLOCKS) >= 3
    assert any(kind == "console" for kind, _ in BLOCKS)


def test_readme_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for i, (kind, code) in enumerate(BLOCKS):
        if kind == "python":
            exec(compile(code, f"README.md block {i}", "exec"), {"__name__": "__readme__"})
            continue
        for line in code.splitlines():
            if not line.startswith("$ pymli "):
                continue
            args = shlex.split(line[len("$ pymli "):])
            if args[0] == "compare" and not tflm_available():
                continue  # needs the optional tflite-micro package; its own tests say so when skipped
            res = runner.invoke(main, args)
            assert res.exit_code == 0, f"{line}\n{res.output}"

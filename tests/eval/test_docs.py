"""docs/eval.md: its python example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "eval.md"


def test_docs_python_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib", reason="the example saves pictures (the plot extra)")
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks, "docs/eval.md has no python example"
    monkeypatch.chdir(tmp_path)
    for i, code in enumerate(blocks):
        exec(compile(code, f"docs/eval.md block {i}", "exec"), {"__name__": "__doc_example__"})
    assert (tmp_path / "report.json").is_file() and (tmp_path / "pics" / "confusion.png").is_file()

"""The floors of pymli: no module imports from a floor above its own, and the import graph has no cycle.

Every ``import`` / ``from ... import`` of every module under ``pymli/`` is read with :mod:`ast`
(function-level imports included: they are dependencies too). Floors, bottom to top (a module may
import its own floor and the floors below; docs/architecture.md explains them)::

    errors, formats, config, tensor | arith | quant | checks | kernels, tflm | capi, v1 | graph
    | ops, models, tflite, export, eval | testing | cli

``testing`` (golden runner, recordings' paths, test models) may import anything below ``cli``;
``pymli.verify`` and ``pymli.paths`` are its command-line / import shims. The package root
``pymli/__init__.py`` re-exports config, errors, formats, tensor and quant, so it stands on the
``quant`` floor.

Known violations of today's code, which other branches are removing (issue 12: the tensor / checks /
quant circle, checks moving into ``pymli/checks/``), are listed in :data:`KNOWN_VIOLATIONS` with the
reason; the test fails on any edge not listed, and on any listed edge that no longer exists, so the
list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "pymli"

FLOORS: list[tuple[str, ...]] = [
    ("errors", "formats", "config", "tensor"),
    ("arith",),
    ("quant",),
    ("checks",),
    ("kernels", "tflm"),
    ("capi", "v1"),
    ("graph",),
    ("ops", "models", "tflite", "export", "eval"),
    ("testing",),
    ("cli",),
]
LEVEL = {name: i for i, names in enumerate(FLOORS) for name in names}
# Modules whose floor is not their first name: the package root and the testing shims.
SPECIAL = {"pymli": "quant", "pymli.verify": "testing", "pymli.paths": "testing"}

# (importer, imported) edges that break the rules today. The lead removes entries as branches merge;
# an entry whose edge no longer exists fails the test (test_allow_list_is_not_stale).
KNOWN_VIOLATIONS: dict[tuple[str, str], str] = {
    # The Tensor struct itself imports nothing above the ground floor. Three convenience methods of the
    # public API (Tensor.validate, Tensor.from_float, Tensor.to_float) reach checks/ and quant.py at call
    # time through function-level imports; they are the only upward edges left. Removing them means
    # removing public methods (use pymli.checks.validate_tensor, pymli.quantize, pymli.dequantize).
    ("pymli.tensor", "pymli.checks.tensor"): "Tensor.validate -> checks.tensor.validate_tensor (lazy)",
    ("pymli.tensor", "pymli.quant"): "Tensor.from_float / to_float -> quant (lazy)",
}


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for f in sorted(PKG.rglob("*.py")):
        parts = list(f.relative_to(PKG.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        mods[".".join(parts)] = (f, is_pkg)
    return mods


MODULES = _modules()


def _targets(module: str, is_pkg: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The pymli modules an import statement loads (``from pkg import sub`` loads ``pkg.sub``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "pymli"]
    if node.level:
        base = module.split(".") if is_pkg else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
        if target.split(".")[0] != "pymli":
            return []
    return [f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target for a in node.names]


def _edges() -> set[tuple[str, str]]:
    edges = set()
    for module, (path, is_pkg) in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for t in _targets(module, is_pkg, node):
                    while t not in MODULES and "." in t:
                        t = t.rsplit(".", 1)[0]
                    if t != module:
                        edges.add((module, t))
    return edges


EDGES = _edges()


def floor(module: str) -> str:
    """The floor name of a pymli module (``pymli.capi.types`` -> ``capi``)."""
    return SPECIAL.get(module) or module.split(".")[1]


def test_every_module_has_a_floor() -> None:
    unknown = sorted(m for m in MODULES if floor(m) not in LEVEL)
    assert not unknown, f"modules outside the floors (add them to FLOORS and docs/architecture.md): {unknown}"


def test_no_import_from_a_floor_above() -> None:
    up = sorted(f"{a} ({floor(a)}) imports {b} ({floor(b)})" for a, b in EDGES
                if (a, b) not in KNOWN_VIOLATIONS and LEVEL.get(floor(b), -1) > LEVEL.get(floor(a), 99))
    assert not up, "imports from a floor above:\n" + "\n".join(up)


def _cycle(edges: set[tuple[str, str]]) -> list[str] | None:
    """One cycle of the directed graph, or ``None``."""
    succ: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        succ.setdefault(a, []).append(b)
    state: dict[str, int] = {}  # 1: on the DFS stack, 2: done
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in succ.get(n, []):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(succ):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_no_module_cycle() -> None:
    cyc = _cycle({e for e in EDGES if e not in KNOWN_VIOLATIONS})
    assert cyc is None, "import cycle: " + " -> ".join(cyc or [])


def test_no_package_cycle() -> None:
    """Between floors' packages too (``ops`` -> ``models`` -> ``ops`` is a cycle even through other modules)."""
    pk = {(floor(a), floor(b)) for a, b in EDGES if (a, b) not in KNOWN_VIOLATIONS and floor(a) != floor(b)}
    cyc = _cycle(pk)
    assert cyc is None, "package cycle: " + " -> ".join(cyc or [])


@pytest.mark.parametrize("edge", sorted(KNOWN_VIOLATIONS), ids=lambda e: f"{e[0]}->{e[1]}")
def test_allow_list_is_not_stale(edge: tuple[str, str]) -> None:
    a, b = edge
    assert edge in EDGES, f"{a} no longer imports {b}: remove it from KNOWN_VIOLATIONS"
    assert LEVEL[floor(b)] > LEVEL[floor(a)] or _in_cycle(edge), f"{a} -> {b} is not a violation: remove it"


def _in_cycle(edge: tuple[str, str]) -> bool:
    """``edge`` closes a cycle: its target reaches its source."""
    a, b = edge
    succ: dict[str, set[str]] = {}
    for x, y in EDGES:
        succ.setdefault(x, set()).add(y)
    seen, todo = {b}, [b]
    while todo:
        for m in succ.get(todo.pop(), ()):
            if m == a:
                return True
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return False


def test_the_checker_sees_violations() -> None:
    """The rules fire on a known-bad graph (so an empty report means something)."""
    assert _cycle({("a", "b"), ("b", "c"), ("c", "a")}) == ["a", "b", "c", "a"]
    assert _cycle({("a", "b"), ("b", "c")}) is None
    assert LEVEL[floor("pymli.arith.rounding")] < LEVEL[floor("pymli.capi.types")]
    assert floor("pymli.verify") == "testing" and floor("pymli") == "quant"
    assert ("pymli.cli", "pymli.cli.run") in EDGES  # relative "from .run import run" resolves to the module


# Packages whose function-level imports are checked (issue 12; the other floors: their owners' work).
IMPORT_CHECKED = ("ops", "graph", "export", "eval")


def unexplained_local_imports(source: str) -> list[int]:
    """Lines of imports inside a function that say nothing of why they are not at module level: no
    comment on the line or on the two lines above it, and not guarded by ``except ImportError``."""
    lines = source.splitlines()
    guarded: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                for h in node.handlers):
            guarded |= {n.lineno for stmt in node.body for n in ast.walk(stmt) if hasattr(n, "lineno")}
    out = []
    for fn in ast.walk(ast.parse(source)):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno not in guarded:
                    near = lines[max(node.lineno - 3, 0):node.lineno]
                    if not any("#" in ln for ln in near):
                        out.append(node.lineno)
    return sorted(set(out))


@pytest.mark.parametrize("package", IMPORT_CHECKED)
def test_function_level_imports_say_why(package: str) -> None:
    bad = [f"{path.relative_to(PKG.parent)}:{n}" for path in sorted((PKG / package).rglob("*.py"))
           for n in unexplained_local_imports(path.read_text())]
    assert not bad, bad


def test_local_import_check_fires() -> None:
    src = ("def f():\n    import json\n    return json\n\n"
           "def g():\n    # optional dependency\n    import yaml\n\n"
           "def h():\n    try:\n        import yaml\n    except ImportError:\n        pass\n")
    assert unexplained_local_imports(src) == [2]

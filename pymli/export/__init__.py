"""Export a quantised pymli network or TFLite model as a plain C99 program on the MLI 2.0 API.

:func:`export_c` records the MLI calls the model makes (:mod:`.trace`), places its activations in
one static arena by liveness (:mod:`.plan`) and writes (:mod:`.cgen`)::

    OUT_DIR/model.h  model.c  model_check.c  CMakeLists.txt  README.md

``model_check`` holds test vectors with the outputs pymli computed and reports whether the C
library reproduces them bit for bit. See docs/export.md.

Example:
    >>> from pymli.export import export_c
    >>> result = export_c(qnet, "out/")            # a pymli.models.Network, a TfliteModel or a Pack
    >>> print(result.plan.peak, result.program.const_bytes)
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Platform, get_platform, platform_named, use_platform
from . import cgen
from .plan import Buffer, BufferPlan, plan_buffers
from .trace import ExportError, Program, trace_program

__all__ = ["export_c", "Exportable", "ExportResult", "ExportError", "prepare", "plan_text", "FILES", "DEFAULT_BUDGET",
           "Program", "BufferPlan", "Buffer", "plan_buffers", "trace_program"]

FILES = ("model.h", "model.c", "model_check.c", "CMakeLists.txt", "README.md")
"""The only files :func:`export_c` writes into OUT_DIR."""

DEFAULT_BUDGET = 64 * 1024 * 1024
"""Default limit in bytes on constants + arena + test vectors (a hostile model cannot fill the disk)."""


@dataclasses.dataclass(frozen=True)
class ExportResult:
    """What :func:`export_c` wrote.

    Attributes:
        out_dir: the output folder.
        files: paths written.
        program: the traced program (calls, constants, regions).
        plan: the buffer plan (arena offsets, peak, lower bound, shared buffers).
        inputs, outputs: the test vectors (quantised network inputs and pymli's outputs).
    """

    out_dir: Path
    files: tuple[Path, ...]
    program: Program
    plan: BufferPlan
    inputs: np.ndarray
    outputs: np.ndarray


def _network(model: Any) -> tuple[Any, str]:
    """The pymli Network behind a Network, a loaded TFLite model or an MLI example pack."""
    net = getattr(model, "network", model)
    if not hasattr(net, "layers") or not hasattr(net, "run"):
        raise TypeError(f"cannot export {type(model).__name__}: expected a pymli.models.Network, "
                        "a pymli.tflite.TfliteModel or a pymli.models.Pack")
    return net, str(getattr(net, "name", "model"))


def _inputs(model: Any, net: Any, test_inputs: Any, n_default: int, seed: int) -> np.ndarray:
    if test_inputs is None:
        dt = _input_dtype(net)
        info = np.iinfo(dt)
        rng = np.random.default_rng(seed)
        return rng.integers(info.min, int(info.max) + 1, (n_default, *net.input_shape)).astype(dt)
    x = np.asarray(test_inputs)
    if hasattr(model, "prepare_input"):
        return np.asarray(model.prepare_input(x))
    x, _ = net._as_batch(x)
    return net.quantize_input(x) if x.dtype.kind == "f" else x.astype(_input_dtype(net))


def _input_dtype(net: Any) -> np.dtype:
    if net.input_q is None:
        raise ExportError("the network is not quantised")
    return np.dtype(net.input_q.el_type.dtype)


def prepare(model: Any, test_inputs: Any = None, platform: Platform | str | None = None, *,
            n_default: int = 4, seed: int = 0) -> tuple[Program, BufferPlan, np.ndarray, np.ndarray]:
    """Trace and plan a model without writing anything.

    Args:
        model: a quantised :class:`pymli.models.Network`, :class:`pymli.tflite.TfliteModel` or
            :class:`pymli.models.Pack`.
        test_inputs: test vectors: a batch (or one sample) of float inputs (quantised with the model's
            input parameters) or of quantised integers; default: ``n_default`` random quantised inputs.
        platform: :class:`pymli.Platform` or preset name; default: the current platform.
        n_default, seed: number and seed of the generated inputs.

    Returns:
        (program, plan, quantised inputs ``[N, ...]``, pymli's outputs ``[N, ...]``).

    Raises:
        ExportError: an operator cannot be written with MLI 2.0 calls (the message names it).
    """
    p = platform_named(platform) if isinstance(platform, str) else (platform or get_platform())
    net, name = _network(model)
    xs = _inputs(model, net, test_inputs, n_default, seed)
    if len(xs) == 0:
        raise ValueError("no test vectors")
    with use_platform(p):
        ys = np.asarray(net.run(xs, capture=False, platform=p).output)
        trace_in = [xs[0], xs[1] if len(xs) > 1 and not np.array_equal(xs[0], xs[1]) else _other(xs[0])]
        prog = trace_program(net, trace_in, p, name)
    if prog.output_shape != tuple(ys.shape[1:]) or prog.output_dtype != ys.dtype:
        raise ExportError("the traced program does not produce the network output")
    return prog, plan_buffers(prog), xs, ys


def _other(x: np.ndarray) -> np.ndarray:
    """A second input, different from ``x`` everywhere it can be (for the second trace)."""
    info = np.iinfo(x.dtype)
    rng = np.random.default_rng(12345)
    y = rng.integers(info.min, int(info.max) + 1, x.shape).astype(x.dtype)
    return np.where(y == x, np.where(x == info.max, x - 1, x + 1), y).astype(x.dtype)


def plan_text(program: Program, plan: BufferPlan) -> str:
    """The buffer plan as text: each arena buffer, the tensors sharing it, the peak and its bound.

    Args:
        program: the traced program.
        plan: its buffer plan (:func:`plan_buffers`).

    Returns:
        Lines of text joined by newlines (what ``pymli export --plan`` prints).
    """
    lines = [f"activation arena: {plan.peak} bytes (largest set of simultaneously live tensors: "
             f"{plan.lower_bound} bytes); constants: {program.const_bytes} bytes",
             f"input {program.regions[program.input_region].nbytes} bytes and output "
             f"{program.regions[program.output_region].nbytes} bytes are the caller's buffers"]
    for k, b in enumerate(plan.buffers):
        lines.append(f"buffer {k}: offset {b.offset}, {b.size} bytes, shared by {len(b.regions)} tensor(s):")
        for rid in b.regions:
            r = program.regions[rid]
            label = cgen.comment("; ".join(r.labels), 70)
            lines.append(f"  r{rid:<4} {r.nbytes:>8} B  calls {r.first}-{r.last}  @{plan.offsets[rid]}  {label}")
    return "\n".join(lines)


def export_c(model: Any, out_dir: str | os.PathLike[str], test_inputs: Any = None,
             platform: Platform | str | None = None, *, budget: int = DEFAULT_BUDGET,
             n_default: int = 4) -> ExportResult:
    """Write ``model`` as an MLI 2.0 C program into ``out_dir`` (see :data:`FILES`).

    Args:
        model: a quantised :class:`pymli.models.Network`, :class:`pymli.tflite.TfliteModel` or
            :class:`pymli.models.Pack`.
        out_dir: output folder (created if missing); only :data:`FILES` are written into it.
        test_inputs: test vectors (see :func:`prepare`); default: ``n_default`` random inputs.
        platform: platform (rounding, FULL_ACCU, AVEPOOL_16BIT_MUL) the program is built for.
        budget: limit in bytes on constants + arena + test vectors, checked before writing.

    Returns:
        An :class:`ExportResult`.

    Raises:
        ExportError: an operator cannot be written with MLI 2.0 calls, or the model exceeds ``budget``.
    """
    prog, plan, xs, ys = prepare(model, test_inputs, platform, n_default=n_default)
    need = prog.const_bytes + plan.peak + xs.nbytes + ys.nbytes
    if need > budget:
        raise ExportError(f"the program needs {need} bytes of constants, arena and test vectors, "
                          f"over the budget of {budget} bytes")
    texts = {"model.h": cgen.model_h(prog, plan), "model.c": cgen.model_c(prog, plan),
             "model_check.c": cgen.model_check_c(prog, xs.reshape(len(xs), -1), ys.reshape(len(ys), -1)),
             "CMakeLists.txt": cgen.cmakelists(prog)}
    texts["README.md"] = cgen.readme(prog, plan, len(xs), FILES)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in FILES:
        path = out / name
        path.write_text(texts[name], encoding="ascii")
        written.append(path)
    return ExportResult(out, tuple(written), prog, plan, xs, ys)


class Exportable:
    """Mixin giving a model class the :meth:`export_c` method (networks, TFLite models, example packs)."""

    def export_c(self, out_dir: str | os.PathLike[str], test_inputs: Any = None,
                 platform: Platform | str | None = None, **kw: Any) -> ExportResult:
        """Write this model as a plain C program on MLI 2.0 (``model.h/.c``, ``model_check.c``, CMake).

        Args:
            out_dir: output folder (created if missing); only :data:`FILES` are written into it.
            test_inputs: test vectors: a batch of inputs (default: a few random ones).
            platform: the platform the program is built for (default: the active one).
            **kw: ``budget`` (bytes) and ``n_default`` of :func:`export_c`.

        Returns:
            The :class:`ExportResult` (files, buffer plan, memory figures).

        Raises:
            ExportError: a layer MLI cannot express, or the program exceeds the budget.
        """
        return export_c(self, out_dir, test_inputs, platform, **kw)

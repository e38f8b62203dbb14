"""Load-time refusals shared by both mappings (issue 13, F15-F17): what ``load`` accepts as a source,
the zero points an integer tensor may have, and the memory a model may need.

A model is refused when it is loaded, never half-way through a run: a zero point outside its
element type, or an operator whose padded input, window matrix or output needs more than
:data:`MEMORY_BUDGET` bytes, raises :class:`~pymli.tflite.errors.TfliteUnsupported` naming the
operator (or tensor) and the figure.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from ..config import DEFAULT_MEMORY_BUDGET, get_memory_budget
from ..errors import Status
from .errors import TfliteError, TfliteUnsupported
from .reader import ModelInfo

__all__ = ["MEMORY_BUDGET", "read_source", "check_model_limits"]

#: the default bytes one operator may need while it runs (padded input, windows, output); the budget in
#: force is :func:`pymli.config.get_memory_budget`
MEMORY_BUDGET = DEFAULT_MEMORY_BUDGET

_ZP_RANGE = {"INT8": (-128, 127), "UINT8": (0, 255), "INT16": (-32768, 32767)}
_ITEM = {"INT8": 1, "UINT8": 1, "INT16": 2, "INT32": 4, "INT64": 8, "FLOAT32": 4, "BOOL": 1}


def read_source(src: object) -> bytes:
    """The model bytes of ``load``'s ``src``.

    Args:
        src: a path (``str`` or ``os.PathLike``) or the model bytes (``bytes``, ``bytearray``,
            ``memoryview``).

    Returns:
        the bytes.

    Raises:
        TfliteError: ``src`` is of another type (ARGUMENT_ERROR).
        OSError: the file cannot be read.
    """
    if isinstance(src, (bytes, bytearray, memoryview)):
        return bytes(src)
    if isinstance(src, (str, os.PathLike)):
        return Path(src).read_bytes()
    raise TfliteError(Status.ARGUMENT_ERROR, f"load: expected a path (str or os.PathLike) or the model bytes, "
                                             f"got {type(src).__name__}")


def _prod(shape: tuple[int, ...]) -> int:
    return math.prod(int(s) for s in shape) if shape else 1


def _window_bytes(info: ModelInfo, op_index: int) -> int | None:
    """Worst-case working memory (int64 / float64 elements) of one windowed operator, or None."""
    op = info.ops[op_index]
    if op.name not in ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D"):
        return None
    t = info.tensors
    x = t[op.inputs[0]] if op.inputs and op.inputs[0] >= 0 else None
    if x is None or len(x.shape) != 4:
        return None
    o = op.options
    if op.name.endswith("POOL_2D"):
        kh, kw = int(o.get("FilterHeight", 1)), int(o.get("FilterWidth", 1))
        dh = dw = 1
    else:
        if len(op.inputs) < 2 or op.inputs[1] < 0 or len(t[op.inputs[1]].shape) != 4:
            return None
        w = t[op.inputs[1]].shape
        kh, kw = (w[1], w[2])
        dh, dw = int(o.get("DilationHFactor", 1)), int(o.get("DilationWFactor", 1))
    sh, sw = max(int(o.get("StrideH", 1)), 1), max(int(o.get("StrideW", 1)), 1)
    n, h, wd, c = (int(v) for v in x.shape)
    eh, ew = (kh - 1) * max(dh, 1) + 1, (kw - 1) * max(dw, 1) + 1
    same = int(o.get("Padding", 1)) == 0
    oh = -(-h // sh) if same else max((h - eh) // sh + 1, 0)
    ow = -(-wd // sw) if same else max((wd - ew) // sw + 1, 0)
    ph = max((oh - 1) * sh + eh, h)
    pw = max((ow - 1) * sw + ew, wd)
    padded = n * ph * pw * c
    windows = n * oh * ow * kh * kw * c
    return 8 * max(padded, windows)


def check_model_limits(info: ModelInfo, budget: int | None = None) -> None:
    """Refuse a model whose tensors or operators cannot run within ``budget`` bytes, or whose integer
    tensors have zero points outside their element type.

    Args:
        info: the decoded model (:func:`pymli.tflite.reader.read_model`).
        budget: bytes one tensor or one operator's working memory may take (default: the memory budget
            in force, :func:`pymli.config.get_memory_budget`).

    Raises:
        TfliteUnsupported: names the tensor or operator, the figure and the limit.
    """
    if budget is None:
        budget = get_memory_budget()
    for t in info.tensors:
        lo_hi = _ZP_RANGE.get(t.type)
        if lo_hi is not None and t.zero_point.size:
            bad = [int(z) for z in t.zero_point.reshape(-1) if not lo_hi[0] <= int(z) <= lo_hi[1]]
            if bad:
                raise TfliteUnsupported(None, f"tensor {t.index} ({t.name})",
                                        f"{t.type} zero point {bad[0]} outside [{lo_hi[0]}, {lo_hi[1]}]")
        size = _prod(t.shape) * _ITEM.get(t.type, 8)
        if size > budget:
            raise TfliteUnsupported(None, f"tensor {t.index} ({t.name})",
                                    f"shape {t.shape} needs {size} bytes, more than the {budget}-byte budget")
    for op in info.ops:
        need = _window_bytes(info, op.index)
        if need is not None and need > budget:
            raise TfliteUnsupported(op.index, op.name,
                                    f"padding / dilation need {need} bytes of working memory, more than the "
                                    f"{budget}-byte budget")

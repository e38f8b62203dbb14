"""``pymli.tflite.load``: one entry point, two mappings.

* ``mapping="tflm"`` (the default): the model as TensorFlow Lite Micro with the ARC MLI kernels
  computes it (:class:`pymli.tflite.tflm_model.TflmModel`).
* ``mapping="mli"``: every operator MLI has a kernel for runs on it (:class:`pymli.tflite.importer.TfliteModel`,
  what the C export uses).

Both refuse at load what cannot run: a ``src`` that is neither a path nor bytes, malformed bytes, a
zero point outside its type, an operator needing more than the memory budget (:mod:`.limits`).
"""

from __future__ import annotations

from typing import Any

from ..errors import Status
from .errors import TfliteError, TfliteFormatError
from .importer import TfliteModel, load_mli
from .limits import check_model_limits, read_source
from .reader import read_model
from .tflm_model import TflmModel, load_tflm

__all__ = ["load", "MAPPINGS", "TfliteMappingError"]

#: the mappings ``load`` knows
MAPPINGS: tuple[str, ...] = ("tflm", "mli")


class TfliteMappingError(TfliteError):
    """``load`` was given an unknown ``mapping``."""

    def __init__(self, mapping: object) -> None:
        super().__init__(Status.ARGUMENT_ERROR, f"unknown mapping {mapping!r}: choose one of {', '.join(MAPPINGS)}")


def load(src: Any, mapping: str = "tflm", *, adapted: bool | None = None) -> TflmModel | TfliteModel:
    """Load a ``.tflite`` model (path or bytes).

    Args:
        src: a path (``str`` / ``os.PathLike``) or the model bytes.
        mapping: ``"tflm"`` (default: TFLM + arc_mli, as the ARC device computes) or ``"mli"``
            (every operator MLI has a kernel for on MLI; what ``pymli export`` uses).
        adapted: ``tflm`` mapping: the weights are in the ARC adaptation tool's layout (conv HWCN,
            depthwise HW1C, FC [in, out]); None recognises it from the shapes.

    Returns:
        a :class:`~pymli.tflite.tflm_model.TflmModel` or a :class:`~pymli.tflite.importer.TfliteModel`.

    Raises:
        TfliteMappingError: an unknown mapping (lists the choices).
        TfliteError: ``src`` is neither a path nor bytes.
        TfliteFormatError: malformed bytes or an inconsistent graph.
        TfliteUnsupported: an operator, parameter, zero point or size the mapping cannot run.
        TfliteLayoutError: ``tflm``: the weights' layout is ambiguous (pass ``adapted``).
        OSError: the file cannot be read.
    """
    if not isinstance(mapping, str) or mapping.lower() not in MAPPINGS:
        raise TfliteMappingError(mapping)
    if mapping.lower() == "mli":
        return load_mli(src)
    data = read_source(src)
    info = read_model(data)
    check_model_limits(info)
    try:
        return load_tflm(data, adapted=adapted)
    except TfliteError:
        raise
    except (ValueError, IndexError, KeyError, TypeError, ArithmeticError, AttributeError) as e:
        raise TfliteFormatError(f"inconsistent model: {type(e).__name__}: {e}") from None

"""TFLite int8 graph -> :class:`pymli.models.Network` of MLI kernel calls.

:func:`load` reads the flatbuffer (:mod:`pymli.tflite.reader`), converts every int8 tensor to sa8
(:mod:`pymli.tflite.quant`), re-lays the weights the way MLI wants them and maps each operator on one
or a few layers. Everything is checked while mapping; an operator or parameter MLI cannot run raises
:class:`~pymli.tflite.errors.TfliteUnsupported` naming the operator, its index and the reason, and no
model is returned.
"""

from __future__ import annotations

import dataclasses
import os
from typing import ClassVar

import numpy as np

from ..config import Platform
from ..export import Exportable
from ..models.network import Network, RunResult
from . import operators  # noqa: F401  (registers the MLI mapping's handlers)
from .errors import TfliteError, TfliteFormatError
from .limits import check_model_limits, read_source
from .mapping import MLI, GraphBuilder
from .quant import dequantize_output, quantize_input
from .reader import ModelInfo, read_model

__all__ = ["load", "load_mli", "TfliteModel", "SUPPORTED_OPS", "quantize_input", "dequantize_output"]


@dataclasses.dataclass
class TfliteModel(Exportable):
    """A loaded TFLite model: the pymli network plus the link to the TFLite tensors.

    Attributes:
        info: the decoded flatbuffer (tensors, operators).
        data: the model bytes.
        network: the pymli :class:`~pymli.models.Network` (input ``"input"``).
        tensor_layer: TFLite tensor index -> network tensor name holding its values.
        op_layers: operator index -> names of the layers it became.
        input_index, output_index: graph input / output tensor indices.
        float_input / float_output: the graph starts with QUANTIZE / ends with DEQUANTIZE.
        in_quant / out_quant: TFLite (scale, zero_point) of the int8 network input / output.
        q_input_index / q_output_index: the int8 tensors the network starts from / ends with.
    """

    info: ModelInfo
    data: bytes
    network: Network
    tensor_layer: dict[int, str]
    op_layers: dict[int, list[str]]
    input_index: int
    output_index: int
    float_input: bool
    float_output: bool
    in_quant: tuple[float, int]
    out_quant: tuple[float, int]
    q_input_index: int
    q_output_index: int

    #: the mapping this model was loaded with (``pymli.tflite.load(src, mapping="mli")``)
    mapping: ClassVar[str] = "mli"

    @property
    def input_shape(self) -> tuple[int, ...]:
        """TFLite shape of the graph input (batch first)."""
        return self.info.tensors[self.input_index].shape

    def prepare_input(self, x: np.ndarray) -> np.ndarray:
        """Input batch (TFLite shape, batch of any size) -> int8 network input batch."""
        x = np.asarray(x)
        t = self.info.tensors[self.input_index]
        shape = t.shape[1:]
        if x.shape == t.shape[1:] or (x.ndim == len(t.shape) - 1 and x.size == int(np.prod(shape))):
            x = x[None]
        x = x.reshape((x.shape[0],) + tuple(self.network.input_shape))
        if self.float_input or x.dtype.kind == "f":
            if x.dtype.kind != "f":
                raise ValueError("the model takes float input, got integers")
            return quantize_input(x, *self.in_quant)
        if x.dtype != np.int8:
            if x.min(initial=0) < -128 or x.max(initial=0) > 127:
                raise ValueError("int8 model input out of [-128, 127]")
            x = x.astype(np.int8)
        return x

    def run(self, x: np.ndarray, *, platform: Platform | str | None = None, capture: bool = False
            ) -> np.ndarray | tuple[np.ndarray, RunResult]:
        """Run on pymli's MLI kernels; returns the output batch in TFLite shape (float if the graph dequantises).

        With ``capture=True`` returns ``(output, RunResult)`` with every intermediate.
        """
        xq = self.prepare_input(x)
        res = self.network.run(xq, capture=bool(capture), platform=platform)
        out = self.output_from(res)
        return (out, res) if capture else out

    def output_from(self, res: RunResult) -> np.ndarray:
        """The TFLite output batch (TFLite shape and type, dequantised for a float output) of a run."""
        y = res.output
        shape = self.info.tensors[self.q_output_index].shape
        y = y.reshape((y.shape[0],) + tuple(shape[1:]))
        if self.float_output:
            return dequantize_output(y, *self.out_quant)
        t = self.info.tensors[self.q_output_index]
        return y.astype(np.int64 if t.type == "INT64" else np.int32 if t.type == "INT32" else np.int8)

    def functions(self) -> dict[int, list[str]]:
        """Operator index -> MLI functions it calls."""
        names = self.network.function_names()
        return {i: [names[n] for n in ls] for i, ls in self.op_layers.items()}

    def tensor_values(self, res: RunResult, index: int) -> np.ndarray | None:
        """Values of TFLite tensor ``index`` from a captured run (TFLite shape, batch first)."""
        name = self.tensor_layer.get(index)
        if name is None or name not in res.values:
            return None
        v = res.values[name]
        return v.reshape((v.shape[0],) + tuple(self.info.tensors[index].shape[1:]))


#: the TFLite operators the MLI mapping handles (one handler each in :mod:`pymli.tflite.operators`)


SUPPORTED_OPS: tuple[str, ...] = MLI.names()


def load_mli(src: str | os.PathLike[str] | bytes | bytearray | memoryview) -> TfliteModel:
    """Load a quantised int8 TFLite model (path or bytes) as a pymli network (``mapping="mli"``).

    Every operator is mapped by its handler in the MLI mapping's table (:data:`pymli.tflite.mapping.MLI`).

    Args:
        src: a path or the model bytes.

    Returns:
        the :class:`TfliteModel`.

    Raises:
        TfliteError: ``src`` is neither a path nor bytes.
        TfliteFormatError: the bytes are not a valid TFLite flatbuffer.
        TfliteUnsupported: an operator or parameter MLI cannot run (names operator, index and reason).
        OSError: the file cannot be read.
    """
    data = read_source(src)
    info = read_model(data)
    check_model_limits(info)
    try:
        return TfliteModel(info=info, data=data, **GraphBuilder(info, data, MLI).build())
    except TfliteError:
        raise
    except (ValueError, IndexError, KeyError, TypeError, ArithmeticError) as e:
        # inconsistent shapes or parameters caught by the network / layers while building
        raise TfliteFormatError(f"inconsistent model: {type(e).__name__}: {e}") from None


#: ``pymli.tflite.importer.load`` is the MLI mapping's loader (``pymli.tflite.load(src, mapping="mli")``)
load = load_mli

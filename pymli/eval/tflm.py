"""``pymli eval --mapping tflm``: a ``.tflite`` model evaluated as TFLite Micro with the ARC MLI kernels
computes it (:class:`pymli.tflite.TflmModel`), with the interface :mod:`pymli.eval.runner` uses
(``input_spec``, ``layer_info``, ``index_output``, ``run_chunk``).

One "layer" per TFLite operator (its first output): saturation counts the outputs at the limits of
their integer type (a limit equal to the zero point excepted, as for the MLI network); the
accumulators of the TFLM kernels are not exposed (``acc_peak`` -1).
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from ..models.network import mli_argmax
from .data import EvalError, InputSpec

__all__ = ["TflmPrepared"]


class TflmPrepared:
    """A tflm-mapping model ready to run chunks in this process.

    Args:
        ref: the :class:`pymli.eval.model.ModelRef` (``kind == "tflite-tflm"``).
        layer_info: the :class:`pymli.eval.model.LayerInfo` class. chunk_result: the
            :class:`pymli.eval.model.ChunkResult` class (passed in: pymli.eval.model imports this module).

    Raises:
        EvalError: the model cannot be loaded, or has several inputs or outputs.
    """

    def __init__(self, ref: Any, *, layer_info: type, chunk_result: type) -> None:
        # imported here: pymli.tflite needs the optional tflite package, as in pymli.eval.model
        from ..tflite.loader import load
        from ..tflite.errors import TfliteWarning

        self.ref = ref
        self._layer_info, self._chunk_result = layer_info, chunk_result
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TfliteWarning)  # load warned in the caller's process already
                self.tflm = load(ref.payload, mapping="tflm")
        except ValueError as e:  # TfliteError is an MliError (ValueError)
            raise EvalError(f"{ref.name}: {getattr(e, 'message', e)}") from None
        m = self.tflm
        if len(m.inputs) != 1 or len(m.outputs) != 1:
            raise EvalError(f"{ref.name}: eval takes a model with one input and one output; this one has "
                            f"{len(m.inputs)} and {len(m.outputs)} (use pymli.tflite.load(...).run)")
        self.tfl = None
        self._in = m.inputs[0]
        self._out = m.outputs[0]
        self._steps = [s for s in m.steps if s.op.outputs and s.op.outputs[0] >= 0]
        self.layer_names = [f"{s.op.index}:{s.op.name}" for s in self._steps]
        self._index_output = self._out.dtype in (np.int32, np.int64)
        q = next((m.graph.tensors[s.op.outputs[0]] for s in m.steps
                  if s.op.name == "QUANTIZE" and s.op.inputs[0] == self._in.index), None)
        self._float_q = q if self._in.dtype == np.float32 else None

    def input_spec(self) -> InputSpec:
        """What one sample must look like (the batch dimension of 1 dropped).

        Returns:
            The :class:`~pymli.eval.data.InputSpec`: sample shape, integer dtype, whether float samples
            are taken (a float model, or an int8 input with its scale and zero point).
        """
        t = self._in
        shape = tuple(t.shape[1:]) if t.shape and t.shape[0] == 1 else tuple(t.shape)
        if self._float_q is not None:
            q = self._float_q
            return InputSpec(shape, np.dtype(q.dtype), True, float(q.s), int(q.zp))
        return InputSpec(shape, np.dtype(t.dtype), t.dtype == np.int8, float(t.s) if t.scale.size else None,
                         int(t.zp))

    def layer_info(self) -> list[Any]:
        """One entry per operator: name, operator, MLI function or ``reference``, no accumulator figure.

        Returns:
            One :class:`pymli.eval.model.LayerInfo` per operator with an output, in execution order
            (``acc_bits`` None).
        """
        return [self._layer_info(n, s.op.name, s.function or "reference (TFLM)", None)
                for n, s in zip(self.layer_names, self._steps)]

    @property
    def index_output(self) -> bool:
        """The output holds class offsets (ARG_MAX: an int32 / int64 output), not scores."""
        return self._index_output

    def _model_input(self, x: np.ndarray) -> np.ndarray:
        from ..tflite.quant import dequantize_output, quantize_input  # the tflite package is loaded by now

        t = self._in
        if self._float_q is not None:
            if x.dtype.kind != "f":  # quantised samples: the float values the model's QUANTIZE maps back to them
                x = dequantize_output(x, self._float_q.s, self._float_q.zp)
            return x.astype(np.float32)
        if x.dtype.kind == "f":
            if t.dtype != np.int8:
                raise EvalError(f"float samples for a {t.dtype.name} input")
            return quantize_input(x, t.s, t.zp)
        return x.astype(t.dtype)

    def run_chunk(self, x: np.ndarray, start: int, *, platform: str | None = None, against: str | None = None,
                  layers: bool = True) -> Any:
        """Run samples ``x`` (dataset rows ``start:start + len(x)``), one Invoke each, and collect the statistics.

        Args:
            x: input batch (the model's integer dtype, or float).
            start: dataset index of ``x[0]``.
            platform: platform preset name or None (current).
            against: ``"tflm"`` (TFLite Micro's reference kernels) or None.
            layers: collect per-operator saturation.

        Returns:
            the :class:`pymli.eval.model.ChunkResult`.

        Raises:
            EvalError: ``against`` is neither ``"tflm"`` nor None.
        """
        t0 = time.perf_counter()
        m = self.tflm
        n = int(x.shape[0])
        shape = tuple(self._in.shape)
        # one Invoke per sample: the batch axis replaces a batch of 1, or stacks whole inputs
        xm = self._model_input(np.asarray(x)).reshape((n,) + (shape[1:] if shape[:1] == (1,) else shape))
        y, run = m.run(xm, platform=platform, capture=True)
        out = np.asarray(y).reshape(n, -1)
        pred = out[:, 0].astype(np.int64) if self._index_output else mli_argmax(out)
        k = len(self.layer_names)
        sat, tot, peak = np.zeros(k, np.int64), np.zeros(k, np.int64), np.full(k, -1, np.int64)
        if layers:
            for j, s in enumerate(self._steps):
                ti = s.op.outputs[0]
                tt = m.graph.tensors[ti]
                v = m.tensor_values(run, ti)
                if v is None:
                    continue
                tot[j] = v.size
                if tt.dtype.kind in "iu" and tt.dtype != np.bool_:
                    info = np.iinfo(tt.dtype)
                    zp = tt.zp if tt.scale.size else None
                    hit = np.zeros(v.shape, bool)
                    if info.max != zp:
                        hit |= v == info.max
                    if info.min != zp:
                        hit |= v == info.min
                    sat[j] = int(hit.sum())
        ref_pred, dmax, dsum, dcnt = None, -1, 0, 0
        if against == "tflm":
            from ..tflite.compare import run_tflm_inputs  # the optional tflite package, imported when used

            xs = xm.reshape((n,) + tuple(self._in.shape))
            theirs = run_tflm_inputs(m, [xs], [self._out.index])[self._out.index].reshape(n, -1)
            ref_pred = theirs[:, 0].astype(np.int64) if self._index_output else mli_argmax(theirs)
            if out.dtype.kind in "iu":
                d = np.abs(out.astype(np.int64) - theirs.astype(np.int64))
                dmax, dsum, dcnt = int(d.max(initial=0)), int(d.sum()), int(d.size)
        elif against is not None:
            raise EvalError(f"--against {against}: the tflm mapping compares with TFLite Micro only (--against tflm)")
        return self._chunk_result(start, start + n, np.asarray(y), pred.astype(np.int64), sat, tot, peak,
                           ref_pred, dmax, dsum, dcnt, time.perf_counter() - t0)

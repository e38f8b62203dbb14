"""One front end: operation + tensors + attributes -> the right MLI call.

* :mod:`pymli.graph.registry`: the capi function of an operation, chosen by type signature
  (:func:`~pymli.graph.registry.lookup`), with MLI's specialisations;
* :mod:`pymli.graph.geometry`: output sizes and padding of windowed operations;
* :mod:`pymli.graph.activation`: fused ReLU names -> ``mli_relu_type``;
* :mod:`pymli.graph.outquant`: output quantisation of a call, chosen through :mod:`pymli.quant`.

:mod:`pymli.ops`, :mod:`pymli.models` and :mod:`pymli.tflite` are thin adapters over this package.
"""

from __future__ import annotations

from .registry import KernelMissing, Op, lookup

__all__ = ["KernelMissing", "Op", "lookup"]

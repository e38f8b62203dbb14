"""One front end: operation + tensors + attributes -> the right MLI call.

* :mod:`pymli.graph.registry`: the capi function of an operation, chosen by type signature
  (:func:`~pymli.graph.registry.lookup`), with MLI's specialisations;
* :mod:`pymli.graph.geometry`: output sizes and padding of windowed operations;
* :mod:`pymli.graph.activation`: fused ReLU names -> ``mli_relu_type``;
* :mod:`pymli.graph.outquant`: output quantisation of a call, chosen through :mod:`pymli.quant`;
* :mod:`pymli.graph.args`: the argument checks every front end runs first (ints, pairs, names in
  any case, tensors, quantisation dicts, the allocation limit), raising :class:`~pymli.errors.MliError`.

:mod:`pymli.ops`, :mod:`pymli.models` and :mod:`pymli.tflite` are thin adapters over this package.

Adding an MLI operation: an :class:`~pymli.graph.registry.Op` member and one
:func:`~pymli.graph.registry.register` call per type signature (with its specialisations) in
:mod:`pymli.graph.registry`; front ends call ``lookup(Op.NEW, *el_types)`` (or ``require`` for an
:class:`~pymli.errors.MliError` on a missing signature), and the C export reads the chosen
function's C name from ``fn.__name__`` (``specialise=True`` for MLI's ``_k3x3``-style variants).
TFLite operators are mapped by the handler tables of :mod:`pymli.tflite.mapping`.
"""

from __future__ import annotations

from .registry import KernelMissing, Op, lookup

__all__ = ["KernelMissing", "Op", "lookup"]

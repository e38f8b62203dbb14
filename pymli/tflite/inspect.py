"""What a loaded TFLite model becomes on MLI: operators, tensors, quantisation, functions, headroom.

Accumulator headroom of a MAC layer (sa8 x sa8, 32-bit accumulator in MLI's reference build): the
worst-case accumulator over all inputs is ``max_o(sum_k |w[k, o]|) * max|x - zp| + |bias|``; the
layer needs ``ceil(log2(worst + 1)) + 1`` bits (with the sign) and the headroom is what is left of 32.
The guard bits MLI documents (``mli_hlp_accu_guard_bits_sa8_sa8``) are compared with
``ceil(log2(products + 1))``, the bound for arbitrary 8-bit weights.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from operator import itemgetter
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from ..formats import ElType
from ..models.layers import Layer, _MacLayer
from ..models.report import accu_guard_bits
from .importer import TfliteModel
from .tflm_model import TflmModel

__all__ = ["layer_headroom", "op_rows", "tensor_rows", "print_inspect", "tflm_op_rows", "tflm_tensor_rows",
           "print_tflm_inspect"]


def layer_headroom(la: Layer, in_shape: tuple[int, ...], in_zp: int, acc_bits: int = 32) -> dict[str, Any] | None:
    """Worst-case accumulator figures of a MAC layer (None for other layers)."""
    if not isinstance(la, _MacLayer):
        return None
    w = np.asarray(la.weights.q, np.int64)
    b = np.abs(np.asarray(la.bias.q, np.int64))
    macs = la.mac_count([in_shape])
    per_out = np.abs(w).reshape(-1, w.shape[-1]).sum(axis=0)   # HWCN / HW1N / [in, out]: outputs last
    xmax = max(abs(-128 - in_zp), abs(127 - in_zp))
    worst = int((per_out * xmax + b).max(initial=0))
    need = (math.ceil(math.log2(worst + 1)) if worst > 0 else 0) + 1
    return {"macs": macs, "worst_acc": worst, "bits_needed": need, "headroom_bits": acc_bits - need,
            "guard_needed": int(math.ceil(math.log2(macs + 1))),
            "guard_available": accu_guard_bits(ElType.SA_8, ElType.SA_8)}


def op_rows(m: TfliteModel) -> list[dict[str, Any]]:
    """One row per TFLite operator: tensors, output quantisation, MLI functions, headroom."""
    net = m.network
    fns = m.functions()
    shapes = net.shapes()
    qs = net.expected_qparams()
    rows = []
    for op in m.info.ops:
        t = m.info.tensors
        outs = [t[i] for i in op.outputs if i >= 0]
        head = None
        for name in m.op_layers.get(op.index, []):
            la = net[name]
            src = la.inputs[0]
            zp = int(qs[src].zero_point) if qs[src].el_type.is_sa and qs[src].dim < 0 else 0
            h = layer_headroom(la, shapes[src], zp)
            head = h or head
        boundary = op.index not in m.op_layers or not m.op_layers[op.index]
        rows.append({
            "index": op.index, "op": op.name,
            "inputs": [f"{i}:{'x'.join(map(str, t[i].shape))}{'(c)' if t[i].is_const else ''}" for i in op.inputs
                       if i >= 0],
            "outputs": [f"{o.index}:{'x'.join(map(str, o.shape))}" for o in outs],
            "out_q": outs[0].describe_q() if outs else "",
            "functions": fns.get(op.index, []) or (["(offline, graph boundary)"] if boundary else []),
            "headroom": head,
        })
    return rows


def tensor_rows(m: TfliteModel) -> list[dict[str, Any]]:
    """One row per tensor: index, name, shape, type, constant, quantisation, sa8 parameters."""
    qs = m.network.expected_qparams()
    rows = []
    for t in m.info.tensors:
        layer = m.tensor_layer.get(t.index)
        rows.append({"index": t.index, "name": t.name, "shape": t.shape, "type": t.type, "const": t.is_const,
                     "tflite_q": t.describe_q(), "mli": qs[layer].describe() if layer in qs else ""})
    return rows


def _tensor_table(rows: list[dict[str, Any]], extra: dict[str, Callable[[dict[str, Any]], str]]) -> Table:
    """The "Tensors" table: index, name, shape, type and const, then one column per ``extra`` entry."""
    t = Table(title="Tensors")
    for c in ("#", "name", "shape", "type", "const", *extra):
        t.add_column(c)
    for r in rows:
        t.add_row(str(r["index"]), r["name"], "x".join(map(str, r["shape"])), r["type"], "yes" if r["const"] else "",
                  *(f(r) for f in extra.values()))
    return t


def print_inspect(m: TfliteModel | TflmModel, console: Any = None) -> None:
    """Rich tables of :func:`op_rows` and :func:`tensor_rows` (:func:`print_tflm_inspect` for the tflm mapping)."""
    if isinstance(m, TflmModel):
        print_tflm_inspect(m, console)
        return
    con = console or Console()
    con.print(f"[bold]{m.info.description or 'model'}[/bold]: {len(m.info.ops)} operators, "
              f"{len(m.info.tensors)} tensors, schema version {m.info.version}; input {m.input_shape} "
              f"{'float (QUANTIZE at the input)' if m.float_input else 'int8'}, output "
              f"{m.info.tensors[m.output_index].shape} {'float (DEQUANTIZE)' if m.float_output else ''}")
    t = Table(title="Operators")
    for c in ("#", "op", "inputs", "outputs", "output quantisation", "MLI function(s)", "MACs", "worst acc bits",
              "headroom (32-bit)", "guard need/avail"):
        if c == "MLI function(s)":
            t.add_column(c, no_wrap=True, min_width=42)
        else:
            t.add_column(c, overflow="fold")
    for r in op_rows(m):
        h = r["headroom"] or {}
        t.add_row(str(r["index"]), r["op"], " ".join(r["inputs"]), " ".join(r["outputs"]), r["out_q"],
                  "\n".join(r["functions"]), str(h.get("macs", "")), str(h.get("bits_needed", "")),
                  str(h.get("headroom_bits", "")),
                  f"{h['guard_needed']}/{h['guard_available']}" if h else "")
    con.print(t)
    con.print(_tensor_table(tensor_rows(m), {"TFLite quantisation": itemgetter("tflite_q"),
                                             "MLI parameters": itemgetter("mli")}))


def _q(t: Any) -> str:
    if not t.scale.size:
        return ""
    if t.scale.size > 1:
        return f"per channel (dim {t.qdim}), {t.scale.size} scales, zp {int(t.zero_point[0]) if t.zero_point.size else 0}"
    return f"scale {float(t.scale[0]):.6g}, zp {t.zp}"


def tflm_op_rows(m: TflmModel) -> list[dict[str, Any]]:
    """One row per operator of a tflm-mapping model: tensors, output quantisation, where it runs.

    Args:
        m: the loaded model.

    Returns:
        dicts with index, op, inputs, outputs, out_q, mapping (MLI function or TFLM reference), defects.
    """
    T = m.graph.tensors
    by_op: dict[int, list[str]] = {}
    for d in m.defects:
        by_op.setdefault(d.op_index, []).append(d.kind)
    rows = []
    for r, s in zip(m.describe(), m.steps):
        outs = [T[i] for i in s.op.outputs if i >= 0]
        rows.append({**r, "out_q": _q(outs[0]) if outs else "", "defects": by_op.get(s.op.index, [])})
    return rows


def tflm_tensor_rows(m: TflmModel) -> list[dict[str, Any]]:
    """One row per tensor of a tflm-mapping model: index, name, shape, dtype, constant, variable, quantisation."""
    return [{"index": t.index, "name": t.name, "shape": t.shape, "type": t.dtype.name, "const": t.data is not None,
             "variable": t.variable, "tflite_q": _q(t)} for t in m.graph.tensors]


def print_tflm_inspect(m: TflmModel, console: Any = None) -> None:
    """Rich tables of a tflm-mapping model: operators with their mapping, tensors, glue defects.

    Args:
        m: the loaded model.
        console: a rich Console (default: stdout).
    """
    con = console or Console()
    n_mli = sum(1 for s in m.steps if s.function)
    ins = ", ".join(f"{t.dtype.name}{list(t.shape)}" for t in m.inputs)
    outs = ", ".join(f"{t.dtype.name}{list(t.shape)}" for t in m.outputs)
    con.print(f"[bold]mapping tflm[/bold] (TFLite Micro + arc_mli): {len(m.steps)} operators ({n_mli} on MLI, "
              f"{len(m.steps) - n_mli} TFLM reference kernels), {len(m.graph.tensors)} tensors; inputs {ins} -> "
              f"outputs {outs}" + ("; weights in the ARC adaptation layout" if m.adapted else ""))
    t = Table(title="Operators")
    for c in ("#", "op", "inputs", "outputs", "output quantisation", "runs on", "glue defect"):
        t.add_column(c, overflow="fold")
    for r in tflm_op_rows(m):
        t.add_row(str(r["index"]), r["op"], " ".join(r["inputs"]), " ".join(r["outputs"]), r["out_q"], r["mapping"],
                  ", ".join(r["defects"]))
    con.print(t)
    con.print(_tensor_table(tflm_tensor_rows(m), {"variable": lambda r: "yes" if r["variable"] else "",
                                                  "TFLite quantisation": itemgetter("tflite_q")}))
    if m.defects:
        con.print("[bold]arc_mli glue defects[/bold] (pymli computes what arc_mli intends; the device build deviates):")
        for d in m.defects:
            con.print(f"  - {d.message}")
    else:
        con.print("arc_mli glue defects: none")

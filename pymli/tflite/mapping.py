"""The TFLite -> MLI mapping machinery: a table of operator handlers and the graph builder they fill.

A mapping is an :class:`OperatorTable`: TFLite operator name -> handler, a small function
``handler(imp: GraphBuilder, op: OpInfo) -> None`` that checks the operator, adds one or a few
:class:`~pymli.models.Layer` s and binds the output tensor. :data:`MLI` is pymli's mapping (every
operator on an MLI kernel); its handlers live in :mod:`pymli.tflite.operators`. A second mapping is a
second table, created with ``OperatorTable("tflm", fallback=MLI)``: it registers the handlers that
differ and falls back to MLI's for the others.

Adding an operator: one function in :mod:`pymli.tflite.operators` decorated with
``@MLI.register("OP_NAME")``, and one test.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ..graph.activation import TFLITE_FUSED
from ..graph.geometry import resolve_padding
from ..models.layers import Layer, ReLU
from ..models.network import Network
from ..models.qparams import Const, QParams
from .errors import TfliteUnsupported
from .layers import Requant
from .quant import bias_qparams, sa8_qparams
from .reader import ACT_NAMES, PAD_NAMES, ModelInfo, OpInfo, TensorInfo

__all__ = ["OperatorTable", "GraphBuilder", "Handler", "MLI", "MAX_ELEMENTS"]

#: largest activation tensor accepted (elements); larger shapes are refused at load time
MAX_ELEMENTS = 1 << 24

#: an operator handler
Handler = Callable[["GraphBuilder", OpInfo], None]


class OperatorTable:
    """TFLite operator name -> handler, for one mapping.

    Args:
        mapping: the mapping's name (``"mli"``, later ``"tflm"``), used in messages.
        fallback: a table consulted for operators this one does not register.
    """

    def __init__(self, mapping: str, fallback: OperatorTable | None = None) -> None:
        self.mapping = mapping
        self.fallback = fallback
        self._handlers: dict[str, Handler] = {}

    def register(self, *names: str) -> Callable[[Handler], Handler]:
        """Decorator registering a handler under one or more TFLite operator names.

        Raises:
            ValueError: a name registered twice in this table.
        """

        def deco(fn: Handler) -> Handler:
            for name in names:
                if name in self._handlers:
                    raise ValueError(f"{self.mapping}: operator {name} registered twice")
                self._handlers[name] = fn
            return fn

        return deco

    def get(self, name: str) -> Handler | None:
        """The handler of operator ``name`` (this table's, else the fallback's), or None."""
        h = self._handlers.get(name)
        if h is None and self.fallback is not None:
            return self.fallback.get(name)
        return h

    def names(self) -> tuple[str, ...]:
        """Every operator name this table (with its fallback) handles, in registration order."""
        own = tuple(self._handlers)
        rest = tuple(n for n in self.fallback.names() if n not in self._handlers) if self.fallback else ()
        return own + rest

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None


#: pymli's mapping: every operator on MLI kernels (handlers in :mod:`pymli.tflite.operators`)
MLI = OperatorTable("mli")


def _tflite_q(t: TensorInfo) -> tuple[float, int]:
    return (float(t.scale[0]) if t.scale.size else 1.0, int(t.zero_point[0]) if t.zero_point.size else 0)


def _kind(net: Network, name: str) -> str:
    return "input" if name == "input" else net[name].kind


class GraphBuilder:
    """The state of one import: TFLite tensors -> network tensor names, parameters and layers.

    Handlers read operator inputs with :meth:`act` / :meth:`const` / :meth:`in_name`, add layers with
    :meth:`add` and bind their result to the TFLite output with :meth:`finish`; every refusal goes
    through :meth:`fail` (a :class:`TfliteUnsupported` naming the operator, its index and the reason).

    Attributes:
        info: the decoded flatbuffer; t: its tensors.
        names: TFLite tensor index -> network tensor name holding its values.
        qp: network tensor name -> its sa8 parameters.
        layers: the layers added so far, in order; op_layers: operator index -> their names.
        op: the operator being mapped.
    """

    def __init__(self, info: ModelInfo, data: bytes, table: OperatorTable) -> None:
        self.info, self.data, self.table = info, data, table
        self.t = info.tensors
        self.names: dict[int, str] = {}
        self.qp: dict[str, QParams] = {}
        self.layers: list[Layer] = []
        self.op_layers: dict[int, list[str]] = {}
        self.used: set[str] = {"input"}
        self.op: OpInfo | None = None

    # ------------------------------------------------------------ helpers
    def fail(self, reason: str) -> TfliteUnsupported:
        """The error refusing the current operator for ``reason`` (raise it)."""
        op = self.op
        return TfliteUnsupported(op.index if op else None, op.name if op else "model", reason)

    def uname(self, base: str) -> str:
        """A new unique layer name from ``base`` (characters outside ``[A-Za-z0-9_./:-]`` replaced)."""
        base = re.sub(r"[^A-Za-z0-9_./:-]", "_", base) or "t"
        name, k = base, 1
        while name in self.used:
            k += 1
            name = f"{base}#{k}"
        self.used.add(name)
        return name

    def act(self, idx: int) -> TensorInfo:
        """An int8 activation tensor with batch 1, per-tensor quantised."""
        t = self.tensor(idx)
        if t.is_const:
            raise self.fail(f"tensor {idx} ({t.name}) is a constant where an activation is expected")
        if t.type != "INT8":
            raise self.fail(f"tensor {idx} ({t.name}) has type {t.type}; only int8 activations run on MLI sa8")
        if not t.quantized:
            raise self.fail(f"tensor {idx} ({t.name}) has no quantisation parameters")
        if t.per_channel:
            raise self.fail(f"activation tensor {idx} ({t.name}) is quantised per channel; MLI kernels need per tensor")
        if not t.shape or t.shape[0] != 1:
            raise self.fail(f"tensor {idx} ({t.name}) shape {t.shape}: batch 1 expected")
        if len(t.shape) > 5:
            raise self.fail(f"tensor {idx} ({t.name}) rank {len(t.shape)}: MLI tensors have rank <= 4 plus batch")
        if any(s <= 0 for s in t.shape) or int(np.prod(t.shape, dtype=object)) > MAX_ELEMENTS:
            raise self.fail(f"tensor {idx} ({t.name}) shape {t.shape}: empty or more than {MAX_ELEMENTS} elements")
        return t

    def tensor(self, idx: int) -> TensorInfo:
        """TFLite tensor ``idx`` (refused when missing)."""
        if idx < 0 or idx >= len(self.t):
            raise self.fail(f"missing tensor (index {idx})")
        return self.t[idx]

    def in_name(self, idx: int) -> str:
        """The network tensor holding TFLite tensor ``idx`` (refused when no earlier operator produced it)."""
        if idx not in self.names:
            raise self.fail(f"reads tensor {idx} ({self.t[idx].name}) that no earlier operator produces")
        return self.names[idx]

    def tq(self, t: TensorInfo) -> QParams:
        """The sa8 parameters of TFLite tensor ``t`` (refused when MLI cannot represent its scale)."""
        try:
            return sa8_qparams(t.scale, t.zero_point if t.zero_point.size else np.zeros(1, np.int64))
        except ValueError as e:
            raise self.fail(f"tensor {t.index} ({t.name}): {e}") from None

    def add(self, layer: Layer, inputs: list[str], out_idx: int | None = None, out_q: QParams | None = None,
            base: str | None = None) -> str:
        """Append ``layer`` reading ``inputs``, named after TFLite tensor ``out_idx`` (or ``base``); returns its name."""
        assert self.op is not None
        layer.name = self.uname(base or (self.t[out_idx].name if out_idx is not None else self.op.name.lower()))
        layer.inputs = list(inputs)
        if out_q is not None:
            layer.out_q = out_q
        self.layers.append(layer)
        self.op_layers.setdefault(self.op.index, []).append(layer.name)
        return layer.name

    def cur_q(self, name: str) -> QParams:
        """The parameters of network tensor ``name``."""
        return self.qp[name]

    def finish(self, name: str, layer_q: QParams, out_idx: int) -> None:
        """Bind ``name`` (with parameters ``layer_q``) to TFLite tensor ``out_idx``, requantising if needed."""
        t = self.act(out_idx)
        want = self.tq(t)
        if layer_q != want:
            name = self.add(Requant(), [name], out_q=want, base=t.name + "/requant")
        self.qp[name] = want
        self.names[out_idx] = name

    def emit(self, layer: Layer, in_idx: int, out_idx: int, keep_q: bool = False) -> None:
        """Add ``layer`` on TFLite tensor ``in_idx`` and bind it to TFLite tensor ``out_idx`` (the common
        ending of a one-input handler): with the output tensor's parameters, or with ``keep_q`` the
        input's (a layer that moves values; :meth:`finish` requantises when they differ)."""
        in_name = self.in_name(in_idx)
        if keep_q:
            self.finish(self.add(layer, [in_name], out_idx), self.cur_q(in_name), out_idx)
            return
        oq = self.tq(self.act(out_idx))
        self.finish(self.add(layer, [in_name], out_idx, out_q=oq), oq, out_idx)

    def op_bias(self, op: OpInfo, in_pos: int, bias_pos: int, w: Const, n: int) -> Const:
        """The bias of a MAC operator: its optional input ``bias_pos`` (absent: zeros), on the scale of
        input ``in_pos`` times the weights' (:meth:`bias`)."""
        in_q = self.cur_q(self.in_name(op.inputs[in_pos]))
        return self.bias(op.inputs[bias_pos] if len(op.inputs) > bias_pos else -1, in_q, w, n)

    def act_and_ints(self, op: OpInfo, what: str) -> tuple[TensorInfo, np.ndarray]:
        """An operator's activation input and its second input, a constant int32 / int64 ``what``, flattened."""
        x = self.act(op.inputs[0])
        if len(op.inputs) != 2:
            raise self.fail(f"needs input and {what}")
        c = self.const(op.inputs[1], what, ("INT32", "INT64"))
        return x, c.data.reshape(-1)  # type: ignore[union-attr]

    def sample_shape(self, t: TensorInfo) -> tuple[int, ...]:
        """``t``'s shape without the batch axis."""
        return tuple(t.shape[1:])

    def const(self, idx: int, what: str, types: tuple[str, ...]) -> TensorInfo:
        """Constant TFLite tensor ``idx`` (the operator's ``what``) of one of ``types``, dense."""
        t = self.tensor(idx)
        if not t.is_const:
            raise self.fail(f"{what} (tensor {idx}) must be a constant")
        if t.type not in types:
            raise self.fail(f"{what} (tensor {idx}) has type {t.type}, expected {'/'.join(types)}")
        if t.sparse:
            raise self.fail(f"{what} (tensor {idx}) is stored sparse; MLI takes dense constants")
        return t

    def fused(self, opts: dict[str, Any]) -> str:
        """The canonical ReLU name of the operator's fused activation (refused when MLI has none)."""
        a = ACT_NAMES.get(int(opts.get("FusedActivationFunction", 0)), "?")
        if a not in TFLITE_FUSED:
            raise self.fail(f"fused activation {a} has no MLI equivalent")
        return TFLITE_FUSED[a]

    def then_relu(self, name: str, kind: str) -> str:
        """A ReLU layer of ``kind`` after ``name`` (none for ``"none"``); returns the last name."""
        if kind == "none":
            return name
        return self.add(ReLU(kind), [name], base=name + "/relu")

    def padding_name(self, opts: dict[str, Any]) -> str:
        """The operator's ``Padding`` option: ``"SAME"`` or ``"VALID"`` (refused otherwise)."""
        p = PAD_NAMES.get(int(opts.get("Padding", 0)), "?")
        if p not in ("SAME", "VALID"):
            raise self.fail(f"padding {p}")
        return p

    def padding(self, opts: dict[str, Any], h: int, w: int, kh: int, kw: int, sh: int, sw: int, dh: int = 1,
                dw: int = 1) -> tuple[int, int, int, int]:
        """``(top, bottom, left, right)`` of the operator's SAME / VALID padding for a window over ``h x w``."""
        return resolve_padding(self.padding_name(opts).lower(), (h, w), (kh, kw), (sh, sw), (dh, dw))

    def weights(self, idx: int, perm: tuple[int, ...], qdim_map: dict[int, int]) -> Const:
        """Symmetric int8 weights ``idx`` transposed by ``perm`` to MLI's layout; per-channel scales move
        from TFLite dimension ``d`` to MLI dimension ``qdim_map[d]``."""
        t = self.const(idx, "weights", ("INT8",))
        if not t.quantized:
            raise self.fail(f"weights (tensor {idx}) are not quantised")
        if t.zero_point.size and np.any(t.zero_point != 0):
            raise self.fail("weights with a non-zero zero point (MLI sa8 weights are symmetric)")
        dim = -1
        if t.per_channel:
            if t.qdim not in qdim_map:
                raise self.fail(f"weights quantised along dimension {t.qdim}, MLI wants the output channels")
            dim = qdim_map[t.qdim]
            if t.scale.size != t.shape[t.qdim]:
                raise self.fail(f"weights have {t.scale.size} scales for {t.shape[t.qdim]} channels")
        try:
            qp = sa8_qparams(t.scale, np.zeros(t.scale.size, np.int64), dim)
        except ValueError as e:
            raise self.fail(f"weights: {e}") from None
        if dim >= 0:
            qp = dataclasses.replace(qp, zero_point=np.zeros(t.scale.size, np.int64))
        return Const.quantized(np.ascontiguousarray(np.transpose(t.data, perm)), qp)

    def bias(self, idx: int, in_q: QParams, w: Const, n: int) -> Const:
        """The int32 bias ``idx`` of ``n`` values (zeros for ``idx < 0``) on MLI's in x weights scale."""
        bq = bias_qparams(in_q, w.qp)  # type: ignore[arg-type]
        if idx < 0:
            return Const.quantized(np.zeros(n, np.int32), bq)
        t = self.const(idx, "bias", ("INT32",))
        if t.data.size != n:  # type: ignore[union-attr]
            raise self.fail(f"bias has {t.data.size} values for {n} output channels")  # type: ignore[union-attr]
        return Const.quantized(t.data.reshape(n).astype(np.int32), bq)  # type: ignore[union-attr]

    # ------------------------------------------------------------ driver
    def build(self) -> dict[str, Any]:
        """Map every operator through the table and check the network against the TFLite shapes.

        Returns:
            The fields of a :class:`~pymli.tflite.TfliteModel` besides ``info`` and ``data``: ``network``,
            ``tensor_layer``, ``op_layers``, ``input_index``, ``output_index``, ``float_input``,
            ``float_output``, ``in_quant``, ``out_quant``, ``q_input_index``, ``q_output_index``.

        Raises:
            TfliteUnsupported: the first operator or property that cannot be mapped.
        """
        info = self.info
        if len(info.inputs) != 1 or len(info.outputs) != 1:
            raise TfliteUnsupported(None, "model", f"{len(info.inputs)} inputs and {len(info.outputs)} outputs; "
                                                   "one input and one output are supported")
        in_idx, out_idx = info.inputs[0], info.outputs[0]
        ops = list(info.ops)
        float_input = float_output = False
        q_in, q_out = in_idx, out_idx
        if ops and ops[0].name == "QUANTIZE" and self.t[in_idx].type == "FLOAT32" and ops[0].inputs[:1] == [in_idx]:
            float_input = True
            q_in = ops[0].outputs[0] if ops[0].outputs else -1
            self.op_layers[ops[0].index] = []
            ops = ops[1:]
        if (ops and ops[-1].name == "DEQUANTIZE" and self.t[out_idx].type == "FLOAT32"
                and ops[-1].outputs[:1] == [out_idx]):
            float_output = True
            q_out = ops[-1].inputs[0] if ops[-1].inputs else -1
            self.op_layers[ops[-1].index] = []
            ops = ops[:-1]
        self.op = None
        tin = self.tensor(q_in)
        if any(s <= 0 for s in tin.shape) or int(np.prod(tin.shape, dtype=object)) > MAX_ELEMENTS:
            raise TfliteUnsupported(None, "model", f"input tensor {q_in} shape {tin.shape}: empty or too large")
        if tin.type != "INT8" or not tin.quantized or tin.per_channel or not tin.shape or tin.shape[0] != 1:
            raise TfliteUnsupported(None, "model", f"input tensor {q_in} ({tin.name}): {tin.type} {tin.shape}; "
                                                   "an int8 per-tensor input with batch 1 is needed")
        in_q = self.tq(tin)
        self.names[q_in] = "input"
        self.qp["input"] = in_q
        for op in ops:
            self.op = op
            handler = self.table.get(op.name)
            if handler is None:
                raise self.fail(f"operator not supported by pymli's {self.table.mapping.upper()} mapping")
            if not op.outputs:
                raise self.fail("no output tensor")
            handler(self, op)
        self.op = None
        if q_out not in self.names:
            raise TfliteUnsupported(None, "model", f"output tensor {q_out} is not produced by any operator")
        if not self.layers:
            raise TfliteUnsupported(None, "model", "no operator to run")
        final = self.names[q_out]
        if final != self.layers[-1].name:
            # the network output is its last layer: move the output producer to the end when it is not
            raise TfliteUnsupported(None, "model", "the graph output is not produced by the last operator")
        net = Network(self.sample_shape(tin), [], input_q=in_q, name=info.description or "tflite")
        for la in self.layers:
            try:
                net.add(la)
            except ValueError as e:
                op_idx = next(i for i, ls in self.op_layers.items() if la.name in ls)
                op = self.info.ops[op_idx]
                raise TfliteUnsupported(op_idx, op.name, f"layer {la.name}: {e}") from None
        shapes = net.shapes()
        for idx, name in self.names.items():
            want = tuple(self.t[idx].shape[1:])
            got = tuple(shapes[name])
            if got != want and not (_kind(net, name) == "argmax" and int(np.prod(got)) == int(np.prod(want))):
                op_idx = next((i for i, ls in self.op_layers.items() if name in ls), None)
                op_name = self.info.ops[op_idx].name if op_idx is not None else "model"
                raise TfliteUnsupported(op_idx, op_name, f"tensor {idx} ({self.t[idx].name}) has shape "
                                        f"{self.t[idx].shape}, the operator computes {(1,) + got}")
        try:
            net.planned_qparams()
            missing = net.missing_functions()
        except (ValueError, KeyError) as e:
            raise TfliteUnsupported(None, "model", f"quantisation: {e}") from None
        if missing:
            raise TfliteUnsupported(None, "model", f"MLI functions not available in pymli.capi: {missing}")
        return {"network": net, "tensor_layer": dict(self.names), "op_layers": self.op_layers,
                "input_index": in_idx, "output_index": out_idx, "float_input": float_input,
                "float_output": float_output, "in_quant": _tflite_q(self.t[q_in]), "out_quant": _tflite_q(self.t[q_out]),
                "q_input_index": q_in, "q_output_index": q_out}

"""Recurrent layers: MLI's LSTM and GRU cells over a sequence, and an LSTM unrolled into MLI primitives.

Sequences are ``[T, features]`` per sample (``[N, T, features]`` in the float path). Weights follow
MLI: ``weights_in [G, in, out]``, ``weights_out [G, out, out]``, ``bias [G, out]``; LSTM has G = 4
gates in the order i (input), g (cell candidate), f (forget), o (output), GRU has G = 3 gates in
the order z (update), r (reset), u (candidate). The state starts at zero (the zero point for SA8),
as MLI's examples make it by multiplying the state by a zero scalar.

``direction="backward"`` processes the frames last to first; the outputs are then stored in
processing order, as MLI does (row 0 is the step on the last frame), and ``results="last"`` keeps
the output of the step on frame 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from ..capi.convolution import fast_view
from ..capi.types import RnnCellCfg, RnnDenseCfg, RnnDirection, RnnOutActivation, RnnResults
from ..errors import MliError, Status
from ..formats import ElType
from ..graph import args
from ..graph.registry import Op, entry, lookup, new_lut
from ..kernels.eltwise import eltwise_fx
from ..kernels.recurrent import SaQ, gru_cell, lstm_cell, rnn_dense
from ..kernels.transform import lut_activation_fx
from ..tensor import Lut, Tensor
from . import floatops as F
from .layers import Layer, Step
from .qparams import Const, QParams

__all__ = ["GATES", "GRU", "LSTM", "UnrolledLSTM"]

#: gate order of MLI's LSTM weights and biases
GATES = ("i", "g", "f", "o")


def _zero_state(q: QParams, m: int) -> Tensor:
    """A rank-1 state of ``m`` values equal to zero in format ``q`` (the zero point for SA)."""
    zp = int(q.zero_point) if q.el_type.is_sa else 0
    return q.tensor(np.full(m, zp, q.el_type.dtype))


def _make_lut(name: str) -> Lut:
    """The LUT of activation ``name`` (``"tanh"``, ``"sigm"``)."""
    return new_lut(Op(name))


def _kernel_q(q: QParams, kind: str, n: int = 1) -> int | SaQ:
    """The quantisation argument of :mod:`pymli.kernels.recurrent` for a tensor of parameters ``q``
    (what the capi cells read from its struct; ``n``: the length of its per-axis dimension)."""
    if kind != "sa8":
        return int(q.frac_bits)
    if q.dim >= 0:
        def vec(v: Any) -> tuple[int, ...]:
            return tuple(int(e) for e in np.asarray(v, np.int64).reshape(-1)[:n])
        return SaQ(int(np.asarray(q.zero_point).reshape(-1)[0]), vec(q.scale), vec(q.scale_frac_bits), True)
    return SaQ.of(int(q.zero_point), int(q.scale), int(q.scale_frac_bits))


def _rnn_cfg(results: str, direction: str, act: str, scratch: int) -> Any:
    return RnnCellCfg(direction=RnnDirection.BACKWARD if direction == "backward" else RnnDirection.FORWARD,
                      results=RnnResults.ALL if results == "all" else RnnResults.LAST,
                      act={"tanh": RnnOutActivation.TANH, "sigm": RnnOutActivation.SIGM,
                           "none": RnnOutActivation.NONE}[act],
                      scratch_capacity=scratch)


class _RnnBase(Layer):
    """Shared part of the recurrent layers: constants, shapes, direction, results, LUTs."""

    n_gates: ClassVar[int] = 4
    weights_in: Const
    weights_out: Const
    bias: Const
    results: str
    direction: str
    act: str

    def _init(self, w_in: Any, w_out: Any, bias: Any, results: str, act: str, tanh_lut: Lut | None,
              sigm_lut: Lut | None, direction: str = "forward") -> None:
        self.weights_in = w_in if isinstance(w_in, Const) else Const.from_float(w_in)
        self.weights_out = w_out if isinstance(w_out, Const) else Const.from_float(w_out)
        self.bias = bias if isinstance(bias, Const) else Const.from_float(bias)
        what = f"{self.kind} layer {self.name!r}"
        results = args.choice(results, {"all": "all", "last": "last"}, "results", what=what)
        direction = args.choice(direction, {"forward": "forward", "backward": "backward"}, "direction", what=what)
        act = args.choice(act, {"tanh": "tanh", "sigm": "sigm", "sigmoid": "sigm", "none": "none"}, "act", what=what)
        for name, lut in (("tanh_lut", tanh_lut), ("sigm_lut", sigm_lut)):
            if lut is not None and not isinstance(lut, Lut):
                raise MliError(Status.BAD_FUNC_CFG, f"{what}: {name} = {type(lut).__name__}: a pymli Lut or None expected")
        g = self.n_gates
        if (len(self.weights_in.shape) != 3 or self.weights_in.shape[0] != g
                or tuple(self.weights_out.shape) != (g, self.weights_in.shape[2], self.weights_in.shape[2])
                or tuple(self.bias.shape) != (g, self.weights_in.shape[2])):
            raise MliError(Status.SHAPE_MISMATCH, f"{type(self).__name__} wants weights_in [{g}, in, out], weights_out [{g}, out, out], "
                             f"bias [{g}, out]; got {self.weights_in.shape}, {self.weights_out.shape}, "
                             f"{self.bias.shape}")
        self.results, self.act, self.direction = results, act, direction
        self.tanh_lut, self.sigm_lut = tanh_lut, sigm_lut

    def signature(self, in_qs: list[QParams]) -> tuple[Op, tuple[ElType, ...]]:
        """Recurrent kernels are chosen by the input and weights types."""
        return self.op, (in_qs[0].el_type, self.weights_in.qp.el_type)  # type: ignore[union-attr]

    @property
    def units(self) -> int:
        """Output units (``M``)."""
        return int(self.weights_out.shape[-1])

    def consts(self) -> dict[str, Const]:
        return {"weights_in": self.weights_in, "weights_out": self.weights_out, "bias": self.bias}

    def cfg_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"units": self.units, "results": self.results}
        if self.direction != "forward":
            d["direction"] = self.direction
        return d

    def out_shape(self, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        t, n_in = in_shapes[0][0], int(np.prod(in_shapes[0][1:]))
        if n_in != self.weights_in.shape[1]:
            raise MliError(Status.SHAPE_MISMATCH, f"{self.name}: input {in_shapes[0]} does not fit weights_in {self.weights_in.shape}")
        return (t if self.results == "all" else 1, self.units)

    def mac_count(self, in_shapes: list[tuple[int, ...]]) -> int:
        return int(self.weights_in.shape[1]) + self.units

    def prepare(self) -> None:
        if self.tanh_lut is None:
            self.tanh_lut = new_lut(Op.TANH)
        if self.sigm_lut is None:
            self.sigm_lut = new_lut(Op.SIGM)

    def _cell_args(self, fn: Callable[..., Any], in_qs: list[QParams], out_q: QParams) -> dict[str, Any] | None:
        """The arguments of the recurrent kernel shared by every sample (None: no step for this call)."""
        el, w_el = in_qs[0].el_type, self.weights_in.qp.el_type  # type: ignore[union-attr]
        if (not self._registry_call(fn, in_qs) or self.tanh_lut is None or self.sigm_lut is None
                or out_q.el_type is not el or (el.is_sa and (in_qs[0].dim >= 0 or out_q.dim >= 0))):
            return None
        kind = "sa8" if el.is_sa else "fx16" if w_el is ElType.FX_16 else "fx16_fx8_fx8"

        def cq(c: Const) -> int | SaQ:
            qp = c.qp
            return _kernel_q(qp, kind, int(c.shape[qp.dim]) if qp.dim >= 0 else 1)  # type: ignore[union-attr]
        return {"w_in": fast_view(self.weights_in.tensor()), "w_out": fast_view(self.weights_out.tensor()),
                "bias": fast_view(self.bias.tensor()), "tanh_lut": self.tanh_lut, "sigm_lut": self.sigm_lut,
                "kind": kind, "in_q": _kernel_q(in_qs[0], kind), "prev_q": _kernel_q(out_q, kind),
                "w_in_q": cq(self.weights_in), "w_out_q": cq(self.weights_out), "b_q": cq(self.bias),
                "out_q": _kernel_q(out_q, kind), "backward": self.direction == "backward",
                "all_results": self.results == "all"}

    def _frames(self, x: np.ndarray) -> np.ndarray:
        """Float frames ``[N, T, in]`` in processing order."""
        x = x.reshape(x.shape[0], x.shape[1], -1)
        return x[:, ::-1] if self.direction == "backward" else x

    def float_sequence(self, x: np.ndarray, original: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(h of every step ``[N, T, out]``, cell state of every step) in float64, processing order."""
        raise NotImplementedError

    def forward_float(self, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        h, _ = self.float_sequence(xs[0], original)
        return h if self.results == "all" else h[:, -1:]

    def accumulator(self, x_q: np.ndarray, in_q: QParams) -> np.ndarray:
        """Exact accumulators of the input series (``x_t @ weights_in`` + bias, every gate and step).

        FX: the bias is aligned to ``in_frac + w_frac``; SA8: inputs are centred on the zero point.
        The recurrent series (on the previous output) is accumulated and rescaled separately by MLI.
        Float64 is exact here: 8/16-bit operands and far fewer than 2**21 products per output.
        """
        wq, bqp = self.weights_in.qp, self.bias.qp
        w = np.asarray(self.weights_in.q, np.float64)
        b = np.asarray(self.bias.q, np.float64)
        x = np.asarray(x_q, np.float64)
        x = x.reshape(x.shape[0], x.shape[1], -1)
        if in_q.el_type.is_sa:
            x = x - float(in_q.zero_point)
        else:
            b = b * 2.0 ** (in_q.frac_bits + wq.frac_bits - bqp.frac_bits)  # type: ignore[union-attr]
        return np.einsum("nti,gio->ntgo", x, w) + b


class _LstmBase(_RnnBase):
    def float_sequence(self, x: np.ndarray, original: bool = False) -> tuple[np.ndarray, np.ndarray]:
        x = self._frames(x)
        n, m = x.shape[0], self.units
        w_in, w_out, b = (c.value(original) for c in (self.weights_in, self.weights_out, self.bias))
        h, c = np.zeros((n, m)), np.zeros((n, m))
        hs, cs = [], []
        for t in range(x.shape[1]):
            pre = np.einsum("ni,gio->gno", x[:, t], w_in) + np.einsum("ni,gio->gno", h, w_out) + b[:, None, :]
            i, g, f, o = F.sigmoid(pre[0]), np.tanh(pre[1]), F.sigmoid(pre[2]), F.sigmoid(pre[3])
            c = f * c + i * g
            h = o * (np.tanh(c) if self.act == "tanh" else F.sigmoid(c) if self.act == "sigm" else c)
            hs.append(h)
            cs.append(c)
        return np.stack(hs, 1), np.stack(cs, 1)


class LSTM(_LstmBase):
    """``mli_krn_lstm_cell_*`` over the whole input sequence.

    Args:
        w_in, w_out, bias: constants ``[4, in, out]``, ``[4, out, out]``, ``[4, out]``.
        results: ``"all"`` (output ``[T, out]``) or ``"last"`` (``[1, out]``).
        direction: ``"forward"`` or ``"backward"`` (frames last to first).
        act: output activation (``tanh``, ``sigm``, ``none``).
        cell_q: quantisation of the cell state (set by the quantiser or a pack).
        tanh_lut, sigm_lut: LUTs (created with ``mli_krn_*_create_lut`` when None).
    """

    kind = "lstm"
    op = Op.LSTM_CELL

    def __init__(self, w_in: Any, w_out: Any, bias: Any, *, results: str = "all", act: str = "tanh",
                 direction: str = "forward", cell_q: QParams | None = None, tanh_lut: Lut | None = None,
                 sigm_lut: Lut | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self._init(w_in, w_out, bias, results, act, tanh_lut, sigm_lut, direction)
        self.cell_q = cell_q

    def cfg_dict(self) -> dict[str, Any]:
        return {**super().cfg_dict(), "act": self.act}


    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> dict[str, Any]:
        m = self.units
        prev = _zero_state(QParams.of(out), m)
        if self.cell_q is None:
            raise MliError(Status.BAD_FUNC_CFG, f"layer {self.name}: cell quantisation not set")
        cell = _zero_state(self.cell_q, m)
        cfg = _rnn_cfg(self.results, self.direction, self.act, 4 * m * ins[0].el_type.size)
        fn(_as_frames(ins[0]), prev, self.weights_in.tensor(), self.weights_out.tensor(), self.bias.tensor(),
           self.tanh_lut, self.sigm_lut, cfg, cell, out)
        return {"cell": (cell.numpy(), QParams.of(cell))}

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        """The cell kernel per sample from zero states, with every argument prepared once."""
        kw = self._cell_args(fn, in_qs, out_q)
        if kw is None or self.cell_q is None or (self.cell_q.el_type.is_sa and self.cell_q.dim >= 0):
            return None
        m = self.units
        prev = _zero_state(out_q, m).numpy()
        cell0 = _zero_state(self.cell_q, m).numpy()
        kw.update(cell_q=_kernel_q(self.cell_q, kw["kind"]), act=self.act)
        dtype = out_q.el_type.dtype

        def step(xs: list[np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
            x = xs[0]
            frames = x.reshape(x.shape[0], x.shape[1], -1)
            outs = np.empty((x.shape[0], *out_shape), dtype=dtype)
            cells = np.empty((x.shape[0], m), dtype=cell0.dtype)
            for n in range(x.shape[0]):
                res, c = lstm_cell(frames[n], prev, cell0.copy(), **kw)
                outs[n] = res.reshape(out_shape)
                cells[n] = c
            return outs, {"cell": cells}
        return step  # type: ignore[return-value]


class GRU(_RnnBase):
    """``mli_krn_gru_cell_*`` over the whole input sequence.

    MLI's GRU applies the reset gate to the state before its product with the candidate weights::

        z = sigm(x W_xz + h W_hz + b_z);  r = sigm(x W_xr + h W_hr + b_r)
        u = tanh(x W_xu + (r * h) W_hu + b_u);  h' = z * h + (1 - z) * u

    Args:
        w_in, w_out, bias: constants ``[3, in, out]``, ``[3, out, out]``, ``[3, out]`` (gates z, r, u).
        results: ``"all"`` (output ``[T, out]``) or ``"last"`` (``[1, out]``).
        direction: ``"forward"`` or ``"backward"``.
        tanh_lut, sigm_lut: LUTs (created with ``mli_krn_*_create_lut`` when None).
    """

    kind = "gru"
    op = Op.GRU_CELL
    n_gates = 3

    def __init__(self, w_in: Any, w_out: Any, bias: Any, *, results: str = "all", direction: str = "forward",
                 tanh_lut: Lut | None = None, sigm_lut: Lut | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self._init(w_in, w_out, bias, results, "tanh", tanh_lut, sigm_lut, direction)


    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> None:
        m = self.units
        prev = _zero_state(QParams.of(out), m)
        cfg = _rnn_cfg(self.results, self.direction, "tanh", 3 * m * ins[0].el_type.size)
        fn(_as_frames(ins[0]), prev, self.weights_in.tensor(), self.weights_out.tensor(), self.bias.tensor(),
           self.tanh_lut, self.sigm_lut, cfg, out)

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        """The cell kernel per sample from a zero state, with every argument prepared once."""
        kw = self._cell_args(fn, in_qs, out_q)
        if kw is None:
            return None
        prev = _zero_state(out_q, self.units).numpy()
        dtype = out_q.el_type.dtype

        def step(xs: list[np.ndarray]) -> np.ndarray:
            x = xs[0]
            frames = x.reshape(x.shape[0], x.shape[1], -1)
            outs = np.empty((x.shape[0], *out_shape), dtype=dtype)
            for n in range(x.shape[0]):
                outs[n] = gru_cell(frames[n], prev, **kw).reshape(out_shape)
            return outs
        return step

    def float_sequence(self, x: np.ndarray, original: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(h of every step ``[N, T, out]``, the same array: a GRU has no separate cell state)."""
        x = self._frames(x)
        w_in, w_out, b = (c.value(original) for c in (self.weights_in, self.weights_out, self.bias))
        h = F.gru_cell_seq(x, np.zeros((x.shape[0], self.units)), w_in, w_out, b)
        return h, h


def _as_frames(x: Tensor) -> Tensor:
    """The input as the ``[T, in]`` tensor MLI's cells want."""
    if x.rank == 2:
        return x
    return QParams.of(x).tensor(x.numpy().reshape(x.shape[0], -1))


class UnrolledLSTM(_LstmBase):
    """An LSTM built step by step from MLI primitives, as MLI's HAR example does for its FX builds.

    Per step: ``rnn_dense`` for each gate (inputs x_t and h_{t-1}), ``sigm`` / ``tanh``, then
    ``f * c``, ``i * g`` (``eltwise_mul``), ``c = f*c + i*g`` (``eltwise_add``), ``tanh(c)`` and
    ``h = tanh(c) * o``. Every intermediate format is a parameter.

    Args:
        w_in, w_out, bias: as :class:`LSTM`.
        qs: quantisation of the outputs of ``dense_i, dense_g, dense_f, dense_o, mul_fc, mul_ig, add_c,
            mul_out`` (h), plus ``c0`` and ``h0`` (the zero initial states).
        results: ``"all"`` or ``"last"``.
    """

    kind = "unrolled_lstm"
    op = Op.RNN_DENSE
    OPS: ClassVar[tuple[str, ...]] = ("dense_i", "dense_g", "dense_f", "dense_o", "sigm_i", "tanh_g", "sigm_f",
                                      "sigm_o", "mul_fc", "mul_ig", "add_c", "tanh_c", "mul_out")

    def __init__(self, w_in: Any, w_out: Any, bias: Any, *, qs: dict[str, QParams] | None = None,
                 results: str = "last", tanh_lut: Lut | None = None, sigm_lut: Lut | None = None,
                 **kw: Any) -> None:
        super().__init__(**kw)
        self._init(w_in, w_out, bias, results, "tanh", tanh_lut, sigm_lut)
        self.qs = dict(qs or {})

    def output_qparams(self, in_qs: list[QParams]) -> QParams:
        return self.out_q or self.qs["mul_out"]

    #: the one-type primitives of a step besides ``rnn_dense``
    _STEP_OPS: ClassVar[tuple[Op, ...]] = (Op.SIGM, Op.TANH, Op.MUL, Op.ADD)

    def functions(self, in_qs: list[QParams]) -> list[str]:
        """C names of every MLI function a step calls (``rnn_dense`` first)."""
        return [self.c_name(in_qs), *(entry(op, in_qs[0].el_type).c_name for op in self._STEP_OPS)]

    def plan_step(self, fn: Callable[..., Any], in_qs: list[QParams], in_shapes: list[tuple[int, ...]],
                  out_q: QParams, out_shape: tuple[int, ...]) -> Step | None:
        """FX builds: the step's primitives straight through the kernels, the element-wise ones and the
        activations over the whole batch, ``rnn_dense`` per sample; every format prepared once."""
        q = in_qs[0]
        el = q.el_type
        w_el = self.weights_in.qp.el_type  # type: ignore[union-attr]
        need = ("h0", "c0", "dense_i", "dense_g", "dense_f", "dense_o", "mul_fc", "mul_ig", "add_c", "mul_out")
        if (el is not ElType.FX_16 or not self._registry_call(fn, in_qs) or self.tanh_lut is None
                or self.sigm_lut is None or any(k not in self.qs or self.qs[k].el_type is not el for k in need)
                or out_q.el_type is not el):
            return None
        kind = "fx16" if w_el is ElType.FX_16 else "fx16_fx8_fx8"
        fb = {k: int(self.qs[k].frac_bits) for k in need}
        act_fb = el.bits - 1  # the LUT kernels' output format (Q15)
        m, bits, dtype = self.units, el.bits, el.dtype
        wi, wo, b = (np.asarray(c.q) for c in (self.weights_in, self.weights_out, self.bias))
        wq = (int(self.weights_in.qp.frac_bits), int(self.weights_out.qp.frac_bits))  # type: ignore[union-attr]
        bq = int(self.bias.qp.frac_bits)  # type: ignore[union-attr]
        tanh_lut, sigm_lut = self.tanh_lut, self.sigm_lut
        h0, c0 = _zero_state(self.qs["h0"], m).numpy(), _zero_state(self.qs["c0"], m).numpy()
        all_results = self.results == "all"
        x_fb = int(q.frac_bits)

        def elt(op: str, a: np.ndarray, b_: np.ndarray, fa: int, fb_: int, fo: int) -> np.ndarray:
            return eltwise_fx(op, a, b_, frac_bits=(fa, fb_, fo), bits=bits).astype(dtype, copy=False)

        def lut(x: np.ndarray, table: Lut, in_fb: int) -> np.ndarray:
            return lut_activation_fx(x, table, in_frac_bits=in_fb, out_bits=bits).astype(dtype, copy=False)

        def step(xs: list[np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
            x = xs[0]
            n_s, steps = x.shape[0], x.shape[1]
            frames = x.reshape(n_s, steps, -1)
            rec = {k: np.empty((n_s, steps, m), dtype) for k in self.OPS}
            h = np.broadcast_to(h0, (n_s, m))
            c = np.broadcast_to(c0, (n_s, m))
            h_fb, c_fb = fb["h0"], fb["c0"]
            for t in range(steps):
                pre = {}
                for k, g in enumerate(GATES):
                    d = rec[f"dense_{g}"][:, t]
                    for s_ in range(n_s):
                        d[s_] = rnn_dense([frames[s_, t], h[s_]], [wi[k], wo[k]], b[k], kind=kind,
                                          in_q=[x_fb, h_fb], w_q=list(wq), b_q=bq,
                                          out_q=fb[f"dense_{g}"])
                    pre[g] = d
                for g in GATES:
                    name = f"{'tanh' if g == 'g' else 'sigm'}_{g}"
                    rec[name][:, t] = lut(pre[g], tanh_lut if g == "g" else sigm_lut, fb[f"dense_{g}"])
                a_i, a_g, a_f, a_o = (rec[k][:, t] for k in ("sigm_i", "tanh_g", "sigm_f", "sigm_o"))
                rec["mul_fc"][:, t] = elt("mul", a_f, c, act_fb, c_fb, fb["mul_fc"])
                rec["mul_ig"][:, t] = elt("mul", a_i, a_g, act_fb, act_fb, fb["mul_ig"])
                rec["add_c"][:, t] = elt("add", rec["mul_fc"][:, t], rec["mul_ig"][:, t], fb["mul_fc"],
                                         fb["mul_ig"], fb["add_c"])
                rec["tanh_c"][:, t] = lut(rec["add_c"][:, t], tanh_lut, fb["add_c"])
                rec["mul_out"][:, t] = elt("mul", rec["tanh_c"][:, t], a_o, act_fb, act_fb, fb["mul_out"])
                h, c, h_fb, c_fb = rec["mul_out"][:, t], rec["add_c"][:, t], fb["mul_out"], fb["add_c"]
            hs = rec["mul_out"] if all_results else rec["mul_out"][:, -1:]
            return np.ascontiguousarray(hs).reshape(n_s, *out_shape), rec
        return step  # type: ignore[return-value]

    def invoke(self, fn: Callable[..., Any], ins: list[Tensor], out: Tensor) -> dict[str, Any]:
        in_q = QParams.of(ins[0])
        sigm, tanh, mul, add = (lookup(op, in_q.el_type) for op in self._STEP_OPS)
        m = self.units
        x = ins[0].numpy().reshape(ins[0].shape[0], -1)
        wi, wo, b = self.weights_in, self.weights_out, self.bias
        w_t = [(wi.qp.tensor(wi.q[k]), wo.qp.tensor(wo.q[k])) for k in range(4)]  # type: ignore[union-attr,index]
        b_t = [b.qp.tensor(b.q[k]) for k in range(4)]  # type: ignore[union-attr,index]
        h = _zero_state(self.qs["h0"], m)
        c = _zero_state(self.qs["c0"], m)
        rec: dict[str, list[np.ndarray]] = {k: [] for k in self.OPS}
        last_q: dict[str, QParams] = {}

        def step(name: str, f: Callable[..., Any], args: list[Any], q: QParams) -> Tensor:
            o = q.empty((m,))
            f(*args, o)
            rec[name].append(o.numpy())
            last_q[name] = QParams.of(o)
            return o

        for t in range(x.shape[0]):
            xt = in_q.tensor(x[t])
            pre = {g: step(f"dense_{g}", fn, [[xt, h], list(w_t[k]), b_t[k], RnnDenseCfg(inputs_num=2)],
                           self.qs[f"dense_{g}"]) for k, g in enumerate(GATES)}
            act = {g: step(f"{'tanh' if g == 'g' else 'sigm'}_{g}", tanh if g == "g" else sigm,
                           [pre[g], self.tanh_lut if g == "g" else self.sigm_lut], QParams(in_q.el_type))
                   for g in ("i", "g", "f", "o")}
            fc = step("mul_fc", mul, [act["f"], c], self.qs["mul_fc"])
            ig = step("mul_ig", mul, [act["i"], act["g"]], self.qs["mul_ig"])
            c = step("add_c", add, [fc, ig], self.qs["add_c"])
            tc = step("tanh_c", tanh, [c, self.tanh_lut], QParams(in_q.el_type))
            h = step("mul_out", mul, [tc, act["o"]], self.qs["mul_out"])
        hs = np.stack(rec["mul_out"])
        out.view()[...] = (hs if self.results == "all" else hs[-1:]).reshape(out.view().shape)
        out_q = last_q["mul_out"]
        if out_q.el_type.is_fx:
            out.frac_bits = out_q.frac_bits
        return {k: (np.stack(v), last_q[k]) for k, v in rec.items()}

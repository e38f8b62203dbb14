"""The model side of :func:`pymli.eval.evaluate`: what is shipped to workers and what runs a chunk there.

A :class:`ModelRef` is the picklable form of a model: the ``.tflite`` bytes, or the bytes of a saved
:class:`pymli.models.Network` (:mod:`pymli.models.io`: a saved-network file as it is, or an in-memory network
saved with :func:`pymli.models.io.network_to_bytes`; on the command line a network is a saved ``.npz`` file or
comes from ``FILE.py:NAME`` / ``package.module:NAME``, a Network or a function returning one).
:func:`prepare` turns it into a :class:`Prepared` model once per worker process; :meth:`Prepared.run_chunk`
runs a batch through :meth:`pymli.models.Network.run` (its prepared plan, the batch at once; bit-exact per sample) and returns the
outputs with the integer statistics the report sums over the whole dataset.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..models.io import NetworkFileError, load_network, network_to_bytes
from ..models.network import Network, mli_argmax
from ..models.report import accu_guard_bits
from .data import EvalError, InputSpec
from .tflm import TflmPrepared

__all__ = ["ModelRef", "Prepared", "LayerInfo", "ChunkResult", "model_ref", "prepare", "check_against", "AGAINST"]

#: reference runs of ``--against``
AGAINST = ("float", "tflm")
#: samples per Network.run call inside a chunk: every intermediate is captured, so keep it small
SUB_BATCH = 4


@dataclasses.dataclass(frozen=True)
class ModelRef:
    """A model in a form any process can rebuild.

    Attributes:
        kind: ``"tflite"`` (``payload`` = the flatbuffer), ``"network"`` (``payload`` = a saved network file,
            :mod:`pymli.models.io`) or ``"pickled"`` (a pickled Network whose layers the file format does not
            hold, e.g. the TFLite importer's, built in this session).
        payload: the bytes.
        name: a label for reports.
        digest: SHA-256 of the payload (cache key in workers, ``--resume`` fingerprint).
    """

    kind: str
    payload: bytes = dataclasses.field(repr=False)
    name: str
    digest: str


def _load_spec(spec: str) -> Any:
    """``FILE.py:NAME`` or ``module:NAME`` -> the object (called if callable)."""
    target, _, attr = spec.rpartition(":")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise EvalError(f"{spec}: no such file {target}")
        mod_name = f"_pymli_eval_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]}"
        s = importlib.util.spec_from_file_location(mod_name, path)
        if s is None or s.loader is None:
            raise EvalError(f"{spec}: cannot import {target}")
        mod = importlib.util.module_from_spec(s)
        sys.modules[mod_name] = mod
        try:
            s.loader.exec_module(mod)
        except Exception as e:  # noqa: BLE001 - the user's file
            raise EvalError(f"{spec}: importing {target} failed: {type(e).__name__}: {e}") from None
    else:
        try:
            mod = importlib.import_module(target)
        except ImportError as e:
            raise EvalError(f"{spec}: cannot import {target} ({e})") from None
    if not hasattr(mod, attr):
        raise EvalError(f"{spec}: {target} has no {attr!r}")
    obj = getattr(mod, attr)
    if callable(obj) and not isinstance(obj, Network):
        try:
            obj = obj()
        except Exception as e:  # noqa: BLE001 - the user's factory
            raise EvalError(f"{spec}: {attr}() failed: {type(e).__name__}: {e}") from None
    return obj


def model_ref(model: Any, mapping: str = "tflm") -> ModelRef:
    """Any accepted model -> :class:`ModelRef`.

    Args:
        model: a ``.tflite`` path, a saved-network file (:meth:`pymli.models.Network.save`),
            ``FILE.py:NAME`` / ``module:NAME`` (a quantised Network or a function returning one), tflite
            bytes, a :class:`pymli.tflite.TfliteModel` (MLI mapping), a :class:`pymli.tflite.TflmModel`
            or a quantised :class:`pymli.models.Network`.
        mapping: for a ``.tflite`` path or bytes: ``"tflm"`` (TFLite Micro + arc_mli, kind
            ``tflite-tflm``) or ``"mli"`` (the MLI network, kind ``tflite``).

    Returns:
        The model's :class:`ModelRef`.

    Raises:
        EvalError: the model cannot be found, read, or is not quantised.
    """
    # pymli.tflite needs the optional tflite package: imported when a .tflite model is evaluated
    from ..tflite.importer import TfliteModel
    from ..tflite.tflm_model import TflmModel

    if mapping not in ("tflm", "mli"):
        raise EvalError(f"unknown mapping {mapping!r}: choose tflm or mli")
    tfl_kind = "tflite-tflm" if mapping == "tflm" else "tflite"
    if isinstance(model, (str, os.PathLike)):
        text = str(model)
        if Path(text).is_file():
            try:
                data = Path(text).read_bytes()
            except OSError as e:
                raise EvalError(f"{text}: {e.strerror}") from None
            if data[:4] == b"PK\x03\x04" and not text.lower().endswith(".tflite"):
                return _network_file(data, text)
            if not text.lower().endswith(".tflite") and data[4:8] != b"TFL3":
                raise EvalError(f"{text}: not a .tflite model nor a saved network (.npz from Network.save)")
            return _ref(tfl_kind, data, Path(text).name)
        if ":" in text and not Path(text).exists():
            return model_ref(_load_spec(text), mapping)
        raise EvalError(f"{text}: no such model file (give a .tflite file, a saved network .npz or FILE.py:NAME)")
    if isinstance(model, (bytes, bytearray, memoryview)):
        return _ref(tfl_kind, bytes(model), "model.tflite")
    if isinstance(model, TflmModel):
        return _ref("tflite-tflm", model.data, "model.tflite")
    if isinstance(model, TfliteModel):
        return _ref("tflite", model.data, model.info.description or "model.tflite")
    if isinstance(model, Network):
        if not model.is_quantized:
            raise EvalError(f"network {model.name!r} is not quantised: use pymli.models.quantize_network first")
        try:
            return _ref("network", network_to_bytes(model), model.name)
        except NetworkFileError:  # layers the file format does not hold: shipped to this run's workers only
            return _ref("pickled", pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL), model.name)
    raise EvalError(f"cannot evaluate a {type(model).__name__}: give a .tflite file, bytes, a TfliteModel "
                    "or a quantised pymli.models.Network")


def _load_network(payload: bytes, name: str) -> Network:
    """A saved network's bytes -> the Network; a bad file is an :class:`EvalError` naming ``name``."""
    try:
        return load_network(payload)
    except NetworkFileError as e:
        raise EvalError(f"{name}: {e.message.removeprefix('saved network: ')}") from None


def _network_file(data: bytes, path: str) -> ModelRef:
    """A saved-network file -> :class:`ModelRef`, checked (it loads, it is quantised) before anything runs."""
    net = _load_network(data, path)
    if not net.is_quantized:
        raise EvalError(f"{path}: network {net.name!r} is not quantised: save a network from "
                        "pymli.models.quantize_network")
    return _ref("network", data, Path(path).name)


def _ref(kind: str, payload: bytes, name: str) -> ModelRef:
    return ModelRef(kind, payload, name, hashlib.sha256(kind.encode() + payload).hexdigest())


@dataclasses.dataclass(frozen=True)
class LayerInfo:
    """Static figures of one layer: name, kind, MLI function, accumulator value bits (MAC layers)."""

    name: str
    kind: str
    function: str
    acc_bits: int | None


@dataclasses.dataclass
class ChunkResult:
    """What one chunk sends back: outputs and integer statistics that sum exactly over chunks.

    Attributes:
        start, stop: the sample range.
        outputs: raw model outputs ``[n, ...]`` (TFLite shape and dtype for a .tflite model).
        pred: int64 class per sample (MLI arg-max tie rule, or the arg-max layer's offset).
        saturated, elements: int64 ``[layers]``: outputs at a container limit, outputs in all.
        acc_peak: int64 ``[layers]``: largest ``|accumulator|`` of MAC layers (-1 elsewhere).
        ref_pred: the reference's classes with ``--against`` (else None).
        diff_max, diff_sum, diff_count: LSB difference of the quantised output against the reference.
        seconds: time spent in the worker.
    """

    start: int
    stop: int
    outputs: np.ndarray
    pred: np.ndarray
    saturated: np.ndarray
    elements: np.ndarray
    acc_peak: np.ndarray
    ref_pred: np.ndarray | None = None
    diff_max: int = -1
    diff_sum: int = 0
    diff_count: int = 0
    seconds: float = 0.0

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The result as plain arrays (``--resume`` chunk files).

        Returns:
            Field name -> array (fields that are None are left out).
        """
        d = {k: np.asarray(v) for k, v in dataclasses.asdict(self).items() if v is not None}
        return d

    @classmethod
    def from_arrays(cls, d: Any) -> ChunkResult:
        """The inverse of :meth:`to_arrays`.

        Args:
            d: a mapping of arrays, e.g. an open ``.npz``.

        Returns:
            The chunk result.
        """
        f = {k: d[k] for k in d.keys()}
        kw: dict[str, Any] = {}
        for fld in dataclasses.fields(cls):
            if fld.name not in f:
                continue
            v = f[fld.name]
            if fld.name in ("start", "stop", "diff_max", "diff_sum", "diff_count"):
                v = int(v)
            elif fld.name == "seconds":
                v = float(v)
            kw[fld.name] = v
        return cls(**kw)


class Prepared:
    """A model ready to run chunks in this process (built once per worker).

    Args:
        ref: the model.
    """

    def __init__(self, ref: ModelRef) -> None:
        from ..tflite.importer import load  # optional tflite package, imported when used (as in model_ref)

        self.ref = ref
        self.tfl = None
        if ref.kind == "tflite":
            try:
                self.tfl = load(ref.payload)
            except ValueError as e:  # TfliteError is an MliError (ValueError)
                raise EvalError(f"{ref.name}: {getattr(e, 'message', e)}") from None
            self.net: Network = self.tfl.network
        elif ref.kind == "network":
            self.net = _load_network(ref.payload, ref.name)
        else:
            self.net = pickle.loads(ref.payload)  # our own bytes, made by model_ref in this session
        missing = self.net.missing_functions()
        if missing:
            raise EvalError(f"{ref.name}: needs MLI functions pymli lacks: {', '.join(missing)}")
        self.layer_names = [la.name for la in self.net.layers]
        # class offsets rather than scores: an arg-max output layer (pymli's, or TFLite's ARG_MAX)
        self._index_output = self.net.index_output or (
            self.tfl is not None and self.tfl.info.tensors[self.tfl.q_output_index].type in ("INT32", "INT64"))

    # ------------------------------------------------------------------ static description
    def input_spec(self) -> InputSpec:
        """What one sample must look like.

        Returns:
            The model input's shape, dtype and (per-tensor) quantisation.
        """
        if self.tfl is not None:
            s, z = self.tfl.in_quant
            shape = tuple(self.tfl.input_shape[1:])
            return InputSpec(shape, np.dtype(np.int8), True, float(s), int(z))
        q = self.net.input_q
        assert q is not None
        scale = float(np.asarray(q.step()).reshape(-1)[0]) if q.el_type.is_sa and q.dim < 0 else None
        return InputSpec(tuple(self.net.input_shape), np.dtype(q.el_type.dtype), True, scale,
                         int(np.asarray(q.zero_point).reshape(-1)[0]) if q.el_type.is_sa and q.dim < 0 else 0)

    def layer_info(self) -> list[LayerInfo]:
        """Name, kind, MLI function and accumulator bits (guard + operand value bits) of every layer.

        Returns:
            One :class:`LayerInfo` per layer, in execution order.
        """
        qs = self.net.expected_qparams()
        fns = self.net.function_names()
        out = []
        for la in self.net.layers:
            w = getattr(la, "weights", None) or getattr(la, "weights_in", None)
            acc_bits = None
            if hasattr(la, "accumulator") and w is not None and getattr(w, "qp", None) is not None:
                in_el, w_el = qs[la.inputs[0]].el_type, w.qp.el_type
                acc_bits = accu_guard_bits(in_el, w_el) + in_el.bits + w_el.bits - 1  # as pymli.models.report
            out.append(LayerInfo(la.name, la.kind, fns[la.name], acc_bits))
        return out

    @property
    def index_output(self) -> bool:
        """The output holds class offsets (an arg-max layer), not scores."""
        return self._index_output

    # ------------------------------------------------------------------ running
    def run_chunk(self, x: np.ndarray, start: int, *, platform: str | None = None, against: str | None = None,
                  layers: bool = True) -> ChunkResult:
        """Run samples ``x`` (dataset rows ``start:start + len(x)``) and collect the chunk statistics.

        Args:
            x: input batch (int of the model's input dtype, or float).
            start: dataset index of ``x[0]``.
            platform: platform preset name (``vpx``, ``vpx-full-accu``, ``em``) or None (current).
            against: ``"float"``, ``"tflm"`` or None.
            layers: collect per-layer saturation and accumulator peaks (captures every intermediate).

        Returns:
            The outputs, classes and integer statistics of the chunk.
        """
        t0 = time.perf_counter()
        n_layers = len(self.layer_names)
        sat = np.zeros(n_layers, np.int64)
        tot = np.zeros(n_layers, np.int64)
        peak = np.full(n_layers, -1, np.int64)
        outs, preds, refs = [], [], []
        dmax, dsum, dcnt = -1, 0, 0
        step = SUB_BATCH if layers else max(1, x.shape[0])  # capture every intermediate of a few samples only
        for s in range(0, x.shape[0], step):
            xb = x[s:s + step]
            xq = self.tfl.prepare_input(xb) if self.tfl is not None else xb
            res = self.net.run(xq, capture=True if layers else False, platform=platform)
            outs.append(self.tfl.output_from(res) if self.tfl is not None else res.output)
            out = np.asarray(res.output).reshape(res.output.shape[0], -1)
            preds.append(out[:, 0].astype(np.int64) if self._index_output else mli_argmax(out))
            if layers:
                self._layer_stats(res, sat, tot, peak)
            if against:
                rp, d = self._against(against, xb, xq, res)
                refs.append(rp)
                if d is not None:
                    dmax = max(dmax, int(d.max(initial=0)))
                    dsum += int(d.sum())
                    dcnt += int(d.size)
        stop = start + int(x.shape[0])
        return ChunkResult(start, stop, np.concatenate(outs), np.concatenate(preds).astype(np.int64), sat, tot, peak,
                           np.concatenate(refs).astype(np.int64) if against else None, dmax, dsum, dcnt,
                           time.perf_counter() - t0)

    def _layer_stats(self, res: Any, sat: np.ndarray, tot: np.ndarray, peak: np.ndarray) -> None:
        for k, la in enumerate(self.net.layers):
            v = np.asarray(res.values[la.name], np.int64)
            qp = res.qparams[la.name]
            # the rule of pymli.models.report: a limit equal to the zero point is exact, not saturated
            zp = int(qp.zero_point) if qp.el_type.is_sa and qp.dim < 0 else 0
            hit = np.zeros(v.shape, bool)
            if qp.qmax != zp:
                hit |= v == qp.qmax
            if qp.qmin != zp:
                hit |= v == qp.qmin
            sat[k] += int(hit.sum())
            tot[k] += int(v.size)
            acc_fn = getattr(la, "accumulator", None)
            w = getattr(la, "weights", None) or getattr(la, "weights_in", None)
            if acc_fn is not None and w is not None and getattr(w, "qp", None) is not None:
                src = la.inputs[0]
                acc = acc_fn(res.values[src], res.qparams[src])
                if acc is not None and np.size(acc):
                    peak[k] = max(int(peak[k]), int(np.max(np.abs(acc))))

    def _against(self, against: str, x: np.ndarray, xq: np.ndarray, res: Any) -> tuple[np.ndarray, np.ndarray | None]:
        """(reference classes, |LSB difference| of the quantised output or None)."""
        ours = np.asarray(res.output).reshape(res.output.shape[0], -1).astype(np.int64)
        if against == "tflm":
            from ..tflite.compare import run_tflm  # optional tflite package, imported when used

            assert self.tfl is not None
            m = self.tfl
            ref = run_tflm(m, x.reshape((x.shape[0],) + tuple(m.input_shape[1:])), [m.q_output_index])
            theirs = ref[m.q_output_index].reshape(x.shape[0], -1).astype(np.int64)
            rp = theirs[:, 0] if self.index_output else mli_argmax(theirs)
            return rp, np.abs(ours - theirs)
        acts = self.net.run_float(xq, original=True)
        fo = np.asarray(acts[self.net.output_name]).reshape(ours.shape[0], -1)
        if self.index_output:
            return np.rint(fo[:, 0]).astype(np.int64), None  # offsets held as float64 integers
        rp = mli_argmax(fo)
        qp = res.qparams[self.net.output_name]
        ref_q = qp.quantize(acts[self.net.output_name], batch=True).reshape(ours.shape).astype(np.int64)
        return rp, np.abs(ours - ref_q)


# --------------------------------------------------------------------------------------------- workers
_PREPARED: dict[str, Prepared] = {}


def prepare(ref: ModelRef) -> Prepared:
    """The :class:`Prepared` model for ``ref`` in this process, built on first use (one model cached).

    Args:
        ref: the model.

    Returns:
        The prepared model.

    Raises:
        EvalError: the model cannot be loaded or needs MLI functions pymli lacks.
    """
    p = _PREPARED.get(ref.digest)
    if p is None:
        _PREPARED.clear()
        p = _PREPARED[ref.digest] = (TflmPrepared(ref, layer_info=LayerInfo, chunk_result=ChunkResult)  # type: ignore[assignment]
                                       if ref.kind == "tflite-tflm" else Prepared(ref))
    return p


def check_against(against: str | None, p: Prepared) -> None:
    """Refuse a reference run that cannot work for this model (before anything runs).

    Args:
        against: ``"float"``, ``"tflm"`` or None.
        p: the prepared model.

    Raises:
        EvalError: an unknown reference, ``tflm`` for a network, or TFLite Micro not installed.
    """
    if against is None:
        return
    if against not in AGAINST:
        raise EvalError(f"--against {against!r}: choose {' or '.join(AGAINST)}")
    if isinstance(p, TflmPrepared) and against == "float":
        raise EvalError("--against float: the tflm mapping has no float twin (use --against tflm, or --mapping mli)")
    if against == "tflm":
        from ..tflite.compare import TFLM_MISSING, tflm_available  # optional tflite package

        if p.tfl is None and not isinstance(p, TflmPrepared):
            raise EvalError("--against tflm needs a .tflite model")
        if not tflm_available():
            raise EvalError(TFLM_MISSING)


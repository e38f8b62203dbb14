"""An ordered graph of MLI layers with the quantisation of every tensor, run through pymli's kernels.

Example:
    >>> net = Network((8, 8, 1), [Conv2D(w, b, padding=1, relu="gen", name="conv"), ...])
    >>> qnet = quantize_network(net, calib_x, "sa8")      # pymli.models.quantize
    >>> res = qnet.run(x_test)                            # MLI kernels, batches of 64 samples
    >>> res["conv"]                                       # quantised intermediate, [N, 8, 8, c]
    >>> ref = qnet.run_float(x_test)                      # float64 NumPy, same description

Tensors are named after the layer producing them; ``"input"`` is the network input. A layer reads
the previous layer's output unless it names its ``inputs``.

``run`` executes the network's :class:`Plan` (``qnet.prepare()``, cached): every per-layer constant
(requantisation parameters, bounds, LUTs, geometry, functions, output parameters, which tensors can
be freed when) is derived once, and each layer runs its kernel over the whole batch; a layer without
such a step calls its capi function per sample. Every sample gets the bits it gets alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import operator
import os
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Any

import numpy as np

from .. import capi
from ..config import Platform, get_platform, platform_named, use_platform
from ..errors import MliError, Status
from ..export import Exportable
from ..graph import args
from ..graph.registry import LUT_OPS, Op, entry
from .layers import KernelMissing, Layer, Step
from .netfile import save_network
from .qparams import EDITS, QParams, counted_setattr

__all__ = ["Network", "Plan", "PlanStep", "RunResult", "UnknownLayer", "mli_argmax"]

INPUT = "input"


class UnknownLayer(MliError, KeyError):
    """A layer name a network does not have (an :class:`MliError`; a ``KeyError`` too, as ``net[name]``
    raised before)."""

    def __init__(self, name: object, known: Sequence[str]) -> None:
        super().__init__(Status.BAD_FUNC_CFG, f"no layer {name!r:.60}; the layers are {', '.join(known) or 'none'}")

    __str__ = MliError.__str__  # the message, not the quoted repr KeyError.__str__ gives


def mli_argmax(x: np.ndarray) -> np.ndarray:
    """Arg-max over the last axis with MLI's tie rule (``mli_krn_argmax``, topk 1: the last maximum wins)."""
    x = np.asarray(x)
    return x.shape[-1] - 1 - np.argmax(x[..., ::-1], axis=-1)


@dataclasses.dataclass
class RunResult:
    """Result of :meth:`Network.run`.

    Attributes:
        values: tensor name -> quantised values, batch axis first (captured tensors + the output).
        qparams: tensor name -> the element parameters the tensor had after its call (kernels may
            set them, e.g. softmax).
        output_name: name of the network output.
        platform: the platform the run used.
        index_output: the output holds element offsets (an :class:`~pymli.models.layers.Argmax` layer).
    """

    values: dict[str, np.ndarray]
    qparams: dict[str, QParams]
    output_name: str
    platform: Platform
    index_output: bool = False

    def __getitem__(self, name: str) -> np.ndarray:
        return self.values[name]

    @property
    def output(self) -> np.ndarray:
        """The network output values, batch first."""
        return self.values[self.output_name]

    def dequantized(self, name: str | None = None) -> np.ndarray:
        """Float values of a captured tensor (the output by default)."""
        name = name or self.output_name
        return self.qparams[name].dequantize(self.values[name], batch=True)

    def predictions(self) -> np.ndarray:
        """Class per sample: MLI arg-max (last maximum on ties) of the output, or the first offset an
        arg-max output layer found."""
        out = self.output
        if self.index_output:
            return out.reshape(out.shape[0], -1)[:, 0].astype(np.int64)
        return mli_argmax(out.reshape(out.shape[0], -1))


class Network(Exportable):
    """An ordered list of layers forming a DAG over named tensors.

    Args:
        input_shape: shape of one input sample (HWC for images).
        layers: the layers in execution order; unnamed layers get ``<kind><index>``.
        input_q: quantisation of the input tensor (None for a float-only network).
        name: a label for reports.
    """

    __setattr__ = counted_setattr  # a reassigned attribute invalidates the prepared plans (see _plan)

    def __init__(self, input_shape: Sequence[int], layers: Iterable[Layer] = (), input_q: QParams | None = None,
                 name: str = "network") -> None:
        self.input_shape = tuple(args.int_list(input_shape, "input_shape", what="Network", length=(1, 2, 3, 4), lo=1,
                                               hi=2**31 - 1))
        if input_q is not None and not isinstance(input_q, QParams):
            raise MliError(Status.BAD_FUNC_CFG, f"Network: input_q = {type(input_q).__name__}: a QParams or None expected")
        if not isinstance(name, str):
            raise MliError(Status.BAD_FUNC_CFG, f"Network: name = {name!r:.40}: a string expected")
        if isinstance(layers, (str, bytes, dict, Layer)) or not isinstance(layers, Iterable):
            raise MliError(Status.BAD_FUNC_CFG, f"Network: layers = {type(layers).__name__}: a list of layers expected")
        self.input_q = input_q
        self.name = name
        self.layers: list[Layer] = []
        self.input_preprocess: Callable[[np.ndarray], np.ndarray] | None = None
        for layer in layers:
            self.add(layer)

    # ---------------------------------------------------------------- building
    def add(self, layer: Layer) -> Network:
        """Append a layer (wired to the previous tensor unless it names its inputs).

        Raises:
            MliError: BAD_FUNC_CFG for a non-layer, a duplicate name, an unknown input name or a wrong
                number of inputs; SHAPE_MISMATCH (or BAD_FUNC_CFG) when the layer does not fit the
                shapes of its inputs. The network is unchanged then.
        """
        if not isinstance(layer, Layer):
            raise MliError(Status.BAD_FUNC_CFG, f"Network.add: {type(layer).__name__} is not a pymli.models layer")
        if not layer.name:
            layer.name = f"{layer.kind}{len(self.layers) + 1}"
        if any(la.name == layer.name for la in self.layers) or layer.name == INPUT:
            raise MliError(Status.BAD_FUNC_CFG, f"duplicate layer name {layer.name!r}")
        if not layer.inputs:
            layer.inputs = [self.layers[-1].name if self.layers else INPUT]
        known = {INPUT, *(la.name for la in self.layers)}
        if layer.kind != "concat" and len(layer.inputs) != layer.n_inputs:
            raise MliError(Status.BAD_FUNC_CFG, f"layer {layer.name!r} reads {len(layer.inputs)} tensors, takes "
                                                f"{layer.n_inputs}")
        for i in layer.inputs:
            if i not in known:
                raise MliError(Status.BAD_FUNC_CFG, f"layer {layer.name!r} reads unknown tensor {i!r}")
        self.layers.append(layer)
        try:
            self.shapes()
        except Exception:
            self.layers.pop()
            raise
        return self

    def __getitem__(self, name: str) -> Layer:
        for la in self.layers:
            if la.name == name:
                return la
        raise UnknownLayer(name, [la.name for la in self.layers])

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.layers)

    def __len__(self) -> int:
        return len(self.layers)

    @property
    def output_name(self) -> str:
        """Name of the output tensor: the last layer's."""
        return self.layers[-1].name

    @property
    def index_output(self) -> bool:
        """Whether the output layer returns element offsets (arg-max) rather than values."""
        return bool(self.layers) and bool(getattr(self.layers[-1], "is_index_output", False))

    def float_predictions(self, acts: dict[str, np.ndarray]) -> np.ndarray:
        """Class per sample from a :meth:`run_float` result (same rule as :meth:`RunResult.predictions`)."""
        out = acts[self.output_name]
        if self.index_output:
            return out.reshape(out.shape[0], -1)[:, 0].astype(np.int64)
        return mli_argmax(out.reshape(out.shape[0], -1))

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Shape of every tensor (one sample)."""
        shapes: dict[str, tuple[int, ...]] = {INPUT: self.input_shape}
        for la in self.layers:
            shapes[la.name] = tuple(la.out_shape([shapes[i] for i in la.inputs]))
        return shapes

    @property
    def is_quantized(self) -> bool:
        """Whether the network has input quantisation and quantised constants."""
        return self.input_q is not None and all(c.is_quantized for la in self.layers for c in la.consts().values())

    def planned_qparams(self) -> dict[str, QParams]:
        """The quantisation of every tensor as the network hands it to the kernels (before any call)."""
        if self.input_q is None:
            raise MliError(Status.BAD_FUNC_CFG, "network is not quantised")
        after = self.expected_qparams()
        return {INPUT: self.input_q, **{la.name: la.output_qparams([after[i] for i in la.inputs])
                                         for la in self.layers}}

    def expected_qparams(self) -> dict[str, QParams]:
        """The quantisation every tensor has after its call (kernel-set parameters included)."""
        if self.input_q is None:
            raise MliError(Status.BAD_FUNC_CFG, "network is not quantised")
        qs: dict[str, QParams] = {INPUT: self.input_q}
        for la in self.layers:
            qs[la.name] = la.result_qparams([qs[i] for i in la.inputs])
        return qs

    def function_names(self) -> dict[str, str]:
        """Layer name -> the MLI C function it calls."""
        qs = self.planned_qparams()
        return {la.name: la.function_name([qs[i] for i in la.inputs]) for la in self.layers}

    def functions(self, *, specialise: bool = False) -> dict[str, Callable[..., Any]]:
        """Layer name -> the capi callable it calls (chosen by :mod:`pymli.graph.registry`).

        Args:
            specialise: MLI's specialised functions where one fits a layer (same results).

        Raises:
            KernelMissing: a function is not available.
        """
        qs = self.planned_qparams()
        return {la.name: la.function([qs[i] for i in la.inputs], specialise=specialise) for la in self.layers}

    def missing_functions(self) -> list[str]:
        """MLI functions this network needs that :mod:`pymli.capi` does not provide yet (C names, or a
        description of a signature MLI has no function for)."""
        need = list(self.function_names().values())
        after = self.expected_qparams()
        for la in self.layers:
            if hasattr(la, "functions"):
                need += la.functions([after[i] for i in la.inputs])
            luts = [(getattr(la, "op", None), getattr(la, "lut", 0))]
            luts += [(Op.TANH, getattr(la, "tanh_lut", 0)), (Op.SIGM, getattr(la, "sigm_lut", 0))]
            for op, lut in luts:
                if op in LUT_OPS and lut is None:
                    need += [entry(o).c_name for o in LUT_OPS[op]]
        need = list(dict.fromkeys(need))
        return [n for n in need if n not in capi.FUNCTIONS]

    # ---------------------------------------------------------------- quantised inference
    def quantize_input(self, x: np.ndarray) -> np.ndarray:
        """Float samples -> quantised input (offline conversion with ``input_q``)."""
        if self.input_q is None:
            raise MliError(Status.BAD_FUNC_CFG, "network is not quantised")
        return self.input_q.quantize(x, batch=True)

    def _as_batch(self, x: np.ndarray) -> tuple[np.ndarray, bool]:
        x = args.array_like(x, "input", "an array of samples")
        if x.dtype.kind not in "iuf":
            raise MliError(Status.TYPE_MISMATCH, f"input of dtype {x.dtype}: integers (quantised) or floats expected")
        single = x.shape == self.input_shape
        if single:
            x = x[None]
        if x.shape[1:] != self.input_shape:
            raise MliError(Status.SHAPE_MISMATCH, f"input shape {x.shape[1:]} != network input {self.input_shape}")
        if x.shape[0] == 0:
            raise MliError(Status.SHAPE_MISMATCH, "an empty batch (expected at least one sample)")
        if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
            raise MliError(Status.BAD_TENSOR, "input holds NaN or infinite values")
        return x, single

    # ---------------------------------------------------------------- prepared execution
    def _state(self) -> tuple[Any, ...]:
        """The objects a plan depends on: the input, every layer and its public attributes, every
        constant's values and parameters (compared by identity: a reassignment invalidates a plan)."""
        st: list[Any] = [self.input_q, self.input_shape]
        for la in self.layers:
            st.append(la)
            d = vars(la)
            st += _public_values(tuple(d))(d)
            for c in la.consts().values():
                st += (c, c.q, c.qp)
        return tuple(st)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled and copied without its prepared plans (closures over this network's arrays)."""
        state = dict(self.__dict__)
        for k in ("_plan_cache", "_plan_last", "_inside_last"):
            state.pop(k, None)
        return state

    def invalidate(self) -> None:
        """Drop the prepared plans (after changing a constant's array or a QParams in place)."""
        self._plans.clear()
        self.__dict__.pop("_plan_last", None)

    @property
    def _plans(self) -> dict[tuple[Platform, bool], tuple[tuple[Any, ...], Plan]]:
        plans = self.__dict__.get("_plan_cache")
        if plans is None:
            plans = self.__dict__["_plan_cache"] = {}
        return plans

    def prepare(self, platform: Platform | str | None = None, *, specialise: bool = False) -> Plan:
        """The network prepared for execution: every per-layer constant derived once.

        The plan is cached per platform and ``specialise``, and rebuilt when a layer is added or an
        attribute of the network, a layer or a constant is reassigned (see :meth:`invalidate` for
        in-place edits). Preparing checks every layer once through :mod:`pymli.capi` on a
        deterministic sample and keeps a kernel step only where it gives the capi call's bits.

        Args:
            platform: the platform the plan is checked under; default: current. Runs read the
                rounding of the platform in force, never a baked one.
            specialise: check MLI's specialised functions where one fits a layer.

        Returns:
            The :class:`Plan`.

        Raises:
            KernelMissing: a needed MLI function is not implemented.
            MliError: a network that is not quantised (BAD_FUNC_CFG); a kernel rejecting its arguments.
        """
        if self.input_q is None:
            raise MliError(Status.BAD_FUNC_CFG, "network is not quantised: use pymli.models.quantize_network or load a pack")
        plat = platform_named(platform) if platform is not None else get_platform()
        return self._plan(plat, bool(specialise))

    def _plan(self, plat: Platform, specialise: bool) -> Plan:
        """:meth:`prepare` for a resolved platform (the cached plan while the network is unchanged)."""
        last = self.__dict__.get("_plan_last")  # the last plan: no Platform hash (a Python-level call)
        if last is not None and last[0] is plat and last[1] is specialise:
            # no public attribute of a network, layer or constant assigned since its check, and the
            # same layers: the state is the checked one
            if last[3] == EDITS[0] and len(self.layers) == len(last[4]) and all(map(operator.is_, self.layers, last[4])):
                return last[2][1]
            hit = last[2]
        else:
            hit = self._plans.get((plat, specialise))
        edits = EDITS[0]  # read before the state: an assignment from here on forces the next check
        if hit is not None:
            state = self._state()
            if len(state) == len(hit[0]) and all(map(operator.is_, state, hit[0])):
                self.__dict__["_plan_last"] = (plat, specialise, hit, edits, tuple(self.layers))
                return hit[1]
        missing = self.missing_functions()
        if missing:
            raise KernelMissing(missing[0])
        with use_platform(plat):
            plan = Plan(self, plat, specialise)
        self._plans[(plat, specialise)] = hit = (self._state(), plan)
        self.__dict__["_plan_last"] = (plat, specialise, hit, edits, tuple(self.layers))
        return plan

    def run(self, x: np.ndarray, *, capture: bool | Sequence[str] = True, platform: Platform | str | None = None,
            progress: Callable[[int], None] | None = None, specialise: bool = False,
            batch: int = 64) -> RunResult:
        """Run the quantised network through pymli's MLI kernels (the prepared :meth:`prepare` plan).

        Args:
            x: one sample or a batch; integer arrays are taken as already quantised input, float arrays
                are quantised with ``input_q`` first.
            capture: True keeps every intermediate, False only the output, or a list of tensor names.
            platform: platform (rounding, accumulator options) to run under; default: current.
            progress: called with the number of samples done after each batch (for progress bars).
            specialise: call MLI's specialised functions where one fits a layer (``_k3x3`` ...), as a
                C program may; the results are the generic functions'.
            batch: samples computed together (each sample's result is the same whatever the batch).

        Raises:
            KernelMissing: a needed MLI function is not implemented.
            MliError: a network that is not quantised (BAD_FUNC_CFG); input that is not an array of
                numbers (BAD_TENSOR / TYPE_MISMATCH), of the wrong shape or an empty batch
                (SHAPE_MISMATCH), non-finite floats or integers outside the input container
                (BAD_TENSOR); an unknown ``capture`` name (:class:`UnknownLayer`) or platform
                (:class:`pymli.config.UnknownPlatform`); a ``batch`` below 1 (BAD_FUNC_CFG); a kernel
                rejecting its arguments.
        """
        if self.input_q is None:
            raise MliError(Status.BAD_FUNC_CFG, "network is not quantised: use pymli.models.quantize_network or load a pack")
        x, _ = self._as_batch(x)
        q = self.input_q
        if x.dtype.kind == "f":
            x = self.quantize_input(x)
        elif not self._inside(x.dtype, q) and (x.min() < q.qmin or x.max() > q.qmax):
            raise MliError(Status.BAD_TENSOR, f"quantised input outside the {q.el_type.name} container "
                                              f"[{q.qmin}, {q.qmax}]")
        if capture is not True and capture is not False:
            if not (isinstance(capture, np.bool_) or (isinstance(capture, (list, tuple, set)) and all(
                    isinstance(c, str) for c in capture))):
                raise MliError(Status.BAD_FUNC_CFG, f"capture = {capture!r:.60}: True, False or a list of tensor names")
            if not isinstance(capture, np.bool_):
                unknown = set(capture) - {INPUT, *(la.name for la in self.layers)}
                if unknown:
                    raise UnknownLayer(sorted(unknown)[0], [la.name for la in self.layers])
        if progress is not None and not callable(progress):
            raise MliError(Status.BAD_FUNC_CFG, f"progress = {progress!r:.40}: a callable or None expected")
        if type(batch) is not int or not 1 <= batch <= 2**31 - 1:
            batch = args.integer(batch, "batch", what="Network.run", lo=1, hi=2**31 - 1)
        current = get_platform()
        plat = current if platform is None else platform_named(platform)
        plan = self._plan(plat, specialise is True or bool(specialise))
        keep: bool | set[str]
        if capture is True or capture is False or isinstance(capture, np.bool_):
            keep = bool(capture)  # False: the output only
        else:
            keep = {*capture, plan.output_name}
        n = x.shape[0]
        if n <= batch and progress is None and plat is current:  # the common case: one part, as it is
            values, qparams = plan.execute(x, keep)
            return RunResult(values, qparams, plan.output_name, plat, plan.index_output)
        # the platform context only when it changes the platform in force (entering it costs a few us)
        with use_platform(plat) if plat is not current else contextlib.nullcontext():
            if n <= batch:  # one part, nothing to concatenate
                values, qparams = plan.execute(x, keep)
                if progress is not None:
                    progress(n)
            else:
                parts: list[tuple[dict[str, np.ndarray], dict[str, QParams]]] = []
                for s in range(0, n, batch):
                    parts.append(plan.execute(x[s:s + batch], keep))
                    if progress is not None:
                        progress(min(batch, n - s))
                qparams = parts[-1][1]
                values = {k: np.concatenate([v[k] for v, _ in parts]) for k in parts[0][0]}
        return RunResult(values, qparams, plan.output_name, plat, plan.index_output)

    def _inside(self, dtype: np.dtype, q: QParams) -> bool:
        """Every value of the integer ``dtype`` lies in the container of ``q`` (the last answer kept)."""
        last = self.__dict__.get("_inside_last")
        if last is not None and last[0] is dtype and last[1] is q.el_type:
            return last[2]
        ok = _inside(dtype, q.qmin, q.qmax)
        self.__dict__["_inside_last"] = (dtype, q.el_type, ok)
        return ok

    def run_layer(self, name: str, inputs: Sequence[np.ndarray], in_qs: Sequence[QParams], *,
                  platform: Platform | str | None = None) -> tuple[np.ndarray, QParams]:
        """Run one layer alone on a batch of given quantised inputs (per-layer bit-exact checks).

        Args:
            name: layer name.
            inputs: one batch per layer input, quantised values.
            in_qs: the element parameters of those inputs.

        Returns:
            (output batch, output parameters after the call of the last sample).
        """
        la = self[name]
        in_qs = list(in_qs)
        oq = la.output_qparams(in_qs)
        fn = la.function(in_qs)
        shape = la.out_shape([tuple(np.asarray(i).shape[1:]) for i in inputs])
        outs = []
        with use_platform(platform if platform is not None else get_platform()):
            la.prepare()
            for n in range(np.asarray(inputs[0]).shape[0]):
                out = oq.empty(shape)
                la.invoke(fn, [q.tensor(x[n]) for q, x in zip(in_qs, inputs)], out)
                outs.append(out.numpy())
        return np.stack(outs), QParams.of(out)

    def predict(self, x: np.ndarray, **kw: Any) -> np.ndarray:
        """Class per sample of the quantised network (MLI arg-max tie rule)."""
        return self.run(x, capture=False, **kw).predictions()

    # ---------------------------------------------------------------- float inference
    def run_float(self, x: np.ndarray, *, original: bool = False, inputs: dict[str, np.ndarray] | None = None
                  ) -> dict[str, np.ndarray]:
        """Run the same description in float64.

        Args:
            x: float input batch (or one sample). For a quantised network an integer array is
                dequantised with ``input_q`` first.
            original: use the float constants the network was quantised from (when known) instead of
                the dequantised constants.
            inputs: replace the input of named layers by these float arrays (per-layer comparison).

        Returns:
            tensor name -> float64 batch, every tensor including ``"input"``.
        """
        x, _ = self._as_batch(x)
        if x.dtype.kind != "f":
            if self.input_q is None:
                raise MliError(Status.TYPE_MISMATCH, "integer input given to a float network")
            x = self.input_q.dequantize(x, batch=True)
        acts: dict[str, np.ndarray] = {INPUT: np.asarray(x, np.float64)}
        for la in self.layers:
            xs = [acts[i] for i in la.inputs]
            if inputs and la.name in inputs:
                xs = [inputs[la.name]]
            acts[la.name] = la.forward_float(xs, original)
        return acts

    def forward_layer_float(self, name: str, xs: list[np.ndarray], original: bool = False) -> np.ndarray:
        """Run layer ``name`` alone in float64 on the batches ``xs``."""
        return self[name].forward_float(xs, original)

    # ---------------------------------------------------------------- saving
    def save(self, path: str | os.PathLike[str] | IO[bytes], *, compress: bool = False) -> None:
        """Write the network to one ``.npz`` file that :func:`pymli.models.load_network` reads back.

        Args:
            path: a path (written as given) or a binary file object.
            compress: deflate the arrays.

        Raises:
            NetworkFileError: a layer that cannot be saved (see :mod:`pymli.models.io`).
        """
        save_network(self, path, compress=compress)

    # ---------------------------------------------------------------- display
    def summary(self) -> list[dict[str, Any]]:
        """One row per layer: name, kind, inputs, output shape, cfg, C function, quantisation."""
        shapes = self.shapes()
        try:
            qs = self.planned_qparams()
            fns = self.function_names()
        except ValueError:
            qs, fns = {}, {}
        rows = []
        for la in self.layers:
            rows.append({"name": la.name, "kind": la.kind, "inputs": la.inputs, "shape": shapes[la.name],
                         "cfg": la.cfg_dict(), "function": fns.get(la.name, ""),
                         "out_q": qs[la.name].describe() if la.name in qs else "",
                         "kernel_sets_output": la.kernel_sets_output})
        return rows

    def __repr__(self) -> str:
        lines = [f"Network {self.name!r}: input {self.input_shape}"
                 + (f" ({self.input_q.describe()})" if self.input_q else " (float)")]
        for r in self.summary():
            lines.append(f"  {r['name']:<10} {r['kind']:<16} -> {r['shape']!s:<14} {r['function']} {r['out_q']}")
        return "\n".join(lines)


@functools.lru_cache(maxsize=256)
def _public_values(keys: tuple[str, ...]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """A reader of the public entries (names without a leading ``_``) of an attribute dict with these
    ``keys``, in their order (one getter per key set; a plan check reads every layer's)."""
    pub = [k for k in keys if not k.startswith("_")]
    if len(pub) == 1:
        return lambda d: (d[pub[0]],)
    return operator.itemgetter(*pub) if pub else (lambda d: ())


@functools.lru_cache(maxsize=64)
def _inside(dtype: np.dtype, qmin: int, qmax: int) -> bool:
    """Every value of the integer ``dtype`` lies in ``[qmin, qmax]`` (its input needs no range check)."""
    info = np.iinfo(dtype)
    return qmin <= int(info.min) and int(info.max) <= qmax


def _validation_sample(q: QParams, shape: tuple[int, ...]) -> np.ndarray:
    """A fixed pseudo-random sample over the whole input container (zero point and both limits included)."""
    x = np.random.default_rng(20240514).integers(q.qmin, q.qmax, size=shape, endpoint=True)
    flat = x.reshape(-1)
    flat[: 3] = [q.qmin, q.qmax, int(q.zero_point) if q.el_type.is_sa and q.dim < 0 else 0][: flat.size]
    return x.astype(q.el_type.dtype)


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    """A kernel step's batch of one sample holds the capi call's values, dtype and shape."""
    return got.dtype == want.dtype and got.shape == (1, *want.shape) and bool(np.array_equal(got[0], want))


def _capi_step(la: Layer, fn: Callable[..., Any], in_qs: list[QParams], oq: QParams, shape: tuple[int, ...]
               ) -> Callable[[list[np.ndarray]], tuple[np.ndarray, dict[str, tuple[np.ndarray, QParams]]]]:
    """The layer's capi call per sample (every check each time), for layers without a kernel step."""
    def run(xs: list[np.ndarray]) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, QParams]]]:
        outs, extras, extra_q = [], {}, {}
        for n in range(xs[0].shape[0]):
            out = oq.empty(shape)
            ex = la.invoke(fn, [q.tensor(x[n]) for q, x in zip(in_qs, xs)], out)
            outs.append(out.numpy())
            for k, (v, q) in (ex or {}).items():
                extras.setdefault(k, []).append(v)
                extra_q[k] = q
        return np.stack(outs), {k: (np.stack(v), extra_q[k]) for k, v in extras.items()}
    return run


@dataclasses.dataclass
class PlanStep:
    """One layer of a :class:`Plan`.

    Attributes:
        name: the layer (and its output tensor).
        inputs: the tensors it reads.
        run: batches of the inputs -> the output batch (a kernel step), (output batch, extra results
            ``{name: batch}``) (a kernel step of a layer with extra results), or (output batch, extra
            results ``{name: (batch, QParams)}``) (the per-sample capi call).
        out_q: the output's parameters after the call.
        kernel: True for a prepared kernel step, False for the per-sample capi call.
        extras_q: the parameters of a kernel step's extra results (an LSTM's cell state).
        last_use: tensors no later step reads (freed after this one unless captured).
    """

    name: str
    inputs: tuple[str, ...]
    run: Callable[[list[np.ndarray]], Any]
    out_q: QParams
    kernel: bool
    extras_q: dict[str, QParams] = dataclasses.field(default_factory=dict)
    last_use: tuple[str, ...] = ()


class Plan:
    """A :class:`Network` prepared for execution (see :meth:`Network.prepare`).

    Every layer with a kernel step (:meth:`~pymli.models.layers.Layer.plan_step`) runs straight
    through :mod:`pymli.kernels` on the whole batch with parameters derived once; the others call
    their capi function per sample. Each step was checked against the capi call on one sample
    when the plan was built; ``mismatches`` lists the layers whose step differed (they call capi).

    Args:
        net: the quantised network.
        platform: the platform in force while the plan is built and checked.
        specialise: use MLI's specialised functions where one fits.
    """

    def __init__(self, net: Network, platform: Platform, specialise: bool) -> None:
        self.platform = platform
        self.input_q: QParams = net.input_q  # type: ignore[assignment]
        self.output_name = net.output_name
        self.index_output = net.index_output
        self.mismatches: list[str] = []
        for la in net.layers:
            la.prepare()
        fns = net.functions(specialise=specialise)
        shapes = net.shapes()
        acts: dict[str, tuple[np.ndarray, QParams]] = {INPUT: (_validation_sample(self.input_q, net.input_shape),
                                                                self.input_q)}
        self.steps: list[PlanStep] = []
        for la in net.layers:
            in_qs = [acts[i][1] for i in la.inputs]
            oq = la.output_qparams(in_qs)
            shape = tuple(shapes[la.name])
            out = oq.empty(shape)
            extras = la.invoke(fns[la.name], [q.tensor(acts[i][0]) for q, i in zip(in_qs, la.inputs)], out)
            want = out.numpy()
            acts[la.name] = (want, QParams.of(out))
            extras = extras or {}
            in_shapes = [tuple(shapes[i]) for i in la.inputs]
            kstep = la.plan_step(fns[la.name], in_qs, in_shapes, oq, shape)
            if kstep is not None:
                got = kstep([acts[i][0][None] for i in la.inputs])
                got_y, got_ex = got if isinstance(got, tuple) else (got, {})
                if not (_same(got_y, want) and set(got_ex) == set(extras)
                        and all(_same(got_ex[k], v) for k, (v, _) in extras.items())):
                    self.mismatches.append(la.name)
                    kstep = None
            run = kstep if kstep is not None else _capi_step(la, fns[la.name], in_qs, oq, shape)
            self.steps.append(PlanStep(la.name, tuple(la.inputs), run, acts[la.name][1], kstep is not None,
                                       {k: q for k, (_, q) in extras.items()} if kstep is not None else {}))
        readers: dict[str, int] = {}
        for k, st in enumerate(self.steps):
            for i in st.inputs:
                readers[i] = k
        for k, st in enumerate(self.steps):
            st.last_use = tuple(i for i in dict.fromkeys(st.inputs) if readers[i] == k)
        # A chain of kernel steps, each reading only the previous one's output: run as a flat list
        # of the step callables when only the output is kept (see execute).
        prev = INPUT
        chain = []
        for st in self.steps:
            if not st.kernel or st.extras_q or st.inputs != (prev,):
                break
            chain.append(st.run)
            prev = st.name
        self._chain = tuple(chain) if len(chain) == len(self.steps) and chain else None
        self._in_dtype = self.input_q.el_type.dtype
        self._out_q = self.steps[-1].out_q if self.steps else self.input_q

    @property
    def kernel_layers(self) -> list[str]:
        """The layers running as prepared kernel steps."""
        return [st.name for st in self.steps if st.kernel]

    def execute(self, x: np.ndarray, keep: bool | set[str] = False) -> tuple[dict[str, np.ndarray], dict[str, QParams]]:
        """Run a batch of quantised input (checked by the caller) under the platform in force.

        Args:
            x: ``[N, *input_shape]`` integers inside the input container.
            keep: True keeps every tensor (and every extra result), else the names to keep; the
                output is always kept.

        Returns:
            (tensor name -> batch, tensor name -> parameters after the call), for the kept tensors.
        """
        chain = self._chain
        if chain is not None and keep is not True and (not keep or keep == {self.output_name}):
            y = x.astype(self._in_dtype, copy=False)
            for run in chain:
                y = run([y])
            return {self.output_name: y}, {INPUT: self.input_q, self.output_name: self._out_q}
        keep_all = keep is True
        kept: set[str] = set() if isinstance(keep, bool) else set(keep)
        acts: dict[str, np.ndarray] = {INPUT: x.astype(self.input_q.el_type.dtype, copy=False)}
        values: dict[str, np.ndarray] = {INPUT: np.array(x)} if keep_all or INPUT in kept else {}
        qparams: dict[str, QParams] = {INPUT: self.input_q}
        for st in self.steps:
            res = st.run([acts[i] for i in st.inputs])
            if st.kernel and not st.extras_q:
                y = res
            else:
                y, extras = res
                for k, v in extras.items():
                    key = f"{st.name}.{k}"
                    if keep_all or key in kept:
                        values[key], qparams[key] = (v, st.extras_q[k]) if st.kernel else v
            acts[st.name] = y
            if keep_all or st.name in kept or st.name == self.output_name:
                values[st.name], qparams[st.name] = y, st.out_q
            for i in st.last_use:
                del acts[i]
        return values, qparams

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The output batch for a batch of quantised input ``[N, *input_shape]`` (no argument checks;
        the rounding of the platform in force)."""
        return self.execute(x)[0][self.output_name]

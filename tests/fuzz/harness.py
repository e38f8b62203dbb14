"""Calls of every public ``pymli.capi`` function with fuzzed arguments, and the properties they must keep.

A *baseline* is one valid call per function: the smallest valid golden recording of that function
(``$PYMLI_SHARED/golden``), or a small hand-made call where no recording exists (concat, padding2d).
Its arguments are classified by kind (input tensor, output tensor, tensor list, cfg, output cfg, LUT,
output LUT, scalar, array, DMA handle); the kinds come from the recording and agree with the
function's signature (checked in ``test_capi_fuzz.py``).

:func:`run` makes a call and records its outcome: the status (``OK`` or the ``MliError`` status), any
other exception (a finding), every base buffer's bytes and every output struct's fields afterwards.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import json
import signal
from pathlib import Path
from typing import Any

import numpy as np

from pymli import ElType, Lut, MliError, Status, Tensor, capi, use_platform
from pymli.testing.golden import Case, case_arguments, load_case
from pymli.testing.paths import golden_dirs

from .strategies import Placed, place

__all__ = ["Arg", "Call", "Outcome", "baselines", "run", "outcome_problems", "TENSOR_KINDS"]

TENSOR_KINDS = ("tensor", "out_tensor")


@dataclasses.dataclass
class Arg:
    kind: str
    name: str
    obj: Any


@dataclasses.dataclass
class Call:
    """One call: function name, arguments, the platform to run it under, and the buffers we placed."""

    fn: str
    args: list[Arg]
    platform: Any
    placed: list[tuple[str, Placed]] = dataclasses.field(default_factory=list)

    def tensors(self, out: bool | None = None) -> list[tuple[str, Tensor]]:
        """Tensors (and tensor-list members) as ``(label, tensor)``; ``out`` filters by direction."""
        res = []
        for a in self.args:
            if a.kind in TENSOR_KINDS and isinstance(a.obj, Tensor):
                if out is None or (a.kind == "out_tensor") == out:
                    res.append((a.name, a.obj))
            elif a.kind == "tensor_list" and isinstance(a.obj, list) and out is not True:
                res += [(f"{a.name}[{i}]", t) for i, t in enumerate(a.obj) if isinstance(t, Tensor)]
        return res

    def clone(self) -> "Call":
        """A deep copy (own buffers; views keep their strides relative to their own base)."""
        return copy.deepcopy(self)


def _deepcopy_placed(self: Placed, memo: dict) -> Placed:
    # Copy the base once and rebuild the view at the same offset and strides inside the copy.
    base = self.base
    new_base = memo.get(id(base))
    if new_base is None:
        new_base = base.copy()
        memo[id(base)] = new_base
    d = self.data
    off = d.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    nd = np.ndarray(d.shape, d.dtype, buffer=new_base, offset=off, strides=d.strides)
    if not d.flags.writeable:
        nd.flags.writeable = False
    memo[id(d)] = nd
    return Placed(nd, new_base, self.kind)


Placed.__deepcopy__ = _deepcopy_placed  # type: ignore[attr-defined]


def _tensor_deepcopy(call: Call, memo: dict) -> Call:
    # Placed views first so that tensors' data map to the copied views.
    placed = [(k, copy.deepcopy(p, memo)) for k, p in call.placed]
    args = copy.deepcopy(call.args, memo)
    return Call(call.fn, args, call.platform, placed)


Call.__deepcopy__ = _tensor_deepcopy  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------------- baselines
def _guard(call: Call) -> Call:
    """Move every tensor's (and LUT's) data into a dense slice of a sentinel-filled base buffer."""
    for label, t in call.tensors():
        if isinstance(t.data, np.ndarray):
            p = place(t.data)
            t.data = p.data
            call.placed.append((label, p))
    for a in call.args:
        if a.kind in ("lut", "out_lut") and isinstance(a.obj, Lut) and isinstance(a.obj.data, np.ndarray):
            p = place(a.obj.data)
            a.obj.data = p.data
            call.placed.append((a.name, p))
    return call


def _from_case(case: Case) -> Call:
    triples, _ = case_arguments(case)
    # arrays as Python lists of ints (the fuzz mutations replace their items)
    args = [Arg(kind, name, [int(v) for v in np.asarray(obj).reshape(-1)] if kind == "array" else obj)
            for kind, name, obj in triples]
    return _guard(Call(case.function, args, case.platform()))


def _hand_made() -> dict[str, Call]:
    """Valid calls for the functions without a golden recording (concat, padding2d)."""
    calls = {}
    for suf, el in (("fx8", ElType.FX_8), ("fx16", ElType.FX_16), ("sa8", ElType.SA_8)):
        q = dict(frac_bits=3) if el.is_fx else dict(zero_point=1, scale=3, scale_frac_bits=4)
        a = Tensor.from_numpy(np.arange(6).reshape(2, 3), el, **q)
        b = Tensor.from_numpy(np.arange(6, 12).reshape(2, 3), el, **q)
        out = Tensor.zeros((4, 3), el, **q)
        calls[f"mli_krn_concat_{suf}"] = Call(f"mli_krn_concat_{suf}", [
            Arg("tensor_list", "inputs", [a, b]), Arg("cfg", "cfg", capi.ConcatCfg(tensors_num=2, axis=0)),
            Arg("out_tensor", "out", out)], None)
        for layout, shp, oshp in (("hwc", (2, 2, 1), (4, 5, 1)), ("chw", (1, 2, 2), (1, 4, 5))):
            x = Tensor.from_numpy(np.arange(4).reshape(shp), el, **q)
            o = Tensor.zeros(oshp, el, **q)
            cfg = capi.Padding2dCfg(padding_left=1, padding_right=2, padding_top=1, padding_bottom=1)
            calls[f"mli_krn_padding2d_{layout}_{suf}"] = Call(f"mli_krn_padding2d_{layout}_{suf}", [
                Arg("tensor", "in", x), Arg("cfg", "cfg", cfg), Arg("out_tensor", "out", o)], None)
    return {k: _guard(v) for k, v in calls.items()}


@functools.lru_cache(maxsize=1)
def baselines() -> dict[str, Call]:
    """One valid call per capi function (smallest valid golden case; hand-made where none is recorded).

    Returns:
        ``{C name: Call}`` (empty when the shared recordings are absent). Callers clone before use.
    """
    best: dict[str, Path] = {}
    for d in golden_dirs():
        for fdir in sorted(Path(d).glob("*/")):
            if fdir.name in best or fdir.name not in capi.FUNCTIONS:
                continue
            # the smallest file that records a valid call (only the meta entry is read)
            for f in sorted(fdir.glob("*.npz"), key=lambda p: (p.stat().st_size, p.name)):
                with np.load(f, allow_pickle=False) as z:
                    m = json.loads(str(z["meta"]))
                if m.get("valid_case", True) and m["status"] in (None, "MLI_STATUS_OK"):
                    best[fdir.name] = f
                    break
    out = {fn: _from_case(load_case(p)) for fn, p in best.items()}
    if out:
        for fn, c in _hand_made().items():
            out.setdefault(fn, c)
    return out


# ---------------------------------------------------------------------------------------------------- running
@dataclasses.dataclass
class Outcome:
    status: Status | None  # None: an exception other than MliError escaped
    exc: str = ""
    ret: Any = None
    buffers: dict[int, bytes] = dataclasses.field(default_factory=dict)  # per placed index
    structs: dict[str, Any] = dataclasses.field(default_factory=dict)


def _fields(obj: Any) -> Any:
    """A comparable snapshot of a struct's fields (arrays as bytes; data by identity and shape)."""
    if obj is None or isinstance(obj, (int, float, str, bool)):
        return obj
    if isinstance(obj, np.ndarray):
        return ("nd", obj.dtype.str, obj.shape, obj.tobytes())
    if isinstance(obj, (list, tuple)):
        return tuple(_fields(v) for v in obj)
    if dataclasses.is_dataclass(obj):
        res = []
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if f.name == "data" and isinstance(v, np.ndarray):
                v = ("data", v.__array_interface__["data"][0], v.shape, v.strides, v.dtype.str)
            res.append((f.name, _fields(v)))
        return tuple(res)
    try:
        return repr(obj)
    except Exception:  # noqa: BLE001 - a mutated field may not even repr
        return "<unrepr>"


CALL_TIMEOUT = 5.0
"""Seconds a single fuzzed call may take (the baselines take milliseconds); longer is a finding (a hang)."""


class CallTimeout(BaseException):
    """Raised inside a call that ran longer than :data:`CALL_TIMEOUT`."""


def _alarm(signum: int, frame: Any) -> None:
    raise CallTimeout(f"call took more than {CALL_TIMEOUT} s")


def run(call: Call) -> Outcome:
    """Call ``call.fn(*args)`` under its platform; capture status, escaping exception, memory and structs."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CALL_TIMEOUT)
    try:
        return _run(call)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _run(call: Call) -> Outcome:
    fn = capi.FUNCTIONS[call.fn]
    reset = getattr(fn, "mli_reset_state", None)
    if reset is not None:
        reset()
    status: Status | None = Status.OK
    exc = ""
    ret = None
    try:
        if call.platform is not None:
            with use_platform(call.platform):
                ret = fn(*[a.obj for a in call.args])
        else:
            ret = fn(*[a.obj for a in call.args])
        if isinstance(ret, Status):
            status = ret
    except MliError as e:
        status = e.status
    except BaseException as e:  # noqa: BLE001 - every other exception is what the fuzz looks for
        if isinstance(e, KeyboardInterrupt):
            raise
        status = None
        exc = f"{type(e).__name__}: {str(e)[:200]}"
    bufs = {i: p.base.tobytes() for i, (_, p) in enumerate(call.placed)}
    structs = {a.name: _fields(a.obj) for a in call.args if a.kind in ("out_tensor", "out_cfg", "out_lut", "handle")}
    try:
        r = ret.tolist() if hasattr(ret, "tolist") else ret
        hash(r) if not isinstance(r, list) else None
    except Exception:  # noqa: BLE001
        r = repr(ret)
    return Outcome(status, exc, r, bufs, structs)


def _out_mask(p: Placed, t: Tensor | None) -> np.ndarray:
    """Bytes of ``p.base`` an output may change: its view through the final shape / mem_stride, or all
    of ``data`` when the struct no longer describes a view."""
    allowed = np.zeros(p.base.shape[0], bool)
    try:
        d = p.data
        base_addr = p.base.__array_interface__["data"][0]
        if t is not None and t.data is d and isinstance(t.rank, int) and 1 <= t.rank <= 4 and d.ndim == 1:
            shape = [int(s) for s in t.shape[: t.rank]]
            ms = t.strides()
            if all(s > 0 for s in shape) and all(m >= 0 for m in ms):
                offs = np.zeros(shape, np.int64)
                for ax, m in enumerate(ms):
                    sh = [1] * len(shape)
                    sh[ax] = shape[ax]
                    offs = offs + np.arange(shape[ax], dtype=np.int64).reshape(sh) * m
                offs = offs.reshape(-1)
                offs = offs[offs < d.shape[0]]
                start = d.__array_interface__["data"][0] - base_addr
                for b in range(d.itemsize):
                    allowed[start + offs * d.strides[0] + b] = True
                return allowed
    except Exception:  # noqa: BLE001 - fall back to the whole view
        pass
    return p.view_mask()


def outcome_problems(call: Call, before: dict[int, bytes], before_structs: dict[str, Any], o: Outcome) -> list[str]:
    """The properties of one call: only MliError; nothing written on error; nothing outside the outputs'
    views written on success; inputs never written."""
    probs = []
    if o.status is None:
        probs.append(f"non-MliError escaped: {o.exc}")
    out_labels = {label: t for label, t in call.tensors(out=True)}
    out_luts = {a.name for a in call.args if a.kind == "out_lut"}
    for i, (label, p) in enumerate(call.placed):
        old, new = np.frombuffer(before[i], np.uint8), np.frombuffer(o.buffers[i], np.uint8)
        changed = old != new
        if not changed.any():
            continue
        is_out = label in out_labels or label in out_luts
        if o.status is not Status.OK:
            probs.append(f"{label}: {int(changed.sum())} bytes written by a failing call")
        elif not is_out:
            probs.append(f"{label}: input buffer written ({int(changed.sum())} bytes)")
        else:
            allowed = _out_mask(p, out_labels.get(label))
            bad = changed & ~allowed
            if bad.any():
                probs.append(f"{label}: {int(bad.sum())} bytes outside the output view written")
    if o.status is not Status.OK:
        for k, v in before_structs.items():
            if o.structs.get(k) != v:
                probs.append(f"{k}: struct fields changed by a failing call")
    return probs


def signature_kinds(fn_name: str) -> list[str]:
    """Parameter names of a capi function (for the baseline/signature agreement test)."""
    return list(inspect.signature(capi.FUNCTIONS[fn_name]).parameters)

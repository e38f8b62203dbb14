"""Record the MLI calls a pymli network makes and turn them into a program over named buffers.

The network runs twice through :mod:`pymli.capi` (two different inputs) while every registered C
function is temporarily wrapped by a recorder. Each recorded tensor argument is then resolved:

* its memory lies inside the output of an earlier call (or the network input): an *activation* view;
* its values are the same in both runs: a *constant* (weights, biases, zero initial states);
* its values are a contiguous copy of an earlier output, or the concatenation of whole earlier
  outputs, at the same place in both runs: pymli's NumPy glue (a reshape, a per-step slice), which
  the program expresses as a view or as ``mli_mov_tensor_sync`` copies;
* anything else was computed outside MLI, and the export is refused naming the layer.

MLI 1.x calls pymli keeps are translated (``mli_krn_concat_*`` becomes ``mli_mov`` copies with
``mli_mov_cfg_for_concat``) or refused. Every arithmetic step of the resulting program is an MLI call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .. import capi
from ..config import Platform, get_platform, use_platform
from ..errors import MliError, Status
from ..formats import ElType
from ..tensor import Lut, Tensor, dense_strides

__all__ = ["ExportError", "TensorArg", "StructArg", "IntArg", "LutArg", "Region", "Const", "Call", "Program", "trace_program"]


class ExportError(MliError):
    """The model cannot be written as a plain MLI 2.0 C program (the message names the operator)."""

    def __init__(self, message: str) -> None:
        super().__init__(Status.NOT_SUPPORTED, message)


# Functions that only set up structs or query the build: not part of the program.
_SKIP = re.compile(r"^(mli_hlp_(?!convert_tensor$).*|mli_krn_\w+_(get_lut_size|create_lut)|mli_mov_cfg_\w+"
                   r"|mli_mov_(acquire_handle|release_handle|set_num_dma_ch|registercallback))$")
_WRITTEN = {"out", "dst", "cell"}
_INOUT = {"cell"}
_MOV = "mli_mov_tensor_sync"
_RAW_TYPE = {1: ElType.FX_8, 2: ElType.FX_16, 4: ElType.SA_32}


# ====================================================================== program description
@dataclasses.dataclass(frozen=True)
class TensorArg:
    """One ``mli_tensor`` struct of the program.

    Attributes:
        storage: ``"const"`` (``ref`` is a :class:`Const` id), ``"act"`` (``ref`` is a :class:`Region`
            id, ``offset`` in bytes), ``"scalar"`` (rank 0, ``value`` in the struct) or ``"null"``.
        zero_point, scale, scale_frac_bits: ints, or :class:`Const` ids (``("const", id)``) when per-axis.
    """

    storage: str
    ref: int
    offset: int
    el_type: ElType
    shape: tuple[int, ...]
    mem_stride: tuple[int, ...]
    rank: int
    capacity: int
    frac_bits: int = 0
    zero_point: Any = 0
    scale: Any = 1
    scale_frac_bits: Any = 0
    dim: int = -1
    value: int = 0


@dataclasses.dataclass(frozen=True)
class StructArg:
    """A cfg struct: C type name and its fields (C names; nested dicts; enumerators as strings).

    ``scratch`` is the region id of an ``mli_rnn_cell_cfg`` scratch buffer (or -1).
    """

    c_type: str
    fields: dict[str, Any]
    scratch: int = -1


@dataclasses.dataclass(frozen=True)
class IntArg:
    """A plain integer argument (e.g. the ``epsilon`` of ``mli_krn_l2_normalize_*``)."""

    value: int


@dataclasses.dataclass(frozen=True)
class LutArg:
    """An ``mli_lut`` whose table is :class:`Const` ``data``."""

    data: int
    capacity: int
    type: ElType
    length: int
    in_frac_bits: int
    out_frac_bits: int
    input_offset: int
    output_offset: int


@dataclasses.dataclass
class Region:
    """An activation buffer value: written once (by a call, or the caller for the input).

    Attributes:
        kind: ``"arena"``, ``"input"`` (the caller's input) or ``"output"`` (the caller's output).
        first, last: index of the first and last call touching it (its lifetime).
        labels: what it holds (untrusted names: for comments only).
    """

    id: int
    nbytes: int
    kind: str = "arena"
    first: int = 0
    last: int = 0
    labels: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Const:
    """A constant array (weights, biases, quantisation vectors, LUT tables, initial states)."""

    id: int
    values: np.ndarray
    label: str


@dataclasses.dataclass(frozen=True)
class Call:
    """One MLI call: C function name, arguments in C order, the layer it belongs to (untrusted label)."""

    name: str
    args: tuple[Any, ...]
    layer: str


@dataclasses.dataclass
class Program:
    """The resolved program: calls in order over constants and activation regions."""

    calls: list[Call]
    regions: list[Region]
    consts: list[Const]
    input_region: int
    output_region: int
    input_dtype: np.dtype
    output_dtype: np.dtype
    input_shape: tuple[int, ...]
    output_shape: tuple[int, ...]
    platform: Platform
    name: str = "model"

    @property
    def input_size(self) -> int:
        """Elements of one input sample."""
        return int(np.prod(self.input_shape))

    @property
    def output_size(self) -> int:
        """Elements of one output sample."""
        return int(np.prod(self.output_shape))

    @property
    def const_bytes(self) -> int:
        """Bytes of all constant arrays."""
        return sum(c.values.nbytes for c in self.consts)


# ====================================================================== recording
@dataclasses.dataclass
class _Snap:
    """A tensor argument as it was at the call: struct fields, the memory it reads and its values."""

    t: Tensor
    fields: dict[str, Any]
    addr: int
    ext: int
    raw: bytes
    dense: bytes


@dataclasses.dataclass
class _RawCall:
    name: str
    params: tuple[str, ...]
    args: list[Any]
    post: dict[int, bytes]
    layer: str


def _fields(t: Tensor) -> dict[str, Any]:
    r = int(t.rank)

    def q(v: Any) -> Any:
        return tuple(int(x) for x in np.asarray(v).reshape(-1)) if t.el_type.is_sa and t.dim >= 0 else int(v)

    f = {"el_type": t.el_type, "shape": tuple(int(s) for s in t.shape[:r]),
         "mem_stride": tuple(int(s) for s in t.mem_stride[:r]), "rank": r, "capacity": int(t.capacity),
         "frac_bits": int(t.frac_bits), "dim": int(t.dim) if t.el_type.is_sa else -1}
    if t.el_type.is_sa:
        f.update(zero_point=q(t.zero_point), scale=q(t.scale), scale_frac_bits=q(t.scale_frac_bits))
    if r == 0:
        f["value"] = int(np.asarray(t.value).item())
    return f


def _snap(t: Tensor) -> _Snap:
    if not isinstance(t, Tensor):
        raise ExportError(f"unexpected tensor argument {type(t).__name__}")
    if t.el_type.dtype.kind == "f":
        raise ExportError("float tensors cannot be exported (MLI 2.0 kernels are integer)")
    f = _fields(t)
    if t.rank == 0 or t.data is None:
        return _Snap(t, f, 0, 0, b"", b"")
    size = t.el_type.size
    ext = t._span() * size if all(s > 0 for s in f["shape"]) else 0
    addr = int(t.data.__array_interface__["data"][0])
    raw = t.data.view(np.uint8)[:ext].tobytes()
    return _Snap(t, f, addr, ext, raw, np.ascontiguousarray(t.numpy()).tobytes())


def _snap_arg(a: Any) -> Any:
    if isinstance(a, Tensor):
        return _snap(a)
    if isinstance(a, (list, tuple)) and a and all(isinstance(x, Tensor) for x in a):
        return [_snap(x) for x in a]
    if isinstance(a, Lut):
        return dataclasses.replace(a, data=None if a.data is None else np.array(a.data))
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        for c_name, cls in capi.STRUCTS.items():
            if type(a) is cls:
                return _Struct(c_name, a.to_dict())
        raise ExportError(f"no C struct for {type(a).__name__}")
    return a


@dataclasses.dataclass
class _Struct:
    c_type: str
    fields: dict[str, Any]


@contextlib.contextmanager
def _recording(calls: list[_RawCall], layer: list[str]) -> Iterator[None]:
    """Wrap every :data:`pymli.capi.FUNCTIONS` entry (and its module attribute) with a recorder."""
    saved = dict(capi.FUNCTIONS)
    depth = [0]

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        params = tuple(inspect.signature(fn).parameters)

        def rec(*args: Any) -> Any:
            if depth[0] or _SKIP.match(name):
                depth[0] += 1
                try:
                    return fn(*args)
                finally:
                    depth[0] -= 1
            entry = _RawCall(name, params, [_snap_arg(a) for a in args], {}, layer[0])
            depth[0] += 1
            try:
                res = fn(*args)
            finally:
                depth[0] -= 1
            for i, (p, a) in enumerate(zip(params, args)):
                if p in _WRITTEN and isinstance(a, Tensor):
                    entry.post[i] = a.data.view(np.uint8).tobytes() if a.data is not None else b""
                    entry.args[i].fields.update(_post_fields(a))
            calls.append(entry)
            return res

        rec.__wrapped__ = fn  # type: ignore[attr-defined]
        return rec

    try:
        for name, fn in saved.items():
            w = wrap(name, fn)
            capi.FUNCTIONS[name] = w
            if getattr(capi, name, None) is fn:
                setattr(capi, name, w)
        yield
    finally:
        for name, fn in saved.items():
            capi.FUNCTIONS[name] = fn
            if name in capi.__dict__:
                setattr(capi, name, fn)


def _post_fields(t: Tensor) -> dict[str, Any]:
    return {"post_" + k: v for k, v in _fields(t).items()}


def _record(net: Any, x: np.ndarray, platform: Platform) -> tuple[list[_RawCall], np.ndarray, np.ndarray]:
    """Run ``net`` (a :class:`pymli.models.Network`) on one quantised sample, recording its calls."""
    calls: list[_RawCall] = []
    layer = [""]
    patched = []
    for la in net.layers:
        orig = la.invoke

        def inv(fn: Any, ins: Any, out: Any, _o: Any = orig, _n: str = la.name) -> Any:
            layer[0] = _n
            return _o(fn, ins, out)

        la.invoke = inv
        patched.append(la)
    sample = np.ascontiguousarray(x)
    try:
        with _recording(calls, layer):
            res = net.run(sample[None], capture=False, platform=platform)
    finally:
        for la in patched:
            del la.invoke
    return calls, sample, np.ascontiguousarray(res.output[0])


# ====================================================================== resolution
class _Side:
    """The regions of one recorded run: memory ranges and their contents at production.

    An entry maps a NumPy buffer to ``(region, byte offset)``: several buffers may show one region
    (a copy pymli makes that the program keeps as a view).
    """

    def __init__(self) -> None:
        self.entries: list[tuple[int, int, int, bytes]] = []  # (region, offset, address, content)
        self.snap: dict[int, bytes] = {}
        self.keep: list[Any] = []

    def add(self, rid: int, addr: int, content: bytes, keep: Any, offset: int = 0) -> None:
        self.entries.append((rid, offset, addr, content))
        if offset == 0 and rid not in self.snap:
            self.snap[rid] = content
        self.keep.append(keep)

    def locate(self, s: _Snap) -> tuple[int, int] | None:
        for rid, off, a, snap in reversed(self.entries):
            if a >= 0 and a <= s.addr and s.addr + s.ext <= a + len(snap) and snap[s.addr - a:s.addr - a + s.ext] == s.raw:
                return rid, off + s.addr - a
        return None

    def overlaps(self, addr: int, n: int) -> bool:
        return any(a >= 0 and a < addr + n and addr < a + len(snap) for _, _, a, snap in self.entries)

    def find(self, data: bytes, align: int) -> Iterator[tuple[int, int]]:
        """Every (region, offset) whose bytes equal ``data``, most recent region first (lazily)."""
        for rid in reversed(list(self.snap)):
            buf = self.snap[rid]
            i = buf.find(data)
            while i >= 0:
                if i % align == 0:
                    yield rid, i
                i = buf.find(data, i + 1)

    def holds(self, hit: tuple[int, int], data: bytes) -> bool:
        """Whether region ``hit[0]`` holds ``data`` at offset ``hit[1]``."""
        snap = self.snap.get(hit[0])
        return snap is not None and snap[hit[1]:hit[1] + len(data)] == data


class _Resolver:
    def __init__(self, a: list[_RawCall], b: list[_RawCall], platform: Platform) -> None:
        self.a, self.b = a, b
        self.platform = platform
        self.sa, self.sb = _Side(), _Side()
        self.regions: list[Region] = []
        self.consts: list[Const] = []
        self._const_ix: dict[tuple[str, bytes], int] = {}
        self.calls: list[Call] = []

    # ---------------------------------------------------------------- helpers
    def region(self, nbytes: int, label: str, kind: str = "arena") -> Region:
        r = Region(len(self.regions), int(nbytes), kind, len(self.calls), len(self.calls), [label])
        self.regions.append(r)
        return r

    def touch(self, rid: int) -> None:
        r = self.regions[rid]
        r.last = max(r.last, len(self.calls))

    def const(self, values: np.ndarray, label: str) -> int:
        values = np.ascontiguousarray(values).reshape(-1)
        key = (values.dtype.str, values.tobytes())
        if key not in self._const_ix:
            self._const_ix[key] = len(self.consts)
            self.consts.append(Const(len(self.consts), values.copy(), label))
        return self._const_ix[key]

    def tensor_arg(self, f: dict[str, Any], storage: str, ref: int, offset: int = 0, label: str = "") -> TensorArg:
        kw: dict[str, Any] = {}
        if f["el_type"].is_sa:
            for k, dt in (("zero_point", np.int16), ("scale", np.int16), ("scale_frac_bits", np.int8)):
                v = f[k]
                kw[k] = ("const", self.const(np.asarray(v, dt), f"{label} {k}")) if isinstance(v, tuple) else int(v)
        return TensorArg(storage, ref, offset, f["el_type"], f["shape"], f["mem_stride"], f["rank"], f["capacity"],
                         frac_bits=f["frac_bits"], dim=f["dim"], value=f.get("value", 0), **kw)

    def raw_arg(self, rid: int, offset: int, nbytes: int, size: int) -> TensorArg:
        """A 1-D byte-copy view (container-sized elements) of a region, for ``mli_mov`` copies."""
        n = nbytes // size
        return TensorArg("act", rid, offset, _RAW_TYPE[size], (n,), (1,), 1, nbytes)

    def emit(self, name: str, args: tuple[Any, ...], layer: str) -> None:
        for a in args:
            for t in (a if isinstance(a, list) else [a]):
                if isinstance(t, TensorArg) and t.storage == "act":
                    self.touch(t.ref)
                if isinstance(t, StructArg) and t.scratch >= 0:
                    self.touch(t.scratch)
        self.calls.append(Call(name, args, layer))

    def mov(self, src: TensorArg, dst: TensorArg, layer: str) -> None:
        cfg = capi.move.MovCfg()
        self.emit(_MOV, (src, StructArg("mli_mov_cfg_t", cfg.to_dict()), dst), layer)

    # ---------------------------------------------------------------- reads
    def read(self, sa: _Snap, sb: _Snap, what: str, layer: str) -> TensorArg:
        f = sa.fields
        if f["rank"] == 0:
            if sa.fields != sb.fields:
                raise ExportError(f"layer {layer!r}: {what} is a scalar computed outside MLI")
            return self.tensor_arg(f, "scalar", 0, label=what)
        if sa.t.data is None:
            return self.tensor_arg(f, "null", 0, label=what)
        what = f"{layer} {what}"
        la, lb = self.sa.locate(sa), self.sb.locate(sb)
        if la is not None and la == lb:
            return self.tensor_arg(f, "act", la[0], la[1], what)
        if sa.dense == sb.dense and sa.fields == sb.fields:
            # the same values in both runs: a constant, unless they are a whole earlier output that was
            # itself the same in both runs (a layer whose output does not depend on these inputs)
            for rid in reversed(list(self.sa.snap)):
                if (self.sa.snap[rid] == sa.dense and self.sb.snap.get(rid) == sb.dense
                        and self.regions[rid].kind != "input"):
                    return self.tensor_arg(dict(f, mem_stride=tuple(dense_strides(f["shape"])),
                                                capacity=len(sa.dense)), "act", rid, 0, what)
            ref = self.const(np.frombuffer(sa.dense, f["el_type"].dtype), what)
            return self.tensor_arg(dict(f, mem_stride=tuple(dense_strides(f["shape"])),
                                        capacity=len(sa.dense)), "const", ref, label=what)
        size = f["el_type"].size
        dense = dict(f, mem_stride=tuple(dense_strides(f["shape"])), capacity=len(sa.dense))
        for hit in self.sa.find(sa.dense, size):
            if self.sb.holds(hit, sb.dense):
                return self.tensor_arg(dense, "act", hit[0], hit[1], what)
        pieces = self._gather(sa.dense, sb.dense)
        if pieces is None:
            raise ExportError(f"layer {layer!r}: {what} is computed outside MLI (it is neither a constant nor a "
                              "copy of earlier MLI results)")
        g = self.region(len(sa.dense), f"{layer} {what} (gathered)")
        self.sa.add(g.id, -1, sa.dense, None)
        self.sb.add(g.id, -1, sb.dense, None)
        pos = 0
        for rid in pieces:
            n = self.regions[rid].nbytes
            self.mov(self.raw_arg(rid, 0, n, size), self.raw_arg(g.id, pos, n, size), layer)
            pos += n
        return self.tensor_arg(dense, "act", g.id, 0, what)

    def _gather(self, da: bytes, db: bytes) -> list[int] | None:
        """Split the values into whole earlier regions (in order), identically in both runs."""
        pos, out = 0, []
        while pos < len(da):
            for rid in reversed(list(self.sa.snap)):
                sa, sb = self.sa.snap[rid], self.sb.snap[rid]
                n = len(sa)
                if n and da[pos:pos + n] == sa and db[pos:pos + n] == sb:
                    out.append(rid)
                    pos += n
                    break
            else:
                return None
        return out

    # ---------------------------------------------------------------- writes
    def write(self, sa: _Snap, sb: _Snap, post_a: bytes, post_b: bytes, what: str, layer: str) -> TensorArg:
        f = sa.fields
        if sa.t.data is None:
            raise ExportError(f"layer {layer!r}: {what} has no data buffer")
        for side, s in ((self.sa, sa), (self.sb, sb)):
            if side.overlaps(s.addr, len(post_a)):
                raise ExportError(f"layer {layer!r}: {what} writes into an earlier result (in place)")
        r = self.region(len(post_a), f"{layer} {what}")
        return self.tensor_arg(f, "act", r.id, 0, what), r  # type: ignore[return-value]

    # ---------------------------------------------------------------- calls
    def run(self) -> None:
        if [c.name for c in self.a] != [c.name for c in self.b]:
            raise ExportError("the network makes different MLI calls for different inputs")
        for ca, cb in zip(self.a, self.b):
            fn = capi.FUNCTIONS[ca.name]
            if getattr(fn, "__module__", "").endswith(".legacy"):
                if ca.name.startswith("mli_krn_concat_"):
                    self.concat(ca, cb)
                    continue
                if ca.name.startswith("mli_krn_padding2d_hwc_"):
                    self.padding(ca, cb)
                    continue
                raise ExportError(f"layer {ca.layer!r}: {ca.name} is an MLI 1.x kernel that MLI 2.0 does not have, "
                                  "and pymli cannot express it with MLI 2.0 calls")
            self.call(ca, cb)

    def _arg_label(self, c: _RawCall, i: int) -> str:
        return re.sub(r"[^a-z0-9]", "", c.params[i].lower()) or f"arg{i}"

    def alias(self, ca: _RawCall, cb: _RawCall) -> bool:
        """A plain dense ``mli_mov`` copy (pymli's reshape) becomes a view of its source: no call."""
        if ca.name != _MOV or not isinstance(ca.args[1], _Struct):
            return False
        if ca.args[1].fields != capi.move.MovCfg().to_dict() or ca.args[1] != cb.args[1]:
            return False
        src_a, src_b, dst_a, dst_b = ca.args[0], cb.args[0], ca.args[2], cb.args[2]
        if not isinstance(src_a, _Snap) or src_a.t.data is None or dst_a.t.data is None:
            return False
        la, lb = self.sa.locate(src_a), self.sb.locate(src_b)
        if la is None or la != lb:  # pymli reshapes by copying: find the copied values
            size = src_a.t.el_type.size
            la = next((h for h in self.sa.find(src_a.dense, size) if self.sb.holds(h, src_b.dense)), None)
            if la is None:
                return False
        elif src_a.raw != src_a.dense:
            return False
        n = len(src_a.dense)
        if ca.post[2][:n] != src_a.dense:
            return False
        if cb.post[2][:n] != src_b.dense or len(ca.post[2]) != n:
            return False
        for side in (self.sa, self.sb):
            if side.overlaps(dst_a.addr if side is self.sa else dst_b.addr, n):
                return False
        self.sa.add(la[0], dst_a.addr, ca.post[2], dst_a.t.data, la[1])
        self.sb.add(la[0], dst_b.addr, cb.post[2], dst_b.t.data, la[1])
        self.regions[la[0]].labels.append(f"{ca.layer} (view)")
        self.touch(la[0])
        return True

    def call(self, ca: _RawCall, cb: _RawCall) -> None:
        if self.alias(ca, cb):
            return
        args: list[Any] = []
        written: list[tuple[int, Region]] = []
        for i, (xa, xb) in enumerate(zip(ca.args, cb.args)):
            p = ca.params[i] if i < len(ca.params) else ""
            what = self._arg_label(ca, i)
            if isinstance(xa, _Snap):
                if p in _WRITTEN:
                    targ, reg = self.write(xa, xb, ca.post[i], cb.post[i], what, ca.layer)
                    if p in _INOUT:  # read too: initialise the new buffer from what the call reads
                        src = self.read(xa, xb, what, ca.layer)
                        self.mov(src, targ, ca.layer)
                    written.append((i, reg))
                    args.append(targ)
                else:
                    args.append(self.read(xa, xb, what, ca.layer))
            elif isinstance(xa, list) and xa and isinstance(xa[0], _Snap):
                args.append([self.read(sa, sb, f"{what}{k}", ca.layer) for k, (sa, sb) in enumerate(zip(xa, xb))])
            elif isinstance(xa, Lut):
                if xa.data is None:
                    raise ExportError(f"layer {ca.layer!r}: LUT without a table")
                cid = self.const(xa.data, f"{ca.layer} lut")
                args.append(LutArg(cid, int(xa.capacity), xa.type, int(xa.length), int(xa.in_frac_bits),
                                   int(xa.out_frac_bits), int(xa.input_offset), int(xa.output_offset)))
            elif isinstance(xa, _Struct):
                if xa != cb.args[i]:
                    raise ExportError(f"layer {ca.layer!r}: the cfg of {ca.name} depends on the input")
                ctype = xa.c_type
                scratch = -1
                fields = dict(xa.fields)
                if "scratch_capacity" in fields:
                    cap = int(fields.pop("scratch_capacity"))
                    scratch = self.region(cap, f"{ca.layer} scratch").id if cap else -1
                args.append(StructArg(ctype, fields, scratch))
            elif xa is None and cb.args[i] is None:
                args.append(IntArg(0))  # a NULL pointer (e.g. no epsilon tensor)
            elif isinstance(xa, (int, np.integer)) and not isinstance(xa, bool):
                if xa != cb.args[i]:
                    raise ExportError(f"layer {ca.layer!r}: argument {what} of {ca.name} depends on the input")
                args.append(IntArg(int(xa)))
            else:
                raise ExportError(f"layer {ca.layer!r}: cannot export argument {what} of {ca.name}")
        self.emit(ca.name, tuple(args), ca.layer)
        for i, reg in written:
            self.sa.add(reg.id, ca.args[i].addr, ca.post[i], ca.args[i].t.data)
            self.sb.add(reg.id, cb.args[i].addr, cb.post[i], cb.args[i].t.data)

    def concat(self, ca: _RawCall, cb: _RawCall) -> None:
        """``mli_krn_concat_*`` (MLI 1.x) as one ``mli_mov_tensor_sync`` per input (``mli_mov_cfg_for_concat``)."""
        ins_a, cfg, out_a = ca.args
        ins_b, _, out_b = cb.args
        axis = int(cfg.fields["axis"])
        targ, reg = self.write(out_a, out_b, ca.post[2], cb.post[2], "out", ca.layer)
        shape = list(out_a.fields["post_shape"])
        rank = len(shape)
        if axis < 0 or axis >= rank:
            raise ExportError(f"layer {ca.layer!r}: concatenation axis {axis} out of range")
        # check the translation with pymli's own mli_mov before committing to it
        check = Tensor.from_numpy(np.zeros(shape, out_a.t.el_type.dtype), _RAW_TYPE[out_a.t.el_type.size])
        dst_f = dict(out_a.fields, shape=tuple(shape), mem_stride=tuple(dense_strides(shape)), rank=rank)
        pos = 0
        for k, (sa, sb) in enumerate(zip(ins_a, ins_b)):
            src = self.read(sa, sb, f"in{k}", ca.layer)
            cfg_k = capi.move.MovCfg()
            offs = [0] * rank
            offs[axis] = pos
            capi.FUNCTIONS["mli_mov_cfg_for_concat"](cfg_k, offs, dense_strides(shape))
            piece = Tensor.from_numpy(np.frombuffer(sa.dense, sa.t.el_type.dtype).reshape(sa.fields["shape"]),
                                      _RAW_TYPE[sa.t.el_type.size])
            capi.FUNCTIONS[_MOV](piece, cfg_k, check)
            check.shape, check.rank = list(shape), rank
            check.mem_stride = dense_strides(shape)
            dst = dataclasses.replace(self.tensor_arg(dst_f, "act", reg.id, 0, "out"), capacity=len(ca.post[2]))
            self.emit(_MOV, (src, StructArg("mli_mov_cfg_t", cfg_k.to_dict()), dst), ca.layer)
            pos += int(sa.fields["shape"][axis])
        if check.data.view(np.uint8).tobytes() != ca.post[2]:
            raise ExportError(f"layer {ca.layer!r}: concatenation could not be expressed with mli_mov")
        self.sa.add(reg.id, out_a.addr, ca.post[2], out_a.t.data)
        self.sb.add(reg.id, out_b.addr, cb.post[2], out_b.t.data)
        del targ

    def padding(self, ca: _RawCall, cb: _RawCall) -> None:
        """``mli_krn_padding2d_hwc_*`` (MLI 1.x) as ``mli_mov`` copies.

        Zero padding is one ``mli_mov_cfg_for_padding2d_hwc`` copy. A non-zero pad value (the SA8 zero
        point) first fills the output from a constant of pad values, then copies the input inside it.
        """
        in_a, cfg, out_a = ca.args
        in_b, _, out_b = cb.args
        if not isinstance(in_a, _Snap) or in_a.fields["rank"] != 3:
            raise ExportError(f"layer {ca.layer!r}: {ca.name} needs a rank-3 input")
        top, bot = int(cfg.fields["padding_top"]), int(cfg.fields["padding_bottom"])
        left, right = int(cfg.fields["padding_left"]), int(cfg.fields["padding_right"])
        f = in_a.fields
        h, w, c = f["shape"]
        shape = [h + top + bot, w + left + right, c]
        el, size = f["el_type"], f["el_type"].size
        if el.is_sa:
            zp = np.asarray(f["zero_point"], np.int64).reshape(-1)
            if f["dim"] >= 0 and f["dim"] != 2:
                raise ExportError(f"layer {ca.layer!r}: per-axis padding along H or W cannot be expressed")
            fill = np.broadcast_to(zp if f["dim"] >= 0 else zp[:1], shape).astype(el.dtype)
        else:
            fill = np.zeros(shape, el.dtype)
        post = ca.post[2]
        nbytes = int(np.prod(shape)) * size
        targ, reg = self.write(out_a, out_b, post, cb.post[2], "out", ca.layer)
        src = self.read(in_a, in_b, "in", ca.layer)
        raw = _RAW_TYPE[size]
        sim = Tensor.from_numpy(np.full(len(post) // size, 0x55, el.dtype), raw)
        sim.shape, sim.rank, sim.mem_stride = list(shape), 3, dense_strides(shape)
        piece = Tensor.from_numpy(np.frombuffer(in_a.dense, el.dtype).reshape(h, w, c), raw)
        dst = self.tensor_arg(dict(out_a.fields, shape=tuple(shape), mem_stride=tuple(dense_strides(shape)), rank=3),
                              "act", reg.id, 0, "out")
        dst = dataclasses.replace(dst, capacity=len(post))
        mov_cfg = capi.move.MovCfg()
        if not fill.any():
            capi.FUNCTIONS["mli_mov_cfg_for_padding2d_hwc"](mov_cfg, left, right, top, bot, dense_strides(shape))
        else:
            const = self.const(fill, f"{ca.layer} pad values")
            fill_arg = TensorArg("const", const, 0, raw, (nbytes // size,), (1,), 1, nbytes)
            self.mov(fill_arg, self.raw_arg(reg.id, 0, nbytes, size), ca.layer)
            sim.data[:fill.size] = fill.reshape(-1)
            offs = [top, left, 0]
            capi.FUNCTIONS["mli_mov_cfg_for_concat"](mov_cfg, offs, dense_strides(shape))
        capi.FUNCTIONS[_MOV](piece, mov_cfg, sim)
        if sim.data.view(np.uint8).tobytes()[:nbytes] != post[:nbytes]:
            raise ExportError(f"layer {ca.layer!r}: padding could not be expressed with mli_mov")
        self.emit(_MOV, (src, StructArg("mli_mov_cfg_t", mov_cfg.to_dict()), dst), ca.layer)
        self.sa.add(reg.id, out_a.addr, post, out_a.t.data)
        self.sb.add(reg.id, out_b.addr, cb.post[2], out_b.t.data)
        del targ

    def finish_output(self, ya: np.ndarray, yb: np.ndarray) -> int:
        da, db = ya.tobytes(), yb.tobytes()
        size = ya.dtype.itemsize
        for rid in reversed(list(self.sa.snap)):
            if self.sa.snap[rid] == da and self.sb.snap[rid] == db and self.regions[rid].kind == "arena":
                self.regions[rid].kind = "output"
                return rid
        out = self.region(len(da), "output", "output")
        for hit in self.sa.find(da, size):
            if self.sb.holds(hit, db):
                self.mov(self.raw_arg(hit[0], hit[1], len(da), size), self.raw_arg(out.id, 0, len(da), size), "output")
                return out.id
        pieces = self._gather(da, db)
        if pieces is None:
            raise ExportError("the network output is computed outside MLI")
        pos = 0
        for rid in pieces:
            n = self.regions[rid].nbytes
            self.mov(self.raw_arg(rid, 0, n, size), self.raw_arg(out.id, pos, n, size), "output")
            pos += n
        return out.id


def trace_program(net: Any, samples: Sequence[np.ndarray], platform: Platform | None = None,
                  name: str = "model") -> Program:
    """Record ``net`` on two samples and resolve its calls into a :class:`Program`.

    Args:
        net: a quantised :class:`pymli.models.Network`.
        samples: at least two quantised input samples (network input shape and dtype) that differ.
        platform: platform of the run (default: current).
        name: a label.

    Returns:
        The program; its calls reproduce pymli's output for any input.

    Raises:
        ExportError: a layer cannot be expressed with MLI 2.0 calls (the message names it).
    """
    if len(samples) < 2:
        raise ValueError("trace_program needs two different samples")
    p = platform or get_platform()
    xa, xb = np.asarray(samples[0]), np.asarray(samples[1])
    if np.array_equal(xa, xb):
        raise ValueError("trace_program needs two different samples")
    with use_platform(p):
        ca, ina, ya = _record(net, xa, p)
        cb, inb, yb = _record(net, xb, p)
    res = _Resolver(ca, cb, p)
    inp = res.region(ina.nbytes, "input", "input")
    res.sa.add(inp.id, int(ina.__array_interface__["data"][0]), ina.tobytes(), ina)
    res.sb.add(inp.id, int(inb.__array_interface__["data"][0]), inb.tobytes(), inb)
    res.run()
    out_id = res.finish_output(ya, yb)
    res.regions[inp.id].last = max(res.regions[inp.id].last, 0)
    return Program(res.calls, res.regions, res.consts, inp.id, out_id, ina.dtype, ya.dtype, tuple(ina.shape),
                   tuple(ya.shape), p, name)

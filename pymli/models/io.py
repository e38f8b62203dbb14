"""Saved networks: one ``.npz`` file holding a :class:`~pymli.models.Network` and everything it runs with.

The file is a NumPy ``.npz`` archive (a zip of ``.npy`` arrays), read with ``allow_pickle=False``:

* ``graph``: a JSON document (a 0-d unicode array) with ``format`` (``"pymli.network"``),
  ``version``, the network's ``name``, ``input_shape`` and ``input_q``, and one record per layer in
  execution order: ``kind``, ``name``, ``inputs``, ``out_q``, ``fn`` and the constructor
  parameters of its kind (``params``);
* one array per constant tensor and LUT table, named ``L<index>.<parameter>.<part>``
  (``L000.weights.q``, ``L000.weights.float``, ``L003.lut.data``, ...), which ``params`` refers to.

Quantisation parameters are stored in :meth:`QParams.to_dict` form (element type by C name), LUTs
with every ``mli_lut`` field. A loaded network runs bit for bit as the saved one: the layers are
rebuilt through their constructors and :meth:`Network.add`, so a file is checked as a network
built by hand would be. Every problem with a file (not an ``.npz``, no ``graph``, another format or
a newer version, a missing key or array, a value a layer refuses) raises :class:`NetworkFileError`
naming the file and the place.

The layers of :mod:`pymli.models.layers` and :mod:`pymli.models.recurrent` can be saved. A network
built by the TFLite importer holds layers of its own (save the ``.tflite`` file instead), and a
``Network.input_preprocess`` callable is not saved (nothing in pymli sets or reads it).

Example:
    >>> qnet.save("digits_sa8.npz")
    >>> net = load_network("digits_sa8.npz")
    >>> assert np.array_equal(net.run(x).output, qnet.run(x).output)
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..errors import MliError, Status
from ..formats import ElType
from ..graph.registry import KernelMissing, Op, new_lut
from ..tensor import Lut
from . import layers as L
from . import recurrent as R
from .network import Network
from .qparams import Const, QParams

__all__ = ["FORMAT", "VERSION", "NetworkFileError", "is_network_file", "load_network", "save_network",
           "network_to_bytes"]

#: the ``format`` field of a saved network
FORMAT = "pymli.network"
#: the newest format version this module writes and reads
VERSION = 1
#: the archive member holding the JSON description
GRAPH_KEY = "graph"
#: fixed time stamp of every archive member, so that saving one network twice gives the same bytes
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)

#: layer class -> its kind in the file and the constructor parameters saved, as (parameter, attribute)
#: pairs; every layer also saves name, inputs, out_q and fn (the :class:`~pymli.models.layers.Layer` ones)
_W = ("weights", "weights")
_B = ("bias", "bias")
_RNN = (("w_in", "weights_in"), ("w_out", "weights_out"), _B, ("results", "results"))
_LUTS = (("tanh_lut", "tanh_lut"), ("sigm_lut", "sigm_lut"))


def _same(*names: str) -> tuple[tuple[str, str], ...]:
    return tuple((n, n) for n in names)


_CONV = (_W, _B, *_same("stride", "padding", "dilation", "relu"))
_KINDS: dict[type[L.Layer], tuple[tuple[str, str], ...]] = {
    L.Conv2D: _CONV,
    L.DepthwiseConv2D: _CONV,
    L.GroupConv2D: _CONV,
    L.TransposeConv2D: (_W, _B, *_same("stride", "padding", "relu")),
    L.FullyConnected: (_W, _B, *_same("relu", "per_step")),
    L.MaxPool: _same("kernel", "stride", "padding"),
    L.AvgPool: _same("kernel", "stride", "padding"),
    L.Eltwise: _same("op", "const"),
    L.ReLU: _same("type"),
    L.LeakyReLU: _same("slope"),
    L.PReLU: _same("slope", "axis"),
    L.Softmax: _same("axis", "lut"),
    L.Sigmoid: _same("lut"),
    L.Tanh: _same("lut"),
    L.L2Normalize: _same("axis", "lut"),
    L.Argmax: _same("axis", "topk"),
    L.Permute: _same("perm"),
    L.Concat: _same("axis"),
    L.Pad2D: _same("padding"),
    R.LSTM: (*_RNN, *_same("act", "direction", "cell_q"), *_LUTS),
    R.GRU: (*_RNN, ("direction", "direction"), *_LUTS),
    R.UnrolledLSTM: (*_RNN, ("qs", "qs"), *_LUTS),
}
#: kind in the file -> layer class
_CLASSES: dict[str, type[L.Layer]] = {cls.kind: cls for cls in _KINDS}
_LUT_FIELDS = ("capacity", "length", "in_frac_bits", "out_frac_bits", "input_offset", "output_offset")


class NetworkFileError(MliError):
    """A network that cannot be saved, or a file that is not a saved network pymli can read.

    Args:
        message: one sentence naming the file (or layer) and the problem.
    """

    def __init__(self, message: str) -> None:
        super().__init__(Status.ARGUMENT_ERROR, message)

    def __reduce__(self) -> tuple[type, tuple[str]]:  # crosses process boundaries (workers) intact
        return (NetworkFileError, (self.message,))


# ============================================================================================ saving
class _Encoder:
    """Turns layer parameters into JSON values, collecting the arrays they hold."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, key: str, a: np.ndarray) -> str:
        a = np.asarray(a)
        if a.dtype.kind not in "biuf":
            raise NetworkFileError(f"{key}: arrays of dtype {a.dtype} cannot be saved (numbers only)")
        self.arrays[key] = a
        return key

    def value(self, v: Any, key: str) -> Any:
        """JSON form of ``v``; arrays go to :attr:`arrays` under names starting with ``key``."""
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, (int, np.integer)) and not isinstance(v, np.bool_):
            return int(v)
        if isinstance(v, np.bool_):
            return bool(v)
        if isinstance(v, (float, np.floating)):
            return float(v)
        if isinstance(v, QParams):
            return {"$qparams": v.to_dict()}
        if isinstance(v, Const):
            return {"$const": {
                "q": None if v.q is None else self.array(f"{key}.q", np.asarray(v.q)),
                "qp": None if v.qp is None else v.qp.to_dict(),
                "float": None if v.float_value is None else self.array(f"{key}.float", np.asarray(v.float_value))}}
        if isinstance(v, Lut):
            return {"$lut": {"data": None if v.data is None else self.array(f"{key}.data", np.asarray(v.data)),
                             "type": ElType(v.type).c_name, **{f: int(getattr(v, f)) for f in _LUT_FIELDS}}}
        if isinstance(v, np.ndarray):
            return {"$array": self.array(key, v)}
        if isinstance(v, tuple):
            return {"$tuple": [self.value(x, f"{key}.{i}") for i, x in enumerate(v)]}
        if isinstance(v, list):
            return [self.value(x, f"{key}.{i}") for i, x in enumerate(v)]
        if isinstance(v, dict) and all(isinstance(k, str) for k in v):
            return {"$dict": {k: self.value(x, f"{key}.{k}") for k, x in v.items()}}
        raise NetworkFileError(f"{key}: a {type(v).__name__} cannot be saved")


#: LUT parameter -> the operation whose ``mli_krn_*_create_lut`` table a layer makes when it has none
_LUT_OPS = {"tanh_lut": Op.TANH, "sigm_lut": Op.SIGM}


def _is_default_lut(lut: Any, op: Op) -> bool:
    """Whether ``lut`` is the table :meth:`Layer.prepare` would create for ``op`` (not worth saving)."""
    if not isinstance(lut, Lut) or lut.data is None:
        return False
    try:
        ref = new_lut(op)
    except KernelMissing:
        return False
    assert ref.data is not None
    return (all(getattr(lut, f) == getattr(ref, f) for f in ("type", *_LUT_FIELDS))
            and lut.data.dtype == ref.data.dtype and np.array_equal(lut.data, ref.data))


def _param(la: L.Layer, param: str, attr: str) -> Any:
    """The value of constructor parameter ``param``; a LUT the layer made itself is saved as None."""
    v = getattr(la, attr)
    op = _LUT_OPS.get(param, getattr(la, "op", None) if param == "lut" else None)
    return None if isinstance(op, Op) and _is_default_lut(v, op) else v


def _layer_record(i: int, la: L.Layer, enc: _Encoder) -> dict[str, Any]:
    params = _KINDS.get(type(la))
    if params is None:
        where = f"{type(la).__module__}.{type(la).__qualname__}"
        hint = " (save the .tflite file instead)" if where.startswith("pymli.tflite") else ""
        raise NetworkFileError(f"layer {la.name!r}: a {where} layer cannot be saved{hint}; saved networks hold "
                               f"the layers of pymli.models ({', '.join(sorted(_CLASSES))})")
    key = f"L{i:03d}"
    return {"kind": la.kind, "name": la.name, "inputs": list(la.inputs),
            "out_q": enc.value(la.out_q, f"{key}.out_q"), "fn": la.fn,
            "params": {p: enc.value(_param(la, p, attr), f"{key}.{p}") for p, attr in params}}


def _write_npz(f: IO[bytes], members: dict[str, np.ndarray], compress: bool) -> None:
    """An ``.npz`` archive of ``members`` with fixed time stamps (the same network gives the same bytes)."""
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(f, "w", compression=method, allowZip64=True) as zf:
        for name, arr in members.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_TIME)
            info.compress_type = method
            info.external_attr = 0o644 << 16
            with zf.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(arr), allow_pickle=False)


def _describe(net: Network) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    enc = _Encoder()
    graph = {"format": FORMAT, "version": VERSION, "name": net.name, "input_shape": list(net.input_shape),
             "input_q": None if net.input_q is None else net.input_q.to_dict(),
             "layers": [_layer_record(i, la, enc) for i, la in enumerate(net.layers)]}
    return graph, enc.arrays


def save_network(net: Network, file: str | os.PathLike[str] | IO[bytes], *, compress: bool = False) -> None:
    """Write ``net`` as one ``.npz`` file (see the module documentation for the layout).

    Args:
        net: the network, quantised or float only.
        file: a path (written as given: no suffix is added) or a binary file object.
        compress: deflate the arrays (smaller files, slower to write and read).

    Raises:
        NetworkFileError: a layer of a kind that cannot be saved (e.g. the TFLite importer's), or a
            value that is not numbers, strings, quantisation parameters, constants or LUTs. Nothing
            is written then.
    """
    if not isinstance(net, Network):
        raise NetworkFileError(f"cannot save a {type(net).__name__}: expected a pymli.models.Network")
    graph, arrays = _describe(net)
    members = {GRAPH_KEY: np.array(json.dumps(graph)), **arrays}
    if isinstance(file, (str, os.PathLike)):
        buf = io.BytesIO()
        _write_npz(buf, members, compress)
        Path(file).write_bytes(buf.getvalue())
    else:
        _write_npz(file, members, compress)


def network_to_bytes(net: Network) -> bytes:
    """The bytes :func:`save_network` writes for ``net`` (the same for the same network).

    Args:
        net: the network.

    Returns:
        The ``.npz`` file contents.

    Raises:
        NetworkFileError: as :func:`save_network`.
    """
    buf = io.BytesIO()
    save_network(net, buf)
    return buf.getvalue()


# ============================================================================================ loading
class _Decoder:
    """Turns the JSON values of a file back into layer parameters, reading the arrays they name."""

    def __init__(self, npz: Any, where: str) -> None:
        self.npz = npz
        self.where = where
        self.keys = set(npz.files)

    def fail(self, why: str) -> NetworkFileError:
        return NetworkFileError(f"{self.where}: {why}")

    def array(self, key: Any, kinds: str = "biuf") -> np.ndarray:
        if not isinstance(key, str) or key not in self.keys:
            raise self.fail(f"array {key!r} is missing")
        try:
            a = self.npz[key]
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
            raise self.fail(f"array {key!r} is unreadable ({e})") from None
        if a.dtype.kind not in kinds:
            raise self.fail(f"array {key!r} has dtype {a.dtype}")
        return a

    def qparams(self, d: Any) -> QParams:
        if not isinstance(d, dict) or not isinstance(d.get("el_type"), str):
            raise self.fail(f"bad quantisation parameters {d!r}")
        try:
            ElType.from_c_name(d["el_type"])
        except KeyError:
            raise self.fail(f"unknown element type {d['el_type']!r}") from None
        try:
            qp = QParams.from_dict(d)
        except KeyError as e:
            raise self.fail(f"quantisation parameters {d!r} lack {e}") from None
        except (TypeError, ValueError) as e:
            raise self.fail(f"bad quantisation parameters {d!r} ({e})") from None
        if not (qp.el_type.is_sa or qp.el_type.is_fx) or not qp.el_type.supported:
            raise self.fail(f"element type {qp.el_type.c_name} is not a quantised MLI type")
        return qp

    def const(self, d: Any) -> Const:
        if not isinstance(d, dict) or not {"q", "qp", "float"} <= d.keys():
            raise self.fail(f"bad constant {d!r}")
        fv = None if d["float"] is None else self.array(d["float"], "f")
        if d["q"] is None:
            if fv is None:
                raise self.fail("a constant has neither quantised nor float values")
            return Const.from_float(fv)
        q, qp = self.array(d["q"], "iu"), self.qparams(d["qp"])
        if q.dtype != qp.el_type.dtype:
            raise self.fail(f"array {d['q']!r} has dtype {q.dtype}, its type {qp.el_type.c_name} wants "
                            f"{qp.el_type.dtype}")
        return Const.quantized(q, qp, fv)

    def lut(self, d: Any) -> Lut:
        if not isinstance(d, dict) or not {"data", "type", *_LUT_FIELDS} <= d.keys():
            raise self.fail(f"bad LUT {d!r}")
        try:
            el = ElType.from_c_name(d["type"])
            fields = {f: int(d[f]) for f in _LUT_FIELDS}
        except (KeyError, TypeError, ValueError) as e:
            raise self.fail(f"bad LUT {d!r} ({e})") from None
        data = None if d["data"] is None else self.array(d["data"], "iu").copy()
        return Lut(data=data, type=el, **fields)

    def value(self, v: Any) -> Any:
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if not isinstance(v, dict):
            return v
        if len(v) != 1:
            raise self.fail(f"unknown value {v!r}")
        (tag, body), = v.items()
        handlers: dict[str, Callable[[Any], Any]] = {
            "$qparams": self.qparams, "$const": self.const, "$lut": self.lut, "$array": self.array,
            "$tuple": lambda b: tuple(self.value(x) for x in self._list(b)),
            "$dict": lambda b: {str(k): self.value(x) for k, x in self._dict(b).items()}}
        if tag not in handlers:
            raise self.fail(f"unknown value tag {tag!r}")
        return handlers[tag](body)

    def _list(self, b: Any) -> list[Any]:
        if not isinstance(b, list):
            raise self.fail(f"a list was expected, not {b!r}")
        return b

    def _dict(self, b: Any) -> dict[str, Any]:
        if not isinstance(b, dict):
            raise self.fail(f"a mapping was expected, not {b!r}")
        return b


def _field(d: dict[str, Any], key: str, types: tuple[type, ...], where: str) -> Any:
    """``d[key]``, checked to be of one of ``types`` (a bool is no int here)."""
    if key not in d:
        raise NetworkFileError(f"{where}: key {key!r} is missing")
    v = d[key]
    if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
        raise NetworkFileError(f"{where}: {key!r} is {v!r}")
    return v


def _layer(i: int, rec: Any, npz: Any, src: str) -> L.Layer:
    where = f"{src}: layer {i}"
    if not isinstance(rec, dict):
        raise NetworkFileError(f"{where}: not a layer record")
    kind = _field(rec, "kind", (str,), where)
    name = _field(rec, "name", (str,), where)
    where = f"{src}: layer {i} ({name!r})"
    cls = _CLASSES.get(kind)
    if cls is None:
        raise NetworkFileError(f"{where}: unknown layer kind {kind!r}")
    dec = _Decoder(npz, where)
    inputs = _field(rec, "inputs", (list,), where)
    if not all(isinstance(s, str) for s in inputs):
        raise NetworkFileError(f"{where}: 'inputs' is {inputs!r}")
    fn = _field(rec, "fn", (str, type(None)), where)
    out_q = dec.value(_field(rec, "out_q", (dict, type(None)), where))
    if out_q is not None and not isinstance(out_q, QParams):
        raise NetworkFileError(f"{where}: 'out_q' is not quantisation parameters")
    params = _field(rec, "params", (dict,), where)
    want = [p for p, _ in _KINDS[cls]]
    missing = [p for p in want if p not in params]
    if missing or len(params) != len(want):
        extra = sorted(set(params) - set(want))
        raise NetworkFileError(f"{where}: {kind} parameters " + (f"{missing} are missing" if missing else
                                                                 f"{extra} are unknown"))
    kw = {p: dec.value(params[p]) for p in want}
    try:
        return cls(**kw, name=name, inputs=inputs, out_q=out_q, fn=fn)  # type: ignore[call-arg]
    except (TypeError, ValueError, KeyError, IndexError) as e:
        raise NetworkFileError(f"{where}: the {kind} layer refuses its parameters ({e})") from None


def _open(file: str | os.PathLike[str] | bytes | IO[bytes]) -> tuple[Any, str]:
    src = str(file) if isinstance(file, (str, os.PathLike)) else "saved network"
    if isinstance(file, (bytes, bytearray, memoryview)):
        file = io.BytesIO(bytes(file))
    try:
        npz = np.load(file, allow_pickle=False)
    except FileNotFoundError:
        raise NetworkFileError(f"{src}: no such file") from None
    except IsADirectoryError:
        raise NetworkFileError(f"{src}: is a folder, not a saved network") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise NetworkFileError(f"{src}: not a saved pymli network (not an .npz archive: {e})") from None
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise NetworkFileError(f"{src}: not a saved pymli network (a single .npy array, not an .npz archive)")
    return npz, src


def is_network_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a file that looks like a saved network (a zip archive, as every ``.npz`` is).

    Only the first bytes are read: :func:`load_network` still checks the contents.

    Args:
        path: a file path.

    Returns:
        True for a readable file starting with the zip signature.
    """
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PK\x03\x04"
    except OSError:
        return False


def load_network(file: str | os.PathLike[str] | bytes | IO[bytes]) -> Network:
    """Read a network written by :func:`save_network` (or :meth:`Network.save`).

    Args:
        file: a path, the file's bytes, or a binary file object.

    Returns:
        The network, with the same layers, constants (quantised and float values), quantisation
        parameters, LUTs and C function names as the saved one: it runs bit for bit the same.

    Raises:
        NetworkFileError: the file is missing, not an ``.npz``, has no graph description, another
            format or a newer version, lacks a key or an array, or holds values a layer refuses.
    """
    npz, src = _open(file)
    with npz:
        if GRAPH_KEY not in npz.files:
            raise NetworkFileError(f"{src}: no {GRAPH_KEY!r} description (not a saved pymli network)")
        try:
            graph = json.loads(str(npz[GRAPH_KEY]))
        except (ValueError, OSError, zipfile.BadZipFile) as e:
            raise NetworkFileError(f"{src}: unreadable graph description ({e})") from None
        if not isinstance(graph, dict) or graph.get("format") != FORMAT:
            raise NetworkFileError(f"{src}: not a saved pymli network (format "
                                   f"{graph.get('format') if isinstance(graph, dict) else None!r})")
        version = graph.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise NetworkFileError(f"{src}: bad format version {version!r}")
        if version > VERSION:
            raise NetworkFileError(f"{src}: format version {version} is newer than this pymli reads "
                                   f"(up to {VERSION}); update pymli")
        shape = _field(graph, "input_shape", (list,), src)
        if not shape or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape):
            raise NetworkFileError(f"{src}: bad input_shape {shape!r}")
        name = _field(graph, "name", (str,), src)
        in_q = _field(graph, "input_q", (dict, type(None)), src)
        in_q = None if in_q is None else _Decoder(npz, f"{src}: input_q").qparams(in_q)
        records = _field(graph, "layers", (list,), src)
        net = Network(shape, input_q=in_q, name=name)
        for i, rec in enumerate(records):
            la = _layer(i, rec, npz, src)
            try:
                net.add(la)
            except (TypeError, ValueError, KeyError, IndexError) as e:
                raise NetworkFileError(f"{src}: layer {i} ({la.name!r}) does not fit the network ({e})") from None
    return net

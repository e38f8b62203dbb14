"""Saved networks: one ``.npz`` file holding a :class:`~pymli.models.Network` and everything it runs with.

The file is a NumPy ``.npz`` archive (a zip of ``.npy`` arrays), read with ``allow_pickle=False``:

* ``graph``: a JSON document (a 0-d unicode array) with ``format`` (``"pymli.network"``),
  ``version``, the network's ``name``, ``input_shape`` and ``input_q``, and one record per layer in
  execution order: ``kind``, ``name``, ``inputs``, ``out_q``, ``fn`` and the constructor
  parameters of its kind (``params``);
* one array per constant tensor and LUT table, named ``L<index>.<parameter>.<part>``
  (``L000.weights.q``, ``L000.weights.float``, ``L003.lut.data``, ...), which ``params`` refers to.

Quantisation parameters are stored in :meth:`QParams.to_dict` form (element type by C name), LUTs
with every ``mli_lut`` field (a LUT equal to the table ``mli_krn_*_create_lut`` makes is saved as
None and made again on the first run). The writer half is :mod:`pymli.models.netfile`. A loaded network runs bit for bit as the saved one: the layers are
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
from typing import IO, Any

import numpy as np

from ..formats import ElType
from ..tensor import Lut
from . import layers as L
from .netfile import (
    FORMAT,
    GRAPH_KEY,
    LUT_FIELDS,
    VERSION,
    NetworkFileError,
    is_network_file,
    layer_classes,
    network_to_bytes,
    save_network,
)
from .network import Network
from .qparams import Const, QParams

__all__ = ["FORMAT", "VERSION", "NetworkFileError", "is_network_file", "load_network", "save_network",
           "network_to_bytes"]

#: kind in the file -> (layer class, constructor parameters saved)
_CLASSES = layer_classes()


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
        if not isinstance(d, dict) or not {"data", "type", *LUT_FIELDS} <= d.keys():
            raise self.fail(f"bad LUT {d!r}")
        try:
            el = ElType.from_c_name(d["type"])
            fields = {f: int(d[f]) for f in LUT_FIELDS}
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
    if kind not in _CLASSES:
        raise NetworkFileError(f"{where}: unknown layer kind {kind!r}")
    cls, want_params = _CLASSES[kind]
    dec = _Decoder(npz, where)
    inputs = _field(rec, "inputs", (list,), where)
    if not all(isinstance(s, str) for s in inputs):
        raise NetworkFileError(f"{where}: 'inputs' is {inputs!r}")
    fn = _field(rec, "fn", (str, type(None)), where)
    out_q = dec.value(_field(rec, "out_q", (dict, type(None)), where))
    if out_q is not None and not isinstance(out_q, QParams):
        raise NetworkFileError(f"{where}: 'out_q' is not quantisation parameters")
    params = _field(rec, "params", (dict,), where)
    want = list(want_params)
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

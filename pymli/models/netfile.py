"""The saved-network format of :mod:`pymli.models.io`: its constants, its error and the writer.

:func:`save_network` turns a :class:`~pymli.models.Network` into one ``.npz`` file (a JSON
``graph`` plus one array per constant and LUT table); :mod:`pymli.models.io` reads it back and
documents the layout. This half does not import :mod:`pymli.models.network`, so that
:meth:`Network.save` can use it without an import cycle.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..errors import MliError, Status
from ..formats import ElType
from ..graph.registry import KernelMissing, Op, new_lut
from ..tensor import Lut
from . import layers as L
from . import recurrent as R
from .qparams import Const, QParams

__all__ = ["FORMAT", "VERSION", "GRAPH_KEY", "NetworkFileError", "is_network_file", "save_network",
           "network_to_bytes", "layer_classes", "LUT_FIELDS"]

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
LUT_FIELDS = ("capacity", "length", "in_frac_bits", "out_frac_bits", "input_offset", "output_offset")


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
                             "type": ElType(v.type).c_name, **{f: int(getattr(v, f)) for f in LUT_FIELDS}}}
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
    return (all(getattr(lut, f) == getattr(ref, f) for f in ("type", *LUT_FIELDS))
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


def _describe(net: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    enc = _Encoder()
    graph = {"format": FORMAT, "version": VERSION, "name": net.name, "input_shape": list(net.input_shape),
             "input_q": None if net.input_q is None else net.input_q.to_dict(),
             "layers": [_layer_record(i, la, enc) for i, la in enumerate(net.layers)]}
    return graph, enc.arrays


def save_network(net: Any, file: str | os.PathLike[str] | IO[bytes], *, compress: bool = False) -> None:
    """Write ``net`` as one ``.npz`` file (see the module documentation for the layout).

    Args:
        net: the :class:`~pymli.models.Network`, quantised or float only.
        file: a path (written as given: no suffix is added) or a binary file object.
        compress: deflate the arrays (smaller files, slower to write and read).

    Raises:
        NetworkFileError: a layer of a kind that cannot be saved (e.g. the TFLite importer's), or a
            value that is not numbers, strings, quantisation parameters, constants or LUTs. Nothing
            is written then.
    """
    if not all(hasattr(net, a) for a in ("layers", "input_shape", "input_q", "name")):
        raise NetworkFileError(f"cannot save a {type(net).__name__}: expected a pymli.models.Network")
    graph, arrays = _describe(net)
    members = {GRAPH_KEY: np.array(json.dumps(graph)), **arrays}
    if isinstance(file, (str, os.PathLike)):
        buf = io.BytesIO()
        _write_npz(buf, members, compress)
        Path(file).write_bytes(buf.getvalue())
    else:
        _write_npz(file, members, compress)


def network_to_bytes(net: Any) -> bytes:
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




def layer_classes() -> dict[str, tuple[type[L.Layer], tuple[str, ...]]]:
    """The layers a saved network can hold.

    Returns:
        kind in the file -> (layer class, the constructor parameters saved in ``params``).
    """
    return {cls.kind: (cls, tuple(p for p, _ in params)) for cls, params in _KINDS.items()}


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

"""Load an MLI example data pack (``model.json`` + ``constants.npz`` + ``vectors.npz``) as a Network.

The packs in ``shared/models/<example>/<variant>/`` record a C example network as the C library
ran it: constants as they sit in memory, the ordered MLI calls with every cfg field and the element
parameters of every tensor handed to the kernels, the test inputs and every intermediate. This
module rebuilds the network (layers calling the exact C symbols the example calls, with the same
output parameters) so that it can be run through pymli and compared bit for bit.

Supported calls: convolutions, depthwise, fully connected, pooling, eltwise, relu, softmax, sigm,
tanh, permute. The final ``mli_krn_argmax`` of the harness is not a layer: use
:meth:`RunResult.predictions`, which follows its tie rule.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np

from ..formats import ElType
from ..tensor import Lut
from . import layers as L
from .network import Network
from .qparams import Const, QParams

__all__ = ["Pack", "load_pack"]


@dataclasses.dataclass
class Pack:
    """A loaded pack: the network, its test vectors and the reference facts.

    Attributes:
        network: the network as the C example runs it.
        vectors: ``vectors.npz`` contents (lazy NpzFile).
        model: parsed ``model.json``.
        call_keys: layer name -> vectors key of its recorded output.
        input_key: vectors key of the quantised input.
        accuracy: accuracy the C program printed (fraction).
        in_keys: layer name -> vectors keys of its recorded inputs (``input.q`` for the network input).
        in_qparams: layer name -> element parameters of its inputs exactly as the C program passed them.
    """

    network: Network
    vectors: Any
    model: dict[str, Any]
    call_keys: dict[str, str]
    input_key: str
    accuracy: float
    in_keys: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    in_qparams: dict[str, list[QParams]] = dataclasses.field(default_factory=dict)

    @property
    def labels(self) -> np.ndarray:
        return np.asarray(self.vectors["label"])

    @property
    def inputs(self) -> np.ndarray:
        return np.asarray(self.vectors[self.input_key])


def _qparams(desc: dict[str, Any], consts: Any) -> QParams:
    el = ElType.from_c_name(desc["el_type"])
    if "sa" in desc:
        sa = desc["sa"]
        get = (lambda v: np.asarray(consts[v]) if isinstance(v, str) else v)
        return QParams.sa(get(sa["zero_point"]), get(sa["scale"]), get(sa["scale_frac_bits"]), sa.get("dim", -1), el)
    return QParams(el, frac_bits=int(desc.get("fx", {}).get("frac_bits", 0)))


def _const(name: str, model: dict[str, Any], consts: Any) -> Const:
    desc = model["constants"][name]
    q = np.asarray(consts[name]).reshape(desc["shape"]) if desc["shape"] else np.asarray(consts[name])
    return Const.quantized(q, _qparams(desc, consts))


def _arg(call: dict[str, Any], name: str) -> dict[str, Any]:
    for a in call["args"]:
        if a["param"] == name:
            return a
    raise KeyError(f"{call['id']}: no argument {name}")


def _fields(call: dict[str, Any]) -> dict[str, Any]:
    f = _arg(call, "cfg")["cfg"]["fields"]
    return {k: (v["name"] if isinstance(v, dict) and "name" in v else v) for k, v in f.items()}


def _relu(fields: dict[str, Any]) -> str:
    return {"MLI_RELU_NONE": "none", "MLI_RELU_GEN": "gen", "MLI_RELU_1": "relu_1",
            "MLI_RELU_6": "relu_6"}[fields.get("relu.type", "MLI_RELU_NONE")]


def _pad(f: dict[str, Any]) -> tuple[int, int, int, int]:
    return (f["padding_top"], f["padding_bottom"], f["padding_left"], f["padding_right"])


def _lut(name: str, model: dict[str, Any], consts: Any) -> Lut:
    d = model["luts"][name]
    table = np.asarray(consts[d.get("npz_key", f"lut.{name}")])
    cap = int(d.get("data_capacity_bytes", table.nbytes))
    data = np.zeros(max(cap // table.itemsize, table.size), table.dtype)
    data[: table.size] = table
    return Lut(data=data, capacity=cap, type=ElType.from_c_name(d["type"]), length=int(d["length"]),
               in_frac_bits=int(d["in_frac_bits"]), out_frac_bits=int(d["out_frac_bits"]),
               input_offset=int(d["input_offset"]), output_offset=int(d["output_offset"]))


def _layer(call: dict[str, Any], model: dict[str, Any], consts: Any, producers: dict[str, str]) -> L.Layer:
    fn = call["fn"]
    generic = call.get("generic_fn", fn)
    out = _arg(call, "out")
    kw: dict[str, Any] = dict(name=call["id"], fn=fn, out_q=_qparams(out["tensor"], consts))
    ins = []
    for p in ("in", "in1", "in2"):
        try:
            a = _arg(call, p)
        except KeyError:
            continue
        src = a.get("data_source", [])
        src = src[0] if src else ""
        key = src.split(" ")[0]
        ins.append(producers.get(key, "input"))
    kw["inputs"] = ins
    if "conv2d" in generic or "fully_connected" in generic:
        w = _const(_arg(call, "weights")["const"], model, consts)
        b = _const(_arg(call, "bias")["const"], model, consts)
        f = _fields(call)
        if "fully_connected" in generic:
            return L.FullyConnected(w, b, relu=_relu(f), **kw)
        cls = L.DepthwiseConv2D if "depthwise" in generic else L.Conv2D
        return cls(w, b, stride=(f["stride_height"], f["stride_width"]), padding=_pad(f),
                   dilation=(f.get("dilation_height", 1), f.get("dilation_width", 1)), relu=_relu(f), **kw)
    if "pool" in generic:
        f = _fields(call)
        cls = L.MaxPool if "maxpool" in generic else L.AvgPool
        return cls((f["kernel_height"], f["kernel_width"]), stride=(f["stride_height"], f["stride_width"]),
                   padding=_pad(f), **kw)
    if "softmax" in generic:
        return L.Softmax(axis=int(_fields(call).get("axis", -1)), lut=_lut(_arg(call, "lut")["lut"], model, consts),
                         **kw)
    if "sigm" in generic or "tanh" in generic:
        cls = L.Sigmoid if "sigm" in generic else L.Tanh
        return cls(lut=_lut(_arg(call, "lut")["lut"], model, consts), **kw)
    if "relu" in generic and "leaky" not in generic:
        return L.ReLU(type=_relu({"relu.type": _fields(call)["type"]}), **kw)
    if "eltwise" in generic:
        op = generic.split("eltwise_")[1].split("_")[0]
        return L.Eltwise(op, **kw)
    if "permute" in generic:
        return L.Permute(_fields(call)["perm_dim"], **kw)
    raise NotImplementedError(f"pack call {call['id']}: {fn} is not supported by the pack loader")


def load_pack(folder: str | Path) -> Pack:
    """Build the network of an MLI example pack folder (one bit-depth variant).

    Raises:
        NotImplementedError: the pack uses calls the loader does not map (e.g. RNN loops).
    """
    folder = Path(folder)
    model = json.loads((folder / "model.json").read_text())
    consts = np.load(folder / "constants.npz")
    vectors = np.load(folder / "vectors.npz")
    inp = model["input"]
    input_q = _qparams(inp["model_input_tensor"], consts)
    net = Network(inp["model_input_tensor"]["shape"], input_q=input_q,
                  name=f"{model['example']}/{model['variant']}")
    producers: dict[str, str] = {}
    keys: dict[str, str] = {}
    in_qs: dict[str, list[QParams]] = {}
    in_keys: dict[str, list[str]] = {}
    for call in model["calls"]:
        if "loop" in call:
            raise NotImplementedError("packs with loops (RNN) are not supported by the loader yet")
        if "argmax" in call["fn"]:
            continue
        layer = _layer(call, model, consts, producers)
        net.add(layer)
        key = _arg(call, "out").get("vectors_key", f"{call['id']}.out")
        producers[key] = layer.name
        keys[layer.name] = key
        in_args = [a for a in call["args"] if a["param"] in ("in", "in1", "in2") and "tensor" in a]
        in_qs[layer.name] = [_qparams(a["tensor"], consts) for a in in_args]
        in_keys[layer.name] = [next((k for k, v in producers.items() if v == i), inp["vectors_keys"]["quantised"])
                               for i in layer.inputs]
    import re

    m = re.search(r"([\d.]+) %", model["reference"]["example_binary_accuracy_line"])
    acc = float(m.group(1)) / 100 if m else float("nan")
    return Pack(net, vectors, model, keys, inp["vectors_keys"]["quantised"], acc, in_keys, in_qs)

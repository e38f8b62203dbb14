"""Replay of MLI 1.x recordings: golden cases (format ``mli1-golden/1``) and ``models_v1`` packs.

Entry point for ``pymli verify``: :func:`run_path` takes a case file, a folder of cases, a pack
folder (``model.json``) or a folder of packs, and returns ``(passed, failed, messages)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..config import use_platform
from .capi import FUNCTIONS
from .cfg import cfg_from_json
from .config import PRESETS_V1
from .tensor import MliError, Status, Tensor

__all__ = ["GOLDEN_FORMAT", "is_v1_case", "load_case", "run_case", "run_path", "iter_cases"]

GOLDEN_FORMAT = "mli1-golden/1"
_EL = {"MLI_EL_FX_8": 0, "MLI_EL_FX_16": 1}


def is_v1_case(path: str | Path) -> bool:
    """True for an ``.npz`` whose ``meta`` says ``format: mli1-golden/1``."""
    try:
        with np.load(path) as z:
            return json.loads(str(z["meta"])).get("format") == GOLDEN_FORMAT
    except (OSError, KeyError, ValueError):
        return False


def load_case(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The meta JSON and the arrays of one golden case."""
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    return json.loads(str(arrays.pop("meta"))), arrays


def _el(v: Any) -> int:
    return _EL[v] if isinstance(v, str) else int(v)


def _build_tensors(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> tuple[dict[str, Tensor], dict[str, np.ndarray]]:
    """Tensors as C saw them; buffers are copies (aliases share one), keyed by array name."""
    bufs: dict[str, np.ndarray] = {}
    tensors: dict[str, Tensor] = {}
    for name, d in meta["tensors"].items():
        data: Any
        ref = d.get("data")
        if ref is None:
            data = d.get("value") if "value" in d else None
        else:
            key = ref[1:]
            if key not in bufs:
                bufs[key] = arrays[key].copy()
            data = bufs[key]
        shape = list(d.get("shape", []))[:4]
        tensors[name] = Tensor(data=data, capacity=int(d["capacity"]), shape=shape, rank=int(d["rank"]),
                               el_type=_el(d["el_type"]), frac_bits=int(d["frac_bits"]))
    return tensors, bufs


def run_case(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> list[str]:
    """Run one golden case; return the list of mismatches (empty: bit-exact)."""
    fn = FUNCTIONS.get(meta["function"])
    if fn is None:
        return [f"{meta['function']}: not implemented"]
    tensors, bufs = _build_tensors(meta, arrays)
    args: list[Any] = []
    for a in meta["args"]:
        kind = a["kind"]
        if kind in ("tensor", "out_tensor"):
            args.append(tensors[a["name"]])
        elif kind == "tensor_list":
            args.append([tensors[n] for n in a["tensors"]])
        elif kind == "scalar":
            args.append(int(a["value"]))
        elif kind == "cfg":
            fields = meta["cfg"][a["name"]]
            ir = None
            if a["type"] == "mli_rnn_cell_cfg" and fields.get("ir_tsr"):
                ir = tensors[fields["ir_tsr"]["tensor"]]
            args.append(cfg_from_json(a["type"], fields, ir))
        else:
            return [f"unknown argument kind {kind}"]
    platform = PRESETS_V1[meta["variant"]]
    errs: list[str] = []
    want = meta.get("status")
    with use_platform(platform):
        try:
            ret = fn(*args)
            got = Status.OK.c_name if meta.get("return_type") == "mli_status" else None
        except MliError as e:
            ret = None
            got = e.status.c_name
    if meta.get("return_type") == "mli_status":
        if got != want:
            errs.append(f"status {got} != {want}")
    else:
        exp_ret = meta["expected"].get("return")
        if ret != exp_ret:
            errs.append(f"return {ret} != {exp_ret}")
    for name, ref in meta["expected"].items():
        if name == "return":
            continue
        key = ref[1:]
        exp = arrays[key]
        # the buffer of this argument
        src = meta["tensors"][name]["data"]
        got_buf = bufs.get(src[1:]) if src else None
        if got_buf is None or not np.array_equal(got_buf, exp):
            nd = -1 if got_buf is None or got_buf.shape != exp.shape else int(np.sum(got_buf != exp))
            errs.append(f"{name}: buffer differs ({nd} elements)")
    if meta.get("valid_case", True) and not errs:
        for name, st in meta.get("expected_tensor_structs", {}).items():
            t = tensors[name]
            got_s = {"el_type": int(t.el_type), "rank": int(t.rank), "shape": list(t.dims)[: int(t.rank)],
                     "capacity": int(t.capacity), "frac_bits": int(t.frac_bits)}
            exp_s = {"el_type": _el(st["el_type"]), "rank": int(st["rank"]), "shape": list(st["shape"]),
                     "capacity": int(st["capacity"]), "frac_bits": int(st["frac_bits"])}
            if got_s != exp_s:
                errs.append(f"{name} struct {got_s} != {exp_s}")
            dp = st.get("data_ptr")
            if dp is not None and dp.get("buffer") is None and "value" in st:
                if isinstance(t.data, np.ndarray) or int(t.data) != int(st["value"]):
                    errs.append(f"{name}: data field {t.data} != value {st['value']}")
            elif dp is not None and dp.get("buffer") is not None:
                base_src = meta["tensors"][dp["buffer"]]["data"] if dp["buffer"] in meta["tensors"] else None
                base = bufs.get(base_src[1:]) if base_src else None
                if base is not None and isinstance(t.data, np.ndarray):
                    off = t.data.__array_interface__["data"][0] - base.__array_interface__["data"][0]
                    if off != int(dp["byte_offset"]):
                        errs.append(f"{name}: data pointer offset {off} != {dp['byte_offset']}")
    return errs


def iter_cases(root: str | Path) -> list[Path]:
    """Every golden case file under ``root`` (sorted)."""
    root = Path(root)
    direct = sorted(p for p in root.glob("*.npz") if not p.name.startswith("_"))
    return direct or sorted(p for p in root.glob("*/*.npz") if not p.name.startswith("_"))


def run_path(path: str | Path) -> tuple[int, int, list[str]]:
    """Replay a 1.x golden case, a folder of cases, a models_v1 pack or a folder of packs.

    Args:
        path: a ``.npz`` case, a folder holding ``<function>/<seed>.npz``, a pack folder
            (``model.json``), or a folder whose sub-folders are packs.

    Returns:
        tuple[int, int, list[str]]: passed count, failed count, one message per failure.
    """
    p = Path(path)
    if p.is_file():
        files = [p]
    elif (p / "model.json").exists() or any(p.glob("*/model.json")) or any(p.glob("*/*/model.json")):
        from .packs import run_packs

        return run_packs(p)
    else:
        files = iter_cases(p)
    passed, failed, msgs = 0, 0, []
    for f in files:
        meta, arrays = load_case(f)
        if meta.get("format") != GOLDEN_FORMAT:
            continue
        errs = run_case(meta, arrays)
        if errs:
            failed += 1
            msgs.append(f"{f}: " + "; ".join(errs))
        else:
            passed += 1
    return passed, failed, msgs

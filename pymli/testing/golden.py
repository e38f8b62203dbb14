"""Golden-case runner: replay C-library recordings through :mod:`pymli.capi` and compare bit for bit.

Usage::

    python -m pymli.verify DIR [DIR ...] [--only REGEX] [--summary]
    pymli verify DIR [DIR ...] [--only REGEX] [--summary]

Each case is one ``DIR/<function>/<seed>.npz`` in the format of ``shared/golden/README.md``. The
runner builds the tensors, cfg structs and LUTs the C call received, calls the facade function of
the same name under the case's platform (rounding, FULL_ACCU), and compares the status, the return
value, every output buffer as a whole (gaps and tail included), rewritten tensor struct fields, LUTs,
filled cfg structs and handles. It prints one line per function and ends with ``N passed, M failed``.

Exit codes: 0 when at least one case ran and all passed; 1 if any case failed (an unimplemented
function, an unreadable or malformed case file count as failed) or if there was nothing to check
(no case file in the folders, or ``--only`` matched none); 2 for a missing folder or a bad ``--only``
regular expression.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from .. import capi
from ..config import Platform, use_platform
from ..errors import MliError, Status
from ..formats import ElType, RoundMode
from ..tensor import Lut, Tensor, address
from ..v1 import replay as v1_replay

__all__ = ["Case", "CaseError", "load_case", "run_case", "iter_cases", "run_dirs", "main"]

_CTYPES = {"int": np.int32, "int32_t": np.int32, "uint32_t": np.uint32, "uint8_t": np.uint8,
           "int8_t": np.int8, "int16_t": np.int16, "uint16_t": np.uint16, "float": np.float32}


class CaseError(Exception):
    """A case file that cannot be read or does not follow the golden format; or a bad runner argument."""


@dataclasses.dataclass
class Case:
    """One recorded call: its meta JSON and arrays."""

    path: Path
    meta: dict[str, Any]
    arrays: dict[str, np.ndarray]

    @property
    def function(self) -> str:
        """The C function the case recorded (``mli_krn_conv2d_hwcn_sa8_sa8_sa32`` ...)."""
        return self.meta["function"]

    @property
    def name(self) -> str:
        """``<function>/<file stem>``: the case's name in reports."""
        return f"{self.function}/{self.path.stem}"

    def platform(self) -> Platform:
        """The build the case was recorded with: rounding, FULL_ACCU, AVEPOOL_16BIT_MUL, debug mode.

        Returns:
            The :class:`pymli.config.Platform` to replay the case under.
        """
        p = self.meta.get("platform", {})
        return Platform(RoundMode(p.get("round_mode", "up")), bool(p.get("full_accu", False)),
                        bool(p.get("avepool_16bit_mul", False)), self.meta.get("variant", "case"),
                        self.meta.get("debug_mode", "DBG_MODE_RELEASE"))

_REQUIRED_META = ("function", "args", "return_type", "status")


def load_case(path: str | Path) -> Case:
    """Read one ``.npz`` case (never unpickles anything).

    Args:
        path: a ``<function>/<seed>.npz`` file in the format of ``shared/golden/README.md``.

    Returns:
        The :class:`Case`.

    Raises:
        CaseError: the file cannot be read, is not an npz archive, or has no valid ``meta`` JSON
            with the keys the runner needs.
    """
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise CaseError(f"unreadable case file: {type(e).__name__}: {e}") from e
    if "meta" not in arrays:
        raise CaseError("malformed case file: no 'meta' entry")
    try:
        meta = json.loads(str(arrays.pop("meta")))
    except ValueError as e:
        raise CaseError(f"malformed case file: meta is not JSON ({e})") from e
    if not isinstance(meta, dict) or not all(k in meta for k in _REQUIRED_META):
        raise CaseError(f"malformed case file: meta lacks one of {', '.join(_REQUIRED_META)}")
    return Case(path, meta, arrays)


def _only_regex(only: str | None) -> re.Pattern[str] | None:
    """The compiled ``--only`` expression (``None``: every function).

    Raises:
        CaseError: ``only`` is not a valid regular expression.
    """
    try:
        return re.compile(only) if only else None
    except re.error as e:
        raise CaseError(f"--only {only!r} is not a valid regular expression: {e}") from e


def iter_cases(dirs: list[str | Path], only: str | None = None) -> list[Path]:
    """All case files under ``dirs`` (sorted by function, then seed), filtered by ``only``.

    Args:
        dirs: golden folders (``<dir>/<function>/<seed>.npz``); a folder that does not exist adds nothing.
        only: regular expression searched in the function name (``None``: every case).

    Returns:
        The case paths.

    Raises:
        CaseError: ``only`` is not a valid regular expression.
    """
    rx = _only_regex(only)
    out = []
    for d in dirs:
        for f in sorted(Path(d).glob("*/*.npz"), key=lambda p: (p.parent.name, int(p.stem) if p.stem.isdigit() else 0)):
            if rx is None or rx.search(f.parent.name):
                out.append(f)
    return out


def is_v1_dir(d: str | Path) -> bool:
    """Whether ``d`` holds MLI 1.x recordings: ``models_v1`` packs or ``mli1-golden`` case files.

    Args:
        d: a folder.

    Returns:
        True for a folder of MLI 1.x recordings (False for a missing folder).
    """
    d = Path(d)
    if not d.is_dir():
        return False
    if (d / "model.json").exists() or any(d.glob("*/model.json")) or any(d.glob("*/*/model.json")):
        return True
    first = next(iter(sorted(d.glob("*/*.npz"))), None) or next(iter(sorted(d.glob("*.npz"))), None)
    return first is not None and v1_replay.is_v1_case(first)


def _v1_units(dirs: list[Path], only: str | None = None) -> list[tuple[str, Path]]:
    """(report key, path) pairs to replay with :func:`pymli.v1.replay.run_path`.

    A folder of 1.x cases gives one unit per function folder (filtered by ``only``); a pack folder, or a
    folder of packs, is one unit per pack.

    Raises:
        CaseError: ``only`` is not a valid regular expression.
    """
    rx = _only_regex(only)
    units: list[tuple[str, Path]] = []
    for d in dirs:
        packs = sorted({m.parent for m in [*d.glob("model.json"), *d.glob("*/model.json"), *d.glob("*/*/model.json")]})
        if packs:
            units += [(f"v1 pack {p.parent.name}/{p.name}", p) for p in packs if rx is None or rx.search(str(p))]
        else:
            units += [(f"v1/{f.name}", f) for f in sorted(p for p in d.iterdir() if p.is_dir() and any(p.glob("*.npz")))
                      if rx is None or rx.search(f.name)]
    return units


class _Builder:
    """Turns a case's JSON descriptions into pymli objects, keeping the buffers by name."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.buffers: dict[str, np.ndarray] = {}

    def ref(self, value: Any, copy: bool = True) -> np.ndarray | None:
        if value is None:
            return None
        if isinstance(value, str) and value.startswith("@"):
            arr = self.case.arrays[value[1:]]
            return np.array(arr) if copy else arr
        raise ValueError(f"not an array reference: {value!r}")

    def tensor(self, name: str) -> Tensor | None:
        d = self.case.meta["tensors"].get(name)
        if d is None:
            return None
        el = ElType.from_c_name(d["el_type"])
        rank = int(d["rank"])
        data = self.ref(d.get("data"))
        if data is not None:
            self.buffers[name] = data
        kw: dict[str, Any] = {}
        if "frac_bits" in d:
            kw["frac_bits"] = int(d["frac_bits"])
        if "dim" in d or "zero_point" in d:
            kw["dim"] = int(d.get("dim", -1))
            for k, dt in (("zero_point", np.int16), ("scale", np.int16), ("scale_frac_bits", np.int8)):
                v = d.get(k, 0)
                kw[k] = self.ref(v).astype(dt) if isinstance(v, str) else int(v)
        if "value" in d:
            kw["value"] = d["value"]
        return Tensor(data=data, capacity=int(d.get("capacity", 0)), shape=[int(s) for s in d.get("shape", [])],
                      mem_stride=[int(s) for s in d.get("mem_stride", [])], rank=rank, el_type=el, **kw)

    def lut(self, name: str, out: bool) -> Lut:
        d = self.case.meta["luts"][name]
        cap = int(d.get("capacity", 0))
        if out:
            data = np.zeros(cap // 2 if d.get("type", "MLI_EL_FX_16") == "MLI_EL_FX_16" else cap, dtype=np.int16)
            return Lut(data=data, capacity=cap)
        data = self.ref(d.get("data"))
        return Lut(data=data, capacity=cap, type=ElType.from_c_name(d["type"]), length=int(d["length"]),
                   in_frac_bits=int(d["in_frac_bits"]), out_frac_bits=int(d["out_frac_bits"]),
                   input_offset=int(d["input_offset"]), output_offset=int(d["output_offset"]))

    def struct(self, type_name: str, value: dict[str, Any] | None) -> Any:
        cls = capi.STRUCTS.get(type_name)
        if cls is None:
            raise NotImplementedError(f"struct {type_name} is not implemented")
        return cls() if value is None else cls.from_dict(value)


def _scalar(a: dict[str, Any]) -> Any:
    v = a["value"]
    ct = a.get("ctype", "")
    if ct in ("float", "double"):
        return float(v)
    if ct == "bool":
        return bool(v)
    return int(v) if isinstance(v, (int, bool)) else v


def case_arguments(case: Case) -> tuple[list[tuple[str, str, Any]], _Builder]:
    """The arguments of a recorded call, built as C saw them: ``(kind, name, object)`` in order.

    Tensors are views into copies of the recorded memory (aliases share one buffer), a NULL pointer
    is ``None`` (a NULL cfg stays NULL), arrays are NumPy arrays of their C type.

    Args:
        case: a loaded case.

    Returns:
        The argument triples and the builder holding the buffers (for reading outputs back).

    Raises:
        CaseError: an argument kind the runner does not know.
        NotImplementedError: a recorded construct pymli cannot rebuild.
    """
    m = case.meta
    b = _Builder(case)
    out: list[tuple[str, str, Any]] = []
    for a in m["args"]:
        kind, name = a["kind"], a["name"]
        if kind in ("tensor", "out_tensor"):
            obj = None if a.get("null") else b.tensor(name)
        elif kind == "tensor_list":
            obj = [b.tensor(f"{name}[{i}]") for i in range(int(a["count"]))]
        elif kind == "cfg":
            cfgs = m.get("cfg") or {}
            # A NULL cfg pointer ("null": true, or a recorded null value) stays None.
            null = a.get("null") or (name in cfgs and cfgs[name] is None)
            obj = None if null else b.struct(a["type"], cfgs.get(name))
        elif kind == "out_cfg":
            obj = b.struct(a["type"], None)
        elif kind in ("lut", "out_lut"):
            obj = b.lut(name, kind == "out_lut")
        elif kind == "scalar":
            obj = _scalar(a)
        elif kind == "array":
            obj = np.asarray(a["value"], dtype=_CTYPES.get(a.get("ctype", "int"), np.int32))
        elif kind == "handle":
            obj = b.struct("mli_mov_handle_t", a["value"])
        else:
            raise CaseError(f"argument kind {kind} unknown")
        out.append((kind, name, obj))
    return out, b


def run_case(case: Case) -> list[str]:
    """Replay ``case`` through :mod:`pymli.capi` and compare everything the C library wrote.

    Args:
        case: a loaded case (:func:`load_case`).

    Returns:
        The mismatches, one sentence each (empty: the case passes; an unimplemented function is one
        mismatch).
    """
    m = case.meta
    fn = capi.FUNCTIONS.get(case.function)
    if fn is None:
        return [f"{case.function} is not implemented"]
    try:
        triples, b = case_arguments(case)
    except (CaseError, NotImplementedError) as e:
        return [str(e)]
    args: list[Any] = [o for _, _, o in triples]
    objs: dict[str, Any] = {n: o for _, n, o in triples}

    status: Status = Status.OK
    ret: Any = None
    reset = getattr(fn, "mli_reset_state", None)
    if reset is not None:
        reset()  # library globals (the mli_mov DMA pool) start every recorded call in their initial state
    with use_platform(case.platform()):
        try:
            ret = fn(*args)
        except MliError as e:
            status = e.status
    errs: list[str] = []
    if m["return_type"] == "mli_status":
        if isinstance(ret, Status):
            status = ret
        if m["status"] is not None and status.c_name != m["status"]:
            errs.append(f"status {status.c_name} != {m['status']}")
    elif status is not Status.OK:
        errs.append(f"raised {status.c_name} for a function returning {m['return_type']}")
    exp = m.get("expected", {})
    for key, val in exp.items():
        if key == "return":
            if not _same_value(ret, val):
                errs.append(f"return {ret!r} != {val!r}")
        elif isinstance(val, str) and val.startswith("@"):
            got = b.buffers.get(key)
            want = case.arrays[val[1:]]
            if got is None:
                errs.append(f"buffer {key} missing")
            elif got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
                diff = np.flatnonzero(got.view(np.uint8) != want.view(np.uint8)) if got.nbytes == want.nbytes else []
                errs.append(f"buffer {key} differs ({len(diff)} bytes, first at byte {diff[0] if len(diff) else '?'})")
        elif isinstance(val, dict) and isinstance(objs.get(key), Lut):
            errs += _cmp_lut(objs[key], val, case)
        elif isinstance(val, dict) and key in objs:
            errs += _cmp_struct(key, objs[key], val)
        else:
            errs.append(f"expected {key} not understood")
    if status is Status.OK or m.get("valid_case", True):
        for name, want in m.get("expected_tensor_structs", {}).items():
            t = objs.get(name)
            if isinstance(t, Tensor):
                errs += _cmp_tensor(name, t, want, b.buffers)
    if not m.get("valid_case", True):
        # Nothing may be written on failure: every output buffer keeps its init content.
        for a in m["args"]:
            if a["kind"] == "out_tensor" and f"{a['name']}.init" in case.arrays and a["name"] not in exp:
                got = b.buffers.get(a["name"])
                if got is not None and got.tobytes() != case.arrays[f"{a['name']}.init"].tobytes():
                    errs.append(f"buffer {a['name']} written by a failing call")
    return errs


def _same_value(got: Any, want: Any) -> bool:
    if isinstance(got, (Status,)):
        got = got.c_name
    if hasattr(got, "item"):
        got = got.item()
    if isinstance(want, bool) or isinstance(got, bool):
        return bool(got) == bool(want)
    return got == want


def _cmp_lut(lut: Lut, want: dict[str, Any], case: Case) -> list[str]:
    errs = []
    for k in ("capacity", "length", "in_frac_bits", "out_frac_bits", "input_offset", "output_offset"):
        if k in want and int(getattr(lut, k)) != int(want[k]):
            errs.append(f"lut.{k} {getattr(lut, k)} != {want[k]}")
    if "type" in want and lut.type.c_name != want["type"]:
        errs.append(f"lut.type {lut.type.c_name} != {want['type']}")
    if isinstance(want.get("data"), str):
        ref = case.arrays[want["data"][1:]]
        got = None if lut.data is None else np.asarray(lut.data)[: ref.shape[0]]
        if got is None or got.shape != ref.shape or not np.array_equal(got.astype(ref.dtype), ref):
            errs.append("lut.data differs")
    return errs


def _norm(v: Any) -> Any:
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, Status):
        return v.c_name
    if hasattr(v, "c_name"):
        return v.c_name
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return v


def _cmp_struct(name: str, obj: Any, want: dict[str, Any]) -> list[str]:
    got = obj.to_dict() if hasattr(obj, "to_dict") else dict(vars(obj))
    errs = []
    for k, v in want.items():
        g = _norm(got.get(k))
        if g != v:
            errs.append(f"{name}.{k} {g!r} != {v!r}")
    return errs


def _cmp_tensor(name: str, t: Tensor, want: dict[str, Any], buffers: dict[str, np.ndarray]) -> list[str]:
    errs = []

    def chk(field: str, got: Any, exp: Any) -> None:
        if _norm(got) != exp:
            errs.append(f"{name}.{field} {_norm(got)!r} != {exp!r}")

    if "el_type" in want:
        chk("el_type", t.el_type.c_name, want["el_type"])
    if "rank" in want:
        chk("rank", t.rank, want["rank"])
    r = int(want.get("rank", t.rank))
    if "shape" in want:
        chk("shape", [int(s) for s in list(t.shape)[:r]], want["shape"][:r])
    if "mem_stride" in want:
        chk("mem_stride", [int(s) for s in list(t.mem_stride)[:r]], want["mem_stride"][:r])
    if "capacity" in want:
        chk("capacity", int(t.capacity), want["capacity"])
    if "frac_bits" in want:
        chk("frac_bits", int(t.frac_bits), want["frac_bits"])
    if "dim" in want:
        chk("dim", int(t.dim), want["dim"])
        for k in ("zero_point", "scale", "scale_frac_bits"):
            if k in want:
                v = getattr(t, k)
                if isinstance(want[k], list):
                    n = len(want[k])
                    v = [int(x) for x in np.asarray(v).reshape(-1)[:n]]
                else:
                    v = int(np.asarray(v).reshape(-1)[0]) if isinstance(v, np.ndarray) else int(v)
                chk(k, v, want[k])
    if "value" in want:
        v = t.value.item() if hasattr(t.value, "item") else t.value
        if v != want["value"]:
            errs.append(f"{name}.value {v!r} != {want['value']!r}")
    if "data_ptr" in want:
        dp = want["data_ptr"]
        if dp is None:
            if t.data is not None and t.rank != 0:
                errs.append(f"{name}.data points somewhere, expected NULL")
        elif dp.get("buffer") is None:
            if any(address(t.data) == address(buf) for buf in buffers.values()):
                errs.append(f"{name}.data points into a recorded buffer, expected elsewhere")
        else:
            buf = buffers.get(dp["buffer"])
            if buf is None or t.data is None:
                errs.append(f"{name}.data_ptr: no buffer {dp['buffer']}")
            else:
                off = address(t.data) - address(buf)
                if off != dp["byte_offset"] or not (0 <= off <= buf.nbytes):
                    errs.append(f"{name}.data_ptr offset {off} != {dp['byte_offset']} in {dp['buffer']}")
    return errs


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: run the cases, print per-function counts and ``N passed, M failed``.

    Args:
        argv: the arguments (default ``sys.argv[1:]``).

    Returns:
        The exit code (see the module docstring).
    """
    ap = argparse.ArgumentParser(prog="python -m pymli.verify", description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", help="golden directories (e.g. ../shared/golden)")
    ap.add_argument("--only", help="regular expression on the function name")
    ap.add_argument("--summary", action="store_true", help="per-function lines only, no per-case detail")
    ap.add_argument("--failures", type=int, default=3, help="failing cases to detail per function")
    ns = ap.parse_args(argv)
    return run_dirs(ns.dirs, ns.only, ns.summary, ns.failures)


def run_dirs(dirs: list[str], only: str | None = None, summary: bool = False, failures: int = 3,
             out: Any = None) -> int:
    """Run every case under ``dirs``; print the report to ``out``; return the exit code.

    Args:
        dirs: golden folders; each must exist.
        only: regular expression on the function name.
        summary: per-function lines only.
        failures: failing cases detailed per function.
        out: a text stream (default ``sys.stdout``); error messages go to ``sys.stderr``.

    Returns:
        0 if cases ran and all passed; 1 if a case failed or nothing was checked; 2 for a missing
        folder or a bad regular expression.
    """
    out = out or sys.stdout
    missing = [str(d) for d in dirs if not Path(d).is_dir()]
    if missing:
        print(f"error: no such folder: {', '.join(missing)} (expected golden folders such as ../shared/golden)",
              file=sys.stderr)
        return 2
    v1_dirs = [Path(d) for d in dirs if is_v1_dir(d)]
    v2_dirs = [d for d in dirs if Path(d) not in v1_dirs]
    try:
        files = iter_cases(v2_dirs, only)
        v1_units = _v1_units(v1_dirs, only)
    except CaseError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not files and not v1_units:
        if only and (iter_cases(v2_dirs) or _v1_units(v1_dirs)):
            print(f"error: --only {only!r} matched no function: nothing was checked", file=sys.stderr)
        else:
            print(f"error: no case files (<function>/<n>.npz) in {', '.join(map(str, dirs))}: nothing was checked",
                  file=sys.stderr)
        return 1
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    detail: dict[str, list[str]] = defaultdict(list)
    for f in files:
        variant: Any = None
        try:
            case = load_case(f)
            function, variant = case.function, case.meta.get("variant")
            errs = run_case(case)
        except CaseError as e:  # one bad file is one failure; the run goes on
            function, errs = f.parent.name, [f"{f}: {e}"]
        except Exception as e:  # a crash is a failure of this case, not of the run
            function, errs = f.parent.name, [f"crashed: {type(e).__name__}: {e}"]
        key = f"{f.parent.parent.name}/{function}" if len(dirs) > 1 else function
        per[key][0 if not errs else 1] += 1
        if errs and len(detail[key]) < failures:
            detail[key].append(f"    {f.parent.name}/{f.name} [{variant}]: {'; '.join(errs[:3])}")
    for key, unit in v1_units:
        try:
            p1, f1, msgs = v1_replay.run_path(unit)
        except Exception as e:  # a crash or an unreadable file is one failure of this unit
            p1, f1, msgs = 0, 1, [f"{unit}: {type(e).__name__}: {e}"]
        per[key][0] += p1
        per[key][1] += f1
        detail[key].extend(f"    {m}" for m in msgs[:failures])
    for key in sorted(per):
        p, fl = per[key]
        print(f"{key}: {p} passed, {fl} failed", file=out)
        if not summary:
            for line in detail[key]:
                print(line, file=out)
    tp = sum(v[0] for v in per.values())
    tf = sum(v[1] for v in per.values())
    print(f"{tp} passed, {tf} failed", file=out)
    return 1 if tf else 0


if __name__ == "__main__":
    sys.exit(main())

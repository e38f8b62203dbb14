"""Per-layer comparison of a quantised network run on MLI kernels against its float64 twin.

For every layer :func:`compare` reports

* ``snr_db``: SNR of the layer's dequantised MLI output against the float network run end to end
  (errors accumulated over all previous layers): ``10 log10(sum(ref**2) / sum((out - ref)**2))``;
* ``snr_local_db``: the same for the layer alone, its float version fed the dequantised MLI inputs;
* ``max_err``: largest absolute error against the end-to-end float reference;
* ``saturated``: fraction of outputs at the container's limits, ``headroom_bits``: integer bits of
  the output format left unused by the largest output;
* for MAC layers: products per output, accumulator guard bits needed in the worst case
  (``ceil(log2(products + 1))``, the bias counts as one more term), guard bits the platform's
  accumulator has (``mli_hlp_accu_guard_bits_*``), and the peak of the real accumulator over the
  data with the bits it leaves free (``acc_headroom_bits``; negative = overflow).

Accuracy over a labelled set is reported for the quantised and the float network.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..errors import MliError, Status
from ..formats import ElType
from ..graph import args
from ..graph.registry import Op, entry, lookup
from .network import Network, RunResult
from .qparams import QParams

__all__ = ["ARC_GUARD_BITS", "LayerStats", "Report", "accu_guard_bits", "compare", "snr_db"]



class _Named(Protocol):
    name: str


_R = TypeVar("_R", bound=_Named)


def snr_db(ref: np.ndarray, test: np.ndarray) -> float:
    """Signal-to-noise ratio of ``test`` against ``ref`` in dB (inf when equal, -inf for a zero signal)."""
    ref = np.asarray(ref, np.float64)
    err = np.asarray(test, np.float64) - ref
    p_sig, p_err = float(np.sum(ref * ref)), float(np.sum(err * err))
    if p_err == 0.0:
        return math.inf
    if p_sig == 0.0:
        return -math.inf
    return 10.0 * math.log10(p_sig / p_err)


#: guard bits of ARC builds (40-bit fx16 accumulator), for ``compare(..., guard_bits=ARC_GUARD_BITS)``
ARC_GUARD_BITS = {"sa8_sa8": 16, "fx16_fx16": 8, "fx16_fx8": 8}


def _guard_key(in_el: ElType, w_el: ElType) -> str:
    """The :data:`ARC_GUARD_BITS` key of a MAC signature: the suffix of its ``mli_hlp_accu_guard_bits_*``."""
    return entry(Op.ACCU_GUARD_BITS, *_guard_types(in_el, w_el)).c_name.removeprefix("mli_hlp_accu_guard_bits_")


def _guard_types(in_el: ElType, w_el: ElType) -> tuple[ElType, ElType]:
    """The accumulator family of a MAC layer: sa8 x sa8, fx16 x fx8 or fx16 x fx16 (fx8 data runs as fx16 x fx8)."""
    if in_el.is_sa:
        return ElType.SA_8, ElType.SA_8
    return (ElType.FX_16, ElType.FX_8) if w_el == ElType.FX_8 else (ElType.FX_16, ElType.FX_16)


def accu_guard_bits(in_el: ElType, w_el: ElType) -> int:
    """Guard bits of the accumulator of a MAC kernel for these operand types on the current platform.

    The value of ``mli_hlp_accu_guard_bits_*`` (chosen by :mod:`pymli.graph.registry`). Note that the
    x86 reference build holds the "40-bit" fx16 accumulator in an int64 (32 guard bits), while ARC
    builds have 8: see :data:`ARC_GUARD_BITS`.
    """
    return int(lookup(Op.ACCU_GUARD_BITS, *_guard_types(in_el, w_el))())


@dataclasses.dataclass
class LayerStats:
    """Comparison figures of one layer (see the module docstring)."""

    name: str
    kind: str
    function: str
    out_q: str
    snr_db: float
    snr_local_db: float
    max_err: float
    ref_max: float
    saturated: float
    headroom_bits: int | None
    macs: int | None = None
    guard_needed: int | None = None
    guard_available: int | None = None
    acc_peak_bits: int | None = None
    acc_bits: int | None = None
    acc_headroom_bits: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form of the figures."""
        d = dataclasses.asdict(self)
        return {k: (None if isinstance(v, float) and not math.isfinite(v) and k == "max_err" else v)
                for k, v in d.items()}


def by_name(rows: Iterable[_R], name: str) -> _R:
    """The first of ``rows`` whose ``name`` attribute is ``name`` (the ``report[name]`` of the reports).

    Args:
        rows: records with a ``name`` (:class:`LayerStats`, the TFLite comparison's rows).
        name: the name looked up.

    Returns:
        The record.

    Raises:
        KeyError: no record has that name.
    """
    for r in rows:
        if r.name == name:
            return r
    raise KeyError(name)


@dataclasses.dataclass
class Report:
    """Result of :func:`compare`: per-layer statistics and accuracies."""

    network: str
    platform: str
    samples: int
    layers: list[LayerStats]
    accuracy: float | None = None
    float_accuracy: float | None = None
    reference: str = "float"

    def __getitem__(self, name: str) -> LayerStats:
        return by_name(self.layers, name)

    # ---------------------------------------------------------------- output
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form of the report (network, platform, one entry per layer)."""
        def clean(v: Any) -> Any:
            if isinstance(v, float) and not math.isfinite(v):
                return "inf" if v > 0 else "-inf"
            return v

        return {"network": self.network, "platform": self.platform, "samples": self.samples,
                "reference": self.reference, "accuracy": self.accuracy, "float_accuracy": self.float_accuracy,
                "layers": [{k: clean(v) for k, v in dataclasses.asdict(s).items()} for s in self.layers]}

    def to_json(self, path: str | Path | None = None, **kw: Any) -> str:
        """JSON text of the report (infinite SNRs as ``"inf"``); written to ``path`` if given."""
        text = json.dumps(self.to_dict(), indent=kw.pop("indent", 2), **kw)
        if path is not None:
            Path(path).write_text(text)
        return text

    def table(self, title: str | None = None, *, kernels: bool = False) -> Any:
        """A rich Table of the per-layer figures (``kernels``: add the MLI function of each layer)."""
        t = Table(title=escape(title or f"{self.network} on MLI ({self.platform}), {self.samples} samples"))
        # two-line headers keep the numeric columns narrow enough for an 80-column console
        cols = [("layer", "left"), ("MLI kernel", "left"), ("output", "left"), ("SNR\ndB", "right"),
                ("alone\ndB", "right"), ("max\nerr", "right"), ("sat\n%", "right"), ("free\nbits", "right"),
                ("guard\nbits", "right"), ("acc\nfree", "right")]
        rows = []
        for s in self.layers:
            guard = f"{s.guard_needed}/{s.guard_available}" if s.guard_needed is not None else ""
            style = "red" if (s.acc_headroom_bits is not None and s.acc_headroom_bits < 0) else None
            cells = [s.name, s.function.removeprefix("mli_krn_"), _short_q(s.out_q), _fmt_db(s.snr_db),
                     _fmt_db(s.snr_local_db), f"{s.max_err:.2g}", f"{100 * s.saturated:.2f}",
                     "" if s.headroom_bits is None else str(s.headroom_bits), guard,
                     "" if s.acc_headroom_bits is None else str(s.acc_headroom_bits)]
            rows.append((cells, style))
        keep = [k for k in range(len(cols)) if kernels or k != 1]
        for k in keep:
            col, j = cols[k]
            if k == 1:  # the kernel name folds first in a narrow console; numbers are never cut
                t.add_column(col, justify=j, overflow="fold", min_width=12)  # type: ignore[arg-type]
                continue
            width = max([len(line) for line in col.split("\n")] + [len(c[k]) for c, _ in rows])
            t.add_column(col, justify=j, no_wrap=True, min_width=width)  # type: ignore[arg-type]
        for cells, style in rows:
            t.add_row(*(cells[k] for k in keep), style=style)
        if self.accuracy is not None:
            fa = "" if self.float_accuracy is None else f", float {100 * self.float_accuracy:.2f} %"
            t.caption = f"accuracy {100 * self.accuracy:.2f} %{fa}"
        return t

    def print(self, console: Any = None, *, kernels: bool = False) -> None:
        """Print the report as a table (``rich``) to ``console`` (default: stdout)."""
        (console or Console()).print(self.table(kernels=kernels))

    def plot(self, path: str | Path | None = None, ax: Any = None) -> Any:
        """Bar chart of per-layer SNR (end to end and local) with matplotlib; saved to ``path`` if given."""
        import matplotlib  # optional dependency (pip install pymli[plot])

        if path is not None and ax is None:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(max(6, len(self.layers) * 0.8), 4))
        names = [s.name for s in self.layers]
        finite = [v for s in self.layers for v in (s.snr_db, s.snr_local_db) if math.isfinite(v)]
        # exact layers (infinite SNR) get a hatched bar just above the highest finite one
        exact_h = (max(finite) if finite else 10.0) * 1.1 + 5.0
        x = np.arange(len(names))
        for off, attr, label in ((-0.2, "snr_db", "SNR vs float (end to end)"),
                                 (0.2, "snr_local_db", "SNR of the layer alone")):
            vals = [getattr(s, attr) for s in self.layers]
            bars = ax.bar(x + off, [exact_h if v == math.inf else max(v, 0.0) for v in vals], 0.4, label=label)
            for bar, v in zip(bars, vals):
                if v == math.inf:
                    bar.set_hatch("//")
                    ax.annotate("exact", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                                va="bottom", fontsize=8)
        ax.set_ylim(0, exact_h * 1.12)
        ax.set_xticks(x, names, rotation=45, ha="right")
        ax.set_ylabel("SNR (dB)")
        ax.set_title(f"{self.network} ({self.platform})")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, fontsize=8)
        ax.figure.tight_layout()
        if path is not None:
            ax.figure.savefig(path)
        return ax


def _short_q(desc: str) -> str:
    """Compact form of :meth:`QParams.describe`: ``fx16 q12``, ``sa8 z-128 s0.0276``."""
    m = re.fullmatch(r"(\w+) zp (-?\d+), scale (\d+), sfb (-?\d+)", desc)
    if m:
        return f"{m[1].replace('_', '')} z{m[2]} s{int(m[3]) * 2.0 ** -int(m[4]):.3g}"
    return desc.replace("_", "").replace(" frac ", " q")


def _fmt_db(v: float) -> str:
    return "inf" if v == math.inf else f"{v:.1f}"


def _headroom(q: np.ndarray, qp: QParams) -> tuple[float, int | None]:
    """(fraction of values clipped at a container limit, integer bits of the format left unused).

    A value equal to the zero point is exact even where the zero point is a container limit
    (SA8 after ReLU), so only limits away from the zero point count as saturation.
    """
    v = np.asarray(q, np.int64)
    if not v.size:
        return 0.0, None
    zp = int(qp.zero_point) if qp.el_type.is_sa and qp.dim < 0 else 0
    at_max = (v == qp.qmax) if qp.qmax != zp else np.zeros(v.shape, bool)
    at_min = (v == qp.qmin) if qp.qmin != zp else np.zeros(v.shape, bool)
    sat = float(np.mean(at_max | at_min))
    free = qp.bits - 1
    for peak, lim in ((int(np.max(v - zp)), qp.qmax - zp), (int(np.max(zp - v)), zp - qp.qmin)):
        if peak > 0:
            free = min(free, math.floor(math.log2(lim / peak)) if lim > 0 else 0)
    return sat, max(free, 0)


def compare(qnet: Network, x: np.ndarray, labels: np.ndarray | None = None, *, result: RunResult | None = None,
            reference: str = "float", platform: Any = None, progress: Callable[[int], None] | None = None,
            guard_bits: dict[str, int] | None = None) -> Report:
    """Run ``qnet`` on MLI kernels and in float64 and compare every layer.

    Args:
        qnet: a quantised network.
        x: inputs (float, or quantised integers).
        labels: class labels for the accuracy (optional).
        result: a previous :meth:`Network.run` result on ``x`` with every intermediate captured.
        reference: ``"float"``: the float constants the network was quantised from when known (else the
            dequantised constants); ``"dequantized"``: always the dequantised constants.
        platform: platform for the MLI run.
        progress: progress callback passed to :meth:`Network.run`.
        guard_bits: override of the accumulator guard bits per operand pair (keys ``sa8_sa8``,
            ``fx16_fx16``, ``fx16_fx8``), e.g. :data:`ARC_GUARD_BITS`; default: the current platform's.

    Returns:
        The per-layer :class:`Report`.

    Raises:
        MliError: BAD_FUNC_CFG for a non-network, an unknown ``reference`` (any case) or a ``result``
            without every intermediate; SHAPE_MISMATCH for labels that are not one integer per
            sample; what :meth:`Network.run` raises for ``x``.
    """
    what = "compare"
    if not isinstance(qnet, Network):
        raise MliError(Status.BAD_FUNC_CFG, f"{what}: {type(qnet).__name__} is not a pymli.models.Network")
    reference = args.choice(reference, {"float": "float", "dequantized": "dequantized"}, "reference", what=what)
    if result is not None and not isinstance(result, RunResult):
        raise MliError(Status.BAD_FUNC_CFG, f"{what}: result = {type(result).__name__}: a RunResult or None expected")
    if result is None:
        result = qnet.run(x, capture=True, platform=platform, progress=progress)
    missing = [n for n in ("input", *(la.name for la in qnet.layers)) if n not in result.values]
    if missing:
        raise MliError(Status.BAD_FUNC_CFG, f"compare needs a run with every intermediate captured; missing {missing}")
    original = reference == "float"
    xf = qnet._as_batch(x)[0]
    if labels is not None:
        lab = np.asarray(labels)
        if lab.dtype.kind not in "iu" or lab.shape != (xf.shape[0],):
            raise MliError(Status.SHAPE_MISMATCH, f"{what}: labels of dtype {lab.dtype}, shape {lab.shape}: one "
                                                  f"integer per sample ({xf.shape[0]}) expected")
    if xf.dtype.kind != "f":
        xf = qnet.input_q.dequantize(xf, batch=True)  # type: ignore[union-attr]
    ref = qnet.run_float(xf, original=original)
    fns = qnet.function_names()
    rows = []
    for la in qnet.layers:
        qp = result.qparams[la.name]
        out = qp.dequantize(result[la.name], batch=True)
        in_q = [result.qparams[i] for i in la.inputs]
        in_vals = [result[i] for i in la.inputs]
        deq_in = [q.dequantize(v, batch=True) for q, v in zip(in_q, in_vals)]
        local = la.forward_float(deq_in, original)
        sat, head = _headroom(result[la.name], qp)
        st = LayerStats(la.name, la.kind, fns[la.name], qp.describe(), snr_db(ref[la.name], out),
                        snr_db(local, out), float(np.max(np.abs(out - ref[la.name]))),
                        float(np.max(np.abs(ref[la.name]))), sat, head)
        macs = la.mac_count([tuple(np.asarray(v).shape[1:]) for v in in_vals])
        w_const = getattr(la, "weights", None) or getattr(la, "weights_in", None)
        if macs is not None and w_const is not None and w_const.qp is not None:
            w_el = w_const.qp.el_type
            in_el = in_q[0].el_type
            st.macs = macs
            st.guard_needed = math.ceil(math.log2(st.macs + 1))
            key = _guard_key(in_el, w_el)
            st.guard_available = (guard_bits or {}).get(key, None)
            if st.guard_available is None:
                st.guard_available = accu_guard_bits(in_el, w_el)
            st.acc_bits = st.guard_available + in_el.bits + w_el.bits - 1   # value bits, sign excluded
            acc_fn = getattr(la, "accumulator", None)
            acc = acc_fn(in_vals[0], in_q[0]) if acc_fn is not None else None
            if acc is not None:
                peak = float(np.max(np.abs(acc))) if acc.size else 0.0
                st.acc_peak_bits = math.ceil(math.log2(peak + 1)) if peak > 0 else 0
                st.acc_headroom_bits = st.acc_bits - st.acc_peak_bits
        rows.append(st)
    acc_q = acc_f = None
    if labels is not None:
        labels = np.asarray(labels)
        acc_q = float(np.mean(result.predictions() == labels))
        acc_f = float(np.mean(qnet.float_predictions(ref) == labels))
    return Report(qnet.name, result.platform.name, int(result.output.shape[0]), rows, acc_q, acc_f,
                  "float constants" if original else "dequantised constants")

"""The report of :func:`pymli.eval.evaluate`: accuracy, top-5, confusion matrix, throughput, per-layer figures.

Everything except the timing (``seconds``, ``throughput``) is computed from integer sums over the
chunks, so it is identical for any number of workers, chunk size or scheduler.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

# the report records (top_k_hits and peak_bits are helpers of pymli.eval.runner)
__all__ = ["LayerEval", "AgainstEval", "EvalReport"]

#: largest confusion matrix printed as a table
MAX_TABLE_CLASSES = 20


@dataclasses.dataclass(frozen=True)
class LayerEval:
    """Per-layer figures over the whole dataset.

    Attributes:
        name, kind, function: the layer, its kind and the MLI function it calls.
        saturated: share of output values at a container limit (limits equal to the zero point excepted).
        elements: output values counted.
        acc_bits: accumulator value bits (guard bits + operand value bits), MAC layers only.
        acc_peak_bits: bits of the largest ``|accumulator|`` seen.
        acc_headroom_min: ``acc_bits - acc_peak_bits``: the smallest headroom over the dataset (negative: overflow).
    """

    name: str
    kind: str
    function: str
    saturated: float
    elements: int
    acc_bits: int | None
    acc_peak_bits: int | None
    acc_headroom_min: int | None


@dataclasses.dataclass(frozen=True)
class AgainstEval:
    """Comparison with a reference run (``--against``).

    Attributes:
        reference: ``"float"`` (the float64 twin) or ``"tflm"`` (TFLite Micro).
        differing: share of samples whose predicted class differs.
        max_lsb, mean_lsb: largest and mean absolute difference of the quantised output, in LSB (None
            where the output holds class offsets).
    """

    reference: str
    differing: float
    max_lsb: int | None
    mean_lsb: float | None


def top_k_hits(scores: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Whether each label is among the ``k`` best scores, ranking ties as MLI's arg-max (higher index first).

    Args:
        scores: ``[n, classes]`` (any numeric dtype).
        labels: int ``[n]``.
        k: how many best classes count.

    Returns:
        bool ``[n]``; with ``k = 1`` it equals ``mli_argmax(scores) == labels``.
    """
    s = np.asarray(scores)
    y = np.asarray(labels, np.int64)
    ok = (y >= 0) & (y < s.shape[1])
    yc = np.where(ok, y, 0)
    own = s[np.arange(s.shape[0]), yc][:, None]
    idx = np.arange(s.shape[1])[None, :]
    better = (s > own) | ((s == own) & (idx > yc[:, None]))
    return ok & (better.sum(axis=1) < k)


@dataclasses.dataclass
class EvalReport:
    """Result of :func:`pymli.eval.evaluate`.

    Attributes:
        model, data: labels of the model and the dataset.
        platform: the MLI platform preset of the run.
        samples: samples evaluated (fewer than ``total`` after an interruption).
        total: samples planned.
        seconds: wall time of the samples computed in this run.
        computed: samples computed in this run (the others came from ``--resume`` chunks).
        workers, backend: parallelism used (``"inline"``, ``"processes"``, ``"dask"``).
        accuracy, top5: with labels (top-5 only with more than 5 classes and score outputs).
        confusion: int64 ``[classes, classes]`` (rows: label, columns: prediction), with labels.
        classes: class names when the data came from class folders.
        layers: per-layer figures.
        against: comparison with a reference, or None.
        outputs, pred: every evaluated sample's raw output and class, in dataset order.
        done: the evaluated ``(start, stop)`` ranges, in order.
        interrupted: the run was stopped (Ctrl-C) before the end.
    """

    model: str
    data: str
    platform: str
    samples: int
    total: int
    seconds: float
    computed: int
    workers: int
    backend: str
    accuracy: float | None
    top5: float | None
    confusion: np.ndarray | None
    classes: tuple[str, ...]
    layers: list[LayerEval]
    against: AgainstEval | None
    outputs: np.ndarray = dataclasses.field(repr=False)
    pred: np.ndarray = dataclasses.field(repr=False)
    done: list[tuple[int, int]] = dataclasses.field(default_factory=list, repr=False)
    interrupted: bool = False

    @property
    def throughput(self) -> float:
        """Samples per second computed in this run."""
        return self.computed / self.seconds if self.seconds > 0 else 0.0

    def layer(self, name: str) -> LayerEval:
        """The figures of layer ``name``.

        Args:
            name: the layer name.

        Returns:
            Its :class:`LayerEval`.

        Raises:
            KeyError: no such layer (or the run had ``layers=False``).
        """
        for la in self.layers:
            if la.name == name:
                return la
        raise KeyError(name)

    # ------------------------------------------------------------------ output
    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON-able values (no per-sample arrays).

        Returns:
            A dict with ``samples``, ``accuracy``, ``top5``, ``throughput``, ``layers``, ``confusion``,
            ``against`` and the run's settings.
        """
        return {
            "model": self.model, "data": self.data, "platform": self.platform,
            "samples": self.samples, "total": self.total, "interrupted": self.interrupted,
            "accuracy": self.accuracy, "top5": self.top5,
            "throughput": self.throughput, "seconds": self.seconds, "computed": self.computed,
            "workers": self.workers, "backend": self.backend,
            "confusion": None if self.confusion is None else self.confusion.tolist(),
            "classes": list(self.classes),
            "layers": [dataclasses.asdict(la) for la in self.layers],
            "against": None if self.against is None else dataclasses.asdict(self.against),
        }

    def to_json(self, path: str | Path | None = None, **kw: Any) -> str:
        """JSON text of :meth:`to_dict`; written to ``path`` if given.

        Args:
            path: a file to write, or None.
            **kw: :func:`json.dumps` options (``indent`` defaults to 2).

        Returns:
            The JSON text.
        """
        text = json.dumps(self.to_dict(), indent=kw.pop("indent", 2), **kw)
        if path is not None:
            Path(path).write_text(text)
        return text

    def summary_lines(self) -> list[str]:
        """The headline figures, one per line.

        Returns:
            Lines of plain text (samples, throughput, accuracy, comparison).
        """
        lines = [f"{self.model} on {self.data}: {self.samples} of {self.total} samples, platform {self.platform}"
                 + (" (interrupted)" if self.interrupted else "")]
        lines.append(f"throughput {self.throughput:.1f} samples/s ({self.computed} computed in {self.seconds:.1f} s, "
                     f"{self.workers} worker{'s' if self.workers != 1 else ''}, {self.backend})")
        if self.accuracy is not None:
            top = "" if self.top5 is None else f", top-5 {100 * self.top5:.2f} %"
            lines.append(f"accuracy {100 * self.accuracy:.2f} %{top}")
        if self.against is not None:
            a = self.against
            lsb = "" if a.max_lsb is None else f"; output difference max {a.max_lsb} LSB, mean {a.mean_lsb:.4f} LSB"
            lines.append(f"against {a.reference}: {100 * a.differing:.2f} % of predictions differ{lsb}")
        return lines

    def layer_table(self) -> Any:
        """A rich Table: per layer, saturated share and accumulator headroom minimum.

        Returns:
            The :class:`rich.table.Table`.
        """
        t = Table(title="per layer over the dataset")
        for col, j in (("layer", "left"), ("MLI function", "left"), ("saturated %", "right"),
                       ("acc bits", "right"), ("peak bits", "right"), ("headroom min", "right")):
            t.add_column(col, justify=j, overflow="fold")  # type: ignore[arg-type]
        for la in self.layers:
            style = "red" if la.acc_headroom_min is not None and la.acc_headroom_min < 0 else None
            t.add_row(la.name, la.function.removeprefix("mli_krn_"), f"{100 * la.saturated:.3f}",
                      _s(la.acc_bits), _s(la.acc_peak_bits), _s(la.acc_headroom_min), style=style)
        return t

    def confusion_table(self) -> Any:
        """A rich Table of the confusion matrix.

        Returns:
            The :class:`rich.table.Table`, or None without labels or with more than 20 classes.
        """
        if self.confusion is None or self.confusion.shape[0] > MAX_TABLE_CLASSES:
            return None
        names = self._class_names()
        t = Table(title="confusion (rows: label, columns: prediction)")
        t.add_column("")
        for n in names:
            t.add_column(n, justify="right")
        for i, row in enumerate(self.confusion):
            t.add_row(names[i], *(f"[bold]{v}[/bold]" if i == j else ("" if v == 0 else str(v))
                                  for j, v in enumerate(row)))
        return t

    def print(self, console: Any = None) -> None:
        """Print the summary, the confusion matrix (up to 20 classes) and the layer table with rich.

        Args:
            console: a :class:`rich.console.Console` (a new one by default).
        """
        con = console or Console()
        for line in self.summary_lines():
            con.print(escape(line))
        ct = self.confusion_table()
        if ct is not None:
            con.print(ct)
        elif self.confusion is not None:
            con.print(f"confusion matrix: {self.confusion.shape[0]} classes (see --plot or --json)")
        if self.layers:
            con.print(self.layer_table())

    def _class_names(self) -> list[str]:
        assert self.confusion is not None
        k = self.confusion.shape[0]
        return [self.classes[i] if i < len(self.classes) else str(i) for i in range(k)]

    def plot(self, directory: str | Path) -> list[Path]:
        """Save ``confusion.png`` (with labels) and ``layers.png`` (saturation and headroom) with matplotlib.

        Args:
            directory: where to write the pictures (created if needed).

        Returns:
            the written files.

        Raises:
            ImportError: matplotlib is not installed (the ``plot`` extra).
        """
        import matplotlib  # optional dependency (the ``plot`` extra): imported when plotting

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # after use("Agg"): the backend is chosen before pyplot loads

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        written = []
        if self.confusion is not None:
            k = self.confusion.shape[0]
            fig, ax = plt.subplots(figsize=(max(4.0, 0.45 * k + 2), max(3.5, 0.45 * k + 1.5)))
            im = ax.imshow(self.confusion, cmap="Blues")
            fig.colorbar(im, ax=ax)
            names = self._class_names()
            if k <= 40:
                ax.set_xticks(range(k), names, rotation=90 if k > 10 else 0)
                ax.set_yticks(range(k), names)
                if k <= MAX_TABLE_CLASSES:
                    for i in range(k):
                        for j in range(k):
                            if self.confusion[i, j]:
                                ax.text(j, i, str(self.confusion[i, j]), ha="center", va="center", fontsize=7)
            ax.set_xlabel("prediction")
            ax.set_ylabel("label")
            acc = "" if self.accuracy is None else f", accuracy {100 * self.accuracy:.2f} %"
            ax.set_title(f"{self.model} ({self.platform}){acc}")
            written.append(_save(plt, fig, d / "confusion.png"))
        if self.layers:
            fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(self.layers)), 4))
            x = np.arange(len(self.layers))
            ax.bar(x, [100 * la.saturated for la in self.layers], color="tab:red")
            ax.set_ylabel("saturated outputs (%)")
            ax.set_xticks(x, [la.name for la in self.layers], rotation=45, ha="right")
            ax2 = ax.twinx()
            head = [np.nan if la.acc_headroom_min is None else la.acc_headroom_min for la in self.layers]
            ax2.plot(x, head, "o", color="tab:blue")
            ax2.set_ylabel("accumulator headroom min (bits)")
            ax.set_title(f"{self.model}: per layer over {self.samples} samples")
            written.append(_save(plt, fig, d / "layers.png"))
        return written


def _save(plt: Any, fig: Any, path: Path) -> Path:
    """Lay out, write and close a matplotlib figure; return its path."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _s(v: int | None) -> str:
    return "" if v is None else str(v)


def peak_bits(peak: int) -> int | None:
    """Bits of an accumulator peak (as :func:`pymli.models.report.compare`: ``ceil(log2(peak + 1))``).

    Args:
        peak: the largest ``|accumulator|``, or -1 when none was seen.

    Returns:
        The bits, or None for -1.
    """
    if peak < 0:
        return None
    return int(peak).bit_length()  # == ceil(log2(peak + 1)), exactly

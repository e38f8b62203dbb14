"""``pymli demo``: the digits CNN quantised three ways and run through pymli's MLI kernels.

Needs NumPy and rich only (the 8x8 digits ship in ``pymli/data``); ``--plot`` needs matplotlib.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..config import get_platform, platform_named
from .digits import digits_network, load_split
from .network import mli_argmax
from .quantize import SCHEMES, quantize_network
from .report import ARC_GUARD_BITS, Report, compare

__all__ = ["run_demo"]


def _db(v: float) -> str:
    return "inf" if v == math.inf else f"{v:.1f}"


def run_demo(console: Any = None, *, samples: int | None = None, calib: int = 500, platform: str | None = None,
             json_path: str | Path | None = None, plot_path: str | Path | None = None,
             save_dir: str | Path | None = None) -> dict[str, Report]:
    """Quantise the digits CNN for fx16, fx16_fx8_fx8 and sa8, run the test split on MLI kernels, report.

    Args:
        console: rich Console to print to (a new one by default).
        samples: number of test images (default: the whole test split, 360).
        calib: number of training images used for calibration.
        platform: platform preset name (``vpx``, ``em``, ...); default: the current platform.
        json_path: write the three reports as JSON there.
        plot_path: save a matplotlib chart of per-layer SNR there.
        save_dir: save the three quantised networks there (``digits_<scheme>.npz``, :meth:`Network.save`)
            with the test digits run (``digits_test.npz``: ``x`` float ``[N, 8, 8, 1]``, ``y`` int64 labels).

    Returns:
        scheme -> :class:`Report`.
    """
    con = console or Console()
    plat = platform_named(platform) if platform else get_platform()
    t0 = time.perf_counter()
    xtr, xte, _, yte = load_split()
    if samples is not None:
        xte, yte = xte[:samples], yte[:samples]
    net = digits_network()
    ref = net.run_float(xte, original=True)
    float_acc = float(np.mean(mli_argmax(ref[net.output_name]) == yte))
    con.print(f"[bold]pymli demo[/bold]: {net.name}, {len(xte)} test digits (8x8, UCI optdigits), "
              f"float64 accuracy {100 * float_acc:.2f} %, platform {plat.name}")

    reports: dict[str, Report] = {}
    qnets = {s: quantize_network(net, xtr[:calib], s) for s in SCHEMES}
    with Progress(TextColumn("{task.description:<14}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=con, transient=False) as prog:
        for s in SCHEMES:
            task = prog.add_task(s, total=len(xte))
            res = qnets[s].run(xte, platform=plat, progress=lambda n, t=task: prog.advance(t, n))
            # Headroom against the device's accumulators (ARC: 40-bit fx16, 32-bit sa8 and fx16 x fx8),
            # not the x86 emulation's int64 one.
            reports[s] = compare(qnets[s], xte, yte, result=res, platform=plat, guard_bits=ARC_GUARD_BITS)

    acc = Table(title="Accuracy on the test split")
    for c in ("build", "MLI accuracy", "float accuracy", "output SNR dB", "max output error"):
        acc.add_column(c, justify="right" if c != "build" else "left")
    for s, r in reports.items():
        last = r.layers[-1]
        acc.add_row(s, f"{100 * (r.accuracy or 0):.2f} %", f"{100 * float_acc:.2f} %", _db(last.snr_db),
                    f"{last.max_err:.3g}")
    con.print(acc)

    t = Table(title="Per layer: SNR vs float (dB) | unused bits of the output format | accumulator free bits")
    t.add_column("layer")
    for s in SCHEMES:
        t.add_column(f"{s} SNR", justify="right")
    for s in SCHEMES:
        t.add_column(f"{s} free / acc", justify="right")
    for i, la in enumerate(net.layers):
        cells = [la.name]
        cells += [_db(reports[s].layers[i].snr_db) for s in SCHEMES]
        for s in SCHEMES:
            st = reports[s].layers[i]
            accs = "" if st.acc_headroom_bits is None else f" / {st.acc_headroom_bits}"
            cells.append(f"{st.headroom_bits}{accs}")
        t.add_row(*cells)
    con.print(t)
    con.print("[dim]guard bits on ARC accumulators (needed worst case / available): " + ", ".join(
        f"{s}: " + " ".join(f"{st.name} {st.guard_needed}/{st.guard_available}" for st in reports[s].layers
                            if st.guard_needed is not None) for s in SCHEMES) + "[/dim]")
    if save_dir is not None:
        folder = Path(save_dir)
        folder.mkdir(parents=True, exist_ok=True)
        for s, q in qnets.items():
            q.save(folder / f"digits_{s}.npz")
        np.savez(folder / "digits_test.npz", x=xte, y=np.asarray(yte, np.int64))
        con.print(f"networks and test digits saved in {folder}: " + ", ".join(
            [*(f"digits_{s}.npz" for s in qnets), "digits_test.npz"]))
    if json_path is not None:
        Path(json_path).write_text(json.dumps({s: r.to_dict() for s, r in reports.items()}, indent=2))
        con.print(f"JSON report written to {json_path}")
    if plot_path is not None:
        _plot(reports, plot_path)
        con.print(f"plot written to {plot_path}")
    con.print(f"[dim]{time.perf_counter() - t0:.1f} s[/dim]")
    return reports


def _plot(reports: dict[str, Report], path: str | Path) -> None:
    import matplotlib  # optional dependency (pip install pymli[plot])

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    top = 0.0
    for s, r in reports.items():
        snr = [min(st.snr_db, 150.0) for st in r.layers]
        top = max(top, *snr)
        ax.plot([st.name for st in r.layers], snr, marker="o", label=f"{s}: accuracy {100 * (r.accuracy or 0):.1f} %")
    ax.set_ylim(0, top * 1.1 + 5)
    ax.set_xlabel("layer (execution order)")
    ax.set_ylabel("SNR vs float64, end to end (dB)")
    ax.set_title("digits CNN on pymli's MLI kernels: per-layer SNR of each build")
    ax.grid(True, alpha=0.3)
    ax.legend(title="MLI build", loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)

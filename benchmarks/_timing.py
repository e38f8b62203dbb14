"""Shared timing helpers of the benchmark scripts: best-of-N wall time and table printing.

Importing this module also puts the checkout's root first on ``sys.path``, so the scripts time this
checkout's pymli whether it is installed or not.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def best_of(fn: Callable[[], object], repeat: int = 10, warmup: int = 1) -> float:
    """Best wall time of ``repeat`` calls of ``fn`` in seconds (time.perf_counter), after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(max(repeat, 1)):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


@dataclass
class Row:
    """One timed case: seconds per call, MACs per call where meaningful, a derived figure, the target."""

    name: str
    seconds: float
    macs: int | None = None
    extra: str = ""
    target: str = ""

    @property
    def mac_rate(self) -> str:
        return "" if not self.macs else f"{self.macs / self.seconds / 1e9:.2f} G"


def fmt_time(seconds: float) -> str:
    """A time per call in the unit that reads best (us below 1 ms, s from 1 s)."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds:.3f} s"


def print_table(rows: Iterable[Row], title: str = "", group: Callable[[Row], str] | None = None) -> None:
    """Print rows as an aligned table: case, time per call, MAC/s, derived figure, target."""
    rows = list(rows)
    if title:
        print(title)
    head = ["case", "time/call", "MAC/s", "", "target [C x86 -O2]"]
    cells = [[(group(r) + ": " if group else "") + r.name, fmt_time(r.seconds), r.mac_rate, r.extra, r.target]
             for r in rows]
    widths = [max(len(c[i]) for c in [head, *cells]) for i in range(len(head))]
    for line in [head, *cells]:
        print("  ".join([line[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(line[1:4], widths[1:4])]
                        + [line[4]]).rstrip())


def cli(run: Callable[..., list[Row]], doc: str | None) -> None:
    """A bench script's command line: one ``--option`` per keyword of ``run()`` (same default), then the table."""
    ap = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    for name, p in inspect.signature(run).parameters.items():
        if isinstance(p.default, bool):
            ap.add_argument(f"--{name}", action=argparse.BooleanOptionalAction, default=p.default)
        else:
            ap.add_argument(f"--{name}", type=type(p.default), default=p.default)
    print_table(run(**vars(ap.parse_args())))

"""Run every benchmarks/bench_*.py and print one summary table (time per call, MAC/s where meaningful).

Run: ``python benchmarks/run_all.py [--quick] [--rounds K] [--only conv,pool]``. Each script's
``run()`` returns its rows; ``--quick`` takes fewer repeats (and fewer CIFAR-10 images) for a fast
look; ``--rounds K`` runs every script K times and keeps each case's best time.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

from _timing import Row, print_table

HERE = Path(__file__).resolve().parent
# keyword arguments of each script's run(): (full run, --quick)
ARGS: dict[str, tuple[dict, dict]] = {
    "conv": ({}, {"repeat": 5}),
    "pool": ({}, {"repeat": 10}),
    "act": ({}, {"repeat": 3}),
    "lut": ({}, {"repeat": 3}),
    "mov": ({}, {"repeat": 5}),
    "helpers": ({}, {"repeat": 5}),
    "rnn": ({}, {"repeat": 2}),
    "models": ({"repeat": 2, "images": 20, "demo": False}, {"repeat": 1, "images": 5, "demo": False}),
    "tflite": ({}, {"repeat": 2}),
    "vs_c": ({}, {"repeat": 3}),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats: a rough look, not figures to quote")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run each script this many times and keep each case's best (a busy machine's noise)")
    ap.add_argument("--only", default="", help="comma-separated script names without bench_ (conv,pool,...)")
    ns = ap.parse_args()
    names = sorted(p.stem[len("bench_"):] for p in HERE.glob("bench_*.py"))
    if ns.only:
        names = [n for n in names if n in ns.only.split(",")]
    rows: list[Row] = []
    group: dict[int, str] = {}
    t0 = time.perf_counter()
    for name in names:
        kwargs = ARGS.get(name, ({}, {}))[1 if ns.quick else 0]
        print(f"running bench_{name} {kwargs or ''}", file=sys.stderr, flush=True)
        run = importlib.import_module(f"bench_{name}").run
        got = run(**kwargs)
        for _ in range(ns.rounds - 1):
            for row, again in zip(got, run(**kwargs)):
                if again.seconds < row.seconds:
                    row.seconds, row.extra = again.seconds, again.extra
        group.update({id(r): name for r in got})
        rows += got
    print_table(rows, group=lambda r: group[id(r)])
    print(f"({len(rows)} cases from {len(names)} scripts x {ns.rounds} round(s) in {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()

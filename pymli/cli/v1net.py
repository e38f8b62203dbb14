"""``pymli v1net``: MLI 1.0's CIFAR-10 or HAR example as a network on :mod:`pymli.v1`, with its SNR report."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console

from ..models.v1net import load_v1_pack, v1_report
from ..testing.paths import shared_dir
from ..v1.config import PRESETS_V1
from ._common import check_out_path, positive

__all__ = ["v1net"]

_EXAMPLES = {"cifar10": "cifar10", "har": "har_smartphone"}
_DEPTHS = ("fx16", "fx8", "fx8w16d")


@click.command(name="v1net")
@click.argument("example", type=click.Choice(sorted(_EXAMPLES), case_sensitive=False))
@click.option("--depth", type=click.Choice([*_DEPTHS, "all"], case_sensitive=False), default="all",
              help="Bit depth of the example build (default: all three).")
@click.option("--samples", type=int, default=None, callback=positive,
              help="Test vectors to run (default: all; HAR takes about a second per vector).")
@click.option("--platform", type=click.Choice(sorted(PRESETS_V1), case_sensitive=False), default="conv",
              help="MLI 1.0 build: conv (the examples' build, default), up, convchk, upchk.")
@click.option("--packs", "packs_dir", type=click.Path(file_okay=False), default=None,
              help="The models_v1 folder (default: $PYMLI_SHARED/models_v1 or ../shared/models_v1).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, callback=check_out_path,
              help="Write the reports as JSON.")
def v1net(example: str, depth: str, samples: int | None, platform: str, packs_dir: str | None,
          json_path: str | None) -> None:
    """Run MLI 1.0's EXAMPLE (cifar10 or har) as a pymli.v1 network; per-layer SNR vs float, equality with C."""
    root = Path(packs_dir) if packs_dir else shared_dir() / "models_v1"
    folder = root / _EXAMPLES[example.lower()]
    if not folder.is_dir():
        raise click.BadParameter(f"{folder} does not exist (expected the models_v1 packs of MLI 1.0's examples)",
                                 param_hint="'--packs'")
    con = Console(width=max(Console().width, 150))
    reports = {}
    for d in (_DEPTHS if depth.lower() == "all" else (depth.lower(),)):
        pack = load_v1_pack(folder / d)
        n = pack.inputs.shape[0] if samples is None else min(samples, pack.inputs.shape[0])
        res = pack.network.run(pack.inputs[:n], platform=PRESETS_V1[platform.lower()])
        rep = v1_report(pack, n, result=res)
        rep.print(con, kernels=True)
        exact = "yes" if rep.bit_exact else "NO"
        con.print(f"{pack.network.name}: {n} vectors, classes {res.predictions().tolist()[:12]}"
                  f"{' ...' if n > 12 else ''}; every tensor equal to the MLI 1.0 recording: {exact}; "
                  f"C printed: {pack.reference_lines['accuracy']}  {pack.reference_lines['hardcoded_vector']}")
        reports[d] = rep.to_dict()
    if json_path:
        Path(json_path).write_text(json.dumps(reports, indent=2))
        con.print(f"saved {json_path}")

"""Runs one offloaded operator of a golden model through the package's arc_mli preparation
(:func:`pymli.tflite.tflm_model.prepare_offload` / :func:`run_offload`), with arc_mli's intended
parameters (``fix=True``) or the device build's defects (``fix=False``)."""

from __future__ import annotations

import numpy as np

from pymli import use_platform
from pymli.tflite.tflm_model import prepare_offload, resolve_platform, run_offload
from pymli.tflite.tgraph import TGraph, TOp


def run_offloaded(g: TGraph, op: TOp, ins: list, *, fix: bool, platform: str) -> np.ndarray:
    call = prepare_offload(g, op, fix=fix)
    with use_platform(resolve_platform(platform)):
        return run_offload(call, g, op, ins)

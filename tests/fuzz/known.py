"""Known failures of the fuzz properties today, one entry per (function, misuse class) or probe.

Each entry becomes ``pytest.mark.xfail(strict=True, reason=...)``; the ids (``Fnn``) are those of the
findings table (``docs/fuzz_findings.md``). When a fix lands the test XPASSes, which a
strict xfail reports as a failure: remove the entry then. ``KNOWN`` was generated from a CI-profile
run (derandomised: the same examples every run) and lists the first failing example per test.
"""

from __future__ import annotations

__all__ = ["KNOWN", "KNOWN_ORDER_DEPENDENT", "KNOWN_PINNED", "KNOWN_VIEW", "KNOWN_OPS", "KNOWN_QUANT", "KNOWN_TFLITE", "KNOWN_RESOURCES", "KNOWN_HISTORY"]

# fmt: off
#: failures whose appearance depends on the calls the same process made before (the CI examples draw
#: them under pytest-xdist but not in one process): marked xfail without strict; they are findings too.
KNOWN_ORDER_DEPENDENT: dict[tuple[str, str], str] = {
    # (the F06 group_conv2d k3x3 example is fixed by the entry normaliser, pymli.checks.entry)
}

KNOWN: dict[tuple[str, str], str] = {
    # F01-F12 are fixed by the entry normaliser every capi function runs first (pymli.checks.entry);
    # see docs/fuzz_findings.md for what each misuse now returns.
}

KNOWN_OPS: dict[str, str] = {
    # test_op runs with a fixed @seed: the same draws in every environment (CI=true or not, xdist or not).
    # F18 (20 of 35 ops let TypeError / ValueError / ZeroDivisionError / IndexError escape) is fixed:
    # the ops validate their arguments through pymli.graph.args first.
}

KNOWN_QUANT: dict[str, str] = {
    # F19 (quantize of empty data, unknown el_type names, plain ValueError) and F20 (dequantize of
    # invalid structs) are fixed: quant.py checks every argument and struct field it reads first.
}

KNOWN_TFLITE: dict[str, str] = {
    # F15 (huge dilation), F16 (int8 zero point 1000) and F17 (load(None / int / list / ndarray)) are fixed:
    # pymli.tflite.limits refuses them at load for both mappings.
}

KNOWN_RESOURCES: dict[str, str] = {
    # The pymli.ops probes (conv2d / sa8 padding, transpose stride, pad2d, pool padding, argmax topk,
    # move padding) are fixed: the ops refuse an output over the memory budget with NOT_ENGH_MEM before
    # allocating; Tensor.zeros checks the budget too (F14).
}

KNOWN_HISTORY: dict[str, str] = {
    # F21 (the CheckCache key lacked a rank-0 operand's value) is fixed: checks.tensor.struct_key covers it.
}
KNOWN_PINNED: dict[str, str] = {
    # F11 (permute writing then raising) and F12 (rank 2**64-1 hang) are refused on entry (BAD_TENSOR).
}
KNOWN_VIEW: dict[tuple[str, str, str], str] = {
    # F01/F02 fixed: views are read through their strides and outputs written back through the view.
}
# fmt: on

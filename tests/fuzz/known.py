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
    'activation_lut': 'F18: KeyError: () for a kind that is not a string',
    'add': "F18: TypeError: 'int' object is not iterable (quant not a dict)",
    'argmax': "F18: TypeError: '<=' not supported between 'int' and 'NoneType' (topk=None)",
    'avepool': "F18: TypeError: int() argument must be ... not 'NoneType' (kernel/stride None)",
    'conv_output_size': 'F18: ZeroDivisionError for stride 0',
    'fully_connected': 'F18: IndexError: list index out of range',
    'maxpool': "F18: TypeError: int() argument must be ... not 'NoneType' (kernel/stride None)",
    'move_tensor': "F18: TypeError: 'int' object is not iterable (offset)",
    'mul': 'F18: ValueError: operands could not be broadcast together (shape mismatch)',
    'pad2d': "F18: TypeError: 'NoneType' object is not iterable (padding None)",
    'permute': "F18: TypeError: 'int' object is not iterable (perm)",
    'prelu': "F18: TypeError: '<' not supported between 'list' and 'int' (slope as a list)",
    'same_padding': 'F18: ZeroDivisionError for stride 0',
    'slice_tensor': "F18: TypeError: 'int' object is not iterable",
    'sub': 'F18: ValueError: operands could not be broadcast together (shape mismatch)',
    'subsample': "F18: TypeError: 'numpy.int64' object is not iterable",
    'transpose': "F18: TypeError: 'int' object is not iterable",
}

KNOWN_QUANT: dict[str, str] = {
    'quantize': 'F19: empty array -> a tensor of shape [0] that Tensor.numpy() refuses (BAD_TENSOR) instead of refusing at quantize',
    'choose_fx_frac_bits': "F19: KeyError: 'sa8' for an unknown el_type name",
    'choose_sa_params': 'F19: plain ValueError (not MliError) for an FX el_type',
    'dequantize-field': 'F20: IndexError: tuple index out of range (per-axis dim >= rank)',
    'dequantize-fieldtype': "F20: ValueError: invalid literal for int() (scale = 'x')",
}

KNOWN_TFLITE: dict[str, str] = {
    # F15 (huge dilation), F16 (int8 zero point 1000) and F17 (load(None / int / list / ndarray)) are fixed:
    # pymli.tflite.limits refuses them at load for both mappings.
}

KNOWN_RESOURCES: dict[str, str] = {
    'conv2d_padding': 'F13: MemoryError (padding 2**20 allocates before any budget check)',
    'conv2d_dilation': 'F13: ValueError: array is too big (numpy), not MliError',
    'conv2d_sa8_padding': 'F13: MemoryError',
    'transpose_conv2d_stride': 'F13: MemoryError',
    'pad2d': 'F13: MliError BAD_FUNC_CFG (refused without allocating, but not NOT_ENGH_MEM)',
    'move_pad': 'F13: MemoryError',
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

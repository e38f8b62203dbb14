"""Table lookups of 8-bit data two bytes at a time.

An element-wise function of one 8-bit value is a 256-entry table; NumPy's gather costs about the
same per index whatever the index width, so mapping the data viewed as 16-bit codes through a
65536-entry table of byte pairs does the same work with half the lookups.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PAIR_MIN", "pair_table", "take_pairs"]

PAIR_MIN = 1 << 16
"""Inputs of at least this many elements repay building a pair table (65536 entries)."""


def pair_table(table: np.ndarray) -> np.ndarray:
    """The byte-pair form of a 256-entry table of 1-byte values.

    Args:
        table: 256 one-byte values (int8 or uint8), entry ``u`` for the byte ``u``.

    Returns:
        Read-only uint16 array of 65536 entries: entry ``k`` holds ``table`` at each byte of ``k``,
        in memory order, so that gathering it with an array viewed as uint16 maps every byte
        through ``table`` (on either byte order).
    """
    pairs = table.view(np.uint8)[np.arange(1 << 16, dtype=np.uint16).view(np.uint8)].view(np.uint16)
    pairs.setflags(write=False)
    return pairs


def take_pairs(table: np.ndarray, pairs: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``table[codes]`` for 1-byte ``codes`` (any shape and strides), with half the lookups.

    Args:
        table: the 256-entry table; pairs: its :func:`pair_table`.
        codes: uint8 (or int8, read as its bytes) indices.

    Returns:
        A new array of ``codes``' shape and ``table``'s dtype.
    """
    flat = np.ascontiguousarray(codes).reshape(-1)
    even = flat.size & ~1
    out = np.empty(flat.size, dtype=table.dtype)
    np.take(pairs, flat[:even].view(np.uint16), out=out[:even].view(np.uint16))
    if even < flat.size:
        out[even:] = table[flat[even:].view(np.uint8)]
    return out.reshape(codes.shape)

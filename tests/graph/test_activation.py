"""Fused ReLU names: one table for ops, networks and TFLite."""

from __future__ import annotations

import pytest

from pymli.capi.types import ReluType
from pymli.graph.activation import TFLITE_FUSED, relu_name, relu_type


@pytest.mark.parametrize("name,want", [
    (None, ReluType.NONE), ("none", ReluType.NONE), ("gen", ReluType.GEN), ("relu", ReluType.GEN),
    ("General", ReluType.GEN), ("relu1", ReluType.RELU_1), ("relu_1", ReluType.RELU_1), ("MLI_RELU_1", ReluType.RELU_1),
    ("relu6", ReluType.RELU_6), ("relu_6", ReluType.RELU_6), ("6", ReluType.RELU_6), (3, ReluType.RELU_6),
    (ReluType.GEN, ReluType.GEN)])
def test_relu_aliases(name: object, want: ReluType) -> None:
    assert relu_type(name) is want
    assert relu_type(relu_name(name)) is want


def test_unknown_relu_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown ReLU"):
        relu_type("tanh")


def test_tflite_fused_activations_map_on_canonical_names() -> None:
    assert {relu_type(v) for v in TFLITE_FUSED.values()} == set(ReluType)
    assert all(relu_name(v) == v for v in TFLITE_FUSED.values())

"""The ``pymli.ops`` front end checks its arguments first: misuse ends in MliError with a fitting status,
names given by users are read in any letter case, and nothing is computed before the checks pass."""

from __future__ import annotations

import numpy as np
import pytest

import pymli
from pymli import ElType, MliError, Status, Tensor, ops
from pymli.graph import args


def _fx16(shape: tuple[int, ...], frac_bits: int = 4, seed: int = 0) -> Tensor:
    rng = np.random.default_rng(seed)
    return Tensor.from_numpy(rng.integers(-200, 200, size=shape), "FX_16", frac_bits=frac_bits)


X = _fx16((5, 5, 2))
W = _fx16((3, 3, 2, 2), seed=1)


def _status(fn, *a, **kw) -> Status:  # noqa: ANN001
    with pytest.raises(MliError) as e:
        fn(*a, **kw)
    return e.value.status


# ---------------------------------------------------------------------------------- misuse -> status
@pytest.mark.parametrize(("call", "status"), [
    (lambda: ops.conv2d(X, W, stride=0), Status.BAD_FUNC_CFG),
    (lambda: ops.conv2d(X, W, stride=None), Status.BAD_FUNC_CFG),
    (lambda: ops.conv2d(X, W, stride=[1, 2, 3]), Status.BAD_FUNC_CFG),
    (lambda: ops.conv2d(X, W, stride=1.5), Status.BAD_FUNC_CFG),
    (lambda: ops.conv2d(X, W, dilation=True), Status.BAD_FUNC_CFG),
    (lambda: ops.conv2d(X, W, padding="half"), Status.BAD_FUNC_CFG),
    (lambda: ops.conv2d(X, W, padding=-1), Status.BAD_FUNC_CFG),
    (lambda: ops.conv2d(X, W, padding={"a": 1}), Status.BAD_FUNC_CFG),
    (lambda: ops.conv2d(X, W, relu="relu7"), Status.BAD_FUNC_CFG),
    (lambda: ops.conv2d(X, W, relu=9), Status.BAD_FUNC_CFG),
    (lambda: ops.conv2d(X, _fx16((7, 7, 2, 2))), Status.BAD_FUNC_CFG),  # kernel larger than the input
    (lambda: ops.conv2d(X, W, dilation=300), Status.BAD_FUNC_CFG),  # beyond the uint8_t cfg field
    (lambda: ops.conv2d(X, W, padding=2**20), Status.NOT_ENGH_MEM),  # refused before allocating
    (lambda: ops.conv2d(X, W, out_quant={"frac_bits": 200}), Status.BAD_FUNC_CFG),
    (lambda: ops.conv2d(X, W, out_quant={"scale": 3}), Status.BAD_FUNC_CFG),  # an SA field for FX
    (lambda: ops.conv2d(X, W, out_quant=[np.nan]), Status.BAD_FUNC_CFG),
    (lambda: ops.conv2d(X, W, out_quant=[]), Status.BAD_FUNC_CFG),
    (lambda: ops.conv2d(X, W, out_quant="x"), Status.BAD_FUNC_CFG),
    (lambda: ops.conv2d(None, W), Status.BAD_TENSOR),
    (lambda: ops.conv2d(X.numpy(), W), Status.BAD_TENSOR),
    (lambda: ops.conv2d(_fx16((5, 5)), W), Status.SHAPE_MISMATCH),
    (lambda: ops.conv2d(X, W, _fx16((3,))), Status.SHAPE_MISMATCH),  # bias of the wrong length
    (lambda: ops.fully_connected(_fx16((7,)), _fx16((6, 3))), Status.SHAPE_MISMATCH),
    (lambda: ops.fully_connected(X, [1, 2]), Status.BAD_TENSOR),
    (lambda: ops.conv_output_size(5, 3, 0, 0, 0), Status.BAD_FUNC_CFG),
    (lambda: ops.same_padding(5, 3, 0), Status.BAD_FUNC_CFG),
    (lambda: ops.same_padding(5, "3", 1), Status.BAD_FUNC_CFG),
    (lambda: ops.maxpool(X, None), Status.BAD_FUNC_CFG),
    (lambda: ops.avepool(X, 2, stride=0), Status.BAD_FUNC_CFG),
    (lambda: ops.avepool(X, 9), Status.BAD_FUNC_CFG),
    (lambda: ops.pool_cfg((4, 4), 300), Status.BAD_FUNC_CFG),
    (lambda: ops.pool_cfg("ab", 2), Status.BAD_FUNC_CFG),
    (lambda: ops.add(X, _fx16((5, 4, 2))), Status.SHAPE_MISMATCH),  # shapes that do not broadcast in MLI
    (lambda: ops.mul(X, X, quant=5), Status.BAD_FUNC_CFG),
    (lambda: ops.add(X, X, frac_bits=1000), Status.BAD_FUNC_CFG),
    (lambda: ops.maximum(X, None), Status.BAD_TENSOR),
    (lambda: ops.permute(X, 3), Status.BAD_FUNC_CFG),
    (lambda: ops.permute(X, [0, 0, 1]), Status.BAD_FUNC_CFG),
    (lambda: ops.transpose(X, "abc"), Status.BAD_FUNC_CFG),
    (lambda: ops.slice_tensor(X, 0, [1, 1, 1]), Status.BAD_FUNC_CFG),
    (lambda: ops.subsample(X, [1, 0, 1]), Status.BAD_FUNC_CFG),
    (lambda: ops.move_tensor(X, offset=[0, 0]), Status.BAD_FUNC_CFG),
    (lambda: ops.pad2d(X, None), Status.BAD_FUNC_CFG),
    (lambda: ops.pad2d(X, [1, 1, 1, 300]), Status.BAD_FUNC_CFG),
    (lambda: ops.pad2d(X, [1, 1, 1, 1], layout="nhwc"), Status.BAD_FUNC_CFG),
    (lambda: ops.concat([], 0), Status.BAD_TENSOR),
    (lambda: ops.concat([X, X], 3), Status.BAD_FUNC_CFG),
    (lambda: ops.concat([X, "x"], 0), Status.BAD_TENSOR),
    (lambda: ops.argmax(X, topk=None), Status.BAD_FUNC_CFG),
    (lambda: ops.argmax(X, axis=[0]), Status.BAD_FUNC_CFG),
    (lambda: ops.softmax(X, axis="0"), Status.BAD_FUNC_CFG),
    (lambda: ops.softmax(X, axis=3), Status.BAD_FUNC_CFG),
    (lambda: ops.prelu(X, _fx16((2,)), axis=[1]), Status.BAD_FUNC_CFG),
    (lambda: ops.prelu(X, _fx16((2,)), axis=5), Status.BAD_FUNC_CFG),
    (lambda: ops.relu(X, kind=1.5), Status.BAD_FUNC_CFG),
    (lambda: ops.activation_lut("gelu"), Status.BAD_FUNC_CFG),
    (lambda: ops.activation_lut(()), Status.BAD_FUNC_CFG),
    (lambda: ops.gru(_fx16((3, 2)), _fx16((3, 2, 4)), _fx16((3, 4, 4)), _fx16((3, 4)), out_quant={"frac_bits": 12},
                     results="every"), Status.BAD_FUNC_CFG),
    (lambda: ops.lstm(_fx16((3, 2)), _fx16((4, 2, 4)), _fx16((4, 4, 4)), _fx16((4, 4)), out_quant=None),
     Status.BAD_FUNC_CFG),
    (lambda: ops.rnn_dense(_fx16((2,)), [_fx16((2, 3))], _fx16((3,)), out_quant={"frac_bits": 4}),
     Status.BAD_FUNC_CFG),  # inputs not a list
])
def test_misuse_status(call, status: Status) -> None:  # noqa: ANN001
    assert _status(call) == status


def test_nothing_computed_before_the_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call refused for a bad argument never reaches the kernel."""
    import pymli.ops.conv as conv

    def boom(*a, **kw):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("the kernel ran")

    monkeypatch.setattr(conv, "lookup", lambda *a, **kw: boom)
    assert _status(ops.conv2d, X, W, stride=0) == Status.BAD_FUNC_CFG


# -------------------------------------------------------------------------------------- any case
def test_names_in_any_case() -> None:
    for a, b in (("relu6", "RELU6"), ("gen", " Gen "), ("relu_1", "MLI_RELU_1")):
        assert np.array_equal(ops.relu(X, a).numpy(), ops.relu(X, b).numpy())
    assert np.array_equal(ops.conv2d(X, W, padding="same").numpy(), ops.conv2d(X, W, padding="SAME").numpy())
    assert np.array_equal(ops.pad2d(X, [1, 0, 0, 1]).numpy(), ops.pad2d(X, [1, 0, 0, 1], layout="HWC").numpy())
    assert ops.activation_lut("SIGM") is ops.activation_lut("sigm")
    x, wi, wo, b = _fx16((3, 2), 12), _fx16((3, 2, 4), 14), _fx16((3, 4, 4), 14), _fx16((3, 4), 12)
    r1 = ops.gru(x, wi, wo, b, out_quant={"frac_bits": 12}, direction="forward", results="last")
    r2 = ops.gru(x, wi, wo, b, out_quant={"frac_bits": 12}, direction="Forward", results="LAST")
    assert np.array_equal(r1.out.numpy(), r2.out.numpy())


@pytest.mark.parametrize("name", ["EM", "em", " Vpx ", "VPX_FULL_ACCU", "vpx-full-accu"])
def test_platform_names_any_case(name: str) -> None:
    with pymli.use_platform(name) as p:
        assert p.name == name.strip().lower().replace("_", "-")


@pytest.mark.parametrize("name", ["arm", "", None, 3])
def test_unknown_platform_lists_the_choices(name: object) -> None:
    for call in (pymli.set_platform, lambda n: pymli.use_platform(n).__enter__()):
        with pytest.raises(MliError) as e:
            call(name)
        assert isinstance(e.value, (ValueError, KeyError))
        assert "vpx-full-accu" in str(e.value) and "em" in str(e.value)
    assert pymli.get_platform() is pymli.VPX


# ------------------------------------------------------------------------------------- results hold
def test_valid_calls_unchanged() -> None:
    """The checks let valid calls through with the same results as before (spot checks)."""
    y = ops.conv2d(X, W, stride=(1, 2), padding=(1, 1, 0, 0), relu="gen", out_quant={"frac_bits": 3})
    assert y.shape == [5, 2, 2]
    assert ops.conv_output_size(5, 3, 2, 1, 1) == 3
    assert ops.same_padding(5, 3, 2) == (1, 1)
    assert ops.argmax(X, axis=np.int64(2), topk=np.int32(2)).shape == [2, 2]


# ------------------------------------------------------------------------------------ the helpers
def test_args_helpers() -> None:
    assert args.integer(np.int8(3), "v", what="t") == 3
    assert args.int_pair(np.array([2, 3]), "v", what="t") == (2, 3)
    assert args.choice(" Same ", {"same": 1}, "v", what="t") == 1
    for bad in (True, 2.0, "2", None, [2]):
        with pytest.raises(MliError):
            args.integer(bad, "v", what="t")
    with pytest.raises(MliError) as e:
        args.choice("x", {"a": 1, "b": 2}, "mode", what="t")
    assert "'a', 'b'" in str(e.value)
    with pytest.raises(MliError) as e:
        args.check_alloc((2**20, 2**20), ElType.FX_16, what="t")
    assert e.value.status == Status.NOT_ENGH_MEM

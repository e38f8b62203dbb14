"""The function registry: every signature picks the capi function MLI names for it."""

from __future__ import annotations

import itertools

import pytest

from pymli import capi
from pymli.errors import MliError, Status
from pymli.formats import ElType
from pymli.graph import registry as R
from pymli.graph.registry import KernelMissing, Op, entries, entry, lookup, new_lut, register, require

FX8, FX16, SA8 = ElType.FX_8, ElType.FX_16, ElType.SA_8
MAC = {(FX16, FX16): "fx16", (FX16, FX8): "fx16_fx8_fx8", (SA8, SA8): "sa8_sa8_sa32"}
ONE = {FX8: "fx8", FX16: "fx16", SA8: "sa8"}

# The C names MLI 2.0 gives each signature, written out independently of the registry.
EXPECTED: list[tuple[Op, tuple[ElType, ...], str]] = []
for (types, sfx) in MAC.items():
    EXPECTED += [(Op.CONV2D, types, f"mli_krn_conv2d_hwcn_{sfx}"),
                 (Op.DEPTHWISE_CONV2D, types, f"mli_krn_depthwise_conv2d_hwcn_{sfx}"),
                 (Op.GROUP_CONV2D, types, f"mli_krn_group_conv2d_hwcn_{sfx}"),
                 (Op.TRANSPOSE_CONV2D, types, f"mli_krn_transpose_conv2d_hwcn_{sfx}"),
                 (Op.FULLY_CONNECTED, types, f"mli_krn_fully_connected_{sfx}"),
                 (Op.RNN_DENSE, types, f"mli_krn_rnn_dense_{sfx}"),
                 (Op.LSTM_CELL, types, f"mli_krn_lstm_cell_{sfx}"),
                 (Op.GRU_CELL, types, f"mli_krn_gru_cell_{sfx}")]
EXPECTED += [(Op.FULLY_CONNECTED, (FX8, FX8), "mli_krn_fully_connected_fx8"),
             (Op.FULLY_CONNECTED_EXT_BIAS, (SA8, SA8), "mli_krn_fully_connected_sa8_sa8_sa32_ext_bias")]
for el, sfx in ONE.items():
    EXPECTED += [(Op.MAXPOOL, (el,), f"mli_krn_maxpool_hwc_{sfx}"), (Op.AVEPOOL, (el,), f"mli_krn_avepool_hwc_{sfx}"),
                 (Op.RELU, (el,), f"mli_krn_relu_{sfx}"), (Op.LEAKY_RELU, (el,), f"mli_krn_leaky_relu_{sfx}"),
                 (Op.PRELU, (el,), f"mli_krn_prelu_{sfx}"), (Op.SIGM, (el,), f"mli_krn_sigm_{sfx}"),
                 (Op.TANH, (el,), f"mli_krn_tanh_{sfx}"), (Op.SOFTMAX, (el,), f"mli_krn_softmax_{sfx}"),
                 (Op.PERMUTE, (el,), f"mli_krn_permute_{sfx}"), (Op.CONCAT, (el,), f"mli_krn_concat_{sfx}"),
                 (Op.PADDING2D_HWC, (el,), f"mli_krn_padding2d_hwc_{sfx}"),
                 (Op.PADDING2D_CHW, (el,), f"mli_krn_padding2d_chw_{sfx}")]
    for op, name in ((Op.ADD, "add"), (Op.SUB, "sub"), (Op.MUL, "mul"), (Op.MIN, "min"), (Op.MAX, "max")):
        EXPECTED.append((op, (el,), f"mli_krn_eltwise_{name}_{sfx}"))
EXPECTED += [(Op.L2_NORMALIZE, (FX16,), "mli_krn_l2_normalize_fx16"), (Op.L2_NORMALIZE, (SA8,), "mli_krn_l2_normalize_sa8"),
             (Op.ARGMAX, (FX16,), "mli_krn_argmax_fx16"), (Op.ARGMAX, (SA8,), "mli_krn_argmax_sa8")]
for lut in ("sigm", "tanh", "softmax", "l2_normalize"):
    EXPECTED += [(Op(f"{lut}_get_lut_size"), (), f"mli_krn_{lut}_get_lut_size"),
                 (Op(f"{lut}_create_lut"), (), f"mli_krn_{lut}_create_lut")]
EXPECTED += [(Op.ACCU_GUARD_BITS, (SA8, SA8), "mli_hlp_accu_guard_bits_sa8_sa8"),
             (Op.ACCU_GUARD_BITS, (FX16, FX16), "mli_hlp_accu_guard_bits_fx16_fx16"),
             (Op.ACCU_GUARD_BITS, (FX16, FX8), "mli_hlp_accu_guard_bits_fx16_fx8")]
EXPECTED += [(Op.MOV_CFG_FOR_COPY, (), "mli_mov_cfg_for_copy"), (Op.MOV_TENSOR_SYNC, (), "mli_mov_tensor_sync"),
             (Op.CONVERT, (), "mli_hlp_convert_tensor")]


@pytest.mark.parametrize("op,types,name", EXPECTED, ids=[e[2] for e in EXPECTED])
def test_lookup_picks_the_mli_function_of_the_signature(op: Op, types: tuple[ElType, ...], name: str) -> None:
    assert lookup(op, *types) is capi.FUNCTIONS[name]
    assert entry(op, *types).c_name == name


def test_the_table_holds_exactly_the_expected_signatures() -> None:
    assert {(e.op, e.types) for e in entries()} == {(op, types) for op, types, _ in EXPECTED}


def test_every_mli_kernel_is_reachable_from_the_registry() -> None:
    reachable = {e.fn for e in entries()} | {s.fn for e in entries() for s in e.specialisations}
    kernels = {fn for name, fn in capi.FUNCTIONS.items() if name.startswith("mli_krn_")}
    assert kernels - reachable == set()


SPECIALISED = [
    (Op.CONV2D, (SA8, SA8), (1, 1), None, "mli_krn_conv2d_hwcn_sa8_sa8_sa32_k1x1"),
    (Op.CONV2D, (FX16, FX8), (3, 3), (2, 2), "mli_krn_conv2d_hwcn_fx16_fx8_fx8_k3x3"),
    (Op.CONV2D, (FX16, FX16), (5, 5), None, "mli_krn_conv2d_hwcn_fx16_k5x5"),
    (Op.CONV2D, (FX16, FX16), (3, 5), None, "mli_krn_conv2d_hwcn_fx16"),
    (Op.DEPTHWISE_CONV2D, (SA8, SA8), (3, 3), None, "mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32_k3x3"),
    (Op.DEPTHWISE_CONV2D, (SA8, SA8), (1, 1), None, "mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32"),
    (Op.GROUP_CONV2D, (FX16, FX16), (5, 5), None, "mli_krn_group_conv2d_hwcn_fx16_k5x5"),
    (Op.TRANSPOSE_CONV2D, (SA8, SA8), (4, 4), (2, 2), "mli_krn_transpose_conv2d_hwcn_sa8_sa8_sa32_k4x4_str2"),
    (Op.TRANSPOSE_CONV2D, (SA8, SA8), (4, 4), (1, 1), "mli_krn_transpose_conv2d_hwcn_sa8_sa8_sa32"),
    (Op.TRANSPOSE_CONV2D, (FX16, FX16), (2, 2), (2, 2), "mli_krn_transpose_conv2d_hwcn_fx16_k2x2_str2"),
    (Op.MAXPOOL, (FX8,), (2, 2), (2, 2), "mli_krn_maxpool_hwc_fx8_k2x2"),
    (Op.AVEPOOL, (SA8,), (3, 3), (1, 1), "mli_krn_avepool_hwc_sa8_k3x3"),
    (Op.AVEPOOL, (SA8,), (4, 4), (1, 1), "mli_krn_avepool_hwc_sa8"),
]


@pytest.mark.parametrize("op,types,kernel,stride,name", SPECIALISED, ids=[s[4] for s in SPECIALISED])
def test_specialisation_chosen_by_kernel_and_stride(op: Op, types: tuple[ElType, ...], kernel: tuple[int, int],
                                                    stride: tuple[int, int] | None, name: str) -> None:
    unpadded = (0, 0, 0, 0)
    assert lookup(op, *types, kernel=kernel, stride=stride, padding=unpadded, specialise=True) is capi.FUNCTIONS[name]
    # without asking, the generic function
    assert lookup(op, *types, kernel=kernel, stride=stride) is entry(op, *types).fn


def test_every_specialisation_is_named_after_its_geometry() -> None:
    for e in entries():
        for s in e.specialisations:
            tail = f"_k{s.kernel[0]}x{s.kernel[1]}" + (f"_str{s.stride[0]}" if s.stride else "")
            assert s.fn.__name__ == e.c_name + tail


@pytest.mark.parametrize("op,types", [(Op.CONV2D, (FX8, FX8)), (Op.CONV2D, (SA8, FX8)), (Op.L2_NORMALIZE, (FX8,)),
                                      (Op.ARGMAX, (FX8,)), (Op.RELU, (ElType.SA_32,))])
def test_missing_signature_raises_kernel_missing(op: Op, types: tuple[ElType, ...]) -> None:
    with pytest.raises(KernelMissing, match=op.value):
        lookup(op, *types)
    with pytest.raises(MliError) as ei:
        require(op, *types, status=Status.NOT_SUPPORTED)
    assert ei.value.status == Status.NOT_SUPPORTED


def test_removed_capi_function_is_reported_by_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(capi.FUNCTIONS, "mli_krn_relu_sa8")
    with pytest.raises(KernelMissing, match="mli_krn_relu_sa8"):
        lookup(Op.RELU, SA8)
    assert lookup(Op.RELU, FX8) is capi.FUNCTIONS["mli_krn_relu_fx8"]


def test_registering_a_signature_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        register(Op.RELU, (SA8,), capi.FUNCTIONS["mli_krn_relu_sa8"])


@pytest.mark.parametrize("op", list(R.LUT_OPS))
def test_new_lut_has_the_size_mli_asks_for(op: Op) -> None:
    lut = new_lut(op)
    size_op, _ = R.LUT_OPS[op]
    assert lut.capacity == lookup(size_op)() and lut.length > 0


def test_suffixes_name_the_kernel_families() -> None:
    for (a, b), sfx in MAC.items():
        assert R.mac_suffix(a, b) == sfx
    for el, sfx in ONE.items():
        assert R.data_suffix(el) == sfx
    with pytest.raises(ValueError):
        R.mac_suffix(SA8, FX8)


def test_mac_signatures_cover_every_suffix_family() -> None:
    for op, (a, b) in itertools.product((Op.CONV2D, Op.FULLY_CONNECTED, Op.LSTM_CELL), MAC):
        assert entry(op, a, b).c_name.endswith(R.mac_suffix(a, b))


def test_one_by_one_specialisations_need_an_unpadded_layer() -> None:
    args = (Op.CONV2D, SA8, SA8)
    k1 = capi.FUNCTIONS["mli_krn_conv2d_hwcn_sa8_sa8_sa32_k1x1"]
    assert lookup(*args, kernel=(1, 1), stride=(1, 1), padding=(0, 0, 0, 0), specialise=True) is k1
    assert lookup(*args, kernel=(1, 1), stride=(1, 1), padding=(1, 1, 1, 1), specialise=True) is entry(*args).fn
    assert lookup(*args, kernel=(1, 1), specialise=True) is entry(*args).fn   # padding unknown: generic

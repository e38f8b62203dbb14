"""The cheap common path of ``Network.run`` and ``TflmModel.run`` (one small input): same results as the
prepared plan / the general path, same errors for bad input, plans still invalidated on reassignment."""

import numpy as np
import pytest

from pymli.config import get_platform, use_platform
from pymli.errors import MliError, Status
from pymli.models import FullyConnected, Network, QParams
from pymli.models.network import _inside, _public_values
from pymli.models.quantize import quantize_network
from pymli.tflite.errors import TfliteError, TfliteInputError
from pymli.tflite.examples import GraphMaker
from pymli.tflite.tflm_model import load_tflm

PLATFORMS = ("vpx", "em")


def three_fc(variant: str, seed: int = 0) -> Network:
    rng = np.random.default_rng(seed)
    net = Network((24,), [FullyConnected(rng.normal(0, .3, (24, 12)), rng.normal(0, .1, 12), relu="gen"),
                          FullyConnected(rng.normal(0, .3, (12, 8)), rng.normal(0, .1, 8), relu="gen"),
                          FullyConnected(rng.normal(0, .3, (8, 5)), rng.normal(0, .1, 5))])
    return quantize_network(net, rng.normal(0, 1, (32, 24)), variant)


@pytest.fixture(scope="module", params=["sa8", "fx16"])
def qnet(request: pytest.FixtureRequest) -> Network:
    return three_fc(request.param)


def samples(q: Network, n: int, seed: int) -> np.ndarray:
    """Quantised samples over the whole container, both limits included."""
    rng = np.random.default_rng(seed)
    x = rng.integers(q.input_q.qmin, q.input_q.qmax, (n, 24), endpoint=True)
    x.reshape(-1)[:2] = [q.input_q.qmin, q.input_q.qmax]
    return x.astype(q.input_q.el_type.dtype)


@pytest.mark.parametrize("plat", PLATFORMS)
@pytest.mark.parametrize("seed", range(4))
def test_one_sample_equals_plan(qnet: Network, plat: str, seed: int) -> None:
    x = samples(qnet, 1, seed)
    with use_platform(plat):
        want = qnet.prepare()(x)
    got = qnet.run(x, capture=False, platform=plat)
    assert np.array_equal(got.output, want) and got.output.dtype == want.dtype
    assert got.platform.name == plat
    with use_platform(plat):  # the platform already in force: same bits, same platform reported
        same = qnet.run(x[0], capture=False)
        assert same.platform is get_platform()
    assert np.array_equal(same.output, want)


@pytest.mark.parametrize("seed", range(3))
def test_batches_and_dtypes_agree(qnet: Network, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    x = samples(qnet, n, seed)
    whole = qnet.run(x, capture=True)
    parts = qnet.run(x, capture=True, batch=int(rng.integers(1, n)))
    wide = qnet.run(x.astype(np.int64), capture=True)  # a wider dtype: range-checked, same values
    for r in (parts, wide):
        assert set(r.values) == set(whole.values)
        for k, v in whole.values.items():
            assert np.array_equal(r.values[k], v), k
    ones = np.stack([qnet.run(x[i], capture=False).output[0] for i in range(n)])
    assert np.array_equal(ones, whole.output)


def test_platform_other_than_current(qnet: Network) -> None:
    x = samples(qnet, 3, 7)
    with use_platform("em"):
        want = qnet.prepare()(x)
    with use_platform("vpx"):
        got = qnet.run(x, capture=False, platform="em")
        assert get_platform().name == "vpx"
    assert got.platform.name == "em" and np.array_equal(got.output, want)


def test_errors_unchanged(qnet: Network) -> None:
    q = qnet.input_q
    good = samples(qnet, 1, 0)
    cases = [
        (np.zeros((1, 23), good.dtype), Status.SHAPE_MISMATCH),
        (np.zeros((0, 24), good.dtype), Status.SHAPE_MISMATCH),
        (np.zeros((1, 24), bool), Status.TYPE_MISMATCH),
        (np.full((1, 24), np.nan), Status.BAD_TENSOR),
        (np.full((1, 24), q.qmax + 1, np.int64), Status.BAD_TENSOR),
        (np.full((1, 24), q.qmin - 1, np.int32), Status.BAD_TENSOR),
    ]
    for x, status in cases:
        with pytest.raises(MliError) as e:
            qnet.run(x)
        assert e.value.status == status, (x.dtype, x.shape)
    for kw in ({"capture": 1}, {"capture": ["nope"]}, {"batch": 0}, {"batch": True}, {"batch": 2.0},
               {"progress": 3}, {"platform": "nope"}):
        with pytest.raises(MliError):
            qnet.run(good, **kw)
    seen: list[int] = []
    qnet.run(samples(qnet, 5, 1), batch=2, progress=seen.append)
    assert seen == [2, 2, 1]
    qnet.run(good, progress=seen.append)
    assert seen[-1] == 1


def test_inside() -> None:
    assert _inside(np.dtype(np.int8), -128, 127) and _inside(np.dtype(np.uint8), -128, 255)
    assert not _inside(np.dtype(np.int16), -128, 127) and not _inside(np.dtype(np.uint8), -128, 127)


def test_public_values() -> None:
    assert _public_values(("a", "_b", "c"))({"a": 1, "_b": 2, "c": 3}) == (1, 3)
    assert _public_values(("_b", "c"))({"_b": 2, "c": 3}) == (3,)
    assert _public_values(("_b",))({"_b": 2}) == ()


def test_plan_rebuilt_on_reassignment() -> None:
    q = three_fc("sa8", 3)
    x = samples(q, 2, 3)
    first = q.prepare()
    assert q.prepare() is first
    q.layers[1].relu = "none"  # a public attribute reassigned: a new plan, other bits
    second = q.prepare()
    assert second is not first
    assert np.array_equal(q.run(x, capture=False).output, second(x))
    q.layers[0]._scratch = object()  # a private attribute: not part of the plan's state
    q.layers[0].extra = 1  # a new public attribute: a new plan
    assert q.prepare() is not second


# ---------------------------------------------------------------------------------------- TflmModel

@pytest.fixture(scope="module")
def tflm():  # type: ignore[no-untyped-def]
    g = GraphMaker((24,), 0)
    g.fc(12, act="RELU").fc(8, act="RELU").fc(5)
    return load_tflm(g.finish())


@pytest.mark.parametrize("seed", range(4))
def test_tflm_one_sample_agrees(tflm, seed: int) -> None:  # type: ignore[no-untyped-def]
    t = tflm.inputs[0]
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, t.shape).astype(t.dtype)
    fast = tflm.run(x)
    assert np.array_equal(fast, tflm.run(x.tolist()))  # a list: the general path
    assert np.array_equal(fast, tflm.run(x.astype(np.int32)))  # converted after its range check
    assert np.array_equal(fast, tflm.run(x[None])[0])  # a batch of one
    for plat in PLATFORMS:
        with use_platform(plat):
            here = tflm.run(x)
        assert np.array_equal(here, tflm.run(x, platform=plat))


def test_tflm_errors_unchanged(tflm) -> None:  # type: ignore[no-untyped-def]
    t = tflm.inputs[0]
    for x, status in ((np.zeros(t.shape, np.float32), Status.TYPE_MISMATCH),
                      (np.full(t.shape, 300, np.int32), Status.TYPE_MISMATCH),
                      (np.zeros((*t.shape, 2), t.dtype), Status.SHAPE_MISMATCH)):
        with pytest.raises(TfliteInputError) as e:
            tflm.run(x)
        assert e.value.status == status
    with pytest.raises(TfliteInputError):
        tflm.run()
    with pytest.raises(TfliteError):
        tflm.run(np.zeros(t.shape, t.dtype), platform="nope")


def test_plan_rechecked_after_edits_through_run() -> None:
    """Each kind of change between two runs reaches the next run (the counted-assignment shortcut)."""
    q = three_fc("fx16", 4)
    x = samples(q, 3, 4)
    base = q.run(x, capture=False).output
    fc = q.layers[2]
    # a constant's values and parameters reassigned: other bits, and undone: the first bits again
    old_b = fc.bias.q
    fc.bias.set_quantized(np.asarray(old_b) + 1000, fc.bias.qp)
    changed = q.run(x, capture=False).output
    assert not np.array_equal(changed, base)
    assert np.array_equal(changed, q.run(x, capture=True).output)
    fc.bias.set_quantized(old_b, fc.bias.qp)
    assert np.array_equal(q.run(x, capture=False).output, base)
    # a layer swapped inside the list (no attribute assignment): a new plan
    other = three_fc("fx16", 5)
    q.layers[2] = other.layers[2]
    other.layers[2].name = "fully_connected3"
    swapped = q.run(x, capture=False).output
    assert np.array_equal(swapped, q.prepare()(x))
    q.layers[2] = fc
    assert np.array_equal(q.run(x, capture=False).output, base)
    # the network's input parameters reassigned
    before = q.prepare()
    q.input_q = QParams.fx(16, q.input_q.frac_bits + 1)
    assert q.prepare() is not before and q.prepare() is q.prepare() and np.array_equal(q.run(x, capture=False).output, q.prepare()(x))


@pytest.mark.parametrize("variant", ["sa8", "fx16"])
def test_chain_path_equals_general_path(variant: str) -> None:
    """The flat chain of kernel steps (output only) gives what the general walk gives, any batch size."""
    q = three_fc(variant, 6)
    plan = q.prepare()
    assert plan._chain is not None
    for n in (1, 2, 7):
        x = samples(q, n, n)
        for plat in PLATFORMS:
            with use_platform(plat):
                fast, fast_q = plan.execute(x, False)
                every, every_q = plan.execute(x, True)
                assert set(fast) == {q.output_name} and np.array_equal(fast[q.output_name], every[q.output_name])
                assert fast_q[q.output_name] == every_q[q.output_name]
                with_input, _ = plan.execute(x, {"input", q.output_name})
                assert set(with_input) == {"input", q.output_name}
    for flag in (np.False_, np.True_):
        res = q.run(samples(q, 2, 0), capture=flag)
        assert set(res.values) == ({q.output_name} if not flag else {"input", *(la.name for la in q.layers)})

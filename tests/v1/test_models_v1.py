"""The MLI 1.0 example packs (../shared/models_v1) replay call by call, every output bit-exact.

CIFAR-10 packs: all 20 test vectors. HAR packs (1,422 calls per inference, ~2 s per vector): three
vectors per pack here to keep the suite short; ``pymli.v1.replay.run_path`` replays all 30.
"""

from __future__ import annotations

import pytest

import numpy as np

from pymli.v1.packs import Pack, find_packs, run_pack
from pymli.v1.replay import run_path

from ..conftest import shared_dir

_ROOT = shared_dir() / "models_v1"
_PACKS = find_packs(_ROOT) if _ROOT.is_dir() else []
_CASES = [(p, v) for p in _PACKS for v in (range(20) if "cifar" in str(p) else (0, 7, 29))]


@pytest.mark.skipif(not _PACKS, reason="../shared/models_v1 is absent (set PYMLI_SHARED)")
def test_six_packs() -> None:
    assert len(_PACKS) == 6


@pytest.mark.parametrize("pack,vector", _CASES, ids=[f"{p.parent.name}/{p.name}/v{v}" for p, v in _CASES])
def test_pack_vector(pack, vector) -> None:
    ok, bad, msgs = run_pack(pack, [vector])
    assert bad == 0, "\n".join(msgs[:10])
    assert ok >= 9  # every output argument of the inference was compared


@pytest.mark.skipif(not _PACKS, reason="../shared/models_v1 is absent (set PYMLI_SHARED)")
def test_run_path_dispatches_packs() -> None:
    cifar = [p for p in _PACKS if p.parent.name == "cifar10" and p.name == "fx8"][0]
    ok, bad, _ = run_path(cifar)
    assert (ok, bad) == (20 * 9, 0)


@pytest.mark.skipif(not _PACKS, reason="../shared/models_v1 is absent (set PYMLI_SHARED)")
def test_a_wrong_output_is_reported(monkeypatch) -> None:
    import pymli.v1.kernels as K

    orig = K.fully_connected
    monkeypatch.setattr(K, "fully_connected", lambda *a, **k: orig(*a, **k) + 1)
    cifar = [p for p in _PACKS if p.parent.name == "cifar10" and p.name == "fx16"][0]
    ok, bad, msgs = run_pack(cifar, [0])
    assert bad >= 1 and any("ip1.out" in m for m in msgs)


@pytest.mark.parametrize("pack", [p for p in _PACKS if p.parent.name == "cifar10"], ids=lambda p: p.name)
def test_cifar10_accuracy_and_predictions(pack) -> None:
    """The network run through pymli.v1 predicts what the C example predicted (95 %, 19 of 20)."""
    pk = Pack(pack)
    preds = np.array([pk.predict(v) for v in range(pk.num_vectors)])
    assert np.array_equal(preds, pk.vectors["pred"])
    assert (preds == pk.vectors["label"]).mean() == pytest.approx(0.95)


@pytest.mark.parametrize("pack", [p for p in _PACKS if p.parent.name == "har_smartphone"], ids=lambda p: p.name)
def test_har_predictions(pack) -> None:
    pk = Pack(pack)
    for v in (3, 17):
        out = pk.infer(v)
        assert out["loop2.basic_rnn_cell2.out"].shape[0] == 127  # one output per step of the custom LSTM loop
        final = out[pk.model["output"]["vectors_key"]].reshape(-1)
        assert int(np.argmax(final)) == pk.vectors["pred"][v]  # the harness's arg-max: first maximum

"""Resource limits and history independence, each probed in a fresh subprocess (issue 13, items 4 and 5).

* Huge requests: shapes, paddings, dilations, top-k and moves whose result needs more than 2 GiB must
  be refused with ``MliError(NOT_ENGH_MEM)`` before anything is allocated. Each probe runs in its own
  Python process under ``RLIMIT_AS`` = 3 GiB and a timeout, so a probe that does try to allocate
  fails with ``MemoryError`` (a finding) instead of taking the machine down.
* History: a check's result must not depend on earlier calls. For every capi function, a set of
  one-field mutations of its baseline is run in a fresh process, and again in another fresh process
  right after the valid baseline call (which fills any check cache with an "OK" outcome); the statuses
  must agree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .known import KNOWN_HISTORY, KNOWN_RESOURCES

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 3 << 30

_PRELUDE = f"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({LIMIT}, {LIMIT}))
import numpy as np
from pymli import MliError, Status, Tensor, ElType, ops, capi
def report(fn):
    try:
        fn()
        print("RESULT OK")
    except MliError as e:
        print("RESULT MliError", e.status.name)
    except MemoryError as e:
        print("RESULT MemoryError")
    except BaseException as e:
        print("RESULT", type(e).__name__, str(e)[:100].replace("\\n", " "))
"""

x8 = "Tensor.from_numpy(np.ones((4, 4, 2)), 'SA_8', zero_point=0, scale=1, scale_frac_bits=0)"
w8 = "Tensor.from_numpy(np.ones((3, 3, 2, 2)), 'SA_8', dim=3, zero_point=[0, 0], scale=[1, 1], scale_frac_bits=[0, 0])"
xf = "Tensor.from_numpy(np.ones((4, 4, 2)), 'FX_16', frac_bits=4)"
wf = "Tensor.from_numpy(np.ones((3, 3, 2, 2)), 'FX_16', frac_bits=4)"
BIG = 2**20

PROBES = {
    "conv2d_padding": f"ops.conv2d({xf}, {wf}, padding={BIG})",
    "conv2d_dilation": f"ops.conv2d({xf}, {wf}, dilation={2**31 - 1}, padding={2**31 - 1})",
    "conv2d_sa8_padding": f"ops.conv2d({x8}, {w8}, padding={BIG})",
    "transpose_conv2d_stride": f"ops.transpose_conv2d({xf}, {wf}, stride={BIG})",
    "pad2d": f"ops.pad2d({xf}, [{BIG}] * 4)",
    "maxpool_padding": f"ops.maxpool({xf}, 1, padding={BIG})",
    "avepool_padding": f"ops.avepool({xf}, 1, padding={BIG})",
    "argmax_topk": f"ops.argmax(Tensor.from_numpy(np.ones((4,)), 'FX_16'), topk={2**31 - 1})",
    "move_pad": f"ops.move_tensor({xf}, pad_pre=[{BIG}, {BIG}, 0], pad_post=[{BIG}, {BIG}, 0])",
    "capi_padding2d_out": (f"capi.mli_krn_padding2d_hwc_fx16({xf}, capi.Padding2dCfg({BIG}, {BIG}, {BIG}, {BIG}), "
                           f"Tensor(data=np.zeros(1, np.int16), capacity=2, shape=[{2 * BIG + 4}, {2 * BIG + 4}, 2], "
                           f"mem_stride=[{(2 * BIG + 4) * 2}, 2, 1], rank=3, el_type=ElType.FX_16, frac_bits=4))"),
    "tensor_zeros_4g": f"Tensor.zeros(({BIG}, {BIG}), 'FX_16')",
}

# C refuses these with a cfg / tensor status first (conv2d_dilation: dilation and padding beyond the cfg's
# uint8_t fields are BAD_FUNC_CFG before any size is worked out)
ANY_STATUS = {"capi_padding2d_out", "argmax_topk", "conv2d_dilation"}


def _run(code: str, timeout: float = 120) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env,
                           cwd=str(ROOT))
    except subprocess.TimeoutExpired:
        return "RESULT timeout"
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")]
    if not lines:
        return f"RESULT crash rc={p.returncode} {p.stderr.strip().splitlines()[-1:] if p.stderr else ''}"
    return lines[-1] if len(lines) == 1 else "\n".join(lines)


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.xfail(strict=True, reason=KNOWN_RESOURCES[n])]
                                               if n in KNOWN_RESOURCES else []) for n in PROBES])
def test_huge_request_refused(name: str) -> None:
    """A request needing more than 2 GiB ends in MliError (NOT_ENGH_MEM where pymli allocates the result;
    any C status where the caller gave the buffers), never MemoryError, another exception or a crash."""
    out = _run(_PRELUDE + f"\nreport(lambda: {PROBES[name]})\n")
    if name in ANY_STATUS:
        assert out.startswith("RESULT MliError"), out
    else:
        assert out == "RESULT MliError NOT_ENGH_MEM", out


_HISTORY = textwrap.dedent("""
    import json, sys
    import numpy as np
    from tests.fuzz.harness import baselines, run
    warm = sys.argv[1] == "warm"
    res = {}
    base = baselines()

    def mutated(fn, label, field, value):
        c = base[fn].clone()
        tt = dict(c.tensors())[label]
        if field == "rank0":
            # a scalar operand: its "data pointer" is its value (0 = NULL for the C check)
            tt.rank, tt.shape, tt.mem_stride, tt.data, tt.value = 0, [], [], None, value
        else:
            setattr(tt, field, value)
        return c

    for fn in sorted(base):
        for label, t in base[fn].tensors():
            for field, value, warm_value in (
                    ("frac_bits", 100, None), ("zero_point", 40000, None), ("scale", 0, None),
                    ("scale_frac_bits", 127, None), ("capacity", 1, None), ("value", 0, None), ("dim", 7, None),
                    ("rank0", 0, 5)):
                if field == "value" and t.rank != 0:
                    continue
                if warm:
                    # warm the checks with the valid call, or with the same struct but a non-zero scalar
                    run(base[fn].clone() if warm_value is None else mutated(fn, label, field, warm_value))
                o = run(mutated(fn, label, field, value))
                res[f"{fn}|{label}.{field}={value}"] = o.status.name if o.status is not None else o.exc.split(":")[0]
    print(json.dumps(res))
""")


@pytest.fixture(scope="module")
def history() -> tuple[dict, dict]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = []
    for mode in ("cold", "warm"):
        p = subprocess.run([sys.executable, "-c", _HISTORY, mode], capture_output=True, text=True, env=env,
                           cwd=str(ROOT), timeout=600)
        assert p.returncode == 0, p.stderr[-2000:]
        out.append(json.loads(p.stdout.strip().splitlines()[-1]))
    if not out[0]:
        pytest.skip("no baselines (PYMLI_SHARED/golden absent)")
    return out[0], out[1]


def _history_ids() -> list:
    return [pytest.param(g, marks=[pytest.mark.xfail(strict=True, reason=KNOWN_HISTORY[g])] if g in KNOWN_HISTORY
                         else []) for g in ("conv", "fully_connected", "other")]


def _group(key: str) -> str:
    fn = key.split("|")[0]
    if "conv2d" in fn:
        return "conv"
    if "fully_connected" in fn:
        return "fully_connected"
    return "other"


@pytest.mark.parametrize("group", _history_ids())
def test_check_outcome_independent_of_history(history: tuple[dict, dict], group: str) -> None:
    """The status of a misuse is the same in a fresh process and right after a valid call."""
    cold, warm = history
    diff = {k: (cold[k], warm.get(k)) for k in cold if _group(k) == group and cold[k] != warm.get(k)}
    assert not diff, f"{len(diff)} statuses depend on the previous call, e.g. {dict(list(diff.items())[:5])}"

"""SLR's passes on other array namespaces and on Dask (cvxmetric/slr/_xp.py):
the same certified objective as NumPy, in float64, with bounded transfers."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from sklearn.datasets import make_classification

from cvxmetric._tolerances import certificate_tolerance
from cvxmetric.slr import SLRData
from cvxmetric.slr.fast import SemismoothNewton

_GAP, _ = certificate_tolerance("slr")
N, D = 120, 6


@pytest.fixture(scope="module")
def instance():
    X, y = make_classification(N, D, n_informative=4, random_state=3)
    ref = {h: SemismoothNewton(hessian=h).run(SLRData.from_labels(X, y))
           for h in ("dense", "cg")}
    return X, y, ref


def _same_certified(res, ref):
    assert res.status == "optimal" and res.certificate.passed
    assert res.certificate.rel_gap <= _GAP
    assert abs(res.objective - ref.objective) <= 2 * _GAP * max(1.0, ref.objective)
    np.testing.assert_allclose(res.M, ref.M, atol=1e-4 * np.abs(ref.M).max())


def _bounded(transfers, r):
    # only r x r and p x p arrays and scalars cross: no n-sized array
    p = r * (r + 1) // 2
    per = 8 * max(p * p, N * r)  # at construction: s, V^T and the labels
    assert transfers["to_host"] + transfers["to_device"] > 0
    assert transfers["to_host_bytes"] <= transfers["to_host"] * 8 * p * p
    assert transfers["to_device_bytes"] <= transfers["to_device"] * per


def _namespaces():
    out = []
    strict = pytest.importorskip("array_api_strict")
    out.append(("strict", strict.asarray))
    torch = pytest.importorskip("torch")
    out.append(("torch", lambda a: torch.asarray(a, device="cpu")))
    return out


@pytest.mark.array_api
@pytest.mark.parametrize("hessian", ["dense", "cg"])
def test_newton_on_array_api_namespaces_certifies_the_numpy_objective(instance, hessian):
    pytest.importorskip("array_api_compat")
    X, y, ref = instance
    for name, conv in _namespaces():
        data = SLRData.from_arrays(conv(X), y)
        assert not data.on_host and data.engine.xp.__name__ != "numpy", name
        res = SemismoothNewton(hessian=hessian).run(data)
        _same_certified(res, ref[hessian])
        _bounded(res.info["transfers"], data.rank)


@pytest.mark.array_api
def test_torch_float32_input_is_certified_in_float64():
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    # full rank (make_classification's redundant features are exact linear
    # combinations, which float32 rounding turns into an ill-conditioned X
    # that NumPy refuses as well)
    X, y = make_classification(N, D, n_informative=4, n_redundant=0, random_state=3)
    data = SLRData.from_arrays(torch.asarray(X, dtype=torch.float32), y)
    assert data.X.dtype == torch.float64 and data.U.dtype == torch.float64
    res = SemismoothNewton().run(data)
    assert res.certificate.passed
    # the float32 rounding of X changes the problem, not the certificate
    ref32 = SemismoothNewton().run(SLRData.from_labels(X.astype(np.float32), y))
    assert abs(res.objective - ref32.objective) <= 2 * _GAP * max(1.0, ref32.objective)


@pytest.mark.array_api
def test_numpy_input_stays_on_the_numpy_path(instance):
    X, y, _ = instance
    data = SLRData.from_arrays(X, y)
    assert type(data) is SLRData and data.on_host and data.transfers is None
    assert "transfers" not in SemismoothNewton().run(data).info


@pytest.mark.dask
@pytest.mark.parametrize("hessian", ["dense", "cg"])
def test_newton_on_dask_row_chunks_certifies_the_numpy_objective(instance, hessian,
                                                                  dask_client):
    da = pytest.importorskip("dask.array")
    X, y, ref = instance
    data = SLRData.from_arrays(da.from_array(X, chunks=(N // 3, D)), y)
    assert len(data.engine.chunks) == 4  # three row chunks: three tasks a pass
    res = SemismoothNewton(hessian=hessian).run(data)
    _same_certified(res, ref[hessian])
    t = res.info["transfers"]
    assert t["to_device"] == 0  # the point goes inside each task's graph
    assert t["to_host_bytes"] <= t["to_host"] * 8 * data.n_sym ** 2


_ESTIMATOR = textwrap.dedent("""
    import numpy as np, sklearn, torch, array_api_strict as strict
    from sklearn.datasets import make_classification
    from cvxmetric.slr import SLR
    X, y = make_classification(80, 5, n_informative=3, random_state=0)
    ref = SLR().fit(X, y)
    for conv in (torch.asarray, strict.asarray):
        with sklearn.config_context(array_api_dispatch=True):
            est = SLR().fit(conv(X), y)
            try:
                SLR(solver="adaptive").fit(conv(X), y)
            except ValueError as exc:
                assert "solver='adaptive' runs on NumPy arrays only" in str(exc)
            else:
                raise AssertionError("adaptive accepted a dispatched array")
        assert est.status_ == "optimal"
        assert isinstance(est.bilinear_matrix_, np.ndarray)
        assert type(est.result_.info["transfers"]) is dict
        assert abs(est.objective_ - ref.objective_) <= 2e-6 * max(1, ref.objective_)
    # without dispatch a CPU tensor is converted as scikit-learn does
    est = SLR().fit(torch.asarray(X), y)
    assert "transfers" not in est.result_.info
    print("ok")
""")


@pytest.mark.array_api
def test_estimator_follows_array_api_dispatch():
    pytest.importorskip("torch")
    pytest.importorskip("array_api_strict")
    # scikit-learn's dispatch needs SciPy's array API mode, set before import
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    out = subprocess.run([sys.executable, "-c", _ESTIMATOR], capture_output=True,
                         text=True, env=env, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")


@pytest.mark.array_api
def test_gpu_script_runs_on_the_cpu_in_quick_mode(capsys):
    """benchmarks/gpu.py --device cpu --quick: SLR certified on torch and
    NumPy, the methods without an array-API path skipped cleanly."""
    import importlib.util
    from pathlib import Path

    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu.py"
    spec = importlib.util.spec_from_file_location("gpu_bench", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--device", "cpu", "--quick"]) == 0
    lines = capsys.readouterr().out.splitlines()
    slr = [ln for ln in lines if ln.startswith("slr-newton")]
    assert len(slr) == 2 and all("optimal" in ln for ln in slr)
    assert "torch:cpu" in slr[0] and "numpy" in slr[1]
    assert sum("skipped" in ln for ln in lines) == len(mod.METHODS) - 1

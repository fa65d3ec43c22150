"""SLR's passes as Dask tasks over row chunks (cvxmetric/slr/_dask.py): the
same certified objective as NumPy, only small partial sums gathered; and the
GPU benchmark script on the CPU."""

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


@pytest.mark.dask
@pytest.mark.parametrize("hessian", ["dense", "cg"])
def test_newton_on_dask_row_chunks_certifies_the_numpy_objective(instance, hessian,
                                                                  dask_client):
    da = pytest.importorskip("dask.array")
    X, y, ref = instance
    data = SLRData.from_labels(da.from_array(X, chunks=(N // 3, D)), y)
    assert type(data).__name__ == "SLRDaskData" and not data.on_host
    assert len(data.engine.chunks) == 4  # three row chunks: three tasks a pass
    res = SemismoothNewton(hessian=hessian).run(data)
    _same_certified(res, ref[hessian])
    assert res.info["backend"] == "dask"
    t = res.info["transfers"]
    assert t["to_device"] == 0  # the point goes inside each task's graph
    # only partial sums come back (scalars, r x r, p x p): nothing n-sized
    assert t["to_host"] > 0
    assert t["to_host_bytes"] <= t["to_host"] * 8 * max(data.n_sym ** 2, data.rank ** 2)


@pytest.mark.dask
def test_dask_projection_step_and_objective_match_numpy(instance, dask_client):
    da = pytest.importorskip("dask.array")
    X, y, ref = instance
    host = SLRData.from_labels(X, y)
    data = SLRData.from_labels(da.from_array(X, chunks=(N // 2, D)), y)
    M = ref["dense"].M
    assert abs(data.objective(M) - host.objective(M)) <= 1e-9 * host.objective(M)
    Z = host.least_squares_Z()
    Zd = data.least_squares_Z()
    # the factors may differ by signs/rotations: compare in M's coordinates
    np.testing.assert_allclose(data.M_of_Z(Zd), host.M_of_Z(Z), rtol=1e-8, atol=1e-10)
    f, Z1 = data.projection_step(Zd)
    fh, Z1h = host.projection_step(Z)
    assert abs(f - fh) <= 1e-9 * fh
    np.testing.assert_allclose(data.M_of_Z(Z1), host.M_of_Z(Z1h), rtol=1e-7, atol=1e-10)


@pytest.mark.array_api
def test_gpu_script_runs_on_the_cpu_in_quick_mode(capsys, repo_module):
    """benchmarks/gpu.py --device cpu --quick --methods slr_newton,
    slr_sketched: SLR certified on torch and NumPy, SLR's sketched
    algorithms on both with their gap to that optimum (the other families'
    rows have their own tests)."""
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    mod = repo_module("benchmarks/gpu.py")
    assert mod.main(["--device", "cpu", "--quick",
                     "--methods", "slr_newton,slr_sketched"]) == 0
    lines = capsys.readouterr().out.splitlines()
    slr = [ln for ln in lines if ln.startswith("slr-newton")]
    assert len(slr) == 2 and all("optimal" in ln for ln in slr)
    assert "torch:cpu" in slr[0] and "numpy" in slr[1]
    sketched = [ln for ln in lines if ln.startswith(("slr-fixed", "slr(", "slr-c-", "alg2-c-"))]
    assert len(sketched) == 8 and all("max_iter_reached" in ln for ln in sketched)
    assert sum("torch:cpu" in ln for ln in sketched) == 4
    # a finite gap to the certified optimum, at least the optimum's
    gaps = [float(ln.split("gap")[1].split()[0]) for ln in sketched]
    assert all(g >= -1e-9 for g in gaps)
    assert not any("skipped" in ln for ln in lines)


@pytest.mark.dask
def test_estimator_runs_newton_on_a_dask_X(instance, dask_client):
    # SLR(solver="newton") keeps a dask X on the cluster (scikit-learn's
    # validation would compute it into memory); its shape must be known
    da = pytest.importorskip("dask.array")
    from cvxmetric import SLR

    X, y, ref = instance
    Xd = da.from_array(X, chunks=(N // 3, D))
    est = SLR().fit(Xd, y)
    assert est.result_.info["backend"] == "dask" and est.n_features_in_ == D
    _same_certified(est.result_, ref["dense"])
    with pytest.raises(ValueError, match="X: its shape is not known"):
        SLR().fit(Xd[Xd[:, 0] > -np.inf], y)

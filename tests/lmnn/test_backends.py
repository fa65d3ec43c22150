"""LMNN's passes over every impostor triplet on array-API namespaces and
Dask: the same hinge sums, certificates and certified optimum as NumPy, a
gradient that matches finite differences, and no n-sized transfer per pass."""

import os
import subprocess
import sys

import numpy as np
import pytest

from cvxmetric._tolerances import tolerance
from cvxmetric.lmnn import LMNNData, LMNNSubgradient, LMNNWorkingSet, target_neighbors
from cvxmetric.lmnn.fast import run_in_feature_units, scan


def _instance(n=60, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.array([1.0, 3.0, 0.5, 2.0])[:d]
    y = rng.integers(0, 3, n)
    A = rng.standard_normal((d, d))
    return X, y, A @ A.T / d


def _namespaces():
    return [pytest.param(name, marks=pytest.mark.array_api)
            for name in ("array_api_strict", "torch")]


def _as(name, X):
    mod = pytest.importorskip(name)
    pytest.importorskip("array_api_compat")
    return mod.asarray(X)


def _reference():
    X, y, M = _instance()
    ref = LMNNData(X, y, k=2)
    res = run_in_feature_units(LMNNWorkingSet(), ref)
    assert res.status == "optimal"
    return X, y, M, ref, res


def _same_passes(data, ref, M, res):
    """Hinge sums, certificates (given multipliers and none) and screenings
    of ``data`` equal those of the NumPy ``ref``."""
    assert data.hinge_sum(M) == pytest.approx(ref.hinge_sum(M), rel=1e-12)
    for ids, gamma in ((None, None), (res.info["triplet_ids"], res.info["gamma"])):
        for at in (M, res.M):
            c0 = ref.certificate(at, ids, gamma, solver="x")
            c1 = data.certificate(at, ids, gamma, solver="x")
            assert c1.objective == pytest.approx(c0.objective, rel=1e-12)
            assert c1.dual_bound == pytest.approx(c0.dual_bound, rel=1e-10, abs=1e-10)
    for spread in (False, True):
        s0 = scan(ref, M, 0.1, 40, spread=spread)
        s1 = scan(data, M, 0.1, 40, spread=spread, exclude=np.empty(0, np.int64))
        assert s1.n_found == s0.n_found and s1.hinge == pytest.approx(s0.hinge, rel=1e-12)
        np.testing.assert_array_equal(s1.ids, s0.ids)


@pytest.mark.parametrize("name", _namespaces())
def test_passes_and_certified_optimum_on_a_namespace_equal_numpy(name):
    X, y, M, ref, res = _reference()
    data = LMNNData(_as(name, X), y, k=2)
    np.testing.assert_array_equal(data.targets, ref.targets)
    _same_passes(data, ref, M, res)
    out = run_in_feature_units(LMNNWorkingSet(), data)
    assert out.status == "optimal"
    assert out.objective == pytest.approx(res.objective, rel=tolerance("lmnn", "fast"))
    assert out.info["backend"].endswith(name)
    assert out.info["transfers"]["to_host"] > 0


@pytest.mark.parametrize("name", _namespaces())
def test_restricted_solves_run_on_the_namespace(name):
    # the working set's Qwise solves run where the data are (on the host
    # copy with restricted_on="host"), to the same certified optimum
    X, y, _, ref, res = _reference()
    backend = "torch" if name == "torch" else name
    for on, where in (("data", backend), ("host", "numpy")):
        data = LMNNData(_as(name, X), y, k=2)
        out = run_in_feature_units(LMNNWorkingSet(restricted_on=on), data)
        assert out.status == "optimal"
        assert out.objective == pytest.approx(res.objective, rel=tolerance("lmnn", "fast"))
        ran = {r["backend"].split(".")[-1] for r in out.info["working_set_rounds"]}
        assert ran == {where}, (on, ran)
    assert {r["backend"] for r in res.info["working_set_rounds"]} == {"numpy"}


@pytest.mark.parametrize("name", _namespaces())
def test_no_n_sized_transfer_per_pass(name):
    X, y, M = _instance(n=300, d=3, seed=1)
    data = LMNNData(_as(name, X), y, k=2)
    d, n = X.shape[1], X.shape[0]
    before = data.transfers.as_dict()
    data.certificate(M, solver="x")
    data.hinge_sum(M)
    scan(data, M, 0.1, 10, spread=True)
    after = data.transfers.as_dict()
    moved = {key: after[key] - before[key] for key in after}
    # in: the (d, d) eigenvectors, eigenvalues and factors; out: two (d, d)
    # matrices, scalars and the <= 10 kept triplets -- O(d^2 + cap), not n
    assert moved["to_device"] <= 5 and moved["to_host"] <= 6
    assert moved["to_device_bytes"] <= 4 * d * d * 8
    assert moved["to_host_bytes"] <= (2 * d * d + 8 + 2 * 10) * 8 < n * 8


@pytest.mark.array_api
def test_torch_gradient_matches_finite_differences():
    X, y, M = _instance(n=40, seed=2)
    data = LMNNData(_as("torch", X), y, k=2)
    f, G = data.value_grad(M)
    assert f == pytest.approx(data.objective(M), rel=1e-12)
    ref = LMNNData(X, y, k=2).value_grad(M)
    np.testing.assert_allclose(G, ref[1], rtol=1e-10, atol=1e-10 * np.abs(G).max())
    rng = np.random.default_rng(3)
    h = 1e-7
    for _ in range(4):
        E = rng.standard_normal(M.shape)
        E = E + E.T
        fd = (data.objective(M + h * E) - data.objective(M - h * E)) / (2 * h)
        # piecewise linear: exact unless a hinge crosses its margin within h
        assert fd == pytest.approx(float(np.sum(G * E)), rel=1e-6)


@pytest.mark.parametrize("name", _namespaces())
def test_subgradient_on_a_namespace_equals_numpy(name):
    X, y, _ = _instance(n=40, seed=4)
    solver = LMNNSubgradient(maxiter=30)
    ref = solver.run(LMNNData(X, y, k=2), warn=False)
    res = solver.run(LMNNData(_as(name, X), y, k=2), warn=False)
    assert res.objective == pytest.approx(ref.objective, rel=1e-10)
    assert res.certificate.dual_bound == pytest.approx(ref.certificate.dual_bound,
                                                        rel=1e-8, abs=1e-8)


@pytest.mark.array_api
def test_float32_input_is_certified_in_float64():
    X, y, M = _instance(seed=5)
    X32 = X.astype(np.float32)
    data = LMNNData(_as("torch", X32), y, k=2)
    ref = LMNNData(X32.astype(np.float64), y, k=2)
    assert data.certificate(M, solver="x").objective == pytest.approx(
        ref.certificate(M, solver="x").objective, rel=1e-12)


@pytest.mark.array_api
def test_target_search_refuses_other_namespaces_by_name():
    X, y, _ = _instance()
    with pytest.raises(TypeError, match="X: target_neighbors runs on NumPy arrays only"):
        target_neighbors(_as("torch", X), y, 2)


@pytest.mark.dask
def test_dask_passes_and_solve_equal_numpy(dask_client):
    da = pytest.importorskip("dask.array")
    X, y, M, ref, res = _reference()
    data = LMNNData(da.from_array(X, chunks=(25, X.shape[1])), y, k=2)
    _same_passes(data, ref, M, res)
    out = run_in_feature_units(LMNNWorkingSet(), data)
    assert out.status == "optimal" and out.info["backend"] == "dask"
    assert out.objective == pytest.approx(res.objective, rel=tolerance("lmnn", "fast"))
    # the restricted solves iterate on the host, as Qwise's Dask data do
    assert {r["backend"] for r in out.info["working_set_rounds"]} == {"numpy"}


@pytest.mark.dask
def test_estimator_keeps_a_dask_X_on_the_cluster(dask_client):
    da = pytest.importorskip("dask.array")
    from cvxmetric import LMNN

    X, y, _, _, res = _reference()
    est = LMNN(k=2, solver="fast").fit(da.from_array(X, chunks=(25, X.shape[1])), y)
    assert est.status_ == "optimal" and est.result_.info["backend"] == "dask"
    assert est.objective_ == pytest.approx(res.objective, rel=tolerance("lmnn", "fast"))


#: A fit under scikit-learn's dispatch (SciPy's array API flag is set before
#: it is imported, in a fresh interpreter)
_DISPATCHED_FIT = """
import numpy as np, sklearn, torch
from cvxmetric import LMNN
rng = np.random.default_rng(0)
X = rng.standard_normal((60, 4)); y = rng.integers(0, 3, 60)
with sklearn.config_context(array_api_dispatch=True):
    est = LMNN(k=2, solver="fast").fit(torch.asarray(X), torch.asarray(y))
ref = LMNN(k=2, solver="fast").fit(X, y)
assert est.result_.info["backend"].endswith("torch"), est.result_.info["backend"]
assert est.status_ == "optimal" and isinstance(est.mahalanobis_matrix_, np.ndarray)
assert abs(est.objective_ - ref.objective_) <= 1e-9 * ref.objective_
print("ok")
"""


def _python(code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env}, check=False)


@pytest.mark.array_api
def test_estimator_keeps_the_namespace_under_array_api_dispatch():
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    out = _python(_DISPATCHED_FIT, SCIPY_ARRAY_API="1")
    assert (out.returncode, out.stdout.strip()) == (0, "ok"), out.stderr[-2000:]


@pytest.mark.parametrize("name", _namespaces())
def test_exact_solve_of_device_data_is_certified_on_the_device(name):
    from cvxmetric.formulations import formulation

    X, y, _ = _instance(n=24, d=3, seed=6)
    ref = formulation("lmnn").solve_exact(LMNNData(X, y, k=2))
    res = formulation("lmnn").solve_exact(LMNNData(_as(name, X), y, k=2))
    assert res.status == ref.status == "optimal"
    assert res.objective == pytest.approx(ref.objective, rel=tolerance("lmnn", "fast"))
    assert res.info["backend"].endswith(name)
    assert "backend" not in ref.info


@pytest.mark.dask
def test_subgradient_and_exact_on_dask_equal_numpy(dask_client):
    from cvxmetric.formulations import formulation

    da = pytest.importorskip("dask.array")
    X, y, _ = _instance(n=40, seed=4)
    solver = LMNNSubgradient(maxiter=30)
    ref = solver.run(LMNNData(X, y, k=2), warn=False)
    res = solver.run(LMNNData(da.from_array(X, chunks=(10, X.shape[1])), y, k=2),
                     warn=False)
    assert res.objective == pytest.approx(ref.objective, rel=1e-10)
    assert res.info["backend"] == "dask"
    X, y, _ = _instance(n=24, d=3, seed=6)
    ref = formulation("lmnn").solve_exact(LMNNData(X, y, k=2))
    res = formulation("lmnn").solve_exact(
        LMNNData(da.from_array(X, chunks=(8, X.shape[1])), y, k=2))
    assert res.status == ref.status == "optimal"
    assert res.objective == pytest.approx(ref.objective, rel=tolerance("lmnn", "fast"))
    assert res.info["backend"] == "dask"


def test_numpy_data_import_no_optional_array_library():
    code = """
import numpy as np
from cvxmetric.lmnn import LMNNData
from cvxmetric._backend import loaded_backends
rng = np.random.default_rng(0)
data = LMNNData(rng.standard_normal((30, 3)), rng.integers(0, 3, 30), k=2)
data.certificate(np.eye(3), solver="x")
assert data.backend_info() is None
print(','.join(loaded_backends()))
"""
    out = _python(code)
    assert (out.returncode, out.stdout.strip()) == (0, ""), out.stderr[-2000:]


def _spread_and_rank_deficient():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 4)) * np.array([1e-3, 1.0, 1e2, 0.0])
    X[:, 3] = X[:, 0] + X[:, 1]  # rank 3, features spread over 2^17
    y = rng.integers(0, 3, 50)
    ref = run_in_feature_units(LMNNWorkingSet(), LMNNData(X, y, k=2))
    assert ref.info["span"] == 3 and ref.info["feature_exponents"] is not None
    return X, y, ref


@pytest.mark.array_api
def test_reduced_and_rescaled_problems_stay_on_torch():
    X, y, ref = _spread_and_rank_deficient()
    res = run_in_feature_units(LMNNWorkingSet(), LMNNData(_as("torch", X), y, k=2))
    assert res.status == "optimal" and res.info["backend"].endswith("torch")
    assert res.objective == pytest.approx(ref.objective, rel=tolerance("lmnn", "fast"))


@pytest.mark.dask
def test_reduced_and_rescaled_problems_stay_on_dask(dask_client):
    da = pytest.importorskip("dask.array")
    X, y, ref = _spread_and_rank_deficient()
    res = run_in_feature_units(LMNNWorkingSet(),
                               LMNNData(da.from_array(X, chunks=(20, 4)), y, k=2))
    assert res.status == "optimal" and res.info["backend"] == "dask"
    assert res.objective == pytest.approx(ref.objective, rel=tolerance("lmnn", "fast"))

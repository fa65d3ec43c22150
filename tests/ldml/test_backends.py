"""LDML's all-pairs loss and gradient on array-API namespaces and Dask:
the same values as NumPy, the same certified optimum, bounded transfers."""

import numpy as np
import pytest

from cvxmetric.ldml.fast import AllPairs, LowRankLDML, fit_lowrank
from cvxmetric._tolerances import tolerance


def _instance(N=120, D=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D))
    X[5] = X[7]  # a duplicate row: its pair is left out on every back end
    y = rng.integers(0, 3, N)
    return X, y, rng.standard_normal((3, D)), 1.3


def _namespaces():
    out = []
    for name in ("array_api_strict", "torch"):
        out.append(pytest.param(name, marks=pytest.mark.array_api))
    return out


def _as(name, X):
    mod = pytest.importorskip(name)
    pytest.importorskip("array_api_compat")
    return mod.asarray(X)


def _check_same(loss, X, y, L, b):
    ref = AllPairs(X, y, lam=0.1, block=32)
    f, G, gb = ref.value_grad(L, b)
    f2, G2, gb2 = loss.value_grad(L, b)
    assert f2 == pytest.approx(f, rel=1e-12)
    assert gb2 == pytest.approx(gb, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(G2, G, rtol=1e-10, atol=1e-10 * np.abs(G).max())
    assert loss.worst_margin == pytest.approx(ref.worst_margin, rel=1e-12)
    assert loss.value_grad(L, b, grad=False) == pytest.approx(f, rel=1e-12)


@pytest.mark.parametrize("name", _namespaces())
def test_all_pairs_on_a_namespace_equal_numpy(name):
    X, y, L, b = _instance()
    loss = AllPairs(_as(name, X), y, lam=0.1, block=32)
    _check_same(loss, X, y, L, b)
    # per evaluation: L in, the (d, D) gradient and the scalars out --
    # nothing N-sized per block (the build moves X once, labels and rows once)
    t = loss.transfers.as_dict()
    N, D = X.shape
    assert t["to_device"] <= 3 + 2 and t["to_host"] <= 1 + 4
    assert t["to_host_bytes"] <= N * D * 8 + 2 * (3 * D + 3) * 8


@pytest.mark.array_api
def test_torch_gradient_matches_finite_differences():
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    X, y, L, b = _instance(N=60)
    loss = AllPairs(torch.asarray(X), y, lam=0.1, block=16)
    f, G, gb = loss.value_grad(L, b)
    h = 1e-6
    rng = np.random.default_rng(1)
    for _ in range(4):
        E = rng.standard_normal(L.shape)
        fd = (loss.value_grad(L + h * E, b, grad=False)
              - loss.value_grad(L - h * E, b, grad=False)) / (2 * h)
        assert fd == pytest.approx(float(np.sum(G * E)), rel=1e-6)
    fd = (loss.value_grad(L, b + h, grad=False) - loss.value_grad(L, b - h, grad=False)) / (2 * h)
    assert fd == pytest.approx(gb, rel=1e-6)


@pytest.mark.parametrize("name", _namespaces())
def test_full_rank_certified_optimum_equals_numpy(name):
    X, y, _, _ = _instance(N=50, D=4)
    ref = fit_lowrank(AllPairs(X, y, lam=0.1), 4, random_state=0)
    res = fit_lowrank(AllPairs(_as(name, X), y, lam=0.1), 4, random_state=0)
    assert ref.status == res.status == "optimal"
    assert res.objective == pytest.approx(ref.objective, rel=tolerance("ldml", "fast"))
    t = res.info["transfers"]
    # no N-sized move per evaluation: the bytes are X once (certificate,
    # build) plus O(d D) per step
    assert t["to_host_bytes"] <= 2 * X.nbytes + t["to_host"] * (16 * 4 + 8) * 8


@pytest.mark.dask
def test_all_pairs_on_dask_equal_numpy(dask_client):
    da = pytest.importorskip("dask.array")
    X, y, L, b = _instance()
    loss = AllPairs(da.from_array(X, chunks=(40, X.shape[1])), y, lam=0.1, block=32)
    _check_same(loss, X, y, L, b)


@pytest.mark.dask
def test_lowrank_on_dask_reaches_the_numpy_objective(dask_client):
    da = pytest.importorskip("dask.array")
    X, y, L, b = _instance(N=60, D=4)
    init = (L[:2], b)
    ref = LowRankLDML(rank=2, maxiter=30, certify=False).run(AllPairs(X, y, lam=0.1), init,
                                                              warn=False)
    res = LowRankLDML(rank=2, maxiter=30, certify=False).run(
        AllPairs(da.from_array(X, chunks=(20, 4)), y, lam=0.1), init, warn=False)
    assert res.objective == pytest.approx(ref.objective, rel=1e-10)

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
    _check_finite_differences(AllPairs(torch.asarray(X), y, lam=0.1, block=16), L, b,
                              np.random.default_rng(1))


def _check_finite_differences(loss, L, b, rng, h=1e-6):
    """``loss.value_grad``'s gradient in ``L`` (along random directions)
    and in ``b`` against central differences."""
    _, G, gb = loss.value_grad(L, b)
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
    loss = AllPairs(_as(name, X), y, lam=0.1)
    res = fit_lowrank(loss, 4, random_state=0)
    assert ref.status == res.status == "optimal"
    assert res.objective == pytest.approx(ref.objective, rel=tolerance("ldml", "fast"))
    t = res.info["transfers"]
    # every move counted, the certificate's (after the descent) included
    assert t == loss.transfers.as_dict()
    # no N-sized move per evaluation: the bytes are X once (certificate,
    # build) plus O(d D) per step
    assert t["to_host_bytes"] <= 2 * X.nbytes + t["to_host"] * (16 * 4 + 8) * 8


@pytest.mark.parametrize("name", _namespaces())
def test_low_rank_starts_report_every_move(name):
    # uncertified, the kept start's result counts the moves of all three
    X, y, _, _ = _instance(N=60, D=5)
    loss = AllPairs(_as(name, X), y, lam=0.1)
    res = fit_lowrank(loss, 2, random_state=0, n_init=3, certify=False)
    assert res.info["best_init"] < 2
    assert res.info["transfers"] == loss.transfers.as_dict()


def _scales_apart(N=60, seed=2):
    """Three classes whose features are of scales 1e3, 1 and 1e-2."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, N)
    X = (rng.standard_normal((N, 3)) + y[:, None]) * np.array([1e3, 1.0, 1e-2])
    return X, y


def _same_descent(res, ref):
    # whitened where the data are: the iterations of NumPy's descent, not
    # the thousands of the raw coordinates
    assert ref.status == res.status == "optimal"
    assert res.objective == pytest.approx(ref.objective, rel=tolerance("ldml", "lowrank"))
    assert res.n_iter <= 2 * ref.n_iter + 10


@pytest.mark.parametrize("name", _namespaces())
def test_full_rank_on_a_namespace_is_whitened_there(name):
    X, y = _scales_apart()
    ref = fit_lowrank(AllPairs(X, y, lam=1e-3), 3, random_state=0)
    _same_descent(fit_lowrank(AllPairs(_as(name, X), y, lam=1e-3), 3, random_state=0), ref)


@pytest.mark.dask
def test_full_rank_on_dask_is_whitened_there(dask_client):
    da = pytest.importorskip("dask.array")
    X, y = _scales_apart()
    ref = fit_lowrank(AllPairs(X, y, lam=1e-3), 3, random_state=0)
    res = fit_lowrank(AllPairs(da.from_array(X, chunks=(20, 3)), y, lam=1e-3), 3,
                      random_state=0)
    _same_descent(res, ref)
    assert res.info["backend"] == "dask"


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


@pytest.mark.dask
def test_estimator_keeps_a_dask_X_on_the_cluster(dask_client):
    # LDMLSupervised's all-pairs path (solver="auto" / "lowrank") runs its
    # passes as Dask tasks on a dask X: the certified optimum of NumPy
    da = pytest.importorskip("dask.array")
    from cvxmetric import LDMLSupervised
    from cvxmetric._tolerances import tolerance

    X, y, _, _ = _instance(N=60, D=4)
    ref = LDMLSupervised(random_state=0).fit(X, y)
    est = LDMLSupervised(random_state=0).fit(da.from_array(X, chunks=(20, 4)), y)
    assert est.status_ == ref.status_ == "optimal"
    assert est.result_.info["backend"] == "dask" and est.result_.info["transfers"]["to_host"]
    assert est.objective_ == pytest.approx(ref.objective_, rel=tolerance("ldml", "lowrank"))


# ---------------------------------------------------------------------------
# Explicit pairs: PairSet, ProjectedGradient, solve_fast (LDMLData on a device)
# ---------------------------------------------------------------------------

def _pairs_instance(N=50, D=4, P=160, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D))
    X[:, 0] *= 20.0  # scales apart: the whitened L-BFGS and the certificate see it
    pairs = rng.integers(0, N, (P, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    s = np.where(rng.random(len(pairs)) < 0.5, 1, -1)
    return X, pairs, s


def _bounded(t, data, n_slopes=10):
    """No (P, D)- or (N, D)-sized move beyond the host copy of X (and the
    pairs' indices and labels moved once): every other move is at most a
    (D, D) matrix, except a few (P,) vectors of slopes or distances, for
    the certificate's host stages."""
    D, P = data.d, data.n_pairs
    assert t["to_host_bytes"] <= data.X.nbytes + t["to_host"] * D * D * 8 + n_slopes * P * 8
    assert t["to_device_bytes"] <= 3 * P * 8 + t["to_device"] * D * D * 8 + n_slopes * P * 8


@pytest.mark.parametrize("name", _namespaces())
@pytest.mark.parametrize("lam,regularizer", [(0.1, "trace"), (0.1, "frobenius"), (0.0, "trace")])
def test_solve_fast_on_a_namespace_certifies_the_numpy_objective(name, lam, regularizer):
    from cvxmetric.ldml.exact import LDMLData
    from cvxmetric.ldml.fast import solve_fast

    X, pairs, s = _pairs_instance()
    ref = solve_fast(LDMLData(X, pairs, s, lam=lam, regularizer=regularizer), warn=False)
    data = LDMLData(_as(name, X), pairs, s, lam=lam, regularizer=regularizer)
    res = solve_fast(data, warn=False)
    assert ref.status == res.status == "optimal" and res.certificate.passed
    assert res.objective == pytest.approx(ref.objective, rel=tolerance("ldml", "fast"))
    assert isinstance(res.M, np.ndarray) and res.info["backend"].endswith(
        "torch" if name == "torch" else "array_api_strict")
    _bounded(res.info["transfers"], data)


@pytest.mark.parametrize("name", _namespaces())
def test_projected_gradient_on_a_namespace_follows_numpy(name):
    from cvxmetric.ldml.exact import LDMLData
    from cvxmetric.ldml.fast import ProjectedGradient

    X, pairs, s = _pairs_instance()
    ref = ProjectedGradient(maxiter=40).run(LDMLData(X, pairs, s, lam=0.1), warn=False)
    data = LDMLData(_as(name, X), pairs, s, lam=0.1)
    res = ProjectedGradient(maxiter=40).run(data, warn=False)
    # the same iterates (the eigh and the sums on the device)
    assert res.n_iter == ref.n_iter
    assert res.objective == pytest.approx(ref.objective, rel=1e-10)
    np.testing.assert_allclose(res.M, ref.M, atol=1e-8 * np.abs(ref.M).max())
    # the iterations move scalars and (D, D) matrices; (P,) vectors only
    # in the final certificate's host stages
    _bounded(res.info["transfers"], data)


@pytest.mark.parametrize("name", _namespaces())
def test_pairset_on_a_namespace_equals_numpy(name):
    from cvxmetric.ldml.fast import PairSet, fit_lowrank

    X, pairs, s = _pairs_instance()
    L, b = np.random.default_rng(2).standard_normal((2, X.shape[1])) / 10, 1.3
    ref = PairSet(X, pairs, s, lam=0.1)
    loss = PairSet(_as(name, X), pairs, s, lam=0.1)
    f, G, gb = ref.value_grad(L, b)
    f2, G2, gb2 = loss.value_grad(L, b)
    assert f2 == pytest.approx(f, rel=1e-12) and gb2 == pytest.approx(gb, rel=1e-12)
    np.testing.assert_allclose(G2, G, rtol=1e-10, atol=1e-10 * np.abs(G).max())
    assert loss.worst_margin == pytest.approx(ref.worst_margin, rel=1e-12)
    before = loss.transfers.as_dict()
    loss.value_grad(L, b)
    after = loss.transfers.as_dict()
    # one evaluation: L in; G and the three scalars out
    assert after["to_device"] - before["to_device"] == 1
    assert after["to_host"] - before["to_host"] == 2
    assert after["to_host_bytes"] - before["to_host_bytes"] == (L.size + 3) * 8
    # thirty low-rank steps follow NumPy's; the full-rank fit (whitened on
    # the device) certifies NumPy's optimum
    init = (L, b)
    r0 = LowRankLDML(rank=2, maxiter=30, certify=False).run(ref, init, warn=False)
    r1 = LowRankLDML(rank=2, maxiter=30, certify=False).run(loss, init, warn=False)
    assert r1.objective == pytest.approx(r0.objective, rel=1e-10)
    r0 = fit_lowrank(ref, X.shape[1], random_state=0, warn=False)
    r1 = fit_lowrank(loss, X.shape[1], random_state=0, warn=False)
    assert r0.status == r1.status == "optimal"
    assert r1.objective == pytest.approx(r0.objective, rel=tolerance("ldml", "fast"))


@pytest.mark.array_api
def test_torch_pairset_and_pg_gradients_match_finite_differences():
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    from cvxmetric.ldml.exact import LDMLData
    from cvxmetric.ldml.fast import PairSet, ProjectedGradient

    X, pairs, s = _pairs_instance()
    rng = np.random.default_rng(3)
    loss = PairSet(torch.asarray(X), pairs, s, lam=0.1, regularizer="frobenius")
    L, h = rng.standard_normal((3, X.shape[1])) / 10, 1e-6
    _check_finite_differences(loss, L, 0.7, rng, h)
    # the full-rank gradient of f(M) = min_b F(M, b), on the device
    data = LDMLData(torch.asarray(X), pairs, s, lam=0.1)
    pg = ProjectedGradient()
    M = torch.asarray(L.T @ L + 0.01 * np.eye(X.shape[1]))
    _, b, dist = pg._value(data, M)
    S = data.transfers.to_host(pg._grad(data, M, b, dist))
    for _ in range(3):
        E = rng.standard_normal(S.shape)
        E = torch.asarray(E + E.T)
        fd = (pg._value(data, M + h * E)[0] - pg._value(data, M - h * E)[0]) / (2 * h)
        assert fd == pytest.approx(float(np.sum(S * E.numpy())), rel=1e-6)


@pytest.mark.array_api
def test_float32_pairs_are_certified_in_float64():
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    from cvxmetric.ldml.exact import LDMLData
    from cvxmetric.ldml.fast import solve_fast

    X, pairs, s = _pairs_instance()
    X32 = X.astype(np.float32)
    ref = solve_fast(LDMLData(X32.astype(float), pairs, s, lam=0.1), warn=False)
    data = LDMLData(torch.asarray(X32), pairs, s, lam=0.1)
    assert data._dev.X.dtype == torch.float64
    res = solve_fast(data, warn=False)
    assert res.status == "optimal" and res.certificate.passed
    assert res.objective == pytest.approx(ref.objective, rel=tolerance("ldml", "fast"))


@pytest.mark.parametrize("name", _namespaces())
def test_registry_methods_on_a_namespace(name):
    from cvxmetric.ldml._collection import solve_lowrank
    from cvxmetric.ldml.exact import LDMLData

    X, pairs, s = _pairs_instance(P=100)
    ref = solve_lowrank(LDMLData(X, pairs, s, lam=0.1))
    res = solve_lowrank(LDMLData(_as(name, X), pairs, s, lam=0.1))
    assert ref.status == res.status == "optimal"
    assert res.objective == pytest.approx(ref.objective, rel=tolerance("ldml", "fast"))
    assert "transfers" in res.info


@pytest.mark.array_api
def test_unported_inputs_are_refused_by_name():
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    from cvxmetric.ldml._mildml import BagPairs

    X = torch.asarray(np.random.default_rng(0).standard_normal((6, 2)))
    with pytest.raises(TypeError, match="X: MildML runs on NumPy arrays only"):
        BagPairs(X, [[0, 1], [2, 3], [4, 5]], [[0], [0], [1]])


@pytest.mark.dask
def test_explicit_pairs_refuse_dask_by_name():
    da = pytest.importorskip("dask.array")
    from cvxmetric.ldml.exact import LDMLData
    from cvxmetric.ldml.fast import PairSet

    X, pairs, s = _pairs_instance()
    Xd = da.from_array(X, chunks=(25, 4))
    with pytest.raises(TypeError, match="X: LDMLData"):
        LDMLData(Xd, pairs, s)
    with pytest.raises(TypeError, match="X: PairSet"):
        PairSet(Xd, pairs, s)


@pytest.mark.parametrize("name", _namespaces())
def test_exact_path_runs_on_the_host_copy(name):
    from cvxmetric.ldml.exact import LDMLData, solve_exact

    X, pairs, s = _pairs_instance(N=30, D=3, P=80)
    ref = solve_exact(LDMLData(X, pairs, s, lam=0.1))
    data = LDMLData(_as(name, X), pairs, s, lam=0.1)
    res = solve_exact(data)
    assert ref.status == res.status == "optimal"
    assert res.objective == pytest.approx(ref.objective, rel=tolerance("ldml", "exact"))
    # the CVXPY model on the host copy; the certificate's passes on the device
    assert data.transfers.to_host_count >= 2
    _bounded(data.transfers.as_dict(), data)

"""SCML's canonical data: bases as metric-learn builds them, the objective,
the dual bound (valid at any multipliers, tight at the optimum), the exact
path and the declared problem, and bad input."""

import numpy as np
import pytest

from cvxmetric._tolerances import EXACT_GAP
from cvxmetric.scml import (SCMLData, declared_problem, knn_triplets, lda_basis,
                            solve_exact, triplet_diffs_basis)
from cvxmetric.scml.exact import check_exact_size, simplex_multipliers


def blobs(n_per_class=10, n_classes=3, d=3, seed=0):
    rng = np.random.RandomState(seed)
    y = np.repeat(np.arange(n_classes), n_per_class)
    return rng.randn(n_classes, d)[y] + rng.randn(y.size, d), y


@pytest.fixture(scope="module")
def data():
    X, y = blobs()
    return SCMLData.from_labels(X, y, k_genuine=2, k_impostor=4, random_state=0)


@pytest.fixture(scope="module")
def solved(data):
    return solve_exact(data)


def test_distance_differences_and_objective(data):
    i, j, k = data.triplets.T
    b = data.basis[3]
    c = ((data.X[i] - data.X[j]) @ b) ** 2 - ((data.X[i] - data.X[k]) @ b) ** 2
    np.testing.assert_allclose(data.C[:, 3], c, rtol=1e-12, atol=1e-12)
    w = np.abs(np.random.RandomState(1).randn(data.n_basis))
    M = data.metric(w)
    D = lambda a, z: np.einsum("td,de,te->t", a - z, M, a - z)  # noqa: E731
    hinge = np.maximum(0, 1 + D(data.X[i], data.X[j]) - D(data.X[i], data.X[k]))
    assert data.objective(w) == pytest.approx(hinge.mean() + data.beta * w.sum(), rel=1e-12)
    # unit-norm LDA rows: the objective from M alone is the same
    assert data.objective_of_metric(M) == pytest.approx(data.objective(w), rel=1e-10)
    assert data.objective(np.zeros(data.n_basis)) == 1.0


def test_margins_from_the_distinct_pairs_are_one_plus_C_w():
    """``margins`` never forms ``C``: distances of the distinct pairs, by
    the nonzero columns (few weights) or through ``M`` (more weights than
    features); both are ``1 + C w``."""
    X, y = blobs(seed=3)
    fresh = SCMLData.from_labels(X, y, k_genuine=2, k_impostor=4, random_state=0)
    pairs, near, far = fresh.pairs
    t = fresh.triplets
    np.testing.assert_array_equal(pairs[near], t[:, [0, 1]])
    np.testing.assert_array_equal(pairs[far], t[:, [0, 2]])
    assert pairs.shape[0] < 2 * fresh.n_triplets  # the triplets share pairs
    rng = np.random.RandomState(4)
    sparse = np.zeros(fresh.n_basis)
    sparse[[1, 5]] = rng.rand(2)
    dense = rng.rand(fresh.n_basis)
    assert fresh._C is None and dense.size > fresh.n_features
    got = [fresh.margins(sparse), fresh.margins(dense)]
    assert fresh._C is None
    for w, m in zip((sparse, dense), got):
        np.testing.assert_allclose(m, 1 + fresh.C @ w, rtol=1e-12, atol=1e-12)


def test_exact_is_certified_and_the_bound_is_below_every_point(data, solved):
    cert = solved.certificate
    assert solved.status == "optimal" and cert.passed and cert.rel_gap <= EXACT_GAP
    w, a = solved.info["w"], solved.info["a"]
    assert np.all(w >= 0) and np.all((a >= 0) & (a <= 1))
    np.testing.assert_allclose(solved.M, data.metric(w))
    opt = solved.objective
    # the bound holds at any multipliers, and at any w >= 0 it is below F(w)
    rng = np.random.RandomState(0)
    for _ in range(5):
        a_rand = rng.rand(data.n_triplets)
        bound = data.dual_bound(a_rand)
        assert bound <= opt + 1e-12
        w_rand = np.abs(rng.randn(data.n_basis))
        assert bound <= data.objective(w_rand)
    # a point that is not optimal fails its certificate: its gap is its excess
    w_bad = w + 0.05 * np.abs(rng.randn(data.n_basis))
    bad = data.certificate(w_bad, a, solver="test")
    assert not bad.passed and bad.dual_bound <= opt + 1e-12
    assert bad.gap >= data.objective(w_bad) - opt - 1e-12
    # without multipliers: no bound
    assert data.certificate(w, None, solver="test").dual_bound == -np.inf


def test_infeasible_multipliers_are_repaired_rigorously(data, solved):
    """Dual points that break ``beta + C^T a / T >= 0`` still give valid
    bounds (scaled, or paid for on the simplex of w*), and the bound at
    the optimal multipliers matches Clarabel's optimum."""
    a = solved.info["a"]
    q = data.C.T @ np.ones(data.n_triplets) / data.n_triplets
    assert np.min(data.beta + q) < 0  # a = 1 is not dual feasible here
    assert data.dual_bound(np.ones(data.n_triplets)) <= solved.objective
    # perturbed multipliers: still below the optimum; the repair costs about
    # the violation / beta (here 1e-7 / 1e-5: a few 1e-3)
    pert = np.clip(a + 1e-7 * np.random.RandomState(2).randn(a.size), 0, 1)
    b = data.dual_bound(pert, upper=solved.objective)
    assert b <= solved.objective + 1e-12 and b >= solved.objective - 2e-2
    # beta = 0: only exactly feasible multipliers bound above 0
    zero = data.with_beta(0.0)
    assert zero.dual_bound(np.ones(data.n_triplets)) == 0.0


def test_simplex_and_declared_problem_agree(data, solved):
    w, a = simplex_multipliers(data)
    assert data.objective(w) == pytest.approx(solved.objective, abs=1e-9)
    assert data.dual_bound(a) == pytest.approx(solved.objective, abs=1e-9)
    dp = declared_problem(data)
    assert dp.problem.is_dpp() and set(dp.parameters) == {"beta"}
    assert set(dp.constraints) == {"margin", "slack", "nonneg"}
    dp.solve(solver="CLARABEL")
    assert dp.problem.value == pytest.approx(solved.objective, abs=1e-7)
    assert dp.matrix().shape == (3, 3) and dp.M.shape == (3, 3)
    value = dp.solve()
    assert value == pytest.approx(solved.objective, abs=1e-8)
    assert dp.certificate().passed
    assert not dp.certificate(dp.weights() + 0.05).passed
    # beta is a parameter: a new value re-solves to that beta's optimum
    dp.set_parameters(beta=1e-2)
    again = solve_exact(data.with_beta(1e-2))
    assert dp.solve() == pytest.approx(again.objective, abs=1e-8)


def test_bases_as_metric_learn_builds_them():
    X, y = blobs(d=4)
    t = knn_triplets(X, y, 3, 10)
    assert t.shape == (30 * 3 * 10, 3)
    assert np.all(y[t[:, 0]] == y[t[:, 1]]) and np.all(y[t[:, 0]] != y[t[:, 2]])
    B = triplet_diffs_basis(X, t, 40, random_state=0)
    np.testing.assert_allclose(np.linalg.norm(B, axis=1), 1.0)
    np.testing.assert_array_equal(B, triplet_diffs_basis(X, t, 40, random_state=0))
    L = lda_basis(X, y, random_state=0)
    assert L.shape == (min(20 * 4, 2 * 30 * 2 - 1), 4)
    np.testing.assert_array_equal(L, lda_basis(X, y, random_state=0))
    with pytest.raises(ValueError, match="n_basis"):
        lda_basis(X, y, n_basis=10_000)
    with pytest.raises(ValueError, match="triplets"):
        triplet_diffs_basis(X, t[:2], 5)


def test_bad_input():
    X, y = blobs()
    t = knn_triplets(X, y, 2, 2)
    with pytest.raises(ValueError, match="beta"):
        SCMLData(X, t, np.eye(3), beta=-1.0)
    with pytest.raises(ValueError, match="beta"):
        SCMLData(X, t, np.eye(3), beta=np.nan)
    with pytest.raises(ValueError, match="basis"):
        SCMLData(X, t, "pca")
    with pytest.raises(ValueError, match="lda"):
        SCMLData(X, t, "lda")
    with pytest.raises(ValueError, match="basis"):
        SCMLData(X, t, np.eye(4))
    with pytest.raises(ValueError, match="basis"):
        SCMLData(X, t, np.full((2, 3), np.nan))
    with pytest.raises(ValueError, match="X"):
        SCMLData(np.where(np.eye(30, 3) > 0, np.nan, X), t, np.eye(3))
    with pytest.raises(ValueError, match="triplets"):
        SCMLData(X, np.zeros((0, 3), int), np.eye(3))
    with pytest.raises(ValueError, match="triplets"):
        SCMLData(X, t[:, :2], np.eye(3))
    with pytest.raises(ValueError, match="triplets"):
        SCMLData(X, t + 100, np.eye(3))
    with pytest.raises(ValueError, match="triplets"):  # x+ and x- the same point
        SCMLData(X, [[0, 1, 1]], np.eye(3))
    data = SCMLData(X, t, np.eye(3))
    with pytest.raises(ValueError, match="w"):
        data.objective(np.ones(4))
    with pytest.raises(ValueError, match="basis"):
        SCMLData(X, t, 2 * np.eye(3)).objective_of_metric(np.eye(3))
    big = SCMLData(X, np.repeat(t, 10, axis=0), np.tile(np.eye(3), (20_000, 1)))
    with pytest.raises(ValueError, match="EXACT_MAX_ENTRIES"):
        check_exact_size(big)

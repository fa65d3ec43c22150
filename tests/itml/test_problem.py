"""ITML's canonical data: validation, the objective and its gradient, the
dual bound against Clarabel's optimum, the certificate."""

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from sklearn.datasets import load_iris
from sklearn.metrics import pairwise_distances

from cvxmetric import pairs_from_labels
from cvxmetric._tolerances import EXACT_GAP
from cvxmetric.itml import ITMLData, declared_problem, default_bounds, solve_exact


def small(seed=0, n_pairs=40, d=3, gamma=1.0):
    rng = np.random.RandomState(seed)
    y = np.repeat(np.arange(3), 8)
    X = rng.randn(3, d)[y] + rng.randn(y.size, d)
    pairs, labels = pairs_from_labels(y, n_pairs, random_state=seed)
    keep = pairs[:, 0] != pairs[:, 1]
    return ITMLData(X, pairs[keep], labels[keep], gamma=gamma)


@pytest.fixture(scope="module")
def solved():
    data = small()
    return data, solve_exact(data)


def test_default_bounds_are_metric_learns():
    rng = np.random.RandomState(1)
    X = rng.randn(30, 4)
    pairs = np.array([[i, (i + 7) % 30] for i in range(25)])
    points = np.unique(X[np.unique(pairs)], axis=0)
    want = np.percentile(pairwise_distances(points), (5, 95))
    np.testing.assert_allclose(default_bounds(X, pairs), want, rtol=1e-12)
    data = ITMLData(X, pairs, np.where(np.arange(25) % 2, 1, -1))
    np.testing.assert_allclose(data.xi0[data.s > 0], want[0])
    np.testing.assert_allclose(data.xi0[data.s < 0], want[1])


def test_objective_is_the_declared_value_at_the_best_slacks(solved):
    data, result = solved
    M = result.M
    xi = data.slacks(M)
    t = xi / data.xi0
    by_hand = (np.trace(M @ data.M0_inv) - np.linalg.slogdet(M @ data.M0_inv)[1]
               - data.n_features + data.gamma * np.sum(t - np.log(t) - 1))
    assert data.objective(M) == pytest.approx(by_hand, rel=1e-12)
    # the prior with no violated pair costs nothing; an indefinite M is inf
    assert data.objective(-np.eye(3)) == np.inf
    assert data.objective(data.M0) >= result.objective


def test_gradients_match_finite_differences():
    data = small(seed=2)
    rng = np.random.RandomState(0)
    B = rng.randn(3, 3)
    M = B @ B.T + np.eye(3)
    E = rng.randn(3, 3)
    E = E + E.T
    h = 1e-6
    fd = (data.objective(M + h * E) - data.objective(M - h * E)) / (2 * h)
    assert np.sum(data.gradient(M) * E) == pytest.approx(fd, rel=1e-5, abs=1e-7)
    # multipliers inside the dual's domain: on the similar pairs only
    alpha = 0.05 * rng.rand(data.n_pairs) * (data.s > 0)
    assert np.isfinite(data.dual_value(alpha))
    g, grad, _ = data.dual_gradient(alpha)
    fd = approx_fprime(alpha, data.dual_value, 1e-7)
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-5)


def test_dual_bound_is_the_optimum_at_the_solvers_multipliers(solved):
    data, result = solved
    alpha = result.dual
    # strong duality: g(alpha*) = F(M*), and M(alpha*) = M*
    assert data.dual_bound(alpha) == pytest.approx(result.objective, rel=1e-7)
    np.testing.assert_allclose(data.dual_metric(alpha), result.M, rtol=1e-4, atol=1e-6)
    # any admissible multipliers bound the optimum below
    rng = np.random.RandomState(3)
    for scale in (0.0, 0.3, 0.9, 5.0, 1e3):
        a = scale * alpha * rng.uniform(0.5, 1.5, alpha.size)
        assert data.dual_bound(a) <= result.objective + 1e-9


def test_certificate_passes_at_the_optimum_and_not_elsewhere(solved):
    data, result = solved
    assert result.status == "optimal" and result.certificate.passed
    assert result.certificate.rel_gap <= EXACT_GAP
    # a point that is not optimal: its objective is above, the bound below
    M = result.M + 0.05 * np.eye(3)
    cert = data.certificate(M, result.dual)
    assert not cert.passed
    assert cert.dual_bound <= result.objective + 1e-9 < cert.objective
    assert not data.certificate(result.M).passed  # no multipliers: no bound


def test_declared_problem_is_dpp_and_gamma_a_parameter():
    data = small(gamma=0.5)
    dp = declared_problem(data)
    assert dp.problem.is_dpp() and set(dp.parameters) == {"gamma"}
    assert set(dp.constraints) == {"pairs"}
    first = dp.solve()
    assert first == pytest.approx(solve_exact(data).objective, rel=1e-7)
    dp.set_parameters(gamma=2.0)
    assert dp.solve() == pytest.approx(solve_exact(data.with_gamma(2.0)).objective,
                                       rel=1e-7)
    assert dp.certificate().passed


def test_identical_points():
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.5], [2.0, 1.0]])
    # a similar pair of identical points is satisfied by every metric
    data = ITMLData(X, [[0, 1], [0, 2], [1, 3]], [1, 1, -1], bounds=(0.5, 2.0))
    res = solve_exact(data)
    assert res.status == "optimal" and res.dual[0] == pytest.approx(0.0, abs=1e-6)
    # a dissimilar one makes the problem infeasible: refused, naming pairs
    with pytest.raises(ValueError, match="pairs: dissimilar pair 0 joins two identical"):
        ITMLData(X, [[0, 1], [0, 2]], [-1, 1])


@pytest.mark.parametrize("kwargs, match", [
    (dict(gamma=0.0), "gamma"), (dict(gamma=-1.0), "gamma"),
    (dict(gamma=np.nan), "gamma"), (dict(gamma=np.inf), "gamma"),
    (dict(bounds=[1.0]), "bounds"), (dict(bounds=[1.0, -2.0]), "bounds"),
    (dict(bounds=[0.0, 2.0]), "bounds"), (dict(bounds=[np.nan, 2.0]), "bounds"),
    (dict(bounds="ab"), "bounds"),
    (dict(M0=np.diag([1.0, -1.0, 1.0, 1.0])), "M0"),
    (dict(M0=np.diag([1.0, 0.0, 1.0, 1.0])), "M0"),
    (dict(M0=np.triu(np.ones((4, 4)))), "M0"), (dict(M0=np.eye(3)), "M0"),
])
def test_bad_hyperparameters(kwargs, match):
    X, y = load_iris(return_X_y=True)
    pairs, labels = pairs_from_labels(y, 10, random_state=0)
    with pytest.raises(ValueError, match=match):
        ITMLData(X, pairs, labels, **kwargs)


def test_bad_data():
    X, y = load_iris(return_X_y=True)
    pairs, labels = pairs_from_labels(y, 10, random_state=0)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="X"):
        ITMLData(bad, pairs, labels)
    with pytest.raises(ValueError, match="pairs"):
        ITMLData(X, np.empty((0, 2), int), np.empty(0))
    with pytest.raises(ValueError, match="pairs"):
        ITMLData(X, [[0, 150]], [1])
    with pytest.raises(ValueError, match="pairs"):
        ITMLData(X, [[0, 1, 2]], [1])
    with pytest.raises(ValueError, match="labels"):
        ITMLData(X, pairs, labels[:-1])
    with pytest.raises(ValueError, match="labels"):
        ITMLData(X, pairs, np.zeros(len(labels)))
    with pytest.raises(ValueError, match="alpha"):
        ITMLData(X, pairs, labels).dual_bound(np.ones(3))

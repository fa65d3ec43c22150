"""ITML's fast solvers against the exact optimum: the dual Newton method
(certified) and Algorithm 1 (the paper's Bregman projections)."""

import numpy as np
import pytest
from sklearn.datasets import load_wine

from cvxmetric._tolerances import EXACT_GAP, tolerance
from cvxmetric.itml import ITMLBregman, ITMLData, ITMLDualNewton, solve_exact
from cvxmetric.itml.estimator import metric_learn_pairs


def wine_data(n=60, gamma=1.0, M0=None, seed=0):
    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    codes = np.unique(y, return_inverse=True)[1]
    a, b, c, d = metric_learn_pairs(codes, n, seed)
    pairs = np.vstack([np.column_stack([a, b]), np.column_stack([c, d])])
    labels = np.r_[np.ones(len(a), int), -np.ones(len(c), int)]
    return ITMLData(X, pairs, labels, gamma=gamma, M0=M0)


@pytest.mark.parametrize("gamma", [0.1, 1.0, 10.0])
def test_dual_newton_reaches_the_exact_optimum(gamma):
    data = wine_data(gamma=gamma)
    exact = solve_exact(data)
    fast = ITMLDualNewton().run(data)
    assert fast.status == "optimal" and fast.certificate.rel_gap <= EXACT_GAP
    rel = (fast.objective - exact.objective) / max(1.0, abs(exact.objective))
    assert abs(rel) <= tolerance("itml", "fast")
    np.testing.assert_allclose(fast.M, exact.M, rtol=1e-3, atol=1e-5 * np.abs(exact.M).max())
    # its multipliers are the exact path's (strictly convex dual near them)
    np.testing.assert_allclose(fast.dual, exact.dual, atol=1e-4 * max(1, exact.dual.max()))


def test_dual_newton_with_a_prior_and_a_warm_start():
    rng = np.random.RandomState(0)
    B = rng.randn(13, 13)
    M0 = B @ B.T / 13 + 0.5 * np.eye(13)
    data = wine_data(M0=M0, seed=1)
    first = ITMLDualNewton().run(data)
    exact = solve_exact(data)
    assert first.status == "optimal"
    assert first.objective == pytest.approx(exact.objective, rel=1e-6)
    again = ITMLDualNewton().run(data, first)
    assert again.status == "optimal" and again.n_iter <= 1


def test_satisfied_constraints_return_the_prior():
    X = np.array([[0.0, 0.0], [0.1, 0.0], [3.0, 0.0], [0.0, 3.0]])
    data = ITMLData(X, [[0, 1], [2, 3]], [1, -1], bounds=(1.0, 2.0))
    res = ITMLDualNewton().run(data)
    assert res.status == "optimal" and res.n_iter == 0
    np.testing.assert_allclose(res.M, np.eye(2))
    assert res.objective == pytest.approx(0.0, abs=1e-12)


def test_bregman_is_metric_learns_algorithm_and_converges():
    data = wine_data(n=30, seed=2)
    exact = solve_exact(data)
    default = ITMLBregman().run(data, warn=False)
    assert default.certificate.dual_bound <= exact.objective + 1e-9
    assert default.objective >= exact.objective - 1e-9
    # run by its certificate, it reaches the optimum (coordinate ascent)
    tight = ITMLBregman(stop="gap", tol=EXACT_GAP, maxiter=20000).run(data)
    assert tight.status == "optimal"
    assert tight.objective == pytest.approx(exact.objective, rel=1e-6)
    # each pass increases the dual (exact coordinate maximisation)
    values, state = [], ITMLBregman(maxiter=1).init_state(data)[1]
    solver = ITMLBregman()
    M = state.A
    for _ in range(5):
        M, state = solver.update(M, state, data)
        values.append(data.dual_value(state.alpha))
    assert np.all(np.diff(values) >= -1e-10)


def test_solvers_refuse_other_data():
    with pytest.raises(TypeError, match="data"):
        ITMLDualNewton().run(object())
    with pytest.raises(ValueError, match="stop"):
        ITMLBregman(stop="never")

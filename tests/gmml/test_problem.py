"""GMML's canonical data, lower bounds, exact path and closed form."""

import numpy as np
import pytest

from cvxmetric._tolerances import tolerance
from cvxmetric.constraints import pairs_from_labels
from cvxmetric.gmml import (
    GMMLData,
    declared_problem,
    geometric_mean,
    solve_exact,
    solve_fast,
)
from cvxmetric.gmml.exact import EXACT_MAX_FEATURES
from cvxmetric.result import NotAttainedError, ProblemSizeError


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    y = rng.randint(0, 3, 60)
    X = rng.randn(3, 5)[y] + rng.randn(60, 5)
    pairs, labels = pairs_from_labels(y, 80, random_state=0)
    return GMMLData(X, pairs, labels, lam=0.3)


@pytest.fixture(scope="module")
def exact(data):
    return solve_exact(data)


def test_objective_is_eq13(data):
    rng = np.random.RandomState(1)
    R = rng.randn(5, 5)
    M = R @ R.T + np.eye(5)
    Mi = np.linalg.inv(M)
    want = (np.trace(M @ data.A_S) + np.trace(Mi @ data.A_D)
            + 0.3 * (np.trace(M) + np.trace(Mi) - 10))
    assert data.objective(M) == pytest.approx(want, rel=1e-12)
    assert data.objective(-M) == np.inf


def test_closed_form_is_the_riccati_solution(data):
    M = data.closed_form()
    np.testing.assert_allclose(M @ data.A @ M, data.B, rtol=1e-9,
                               atol=1e-9 * np.abs(data.B).max())
    # the geodesic: t = 0 gives A^{-1}, t = 1 gives B
    np.testing.assert_allclose(geometric_mean(data.A, data.B, 0.0),
                               np.linalg.inv(data.A), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(geometric_mean(data.A, data.B, 1.0), data.B,
                               rtol=1e-9, atol=1e-9)


def test_exact_and_fast_agree_and_are_certified(data, exact):
    fast = solve_fast(data)
    assert exact.status == fast.status == "optimal"
    gap = (fast.objective - exact.objective) / max(1.0, abs(exact.objective))
    assert abs(gap) <= tolerance("gmml", "fast")
    np.testing.assert_allclose(exact.M, fast.M, rtol=1e-3, atol=1e-4)
    dp = declared_problem(data)
    assert dp.problem.is_dpp() and set(dp.parameters) == {"lam"}


def test_bound_is_below_every_point(data, exact):
    rng = np.random.RandomState(2)
    bound = data.lower_bound()
    assert bound == pytest.approx(exact.objective, rel=1e-7)
    for t in (0.5, 0.2, 0.9):
        dt = data.with_params(t=t)
        M = dt.closed_form()
        for _ in range(10):
            E = 0.05 * rng.randn(5, 5)
            assert dt.objective(M + E @ E.T) >= dt.lower_bound() - 1e-9
    bad = exact.M + 0.05 * np.eye(5)
    cert = data.certificate(bad, solver="test")
    assert not cert.passed and cert.dual_bound < cert.objective


def test_weighted_mean_is_certified(data):
    res = solve_fast(data.with_params(t=0.25))
    assert res.status == "optimal"
    with pytest.raises(ValueError, match="^t:"):
        solve_exact(data.with_params(t=0.25))


def test_not_attained_without_regulariser():
    """Fewer similar pairs than features and lam = 0: A_S is singular."""
    rng = np.random.RandomState(3)
    X = rng.randn(10, 4)
    data = GMMLData(X, [[0, 1], [2, 3], [4, 5]], [1, -1, -1], lam=0.0)
    for solve in (solve_exact, solve_fast):
        with pytest.raises(NotAttainedError, match="lam"):
            solve(data)
    assert solve_fast(data.with_params(lam=0.1)).status == "optimal"


def test_exact_size_limit():
    d = EXACT_MAX_FEATURES + 1
    X = np.random.RandomState(0).randn(4 * d, d)
    pairs = np.column_stack([np.arange(0, 4 * d, 2), np.arange(1, 4 * d, 2)])
    data = GMMLData(X, pairs, np.where(np.arange(len(pairs)) % 2, 1, -1))
    with pytest.raises(ProblemSizeError, match="data"):
        solve_exact(data)
    assert solve_fast(data).status == "optimal"


@pytest.mark.parametrize("kwargs, match", [
    ({"lam": -1.0}, "lam"), ({"lam": np.inf}, "lam"), ({"t": 1.5}, "t"),
    ({"t": np.nan}, "t"), ({"M0": -np.eye(3)}, "M0"), ({"M0": np.eye(2)}, "M0"),
    ({"M0": np.zeros((3, 3))}, "M0"),
])
def test_bad_parameters(kwargs, match):
    X = np.random.RandomState(0).randn(5, 3)
    with pytest.raises(ValueError, match=match):
        GMMLData(X, [[0, 1], [2, 3]], [1, -1], **kwargs)


@pytest.mark.parametrize("X, pairs, labels, match", [
    (np.full((4, 2), np.nan), [[0, 1]], [1], "X"),
    (np.ones((4, 2)), [[0, 4]], [1], "pairs"),
    (np.ones((4, 2)), np.empty((0, 2), int), [], "pairs"),
    (np.ones((4, 2)), [[0, 1]], [0], "labels"),
])
def test_bad_input(X, pairs, labels, match):
    with pytest.raises(ValueError, match=match):
        GMMLData(X, pairs, labels)


def test_degenerate_pairs():
    """Pairs of identical points add nothing; with lam > 0 the prior's
    problem remains (M = M0 when no pair counts)."""
    X = np.array([[0.0, 1.0], [0.0, 1.0]])
    data = GMMLData(X, [[0, 1], [1, 0]], [1, -1], lam=0.5)
    res = solve_fast(data)
    np.testing.assert_allclose(res.M, np.eye(2), atol=1e-12)

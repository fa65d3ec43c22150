"""SDML's canonical data, certificate, exact and fast paths."""

import numpy as np
import pytest

from cvxmetric._tolerances import tolerance
from cvxmetric.constraints import pairs_from_labels
from cvxmetric.result import ProblemSizeError, UnboundedError
from cvxmetric.sdml import SDMLData, declared_problem, solve_exact, solve_fast
from cvxmetric.sdml.exact import EXACT_MAX_FEATURES


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    y = rng.randint(0, 3, 60)
    X = rng.randn(3, 6)[y] + rng.randn(60, 6)
    pairs, labels = pairs_from_labels(y, 80, random_state=0)
    return SDMLData(X, pairs, labels, balance_param=2e-3, sparsity_param=0.05)


@pytest.fixture(scope="module")
def exact(data):
    return solve_exact(data)


def test_objective_matches_the_formula(data):
    rng = np.random.RandomState(1)
    A = rng.randn(6, 6)
    M = A @ A.T + np.eye(6)
    P = np.eye(6) + 2e-3 * data.K
    off = np.abs(M).sum() - np.abs(np.diag(M)).sum()
    want = np.trace(M @ P) - np.linalg.slogdet(M)[1] + 0.05 * off
    assert data.objective(M) == pytest.approx(want, rel=1e-12)
    assert data.objective(-np.eye(6)) == np.inf  # outside the domain


def test_exact_is_certified_and_dpp(data, exact):
    assert exact.status == "optimal" and exact.certificate.passed
    assert exact.certificate.dual_bound <= exact.objective + 1e-12
    dp = declared_problem(data)
    assert dp.problem.is_dpp()
    assert set(dp.parameters) == {"balance_param", "sparsity_param"}
    # the declared problem's optimal value is the family's objective
    value = dp.solve()
    assert value == pytest.approx(exact.objective, rel=1e-7)


def test_fast_agrees_with_exact(data, exact):
    fast = solve_fast(data)
    assert fast.status == "optimal" and fast.certificate.passed
    gap = (fast.objective - exact.objective) / max(1.0, abs(exact.objective))
    assert abs(gap) <= tolerance("sdml", "fast")
    np.testing.assert_allclose(fast.M, exact.M, atol=1e-3 * np.abs(exact.M).max())


def test_bound_is_below_the_optimum_at_any_point(data, exact):
    """The dual bound of any point (any dual candidate in the box) is below
    the optimum; a perturbed point's certificate fails."""
    rng = np.random.RandomState(2)
    f_star = exact.objective
    for _ in range(20):
        E = 0.05 * rng.randn(6, 6)
        M = exact.M + E + E.T
        assert data.dual_bound(M) <= f_star + 1e-9
        W = data.P + 0.3 * rng.randn(6, 6)
        assert data.dual_value(W + W.T) <= f_star + 1e-9
    bad = exact.M + 0.05 * np.eye(6)
    cert = data.certificate(bad, solver="test")
    assert not cert.passed and cert.dual_bound <= f_star + 1e-9 < cert.objective


def test_dual_bound_matches_a_conic_dual():
    """The bound at the optimum equals the optimum (strong duality): checked
    against CVXPY's solve of the dual max log det W + d over the box."""
    import cvxpy as cp

    rng = np.random.RandomState(3)
    X = rng.randn(30, 4)
    pairs = np.column_stack([np.arange(15), np.arange(15, 30)])
    labels = np.where(np.arange(15) % 2 == 0, 1, -1)
    data = SDMLData(X, pairs, labels, balance_param=0.02, sparsity_param=0.1)
    W = cp.Variable((4, 4), symmetric=True)
    P = data.P
    off = 1 - np.eye(4)
    dual = cp.Problem(cp.Maximize(cp.log_det(W) + 4),
                      [cp.diag(W) == np.diag(P),
                       cp.abs(cp.multiply(off, W - P)) <= 0.1])
    dual.solve(solver="CLARABEL")
    res = solve_exact(data)
    assert dual.value == pytest.approx(res.objective, rel=1e-6)
    assert data.dual_value(W.value) <= res.objective + 1e-9


def test_no_penalty_is_the_inverse(data):
    d0 = data.with_params(sparsity_param=0.0)
    res = solve_fast(d0)
    np.testing.assert_allclose(res.M, np.linalg.inv(d0.P), rtol=1e-10)
    assert res.status == "optimal"


def test_unbounded_is_refused_with_the_ray():
    rng = np.random.RandomState(4)
    y = rng.randint(0, 2, 40)
    X = 3 * rng.randn(2, 3)[y] + rng.randn(40, 3)
    pairs, labels = pairs_from_labels(y, 60, random_state=0)
    data = SDMLData(X, pairs, labels)  # metric-learn's balance_param = 0.5
    v = data.unbounded_direction()
    assert v is not None and data.ray_slope(v) <= 0
    M = np.eye(3) + 1e6 * np.outer(v, v)
    assert data.objective(M) < data.objective(np.eye(3)) - 1e3
    for solve in (solve_exact, solve_fast):
        with pytest.raises(UnboundedError, match="balance_param"):
            solve(data)


def test_indefinite_but_bounded():
    """P indefinite with a positive diagonal: the box around P holds a PD
    matrix (|W_ij - P_ij| <= lam), so the optimum exists; scikit-learn's
    descent cannot start there and the fast path falls back to the exact
    one."""
    P0 = np.eye(2)
    K = np.array([[0.0, 2.0], [2.0, 0.0]])
    data = SDMLData.from_matrices(P0, K, balance_param=1.0, sparsity_param=1.5)
    assert np.linalg.eigvalsh(data.P)[0] < 0 and data.unbounded_direction() is None
    ex = solve_exact(data)
    fast = solve_fast(data)
    assert ex.status == fast.status == "optimal"
    assert "fallback" in fast.info
    assert fast.objective == pytest.approx(ex.objective, rel=1e-6)
    # at a smaller penalty the box holds no PD matrix: unbounded
    tight = data.with_params(sparsity_param=0.5)
    with pytest.raises(UnboundedError):
        solve_exact(tight)


def test_exact_size_limit():
    d = EXACT_MAX_FEATURES + 1
    data = SDMLData.from_matrices(np.eye(d), np.zeros((d, d)), sparsity_param=0.1)
    with pytest.raises(ProblemSizeError, match="data"):
        solve_exact(data)


@pytest.mark.parametrize("kwargs, match", [
    ({"balance_param": -1.0}, "balance_param"),
    ({"balance_param": np.nan}, "balance_param"),
    ({"sparsity_param": -0.1}, "sparsity_param"),
    ({"sparsity_param": True}, "sparsity_param"),
    ({"prior": -np.eye(3)}, "prior"),
    ({"prior": np.zeros((3, 3))}, "prior"),
    ({"prior": np.eye(2)}, "prior"),
    ({"prior": np.array([[1.0, 2.0, 0], [0, 1.0, 0], [0, 0, 1.0]])}, "prior"),
])
def test_bad_parameters(kwargs, match):
    X = np.random.RandomState(0).randn(5, 3)
    with pytest.raises(ValueError, match=match):
        SDMLData(X, [[0, 1], [2, 3]], [1, -1], **kwargs)


@pytest.mark.parametrize("X, pairs, labels, match", [
    (np.full((4, 2), np.nan), [[0, 1]], [1], "X"),
    (np.ones((4, 2)), [[0, 4]], [1], "pairs"),
    (np.ones((4, 2)), [[0, -1]], [1], "pairs"),
    (np.ones((4, 2)), np.empty((0, 2), int), [], "pairs"),
    (np.ones((4, 2)), [[0, 1, 2]], [1], "pairs"),
    (np.ones((4, 2)), [[0, 1]], [2], "labels"),
    (np.ones((4, 2)), [[0, 1]], [1, 1], "labels"),
])
def test_bad_input(X, pairs, labels, match):
    with pytest.raises(ValueError, match=match):
        SDMLData(X, pairs, labels)


def test_degenerate_pairs_are_harmless():
    """Pairs of identical points add nothing to P: the prior's problem."""
    X = np.array([[0.0, 1.0], [0.0, 1.0], [2.0, 0.0]])
    data = SDMLData(X, [[0, 1], [1, 0]], [1, -1], sparsity_param=0.1)
    np.testing.assert_allclose(data.P, np.eye(2))
    res = solve_fast(data)
    np.testing.assert_allclose(res.M, np.eye(2), atol=1e-8)

"""MMC problem data: exact projections, the dual bound, derivatives, degenerate
data and input validation."""

import cvxpy as cp
import numpy as np
import pytest

from cvxmetric._reductions import apply_reductions
from cvxmetric._tolerances import MATRIX_RTOL

from cvxmetric.constraints import LabeledPairs, pairs_from_labels
from cvxmetric.formulations import formulation
from cvxmetric.mmc import (
    MMCData,
    MMCNewton,
    MMCProjectedGradient,
    project_nonneg_halfspace,
    project_psd_halfspace,
)

solve_exact = formulation("mmc").solve_exact  # the registry's warm start, polish


def make_data(n=24, d=4, n_pairs=30, seed=0, diagonal=False):
    rng = np.random.RandomState(seed)
    y = np.arange(n) % 3
    X = rng.randn(3, d)[y] * 1.5 + rng.randn(n, d)
    pairs, labels = pairs_from_labels(y, n_pairs, random_state=seed)
    return MMCData.create(X, pairs, labels, diagonal=diagonal)


def random_psd(d, rng, scale=1.0):
    B = rng.randn(d, d)
    return scale * B @ B.T / d


# ---------------------------------------------------------------------------
# Exact projections, against CVXPY
# ---------------------------------------------------------------------------


def _cvxpy_projection_psd(Y, A, rhs):
    d = Y.shape[0]
    M = cp.Variable((d, d), symmetric=True)
    # the norm (a second-order cone), not its square: a squared objective
    # gives the conic solver's point only sqrt(tol) accuracy
    prob = cp.Problem(cp.Minimize(cp.norm(M - Y, "fro")),
                      [M >> 0, cp.sum(cp.multiply(A, M)) <= rhs])
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10,
               tol_feas=1e-10)
    return M.value


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
@pytest.mark.parametrize("seed", range(4))
def test_psd_halfspace_projection_matches_cvxpy(seed):
    rng = np.random.RandomState(seed)
    d = 5
    Y = rng.randn(d, d)
    Y = Y + Y.T
    A = random_psd(d, rng)
    if seed == 3:  # a singular A: the projection must still be exact
        A = A - np.linalg.eigvalsh(A)[0] * np.eye(d)
    rhs = 0.3
    P, mu = project_psd_halfspace(Y, A, rhs, return_multiplier=True)
    Q = _cvxpy_projection_psd(0.5 * (Y + Y.T), A, rhs)
    Ys = 0.5 * (Y + Y.T)
    assert mu > 0  # the half-space is active for these Y
    assert np.sum(A * P) <= rhs * (1 + 1e-14)
    assert np.linalg.eigvalsh(P)[0] >= -1e-12 * np.linalg.norm(P)
    # the objective (distance to Y) tight, the matrices loosely (the conic
    # solver's point of a rank-deficient projection is only ~sqrt(tol) accurate)
    dist_P, dist_Q = np.linalg.norm(P - Ys), np.linalg.norm(Q - Ys)
    assert dist_P <= dist_Q * (1 + 1e-9)
    assert dist_P == pytest.approx(dist_Q, rel=1e-6)
    assert np.linalg.norm(P - Q) <= MATRIX_RTOL * max(1.0, np.linalg.norm(Q))
    # exactness: the variational inequality <Y - P, Z - P> <= 0 at feasible Z
    for _ in range(50):
        Z = random_psd(Y.shape[0], rng)
        Z *= rng.rand() * rhs / np.sum(A * Z)
        assert np.sum((Ys - P) * (Z - P)) <= 1e-10 * max(1.0, dist_P)


def test_psd_halfspace_inactive_and_monotone_multiplier():
    rng = np.random.RandomState(7)
    d = 4
    A = random_psd(d, rng)
    Y = -random_psd(d, rng)  # Pi_PSD(Y) = 0: already inside
    P, mu = project_psd_halfspace(Y, A, 1.0, return_multiplier=True)
    assert mu == 0.0 and np.allclose(P, 0.0)
    Y = random_psd(d, rng, scale=0.01 / np.trace(A))  # inside: unchanged
    P, mu = project_psd_halfspace(Y, A, 1.0, return_multiplier=True)
    assert mu == 0.0 and np.allclose(P, Y)
    # phi(mu) = <Pi_PSD(Y - mu A), A> is nonincreasing
    from cvxmetric._linalg import project_psd

    Y = rng.randn(d, d) * 3
    vals = [np.sum(project_psd(0.5 * (Y + Y.T) - m * A) * A)
            for m in np.linspace(0, 5, 40)]
    assert np.all(np.diff(vals) <= 1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_nonneg_halfspace_projection_matches_cvxpy(seed):
    rng = np.random.RandomState(seed)
    d = 7
    y = rng.randn(d) * 2
    a = rng.rand(d)
    a[0] = 0.0  # a free coordinate (only w >= 0)
    w, mu = project_nonneg_halfspace(y, a, 0.5, return_multiplier=True)
    v = cp.Variable(d)
    cp.Problem(cp.Minimize(cp.norm(v - y)), [v >= 0, a @ v <= 0.5]).solve(
        solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert a @ w <= 0.5 * (1 + 1e-14) and np.all(w >= 0)
    dist_w, dist_v = np.linalg.norm(w - y), np.linalg.norm(v.value - y)
    assert dist_w <= dist_v * (1 + 1e-9)
    assert dist_w == pytest.approx(dist_v, rel=1e-6)
    assert np.linalg.norm(w - v.value) <= MATRIX_RTOL * max(1.0, np.linalg.norm(y))
    # an independent exact answer: bisection on mu to machine precision
    lo, hi = 0.0, float(np.max(y / np.where(a > 0, a, np.inf))) + 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if a @ np.maximum(y - mid * a, 0) > 0.5 else (lo, mid)
    np.testing.assert_allclose(w, np.maximum(y - hi * a, 0), rtol=1e-12, atol=1e-12)
    assert mu == pytest.approx(hi, rel=1e-12)
    assert w[0] == max(y[0], 0.0)


# ---------------------------------------------------------------------------
# Scale-free value and the dual bound
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("diagonal", [False, True])
def test_scale_free_value_is_scale_invariant(diagonal):
    data = make_data(diagonal=diagonal)
    rng = np.random.RandomState(1)
    d = data.n_features
    M = np.diag(rng.rand(d)) if diagonal else random_psd(d, rng)
    r = data.scale_free(M)
    assert data.scale_free(37.5 * M) == pytest.approx(r, rel=1e-12)
    # by hand: sum_S D2 / (sum_D sqrt D2)^2
    X = data.X
    PS = X[data.similar[:, 0]] - X[data.similar[:, 1]]
    PD = X[data.dissimilar[:, 0]] - X[data.dissimilar[:, 1]]
    num = np.sum((PS @ M) * PS)
    den = np.sum(np.sqrt(np.sum((PD @ M) * PD, axis=1))) ** 2
    assert r == pytest.approx(num / den, rel=1e-12)
    # the same after scaling X (distances scale, r does not)
    other = MMCData.create(3.0 * X, np.vstack([data.similar, data.dissimilar]),
                           np.r_[np.ones(data.n_similar), -np.ones(data.n_dissimilar)]
                           .astype(int), diagonal=diagonal)
    assert other.scale_free(M) == pytest.approx(r, rel=1e-12)


@pytest.mark.parametrize("diagonal", [False, True])
def test_dual_bound_is_valid_and_tight(diagonal):
    data = make_data(diagonal=diagonal, seed=2)
    exact = solve_exact(data)
    r_star = exact.objective
    rng = np.random.RandomState(3)
    for _ in range(20):  # any u > 0 gives a lower bound
        u = rng.rand(data.n_dissimilar) + 1e-3
        assert data.dual_bound(u) <= r_star * (1 + 1e-9)
    d = data.n_features
    for _ in range(10):  # bounds at other points, too
        M = np.diag(rng.rand(d)) if diagonal else random_psd(d, rng)
        x = data.as_variable(M)
        assert data.bound_at(x) <= r_star * (1 + 1e-9)
        assert r_star <= data.scale_free(M) * (1 + 1e-9)
    # tight at the optimum: the certificate's relative gap (at the fast
    # solvers' point, accurate to 1e-10; at an interior-point solution the
    # bound is first-order in the point's error when several coordinates
    # or eigenvalues are active, hence the certificate's polishing)
    assert exact.certificate.rel_gap <= 1e-6
    fast = (MMCNewton() if diagonal else MMCProjectedGradient()).run(data)
    x = fast.info["w"] if diagonal else fast.M
    assert (r_star - data.bound_at(x)) / r_star <= 1e-6
    assert data.dual_bound(np.zeros(data.n_dissimilar)) == 0.0


# ---------------------------------------------------------------------------
# Hand-written derivatives against finite differences
# ---------------------------------------------------------------------------


def test_grad_g_full_finite_differences():
    data = make_data(seed=4)
    rng = np.random.RandomState(4)
    d = data.n_features
    M = random_psd(d, rng) + 0.5 * np.eye(d)
    G = data.grad_g(data.sqdist_D(M))
    for _ in range(5):
        V = rng.randn(d, d)
        V = 0.5 * (V + V.T)
        h = 1e-6
        fd = (data.g(M + h * V) - data.g(M - h * V)) / (2 * h)
        assert np.sum(G * V) == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_grad_g_diagonal_finite_differences():
    data = make_data(seed=5, diagonal=True)
    rng = np.random.RandomState(5)
    w = rng.rand(data.n_features) + 0.2
    grad = data.grad_g(data.sqdist_D(w))
    h = 1e-6
    for k in range(data.n_features):
        e = np.zeros_like(w)
        e[k] = h
        fd = (data.g(w + e) - data.g(w - e)) / (2 * h)
        assert grad[k] == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_newton_gradient_and_hessian_finite_differences():
    data = make_data(seed=6, diagonal=True)
    # the reduced problem Newton iterates on (Jacobi units, relevant coordinates)
    prob, _, _ = apply_reductions(MMCNewton().reductions(data), data, None)
    rng = np.random.RandomState(6)
    w = rng.rand(len(prob.K)) + 0.2
    h0, dist = prob.h(w)
    # h = a^T w - log sum_D sqrt(psi^T w), by hand
    assert h0 == pytest.approx(prob.a @ w - np.log(np.sum(np.sqrt(
        prob.Psi @ w))), rel=1e-14)
    grad, H = prob.derivatives(w, dist)
    step = 1e-6
    for k in range(len(w)):
        e = np.zeros_like(w)
        e[k] = step
        fd = (prob.h(w + e)[0] - prob.h(w - e)[0]) / (2 * step)
        assert grad[k] == pytest.approx(fd, rel=1e-6, abs=1e-9)
        gp = prob.derivatives(w + e, prob.h(w + e)[1])[0]
        gm = prob.derivatives(w - e, prob.h(w - e)[1])[0]
        np.testing.assert_allclose(H[:, k], (gp - gm) / (2 * step),
                                   rtol=1e-5, atol=1e-8)


# ---------------------------------------------------------------------------
# Degenerate data
# ---------------------------------------------------------------------------


def degenerate_data(diagonal):
    """Similar pairs vary only in features 0, 1; dissimilar pairs also in 2."""
    rng = np.random.RandomState(8)
    X = rng.randn(12, 3)
    X[1::2, 2] = X[0::2, 2]  # pairs (0,1), (2,3), ... share feature 2
    sim = np.array([[0, 1], [2, 3], [4, 5], [6, 7]])
    dis = np.array([[0, 8], [1, 9], [2, 10], [3, 11]])
    labels = np.r_[np.ones(4), -np.ones(4)].astype(int)
    return MMCData.create(X, np.vstack([sim, dis]), labels, diagonal=diagonal)


@pytest.mark.parametrize("diagonal", [False, True])
def test_degenerate_data_certified_zero(diagonal):
    data = degenerate_data(diagonal)
    assert data.degenerate
    res = solve_exact(data)
    assert "degenerate" in res.info and "null space" in res.info["degenerate"]
    assert res.certificate.passed
    assert res.certificate.dual_bound == 0.0
    assert res.objective <= 1e-12 * data.euclidean_value()
    # the returned metric only sees feature 2 and has g = 1
    M = res.M
    assert np.allclose(M[:2, :], 0.0, atol=1e-12) and M[2, 2] > 0
    assert data.g(data.as_variable(M)) == pytest.approx(1.0, rel=1e-12)


def test_singular_but_not_degenerate():
    """Rank-deficient data: A_S singular, its null space unseen by D."""
    rng = np.random.RandomState(9)
    y = np.arange(30) % 3
    Z = rng.randn(3, 2)[y] * 2 + rng.randn(30, 2)
    X = Z @ rng.randn(2, 4)
    pairs, labels = pairs_from_labels(y, 40, random_state=9)
    data = MMCData.create(X, pairs, labels)
    assert np.linalg.matrix_rank(data.A_S) == 2 and not data.degenerate
    res = solve_exact(data)
    assert res.certificate.passed and res.objective > 0


# ---------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------


def test_bad_inputs_name_the_argument():
    X = np.random.RandomState(0).randn(6, 2)
    with pytest.raises(ValueError, match="no similar pair"):
        MMCData.create(X, [[0, 1], [2, 3]], [-1, -1])
    with pytest.raises(ValueError, match="no dissimilar pair"):
        MMCData.create(X, [[0, 1], [2, 3]], [1, 1])
    with pytest.raises(ValueError, match="zero-length"):
        MMCData.create(X, [[0, 1], [2, 2]], [1, -1])
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="^X: .*NaN"):
        MMCData.create(Xn, [[0, 1], [2, 3]], [1, -1])
    with pytest.raises(ValueError, match="labels: must be"):
        MMCData.create(X, [[0, 1], [2, 3]], [1, 0])
    with pytest.raises(ValueError, match="diagonal"):
        MMCData.create(X, [[0, 1], [2, 3]], [1, -1], diagonal="yes")
    with pytest.raises(TypeError, match="pairs"):
        MMCData.from_pairs("not pairs")
    data = MMCData.create(X, [[0, 1], [2, 3]], [1, -1], diagonal=True)
    with pytest.raises(ValueError, match="off-diagonal"):
        data.scale_free(np.ones((2, 2)))
    with pytest.raises(ValueError, match="diagonal problem"):
        MMCNewton().run(MMCData.create(X, [[0, 1], [2, 3]], [1, -1]))


def test_labeled_pairs_route():
    X = np.random.RandomState(0).randn(6, 2)
    lp = LabeledPairs.create(X, [[0, 1], [2, 3], [4, 5]], [1, -1, -1])
    data = MMCData.from_pairs(lp)
    assert data.n_similar == 1 and data.n_dissimilar == 2

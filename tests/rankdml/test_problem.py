"""RankData: divergences, the trace fix, primal maps, derivatives, validation."""

import cvxpy as cp
import numpy as np
import pytest

from cvxmetric.constraints import Triplets
from cvxmetric.rankdml import (
    RankData,
    burg_divergence,
    logdet_divergence,
    paper_divergence,
)
from cvxmetric.rankdml._problem import project_capped_simplex


def _random_pd(d, seed):
    rng = np.random.RandomState(seed)
    B = rng.randn(d, d)
    return B @ B.T + 0.3 * np.eye(d)


def _sym(rng, d):
    S = rng.randn(d, d)
    return S + S.T


# ---------------------------------------------------------------------------
# Divergences and the trace fix
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["burg", "logdet"])
@pytest.mark.parametrize("c", [1e-3, 0.5, 7.0, 1e4])
def test_paper_normalisation_is_scale_invariant(kind, c):
    # D(cA, A0hat(cA)) = D(A, A0hat(A)) with A0hat(A) = A0 tr(A) / tr(A0):
    # the paper's Eq. 9 cannot fix the scale of A, hence the trace fix
    A, A0 = _random_pd(4, 0), _random_pd(4, 1)
    base = paper_divergence(A, A0, kind)
    assert paper_divergence(c * A, A0, kind) == pytest.approx(base, rel=1e-9)
    # without the normalisation the divergence does depend on the scale
    div = burg_divergence if kind == "burg" else logdet_divergence
    assert abs(div(c * A, A0) - div(A, A0)) > 1e-3


def test_divergences_as_printed():
    A, A0 = _random_pd(3, 2), _random_pd(3, 3)
    P = np.linalg.inv(A0)
    AP = A @ P
    logdet = np.linalg.slogdet(A)[1] - np.linalg.slogdet(A0)[1]
    # Eq. 8 as printed: tr(A A0^-1 (A A0^-1)^T) - 2 logdet(A A0^-1) - d
    want_printed = np.trace(AP @ AP.T) - 2 * logdet - 3
    assert burg_divergence(A, A0) == pytest.approx(want_printed, rel=1e-10)
    # the spectral form: tr((A A0^-1)^2) - 2 logdet(A A0^-1) - d
    want_burg = np.trace(AP @ AP) - 2 * logdet - 3
    assert burg_divergence(A, A0, "spectral") == pytest.approx(want_burg, rel=1e-10)
    # they differ when A and A0 do not commute (Cauchy-Schwarz: printed >=)
    assert want_printed > want_burg + 1e-3
    want_ld = np.trace(AP) - (np.linalg.slogdet(A)[1] - np.linalg.slogdet(A0)[1]) - 3
    assert logdet_divergence(A, A0) == pytest.approx(want_ld, rel=1e-10)
    # zero exactly at A = A0, positive elsewhere
    assert burg_divergence(A0, A0) == pytest.approx(0.0, abs=1e-10)
    assert logdet_divergence(A0, A0) == pytest.approx(0.0, abs=1e-10)
    assert burg_divergence(A, A0) > 0 and logdet_divergence(A, A0) > 0
    # the printed tr(A P (A P)^T) equals tr((A P)^2) when A and A0 commute
    D = np.diag([1.0, 2.0, 3.0])
    D0 = np.diag([2.0, 1.0, 0.5])
    P0 = np.linalg.inv(D0)
    assert np.trace(D @ P0 @ (D @ P0).T) == pytest.approx(np.trace(D @ P0 @ D @ P0))
    assert burg_divergence(np.diag(np.diag(D)), D0) == pytest.approx(
        burg_divergence(D, D0, "spectral"), rel=1e-12)
    assert burg_divergence(-A, A0) == np.inf
    with pytest.raises(ValueError, match="form"):
        burg_divergence(A, A0, "trace_fixed")


def test_paper_remark_diagonal_form():
    # Remark after Eq. 9: for diagonal A, A0, D = sum (a/b)^2 - 2 sum log(a/b) - d
    a, b = np.array([1.0, 2.0, 0.5]), np.array([0.5, 1.5, 2.0])
    want = np.sum((a / b) ** 2) - 2 * np.sum(np.log(a / b)) - 3
    assert burg_divergence(np.diag(a), np.diag(b)) == pytest.approx(want, rel=1e-12)


def test_penalty_matches_divergence_with_normalised_prior(rank_triplets, rk):
    d = rank_triplets.X.shape[1]
    A0 = rk.pd_matrix(d, seed=7)
    for reg, div in (("burg", burg_divergence), ("logdet", logdet_divergence)):
        data = RankData.from_triplets(rank_triplets, regularizer=reg, A0=A0, tau=2.5)
        np.testing.assert_allclose(data.A0hat, A0 * 2.5 / np.trace(A0))
        A = _random_pd(d, 5)
        A *= 2.5 / np.trace(A)
        # on the feasible set tr(A) = tau the paper's normalisation holds:
        # the penalty is D(A, A0 tr(A) / tr(A0))
        assert data.penalty(A) == pytest.approx(div(A, data.A0hat), rel=1e-10)
        assert data.penalty(A) == pytest.approx(paper_divergence(A, A0, reg), rel=1e-10)


def test_laplacian_penalty_is_the_paper_variance(rank_triplets):
    data = RankData.from_triplets(rank_triplets, regularizer="laplacian", diagonal=True)
    a = np.array([0.5, 1.0, 1.5, 1.0])
    d = len(a)
    L = np.eye(d) - np.ones((d, d)) / d
    assert data.penalty(a) == pytest.approx(a @ L @ a)
    assert data.penalty(a) == pytest.approx(np.sum((a - a.mean()) ** 2))
    assert data.tau is None and not data.trace_fixed  # Eq. 11 as printed
    fixed = RankData.from_triplets(rank_triplets, regularizer="laplacian", diagonal=True,
                                   form="trace_fixed")
    assert fixed.tau == d and fixed.trace_fixed  # default: tr(I)
    assert fixed.penalty(a) == data.penalty(a)


def test_capped_simplex_projection():
    rng = np.random.RandomState(0)
    for _ in range(5):
        v = rng.randn(7) * 3
        a, theta = project_capped_simplex(v, 2.0)
        assert a.min() >= 0 and a.sum() == pytest.approx(2.0, rel=1e-14)
        x = cp.Variable(7)
        cp.Problem(cp.Minimize(cp.sum_squares(x - v)), [x >= 0, cp.sum(x) == 2]).solve(
            solver="CLARABEL")
        # CVXPY at its default accuracy as a loose reference ...
        np.testing.assert_allclose(a, x.value, atol=1e-5)
        # ... and the exact optimality (KKT) conditions: a = max(v - theta, 0)
        np.testing.assert_allclose(a, np.maximum(v - theta, 0.0), atol=1e-14)


# ---------------------------------------------------------------------------
# Canonical form
# ---------------------------------------------------------------------------


def test_margins_and_constraint_values(rank_triplets):
    X, T = rank_triplets.X, rank_triplets.indices
    A = _random_pd(X.shape[1], 4)

    def d2(i, j):
        diff = X[i] - X[j]
        return np.einsum("pd,de,pe->p", diff, A, diff)

    want = 1.0 + d2(T[:, 0], T[:, 1]) - d2(T[:, 0], T[:, 2])
    full = RankData.from_triplets(rank_triplets)
    np.testing.assert_allclose(full.margins(A), want, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(full.constraint_values(A), 1.0 - want, rtol=1e-10,
                               atol=1e-10)
    diag = RankData.from_triplets(rank_triplets, diagonal=True)
    a = np.diag(A)
    want_d = 1.0 + (((X[T[:, 0]] - X[T[:, 1]]) ** 2 - (X[T[:, 0]] - X[T[:, 2]]) ** 2)
                    @ a)
    np.testing.assert_allclose(diag.margins(a), want_d, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(diag.margins(np.diag(a)), want_d, rtol=1e-10, atol=1e-10)


def test_S_is_the_weighted_sum_of_K(rank_triplets):
    data = RankData.from_triplets(rank_triplets)
    X, T = rank_triplets.X, rank_triplets.indices
    rng = np.random.RandomState(0)
    alpha = rng.rand(len(T))
    want = np.zeros((X.shape[1], X.shape[1]))
    for (q, r, i), w in zip(T, alpha):  # reference only: one matrix per triplet
        pf, pn = X[q] - X[i], X[q] - X[r]
        want += w * (np.outer(pf, pf) - np.outer(pn, pn))
    np.testing.assert_allclose(data.S_of(alpha), want, rtol=1e-10, atol=1e-10)
    diag = RankData.from_triplets(rank_triplets, diagonal=True)
    np.testing.assert_allclose(diag.S_of(alpha), np.diag(want), rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------------------
# Primal maps, their derivatives and the dual gradient
# ---------------------------------------------------------------------------


def _cvxpy_inner(data, S):
    """min_F (lam/2) Reg(A) - <S, A> by CVXPY (reference)."""
    d, lam = data.n_features, data.lam
    if data.diagonal:
        a = cp.Variable(d, nonneg=True)
        if data.regularizer == "frobenius":
            obj, cons = 0.5 * lam * cp.sum_squares(a) - S @ a, []
        else:
            obj = 0.5 * lam * cp.sum_squares(a - cp.sum(a) / d) - S @ a
            # Eq. 11 as printed has no trace constraint
            cons = [cp.sum(a) == data.tau] if data.form == "trace_fixed" else []
    else:
        a = cp.Variable((d, d), symmetric=True)
        cons = [a >> 0]
        if data.regularizer == "frobenius":
            reg = cp.sum_squares(a)
        else:
            B = data.W @ a @ data.W
            cons.append(cp.trace(a) == data.tau)
            if data.regularizer == "burg" and data.form == "printed":
                # Eq. 8 as printed: ||A A0hat^{-1}||_F^2, A0hat^{-1} formed here
                P = np.linalg.inv(data.A0 * data.tau / np.trace(data.A0))
                first = cp.sum_squares(a @ (0.5 * (P + P.T)))
            else:
                first = cp.sum_squares(B)
            reg = (first - 2 * cp.log_det(B) - d
                   if data.regularizer == "burg" else cp.trace(B) - cp.log_det(B) - d)
        obj = 0.5 * lam * reg - cp.sum(cp.multiply(S, a))
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver="CLARABEL")
    return prob.value


def _random_S(data, seed):
    rng = np.random.RandomState(seed)
    d = data.n_features
    S = rng.randn(d) * 2 if data.diagonal else _sym(rng, d)
    if data.free_laplacian:
        # the printed Eq. 11's inner minimum is finite only for 1^T S <= 0
        S = S - S.mean() - 0.3
    return S


def test_primal_map_solves_the_inner_problem(kind_data):
    data = kind_data
    for seed in range(2):
        S = _random_S(data, seed)
        A, lower, _ = data.primal_map(S)
        at_A = 0.5 * data.lam * data.penalty(A) - float(np.sum(S * A))
        ref = _cvxpy_inner(data, S)
        # A is feasible, its value is the minimum, and the bound is valid
        viol, _ = data.violation(A)
        assert viol <= 1e-12 * max(1.0, data.tau or 1.0)
        assert at_A == pytest.approx(ref, rel=1e-6, abs=1e-7)
        assert lower <= at_A + 1e-10 * max(1.0, abs(at_A))
        assert lower == pytest.approx(at_A, rel=1e-10, abs=1e-10)


def test_primal_jvp_matches_finite_differences(kind_data):
    data = kind_data
    S = _random_S(data, 3)
    dS = _random_S(data, 4)
    A, _, _, cache = data.primal_map_cached(S)
    dA = data.primal_jvp(cache, dS)
    h = 1e-6
    fd = (data.primal_map(S + h * dS)[0] - data.primal_map(S - h * dS)[0]) / (2 * h)
    scale = max(1e-8, float(np.max(np.abs(fd))))
    assert float(np.max(np.abs(dA - fd))) <= 1e-6 * scale
    # the Jacobian of a gradient map of a convex function is PSD
    assert float(np.sum(dS * dA)) >= -1e-12


def test_dual_gradient_matches_finite_differences(kind_data):
    # d g / d alpha_t = 1 - <A*(alpha), K_t> (the hinge argument at A*)
    data = kind_data
    rng = np.random.RandomState(5)
    alpha = rng.uniform(0.2, 0.8, data.n_constraints)
    if data.free_laplacian:
        # strictly inside the printed Eq. 11's dual domain 1^T S(alpha) < 0
        s = data.K.sum(axis=1)
        alpha = np.where(s < 0, rng.uniform(0.6, 0.9, len(s)), rng.uniform(0.0, 0.1, len(s)))
        assert s @ alpha < -1e-3 * (np.abs(s) @ alpha)
        np.testing.assert_array_equal(data.dual_feasible(alpha), alpha)
    g, A, _ = data.dual_value(alpha)
    grad = data.margins(A)
    h = 1e-6
    for t in rng.choice(data.n_constraints, 5, replace=False):
        e = np.zeros_like(alpha)
        e[t] = h
        fd = (data.dual_value(alpha + e)[0] - data.dual_value(alpha - e)[0]) / (2 * h)
        assert fd == pytest.approx(grad[t], rel=1e-5, abs=1e-6 * max(1.0, abs(g)))


def test_dual_bound_is_below_every_feasible_objective(kind_data, kind_exact):
    data = kind_data
    rng = np.random.RandomState(6)
    f_star = kind_exact.objective
    for _ in range(5):
        alpha = rng.rand(data.n_constraints)
        assert data.dual_bound(alpha) <= f_star * (1 + 1e-9) + 1e-9
        # a feasible point from the primal map is an upper bound
        _, A, _ = data.dual_value(alpha)
        assert data.objective(A) >= f_star * (1 - 1e-9) - 1e-9


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("A0, match", [
    (np.diag([1.0, 1.0, -1.0, 1.0]), "A0: matrix is not positive semidefinite"),
    (np.diag([1.0, 1.0, 0.0, 1.0]), "A0: matrix is singular"),
    (np.array([[1.0, 0.5, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]),
     "A0: matrix is not symmetric"),
    (np.full((4, 4), np.nan), "A0: contains"),
    (np.eye(3), r"A0: expected shape"),
])
@pytest.mark.parametrize("reg", ["burg", "logdet"])
def test_bad_prior_is_rejected(rank_triplets, A0, match, reg):
    with pytest.raises(ValueError, match=match):
        RankData.from_triplets(rank_triplets, regularizer=reg, A0=A0)


@pytest.mark.parametrize("tau", [0.0, -1.0, np.nan, np.inf])
@pytest.mark.parametrize("kw", [dict(regularizer="burg"),
                                dict(regularizer="logdet"),
                                dict(regularizer="laplacian", diagonal=True)])
def test_bad_tau_is_rejected(rank_triplets, tau, kw):
    with pytest.raises(ValueError, match="tau"):
        RankData.from_triplets(rank_triplets, tau=tau, **kw)


@pytest.mark.parametrize("kw, exc, match", [
    (dict(regularizer="nope"), ValueError, "regularizer: unknown option"),
    (dict(lam=-1.0), ValueError, "lam: must be >= 0"),
    # lam = 0: tests/rankdml/test_lam_zero.py (these triplets leave it unbounded)
    (dict(lam=0.0), ValueError, "lam: 0 leaves this problem without a bounded"),
    (dict(lam=np.nan), ValueError, "lam: must be finite"),
    (dict(lam="1"), TypeError, "lam"),
    (dict(regularizer="laplacian"), ValueError, "diagonal: the 'laplacian'"),
    (dict(regularizer="burg", diagonal=True), ValueError, "diagonal: the 'burg'"),
    (dict(A0=np.eye(4)), ValueError, "A0: only the 'burg' and 'logdet'"),
    (dict(tau=2.0), ValueError, "tau: the 'frobenius' regulariser"),
    (dict(diagonal=1), TypeError, "diagonal"),
])
def test_bad_options_are_rejected(rank_triplets, kw, exc, match):
    with pytest.raises(exc, match=match):
        RankData.from_triplets(rank_triplets, **kw)


def test_triplets_are_validated():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(TypeError, match="triplets"):
        RankData.from_triplets(np.array([[0, 1, 2]]))
    with pytest.raises(ValueError, match="out of range"):
        Triplets.create(X, [[0, 1, 3]])
    with pytest.raises(ValueError, match="zero length"):
        Triplets.create(X, [[0, 0, 0]])
    with pytest.raises(ValueError, match="NaN"):
        Triplets.create(np.array([[np.nan, 0.0], [1.0, 0.0]]), [[0, 1, 1]])


def test_make_data_helper_builds_every_kind(rank_triplets, rk):
    # guards the fixture table itself
    data = rk.make_data(rank_triplets, regularizer="burg", A0="pd", tau=2.5)
    assert not data.isotropic and data.tau == 2.5
    assert RankData.from_triplets(rank_triplets, regularizer="burg").isotropic


def test_burg_spectral_map_and_its_derivative():
    # b = f(z) solves lam (b - 1/b) = z (the stationarity of the whitened
    # Burg term); f' feeds the Newton root of the trace multiplier
    from cvxmetric.rankdml._problem import _burg_spectral, _burg_spectral_deriv

    lam = 0.7
    z = np.array([-1e6, -30.0, -1.0, 0.0, 0.5, 40.0, 1e6])
    b = _burg_spectral(z, lam)
    assert np.all(b > 0)
    np.testing.assert_allclose(lam * (b - 1 / b), z, rtol=1e-12, atol=1e-9)
    h = 1e-6 * np.maximum(1.0, np.abs(z))
    fd = (_burg_spectral(z + h, lam) - _burg_spectral(z - h, lam)) / (2 * h)
    np.testing.assert_allclose(_burg_spectral_deriv(z, lam), fd, rtol=1e-6)

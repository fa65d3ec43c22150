"""SLR problem data: coordinates, Eq. 1 / Eq. 3, Eq. 4, derivatives, bounds."""

import numpy as np
import pytest

from cvxmetric._tolerances import EXACT_GAP
from cvxmetric.slr import SLRData, eq3_closed_form, solve_eq1
from cvxmetric.slr._problem import newton_decrement, smat, svec


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


@pytest.fixture(scope="module")
def small():
    """24 points in 5 dims, 3 classes (n > d)."""
    rng = np.random.RandomState(0)
    y = np.arange(24) % 3
    X = rng.normal(size=(24, 5)) + 0.8 * rng.normal(size=(3, 5))[y]
    return X, y


@pytest.fixture(scope="module")
def data(small):
    return SLRData.from_labels(*small)


def _brute_objective(X, y, M, delta1=1.0, delta2=0.0):
    """Eq. 4 written pair by pair (the paper's two sums)."""
    total = 0.0
    for i in range(len(y)):
        for j in range(len(y)):
            k = X[i] @ M @ X[j]
            if y[i] == y[j]:
                total += max(delta1 - k, 0.0) ** 2
            else:
                total += max(k - delta2, 0.0) ** 2
    return total


# ---------------------------------------------------------------------------
# Coordinates
# ---------------------------------------------------------------------------


def test_svec_is_an_isometry_and_inverse():
    rng = np.random.RandomState(1)
    A, B = rng.normal(size=(2, 4, 4))
    A, B = A + A.T, B + B.T
    assert np.isclose(svec(A) @ svec(B), np.sum(A * B))
    np.testing.assert_allclose(smat(svec(A), 4), A)
    # the symmetric part of a general matrix
    C = rng.normal(size=(4, 4))
    np.testing.assert_allclose(smat(svec(C), 4), 0.5 * (C + C.T))


def test_gram_rewrite_K_equals_U_Z_Ut(data):
    rng = np.random.RandomState(2)
    M = rng.normal(size=(5, 5))  # general, non-symmetric
    Z = data.Z_of_M(M)
    np.testing.assert_allclose(data.X @ M @ data.X.T, data.U @ Z @ data.U.T,
                               atol=1e-10)
    # M_of_Z is a right inverse: same K, minimum norm
    M2 = data.M_of_Z(Z)
    np.testing.assert_allclose(data.Z_of_M(M2), Z, atol=1e-10)
    assert np.linalg.norm(M2) <= np.linalg.norm(M) + 1e-12


def test_rank_deficient_X_is_truncated():
    rng = np.random.RandomState(3)
    X = rng.normal(size=(20, 3)) @ rng.normal(size=(3, 7))
    y = np.arange(20) % 2
    d = SLRData.from_labels(X, y)
    assert d.rank == 3 and d.n_sym == 6
    M = rng.normal(size=(7, 7))
    np.testing.assert_allclose(d.X @ M @ d.X.T, d.U @ d.Z_of_M(M) @ d.U.T,
                               atol=1e-9)


# ---------------------------------------------------------------------------
# Eq. 4 objective, gradient and Hessian
# ---------------------------------------------------------------------------


def test_objective_matches_the_paper_sums(small, data):
    X, y = small
    M = np.random.RandomState(4).normal(scale=0.3, size=(5, 5))
    ref = _brute_objective(X, y, M)
    assert np.isclose(data.objective(M), ref, rtol=1e-12)
    assert np.isclose(data.objective_Z(data.Z_of_M(M)), ref, rtol=1e-10)
    d2 = SLRData.from_labels(X, y, delta1=2.0, delta2=-0.5)
    assert np.isclose(d2.objective(M), _brute_objective(X, y, M, 2.0, -0.5),
                      rtol=1e-12)


def test_objective_includes_the_diagonal(small, data):
    # M = 0: every same-class term is delta1^2 = 1 (including i = j), every
    # different-class term 0
    X, y = small
    n_same = int(np.sum(y[:, None] == y[None, :]))
    assert data.objective(np.zeros((5, 5))) == n_same


def test_blocks_do_not_change_the_passes(small, data):
    X, y = small
    tiny = SLRData.from_labels(X, y, block=50)  # 2 rows per block
    assert tiny.block_rows == 2
    Z = np.random.RandomState(5).normal(scale=0.3, size=(5, 5))
    Z = Z + Z.T
    for a, b in zip(data.evaluate(Z, grad=True, hessian=True),
                    tiny.evaluate(Z, grad=True, hessian=True)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_gradient_matches_finite_differences(data):
    rng = np.random.RandomState(6)
    Z = rng.normal(scale=0.3, size=(5, 5))  # non-symmetric is allowed
    _, G, _, _ = data.evaluate(Z, grad=True)
    for _ in range(3):
        E = rng.normal(size=(5, 5))
        h = 1e-6
        fd = (data.objective_Z(Z + h * E) - data.objective_Z(Z - h * E)) / (2 * h)
        assert np.isclose(fd, np.sum(G * E), rtol=1e-6, atol=1e-6)


def test_hessian_matches_finite_differences_of_the_gradient(data):
    rng = np.random.RandomState(7)
    Z = rng.normal(scale=0.3, size=(5, 5))
    Z = Z + Z.T
    _, _, H, n_active = data.evaluate(Z, grad=True, hessian=True)
    assert 0 < n_active < data.n_samples ** 2
    z = svec(Z)
    h = 1e-6
    for _ in range(3):
        v = rng.normal(size=z.size)
        gp = svec(data.evaluate(smat(z + h * v, 5), grad=True)[1])
        gm = svec(data.evaluate(smat(z - h * v, 5), grad=True)[1])
        np.testing.assert_allclose((gp - gm) / (2 * h), H @ v, rtol=1e-5,
                                   atol=1e-6)
    # 0 <= H <= 2 I, and H = 2 I when every term is active
    w = np.linalg.eigvalsh(H)
    assert w[0] >= -1e-12 and w[-1] <= 2 + 1e-12


def test_hessian_is_2I_when_every_term_is_active(small):
    X, y = small
    d = SLRData.from_labels(X, y)
    # Z = 0 with delta2 < 0: every same-class term (1 - 0 > 0) and every
    # different-class term (0 - delta2 > 0) is active
    d = SLRData.from_labels(X, y, delta1=1.0, delta2=-1.0)
    _, _, H, n_active = d.evaluate(np.zeros((5, 5)), hessian=True)
    assert n_active == 24 * 24
    np.testing.assert_allclose(H, 2 * np.eye(d.n_sym), atol=1e-12)


def test_projection_step_is_algorithm_1(small, data):
    """Z+ = U^T clip(U Z U^T) U = Z - grad / 2, and the paper's literal step."""
    X, y = small
    rng = np.random.RandomState(8)
    M = rng.normal(scale=0.2, size=(5, 5))
    Z = data.Z_of_M(M)
    f, Zp = data.projection_step(Z)
    _, G, _, _ = data.evaluate(Z, grad=True)
    np.testing.assert_allclose(Zp, Z - 0.5 * G, atol=1e-12)
    assert np.isclose(f, data.objective(M), rtol=1e-10)
    # literal: Y_hat = X M X^T, clip, M+ = X^+ Y X^+T (Eq. 3)
    same = y[:, None] == y[None, :]
    Yh = X @ M @ X.T
    Y = np.where(same, np.maximum(Yh, 1.0), np.minimum(Yh, 0.0))
    M_next = eq3_closed_form(X, Y)
    np.testing.assert_allclose(data.Z_of_M(M_next), Zp, atol=1e-10)


# ---------------------------------------------------------------------------
# Eq. 1 and its closed form Eq. 3
# ---------------------------------------------------------------------------


def test_eq3_closed_form_solves_eq1_like_cvxpy(small, data):
    X, y = small
    Y = data.target()  # Eq. 2: 1 on same-class pairs, 0 elsewhere
    np.testing.assert_array_equal(Y, (y[:, None] == y[None, :]).astype(float))
    M3 = eq3_closed_form(X, Y)
    M_cvx, value = solve_eq1(X, Y)
    v3 = data.eq1_objective(M3)
    assert _rel(v3, value) <= EXACT_GAP
    assert v3 <= value + 1e-9 * max(1, value)  # the closed form is optimal
    # rank(X) = d here: the minimiser is unique
    np.testing.assert_allclose(M_cvx, M3, rtol=1e-4, atol=1e-5)
    # in coordinates: Z = U^T Y U, and the residual is the unreachable part
    np.testing.assert_allclose(data.Z_of_M(M3), data.least_squares_Z(Y), atol=1e-10)
    np.testing.assert_allclose(data.least_squares_Z(), data.least_squares_Z(Y),
                               atol=1e-12)
    U = data.U
    assert np.isclose(v3, np.sum(Y * Y) - np.sum((U.T @ Y @ U) ** 2), rtol=1e-9)


def test_eq3_rank_deficient_fits_the_same_K():
    rng = np.random.RandomState(9)
    X = rng.normal(size=(12, 2)) @ rng.normal(size=(2, 4))
    Y = rng.normal(size=(12, 12))
    M3 = eq3_closed_form(X, Y)
    M_cvx, value = solve_eq1(X, Y)
    R = X @ M3 @ X.T - Y
    assert _rel(float(np.sum(R * R)), value) <= EXACT_GAP
    np.testing.assert_allclose(X @ M3 @ X.T, X @ M_cvx @ X.T, atol=1e-4)


# ---------------------------------------------------------------------------
# Lower bounds (the certificate)
# ---------------------------------------------------------------------------


def test_bounds_never_exceed_the_optimum_and_are_tight_at_it(data):
    from cvxmetric.slr import SemismoothNewton

    opt = SemismoothNewton(tol=1e-13).run(data)
    f_star = opt.objective
    rng = np.random.RandomState(10)
    Zopt = opt.info["Z"]
    for scale in (1e-6, 1e-3, 1e-1, 1.0):
        E = rng.normal(size=Zopt.shape)
        Z = Zopt + scale * E  # non-symmetric points too
        bound, parts = data.lower_bound(Z)
        assert bound <= f_star * (1 + 1e-10) + 1e-10, (scale, parts)
        assert data.objective_Z(Z) >= bound - 1e-9
    bound, parts = data.lower_bound(Zopt)
    assert _rel(bound, f_star) <= 1e-12
    assert parts["dual"] > -np.inf and parts["ball"] > -np.inf
    # near the optimum both nontrivial bounds are valid and close
    bound, parts = data.lower_bound(Zopt + 1e-6 * rng.normal(size=Zopt.shape))
    assert parts["ball"] <= f_star * (1 + 1e-12)
    assert _rel(parts["ball"], f_star) <= 1e-8


def test_newton_decrement_estimates_the_gap_near_the_optimum(data):
    from cvxmetric.slr import SemismoothNewton

    opt = SemismoothNewton(tol=1e-13).run(data)
    Z = opt.info["Z"] + 1e-4 * np.eye(data.rank)
    f, G, H, _ = data.evaluate(Z, grad=True, hessian=True)
    est = newton_decrement(f, svec(G), H) * max(1.0, f)
    assert np.isclose(est, f - opt.objective, rtol=1e-3)


def test_separable_classes_give_zero_objective_certified():
    """n <= d: U Z U^T can be any n x n matrix, the optimum is 0."""
    rng = np.random.RandomState(11)
    X = rng.normal(size=(6, 8))
    y = np.array([0, 0, 1, 1, 2, 2])
    data = SLRData.from_labels(X, y)
    M = eq3_closed_form(X, data.target())  # fits the Eq. 2 target exactly
    cert = data.certificate(M, solver="closed form")
    assert cert.objective <= 1e-20 and cert.passed


def test_certificate_of_a_poor_point_fails(data):
    cert = data.certificate(np.eye(5), solver="identity")
    assert cert.objective > 0
    assert not cert.passed
    assert cert.dual_bound <= cert.objective
    assert np.isnan(cert.min_eig) and cert.max_violation == 0.0


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, match", [
    (dict(delta1=0.0, delta2=0.0), "delta1, delta2"),
    (dict(delta1=np.nan), "delta1"),
    (dict(delta2=np.inf), "delta2"),
])
def test_bad_thresholds(small, kwargs, match):
    with pytest.raises(ValueError, match=match):
        SLRData.from_labels(*small, **kwargs)


def test_bad_samples_and_labels(small):
    X, y = small
    with pytest.raises(ValueError, match="y: SLR needs at least 2 classes"):
        SLRData.from_labels(X, np.zeros(24, dtype=int))
    with pytest.raises(ValueError, match="y: expected shape"):
        SLRData.from_labels(X, y[:-1])
    with pytest.raises(ValueError, match="y: expected integer"):
        SLRData.from_labels(X, y + 0.5)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="X: contains 1 NaN"):
        SLRData.from_labels(Xn, y)
    with pytest.raises(ValueError, match="X: all samples are zero"):
        SLRData.from_labels(np.zeros((4, 2)), [0, 0, 1, 1])
    data = SLRData.from_labels(X, y)
    with pytest.raises(ValueError, match="M: expected shape"):
        data.objective(np.eye(4))
    with pytest.raises(ValueError, match="Y: expected shape"):
        eq3_closed_form(X, np.eye(3))

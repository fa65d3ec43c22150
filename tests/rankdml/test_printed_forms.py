"""The printed forms of Eq. 9 and Eq. 11 (defaults) against their variants.

* Eq. 11 as printed has no trace constraint; ``form="trace_fixed"`` adds
  ``sum(a) = tau``.  Eq. 9's Burg term as printed is ``||A A0hat^-1||_F^2``;
  ``form="spectral"`` uses ``tr((A A0hat^-1)^2)``.
* exact against an independent CVXPY model written here from the paper's
  equations; fast against exact on real-data slices (iris, wine).
"""

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.preprocessing import StandardScaler

from cvxmetric._tolerances import EXACT_GAP, tolerance
from cvxmetric.constraints import Triplets
from cvxmetric.rankdml import RankData, critical_triplets, solve_exact, solve_fast
from cvxmetric.rankdml.fast import warm_start

FAST = tolerance("rankdml", "fast")


def _rel(a, b):
    return (float(a) - float(b)) / max(1.0, abs(float(b)))


def _slice(loader, seed, n_queries=30, n_top=3, n_random=3):
    """Standardised real data, a query / gallery split, critical triplets
    and the inverse gallery covariance (a non-isotropic prior)."""
    X, y = loader(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    if X.shape[1] > 6:
        X = X[:, :6]
    rng = np.random.RandomState(seed)
    queries = np.sort(rng.choice(len(y), n_queries, replace=False))
    gallery = np.setdiff1d(np.arange(len(y)), queries)
    relevant = [rng.choice(gallery[y[gallery] == y[q]]) for q in queries]
    A0 = np.linalg.inv(np.cov(X[gallery], rowvar=False))
    A0 = 0.5 * (A0 + A0.T)
    t = critical_triplets(queries, relevant, gallery, X, n_top=n_top,
                          n_random=n_random, random_state=seed)
    return Triplets.create(X, t), A0


# -- printed versus the variants -------------------------------------------------


def test_printed_laplacian_differs_from_trace_fixed_on_iris(docs_iris):
    T = docs_iris
    printed = solve_exact(RankData.from_triplets(T, regularizer="laplacian",
                                                 diagonal=True, lam=1.0), warm_start=warm_start)
    fixed = solve_exact(RankData.from_triplets(T, regularizer="laplacian", diagonal=True,
                                               lam=1.0, form="trace_fixed"), warm_start=warm_start)
    assert printed.certificate.passed and fixed.certificate.passed
    # measured: 134.955 (printed) against 168.386 (sum(a) = 4)
    assert printed.objective == pytest.approx(134.95487, rel=1e-6)
    assert fixed.objective == pytest.approx(168.38585, rel=1e-6)
    # the printed problem is the relaxation: never above, for any tau
    for tau in (1.0, 4.0, 16.0):
        other = solve_exact(RankData.from_triplets(
            T, regularizer="laplacian", diagonal=True, form="trace_fixed", tau=tau),
            warm_start=warm_start)
        assert printed.objective <= other.objective * (1 + 1e-9)
    assert np.trace(printed.M) != pytest.approx(4.0, rel=1e-3)


def test_printed_laplacian_is_attained_and_not_trivial(docs_iris):
    T = docs_iris
    data = RankData.from_triplets(T, regularizer="laplacian", diagonal=True)
    res = solve_exact(data, warm_start=warm_start)
    N = data.n_constraints
    # a = 0 costs N (every hinge 1): the hinges push a away from 0 ...
    assert data.objective(np.zeros(4)) == N and res.objective < 0.8 * N
    # ... and the flat direction alone (no regulariser) does worse than
    # the optimum: the Laplacian shapes the metric
    s = data.K.sum(axis=1)
    flat = min(float(np.sum(np.maximum(1 - c * s, 0))) for c in np.geomspace(1e-3, 1e3, 601))
    assert res.objective < flat - 1.0  # measured: 134.95 against 157.76
    # if the Euclidean metric orders every triplet, a large flat metric is
    # optimal with value 0 (attained, not unique)
    easy = Triplets.create(T.X, T.indices[s > 0])
    zero = solve_exact(RankData.from_triplets(easy, regularizer="laplacian",
                                              diagonal=True), warm_start=warm_start)
    assert zero.certificate.passed and zero.objective <= 1e-6


def test_printed_burg_differs_from_spectral_with_a_non_isotropic_prior():
    T, A0 = _slice(load_iris, 1, n_top=2, n_random=2)
    printed = RankData.from_triplets(T, regularizer="burg", A0=A0)
    spectral = RankData.from_triplets(T, regularizer="burg", A0=A0, form="spectral")
    a = solve_exact(printed, warm_start=warm_start)
    b = solve_exact(spectral, warm_start=warm_start)
    assert a.certificate.passed and b.certificate.passed
    assert abs(_rel(a.objective, b.objective)) > 1e-3
    # at one matrix the two first terms differ (tr(A P A P) <= ||A P||^2)
    P = np.linalg.inv(printed.A0hat)
    AP = a.M @ P
    assert np.sum(AP * AP) > np.trace(AP @ AP) + 1e-2
    assert printed.penalty(a.M) - spectral.penalty(a.M) == pytest.approx(
        np.sum(AP * AP) - np.trace(AP @ AP), rel=1e-8)
    # with an isotropic prior A and A0 commute: the forms coincide
    iso = solve_exact(RankData.from_triplets(T, regularizer="burg"), warm_start=warm_start)
    iso_s = solve_exact(RankData.from_triplets(T, regularizer="burg", form="spectral"),
                        warm_start=warm_start)
    assert abs(_rel(iso.objective, iso_s.objective)) <= EXACT_GAP
    # the trace decision is unchanged: tr(A) = tau, A0hat = A0 tau / tr(A0)
    assert np.trace(a.M) == pytest.approx(np.trace(A0), rel=1e-8)


# -- exact against the paper's equations written independently ------------------


def _independent(data):
    """Eq. 9 (printed Burg) or Eq. 11 (printed) in slack form, from the paper."""
    X, T = data.X, data.triplets
    d = X.shape[1]
    q, r, i = T.T
    Pn, Pf = X[q] - X[r], X[q] - X[i]
    eps = cp.Variable(len(T), nonneg=True)
    if data.regularizer == "laplacian":
        a = cp.Variable(d, nonneg=True)
        cons = [(Pf ** 2) @ a - (Pn ** 2) @ a >= 1 - eps]
        reg = cp.sum_squares(a - cp.sum(a) / d)  # sum (a_i - mean a)^2, no trace
    else:
        A = cp.Variable((d, d), PSD=True)
        tau = np.trace(data.A0)
        A0hat = data.A0 * tau / np.trace(data.A0)
        Pinv = np.linalg.inv(A0hat)
        Pinv = 0.5 * (Pinv + Pinv.T)
        dn = cp.sum(cp.multiply(Pn @ A, Pn), axis=1)
        df = cp.sum(cp.multiply(Pf @ A, Pf), axis=1)
        cons = [df - dn >= 1 - eps, cp.trace(A) == tau]
        # tr(A A0hat^-1 (A A0hat^-1)^T) - 2 logdet(A A0hat^-1) - d
        reg = (cp.sum_squares(A @ Pinv) - 2 * (cp.log_det(A) - np.linalg.slogdet(A0hat)[1])
               - d)
    prob = cp.Problem(cp.Minimize(cp.sum(eps) + 0.5 * data.lam * reg), cons)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return prob.value


@pytest.mark.parametrize("loader, seed", [(load_iris, 2), (load_wine, 3)],
                         ids=["iris", "wine"])
@pytest.mark.parametrize("reg", ["laplacian", "burg"])
def test_exact_equals_an_independent_model_of_the_paper(loader, seed, reg):
    T, A0 = _slice(loader, seed)
    kw = dict(regularizer="laplacian", diagonal=True) if reg == "laplacian" else \
        dict(regularizer="burg", A0=A0)
    data = RankData.from_triplets(T, lam=1.0, **kw)
    exact = solve_exact(data, warm_start=warm_start)
    assert exact.certificate.passed
    assert abs(_rel(exact.objective, _independent(data))) <= 1e-6


# -- fast against exact on real-data slices --------------------------------------


@pytest.mark.parametrize("loader, seed", [(load_iris, 4), (load_iris, 5), (load_wine, 6),
                                          (load_wine, 7)], ids=["iris4", "iris5", "wine6",
                                                                "wine7"])
@pytest.mark.parametrize("kw", [
    dict(regularizer="laplacian", diagonal=True),
    dict(regularizer="laplacian", diagonal=True, form="trace_fixed"),
    dict(regularizer="burg"),  # A0 = the inverse gallery covariance
    dict(regularizer="burg", form="spectral"),
], ids=["lap-printed", "lap-fixed", "burg-printed", "burg-spectral"])
@pytest.mark.parametrize("lam", [0.3, 3.0])
def test_fast_matches_exact_on_real_slices(loader, seed, kw, lam):
    T, A0 = _slice(loader, seed)
    kw = dict(kw)
    if kw["regularizer"] == "burg":
        kw["A0"] = A0
    data = RankData.from_triplets(T, lam=lam, **kw)
    exact = solve_exact(data, warm_start=warm_start)
    fast = solve_fast(data)
    assert exact.certificate.passed
    assert fast.status == "optimal" and fast.certificate.passed
    assert abs(_rel(fast.objective, exact.objective)) <= FAST
    assert fast.certificate.dual_bound <= exact.objective + FAST * max(1.0, exact.objective)
    expected = {"laplacian": "fast-ipm", "burg": "fast-dual"}[kw["regularizer"]]
    assert fast.method == expected


# -- the printed Eq. 11's dual domain --------------------------------------------


def test_dual_is_moved_into_the_half_space(docs_iris):
    T = docs_iris
    data = RankData.from_triplets(T, regularizer="laplacian", diagonal=True)
    f_star = solve_exact(data, warm_start=warm_start).objective
    s = data.K.sum(axis=1)
    rng = np.random.RandomState(0)
    for _ in range(5):
        alpha = rng.rand(data.n_constraints)
        fixed = data.dual_feasible(alpha)
        assert fixed.min() >= 0 and fixed.max() <= 1
        assert s @ fixed <= 0
        assert float(np.sum(data.S_of(fixed))) <= 0
        assert data.dual_bound(alpha) <= f_star * (1 + 1e-9)
        assert np.isfinite(data.dual_bound(alpha))
    # an alpha inside is left alone
    inside = np.where(s < 0, 1.0, 0.0)
    np.testing.assert_array_equal(data.dual_feasible(inside), inside)


def test_forms_are_validated_by_the_data(docs_iris):
    T = docs_iris
    with pytest.raises(ValueError, match="form: 'spectral' is not a form of the 'laplacian'"):
        RankData.from_triplets(T, regularizer="laplacian", diagonal=True, form="spectral")
    with pytest.raises(ValueError, match="form: 'trace_fixed' is not a form of the 'burg'"):
        RankData.from_triplets(T, regularizer="burg", form="trace_fixed")
    with pytest.raises(ValueError, match="tau: Eq. 11 as printed"):
        RankData.from_triplets(T, regularizer="laplacian", diagonal=True, tau=3.0)

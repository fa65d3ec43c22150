"""RCA (JMLR 2005, Sec. 4.2): the closed form against the CVXPY optimum,
the closed-form dual bound, the estimators (scikit-learn's checks,
metric-learn's answers) and bad input.

``metric_learn_rca.npz`` holds metric-learn 0.7.0's answers (run under
scikit-learn 1.7, where its ``fit`` still works), made by::

    import numpy as np
    from metric_learn import RCA, RCA_Supervised
    from metric_learn.constraints import Constraints
    from sklearn.datasets import load_iris, load_wine

    Xi, yi = load_iris(return_X_y=True)
    Xw, yw = load_wine(return_X_y=True)
    Xw = (Xw - Xw.mean(axis=0)) / Xw.std(axis=0)
    rc = {}
    rc["iris_supervised"] = RCA_Supervised(
        n_chunks=30, chunk_size=2, random_state=0).fit(Xi, yi).components_
    rc["wine_supervised"] = RCA_Supervised(
        n_chunks=20, chunk_size=3, random_state=1).fit(Xw, yw).components_
    chunks = Constraints(yw).chunks(n_chunks=20, chunk_size=3, random_state=1)
    rc["wine_chunks"] = chunks
    rc["wine_reduced"] = RCA(n_components=3).fit(Xw, chunks).components_
    np.savez_compressed("tests/rca/metric_learn_rca.npz", **rc)
"""

import pathlib

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from cvxmetric import NotAttainedError, RCA, RCA_Supervised, formulation
from cvxmetric._tolerances import EXACT_GAP, MATRIX_RTOL, tolerance
from cvxmetric.rca import (
    RCAData,
    chunks_from_labels,
    declared_problem,
    solve_closed_form,
    solve_exact,
)

FIXTURE = pathlib.Path(__file__).with_name("metric_learn_rca.npz")


def wine():
    X, y = load_wine(return_X_y=True)
    return (X - X.mean(axis=0)) / X.std(axis=0), y


def instance(seed=0, n=40, d=5):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, d)) * np.linspace(0.5, 2.0, d)
    chunks = np.concatenate([np.repeat(np.arange(8), 3), -np.ones(n - 24, dtype=int)])
    return RCAData(X, rng.permutation(chunks))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_closed_form_is_the_cvxpy_optimum(seed):
    data = instance(seed)
    fast, exact = solve_closed_form(data), solve_exact(data)
    assert fast.status == exact.status == "optimal"
    assert fast.certificate.passed and exact.certificate.passed
    gap = (fast.objective - exact.objective) / max(1.0, abs(exact.objective))
    assert abs(gap) <= tolerance("rca", "fast")
    np.testing.assert_allclose(fast.M, exact.M, rtol=MATRIX_RTOL,
                               atol=MATRIX_RTOL * np.abs(fast.M).max())
    # the paper's solution |C|^{1/d} C^{-1}, value d |C|^{1/d}, |M| = 1
    d = data.n_features
    lam = np.linalg.det(data.C) ** (1.0 / d)
    np.testing.assert_allclose(fast.M, lam * np.linalg.inv(data.C), rtol=1e-10)
    assert fast.objective == pytest.approx(d * lam, rel=1e-12)
    assert np.linalg.slogdet(fast.M)[1] == pytest.approx(0.0, abs=1e-12)


def test_the_dual_bound_is_valid_everywhere_and_tight_only_at_the_optimum():
    data = instance(3)
    optimum = solve_closed_form(data).objective
    for lam in np.geomspace(1e-3, 1e3, 25):
        assert data.dual_bound(lam) <= optimum * (1 + 1e-12)
    # a feasible point that is not optimal (|M| = 1): bound below, no pass
    rng = np.random.RandomState(0)
    B = rng.normal(size=(5, 5))
    M = B @ B.T + np.eye(5)
    M /= np.exp(np.mean(np.log(np.linalg.eigvalsh(M))))
    cert = data.certificate(M)
    assert cert.max_violation <= 1e-12 and cert.objective > optimum
    assert cert.dual_bound <= optimum * (1 + 1e-12)
    assert not cert.passed
    # an infeasible point (|M| < 1) below the optimum cannot pass either
    Mopt = solve_closed_form(data).M
    low = data.certificate(0.9 * Mopt)
    assert low.objective < optimum and not low.passed
    assert not data.certificate(Mopt - 10 * np.eye(5)).passed  # not definite


def test_a_singular_covariance_is_not_attained():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(20, 6))
    chunks = np.r_[0, 0, 1, 1, 2, 2, -np.ones(14, dtype=int)]  # rank 3 < 6
    data = RCAData(X, chunks)
    assert data.rank == 3 and data.dual_bound(1.0) == 0.0
    with pytest.raises(NotAttainedError, match="rank 3 < 6"):
        solve_exact(data)
    with pytest.raises(NotAttainedError):
        solve_closed_form(data)
    # the estimators reduce to the rank, with a warning
    with pytest.warns(UserWarning, match="rank 3 < 6"):
        est = RCA().fit(X, chunks)
    assert est.components_.shape == (3, 6) and est.status_ == "optimal"
    assert np.all(np.isfinite(est.transform(X)))


def test_metric_learns_answers():
    saved = np.load(FIXTURE)
    X, y = load_iris(return_X_y=True)
    est = RCA_Supervised(n_chunks=30, random_state=0).fit(X, y)
    np.testing.assert_allclose(est.components_, saved["iris_supervised"], rtol=1e-9,
                               atol=1e-12)
    Xw, yw = wine()
    est = RCA_Supervised(n_chunks=20, chunk_size=3, random_state=1).fit(Xw, yw)
    np.testing.assert_allclose(est.components_, saved["wine_supervised"], rtol=1e-9,
                               atol=1e-12)
    chunks, available = chunks_from_labels(yw, 20, 3, random_state=1)
    np.testing.assert_array_equal(chunks, saved["wine_chunks"])
    np.testing.assert_array_equal(est.chunks_, chunks)
    assert available == 19 + 23 + 16  # floor(n_c / 3) of 59, 71, 48
    # reduced: the same span, hence the same metric
    L, Lm = RCA(n_components=3).fit(Xw, chunks).components_, saved["wine_reduced"]
    np.testing.assert_allclose(L.T @ L, Lm.T @ Lm, rtol=1e-8,
                               atol=1e-10 * np.abs(Lm.T @ Lm).max())


def test_exact_solver_and_the_declared_problem():
    Xw, yw = wine()
    fast = RCA_Supervised(n_chunks=20, chunk_size=3, random_state=1).fit(Xw, yw)
    exact = RCA_Supervised(n_chunks=20, chunk_size=3, random_state=1,
                           solver="exact").fit(Xw, yw)
    assert exact.status_ == "optimal" and exact.result_.trace[0].kind == "conic"
    assert abs(exact.objective_ - fast.objective_) <= EXACT_GAP * fast.objective_
    M, Mf = exact.get_mahalanobis_matrix(), fast.get_mahalanobis_matrix()
    np.testing.assert_allclose(M, Mf, rtol=MATRIX_RTOL, atol=MATRIX_RTOL * np.abs(Mf).max())
    dp = fast.declared_problem(Xw, yw)
    assert dp.family == "rca" and dp.problem.is_dpp() and not dp.parameters
    assert set(dp.constraints) == {"logdet"}
    assert dp.solve() == pytest.approx(fast.objective_, rel=1e-6)
    assert dp.certificate().passed
    assert formulation("rca").load("declared") is declared_problem


def test_rca_from_chunks_and_the_reduction():
    X, y = load_iris(return_X_y=True)
    _, codes = np.unique(y, return_inverse=True)
    est = RCA().fit(X, codes)  # the classes as chunklets
    C = RCAData(X, codes).C
    np.testing.assert_allclose(est.get_mahalanobis_matrix(), np.linalg.inv(C),
                               rtol=1e-9)
    red = RCA(n_components=2).fit(X, codes)
    assert red.components_.shape == (2, 4) and red.projection_.shape == (4, 2)
    A = red.projection_
    np.testing.assert_allclose(A.T @ A, np.eye(2), atol=1e-12)
    # whitening on the kept directions: L C L^T = I
    np.testing.assert_allclose(red.components_ @ C @ red.components_.T, np.eye(2),
                               atol=1e-9)


@parametrize_with_checks([RCA_Supervised(), RCA_Supervised(n_chunks=10, chunk_size=3)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_bad_input():
    X = np.random.RandomState(0).normal(size=(10, 3))
    good = np.r_[0, 0, 1, 1, 2, 2, 3, 3, -1, -1]
    with pytest.raises(ValueError, match="NaN|infinity"):
        RCA().fit(np.where(np.eye(10, 3) > 0, np.nan, X), good)
    with pytest.raises(ValueError, match="chunks: expected one label per sample"):
        RCA().fit(X, good[:-1])
    with pytest.raises(ValueError, match="chunks: labels are chunklet numbers"):
        RCA().fit(X, np.r_[good[:-1], -2])
    with pytest.raises(ValueError, match="chunks: expected integer"):
        RCA().fit(X, good + 0.5)
    with pytest.raises(ValueError, match="chunklet 4 has one sample"):
        RCA().fit(X, np.r_[good[:-1], 4])
    with pytest.raises(ValueError, match="no chunklet"):
        RCA().fit(X, -np.ones(10, dtype=int))
    with pytest.raises(ValueError, match="n_components: at most"):
        RCA(n_components=4).fit(X, good)
    with pytest.raises(InvalidParameterError, match="n_components"):
        RCA(n_components=0).fit(X, good)
    with pytest.raises(InvalidParameterError, match="chunk_size"):
        RCA_Supervised(chunk_size=1).fit(X, good)
    with pytest.raises(ValueError, match="identical"):
        RCA().fit(np.repeat(X[:5], 2, axis=0), np.repeat(np.arange(5), 2))
    y = np.r_[0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    with pytest.warns(UserWarning, match="allow 4 chunklets"):
        RCA_Supervised(n_chunks=100, random_state=0).fit(X, y)
    with pytest.warns(FutureWarning, match="num_chunks"):
        est = RCA_Supervised(num_chunks=3, random_state=0).fit(X, y)
    assert np.unique(est.chunks_[est.chunks_ >= 0]).size == 3


def test_raw_features_of_very_different_scales_are_certified():
    # breast_cancer as loaded: the within-chunklet covariance has condition
    # number ~1e12 (areas ~1e3 beside smoothness ~1e-1); log det M from
    # eigvalsh of M itself was off by 1e-5, above the feasibility tolerance
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import StratifiedKFold

    X, y = load_breast_cancer(return_X_y=True)
    for train, _ in StratifiedKFold(5).split(X, y):
        est = RCA_Supervised(random_state=0).fit(X[train], y[train])
        assert est.status_ == "optimal", est.certificate_
        assert est.certificate_.max_violation <= 1e-9


def test_equilibrated_logdet_matches_the_scaled_product():
    from cvxmetric._linalg import eigh_equilibrated, logdet_pd

    rng = np.random.default_rng(0)
    B = rng.standard_normal((30, 30))
    R = B @ B.T / 30 + np.eye(30)  # well conditioned
    scales = np.logspace(-4, 4, 30)  # features over 8 decades
    A = R * scales[:, None] * scales[None, :]
    exact = np.linalg.slogdet(R)[1] + 2 * np.sum(np.log(scales))
    assert logdet_pd(A) == pytest.approx(exact, abs=1e-10)
    w, V, s = eigh_equilibrated(A)
    back = (V * w) @ V.T / s[:, None] / s[None, :]
    assert np.allclose(back, A, rtol=1e-12, atol=1e-12 * np.abs(A).max())
    assert logdet_pd(np.diag([1.0, 0.0])) == -np.inf

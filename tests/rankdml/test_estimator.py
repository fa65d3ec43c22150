"""RankDML estimators: scikit-learn contract, metric-learn API, input validation."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from cvxmetric._tolerances import tolerance
from cvxmetric.rankdml import RankData, RankDML, RankDMLSupervised, solve_exact
from cvxmetric.rankdml.fast import warm_start

FAST = tolerance("rankdml", "fast")


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


@parametrize_with_checks([
    RankDMLSupervised(n_top=2, n_random=2, n_queries=20),
    RankDMLSupervised(n_top=2, n_random=1, n_queries=15, regularizer="burg",
                      solver="fast"),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def tuples(rank_triplets):
    return rank_triplets.X, rank_triplets.indices


PARAMS = dict(regularizer="burg", lam=2.0, tau=3.0, A0=np.eye(4), diagonal=False,
              solver="fast", tol=1e-7, max_iter=17, random_state=3, verbose=1,
              form="spectral")


def test_init_stores_arguments_only(tuples):
    X = tuples[0]
    est = RankDML(preprocessor=X, **PARAMS)
    assert est.preprocessor is X
    for key, val in PARAMS.items():
        assert getattr(est, key) is val
    assert not [a for a in vars(est) if a.endswith("_")]
    RankDML(solver="nope", lam=-1, tau=-2, A0="x")  # validated in fit only


def test_params_round_trip_and_clone(tuples):
    est = RankDML(preprocessor=tuples[0], **PARAMS)
    params = est.get_params()
    assert RankDML().set_params(**params).get_params().keys() == params.keys()
    assert clone(est).get_params()["tau"] == 3.0
    assert repr(RankDML(lam=2.0)) == "RankDML(lam=2.0)"


@pytest.mark.parametrize("kw", [
    dict(regularizer="frobenius"),
    dict(regularizer="frobenius", diagonal=True),
    dict(regularizer="laplacian"),
    dict(regularizer="laplacian", form="trace_fixed"),
    dict(regularizer="burg", A0="pd"),
    dict(regularizer="burg", A0="pd", form="spectral"),
    dict(regularizer="logdet"),
])
def test_fit_matches_the_exact_solution(tuples, rk, kw):
    X, T = tuples
    kw = dict(kw)
    if kw.get("A0") == "pd":
        kw["A0"] = rk.pd_matrix(X.shape[1], seed=7)
    exact = RankDML(preprocessor=X, **kw).fit(T)
    fast = RankDML(preprocessor=X, solver="fast", **kw).fit(T)
    assert exact.status_ == "optimal" and exact.certificate_.passed
    assert fast.status_ == "optimal" and fast.certificate_.passed
    assert _rel(fast.objective_, exact.objective_) <= FAST
    data_kw = dict(kw)
    if data_kw["regularizer"] == "laplacian":
        data_kw["diagonal"] = True  # the estimator implies it
    from cvxmetric.constraints import Triplets

    ref = solve_exact(RankData.from_triplets(Triplets.create(X, T), **data_kw),
                      warm_start=warm_start)
    assert _rel(exact.objective_, ref.objective) <= 1e-9
    M = exact.get_mahalanobis_matrix()
    np.testing.assert_allclose(M, exact.mahalanobis_matrix_)
    if data_kw.get("diagonal"):
        assert np.count_nonzero(M - np.diag(np.diag(M))) == 0
    assert exact.n_features_in_ == X.shape[1] and exact.n_triplets_ == len(T)
    assert exact.result_.method == "exact" and "model" not in exact.result_.info
    assert fast.result_.method in ("fast-ipm", "fast-dual", "fast-pdhg")


def test_indices_and_points_give_the_same_fit(tuples):
    X, T = tuples
    a = RankDML(preprocessor=X).fit(T)
    b = RankDML().fit(X[T])  # (n, 3, d) points
    c = RankDML(preprocessor=X).fit(X[T])  # points win over the preprocessor
    assert _rel(a.objective_, b.objective_) <= 1e-9
    assert _rel(a.objective_, c.objective_) <= 1e-9


def test_metric_learn_api(tuples):
    X, T = tuples
    est = RankDML(preprocessor=X).fit(T)
    L = est.components_
    pairs = T[:, :2]
    d = est.pair_distance(pairs)
    diff = X[pairs[:, 0]] - X[pairs[:, 1]]
    np.testing.assert_allclose(d ** 2, np.einsum("pd,de,pe->p", diff, L.T @ L, diff),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.transform(X), X @ L.T)
    metric = est.get_metric()
    assert metric(X[0], X[1]) == pytest.approx(est.pair_distance([[0, 1]])[0])
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.components_, est.components_)


def test_laplacian_implies_diagonal(tuples):
    X, T = tuples
    est = RankDML(regularizer="laplacian", diagonal=False, preprocessor=X).fit(T)
    M = est.get_mahalanobis_matrix()
    assert np.count_nonzero(M - np.diag(np.diag(M))) == 0
    fixed = RankDML(regularizer="laplacian", form="trace_fixed", preprocessor=X).fit(T)
    assert np.trace(fixed.get_mahalanobis_matrix()) == pytest.approx(
        X.shape[1], rel=1e-7)  # tau = d
    # as printed, Eq. 11 has no trace constraint: a relaxation of the
    # trace-fixed problem, whose optimum is therefore never above it
    assert est.objective_ <= fixed.objective_ + 1e-9 * fixed.objective_
    assert np.trace(M) != pytest.approx(X.shape[1], rel=1e-3)


def test_form_is_validated(tuples):
    X, T = tuples
    assert RankDML().form == "printed" and RankDMLSupervised().form == "printed"
    # not one of the forms at all: scikit-learn's parameter validation
    with pytest.raises(ValueError, match="'form' parameter of RankDML must be"):
        RankDML(form="normalised", preprocessor=X).fit(T)
    with pytest.raises(ValueError, match="'form' parameter of RankDMLSupervised"):
        RankDMLSupervised(form=1).fit(X, np.arange(len(X)) % 2)
    # a form of another regulariser: RankData names form and the valid pairs
    for kw in (dict(regularizer="burg", form="trace_fixed"),
               dict(regularizer="laplacian", form="spectral"),
               dict(regularizer="frobenius", form="spectral"),
               dict(regularizer="logdet", form="trace_fixed")):
        with pytest.raises(ValueError, match=r"form: .* is not a form of the .*"
                                             r"laplacian: 'printed', 'trace_fixed'"):
            RankDML(preprocessor=X, **kw).fit(T)
    # tau belongs to the trace-fixed Laplacian only
    with pytest.raises(ValueError, match="tau: Eq. 11 as printed"):
        RankDML(regularizer="laplacian", tau=2.0, preprocessor=X).fit(T)
    est = RankDML(regularizer="laplacian", form="trace_fixed", tau=2.0,
                  preprocessor=X).fit(T)
    assert np.trace(est.get_mahalanobis_matrix()) == pytest.approx(2.0, rel=1e-7)


@pytest.mark.parametrize("kw, match", [
    (dict(regularizer="burg", A0=np.diag([1.0, 1.0, -1.0, 1.0])),
     "A0: matrix is not positive semidefinite"),
    (dict(regularizer="logdet", A0=np.diag([1.0, 0.0, 1.0, 1.0])),
     "A0: matrix is singular"),
    (dict(regularizer="burg", tau=0.0), "tau"),
    (dict(regularizer="laplacian", form="trace_fixed", tau=-1.0), "tau"),
    (dict(regularizer="frobenius", tau=1.0), "tau: the 'frobenius'"),
    (dict(regularizer="frobenius", A0=np.eye(4)), "A0: only the"),
    (dict(regularizer="burg", diagonal=True), "diagonal: the 'burg'"),
    (dict(lam=0.0), "lam"),
    (dict(solver="nope"), "solver"),
    (dict(regularizer="trace"), "regularizer"),
])
def test_bad_parameters_are_rejected(tuples, kw, match):
    X, T = tuples
    with pytest.raises(ValueError, match=match):
        RankDML(preprocessor=X, **kw).fit(T)


def test_bad_triplets_are_rejected(tuples):
    X, T = tuples
    with pytest.raises(ValueError, match="need preprocessor"):
        RankDML().fit(T)
    with pytest.raises(ValueError, match="out of range"):
        RankDML(preprocessor=X).fit([[0, 1, len(X)]])
    with pytest.raises(ValueError, match=r"expected shape \(n, 3\)"):
        RankDML(preprocessor=X).fit(T[:, :2])
    with pytest.raises(ValueError, match="NaN"):
        RankDML().fit(np.full((2, 3, 4), np.nan))
    with pytest.raises(ValueError, match="cannot be read"):
        RankDML(preprocessor=X).fit([[0, 1, 2], [0, 1]])
    with pytest.raises(NotFittedError):
        RankDML().transform(X)


def test_supervised_selects_critical_triplets_deterministically():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    a = RankDMLSupervised(n_top=2, n_random=2, n_queries=25, random_state=0).fit(X, y)
    b = RankDMLSupervised(n_top=2, n_random=2, n_queries=25, random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert a.n_triplets_ == 25 * 4
    assert a.transform(X).shape == X.shape
    with pytest.raises(ValueError, match="y: .*at least 2 classes"):
        RankDMLSupervised().fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="n_top, n_random"):
        RankDMLSupervised(n_top=0, n_random=0).fit(X, y)
    # a class of one sample cannot give relevant items to its query
    y1 = y.copy()
    y1[0] = 7
    est = RankDMLSupervised(n_top=1, n_random=0, random_state=0).fit(X, y1)
    assert est.n_triplets_ == len(X) - 1

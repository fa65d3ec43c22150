"""Qwise estimators: scikit-learn contract, metric-learn API, input validation."""

import pickle
import re

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.estimator_checks import parametrize_with_checks

import cvxmetric.qwise.exact as exact_module
from cvxmetric import (
    InfeasibleError,
    Qwise,
    QwiseSupervised,
    quadruplets_from_labels,
)
from cvxmetric.qwise import QwiseData, solve_exact
from cvxmetric.constraints import Quadruplets
from cvxmetric.qwise.fast import warm_start

# Relative accuracy for comparisons of optimal objectives (exact solves are
# certified to a 1e-6 relative duality gap).
RTOL_OBJ = 1e-6


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def problem():
    """A small tuple problem: X (12, 3), 20 quadruplets, 10 labelled pairs."""
    rng = np.random.RandomState(0)
    y = np.repeat([0, 1, 2], 4)
    X = rng.randn(12, 3) + 1.5 * y[:, None] * np.array([1.0, 0.0, 0.0])
    quads = quadruplets_from_labels(y, 20, random_state=0)
    pairs = np.array([[0, 1], [4, 5], [8, 9], [2, 3], [6, 7],
                      [0, 4], [1, 8], [5, 9], [3, 10], [7, 11]])
    labels = np.array([1, 1, 1, 1, 1, -1, -1, -1, -1, -1])
    return X, y, quads, pairs, labels


@pytest.fixture(scope="module")
def fitted(problem):
    X, _, quads, pairs, labels = problem
    est = Qwise(u=1.0, l=4.0, solver="exact", preprocessor=X)
    return est.fit(quads, pairs=pairs, pair_labels=labels)


# ---------------------------------------------------------------------------
# scikit-learn's generic checks (QwiseSupervised is a plain fit(X, y) estimator)
# ---------------------------------------------------------------------------


@parametrize_with_checks(
    [
        QwiseSupervised(n_constraints=50),
        QwiseSupervised(n_constraints=30, regularizer="frobenius", u=0.5, l=2.0),
    ]
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ---------------------------------------------------------------------------
# Qwise: the parts of the scikit-learn contract that apply to a tuple learner
# ---------------------------------------------------------------------------

PARAMS = dict(regularizer="frobenius", C_q=2.0, C_p=0.5, u=1.0, l=3.0,
              solver="fast", tol=1e-7, max_iter=17, random_state=3, verbose=1)


def test_init_stores_arguments_only(problem):
    X = problem[0]
    est = Qwise(preprocessor=X, **PARAMS)
    # stored as given: same objects, no validation or conversion in __init__
    assert est.preprocessor is X
    for key, val in PARAMS.items():
        assert getattr(est, key) is val
    assert not [a for a in vars(est) if a.endswith("_")]
    # invalid values are accepted by __init__ and rejected by fit
    Qwise(solver="nope", C_q=-1, preprocessor="not an array")


def test_get_set_params_round_trip(problem):
    est = Qwise(preprocessor=problem[0], **PARAMS)
    params = est.get_params()
    other = Qwise().set_params(**params)
    assert other.get_params() == params
    assert set(params) == set(Qwise().get_params())


def test_clone_and_repr(fitted):
    cl = clone(fitted)
    assert not hasattr(cl, "components_")
    assert cl.get_params()["u"] == 1.0
    assert cl.preprocessor is not fitted.preprocessor  # clone copies arrays
    np.testing.assert_array_equal(cl.preprocessor, fitted.preprocessor)
    assert repr(Qwise(C_q=2.0)) == "Qwise(C_q=2.0)"
    assert "QwiseSupervised(n_constraints=5" in repr(QwiseSupervised(n_constraints=5))


def test_deterministic(problem):
    X, y, quads, _, _ = problem
    a = Qwise(preprocessor=X, random_state=0).fit(quads)
    b = Qwise(preprocessor=X, random_state=0).fit(quads)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert a.objective_ == b.objective_
    s1 = QwiseSupervised(n_constraints=30, random_state=1).fit(X, y)
    s2 = QwiseSupervised(n_constraints=30, random_state=1).fit(X, y)
    np.testing.assert_array_equal(s1.components_, s2.components_)


def test_pickle_round_trip(fitted, problem):
    X = problem[0]
    back = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(back.components_, fitted.components_)
    np.testing.assert_array_equal(back.transform(X), fitted.transform(X))
    assert back.objective_ == fitted.objective_
    assert back.certificate_.passed
    assert back.get_params().keys() == fitted.get_params().keys()


def test_fitted_attributes(fitted, problem):
    X = problem[0]
    d = X.shape[1]
    assert fitted.components_.shape == (d, d)
    assert fitted.mahalanobis_matrix_.shape == (d, d)
    assert fitted.n_features_in_ == d
    assert fitted.status_ == "optimal"
    assert fitted.n_iter_ >= 1
    assert fitted.certificate_.passed
    assert fitted.result_.method == "exact"
    assert "model" not in fitted.result_.info
    assert fitted.objective_ == fitted.result_.objective


# ---------------------------------------------------------------------------
# metric-learn conventions
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["tuples", "supervised"])
def learner(request, problem, fitted):
    if request.param == "tuples":
        return fitted
    X, y = problem[:2]
    return QwiseSupervised(n_constraints=40, random_state=0).fit(X, y)


def test_mahalanobis_matrix(learner):
    L = learner.components_
    M = learner.get_mahalanobis_matrix()
    ref = L.T @ L
    assert np.linalg.norm(M - ref) <= 1e-8 * max(np.linalg.norm(ref), 1e-300)
    np.testing.assert_allclose(learner.mahalanobis_matrix_, ref, rtol=1e-8, atol=1e-12)
    assert np.linalg.eigvalsh(M)[0] >= -1e-10 * np.abs(M).max()
    # components_ reproduces the solver's matrix (PSD up to round-off)
    raw = learner.result_.M
    assert np.linalg.norm(M - raw) <= 1e-6 * max(1.0, np.linalg.norm(raw))


def test_transform_pair_distance_metric_consistent(learner, problem):
    X = problem[0]
    rng = np.random.RandomState(1)
    idx = rng.randint(0, len(X), size=(15, 2))
    pts = X[idx]  # (15, 2, d)
    dist = learner.pair_distance(pts)
    Z = learner.transform(X)
    np.testing.assert_allclose(
        dist, np.linalg.norm(Z[idx[:, 0]] - Z[idx[:, 1]], axis=1),
        rtol=1e-9, atol=1e-12)
    M = learner.get_mahalanobis_matrix()
    diff = pts[:, 0] - pts[:, 1]
    np.testing.assert_allclose(
        dist ** 2, np.einsum("pi,ij,pj->p", diff, M, diff), rtol=1e-9, atol=1e-12)
    metric = learner.get_metric()
    np.testing.assert_allclose(
        [metric(a, b) for a, b in pts], dist, rtol=1e-12, atol=1e-14)
    assert metric(pts[0, 0], pts[0, 1], squared=True) == pytest.approx(
        dist[0] ** 2, rel=1e-12, abs=1e-14)
    np.testing.assert_array_equal(learner.pair_score(pts), -dist)


def test_pair_distance_with_indices(fitted, problem):
    X, _, _, pairs, _ = problem
    np.testing.assert_array_equal(
        fitted.pair_distance(pairs), fitted.pair_distance(X[pairs]))


def test_get_metric_in_sklearn_neighbors(fitted, problem):
    X = problem[0]
    by_metric = NearestNeighbors(n_neighbors=3, metric=fitted.get_metric()).fit(X)
    euclid = NearestNeighbors(n_neighbors=3).fit(fitted.transform(X))
    d1, i1 = by_metric.kneighbors(X)
    d2, i2 = euclid.kneighbors(fitted.transform(X))
    np.testing.assert_allclose(d1, d2, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(i1, i2)


def test_get_metric_is_a_snapshot(problem):
    X, _, quads, _, _ = problem
    est = Qwise(preprocessor=X).fit(quads)
    metric = est.get_metric()
    before = metric(X[0], X[1])
    est.set_params(C_q=10.0).fit(quads)
    assert metric(X[0], X[1]) == before
    assert est.get_metric()(X[0], X[1]) != pytest.approx(before)


# ---------------------------------------------------------------------------
# Input forms and Eq. 11
# ---------------------------------------------------------------------------


def test_index_and_points_input_agree(problem):
    X, _, quads, pairs, labels = problem
    by_index = Qwise(preprocessor=X).fit(quads)
    by_points = Qwise().fit(X[quads])
    assert _rel(by_points.objective_, by_index.objective_) <= RTOL_OBJ
    kw = dict(u=1.0, l=4.0, regularizer="similar")
    by_index = Qwise(preprocessor=X, **kw).fit(quads, pairs=pairs, pair_labels=labels)
    by_points = Qwise(**kw).fit(X[quads], pairs=X[pairs], pair_labels=labels)
    assert _rel(by_points.objective_, by_index.objective_) <= RTOL_OBJ


def test_fit_with_pairs_is_eq11(fitted, problem):
    X, _, quads, pairs, labels = problem
    u, l = 1.0, 4.0
    M = fitted.get_mahalanobis_matrix()

    def d2(p):
        diff = X[p[:, 0]] - X[p[:, 1]]
        return np.einsum("pi,ij,pj->p", diff, M, diff)

    # Eq. 11 written out independently of QwiseData
    obj = (np.trace(M)
           + np.maximum(1.0 + d2(quads[:, :2]) - d2(quads[:, 2:]), 0).sum()
           + np.maximum(d2(pairs[labels == 1]) - u, 0).sum()
           + np.maximum(l - d2(pairs[labels == -1]), 0).sum())
    assert _rel(obj, fitted.objective_) <= RTOL_OBJ
    # the pair terms are in the problem: without them the optimum differs
    eq8 = Qwise(preprocessor=X).fit(quads)
    assert abs(eq8.objective_ - fitted.objective_) > 1e-3


def test_margins_per_quadruplet(problem):
    X, _, quads, _, _ = problem
    delta = np.linspace(0.5, 2.0, len(quads))
    est = Qwise(preprocessor=X).fit(quads, delta=delta)
    data = QwiseData.from_sets(Quadruplets.create(X, quads, delta))
    assert _rel(est.objective_, solve_exact(data, warm_start=warm_start).objective) <= RTOL_OBJ


def test_supervised_with_pairs_matches_tuple_learner(problem):
    X, y = problem[:2]
    kw = dict(u=0.5, l=2.0, C_p=0.3)
    sup = QwiseSupervised(n_constraints=25, random_state=4, **kw).fit(X, y)
    # the same sampling, done by hand
    rng = np.random.RandomState(4)
    quads = quadruplets_from_labels(y, 25, random_state=rng)
    from cvxmetric import pairs_from_labels

    pairs, labels = pairs_from_labels(y, 25, random_state=rng)
    tup = Qwise(preprocessor=X, **kw).fit(quads, pairs=pairs, pair_labels=labels)
    assert _rel(sup.objective_, tup.objective_) <= RTOL_OBJ


# ---------------------------------------------------------------------------
# Solvers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("regularizer", ["trace", "frobenius"])
def test_fast_agrees_with_exact(problem, regularizer):
    X, _, quads, pairs, labels = problem
    kw = dict(u=1.0, l=4.0, preprocessor=X, regularizer=regularizer)
    exact = Qwise(**kw).fit(quads, pairs=pairs, pair_labels=labels)
    fast = Qwise(solver="fast", **kw).fit(quads, pairs=pairs, pair_labels=labels)
    assert fast.status_ == "optimal"
    assert _rel(fast.objective_, exact.objective_) <= RTOL_OBJ


def test_subgradient_convergence_warning_propagates(problem):
    X, _, quads, _, _ = problem
    est = Qwise(solver="subgradient", max_iter=5, preprocessor=X)
    with pytest.warns(ConvergenceWarning):
        est.fit(quads)
    assert est.status_ == "max_iter_reached"
    assert est.n_iter_ == 5
    assert est.result_.method == "subgradient"


def test_solver_error_propagates(problem, monkeypatch):
    X, _, quads, _, _ = problem

    def fail(data, **kwargs):
        raise InfeasibleError("stub: certified infeasible")

    # the estimators reach the exact path through the registry
    monkeypatch.setattr(exact_module, "solve_exact", fail)
    est = Qwise(solver="exact", preprocessor=X)
    with pytest.raises(InfeasibleError, match="stub"):
        est.fit(quads)
    assert not hasattr(est, "components_")


# ---------------------------------------------------------------------------
# Bad input: a ValueError naming the argument
# ---------------------------------------------------------------------------


def _bad_fit_cases(X, quads, pairs, labels):
    Xnan = X.copy()
    Xnan[0, 1] = np.nan
    high = quads.copy()
    high[0, 0] = len(X)
    negative = quads.copy()
    negative[0, 0] = -1
    pl = dict(pairs=pairs, pair_labels=labels)
    return {
        "nan_preprocessor": (Qwise(preprocessor=Xnan), (quads,), {}, "preprocessor"),
        "quad_width_index": (Qwise(preprocessor=X), (quads[:, :3],), {}, "quadruplets"),
        "quad_width_points": (Qwise(), (X[quads[:, :3]],), {}, "quadruplets"),
        "quad_1d": (Qwise(preprocessor=X), (quads[0],), {}, "quadruplets"),
        "quad_float_index": (Qwise(preprocessor=X), (quads + 0.5,), {}, "quadruplets"),
        "index_without_preprocessor": (Qwise(), (quads,), {}, "quadruplets"),
        "out_of_range": (Qwise(preprocessor=X), (high,), {}, "quadruplets"),
        "negative": (Qwise(preprocessor=X), (negative,), {}, "quadruplets"),
        "empty_index": (Qwise(preprocessor=X), (np.empty((0, 4), int),), {},
                        "quadruplets"),
        "empty_points": (Qwise(), (np.empty((0, 4, 3)),), {}, "quadruplets"),
        "nan_points": (Qwise(), (np.full((2, 4, 3), np.nan),), {}, "quadruplets"),
        "delta_shape": (Qwise(preprocessor=X), (quads,), {"delta": [1.0, 2.0]},
                        "delta"),
        "unknown_solver": (Qwise(solver="newton", preprocessor=X), (quads,), {},
                           "solver"),
        "unknown_regularizer": (Qwise(regularizer="l1", preprocessor=X), (quads,),
                                {}, "regularizer"),
        "negative_C_q": (Qwise(C_q=-1.0, preprocessor=X), (quads,), {}, "C_q"),
        "bad_max_iter": (Qwise(max_iter=0, preprocessor=X), (quads,), {},
                         "max_iter"),
        "callable_preprocessor": (Qwise(preprocessor=lambda i: X[i]), (quads,), {},
                                  "preprocessor"),
        "pairs_without_u_l": (Qwise(preprocessor=X), (quads,), pl, "u, l"),
        "pairs_without_l": (Qwise(u=1.0, preprocessor=X), (quads,), pl, "u, l"),
        "u_greater_than_l": (Qwise(u=5.0, l=1.0, preprocessor=X), (quads,), pl,
                             "u, l"),
        "labels_not_pm1": (Qwise(u=1.0, l=2.0, preprocessor=X), (quads,),
                           dict(pairs=pairs, pair_labels=(labels > 0).astype(int)),
                           "pair_labels"),
        "labels_strings": (Qwise(u=1.0, l=2.0, preprocessor=X), (quads,),
                           dict(pairs=pairs, pair_labels=["a"] * len(pairs)),
                           "pair_labels"),
        "labels_length": (Qwise(u=1.0, l=2.0, preprocessor=X), (quads,),
                          dict(pairs=pairs, pair_labels=labels[:-1]),
                          "pair_labels"),
        "pairs_without_labels": (Qwise(u=1.0, l=2.0, preprocessor=X), (quads,),
                                 dict(pairs=pairs), "pair_labels"),
        "labels_without_pairs": (Qwise(u=1.0, l=2.0, preprocessor=X), (quads,),
                                 dict(pair_labels=labels), "pairs"),
        "pairs_mixed_forms": (Qwise(u=1.0, l=2.0, preprocessor=X), (quads,),
                              dict(pairs=X[pairs], pair_labels=labels), "pairs"),
        "pairs_other_n_features": (Qwise(u=1.0, l=2.0), (X[quads],),
                                   dict(pairs=X[pairs][:, :, :2],
                                        pair_labels=labels), "pairs"),
        "pairs_out_of_range": (Qwise(u=1.0, l=2.0, preprocessor=X), (quads,),
                               dict(pairs=pairs + len(X), pair_labels=labels),
                               "pairs"),
    }


_CASES = sorted(_bad_fit_cases(np.zeros((2, 3)), np.zeros((1, 4), int),
                               np.zeros((1, 2), int), np.ones(1)))


@pytest.mark.parametrize("case", _CASES)
def test_bad_fit_input_names_argument(case, problem):
    X, _, quads, pairs, labels = problem
    est, args, kwargs, name = _bad_fit_cases(X, quads, pairs, labels)[case]
    # cvxmetric messages start with "name:", scikit-learn's quote the parameter
    pattern = rf"^{re.escape(name)}:|'{re.escape(name)}' parameter"
    with pytest.raises(ValueError, match=pattern):
        est.fit(*args, **kwargs)
    assert not hasattr(est, "components_")


def test_bad_supervised_input_names_argument(problem):
    X, y = problem[:2]
    with pytest.raises(ValueError, match="^u, l:"):
        QwiseSupervised(u=1.0).fit(X, y)
    with pytest.raises(ValueError, match="^y: .*1 class"):
        QwiseSupervised().fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="^y: Unknown label type"):
        QwiseSupervised().fit(X, np.linspace(0, 1, len(X)))
    with pytest.raises(ValueError, match="'n_constraints' parameter"):
        QwiseSupervised(n_constraints=0).fit(X, y)
    with pytest.raises(ValueError, match="^u, l:"):
        QwiseSupervised(u=3.0, l=1.0, n_constraints=10).fit(X, y)


def test_bad_method_input_names_argument(fitted, problem):
    X = problem[0]
    d = X.shape[1]
    with pytest.raises(ValueError, match="X has 2 features"):
        fitted.transform(X[:, :2])
    Xnan = X.copy()
    Xnan[0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        fitted.transform(Xnan)
    with pytest.raises(ValueError, match="pairs"):
        fitted.pair_distance(X[:4, :2].reshape(2, 2, 2))  # 2 features, fitted on 3
    with pytest.raises(ValueError, match="pairs"):
        fitted.pair_distance(X[:6].reshape(2, 3, d))  # triples, not pairs
    with pytest.raises(ValueError, match="pairs"):
        fitted.pair_distance(np.full((2, 2, d), np.nan))
    with pytest.raises(ValueError, match="pairs"):
        fitted.pair_distance(np.empty((0, 2, d)))
    with pytest.raises(ValueError, match="pairs"):
        fitted.pair_distance([[0, len(X)]])
    with pytest.raises(ValueError, match="pairs"):
        fitted.pair_score(X[:2])  # 2-D points: ambiguous, rejected
    no_prep = Qwise().fit(X[problem[2]])
    with pytest.raises(ValueError, match="pairs: integer indices need preprocessor"):
        no_prep.pair_distance([[0, 1]])
    metric = fitted.get_metric()
    with pytest.raises(ValueError, match="^u:"):
        metric(X[0, :2], X[1])
    with pytest.raises(ValueError, match="^v:"):
        metric(X[0], np.array([np.nan] * d))


def test_unfitted_methods_raise():
    est = Qwise()
    for call in (est.get_mahalanobis_matrix, est.get_metric,
                 lambda: est.transform(np.ones((2, 2))),
                 lambda: est.pair_distance(np.ones((1, 2, 2))),
                 lambda: est.pair_score(np.ones((1, 2, 2)))):
        with pytest.raises(NotFittedError):
            call()

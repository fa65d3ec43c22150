"""Constraint-based DML estimators: scikit-learn contract, metric-learn API,
input validation, and the estimator's objective against the exact solver."""

import pickle
import re

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from cvxmetric import pairs_from_labels
from cvxmetric._tolerances import EXACT_GAP, tolerance
from cvxmetric.constraintdml._problem import ConstraintData, solve_constraint_exact
from cvxmetric.constraintdml._collection import query_gallery
from cvxmetric.constraintdml.estimator import (
    ConstraintDML,
    ConstraintDMLSupervised,
)
from cvxmetric.result import InfeasibleError

FAST = tolerance("constraintdml", "fast")


def _rel(a, b):
    return abs(float(a) - float(b)) / max(1.0, abs(float(b)))


@pytest.fixture(scope="module")
def problem():
    """(X, pairs, y): 12-item gallery, 8 queries in 3 dims, top-4 retrieval."""
    return query_gallery(12, 8, 3, 4, random_state=1)


@pytest.fixture(scope="module")
def fitted(problem):
    X, pairs, y = problem
    return ConstraintDML(hard=False, preprocessor=X).fit(pairs, y)


# ---------------------------------------------------------------------------
# scikit-learn's generic checks (the supervised variant is a fit(X, y) estimator)
# ---------------------------------------------------------------------------


@parametrize_with_checks([
    ConstraintDMLSupervised(n_constraints=30),
    ConstraintDMLSupervised(n_constraints=30, hard=False, diagonal=True, lam=0.5,
                            solver="fast"),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ---------------------------------------------------------------------------
# The pair learner: contract
# ---------------------------------------------------------------------------

PARAMS = dict(hard=False, diagonal=True, lam=0.25, solver="fast", tol=1e-9,
              max_iter=17, random_state=3)


def test_init_stores_arguments_only(problem):
    X = problem[0]
    est = ConstraintDML(preprocessor=X, **PARAMS)
    assert est.preprocessor is X
    for key, val in PARAMS.items():
        assert getattr(est, key) is val
    assert not [a for a in vars(est) if a.endswith("_")]
    ConstraintDML(solver="nope", lam=-1, preprocessor="not an array")  # fit rejects


def test_get_set_params_clone_repr(fitted):
    params = ConstraintDML(**PARAMS).get_params()
    assert ConstraintDML().set_params(**params).get_params() == params
    cl = clone(fitted)
    assert not hasattr(cl, "components_")
    np.testing.assert_array_equal(cl.preprocessor, fitted.preprocessor)
    assert repr(ConstraintDML(lam=2.0)) == "ConstraintDML(lam=2.0)"


def test_fitted_attributes(fitted, problem):
    d = problem[0].shape[1]
    assert fitted.components_.shape == (d, d)
    assert fitted.n_features_in_ == d
    assert fitted.status_ == "optimal"
    assert fitted.n_iter_ >= 1
    assert fitted.certificate_.passed
    assert fitted.result_.method == "exact"
    assert fitted.objective_ == fitted.result_.objective
    M = fitted.get_mahalanobis_matrix()
    np.testing.assert_allclose(M, fitted.components_.T @ fitted.components_)
    assert np.linalg.norm(M - fitted.result_.M) <= 1e-6 * max(
        1.0, np.linalg.norm(fitted.result_.M))


def test_pickle_round_trip(fitted, problem):
    back = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(back.components_, fitted.components_)
    assert back.objective_ == fitted.objective_
    assert back.certificate_.passed


def test_deterministic(problem):
    X, pairs, y = problem
    a = ConstraintDML(preprocessor=X, solver="fast").fit(pairs, y)
    b = ConstraintDML(preprocessor=X, solver="fast").fit(pairs, y)
    np.testing.assert_array_equal(a.components_, b.components_)


# ---------------------------------------------------------------------------
# The learned metric is the paper's
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("hard", [True, False], ids=["eq1", "eq4"])
@pytest.mark.parametrize("diagonal", [False, True], ids=["full", "diagonal"])
def test_fit_solves_the_paper_problem(problem, hard, diagonal):
    X, pairs, y = problem
    est = ConstraintDML(hard=hard, diagonal=diagonal, lam=0.5, preprocessor=X)
    est.fit(pairs, y)
    M = est.get_mahalanobis_matrix()
    diff = X[pairs[:, 0]] - X[pairs[:, 1]]
    d2 = np.einsum("pi,ij,pj->p", diff, M, diff)
    dm = d2[y == 1]
    loss = dm.sum() if hard else np.maximum(dm - 1, 0).sum()
    assert _rel(loss + 0.25 * np.sum(M * M), est.objective_) <= 1e-6
    assert d2[y == -1].min() >= 1 - 1e-6
    if diagonal:
        assert np.abs(M - np.diag(np.diag(M))).max() <= 1e-12
    fast = ConstraintDML(hard=hard, diagonal=diagonal, lam=0.5, preprocessor=X,
                         solver="fast").fit(pairs, y)
    assert fast.status_ == "optimal"
    assert _rel(fast.objective_, est.objective_) <= FAST


def test_index_and_points_input_agree(problem):
    X, pairs, y = problem
    by_index = ConstraintDML(preprocessor=X).fit(pairs, y)
    by_points = ConstraintDML().fit(X[pairs], y)
    assert _rel(by_points.objective_, by_index.objective_) <= EXACT_GAP
    # with a preprocessor, 3-D points are still read as points
    mixed = ConstraintDML(preprocessor=X).fit(X[pairs], y)
    assert _rel(mixed.objective_, by_index.objective_) <= EXACT_GAP


def test_supervised_matches_the_pair_learner():
    rng = np.random.RandomState(0)
    y = np.repeat([0, 1, 2], 6)
    X = rng.randn(18, 3) + 2.0 * y[:, None]
    sup = ConstraintDMLSupervised(n_constraints=40, hard=False, random_state=5)
    sup.fit(X, y)
    pairs, labels = pairs_from_labels(y, 40, random_state=np.random.RandomState(5))
    tup = ConstraintDML(hard=False, preprocessor=X).fit(pairs, labels)
    assert _rel(sup.objective_, tup.objective_) <= EXACT_GAP
    assert sup.transform(X).shape == X.shape


def test_lam_zero_fits_with_the_exact_solver(problem):
    X, pairs, y = problem
    est = ConstraintDML(lam=0.0, preprocessor=X).fit(pairs, y)
    data = ConstraintData.from_pairs(X, pairs, y, lam=0.0)
    assert _rel(est.objective_, solve_constraint_exact(data).objective) <= EXACT_GAP
    with pytest.raises(ValueError, match="^lam: the fast solver needs lam > 0"):
        ConstraintDML(lam=0.0, solver="fast", preprocessor=X).fit(pairs, y)


def test_fast_convergence_warning(problem):
    X, pairs, y = problem
    est = ConstraintDML(hard=False, solver="fast", max_iter=1, tol=1e-14,
                        preprocessor=X)
    with pytest.warns(ConvergenceWarning):
        est.fit(pairs, y)
    assert est.status_ == "max_iter_reached" and est.n_iter_ == 1


# ---------------------------------------------------------------------------
# Infeasible problems and bad input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("solver", ["exact", "fast"])
def test_identical_query_and_irrelevant_item_is_infeasible(problem, solver):
    X, pairs, y = problem
    q, x = pairs[np.flatnonzero(y == -1)[0]]
    X2 = X.copy()
    X2[x] = X2[q]  # the query duplicates an item judged irrelevant
    est = ConstraintDML(preprocessor=X2, solver=solver)
    with pytest.raises(InfeasibleError, match="cannot-link"):
        est.fit(pairs, y)
    assert not hasattr(est, "components_")
    # given as points, the two merge into one sample: still infeasible
    with pytest.raises(InfeasibleError, match="join identical points"):
        ConstraintDML(solver=solver).fit(X2[pairs], y)


def _bad_fit_cases(X, pairs, y):
    Xnan = X.copy()
    Xnan[0, 0] = np.nan
    q, x = pairs[np.flatnonzero(y == 1)[0]]
    Xdup = X.copy()
    Xdup[x] = Xdup[q]
    return {
        "nan_preprocessor": (ConstraintDML(preprocessor=Xnan), (pairs, y), "preprocessor"),
        "pairs_width": (ConstraintDML(preprocessor=X), (pairs[:, :1], y), "pairs"),
        "pairs_points_width": (ConstraintDML(), (X[pairs[:, [0, 1, 1]]], y), "pairs"),
        "pairs_float": (ConstraintDML(preprocessor=X), (pairs + 0.5, y), "pairs"),
        "index_without_preprocessor": (ConstraintDML(), (pairs, y), "pairs"),
        "out_of_range": (ConstraintDML(preprocessor=X), (pairs + len(X), y), "pairs"),
        "empty": (ConstraintDML(preprocessor=X), (np.empty((0, 2), int), []), "pairs"),
        "nan_points": (ConstraintDML(), (np.full((2, 2, 3), np.nan), [1, -1]), "pairs"),
        "ragged": (ConstraintDML(preprocessor=X), ([[0, 1], [2]], [1, -1]), "pairs"),
        "y_values": (ConstraintDML(preprocessor=X), (pairs, (y > 0).astype(int)), "y"),
        "y_strings": (ConstraintDML(preprocessor=X), (pairs, ["a"] * len(y)), "y"),
        "y_length": (ConstraintDML(preprocessor=X), (pairs, y[:-1]), "y"),
        "no_cannot_link": (ConstraintDML(preprocessor=X), (pairs, np.ones_like(y)), "labels"),
        "zero_must_link": (ConstraintDML(preprocessor=Xdup), (pairs, y), "pairs"),
        "unknown_solver": (ConstraintDML(solver="newton", preprocessor=X), (pairs, y),
                           "solver"),
        "negative_lam": (ConstraintDML(lam=-1.0, preprocessor=X), (pairs, y), "lam"),
        "hard_not_bool": (ConstraintDML(hard="yes", preprocessor=X), (pairs, y), "hard"),
        "bad_tol": (ConstraintDML(tol=0.0, preprocessor=X), (pairs, y), "tol"),
        "bad_max_iter": (ConstraintDML(max_iter=0, preprocessor=X), (pairs, y),
                         "max_iter"),
        "callable_preprocessor": (ConstraintDML(preprocessor=lambda i: X[i]),
                                  (pairs, y), "preprocessor"),
    }


_CASES = sorted(_bad_fit_cases(np.zeros((2, 3)), np.zeros((2, 2), int),
                               np.array([1, -1])))


@pytest.mark.parametrize("case", _CASES)
def test_bad_fit_input_names_argument(case, problem):
    X, pairs, y = problem
    est, args, name = _bad_fit_cases(X, pairs, y)[case]
    pattern = rf"^{re.escape(name)}:|'{re.escape(name)}' parameter"
    with pytest.raises(ValueError, match=pattern):
        est.fit(*args)
    assert not hasattr(est, "components_")


def test_bad_supervised_input():
    rng = np.random.RandomState(0)
    X = rng.randn(10, 2)
    with pytest.raises(ValueError, match="^y: .*1 class"):
        ConstraintDMLSupervised().fit(X, np.zeros(10))
    with pytest.raises(ValueError, match="'n_constraints' parameter"):
        ConstraintDMLSupervised(n_constraints=1).fit(X, np.arange(10) % 2)
    # every different-class pair joins identical points
    Xsame = np.ones((6, 2))
    with pytest.raises(ValueError, match="^X: every sampled cannot-link"):
        ConstraintDMLSupervised(n_constraints=10, random_state=0).fit(
            Xsame, np.arange(6) % 2)


def test_unfitted_methods_raise():
    est = ConstraintDML()
    for call in (est.get_mahalanobis_matrix, est.get_metric,
                 lambda: est.transform(np.ones((2, 2))),
                 lambda: est.pair_distance(np.ones((1, 2, 2)))):
        with pytest.raises(NotFittedError):
            call()

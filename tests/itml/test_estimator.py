"""The ITML estimators: scikit-learn's checks, metric-learn's keywords and
pair draws, the three solvers, the declared problem, bad input."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from cvxmetric import ITML, ITML_Supervised, ProblemSizeError, formulation, pairs_from_labels
from cvxmetric._tolerances import EXACT_GAP, tolerance
from cvxmetric.itml import ITMLData
from cvxmetric.itml.estimator import metric_learn_pairs


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), y


@parametrize_with_checks([ITML_Supervised(), ITML_Supervised(gamma=0.5, n_constraints=30)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_metric_learn_signatures():
    import inspect

    assert list(inspect.signature(ITML).parameters) == [
        "gamma", "max_iter", "tol", "prior", "verbose", "preprocessor", "random_state",
        "convergence_threshold", "solver"]
    assert list(inspect.signature(ITML_Supervised).parameters) == [
        "gamma", "max_iter", "tol", "n_constraints", "prior", "verbose", "preprocessor",
        "random_state", "num_constraints", "convergence_threshold", "solver"]
    assert list(inspect.signature(ITML.fit).parameters)[1:] == [
        "pairs", "y", "bounds", "calibration_params"]
    assert list(inspect.signature(ITML_Supervised.fit).parameters)[1:] == [
        "X", "y", "bounds"]
    assert formulation("itml").estimators == ("ITML", "ITML_Supervised")


def test_solvers_agree_and_certify(iris):
    X, y = iris
    fits = {s: ITML_Supervised(random_state=0, solver=s) for s in ("exact", "fast")}
    for est in fits.values():
        est.fit(X, y)
        assert est.status_ == "optimal" and est.certificate_.rel_gap <= EXACT_GAP
    f_exact, f_fast = fits["exact"].objective_, fits["fast"].objective_
    assert abs(f_fast - f_exact) <= tolerance("itml", "fast") * max(1.0, abs(f_exact))
    np.testing.assert_allclose(fits["fast"].get_mahalanobis_matrix(),
                               fits["exact"].get_mahalanobis_matrix(), rtol=1e-3,
                               atol=1e-4)
    est = fits["fast"]
    assert est.bounds_.shape == (2,) and est.bounds_[0] < est.bounds_[1]
    assert est.pairs_.shape == (len(est.pair_labels_), 2)
    np.testing.assert_allclose(est.transform(X), X @ est.components_.T)
    assert 0.5 < est.score(X, y) <= 1.0


def test_bregman_reports_what_it_reaches(iris):
    X, y = iris
    with pytest.warns(ConvergenceWarning):
        est = ITML_Supervised(random_state=0, solver="bregman", max_iter=20).fit(X, y)
    assert est.status_ == "max_iter_reached" and not est.certificate_.passed
    assert est.n_iter_ == 20
    ref = ITML_Supervised(random_state=0).fit(X, y).objective_
    # the certificate's bound is valid: below the optimum
    assert est.certificate_.dual_bound <= ref + 1e-9 <= est.objective_ + 2e-9


def test_the_same_pairs_as_metric_learn():
    # metric-learn 0.7.0's Constraints(y).positive_negative_pairs(4,
    # random_state=0) on these labels, recorded
    y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 1])
    got = [x.tolist() for x in metric_learn_pairs(y, 4, 0)]
    assert got == [[5, 3, 3, 0], [4, 9, 5, 2], [7, 6, 4, 8], [4, 2, 0, 1]]


def test_pairs_learner_api(iris):
    X, y = iris
    pairs, labels = pairs_from_labels(y, 120, random_state=0)
    est = ITML(preprocessor=X).fit(pairs, labels)
    assert est.status_ == "optimal" and est.threshold_ > 0
    assert est.score(pairs, labels) > 0.9
    np.testing.assert_allclose(est.pair_distance(pairs[:5]),
                               np.linalg.norm((X[pairs[:5, 0]] - X[pairs[:5, 1]])
                                              @ est.components_.T, axis=1))
    np.testing.assert_allclose(est.score_pairs(pairs[:5]), est.pair_distance(pairs[:5]))
    points = ITML().fit(X[pairs], labels)
    np.testing.assert_allclose(points.get_mahalanobis_matrix(),
                               est.get_mahalanobis_matrix(), rtol=1e-9)
    # bounds given: used as they are; a callable preprocessor forms the points
    given = ITML(preprocessor=lambda idx: X[idx]).fit(pairs, labels, bounds=(1.0, 8.0))
    np.testing.assert_allclose(given.bounds_, [1.0, 8.0])
    data = ITMLData(X, pairs, labels, bounds=(1.0, 8.0))
    assert given.objective_ == pytest.approx(data.objective(given.result_.M), rel=1e-12)


@pytest.mark.parametrize("prior", ["covariance", "random", "array"])
def test_priors(iris, prior):
    X, y = iris
    pairs, labels = pairs_from_labels(y, 60, random_state=1)
    value = np.diag([1.0, 2.0, 0.5, 1.0]) if prior == "array" else prior
    est = ITML(prior=value, random_state=0, preprocessor=X).fit(pairs, labels)
    assert est.status_ == "optimal"
    ex = ITML(prior=value, random_state=0, preprocessor=X, solver="exact").fit(pairs, labels)
    assert est.objective_ == pytest.approx(ex.objective_, rel=1e-6)


def test_declared_problem(iris):
    X, y = iris
    est = ITML_Supervised(n_constraints=40, random_state=2)
    dp = est.declared_problem(X, y)
    assert dp.family == "itml" and dp.problem.is_dpp()
    value = dp.solve()
    est.fit(X, y)
    assert value == pytest.approx(est.objective_, rel=1e-6)
    assert dp.certificate().passed


def test_deprecated_spellings(iris):
    X, y = iris
    with pytest.warns(FutureWarning, match="num_constraints"):
        est = ITML_Supervised(num_constraints=20, random_state=0).fit(X, y)
    assert len(est.pairs_) == 40
    with pytest.warns(FutureWarning, match="convergence_threshold"):
        ITML_Supervised(convergence_threshold=1e-2, n_constraints=20,
                        solver="bregman", random_state=0).fit(X, y)


def test_bad_input(iris):
    X, y = iris
    pairs, labels = pairs_from_labels(y, 40, random_state=0)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError):
        ITML_Supervised().fit(bad, y)
    with pytest.raises(ValueError, match="pairs"):
        ITML(preprocessor=X).fit(np.empty((0, 2), int), [])
    with pytest.raises(ValueError, match="pairs"):
        ITML(preprocessor=X).fit([[0, 500]], [1])
    with pytest.raises(ValueError, match="y"):
        ITML(preprocessor=X).fit(pairs, labels[:-1])
    with pytest.raises(ValueError, match="pairs: dissimilar pair"):
        ITML(preprocessor=X).fit([[0, 0], [0, 60]], [-1, 1])
    with pytest.raises(ValueError, match="prior"):
        ITML(prior=-np.eye(4), preprocessor=X).fit(pairs, labels)
    with pytest.raises(ValueError, match="prior"):
        ITML(prior=np.diag([1.0, 1.0, 1.0, 0.0]), preprocessor=X).fit(pairs, labels)
    with pytest.raises(ValueError, match="gamma"):
        ITML(gamma=0.0, preprocessor=X).fit(pairs, labels)
    with pytest.raises(ValueError, match="gamma"):
        ITML(gamma=np.inf, preprocessor=X).fit(pairs, labels)
    for bounds in ([1.0], [0.0, 1.0], [np.nan, 1.0], [-1.0, 2.0]):
        with pytest.raises(ValueError, match="bounds"):
            ITML(preprocessor=X).fit(pairs, labels, bounds=bounds)
    with pytest.raises(ValueError, match="y"):
        ITML_Supervised().fit(X, np.zeros(len(y)))
    # the covariance of points on a line has no inverse
    line = np.column_stack([np.arange(10.0), 2 * np.arange(10.0)])
    with pytest.raises(ValueError, match="prior"):
        ITML(prior="covariance", preprocessor=line).fit([[0, 1], [2, 9]], [1, -1])


def test_extreme_scales_give_the_same_metric_up_to_scale(iris):
    X, y = iris
    base = ITML_Supervised(random_state=0).fit(X, y)
    for c in (1e-3, 1e3):
        est = ITML_Supervised(random_state=0).fit(c * X, y)
        assert est.status_ == "optimal"
        # bounds scale with c, squared distances with c^2: a different
        # problem, certified all the same
        np.testing.assert_allclose(est.bounds_, c * base.bounds_, rtol=1e-9)


def test_exact_size_refusal(monkeypatch, iris):
    X, y = iris
    from cvxmetric.itml import exact

    monkeypatch.setattr(exact, "ITML_EXACT_MAX_ENTRIES", 10)
    with pytest.raises(ProblemSizeError, match="solver"):
        ITML_Supervised(solver="exact", random_state=0).fit(X, y)


def test_clone_and_params():
    est = ITML_Supervised(gamma=2.0, n_constraints=7)
    assert clone(est).get_params()["gamma"] == 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ITML_Supervised().get_params()

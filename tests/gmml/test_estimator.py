"""GMML and GMMLSupervised: scikit-learn and metric-learn conventions."""

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.utils.estimator_checks import parametrize_with_checks

from cvxmetric import GMML, GMMLSupervised, NotAttainedError
from cvxmetric.constraints import pairs_from_labels


@pytest.fixture(scope="module")
def problem():
    X, y = load_iris(return_X_y=True)
    pairs, labels = pairs_from_labels(y, 180, random_state=0)
    return X, y, pairs, labels


@parametrize_with_checks([GMMLSupervised(), GMMLSupervised(solver="exact", t=0.5)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("solver", ["fast", "exact"])
def test_pairs_learner(problem, solver):
    X, _, pairs, labels = problem
    est = GMML(preprocessor=X, solver=solver).fit(pairs, labels)
    assert est.status_ == "optimal" and est.certificate_.passed
    assert est.components_.shape == (4, 4) and est.score(pairs, labels) > 0.5
    pts = GMML(solver=solver).fit(X[pairs], labels)
    fn = GMML(preprocessor=lambda i: X[i], solver=solver).fit(pairs, labels)
    for other in (pts, fn):
        assert other.objective_ == pytest.approx(est.objective_, rel=1e-7)


def test_exact_and_fast_agree(problem):
    X, y, _, _ = problem
    fast = GMMLSupervised(lam=1.0, random_state=2).fit(X, y)
    exact = GMMLSupervised(lam=1.0, random_state=2, solver="exact").fit(X, y)
    assert abs(fast.objective_ - exact.objective_) <= 1e-6 * abs(exact.objective_)


def test_weighted_and_declared(problem):
    X, y, _, _ = problem
    est = GMMLSupervised(t=0.3, random_state=0).fit(X, y)
    assert est.status_ == "optimal"
    with pytest.raises(ValueError, match="^t:"):
        GMMLSupervised(t=0.3, solver="exact", random_state=0).fit(X, y)
    dp = GMMLSupervised(random_state=0).declared_problem(X, y)
    assert dp.family == "gmml" and dp.solve() == pytest.approx(
        GMMLSupervised(random_state=0).fit(X, y).objective_, rel=1e-7)


def test_not_attained(problem):
    X, _, _, _ = problem
    with pytest.raises(NotAttainedError, match="lam"):
        GMML(lam=0.0, preprocessor=X).fit([[0, 1], [0, 60]], [1, -1])


@pytest.mark.parametrize("params, match", [
    ({"lam": -1.0}, "lam"), ({"t": 2.0}, "t"), ({"M0": -np.eye(4)}, "M0"),
    ({"solver": "newton"}, "solver"), ({"n_constraints": 0}, "n_constraints"),
    ({"lam": np.inf}, "lam"),
])
def test_bad_parameters(problem, params, match):
    X, y, _, _ = problem
    with pytest.raises(ValueError, match=match):
        GMMLSupervised(**params).fit(X, y)


def test_bad_pairs(problem):
    X, _, pairs, labels = problem
    with pytest.raises(ValueError, match="pairs"):
        GMML(preprocessor=X).fit([[0, 150]], [1])
    with pytest.raises(ValueError, match="y"):
        GMML(preprocessor=X).fit(pairs, labels[:-1])
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="preprocessor"):
        GMML(preprocessor=bad).fit(pairs, labels)

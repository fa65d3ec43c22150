"""SDML and SDML_Supervised: scikit-learn and metric-learn conventions."""

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.utils.estimator_checks import parametrize_with_checks

from cvxmetric import SDML, SDML_Supervised, UnboundedError
from cvxmetric.constraints import pairs_from_labels


@pytest.fixture(scope="module")
def problem():
    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    pairs, labels = pairs_from_labels(y, 180, random_state=0)
    return X, y, pairs, labels


@parametrize_with_checks([SDML_Supervised(), SDML_Supervised(balance_param=1e-5),
                          SDML_Supervised(balance_param=1e-5, solver="exact")])
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("solver", ["fast", "exact"])
def test_pairs_learner(problem, solver):
    X, _, pairs, labels = problem
    est = SDML(balance_param=1e-3, preprocessor=X, solver=solver).fit(pairs, labels)
    assert est.status_ == "optimal" and est.certificate_.passed
    assert est.components_.shape == (4, 4) and est.n_features_in_ == 4
    assert est.predict(pairs).shape == (180,) and 0.5 < est.score(pairs, labels) <= 1
    # points instead of indices, and a callable preprocessor: the same fit
    pts = SDML(balance_param=1e-3, solver=solver).fit(X[pairs], labels)
    fn = SDML(balance_param=1e-3, preprocessor=lambda i: X[i], solver=solver).fit(
        pairs, labels)
    for other in (pts, fn):
        assert other.objective_ == pytest.approx(est.objective_, rel=1e-7)


def test_exact_and_fast_agree(problem):
    X, y, _, _ = problem
    kw = dict(balance_param=1e-4, sparsity_param=0.02, random_state=3)
    fast = SDML_Supervised(**kw).fit(X, y)
    exact = SDML_Supervised(solver="exact", **kw).fit(X, y)
    assert abs(fast.objective_ - exact.objective_) <= 1e-6 * max(1, exact.objective_)


@pytest.mark.parametrize("prior", ["identity", "covariance", "random"])
def test_priors(problem, prior):
    X, y, _, _ = problem
    est = SDML_Supervised(balance_param=1e-5, prior=prior, random_state=0).fit(X, y)
    assert est.status_ == "optimal"


def test_metric_learn_default_weight_is_unbounded_here(problem):
    X, y, _, _ = problem
    with pytest.raises(UnboundedError, match="balance_param"):
        SDML_Supervised(balance_param=0.5, random_state=0).fit(X, y)


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
@pytest.mark.parametrize("solver", ["fast", "exact"])
def test_auto_weight_keeps_p_definite_at_any_scale(problem, scale, solver):
    X, y, _, _ = problem
    est = SDML_Supervised(random_state=0, solver=solver).fit(scale * X, y)
    assert est.status_ == "optimal" and est.certificate_.passed
    eta = est.balance_param_
    assert 0 < eta <= 0.5
    # the weight scales as 1 / scale^2 (K does as scale^2), up to the cap
    ref = SDML_Supervised(random_state=0).fit(X, y).balance_param_
    assert eta == pytest.approx(min(0.5, ref / scale**2), rel=1e-8)
    # P = I + eta K >= I / 2, with equality below the cap (the pairs' term
    # is indefinite on standardised iris)
    from cvxmetric.sdml import SDMLData
    data = SDMLData(scale * X, *pairs_from_labels(y, 180, random_state=0),
                    balance_param="auto")
    w = np.linalg.eigvalsh(data.P)
    if data.balance_param < 0.5:
        assert w[0] == pytest.approx(0.5, rel=1e-8)
    else:
        assert w[0] > 0.5


def test_auto_weight_is_capped_at_metric_learn_default():
    from cvxmetric.sdml import SDMLData
    X = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.1], [0.1, 0.1]])
    # similar pairs only: K is PSD, any weight keeps P definite
    data = SDMLData(X, [[0, 1], [2, 3]], [1, 1], balance_param="auto")
    assert data.balance_param == 0.5


def test_defaults_fit_data_as_loaded():
    from sklearn.datasets import load_wine
    from sklearn.model_selection import cross_val_score
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline

    X, y = load_wine(return_X_y=True)  # sorted by class, unscaled
    scores = cross_val_score(make_pipeline(SDML_Supervised(random_state=0),
                                           KNeighborsClassifier()), X, y,
                             error_score="raise")
    assert np.all(np.isfinite(scores)) and scores.mean() > 0.6


def test_declared_problem_is_fit_s(problem):
    X, y, _, _ = problem
    est = SDML_Supervised(balance_param=1e-4, random_state=1)
    dp = est.declared_problem(X, y)
    assert dp.family == "sdml" and dp.problem.is_dpp()
    assert dp.solve() == pytest.approx(est.fit(X, y).objective_, rel=1e-7)


@pytest.mark.parametrize("params, match", [
    ({"balance_param": -1.0}, "balance_param"),
    ({"sparsity_param": -1.0}, "sparsity_param"),
    ({"balance_param": np.inf}, "balance_param"),
    ({"prior": "pca"}, "prior"),
    ({"prior": -np.eye(4)}, "prior"),
    ({"prior": np.eye(3)}, "prior"),
    ({"solver": "newton"}, "solver"),
    ({"n_constraints": 1}, "n_constraints"),
])
def test_bad_parameters(problem, params, match):
    X, y, _, _ = problem
    with pytest.raises(ValueError, match=match):
        SDML_Supervised(**params).fit(X, y)


def test_bad_pairs(problem):
    X, _, pairs, labels = problem
    est = SDML(balance_param=1e-3, preprocessor=X)
    with pytest.raises(ValueError, match="pairs"):
        est.fit([[0, 150]], [1])
    with pytest.raises(ValueError, match="y"):
        est.fit(pairs, labels[:-1])
    with pytest.raises(ValueError, match="pairs"):
        SDML().fit(np.empty((0, 2, 4)), [])
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="preprocessor"):
        SDML(preprocessor=bad).fit(pairs, labels)


def test_covariance_prior_needs_a_definite_covariance():
    X = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [2.0, 2.0, 2.1]])
    with pytest.raises(ValueError, match="prior"):
        SDML(prior="covariance", preprocessor=X).fit([[0, 1], [1, 2]], [1, -1])

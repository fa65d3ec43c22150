"""Model selection of the ``fit(X, y)`` learners with scikit-learn's defaults.

They are transformers, not classifiers, so ``cross_val_score`` and
``GridSearchCV`` split with an unshuffled ``KFold``: on iris and wine,
which scikit-learn ships sorted by class, most folds hold one class.  Their
``score`` ranks a fold's samples among themselves and against the reference
sample ``fit`` keeps of the training set, so every such fold has a finite
score (it was NaN: no different-class pair inside a one-class fold).
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import cvxmetric as cm
from cvxmetric._base import MAX_SCORE_REFERENCE

#: Every fit(X, y) learner, with small settings, and a grid of two values.
LEARNERS = {
    "MMCSupervised": (lambda: cm.MMCSupervised(solver="fast", n_constraints=60,
                                               random_state=0),
                      {"diagonal": [False, True]}),
    "LDMLSupervised": (lambda: cm.LDMLSupervised(solver="fast", lam=1.0, random_state=0),
                       {"lam": [0.5, 2.0]}),
    "ConstraintDMLSupervised": (lambda: cm.ConstraintDMLSupervised(
        solver="fast", n_constraints=60, random_state=0), {"lam": [0.1, 1.0]}),
    "RankDMLSupervised": (lambda: cm.RankDMLSupervised(solver="fast", n_queries=10,
                                                       random_state=0),
                          {"lam": [0.1, 1.0]}),
    "QwiseStructuralSupervised": (lambda: cm.QwiseStructuralSupervised(
        n_constraints=60, random_state=0), {"C": [0.1, 1.0]}),
    "QwiseSupervised": (lambda: cm.QwiseSupervised(solver="fast", n_constraints=60,
                                                   random_state=0),
                        {"C_q": [0.1, 1.0]}),
    "QwiseVectorSupervised": (lambda: cm.QwiseVectorSupervised(
        solver="newton", n_constraints=60, random_state=0), {"C_q": [0.1, 1.0]}),
    "SLR": (lambda: cm.SLR(), {"delta1": [1.0, 2.0]}),
}


def _data(name):
    """A bundled dataset in its shipped order (breast_cancer: its first 150
    samples, both classes, to keep the all-pairs learners quick)."""
    load = {"iris": load_iris, "wine": load_wine, "breast_cancer": load_breast_cancer}[name]
    X, y = load(return_X_y=True)
    if name == "breast_cancer":
        X, y = X[:150], y[:150]
    return X, y


def _pipeline(name):
    est = LEARNERS[name][0]()
    return make_pipeline(StandardScaler(), est)


@pytest.mark.parametrize("dataset", ["iris", "wine", "breast_cancer"])
@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_cross_val_score_default_folds_is_finite(name, dataset):
    X, y = _data(dataset)
    if dataset in ("iris", "wine"):  # shipped sorted: default folds of one class
        assert np.all(np.diff(y) >= 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        scores = cross_val_score(_pipeline(name), X, y, error_score="raise")
    assert scores.shape == (5,) and np.all(np.isfinite(scores))
    assert np.all((scores >= 0) & (scores <= 1))


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_grid_search_default_folds_is_finite(name):
    X, y = _data("wine")
    make, grid = LEARNERS[name]
    grid = {f"{type(make()).__name__.lower()}__{k}": v for k, v in grid.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        search = GridSearchCV(_pipeline(name), grid, error_score="raise").fit(X, y)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert 0.5 < search.best_score_ <= 1.0
    assert search.best_score_ == np.max(search.cv_results_["mean_test_score"])


def test_the_wine_case_of_the_report():
    """``cross_val_score(MMCSupervised(solver="fast", random_state=0), X, y,
    cv=5)`` on standardised wine gave [nan 0.867 nan 0.781 nan]."""
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    scores = cross_val_score(cm.MMCSupervised(solver="fast", random_state=0), X, y,
                             cv=5, error_score="raise")
    assert np.all(np.isfinite(scores)) and np.all(scores > 0.7)


def _with_components(est, L):
    """``est`` with its metric replaced by ``L^T L`` (a metric to compare)."""
    est._set_metric(L.T @ L)
    return est


@pytest.mark.parametrize("fold", ["mixed", "one class"])
def test_score_ranks_a_good_metric_above_a_random_one(fold):
    """Wine in its own units (a random metric mixes proline, in the
    hundreds, with features below 1): the learned metric against random
    ones, on a held-out fold of both or of one class."""
    X, y = load_wine(return_X_y=True)
    rng = np.random.RandomState(0)
    test = (rng.permutation(len(y))[:40] if fold == "mixed"
            else np.flatnonzero(y == 1)[:25])
    train = np.setdiff1d(np.arange(len(y)), test)
    good = cm.MMCSupervised(solver="fast", random_state=0).fit(X[train], y[train])
    best = good.score(X[test], y[test])
    d = X.shape[1]
    for seed in range(5):
        L = np.random.RandomState(seed).randn(d, d)
        bad = _with_components(cm.MMCSupervised(solver="fast", random_state=0)
                               .fit(X[train], y[train]), L)
        assert bad.score(X[test], y[test]) < best - 0.05


def test_reference_is_class_stratified_and_bounded():
    X, y = load_iris(return_X_y=True)
    big_X = np.repeat(X, 10, axis=0) + 1e-3 * np.random.RandomState(0).randn(1500, 4)
    big_y = np.repeat(y, 10)
    w = np.r_[np.zeros(1300, dtype=int), np.ones(200, dtype=int)]  # unbalanced
    est = cm.MMCSupervised(solver="fast", n_constraints=60, random_state=3)
    est.fit(big_X, w)
    ref_y = est._score_reference_y
    assert len(ref_y) == MAX_SCORE_REFERENCE
    # each class in its training proportion
    assert np.sum(ref_y == 1) == round(MAX_SCORE_REFERENCE * 200 / 1500)
    # drawn with random_state: the same again, another with another seed
    again = cm.MMCSupervised(solver="fast", n_constraints=60, random_state=3).fit(big_X, w)
    np.testing.assert_array_equal(again._score_reference_X, est._score_reference_X)
    other = cm.MMCSupervised(solver="fast", n_constraints=60, random_state=4).fit(big_X, w)
    assert not np.array_equal(other._score_reference_X, est._score_reference_X)
    # the reference does not change the pairs fit draws
    rs = np.random.RandomState(5)
    a = cm.MMCSupervised(solver="fast", n_constraints=60, random_state=rs).fit(big_X, big_y)
    b = cm.MMCSupervised(solver="fast", n_constraints=60, random_state=5).fit(big_X, big_y)
    np.testing.assert_allclose(a.components_, b.components_)

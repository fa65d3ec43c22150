"""The LMNN estimator: scikit-learn's checks, metric-learn's keywords, the
declared problem against the exact optimum, and bad input."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from cvxmetric import LMNN, ProblemSizeError, formulation
from cvxmetric._tolerances import EXACT_GAP
from cvxmetric.lmnn import LMNNData, exact


def blobs(n_per_class=8, n_classes=3, d=3, seed=0):
    rng = np.random.RandomState(seed)
    y = np.repeat(np.arange(n_classes), n_per_class)
    return rng.randn(n_classes, d)[y] + rng.randn(y.size, d), y


@parametrize_with_checks([LMNN(), LMNN(k=1, mu=0.3)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_fit_attributes_and_certificate():
    X, y = blobs()
    est = LMNN().fit(X, y)
    assert est.status_ == "optimal" and est.certificate_.passed
    assert est.components_.shape == (3, 3) and est.n_features_in_ == 3
    assert est.target_neighbors_.shape == (len(y), 3)
    data = LMNNData(X, y)
    assert est.objective_ == pytest.approx(data.objective(est.result_.M), rel=1e-12)
    np.testing.assert_allclose(est.get_mahalanobis_matrix(), est.mahalanobis_matrix_)
    np.testing.assert_allclose(est.transform(X), X @ est.components_.T)
    assert 0.5 < est.score(X, y) <= 1.0
    assert "model" not in est.result_.info


def test_the_declared_problem_as_printed_has_the_exact_optimum():
    X, y = blobs(seed=1)
    est = LMNN(k=2, mu=0.3).fit(X, y)
    dp = est.declared_problem(X, y)
    assert dp.family == "lmnn" and dp.problem.is_dpp()
    assert set(dp.parameters) == {"mu"} and set(dp.constraints) == {"impostors", "psd"}
    value = dp.solve()
    assert abs(value - est.objective_) <= EXACT_GAP * max(1.0, abs(est.objective_))
    assert dp.certificate().passed
    # ... with any solver, the problem's own value is the same optimum
    dp.solve(solver="CLARABEL")
    assert dp.problem.value == pytest.approx(est.objective_, rel=1e-6)
    # mu is a parameter: a new value re-solves to that mu's optimum
    dp.set_parameters(mu=0.6)
    again = LMNN(k=2, mu=0.6).fit(X, y)
    assert dp.solve() == pytest.approx(again.objective_, rel=1e-6)
    with pytest.raises(ValueError, match="mu"):
        dp.set_parameters(mu=1.0)


def test_registry_entry():
    f = formulation("lmnn")
    assert f.estimators == ("LMNN",)
    assert [m.name for m in f.methods] == ["exact", "fast", "subgradient"]
    assert f.load("exact") is exact.solve_exact
    assert f.load("declared") is exact.declared_problem
    assert f.load("data") is LMNNData


def test_metric_learn_keywords():
    X, y = blobs(seed=2)
    base = LMNN(k=2, mu=0.3).fit(X, y)
    ml = LMNN(n_neighbors=2, regularization=0.7, learn_rate=1e-6, max_iter=10,
              min_iter=5, convergence_tol=1e-3, init="pca", random_state=0).fit(X, y)
    np.testing.assert_array_equal(ml.target_neighbors_, base.target_neighbors_)
    assert ml.objective_ == pytest.approx(base.objective_, rel=1e-6)
    # the default k / mu give way to the alias; a disagreeing one is an error
    with pytest.raises(ValueError, match="n_neighbors"):
        LMNN(k=4, n_neighbors=2).fit(X, y)
    with pytest.raises(ValueError, match="regularization"):
        LMNN(mu=0.2, regularization=0.5).fit(X, y)
    full = LMNN(k=2, mu=0.3, n_components=3).fit(X, y)
    np.testing.assert_array_equal(full.components_, base.components_)
    with pytest.raises(ValueError, match="n_components"):
        LMNN(n_components=4).fit(X, y)
    # fewer components: the top eigen-directions of the certified M
    low = LMNN(k=2, mu=0.3, n_components=2).fit(X, y)
    assert low.components_.shape == (2, 3) and low.transform(X).shape == (len(y), 2)
    assert low.certificate_.passed and low.objective_ == full.objective_
    w, V = np.linalg.eigh(full.get_mahalanobis_matrix())
    best = (V[:, 1:] * w[1:]) @ V[:, 1:].T
    np.testing.assert_allclose(low.get_mahalanobis_matrix(), best, atol=1e-10)


def test_preprocessor_indicators():
    X, y = blobs(seed=3)
    a = LMNN().fit(X, y)
    b = LMNN(preprocessor=X).fit(np.arange(len(y)), y)
    np.testing.assert_allclose(a.components_, b.components_)


def test_clone_pickle_and_set_params():
    X, y = blobs()
    est = LMNN(k="x", mu=3)  # validated by fit only
    assert est.k == "x"
    fitted = LMNN().fit(X, y)
    back = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(back.components_, fitted.components_)
    assert not hasattr(clone(fitted), "components_")
    assert clone(fitted).set_params(mu=0.2).get_params()["mu"] == 0.2


def test_size_limit_names_solver(monkeypatch):
    X, y = blobs()
    monkeypatch.setattr(exact, "EXACT_MAX_TRIPLETS", 10)
    with pytest.raises(ProblemSizeError, match="^solver: "):
        LMNN().fit(X, y)
    with pytest.raises(ProblemSizeError, match="^data: "):
        exact.solve_exact(LMNNData(X, y))


# -- bad input --------------------------------------------------------------------


@pytest.mark.parametrize("params, name", [
    ({"k": 0}, "k"), ({"k": -2}, "k"), ({"mu": 0.0}, "mu"), ({"mu": 1.0}, "mu"),
    ({"mu": 1.5}, "mu"), ({"regularization": 1.0}, "regularization"),
    ({"n_neighbors": 0}, "n_neighbors"), ({"solver": "nope"}, "solver")])
def test_bad_parameters_name_themselves(params, name):
    X, y = blobs()
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        LMNN(**params).fit(X, y)


def test_bad_data():
    X, y = blobs()
    Xnan = X.copy()
    Xnan[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        LMNN().fit(Xnan, y)
    with pytest.raises(ValueError, match="^y: "):
        LMNN().fit(X, np.zeros(len(y)))   # one class
    with pytest.raises(ValueError, match="^M0: "):
        LMNN(M0=-np.eye(3)).fit(X, y)


def test_small_classes_duplicates_and_one_feature():
    X, y = blobs(n_per_class=6)
    y = y.copy()
    y[:2] = 5                      # a class of 2 points: 1 target each
    est = LMNN(k=3).fit(X, y)
    assert est.status_ == "optimal"
    assert np.all(est.target_neighbors_[:2, 1:] == -1)
    # duplicated samples, within and across classes
    Xd = np.vstack([X, X[3:5], X[10:11]])
    yd = np.concatenate([y, y[3:5], [y[0]]])
    assert LMNN().fit(Xd, yd).certificate_.passed
    # one feature
    est = LMNN().fit(X[:, :1], y)
    assert est.status_ == "optimal" and est.components_.shape == (1, 1)


@pytest.mark.parametrize("scale", [1e-100, 1e-6, 1e6, 1e100])
def test_extreme_scales(scale):
    # distances scale like scale^2, the metric like 1 / scale^2: the
    # optimum of the scaled data is that of the data (the margin is 1)
    X, y = blobs(seed=4)
    ref = LMNN().fit(X, y)
    est = LMNN().fit(X * scale, y)
    assert est.certificate_.passed
    assert est.objective_ == pytest.approx(ref.objective_, rel=1e-6)
    np.testing.assert_allclose(est.get_mahalanobis_matrix() * scale ** 2,
                               ref.get_mahalanobis_matrix(), rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_scales_beyond_floating_point_name_x(scale):
    # squared distances (or the pull matrix) leave the float64 range
    X, y = blobs(seed=4)
    with pytest.raises(ValueError, match="^X: "):
        LMNN().fit(X * scale, y)


def test_iris_exact():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    est = LMNN(random_state=0).fit(X, y)
    assert est.status_ == "optimal" and est.certificate_.rel_gap <= EXACT_GAP
    assert [s.kind for s in est.result_.trace][-1] == "conic"


def test_raw_wine_is_solved_in_per_feature_units():
    # features from 0.1 to 1000: the exact path solves over X_j / 2^e_j
    # (powers of two) and certifies in the user's units, by LMNN's own
    # certificate over every triplet (in the user's units Clarabel and SCS
    # end "optimal_inaccurate" with a 0.89 relative gap on 18 of these
    # samples)
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    sub = np.sort(np.concatenate([np.flatnonzero(y == c)[:12] for c in range(3)]))
    X, y = X[sub], y[sub]
    est = LMNN().fit(X, y)
    assert est.status_ == "optimal" and est.certificate_.passed
    assert np.ptp(est.result_.info["feature_exponents"]) > 4
    data = LMNNData(X, y)
    assert est.objective_ == pytest.approx(data.objective(est.result_.M), rel=1e-12)

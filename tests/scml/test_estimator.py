"""The SCML estimators: scikit-learn's checks, metric-learn's keywords and
tuple API, the solvers against each other, the declared problem, bad input."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from cvxmetric import SCML, ProblemSizeError, SCML_Supervised
from cvxmetric._tolerances import EXACT_GAP
from cvxmetric.scml import SCMLData, knn_triplets


def blobs(n_per_class=10, n_classes=3, d=3, seed=0):
    rng = np.random.RandomState(seed)
    y = np.repeat(np.arange(n_classes), n_per_class)
    return rng.randn(n_classes, d)[y] + rng.randn(y.size, d), y


@parametrize_with_checks([SCML_Supervised(k_genuine=2, k_impostor=3, n_basis=8,
                                          random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_supervised_fit_and_attributes():
    X, y = blobs()
    est = SCML_Supervised(random_state=0).fit(X, y)
    assert est.status_ == "optimal" and est.certificate_.passed
    assert est.n_features_in_ == 3 and est.components_.shape == (3, 3)
    assert est.w_.shape == (est.basis_.shape[0],) and np.all(est.w_ >= 0)
    np.testing.assert_allclose(est.get_mahalanobis_matrix(),
                               (est.basis_.T * est.w_) @ est.basis_, atol=1e-10)
    np.testing.assert_allclose(est.transform(X), X @ est.components_.T)
    assert est.n_triplets_ == len(knn_triplets(X, y, 3, 10))
    # the same fit with the certified exact solver (the default is "fast")
    exact = clone(est).set_params(solver="exact").fit(X, y)
    assert exact.status_ == "optimal"
    assert abs(exact.objective_ - est.objective_) <= 1e-6 * max(1, est.objective_)
    sto = clone(est).set_params(solver="stochastic", max_iter=500, output_iter=100)
    with pytest.warns(Warning):
        sto.fit(X, y)
    assert sto.objective_ >= est.objective_ - 1e-9


def test_triplet_learner_tuple_api_and_preprocessor():
    X, y = blobs(seed=2)
    t = knn_triplets(X, y, 2, 3)
    B = np.vstack([np.eye(3), np.ones((1, 3)) / np.sqrt(3)])
    by_index = SCML(basis=B, preprocessor=X).fit(t)
    by_points = SCML(basis=B).fit(X[t])
    by_callable = SCML(basis=B, preprocessor=lambda i: X[i]).fit(t)
    assert by_index.status_ == "optimal"
    for other in (by_points, by_callable):
        assert other.objective_ == pytest.approx(by_index.objective_, abs=1e-8)
    assert 0.5 <= by_index.score(t) <= 1.0
    assert by_index.predict(t).shape == (len(t),)
    # metric-learn's triplet_diffs basis, seeded
    a = SCML(n_basis=12, random_state=0, preprocessor=X).fit(t)
    b = SCML(n_basis=12, random_state=0, preprocessor=X).fit(t)
    np.testing.assert_array_equal(a.basis_, b.basis_)
    assert a.basis_.shape == (12, 3)
    with pytest.raises(ValueError, match="y"):
        SCML(basis=B, preprocessor=X).fit(t, np.ones(len(t)))


def test_declared_problem_has_the_optimum():
    X, y = blobs(seed=3)
    est = SCML_Supervised(k_genuine=2, k_impostor=4, random_state=0).fit(X, y)
    dp = est.declared_problem(X, y)
    assert dp.family == "scml" and dp.problem.is_dpp()
    value = dp.solve()
    assert abs(value - est.objective_) <= EXACT_GAP * max(1.0, est.objective_)
    np.testing.assert_allclose(dp.matrix(), est.result_.M, atol=1e-6)


def test_iris_and_size_refusal():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    est = SCML_Supervised(random_state=0).fit(X, y)
    assert est.status_ == "optimal" and est.n_triplets_ == 4500
    data = SCMLData.from_labels(X, y, random_state=0)
    assert est.objective_ == pytest.approx(data.objective(est.w_), rel=1e-12)
    big = SCML_Supervised(k_impostor=40, n_basis=600, basis="triplet_diffs",
                          solver="exact", random_state=0)
    with pytest.raises(ProblemSizeError, match="solver"):
        big.fit(X, y)


def test_bad_input():
    X, y = blobs()
    t = knn_triplets(X, y, 2, 2)
    with pytest.raises(InvalidParameterError):
        SCML_Supervised(beta=-1.0).fit(X, y)
    with pytest.raises(InvalidParameterError):
        SCML_Supervised(basis="pca").fit(X, y)
    with pytest.raises(InvalidParameterError):
        SCML(basis="lda").fit(t)
    with pytest.raises(ValueError, match="beta"):
        SCML_Supervised(beta=np.inf).fit(X, y)
    with pytest.raises(ValueError, match="basis"):
        SCML_Supervised(basis=np.eye(4)).fit(X, y)
    with pytest.raises(ValueError):
        SCML_Supervised().fit(np.where(np.eye(30, 3) > 0, np.nan, X), y)
    with pytest.raises(ValueError, match="y"):
        SCML_Supervised().fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="triplets"):
        SCML(basis=np.eye(3), preprocessor=X).fit(np.zeros((0, 3), int))
    with pytest.raises(ValueError, match="triplets"):
        SCML(basis=np.eye(3), preprocessor=X).fit(t + 100)
    with pytest.raises(ValueError, match="triplets"):
        SCML(basis=np.eye(3), preprocessor=X).fit(t[:, :2])
    with pytest.raises(ValueError, match="triplets"):
        SCML(basis=np.eye(3), preprocessor=X).fit([[0, 1, 1]])
    with pytest.raises(ValueError, match="output_iter"):
        SCML(basis=np.eye(3), preprocessor=X, solver="stochastic", max_iter=10,
             output_iter=20).fit(t)

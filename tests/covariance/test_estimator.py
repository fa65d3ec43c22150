"""The covariance metric: metric-learn's ``Covariance`` baseline."""

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris
from sklearn.utils.estimator_checks import check_estimator

from cvxmetric import Covariance
from cvxmetric.covariance import covariance_metric


def test_is_the_inverse_covariance_and_zeroes_its_gradient():
    X, _ = load_iris(return_X_y=True)
    M = Covariance().fit(X).get_mahalanobis_matrix()
    S = np.cov(X, rowvar=False)
    # the minimiser of tr(M S) - log det M: its gradient S - M^-1 vanishes
    np.testing.assert_allclose(S - np.linalg.inv(M), 0.0, atol=1e-10)
    np.testing.assert_allclose(M, np.linalg.inv(S), rtol=1e-9)


def test_singular_covariance_is_the_pseudo_inverse():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2)) @ rng.normal(size=(2, 4))   # rank 2 in 4-D
    M = covariance_metric(X)
    np.testing.assert_allclose(M, np.linalg.pinv(np.cov(X, rowvar=False)), atol=1e-8)
    assert np.linalg.matrix_rank(M, tol=1e-8) == 2


def test_one_feature_and_preprocessor_and_pandas():
    X = np.arange(10.0)[:, None] ** 1.5
    np.testing.assert_allclose(Covariance().fit(X).get_mahalanobis_matrix(),
                               [[1.0 / np.var(X, ddof=1)]])
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(20, 3))
    a = Covariance(preprocessor=Z).fit(np.arange(20)).transform(np.arange(3))
    np.testing.assert_allclose(a, Covariance().fit(Z).transform(Z[:3]))
    out = Covariance().set_output(transform="pandas").fit(pd.DataFrame(Z)).transform(Z)
    assert list(out.columns) == ["covariance0", "covariance1", "covariance2"]


@pytest.mark.parametrize("X, match", [
    (np.array([[1.0, 2.0]]), "minimum of 2"),
    (np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN"),
])
def test_bad_input(X, match):
    with pytest.raises(ValueError, match=match):
        Covariance().fit(X)


def test_check_estimator():
    check_estimator(Covariance())


def test_its_objective_is_minimal_at_the_metric():
    from cvxmetric import formulation

    X, _ = load_iris(return_X_y=True)
    data = formulation("covariance").load("data")(X)
    M = Covariance().fit(X).get_mahalanobis_matrix()
    assert data.objective(M) == pytest.approx(data.optimum, rel=1e-12)
    rng = np.random.default_rng(0)
    for _ in range(5):
        E = rng.normal(scale=0.05, size=M.shape)
        assert data.objective(M + E @ E.T) > data.optimum
    assert data.objective(-M) == np.inf
    with pytest.raises(ValueError, match="singular"):
        type(data)(np.c_[X[:, :2], X[:, :1]])

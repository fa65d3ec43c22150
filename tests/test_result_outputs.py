"""The outputs a formulation adds to ``M`` have typed names on the result
(``threshold``, ``factor``, ``weights``, ``dual``, ``theta``), one store
with the solver's ``info``."""

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

import cvxmetric as cm
from cvxmetric.result import SolverResult


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def test_names_and_info_are_one_store():
    r = SolverResult(M=np.eye(2), status="max_iter_reached", objective=0.0, n_iter=0,
                     certificate=None, method="m", info={"b": 1.5})
    assert r.threshold == 1.5 and r.factor is None and r.dual is None
    r.factor = np.ones((1, 2))
    assert r.info["L"] is r.factor


def test_ldml_threshold_and_factor(iris):
    X, y = iris
    res = cm.LDMLSupervised(solver="lowrank", lam=0.1).fit(X[::3], y[::3]).result_
    assert isinstance(float(res.threshold), float)
    L = np.asarray(res.factor)
    np.testing.assert_allclose(L.T @ L, res.M, rtol=1e-8, atol=1e-10)


def test_mmc_diagonal_weights(iris):
    X, y = iris
    res = cm.MMCSupervised(diagonal=True, random_state=0).fit(X, y).result_
    np.testing.assert_allclose(np.diag(res.M), res.weights, rtol=1e-12, atol=0)


def test_qwise_dual_has_one_multiplier_per_constraint(iris):
    X, y = iris
    est = cm.QwiseSupervised(solver="fast", random_state=0).fit(X, y)
    dual = np.asarray(est.result_.dual)
    assert dual.ndim == 1 and dual.size > 0 and np.all(dual >= 0)

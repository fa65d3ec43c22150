"""LDML's declared problem (Eq. 2 as printed, cvxmetric.model's contract)."""

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.preprocessing import StandardScaler

from cvxmetric import LDML, DeclaredProblem, LDMLSupervised, pairs_from_labels
from cvxmetric.formulations import formulation
from cvxmetric.ldml.exact import LDMLData, declared_problem
from cvxmetric.result import NotAttainedError


def _data(loader):
    X, y = loader(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    # iris repeats samples: a drawn pair may join two identical ones
    X, keep = np.unique(X, axis=0, return_index=True)
    return X, y[keep]


@pytest.mark.parametrize("loader", [load_iris, load_wine])
@pytest.mark.parametrize("regularizer", ["trace", "frobenius"])
def test_optimal_value_is_the_exact_objective(loader, regularizer):
    X, y = _data(loader)
    pairs, labels = pairs_from_labels(y, 600, random_state=0)
    est = LDML(preprocessor=X, solver="exact", regularizer=regularizer)
    dp = est.declared_problem(pairs, labels)
    assert not hasattr(est, "lam_")  # the estimator is not changed
    assert isinstance(dp, DeclaredProblem) and dp.family == "ldml"
    assert sorted(dp.variables) == ["M", "b"] and list(dp.constraints) == ["psd"]
    assert dp.problem.is_dpp() and dp.problem.is_dcp()
    value = dp.solve()
    cert = dp.certificate()
    assert cert.passed, cert
    est.fit(pairs, labels)
    # lam="auto" resolved to the fit's own weight, in the units of X
    assert dp.parameters["lam"].value == est.lam_
    assert value == pytest.approx(est.objective_, rel=1e-6)
    assert dp.objective() == pytest.approx(value, rel=1e-12)
    # the threshold is a variable of the problem, the fit's b_ at the optimum
    assert float(dp.variables["b"].value) == pytest.approx(est.b_, rel=1e-3, abs=1e-3)
    np.testing.assert_allclose(dp.matrix(), est.get_mahalanobis_matrix(),
                               atol=1e-3 * np.abs(est.get_mahalanobis_matrix()).max())


def test_supervised_uses_every_pair_of_samples():
    X, y = _data(load_iris)
    X, y = X[::2], y[::2]
    est = LDMLSupervised(solver="exact")
    dp = est.declared_problem(X, y)
    n = len(y)
    assert dp.data.n_pairs == n * (n - 1) // 2
    value = dp.solve()
    assert dp.certificate().passed
    assert value == pytest.approx(est.fit(X, y).objective_, rel=1e-6)


def test_registry_entry_builds_the_problem():
    X, y = _data(load_wine)
    pairs, labels = pairs_from_labels(y, 100, random_state=1)
    data = LDMLData(X, pairs, labels, lam=0.5)
    dp = formulation("ldml").load("declared")(data)
    assert dp.data is data and dp.parameters["lam"].value == 0.5
    with pytest.raises(TypeError, match="^data:"):
        declared_problem(X)


def test_lam_is_a_validated_parameter_and_resolves_without_recompiling():
    X, y = _data(load_wine)
    pairs, labels = pairs_from_labels(y, 300, random_state=2)
    dp = LDML(preprocessor=X, lam=1.0).declared_problem(pairs, labels)
    with pytest.raises(ValueError, match="^lam:"):
        dp.set_parameters(lam=-1.0)
    with pytest.raises(ValueError, match="^lam:"):
        dp.set_parameters(lam=np.nan)
    assert dp.parameters["lam"].value == 1.0 and dp.data.lam == 1.0
    dp.solve()
    dp.set_parameters(lam=3.0)
    assert dp.data.lam == 3.0
    value = dp.solve()
    assert dp.certificate().passed
    ref = LDML(preprocessor=X, lam=3.0, solver="exact").fit(pairs, labels)
    assert value == pytest.approx(ref.objective_, rel=1e-6)
    # a value set on the parameter itself is followed too
    dp.parameters["lam"].value = 1.0
    assert dp.objective(np.zeros((X.shape[1],) * 2)) == pytest.approx(
        LDMLData(X, pairs, labels, lam=1.0).objective(
            np.zeros((X.shape[1],) * 2), dp.data.best_b(np.zeros(len(labels)))))
    assert dp.data.lam == 1.0


def test_added_constraint_marks_the_problem_modified():
    X, y = _data(load_iris)
    pairs, labels = pairs_from_labels(y, 200, random_state=0)
    dp = LDML(preprocessor=X).declared_problem(pairs, labels)
    free = dp.solve()
    assert not dp.modified
    cap = 0.5 * float(np.trace(dp.matrix()))
    dp.add_constraint("cap", cp.trace(dp.M) <= cap)
    assert dp.modified
    value = dp.solve()
    assert np.trace(dp.matrix()) <= cap * (1 + 1e-6)
    assert value >= free - 1e-6 * abs(free)  # a smaller feasible set


def test_not_attained_is_refused():
    # lam = 0 on pairs a metric separates: the likelihood has no maximiser
    X = np.array([[0.0, 0.0], [0.0, 1.0], [3.0, 0.0], [3.0, 1.0]])
    pairs = [[0, 1], [2, 3], [0, 2], [1, 3]]
    labels = [1, 1, -1, -1]
    dp = LDML(preprocessor=X, lam=0.0).declared_problem(pairs, labels)
    with pytest.raises(NotAttainedError, match="^pairs:"):
        dp.solve()
    with pytest.raises(NotAttainedError):
        dp.certificate(np.eye(2))
    # with a weight the optimum exists and is certified
    dp.set_parameters(lam=0.1)
    dp.solve()
    assert dp.certificate().passed


def test_input_is_validated_as_fit_validates_it():
    X, y = _data(load_iris)
    pairs, labels = pairs_from_labels(y, 50, random_state=0)
    with pytest.raises(ValueError, match="^y:"):
        LDML(preprocessor=X).declared_problem(pairs, np.ones(len(labels)))
    with pytest.raises(ValueError, match="^n_components:"):
        LDML(preprocessor=X, n_components=2).declared_problem(pairs, labels)
    with pytest.raises(ValueError, match="^kernel:"):
        LDMLSupervised(kernel="rbf").declared_problem(X, y)
    with pytest.raises(ValueError):
        LDML(preprocessor=X, lam=-1.0).declared_problem(pairs, labels)

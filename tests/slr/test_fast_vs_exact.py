"""SLR fast solvers against the exact optimum: Newton, and Algorithm 1."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.exceptions import ConvergenceWarning

from cvxmetric._tolerances import TOLERANCES, tolerance
from cvxmetric.slr import (
    AdaptiveRegression,
    SemismoothNewton,
    SLRData,
    eq3_closed_form,
    solve_exact,
)


def _rel(a, b):
    return (a - b) / max(1.0, abs(b))


def _instance(kind):
    rng = np.random.RandomState(0)
    if kind == "random":
        return rng.normal(size=(30, 5)), rng.randint(0, 3, 30), {}
    if kind == "classes":
        y = np.arange(36) % 4
        X = rng.normal(size=(36, 6)) + rng.normal(size=(4, 6))[y]
        return X, y, {}
    if kind == "rank_deficient":
        X = rng.normal(size=(30, 3)) @ rng.normal(size=(3, 8))
        return X, np.arange(30) % 3, {}
    if kind == "thresholds":
        return rng.normal(size=(30, 4)), np.arange(30) % 2, {"delta1": 2.0,
                                                              "delta2": -0.5}
    if kind == "wine":  # ill-conditioned for Algorithm 1
        X, y = load_wine(return_X_y=True)
        idx = np.arange(0, 178, 2)
        X = X[idx]
        return (X - X.mean(0)) / X.std(0), y[idx], {}
    raise ValueError(kind)


KINDS = ["random", "classes", "rank_deficient", "thresholds", "wine"]


@pytest.fixture(scope="module", params=KINDS)
def case(request):
    X, y, hp = _instance(request.param)
    data = SLRData.from_labels(X, y, **hp)
    return request.param, data, solve_exact(data)


def test_newton_matches_exact_and_is_certified(case):
    kind, data, exact = case
    res = SemismoothNewton().run(data)
    assert res.status == "optimal"
    assert res.certificate.rel_gap <= 1e-10
    assert abs(_rel(res.objective, exact.objective)) <= tolerance("slr", "newton")
    assert res.n_iter <= 20
    assert res.method == "newton"
    assert res.objective == data.objective(res.M)


def test_algorithm_1_converges_to_the_exact_optimum(case):
    kind, data, exact = case
    res = AdaptiveRegression(maxiter=20_000, tol=1e-9, check_every=100).run(data)
    assert res.status == "optimal"
    gap = _rel(res.objective, exact.objective)
    assert gap >= -TOLERANCES["exact"]
    assert gap <= 1e-8


def test_algorithm_1_after_the_papers_ten_iterations(case):
    """T = 10: a valid but unconverged point, reported with its gap."""
    kind, data, exact = case
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = AdaptiveRegression(maxiter=10).run(data)
    gap = _rel(res.objective, exact.objective)
    assert res.n_iter == 10
    assert gap >= -TOLERANCES["exact"]
    if res.status == "optimal":  # certified (at the package's tolerance) within 10
        assert res.certificate.passed
        assert gap <= res.certificate.tol_gap
    else:
        assert res.status == "max_iter_reached"
        assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
    # the certificate's bound is never above the exact optimum
    assert res.certificate.dual_bound <= exact.objective * (1 + 1e-9)
    # gradient descent with step 1/L: the objective never increases
    hist = np.array(res.info["history"])
    assert hist.size == 11
    assert np.all(np.diff(hist) <= 1e-9 * hist[:-1])
    print(f"{kind}: Algorithm 1, T = 10: relative gap {gap:.3g}")


def test_algorithm_1_is_the_papers_literal_iteration():
    """Ten steps with an n x n target and np.linalg.pinv give the same M.

    ``start="identity"`` is the paper's ``M_0 = I`` in X's units.
    """
    X, y, _ = _instance("classes")
    data = SLRData.from_labels(X, y)
    res = AdaptiveRegression(maxiter=10, tol=1e-300, start="identity").run(data, warn=False)
    P = np.linalg.pinv(X.T)  # the paper's X is d x n: pinv once
    same = y[:, None] == y[None, :]
    M = np.eye(X.shape[1])
    for _ in range(10):
        Yh = X @ M @ X.T  # the paper's X^T M X
        Y = np.where(same, np.maximum(Yh, 1.0), np.minimum(Yh, 0.0))
        M = P.T @ Y @ P  # Eq. 3: (X^+)^T Y X^+ in the paper's notation
    np.testing.assert_allclose(res.M, M, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(M, eq3_closed_form(X, Y), atol=1e-10)


def test_newton_warm_start_from_the_optimum(case):
    kind, data, exact = case
    res = SemismoothNewton().run(data, exact)
    assert res.status == "optimal"
    assert res.n_iter <= 2
    assert abs(_rel(res.objective, exact.objective)) <= tolerance("slr", "newton")


def test_newton_on_a_separable_instance():
    rng = np.random.RandomState(3)
    data = SLRData.from_labels(rng.normal(size=(7, 10)), np.arange(7) % 3)
    res = SemismoothNewton().run(data)
    assert res.status == "optimal"
    assert res.objective <= 1e-12


def test_newton_max_iter_warns_and_keeps_the_iterate():
    X, y, _ = _instance("wine")
    data = SLRData.from_labels(X, y)
    with pytest.warns(ConvergenceWarning, match="newton did not converge"):
        res = SemismoothNewton(maxiter=1).run(data)
    assert res.status == "max_iter_reached" and res.n_iter == 1
    assert np.isfinite(res.objective)
    assert not res.certificate.passed


def test_time_budget_ends_the_run():
    X, y, _ = _instance("wine")
    data = SLRData.from_labels(X, y)
    for solver in (SemismoothNewton(max_time=0.0),
                   AdaptiveRegression(maxiter=100, max_time=0.0)):
        with pytest.warns(ConvergenceWarning, match="within 0 s"):
            res = solver.run(data)
        assert res.status == "time_limit_reached" and res.n_iter == 0
        assert np.isfinite(res.objective)


def test_small_blocks_give_the_same_newton_run():
    X, y, _ = _instance("classes")
    a = SemismoothNewton().run(SLRData.from_labels(X, y))
    b = SemismoothNewton().run(SLRData.from_labels(X, y, block=100))
    assert a.n_iter == b.n_iter
    np.testing.assert_allclose(a.M, b.M, rtol=1e-9, atol=1e-12)


def test_solvers_reject_other_data():
    with pytest.raises(TypeError, match="data"):
        SemismoothNewton().run(np.eye(3))

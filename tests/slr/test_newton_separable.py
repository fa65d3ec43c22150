"""Newton where the optimum is zero with a small margin: the interior-point fallback.

Raw breast_cancer is separable by a bilinear form (optimum 0), but only by
minimisers far from the start (``||Z*|| ~ 2e5``); the semismooth Newton
method alone shrinks the objective by a few per cent per iteration there
(the 70 % split of seed 0: ``f = 20.7`` after 100 iterations).  A
180-sample stratified subset reproduces it: plain Newton needs 46
iterations, the default (Newton, then :func:`interior_point` after
``interior_after = 15`` iterations) certifies ``f = 0`` in 16.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

from cvxmetric._solver import Deadline
from cvxmetric._tolerances import tolerance
from cvxmetric.slr import SemismoothNewton, SLRData, fast, solve_exact
from cvxmetric.slr._problem import Expired, smat, svec
from cvxmetric.slr.fast import interior_point


@pytest.fixture(scope="module")
def separable():
    X, y = load_breast_cancer(return_X_y=True)
    X, _, y, _ = train_test_split(X, y, train_size=180, stratify=y, random_state=2)
    return SLRData.from_labels(X, y)


@pytest.fixture(scope="module")
def positive():
    # 3 overlapping classes: positive optimum, certified by the exact path
    rng = np.random.RandomState(0)
    y = np.arange(36) % 4
    X = rng.normal(size=(36, 6)) + rng.normal(size=(4, 6))[y]
    data = SLRData.from_labels(X, y)
    return data, solve_exact(data)


def test_default_newton_certifies_the_zero_optimum(separable):
    res = SemismoothNewton(maxiter=20).run(separable)
    assert res.status == "optimal" and res.certificate.passed
    assert res.info["interior_point_iterations"] > 0
    assert res.objective <= 1e-12
    assert res.certificate.rel_gap <= 1e-10
    # the objective is recomputed from M in X's units
    assert separable.objective(res.M) <= 1e-12


def test_newton_alone_does_not_certify_within_the_same_budget(separable):
    # the failure the fallback fixes (46 iterations without it)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = SemismoothNewton(maxiter=20, interior_after=None).run(separable)
    assert res.status == "max_iter_reached" and not res.certificate.passed
    assert res.info["interior_point_iterations"] is None
    assert res.objective > 1e-6


def test_weighted_system_matrix_is_the_adjoint_form():
    # the interior point's p x p matrix A^T (w o A .) from the Hessian formula
    rng = np.random.RandomState(1)
    data = SLRData.from_labels(rng.normal(size=(12, 3)), np.arange(12) % 3)
    U, r, n = data.U, data.rank, data.n_samples
    w = rng.uniform(0.1, 2.0, size=(n, n))
    w = w + w.T
    Q = data._sym_features()
    Mw = 0.5 * data._hessian_from_gram(Q.T @ (w @ Q))
    p = Q.shape[1]
    explicit = np.empty((p, p))
    for k in range(p):
        e = np.zeros(p)
        e[k] = 1.0
        explicit[:, k] = svec(U.T @ (w * (U @ smat(e, r) @ U.T)) @ U)
    np.testing.assert_allclose(Mw, explicit, atol=1e-12 * np.abs(explicit).max())


def test_interior_point_reaches_a_positive_optimum(positive):
    data, exact = positive
    Z, n_iter = interior_point(data, data.least_squares_Z())
    assert 0 < n_iter <= 100
    f = data.objective_Z(Z)
    assert abs(f - exact.objective) / max(1.0, exact.objective) <= 1e-7
    np.testing.assert_allclose(Z, Z.T)


def test_newton_after_the_fallback_matches_exact(positive):
    data, exact = positive
    res = SemismoothNewton(interior_after=0).run(data)
    assert res.status == "optimal"
    assert res.info["interior_point_iterations"] > 0
    assert abs(res.objective - exact.objective) / max(1.0, exact.objective) \
        <= tolerance("slr", "newton")


def test_fallback_skipped_above_the_size_limit(positive, monkeypatch):
    data, _ = positive
    monkeypatch.setattr(fast, "IPM_MAX_PAIRS", data.n_samples ** 2 - 1)
    res = SemismoothNewton(interior_after=0).run(data)
    assert res.status == "optimal"
    assert res.info["interior_point_iterations"] is None


def test_interior_after_is_validated():
    with pytest.raises(ValueError, match="interior_after"):
        SemismoothNewton(interior_after=-1)


def test_forced_cg_uses_the_fallback_on_small_data(separable):
    # hessian="cg" on data whose p x p system fits: the same fallback
    res = SemismoothNewton(hessian="cg", maxiter=20, interior_after=3).run(separable)
    assert res.info["hessian"] == "cg"
    assert res.status == "optimal" and res.objective <= 1e-12
    assert res.info["interior_point_iterations"] > 0


def test_interior_point_honours_the_deadline(positive):
    data, _ = positive
    with pytest.raises(Expired):
        interior_point(data, data.least_squares_Z(), deadline=Deadline(0.0, start=0.0))



def test_newton_decrement_on_a_singular_hessian():
    # a direction no active term constrains (g has no component there):
    # the decrement is finite, so the certificate gets evaluated
    from cvxmetric.slr._problem import newton_decrement

    H = np.diag([2.0, 0.0])
    g = np.array([1.0, 0.0])
    assert newton_decrement(10.0, g, H) == pytest.approx(0.25 / 10.0, rel=1e-9)

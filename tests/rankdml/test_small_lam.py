"""The dual Newton method at a small ``lam`` (Burg, LogDet): continuation.

At ``lam = 1e-6`` the dual approaches the nonsmooth ``1^T alpha - tau
lambda_max(S)`` and Newton's method from a cold start ended
``max_iter_reached`` (gap 6e-3 Burg, 5e-3 LogDet, docs' iris triplets) where
the exact path certifies; solved through ``lam_0, lam_0 / 10, ...`` it
certifies at the package's tolerance and agrees with the exact optimum.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from cvxmetric._tolerances import EXACT_GAP, MATRIX_RTOL, tolerance
from cvxmetric.rankdml import RankData, RankDML, RankDualSolver, solve_exact, solve_fast
from cvxmetric.rankdml.fast import warm_start

FAST = tolerance("rankdml", "fast")


def _rel(a, b):
    return abs(float(a) - float(b)) / max(1.0, abs(float(b)))


def _check(data, fast, exact):
    assert exact.certificate.passed
    assert fast.status == "optimal" and fast.certificate.passed
    assert fast.certificate.rel_gap <= EXACT_GAP
    assert _rel(fast.objective, exact.objective) <= FAST
    assert fast.certificate.dual_bound <= exact.objective + FAST * max(
        1.0, abs(exact.objective))
    err = np.linalg.norm(fast.M - exact.M)
    assert err <= MATRIX_RTOL * max(1.0, float(np.linalg.norm(exact.M)))


@pytest.mark.parametrize("regularizer", ["burg", "logdet"])
@pytest.mark.parametrize("lam", [1e-6, 1e-4])
def test_docs_iris_small_lam_certified(docs_iris, regularizer, lam):
    data = RankData.from_triplets(docs_iris, regularizer=regularizer, lam=lam)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fast = solve_fast(data)
    assert fast.method == "fast-dual"
    # the stages are recorded, largest lam first, down to (not including) lam
    stages = fast.info["continuation"]
    assert stages and stages == sorted(stages, reverse=True) and stages[-1] > lam
    assert fast.n_iter <= RankDualSolver.maxiter
    _check(data, fast, solve_exact(data, warm_start=warm_start))


@pytest.mark.parametrize("kind", ["burg-A0-spectral", "logdet-A0"])
def test_non_isotropic_prior_small_lam(rk, rank_triplets, kind):
    data = rk.make_data(rank_triplets, lam=1e-6, **dict(rk.KINDS)[kind])
    fast = solve_fast(data, warn=False)
    _check(data, fast, solve_exact(data, warm_start=warm_start))


def test_no_continuation_at_moderate_lam(docs_iris):
    data = RankData.from_triplets(docs_iris, regularizer="logdet", lam=1.0)
    assert RankDualSolver().continuation(data) == []
    assert "continuation" not in solve_fast(data).info
    # nor for the regularisers whose fast solver is not the dual Newton one
    frob = RankData.from_triplets(docs_iris, lam=1e-6)
    assert RankDualSolver().continuation(frob) == []


def test_max_iter_counts_every_stage(docs_iris):
    data = RankData.from_triplets(docs_iris, regularizer="logdet", lam=1e-6)
    with pytest.warns(ConvergenceWarning):
        short = RankDualSolver(maxiter=12).run(data)
    assert short.status == "max_iter_reached"
    assert short.n_iter <= 12
    # unconverged, the point is feasible and its bound a bound
    exact = solve_exact(data, warm_start=warm_start)
    assert short.certificate.dual_bound <= exact.objective + 1e-9 * exact.objective
    assert short.objective >= exact.objective * (1 - 1e-9)
    with pytest.warns(ConvergenceWarning):
        one = RankDualSolver(maxiter=1, tol=1e-15).run(data)
    assert one.n_iter == 1


def test_max_time_bounds_every_stage(docs_iris):
    data = RankData.from_triplets(docs_iris, regularizer="burg", lam=1e-6)
    res = RankDualSolver(max_time=0.0).run(data, warn=False)
    assert res.status in ("time_limit_reached", "optimal")
    assert res.certificate.dual_bound <= res.objective + 1e-9 * abs(res.objective)


def test_estimator_fast_small_lam(docs_iris):
    X, T = docs_iris.X, docs_iris.indices
    est = RankDML(regularizer="logdet", lam=1e-6, solver="fast", preprocessor=X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est.fit(T)
    assert est.status_ == "optimal"
    ex = RankDML(regularizer="logdet", lam=1e-6, preprocessor=X).fit(T)
    assert _rel(est.objective_, ex.objective_) <= FAST

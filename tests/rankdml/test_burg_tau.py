"""Eq. 9 with Burg's printed term, a non-isotropic prior and any trace.

The problem is well posed for every SPD ``A0`` and every ``tau > 0`` (see
the docs: the regulariser is coercive on the trace slice), so the fits must
end certified, never in a raw ``LinAlgError`` -- the Newton primal map of
the printed term used to fail to factor its Hessian once ``tau`` made the
metric nearly singular (``tau = 128`` and beyond on 30 points).
"""

import warnings

import numpy as np
import pytest

from cvxmetric._tolerances import certificate_tolerance, tolerance
from cvxmetric.constraints import Triplets
from cvxmetric.rankdml import RankData, RankDML, solve_exact, solve_fast
from cvxmetric.rankdml.fast import warm_start

FAST = tolerance("rankdml", "fast")


def _instance(seed, n=30, n_triplets=60):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    T = np.array([rng.choice(n, 3, replace=False) for _ in range(n_triplets)])
    B = rng.standard_normal((3, 3))
    return X, T, B @ B.T + np.eye(3)


def _rel(a, b):
    return abs(float(a) - float(b)) / max(1.0, abs(float(b)))


@pytest.mark.parametrize("tau", [1e-6, 1.0, 128.0, 256.0])
@pytest.mark.parametrize("seed", [0, 3])
def test_estimator_fast_and_exact_agree(seed, tau):
    X, T, A0 = _instance(seed)
    objs = {}
    for solver in ("fast", "exact"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no ConvergenceWarning, no RuntimeWarning
            m = RankDML(regularizer="burg", lam=1.0, A0=A0, tau=tau, solver=solver,
                        preprocessor=X).fit(T)
        assert m.status_ == "optimal"
        # tr(A) = tau holds to the certificate's feasibility tolerance
        assert np.isclose(np.trace(m.components_.T @ m.components_), tau,
                          rtol=certificate_tolerance("rankdml")[1], atol=0.0)
        objs[solver] = m.objective_
    assert _rel(objs["fast"], objs["exact"]) <= 10 * FAST


def test_low_level_solve_fast_at_tau_128():
    X, T, A0 = _instance(0)
    data = RankData.from_triplets(Triplets(X, T), regularizer="burg", lam=1.0,
                                  A0=A0, tau=128.0)
    assert data.printed_burg
    res = solve_fast(data)
    assert res.status == "optimal" and res.certificate.passed


@pytest.mark.parametrize("seed", [0, 1])
def test_tau_1e4_against_exact(seed):
    X, T, A0 = _instance(seed, n=12, n_triplets=15)
    data = RankData.from_triplets(Triplets(X, T), regularizer="burg", lam=1.0,
                                  A0=A0, tau=1e4)
    fast = solve_fast(data)
    exact = solve_exact(data, warm_start=warm_start)
    assert fast.status == exact.status == "optimal"
    assert _rel(fast.objective, exact.objective) <= 10 * FAST


def test_primal_map_at_large_tau_is_the_minimiser():
    """The map at tau = 1e4 (metric eigenvalues ~1e-1 .. 1e4): its lower
    bound meets its value, its derivative matches finite differences."""
    X, T, A0 = _instance(0)
    data = RankData.from_triplets(Triplets(X, T), regularizer="burg", lam=1.0,
                                  A0=A0, tau=1e4)
    rng = np.random.default_rng(1)
    S = data.S_of(rng.uniform(0, 1, data.n_constraints))
    A, lower, nu, cache = data.primal_map_cached(S)
    value = 0.5 * data.lam * data.penalty(A) - float(np.sum(S * A))
    assert np.linalg.eigvalsh(A)[0] > 0
    assert np.isclose(np.trace(A), 1e4, rtol=1e-12)
    assert lower <= value + 1e-9 * abs(value)
    assert value - lower <= 1e-9 * abs(value)
    dS = data.S_of(rng.standard_normal(data.n_constraints))
    dA = data.primal_jvp(cache, dS)
    h = 1e-5
    fd = (data.primal_map(S + h * dS)[0] - data.primal_map(S - h * dS)[0]) / (2 * h)
    assert np.linalg.norm(fd - dA) <= 1e-5 * np.linalg.norm(dA)


def test_issue_size_at_tau_1e4_is_certified_by_fast():
    """30 points, 60 triplets, tau = 1e4 with the default iteration budget:
    the badly conditioned dual needs the adaptive Newton regularisation
    (a fixed one stopped at a relative gap 1e-3 after 500 iterations).
    The exact optimum of this instance is 333898.90995 (about a minute)."""
    X, T, A0 = _instance(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = RankDML(regularizer="burg", lam=1.0, A0=A0, tau=1e4, solver="fast",
                    preprocessor=X).fit(T)
    assert m.status_ == "optimal" and m.certificate_.passed
    assert _rel(m.objective_, 333898.90995) <= 1e-9


def test_few_iterations_at_tau_1e4_stop_honestly():
    """An exhausted budget is an early stop with a warning, never an error."""
    X, T, A0 = _instance(0)
    with pytest.warns(Warning):
        m = RankDML(regularizer="burg", lam=1.0, A0=A0, tau=1e4, solver="fast",
                    max_iter=15, preprocessor=X).fit(T)
    assert m.status_ == "max_iter_reached"
    assert np.isfinite(m.objective_)
